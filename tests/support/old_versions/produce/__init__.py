"""Produce (API key 0)."""
