"""The lowest floor: the validated stack model, the GPU catalog, the regions and the stack file's key names.

Everything above reads these; nothing here imports another gpushare stage (`tests/test_layering.py`)."""
