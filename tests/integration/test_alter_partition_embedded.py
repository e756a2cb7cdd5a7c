"""The embedded single-node mode's AlterPartition: a broker's ``AlterPartitionManager`` asks
its own ``LocalController`` in process (no socket, no ZooKeeper), with the validation cluster
mode's controller uses (``franz.controller.alter_partition``). A single node's ISR is itself,
so the answers here are the refusals and the idempotent answer; cluster mode's writes are
``tests/cluster/test_replication_alter_partition.py``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from franz.cluster.alter_partition import IsrUpdate, IsrUpdateResult
from franz.errors import ErrorCode
from franz.storage.files import TopicPartition
from tests.support.clients import create_topic
from tests.support.inprocess_broker import InProcessBroker

TOPIC = "embedded-isr"
TP = TopicPartition(TOPIC, 0)


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessBroker]:
    broker = InProcessBroker(tmp_path_factory.mktemp("embedded-alter")).start()
    try:
        create_topic(broker.bootstrap, TOPIC, 1)
        yield broker
    finally:
        broker.stop()


def submit_all(node: InProcessBroker, *updates: IsrUpdate) -> list[IsrUpdateResult]:
    """Submit ``updates`` at once on the broker's loop; their answers."""
    broker = node.broker
    assert broker is not None

    async def run() -> list[IsrUpdateResult]:
        manager = broker.alter_partition_manager
        topic_id = broker.metadata_cache.topic_id(TOPIC)
        assert topic_id is not None
        futures = [manager.submit(TP, topic_id, u) for u in updates]
        return list(await asyncio.wait_for(asyncio.gather(*futures), 30))

    results: list[IsrUpdateResult] = node._run(run())
    return results


def current(node: InProcessBroker) -> Any:
    broker = node.broker
    assert broker is not None
    state = node.call(lambda: broker.metadata_cache.partition_info(TOPIC, 0))
    assert state is not None
    return state


def test_the_state_it_has_is_answered(node: InProcessBroker) -> None:
    state = current(node)
    assert (state.leader, tuple(state.isr)) == (0, (0,))
    same = IsrUpdate(state.leader_epoch, (0,), 0, state.zk_version)
    (answer,) = submit_all(node, same)
    assert answer == IsrUpdateResult(
        ErrorCode.NONE, 0, state.leader_epoch, (0,), 0, state.zk_version
    )


def test_refusals_and_one_item_per_partition(node: InProcessBroker) -> None:
    state = current(node)
    ineligible = IsrUpdate(state.leader_epoch, (0, 7), 0, state.zk_version)
    again = IsrUpdate(state.leader_epoch, (0,), 0, state.zk_version)
    first, second = submit_all(node, ineligible, again)
    assert first.error == ErrorCode.INELIGIBLE_REPLICA
    assert second.error == ErrorCode.OPERATION_NOT_ATTEMPTED  # the first was pending
    (fenced,) = submit_all(node, IsrUpdate(state.leader_epoch - 1, (0,), 0, state.zk_version))
    assert fenced.error == ErrorCode.FENCED_LEADER_EPOCH
    stale = IsrUpdate(state.leader_epoch, (), 0, state.zk_version - 1)
    (refused,) = submit_all(node, stale)
    assert refused.error == ErrorCode.INVALID_UPDATE_VERSION
    assert current(node) == state
