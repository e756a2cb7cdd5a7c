"""UpdateMetadata (API key 6)."""
