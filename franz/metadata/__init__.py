"""Cluster metadata: topics, their partition assignments and config overrides.

``MetadataStore`` is the seam: ``local.LocalMetadataStore`` (embedded single-node mode, a
file under the first log dir); ``AsyncMetadataStore`` its coroutine flavour, which
``zk_store.ZooKeeperMetadataStore`` implements in Kafka's znode layout for cluster mode
(``znodes``: the JSON; ``zookeeper``: the asyncio client, the only kazoo importer;
``kafka_zk_client``: Kafka's operations; ``zk_session``: registration and election). This
package's ``__init__`` imports none of the ZooKeeper modules.
"""

from franz.metadata.store import AsyncMetadataStore, MetadataStore, TopicRecord

__all__ = ["AsyncMetadataStore", "MetadataStore", "TopicRecord"]
