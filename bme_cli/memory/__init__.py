"""The memory pipeline: write path (extract, apply), read path (recall, inject), upkeep."""
