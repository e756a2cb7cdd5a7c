"""OffsetForLeaderEpoch (API key 23)."""
