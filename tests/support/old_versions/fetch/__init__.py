"""Fetch (API key 1)."""
