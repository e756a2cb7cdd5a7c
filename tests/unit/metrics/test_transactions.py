"""``TransactionMarkerChannelManager``'s gauges over a fake of the transaction coordinator:
Kafka's names, the transactions waiting counted."""

from __future__ import annotations

from dataclasses import dataclass

from franz.metrics.transactions import TransactionMarkerCollector
from tests.unit.metrics.test_collectors import scrape


@dataclass
class FakeTxnCoordinator:
    awaiting_leader: set[str]
    awaiting_log_append: set[str]


def test_transaction_marker_channel_manager_gauges() -> None:
    coordinator = FakeTxnCoordinator({"a", "b"}, {"c"})
    prefix = "kafka_coordinator_transaction_transactionmarkerchannelmanager_"
    assert scrape(TransactionMarkerCollector(lambda: coordinator)) == {
        (prefix + "unknowndestinationqueuesize", ()): ("gauge", 2),
        (prefix + "logappendretryqueuesize", ()): ("gauge", 1),
    }
    coordinator.awaiting_leader.clear()
    coordinator.awaiting_log_append.clear()
    samples = scrape(TransactionMarkerCollector(lambda: coordinator))
    assert set(samples.values()) == {("gauge", 0)}
