"""OffsetsForLeaderEpoch (23) over TCP at every version, and a real client validating its
position with it after a leader-epoch change (``franz.broker.handlers.offset_for_leader_epoch``).

The broker runs in process; leadership and leader epochs move as the controller would move
them (a LeaderAndIsr through ``ReplicaManager.become_leader_or_follower`` and an
UpdateMetadata into the metadata cache), as in ``test_leader_routing``. Partition 0 is led
here through epochs 0, 2 and 5 (leader-epoch cache ``(0, 0), (2, 3), (5, 5)``, log end offset
6); partition 1 is followed here (leader: broker 1, epoch 1); partition 2 is only in the
metadata cache (led by broker 1, not hosted here).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from franz.broker.broker import Broker
from franz.broker.handlers import HANDLERS
from franz.cluster.partition import LeaderAndIsrPartitionState
from franz.metadata.cache import UpdateMetadataPartitionState
from franz.protocol.api_keys import ApiKey
from franz.protocol.messages import build
from franz.storage.files import TopicPartition as StorageTopicPartition
from tests.support import old_versions
from tests.support.clients import create_topic
from tests.support.inprocess_broker import InProcessBroker, add_other_broker
from tests.support.wire import WireClient, api_versions, batch, request_at

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75

TOPIC = "epochs"
#: Broker 0 (this one) and broker 1 (``OTHER_BROKER``, nothing listens there).
SELF, OTHER = 0, 1
#: Partition 0's epochs and the records produced in each.
EPOCH_RECORDS = ((0, 3), (2, 2), (5, 1))
#: Requested epoch -> (epoch, end offset) on partition 0 (Kafka's ``endOffsetFor``).
EXPECTED = {
    0: (0, 3),
    1: (0, 3),  # between cached epochs: the one below, ending where epoch 2 starts
    2: (2, 5),
    4: (2, 5),
    5: (5, 6),  # the latest epoch ends at the log end offset
    6: (-1, -1),  # above the latest: unknown
    -1: (-1, -1),  # UNDEFINED_EPOCH
}


def set_leader(broker: Broker, partition: int, leader: int, epoch: int) -> None:
    """LeaderAndIsr (when this broker is a replica) then UpdateMetadata for one partition."""
    hosted = partition != 2
    replicas = (SELF, OTHER) if hosted else (OTHER,)
    isr = (leader,)
    topic_id = broker.metadata_cache.topic_id(TOPIC)
    assert topic_id is not None
    if hosted:
        state = LeaderAndIsrPartitionState(TOPIC, partition, leader, epoch, isr, replicas)
        assert broker.replica_manager.become_leader_or_follower([state], {TOPIC: topic_id}) == {}
    broker.metadata_cache.update_metadata(
        controller_id=0,
        live_brokers=broker.metadata_cache.alive_brokers(),
        partition_states=[
            UpdateMetadataPartitionState(TOPIC, partition, leader, epoch, isr, replicas)
        ],
        topic_ids={TOPIC: topic_id},
    )


def produce(client: WireClient, topic: str, partition: int, count: int) -> None:
    records = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(count)]
    response = request_at(
        client,
        ApiKey.PRODUCE,
        9,
        {
            "acks": -1,
            "timeout": 5000,
            "topic_data": [
                {
                    "name": topic,
                    "partition_data": [{"index": partition, "records": batch(*records)}],
                }
            ],
        },
    )
    assert response.responses[0].partition_responses[0].error_code == NONE, response


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessBroker]:
    node = InProcessBroker(tmp_path_factory.mktemp("epochs")).start()
    try:
        create_topic(node.bootstrap, TOPIC, 2)
        broker = node.broker
        assert broker is not None
        node.call(lambda: add_other_broker(broker))
        with WireClient.connect(node.bootstrap) as client:
            for epoch, count in EPOCH_RECORDS:
                if epoch:
                    node.call(lambda epoch=epoch: set_leader(broker, 0, SELF, epoch))
                produce(client, TOPIC, 0, count)
        node.call(lambda: set_leader(broker, 1, OTHER, 1))
        node.call(lambda: set_leader(broker, 2, OTHER, 0))
        yield node
    finally:
        node.stop()


@pytest.fixture
def client(node: InProcessBroker) -> Iterator[WireClient]:
    with WireClient.connect(node.bootstrap) as c:
        yield c


def request(topics: dict[str, list[tuple[int, int, int]]], replica_id: int = -1) -> dict[str, Any]:
    """``topics``: name -> [(partition, leader_epoch, current_leader_epoch)]."""
    return {
        "replica_id": replica_id,
        "topics": [
            {
                "topic": name,
                "partitions": [
                    {"partition": p, "leader_epoch": e, "current_leader_epoch": current}
                    for p, e, current in partitions
                ],
            }
            for name, partitions in topics.items()
        ],
    }


def ask(client: WireClient, version: int, data: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Send at ``version`` (v0-1 with the classes generated from Kafka 3.9's schemas); the
    answers as (topic, partition, error, leader_epoch (-1 for v0), end_offset)."""
    if version < 2:
        key = (int(ApiKey.OFFSET_FOR_LEADER_EPOCH), version)
        correlation_id = client.send(build(old_versions.REQUESTS[key], data))
        response = client.recv(old_versions.RESPONSES[key], correlation_id)
    else:
        response = request_at(client, ApiKey.OFFSET_FOR_LEADER_EPOCH, version, data)
        assert response.throttle_time.total_seconds() == 0
    return [
        (
            topic.topic,
            p.partition,
            int(p.error_code),
            getattr(p, "leader_epoch", -1),
            p.end_offset,
        )
        for topic in response.topics
        for p in topic.partitions
    ]


def test_api_versions_advertises_kafka_3_9s_range(client: WireClient) -> None:
    assert api_versions(client)[ApiKey.OFFSET_FOR_LEADER_EPOCH] == (0, 4)


@pytest.mark.parametrize("version", range(5))
def test_end_offset_of_each_epoch(client: WireClient, version: int) -> None:
    asked = [(0, epoch, -1) for epoch in EXPECTED]
    got = ask(client, version, request({TOPIC: asked}))
    expected = [
        (TOPIC, 0, NONE, epoch if version >= 1 else -1, end) for epoch, end in EXPECTED.values()
    ]
    assert got == expected


@pytest.mark.parametrize("version", range(2, 5))
def test_current_leader_epoch_is_fenced(client: WireClient, version: int) -> None:
    asked = [(0, 2, 4), (0, 2, 6), (0, 2, 5), (0, 2, -1), (1, 0, 0), (1, 0, 1)]
    got = ask(client, version, request({TOPIC: asked}))
    assert [(p, error, epoch, end) for _, p, error, epoch, end in got] == [
        (0, FENCED_LEADER_EPOCH, -1, -1),  # older than the leader's 5
        (0, UNKNOWN_LEADER_EPOCH, -1, -1),  # newer than the leader's 5
        (0, NONE, 2, 5),
        (0, NONE, 2, 5),  # -1: not checked
        (1, FENCED_LEADER_EPOCH, -1, -1),  # fencing comes before leadership, on a follower too
        (1, NOT_LEADER_OR_FOLLOWER, -1, -1),
    ]


@pytest.mark.parametrize("version", range(5))
def test_only_the_leader_answers(client: WireClient, version: int) -> None:
    asked = {TOPIC: [(1, 0, -1), (2, 0, -1), (7, 0, -1)], "no-such-topic": [(0, 0, -1)]}
    expected = [
        (TOPIC, 1, NOT_LEADER_OR_FOLLOWER, -1, -1),  # a follower here
        (TOPIC, 2, NOT_LEADER_OR_FOLLOWER, -1, -1),  # not hosted, in the metadata cache
        (TOPIC, 7, UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
        ("no-such-topic", 0, UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
    ]
    assert ask(client, version, request(asked)) == expected


@pytest.mark.parametrize("replica_id", [-2, OTHER])
def test_a_follower_does_not_answer_the_debugging_consumer_or_a_replica(
    client: WireClient, replica_id: int
) -> None:
    """Kafka 3.9's ``ReplicaManager.lastOffsetForLeaderEpoch`` always requires the leader
    (``fetchOnlyFromLeader = true``), unlike ListOffsets and Fetch for replica id -2."""
    for version in (3, 4):
        got = ask(client, version, request({TOPIC: [(1, 0, -1), (0, 2, -1)]}, replica_id))
        assert got == [
            (TOPIC, 1, NOT_LEADER_OR_FOLLOWER, -1, -1),
            (TOPIC, 0, NONE, 2, 5),
        ]


# -- real clients ----------------------------------------------------------------------------


class _Reader:
    """A consumer assigned partition 0 of one topic from offset 0 (no group), refreshing its
    metadata every 200 ms: librdkafka (confluent-kafka) or kafka-python, both KIP-320."""

    def __init__(self, client: str, bootstrap: str, topic: str) -> None:
        self.client = client
        if client == "confluent-kafka":
            self.rd = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": f"epoch-validation-{topic}",
                    "enable.auto.commit": False,
                    "topic.metadata.refresh.interval.ms": 200,
                }
            )
            self.rd.assign([TopicPartition(topic, 0, 0)])
        else:
            from kafka import KafkaConsumer
            from kafka import TopicPartition as KafkaTopicPartition

            self.tp = KafkaTopicPartition(topic, 0)
            self.kp = KafkaConsumer(
                bootstrap_servers=bootstrap,
                enable_auto_commit=False,
                metadata_max_age_ms=200,
                auto_offset_reset="earliest",
            )
            self.kp.assign([self.tp])
            self.kp.seek(self.tp, 0)

    def poll(self) -> list[bytes]:
        if self.client == "confluent-kafka":
            message = self.rd.poll(0.2)
            if message is None:
                return []
            assert message.error() is None, message.error()
            return [message.value()]
        return [r.value for rs in self.kp.poll(timeout_ms=200).values() for r in rs]

    def values(self, count: int) -> list[bytes]:
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            values += self.poll()
        assert len(values) == count, values
        return values

    def close(self) -> None:
        if self.client == "confluent-kafka":
            self.rd.close()
        else:
            self.kp.close()


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_a_client_validates_its_position_after_a_leader_epoch_change(
    node: InProcessBroker, client: str
) -> None:
    """Both clients send OffsetsForLeaderEpoch when the leader epoch in their metadata grows
    past the epoch of their position (KIP-320); the answer (the old epoch ends at the log end
    offset, not before their position) lets them go on where they were: every record once,
    in order, no reset."""
    broker = node.broker
    assert broker is not None
    topic = f"validated-{client}"
    asked: list[int] = []
    original = HANDLERS[ApiKey.OFFSET_FOR_LEADER_EPOCH]

    def counting(ctx: Any, request: Any) -> Any:
        if any(t.topic == topic for t in request.topics):
            asked.append(ctx.api_version)
        return original(ctx, request)

    create_topic(node.bootstrap, topic)
    node.call(lambda: HANDLERS.__setitem__(ApiKey.OFFSET_FOR_LEADER_EPOCH, counting))
    reader = _Reader(client, node.bootstrap, topic)
    try:
        with WireClient.connect(node.bootstrap) as wire:
            produce(wire, topic, 0, 5)
            got = reader.values(5)
            node.call(lambda: _bump_epoch(broker, topic, 3))
            deadline = time.monotonic() + 30
            while not asked:
                assert time.monotonic() < deadline, f"{client} never validated its position"
                assert reader.poll() == []  # nothing new to read meanwhile
            produce(wire, topic, 0, 3)
            got += reader.values(3)
    finally:
        reader.close()
        node.call(lambda: HANDLERS.__setitem__(ApiKey.OFFSET_FOR_LEADER_EPOCH, original))
    assert got == [f"v{i}".encode() for i in range(5)] + [f"v{i}".encode() for i in range(3)]
    assert max(asked) >= 2, asked  # with the current leader epoch (v2+)


def _bump_epoch(broker: Broker, topic: str, epoch: int) -> None:
    """This broker stays the only replica and leader of partition 0, at ``epoch``."""
    topic_id = broker.metadata_cache.topic_id(topic)
    assert topic_id is not None
    state = LeaderAndIsrPartitionState(topic, 0, SELF, epoch, (SELF,), (SELF,))
    assert broker.replica_manager.become_leader_or_follower([state], {topic: topic_id}) == {}
    broker.metadata_cache.update_metadata(
        controller_id=0,
        live_brokers=broker.metadata_cache.alive_brokers(),
        partition_states=[UpdateMetadataPartitionState(topic, 0, SELF, epoch, (SELF,), (SELF,))],
        topic_ids={topic: topic_id},
    )


def test_librdkafka_detects_a_truncation_past_its_position(node: InProcessBroker) -> None:
    """The log lost offsets 4-5 (as a follower's divergent tail) and a new epoch starts at 4:
    a consumer at offset 6 of epoch 0 asks where epoch 0 ends, gets 4, and reports the
    truncation (KIP-320) instead of silently waiting at an offset the log will reuse."""
    broker = node.broker
    assert broker is not None
    topic = "truncated"
    create_topic(node.bootstrap, topic)
    consumer = Consumer(
        {
            "bootstrap.servers": node.bootstrap,
            "group.id": "epoch-truncation",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 200,
            "auto.offset.reset": "error",
        }
    )
    try:
        with WireClient.connect(node.bootstrap) as wire:
            produce(wire, topic, 0, 4)
            produce(wire, topic, 0, 2)  # a batch of its own: truncated whole
        consumer.assign([TopicPartition(topic, 0, 0)])
        got: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(got) < 6 and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                got.append(message.value())
        assert len(got) == 6

        def truncate_and_bump() -> None:
            partition = broker.replica_manager.partitions[StorageTopicPartition(topic, 0)]
            partition.log.truncate_to(4)
            _bump_epoch(broker, topic, 1)

        node.call(truncate_and_bump)
        errors: list[KafkaError] = []
        deadline = time.monotonic() + 30
        while not errors and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None:
                assert message.error() is not None, message.value()  # nothing read past 4
                errors.append(message.error())
        # auto.offset.reset=error: the truncation surfaces as a failed reset, with the
        # broker's answer in the message.
        [error] = errors
        assert error.code() == KafkaError._AUTO_OFFSET_RESET, error
        assert "log truncation detected at offset 6 (leader epoch 0): broker end offset is 4" in (
            error.str()
        ), error
    finally:
        consumer.close()
