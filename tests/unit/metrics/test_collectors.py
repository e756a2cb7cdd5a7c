"""The collectors over fakes of the broker's objects, rendered by prometheus_client and read
back with its text parser: the names dashboards query, their types and values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from franz.controller.context import ControllerContext
from franz.metrics.collectors import (
    ControllerCollector,
    ReplicaFetcherCollector,
    ReplicaManagerCollector,
)
from franz.storage.files import TopicPartition
from tests.unit.metrics.test_replication import (
    FakeFetcher,
    FakePartition,
    FakeState,
    _context,
)


@dataclass
class FakeReplicaManager:
    partitions: dict[TopicPartition, FakePartition]
    isr_expands: int = 0
    isr_shrinks: int = 0
    failed_isr_updates: int = 0


@dataclass
class FakeController:
    active: bool
    context: ControllerContext
    unclean_leader_elections: int = 0
    processed: dict[str, int] = field(default_factory=dict)

    @property
    def is_active(self) -> bool:
        return self.active

    @property
    def ctx(self) -> ControllerContext:
        assert self.active, "ctx read on an inactive controller"
        return self.context


@dataclass
class FakeFetcherManager:
    fetchers: dict[tuple[int, int], FakeFetcher]


def scrape(*collectors: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], tuple[str, float]]:
    registry = CollectorRegistry(auto_describe=False)
    for collector in collectors:
        registry.register(collector)
    text = generate_latest(registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): (family.type, sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_replica_manager_collector() -> None:
    manager = FakeReplicaManager(
        {
            TopicPartition("t", 0): FakePartition(True, [1, 2, 3], [1, 2], 2),
            TopicPartition("t", 1): FakePartition(False, [2, 3, 1], [2, 3, 1], 2),
            # Led, moving to [1, 4]: 4 is being added, not counted as under-replicated.
            TopicPartition("t", 2): FakePartition(
                True, [1, 4, 2], [1, 2], 2, adding_replicas=(4,), removing_replicas=(2,)
            ),
        },
        isr_expands=4,
        isr_shrinks=3,
        failed_isr_updates=1,
    )
    samples = scrape(ReplicaManagerCollector(lambda: manager))
    prefix = "kafka_server_replicamanager_"
    assert samples == {
        (prefix + "leadercount", ()): ("gauge", 2),
        (prefix + "partitioncount", ()): ("gauge", 3),
        (prefix + "offlinereplicacount", ()): ("gauge", 0),
        (prefix + "underreplicatedpartitions", ()): ("gauge", 1),
        (prefix + "underminisrpartitioncount", ()): ("gauge", 0),
        (prefix + "atminisrpartitioncount", ()): ("gauge", 2),
        (prefix + "reassigningpartitions", ()): ("gauge", 1),
        (prefix + "isrexpands_total", ()): ("counter", 4),
        (prefix + "isrshrinks_total", ()): ("counter", 3),
        (prefix + "failedisrupdates_total", ()): ("counter", 1),
    }


def test_controller_collector_active_inactive_and_absent() -> None:
    controller = FakeController(
        True, _context(), unclean_leader_elections=2, processed={"BrokerChange": 5}
    )
    samples = scrape(ControllerCollector(lambda: controller))
    kc = "kafka_controller_kafkacontroller_"
    stats = "kafka_controller_controllerstats_"
    assert samples == {
        (kc + "activecontrollercount", ()): ("gauge", 1),
        (kc + "offlinepartitionscount", ()): ("gauge", 2),
        (kc + "preferredreplicaimbalancecount", ()): ("gauge", 3),
        (kc + "globaltopiccount", ()): ("gauge", 2),
        (kc + "globalpartitioncount", ()): ("gauge", 4),
        (stats + "uncleanleaderelections_total", ()): ("counter", 2),
        (stats + "leaderelectionrateandtimems_count", ()): ("summary", 5),
    }
    controller.active = False  # resigned: gauges 0, the counts stay (this broker's history)
    samples = scrape(ControllerCollector(lambda: controller))
    assert samples[(kc + "activecontrollercount", ())] == ("gauge", 0)
    assert samples[(kc + "offlinepartitionscount", ())] == ("gauge", 0)
    assert samples[(stats + "uncleanleaderelections_total", ())] == ("counter", 2)
    none = scrape(ControllerCollector(lambda: None))
    assert none[(kc + "activecontrollercount", ())] == ("gauge", 0)
    assert none[(stats + "leaderelectionrateandtimems_count", ())] == ("summary", 0)


def test_replica_fetcher_collector() -> None:
    manager = FakeFetcherManager(
        {
            (1, 0): FakeFetcher(
                "ReplicaFetcherThread-0-1",
                {
                    TopicPartition("t", 0): FakeState(90, 100),
                    TopicPartition("t", 2): FakeState(7, -1),
                },
            ),
            (3, 0): FakeFetcher(
                "ReplicaFetcherThread-0-3", {TopicPartition("t", 1): FakeState(50, 53)}
            ),
        }
    )
    samples = scrape(ReplicaFetcherCollector(lambda: manager))
    lag = "kafka_server_fetcherlagmetrics_consumerlag"
    assert samples == {
        ("kafka_server_replicafetchermanager_maxlag", (("clientId", "Replica"),)): ("gauge", 10),
        (
            lag,
            (("clientId", "ReplicaFetcherThread-0-1"), ("partition", "0"), ("topic", "t")),
        ): ("gauge", 10),
        (
            lag,
            (("clientId", "ReplicaFetcherThread-0-3"), ("partition", "1"), ("topic", "t")),
        ): ("gauge", 3),
    }
    # Embedded mode: no fetcher manager; MaxLag 0 and no per-partition lag.
    assert scrape(ReplicaFetcherCollector(lambda: None)) == {
        ("kafka_server_replicafetchermanager_maxlag", (("clientId", "Replica"),)): ("gauge", 0)
    }
