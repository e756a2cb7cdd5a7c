"""OffsetCommit (API key 8)."""
