"""Cluster metadata: topics, their partition assignments and config overrides.

``MetadataStore`` is the seam: ``local.LocalMetadataStore`` (embedded single-node mode, a
file under the first log dir) now, a ZooKeeper store (Kafka's znode layout) for cluster mode.
"""

from franz.metadata.store import MetadataStore, TopicRecord

__all__ = ["MetadataStore", "TopicRecord"]
