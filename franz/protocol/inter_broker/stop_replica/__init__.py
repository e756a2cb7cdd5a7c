"""StopReplica (API key 5)."""
