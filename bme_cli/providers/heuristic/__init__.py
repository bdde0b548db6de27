"""Heuristic answers to every pipeline task, used by the offline chat model (one module per task kind)."""
