"""AlterPartition (API key 56)."""
