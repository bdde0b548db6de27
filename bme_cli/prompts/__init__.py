"""Prompt templates, their typed inputs and the pydantic models that validate replies (one module per task)."""
