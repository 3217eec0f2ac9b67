"""The stack file: reading it, its schema and validation into the model (`gpushare.model`)."""
