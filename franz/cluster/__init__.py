"""Partitions as replicas: leadership, high watermark, ISR (single-node for now)."""
