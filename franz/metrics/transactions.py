"""The transaction coordinator's metrics, read at scrape time.

Kafka 3.9's ``TransactionMarkerChannelManager`` gauges
(``kafka.coordinator.transaction:type=TransactionMarkerChannelManager,name=...``; the JMX
exporter's ``kafka.coordinator.(\\w+)<type=(.+), name=(.+)><>Value`` rule names them
``kafka_coordinator_transaction_transactionmarkerchannelmanager_<name>``):

* ``UnknownDestinationQueueSize``: transactions whose markers wait because a partition has no
  known leader (Kafka queues one entry per transaction for its partitions without a leader,
  ``markersQueueForUnknownBroker``); Franz counts the transactions whose last round of
  WriteTxnMarkers had a partition answer LEADER_NOT_AVAILABLE and that are retrying.
* ``LogAppendRetryQueueSize``: transactions whose Complete* record is to be appended again
  after the append failed with COORDINATOR_NOT_AVAILABLE (``txnLogAppendRetryQueue``).

Both are 0 when nothing is stuck: a sustained value means markers cannot complete, so the
LSO of the partitions involved stalls for ``read_committed`` consumers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Set
from typing import Final, Protocol

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from franz.metrics.collectors import KafkaMetric, family
from franz.metrics.names import MBean

__all__ = [
    "LOG_APPEND_RETRY_QUEUE_SIZE",
    "TRANSACTION_MARKER_CHANNEL_MANAGER",
    "UNKNOWN_DESTINATION_QUEUE_SIZE",
    "TransactionCoordinatorView",
    "TransactionMarkerCollector",
]


def _tmcm(name: str, help_: str) -> KafkaMetric:
    bean = MBean("kafka.coordinator.transaction", "TransactionMarkerChannelManager", name)
    return KafkaMetric(bean, "Value", help_)


UNKNOWN_DESTINATION_QUEUE_SIZE: Final = _tmcm(
    "UnknownDestinationQueueSize", "Transactions whose markers wait for a partition leader"
)
LOG_APPEND_RETRY_QUEUE_SIZE: Final = _tmcm(
    "LogAppendRetryQueueSize", "Transactions whose completion record waits to be appended again"
)
TRANSACTION_MARKER_CHANNEL_MANAGER: Final = (
    UNKNOWN_DESTINATION_QUEUE_SIZE,
    LOG_APPEND_RETRY_QUEUE_SIZE,
)


class TransactionCoordinatorView(Protocol):
    """What is read of ``franz.coordinator.transaction.coordinator.TransactionCoordinator``."""

    @property
    def awaiting_leader(self) -> Set[str]: ...
    @property
    def awaiting_log_append(self) -> Set[str]: ...


class TransactionMarkerCollector(Collector):
    """``kafka.coordinator.transaction:type=TransactionMarkerChannelManager``."""

    def __init__(self, coordinator: Callable[[], TransactionCoordinatorView]) -> None:
        self.coordinator = coordinator

    def collect(self) -> Iterator[Metric]:
        coordinator = self.coordinator()
        for metric, value in (
            (UNKNOWN_DESTINATION_QUEUE_SIZE, len(coordinator.awaiting_leader)),
            (LOG_APPEND_RETRY_QUEUE_SIZE, len(coordinator.awaiting_log_append)),
        ):
            result = family(metric, [((), value)])
            assert result is not None
            yield result
