"""Produce, Fetch and ListOffsets for partitions this broker does not lead, as Kafka 3.9
answers them (``franz.broker.leader_routing``), over TCP.

The broker runs in process; leadership moves as the controller would move it: a LeaderAndIsr
through ``ReplicaManager.become_leader_or_follower`` and an UpdateMetadata into the metadata
cache, naming a second live broker (id 1, rack ``r1``) as the new leader.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from franz.broker.broker import Broker
from franz.cluster.partition import LeaderAndIsrPartitionState
from franz.metadata.cache import UpdateMetadataPartitionState
from franz.protocol.api_keys import ApiKey
from tests.support.clients import create_topic
from tests.support.inprocess_broker import InProcessBroker, add_other_broker
from tests.support.wire import WireClient, batch, request_at

NONE = 0
NOT_LEADER_OR_FOLLOWER = 6
UNKNOWN_TOPIC_OR_PARTITION = 3
FENCED_LEADER_EPOCH = 74

TOPIC = "routed"
#: The other broker (``OTHER_BROKER``) leads partition 0 (epoch 1, this broker follows) and
#: partition 2 (not hosted here); this broker keeps leading partition 1.
OTHER_ENDPOINT = {"node_id": 1, "host": "127.0.0.1", "port": 19093, "rack": "r1"}


def move_leader(broker: Broker, topic: str, partition: int, leader: int, epoch: int) -> None:
    """LeaderAndIsr (when this broker is a replica) then UpdateMetadata for one partition."""
    replicas = (leader, 0) if partition != 2 else (leader,)
    topic_id = broker.metadata_cache.topic_id(topic)
    assert topic_id is not None
    if broker.broker_id in replicas:
        state = LeaderAndIsrPartitionState(topic, partition, leader, epoch, replicas, replicas)
        assert broker.replica_manager.become_leader_or_follower([state], {topic: topic_id}) == {}
    broker.metadata_cache.update_metadata(
        controller_id=0,
        live_brokers=broker.metadata_cache.alive_brokers(),
        partition_states=[
            UpdateMetadataPartitionState(topic, partition, leader, epoch, replicas, replicas)
        ],
        topic_ids={topic: topic_id},
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessBroker]:
    node = InProcessBroker(tmp_path_factory.mktemp("routing")).start()
    try:
        create_topic(node.bootstrap, TOPIC, 2)
        with WireClient.connect(node.bootstrap) as client:
            for partition in (0, 1):
                produced = request_at(client, ApiKey.PRODUCE, 9, _produce_data(partition))
                assert produced.responses[0].partition_responses[0].error_code == NONE
        broker = node.broker
        assert broker is not None
        node.call(lambda: add_other_broker(broker))
        node.call(lambda: move_leader(broker, TOPIC, 0, 1, 1))
        node.call(lambda: move_leader(broker, TOPIC, 2, 1, 0))
        yield node
    finally:
        node.stop()


@pytest.fixture
def client(cluster: InProcessBroker) -> Iterator[WireClient]:
    with WireClient.connect(cluster.bootstrap) as c:
        yield c


def _produce_data(partition: int) -> dict[str, Any]:
    return {
        "acks": -1,
        "timeout": 5000,
        "topic_data": [
            {
                "name": TOPIC,
                "partition_data": [{"index": partition, "records": bytes(batch((b"k", b"v")))}],
            }
        ],
    }


def test_produce_to_a_follower_or_a_non_replica_names_the_leader(client: WireClient) -> None:
    for partition in (0, 2):
        response = request_at(client, ApiKey.PRODUCE, 10, _produce_data(partition))
        [answer] = response.responses[0].partition_responses
        assert answer.error_code == NOT_LEADER_OR_FOLLOWER, (partition, answer)
        leader = answer.current_leader
        assert (leader.leader_id, leader.leader_epoch) == (1, 1 if partition == 0 else 0)
        assert [_endpoint(n) for n in response.node_endpoints] == [OTHER_ENDPOINT]
    # The leader still takes the produce, without hints.
    response = request_at(client, ApiKey.PRODUCE, 10, _produce_data(1))
    assert response.responses[0].partition_responses[0].error_code == NONE
    assert response.node_endpoints == ()


def test_produce_v9_to_a_non_replica_is_not_leader(client: WireClient) -> None:
    """Kafka's ``getPartitionOrError``: a partition the metadata cache knows but this broker
    does not host is NOT_LEADER_OR_FOLLOWER (the client refreshes its metadata)."""
    response = request_at(client, ApiKey.PRODUCE, 9, _produce_data(2))
    assert response.responses[0].partition_responses[0].error_code == NOT_LEADER_OR_FOLLOWER


def _fetch(
    client: WireClient, cluster: InProcessBroker, version: int, partition: int, epoch: int = -1
) -> Any:
    broker = cluster.broker
    assert broker is not None
    topic_id = cluster.call(lambda: broker.metadata_cache.topic_id(TOPIC))
    topic: dict[str, Any] = {"topic": TOPIC, "topic_id": topic_id}
    topic["partitions"] = [
        {
            "partition": partition,
            "current_leader_epoch": epoch,
            "fetch_offset": 0,
            "partition_max_bytes": 65536,
        }
    ]
    return request_at(
        client,
        ApiKey.FETCH,
        version,
        {
            "replica_id": -1,
            "replica_state": {"replica_id": -1, "replica_epoch": -1},
            "max_wait": 0,
            "min_bytes": 0,
            "max_bytes": 1 << 20,
            "session_epoch": -1,
            "topics": [topic],
        },
    )


def test_fetch_below_v11_from_a_follower_is_not_leader(
    client: WireClient, cluster: InProcessBroker
) -> None:
    [answer] = _fetch(client, cluster, 10, 0).responses[0].partitions
    assert answer.error_code == NOT_LEADER_OR_FOLLOWER


def test_fetch_v11_and_later_reads_a_follower_replica(
    client: WireClient, cluster: InProcessBroker
) -> None:
    """KIP-392: a consumer's v11+ fetch carries client metadata, and Kafka then reads any
    local replica (``FetchParams.fetchOnlyLeader`` is false)."""
    [answer] = _fetch(client, cluster, 12, 0, epoch=1).responses[0].partitions
    assert answer.error_code == NONE
    assert answer.high_watermark == 1 and answer.records


def test_fetch_v16_names_the_leader_on_not_leader_and_fenced_epoch(
    client: WireClient, cluster: InProcessBroker
) -> None:
    fenced = _fetch(client, cluster, 16, 0, epoch=0)
    [answer] = fenced.responses[0].partitions
    assert answer.error_code == FENCED_LEADER_EPOCH
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (1, 1)
    assert [_endpoint(n) for n in fenced.node_endpoints] == [OTHER_ENDPOINT]
    elsewhere = _fetch(client, cluster, 16, 2)
    [answer] = elsewhere.responses[0].partitions
    assert answer.error_code == NOT_LEADER_OR_FOLLOWER
    assert (answer.current_leader.leader_id, answer.current_leader.leader_epoch) == (1, 0)
    assert [_endpoint(n) for n in elsewhere.node_endpoints] == [OTHER_ENDPOINT]


def test_fetch_of_an_unknown_partition_is_unknown(
    client: WireClient, cluster: InProcessBroker
) -> None:
    [answer] = _fetch(client, cluster, 12, 7).responses[0].partitions
    assert answer.error_code == UNKNOWN_TOPIC_OR_PARTITION


def _list_offsets(client: WireClient, partition: int, replica_id: int = -1) -> int:
    response = request_at(
        client,
        ApiKey.LIST_OFFSETS,
        7,
        {
            "replica_id": replica_id,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}
                    ],
                }
            ],
        },
    )
    return int(response.topics[0].partitions[0].error_code)


def test_list_offsets_needs_the_leader_except_for_the_debugging_consumer(
    client: WireClient,
) -> None:
    assert _list_offsets(client, 0) == NOT_LEADER_OR_FOLLOWER
    assert _list_offsets(client, 2) == NOT_LEADER_OR_FOLLOWER
    assert _list_offsets(client, 7) == UNKNOWN_TOPIC_OR_PARTITION
    assert _list_offsets(client, 0, replica_id=-2) == NONE
    assert _list_offsets(client, 1) == NONE


def _endpoint(node: Any) -> dict[str, Any]:
    return {"node_id": node.node_id, "host": node.host, "port": node.port, "rack": node.rack}


def test_topics_describe_shows_leaders_replicas_and_isr_across_brokers(
    cluster: InProcessBroker,
) -> None:
    """``franz topics --describe`` (Kafka's TopicCommand format) shows the cluster's view."""

    def describe() -> list[str]:
        tool = [sys.executable, "-m", "franz", "topics", "--bootstrap-server", cluster.bootstrap]
        done = subprocess.run(
            [*tool, "--describe", "--topic", TOPIC],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return [line.split("\tElr:")[0] for line in done.stdout.splitlines()[1:]]

    assert describe() == [
        f"\tTopic: {TOPIC}\tPartition: 0\tLeader: 1\tReplicas: 1,0\tIsr: 1,0",
        f"\tTopic: {TOPIC}\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0",
        f"\tTopic: {TOPIC}\tPartition: 2\tLeader: 1\tReplicas: 1\tIsr: 1",
    ]


def test_metadata_and_describe_cluster_show_every_live_broker(client: WireClient) -> None:
    cluster = request_at(client, ApiKey.DESCRIBE_CLUSTER, 0, {})
    assert cluster.controller_id == 0
    assert [(b.broker_id, b.rack) for b in cluster.brokers] == [(0, None), (1, "r1")]
    metadata = request_at(client, ApiKey.METADATA, 12, {"topics": [{"name": TOPIC}]})
    assert metadata.controller_id == 0
    assert [(b.node_id, b.rack) for b in metadata.brokers] == [(0, None), (1, "r1")]
    partitions = sorted(metadata.topics[0].partitions, key=lambda p: p.partition_index)
    assert [
        (p.partition_index, p.leader_id, p.leader_epoch, list(p.replica_nodes), list(p.isr_nodes))
        for p in partitions
    ] == [(0, 1, 1, [1, 0], [1, 0]), (1, 0, 0, [0], [0]), (2, 1, 0, [1], [1])]
