"""Every Prometheus sample name Franz's ``/metrics`` exports, in one place: what the shipped
Grafana dashboard (``deploy/grafana/franz-kafka.json``) may query, checked by its tests
(``tests/unit/metrics/test_dashboard.py`` against this list, and
``tests/integration/test_metrics_groups.py`` against a real broker's scrape).

A collector module adds its metrics here when it lands: its ``KafkaMetric`` constants
(named by the JMX exporter's rules, ``franz.metrics.names``) to ``KAFKA_METRICS``, or its
sample names when they are not Kafka MBeans (kafka_exporter's consumer group samples).
"""

from __future__ import annotations

from typing import Final

from franz.metrics import collectors as _c
from franz.metrics.collectors import KafkaMetric
from franz.metrics.groups import CONSUMER_LAG_NAMES, GROUP_METADATA_MANAGER
from franz.metrics.names import exported_sample
from franz.metrics.traffic_collectors import TRAFFIC_METRICS
from franz.metrics.transactions import TRANSACTION_MARKER_CHANNEL_MANAGER

__all__ = ["EXPORTED_NAMES", "KAFKA_METRICS", "sample_name"]

#: The Kafka MBean attributes exported, by the module that collects them.
KAFKA_METRICS: Final[tuple[KafkaMetric, ...]] = (
    # franz.metrics.collectors (replication, controller, fetcher lag)
    _c.LEADER_COUNT,
    _c.PARTITION_COUNT,
    _c.OFFLINE_REPLICA_COUNT,
    _c.UNDER_REPLICATED,
    _c.REASSIGNING,
    _c.UNDER_MIN_ISR,
    _c.AT_MIN_ISR,
    _c.ISR_EXPANDS,
    _c.ISR_SHRINKS,
    _c.FAILED_ISR_UPDATES,
    _c.ACTIVE_CONTROLLER_COUNT,
    _c.OFFLINE_PARTITIONS,
    _c.PREFERRED_IMBALANCE,
    _c.GLOBAL_TOPIC_COUNT,
    _c.GLOBAL_PARTITION_COUNT,
    _c.UNCLEAN_ELECTIONS,
    _c.LEADER_ELECTIONS,
    _c.MAX_LAG,
    _c.CONSUMER_LAG,
    # franz.metrics.groups (GroupMetadataManager)
    *GROUP_METADATA_MANAGER,
    # franz.metrics.transactions (TransactionMarkerChannelManager)
    *TRANSACTION_MARKER_CHANNEL_MANAGER,
    # franz.metrics.traffic_collectors (BrokerTopicMetrics, RequestMetrics, RequestChannel,
    # SocketServer, KafkaRequestHandlerPool, Log, LogFlushStats): a histogram's Count
    # (..._count) and a percentile (the base name, with a quantile label)
    *TRAFFIC_METRICS,
)


def sample_name(metric: KafkaMetric) -> str:
    """The sample name the JMX exporter's rules give ``metric`` (with any tag values)."""
    tags = tuple("x" for _ in metric.bean.tag_keys)
    exported = exported_sample(metric.bean, metric.attribute, tags)
    if exported is None:
        raise ValueError(f"no JMX exporter rule names {metric.bean.object_name()}")
    return exported.name


#: Every sample name ``/metrics`` can show.
EXPORTED_NAMES: Final[frozenset[str]] = frozenset(
    {sample_name(m) for m in KAFKA_METRICS} | set(CONSUMER_LAG_NAMES)
)
