"""Group coordinators follow their ``__consumer_offsets`` partition's leader: FindCoordinator
names it, a broker that stops leading the partition unloads its groups (NOT_COORDINATOR) and
one that becomes leader loads them (COORDINATOR_LOAD_IN_PROGRESS meanwhile), Kafka's
``onElection`` / ``onResignation``.

The broker runs in process and leadership moves as the controller's LeaderAndIsr and
UpdateMetadata would move it, naming a second live broker (id 1) as the new leader.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from franz.broker.broker import Broker
from franz.cluster.partition import LeaderAndIsrPartitionState
from franz.coordinator.group.offsets_schema import partition_for
from franz.errors import ErrorCode
from franz.metadata.cache import UpdateMetadataPartitionState
from franz.protocol.api_keys import ApiKey
from tests.support.clients import create_topic
from tests.support.inprocess_broker import OTHER_BROKER, InProcessBroker, add_other_broker
from tests.support.wire import WireClient, request_at

OFFSETS = "__consumer_offsets"
PARTITIONS = 3
TOPIC = "coordinated"
GROUP = "moving-group"
GROUP_PARTITION = partition_for(GROUP, PARTITIONS)
#: A group on another ``__consumer_offsets`` partition: its coordinator never moves.
STAYING = next(
    name
    for name in (f"staying-{i}" for i in range(100))
    if partition_for(name, PARTITIONS) != GROUP_PARTITION
)
STAYING_PARTITION = partition_for(STAYING, PARTITIONS)


def lead(broker: Broker, partition: int, leader: int, epoch: int, *, resign: bool = True) -> None:
    """LeaderAndIsr (unless ``resign`` is False) then UpdateMetadata moving
    ``__consumer_offsets``-``partition``."""
    topic_id = broker.metadata_cache.topic_id(OFFSETS)
    assert topic_id is not None
    replicas = (leader, 0 if leader else 1)
    state = LeaderAndIsrPartitionState(OFFSETS, partition, leader, epoch, replicas, replicas)
    if resign:
        errors = broker.replica_manager.become_leader_or_follower([state], {OFFSETS: topic_id})
        assert errors == {}
    broker.metadata_cache.update_metadata(
        controller_id=0,
        live_brokers=broker.metadata_cache.alive_brokers(),
        partition_states=[
            UpdateMetadataPartitionState(OFFSETS, partition, leader, epoch, replicas, replicas)
        ],
        topic_ids={OFFSETS: topic_id},
    )


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessBroker]:
    broker = InProcessBroker(
        tmp_path_factory.mktemp("coordinators"),
        {
            "offsets.topic.num.partitions": str(PARTITIONS),
            "group.initial.rebalance.delay.ms": "0",
        },
    ).start()
    try:
        create_topic(broker.bootstrap, TOPIC, 1)
        yield broker
    finally:
        broker.stop()


def commit(bootstrap: str, group: str, offset: int) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, offset)], asynchronous=False)
    finally:
        consumer.close()


def committed(bootstrap: str, group: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        [tp] = consumer.committed([TopicPartition(TOPIC, 0)], timeout=10)
        return int(tp.offset)
    finally:
        consumer.close()


def find_coordinator(client: WireClient, group: str) -> Any:
    return request_at(client, ApiKey.FIND_COORDINATOR, 3, {"key": group, "key_type": 0})


def offset_fetch_error(client: WireClient, group: str) -> int:
    response = request_at(client, ApiKey.OFFSET_FETCH, 5, {"group_id": group, "topics": None})
    return int(response.error_code)


def heartbeat_error(client: WireClient, group: str) -> int:
    response = request_at(
        client,
        ApiKey.HEARTBEAT,
        4,
        {"group_id": group, "generation_id": 1, "member_id": "m", "group_instance_id": None},
    )
    return int(response.error_code)


def test_groups_follow_their_partition_leader(node: InProcessBroker) -> None:
    broker = node.broker
    assert broker is not None
    commit(node.bootstrap, GROUP, 7)
    commit(node.bootstrap, STAYING, 3)
    node.call(lambda: add_other_broker(broker))
    with WireClient.connect(node.bootstrap) as client:
        here = find_coordinator(client, GROUP)
        assert (here.error_code, here.node_id) == (0, 0)

        node.call(lambda: lead(broker, GROUP_PARTITION, 1, 1))
        moved = find_coordinator(client, GROUP)
        endpoint = OTHER_BROKER.endpoints[0]
        assert (moved.error_code, moved.node_id, moved.host, moved.port) == (
            0,
            1,
            endpoint.host,
            endpoint.port,
        )
        assert offset_fetch_error(client, GROUP) == ErrorCode.NOT_COORDINATOR
        assert heartbeat_error(client, GROUP) == ErrorCode.NOT_COORDINATOR
        described = request_at(client, ApiKey.DESCRIBE_GROUPS, 5, {"groups": [GROUP]}).groups[0]
        assert (described.error_code, described.group_state) == (ErrorCode.NOT_COORDINATOR, "")
        # The other partition's group is untouched.
        assert find_coordinator(client, STAYING).node_id == 0
        assert offset_fetch_error(client, STAYING) == ErrorCode.NONE

        # Leadership comes back: loading first, then the group and its offsets are served.
        def elect_and_look() -> ErrorCode:
            lead(broker, GROUP_PARTITION, 0, 2)
            return broker.group_coordinator.group_status(GROUP)

        assert node.call(elect_and_look) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert find_coordinator(client, GROUP).node_id == 0
        assert offset_fetch_error(client, GROUP) == ErrorCode.NONE

        # A leader that is not alive: no coordinator to name.
        node.call(lambda: lead(broker, STAYING_PARTITION, 5, 1, resign=False))
        gone = find_coordinator(client, STAYING)
        assert (gone.error_code, gone.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
        node.call(lambda: lead(broker, STAYING_PARTITION, 0, 1, resign=False))
    assert committed(node.bootstrap, GROUP) == 7
    assert committed(node.bootstrap, STAYING) == 3
