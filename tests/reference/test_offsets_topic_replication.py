"""``offsets.topic.replication.factor`` above the live brokers, Apache Kafka 3.9 (ZooKeeper
mode) beside a Franz broker in cluster mode, each alone in a chroot of the session's ZooKeeper
with the factor set to 2.

Kafka 3.9 does not cap the factor (KIP-115): FindCoordinator asks its
``AutoTopicCreationManager`` to create ``__consumer_offsets``, the assignment over the one
live broker fails (INVALID_REPLICATION_FACTOR), and the lookup answers
COORDINATOR_NOT_AVAILABLE, again at every retry, with no topic in ZooKeeper. Metadata with
auto-creation tries the same creation for ``__consumer_offsets`` and answers
INVALID_REPLICATION_FACTOR (an internal topic). Franz must answer the same
(``franz.broker.offsets_log``, ``franz.broker.handlers.metadata``).
``tests/cluster/test_replication_epoch.py`` shows the topic created with all replicas once
enough brokers are alive.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from franz.protocol.api_keys import ApiKey
from tests.support.cluster import Cluster, start_cluster
from tests.support.kafka_ref import HasBootstrap, KafkaBroker
from tests.support.wire import WireClient, metadata, request_at

OFFSETS_TOPIC = "__consumer_offsets"
COORDINATOR_NOT_AVAILABLE = 15
FACTOR = {"offsets.topic.replication.factor": "2"}


@pytest.fixture(scope="module")
def kafka_alone(
    zookeeper: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[KafkaBroker, str]]:
    """A Kafka broker whose offsets topic needs two brokers, and its ``zookeeper.connect``."""
    chroot = f"{zookeeper}/kafka-offsets-rf-{uuid.uuid4().hex[:8]}"
    broker = KafkaBroker(tmp_path_factory.mktemp("kafka-offsets-rf"), chroot, properties=FACTOR)
    broker.start()
    try:
        yield broker, chroot
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def franz_alone(zookeeper: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("franz-offsets-rf"))
    chroot = f"{zookeeper}/franz-offsets-rf-{uuid.uuid4().hex[:8]}"
    with start_cluster(chroot, base, ids=(1,), extra_props=FACTOR) as cluster:
        yield cluster


def _find_coordinator(broker: HasBootstrap, group: str, version: int) -> tuple[int, int]:
    with WireClient.connect(broker.bootstrap, timeout=15) as wire:
        data = {"key": group, "key_type": 0, "coordinator_keys": [group]}
        response = request_at(wire, ApiKey.FIND_COORDINATOR, version, data)
    if version >= 4:
        (response,) = response.coordinators
    return int(response.error_code), int(response.node_id)


def _topic_exists(zk_connect: str) -> bool:
    client = KazooClient(hosts=zk_connect)
    client.start(timeout=15)
    try:
        return client.exists(f"/brokers/topics/{OFFSETS_TOPIC}") is not None
    finally:
        client.stop()
        client.close()


@pytest.mark.parametrize("which", ["kafka", "franz"])
def test_too_few_live_brokers_give_coordinator_not_available_and_no_topic(
    which: str, kafka_alone: tuple[KafkaBroker, str], franz_alone: Cluster
) -> None:
    broker: HasBootstrap
    if which == "kafka":
        broker, zk_connect = kafka_alone
    else:
        broker, zk_connect = franz_alone.brokers[1], franz_alone.zk_connect
    for attempt, version in enumerate((0, 3, 4, 6, 3)):
        answer = _find_coordinator(broker, f"rf-{attempt}", version)
        assert answer == (COORDINATOR_NOT_AVAILABLE, -1), (which, version, answer)
    assert not _topic_exists(zk_connect), which


def test_metadata_for_the_offsets_topic_answers_as_kafka(
    kafka_alone: tuple[KafkaBroker, str], franz_alone: Cluster
) -> None:
    answers = {}
    for which, broker in (("kafka", kafka_alone[0]), ("franz", franz_alone.brokers[1])):
        with WireClient.connect(broker.bootstrap, timeout=15) as wire:
            response = metadata(wire, [OFFSETS_TOPIC], allow_auto_topic_creation=True)
        (topic,) = response.topics
        answers[which] = (int(topic.error_code), topic.is_internal, len(topic.partitions))
    assert answers["franz"] == answers["kafka"]
