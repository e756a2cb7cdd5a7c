"""``franz.metrics.catalog`` names exactly what a broker's registry exports: a
``BrokerMetrics`` over fakes with something in every collector (a follower, a group with
committed offsets) is scraped, and its sample names are the catalog. A collector registered
without its names in the catalog fails here, so the dashboard test's list stays whole."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from franz.coordinator.group.model import GroupState
from franz.metrics import BrokerMetrics
from franz.metrics.catalog import EXPORTED_NAMES
from franz.storage.files import TopicPartition
from tests.unit.metrics.test_collectors import (
    FakeController,
    FakeFetcherManager,
    FakeReplicaManager,
)
from tests.unit.metrics.test_groups import FakeCoordinator, _group
from tests.unit.metrics.test_replication import FakeFetcher, FakePartition, FakeState, _context
from tests.unit.metrics.test_transactions import FakeTxnCoordinator


def test_the_catalog_is_what_a_broker_exports() -> None:
    manager = FakeReplicaManager({TopicPartition("t", 0): FakePartition(True, [1, 2], [1, 2], 1)})
    controller = FakeController(True, _context())
    fetchers = FakeFetcherManager(
        {(2, 0): FakeFetcher("ReplicaFetcherThread-0-2", {TopicPartition("u", 0): FakeState(1, 4)})}
    )
    coordinator = FakeCoordinator({"g": _group(GroupState.STABLE, 1, t_0=3)})
    metrics = BrokerMetrics(
        1,
        None,
        lambda: manager,
        lambda: controller,
        lambda: fetchers,
        group_coordinator=lambda: coordinator,
        high_watermark=lambda _topic, _partition: 10,
        txn_coordinator=lambda: FakeTxnCoordinator({"t1"}, set()),
    )
    body, _ = metrics.render()
    names = {
        sample.name
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }
    assert names == EXPORTED_NAMES, (sorted(names - EXPORTED_NAMES), sorted(EXPORTED_NAMES - names))
