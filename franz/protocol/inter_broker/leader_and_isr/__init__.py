"""LeaderAndIsr (API key 4)."""
