"""The lowest floor: the validated stack model, the GPU catalog, the regions, the stack file's key names and the
environment variables gpushare reads (`environment_variables`).

Everything above reads these; nothing here imports another gpushare stage (`tests/test_layering.py`)."""
