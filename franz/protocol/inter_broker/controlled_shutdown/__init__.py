"""ControlledShutdown (API key 7)."""
