"""DescribeConfigs (API key 32)."""
