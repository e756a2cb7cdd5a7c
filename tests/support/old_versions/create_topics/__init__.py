"""CreateTopics (API key 19)."""
