"""Franz: a Kafka-compatible streaming platform."""

__version__ = "0.1.0"
