"""ListOffsets (API key 2)."""
