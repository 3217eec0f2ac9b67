"""The stack file: its schema and validation, the validated model, the GPU size catalog and Azure regions."""
