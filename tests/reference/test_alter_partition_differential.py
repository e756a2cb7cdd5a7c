"""AlterPartition (56) against Apache Kafka 3.9's ZooKeeper controller, in the differential
tests' style (``tests/reference/test_differential.py``): the same requests, at every version,
to the session's Kafka (broker 0, its own controller) and to one cluster-mode Franz broker
(also broker 0, its own controller, on a chroot of the session's ZooKeeper); the decoded
answers must be equal field by field (``tests.support.differential.compare``; topic ids are
random per cluster).

Each speaks for the broker itself (its id and broker epoch, the czxid of ``/brokers/ids/0``)
about a fresh one-replica topic of its own (leader 0, ISR [0], leader epoch 0, partition epoch
0). Only requests that change nothing are sent, so the session's Kafka is left as it was: a
stale broker epoch, unknown topics (by name and by id), leader and partition epochs off in
either direction, an ISR with a broker that does not exist, a leader going back to
RECOVERING (KIP-704), and the state the partition already has (answered with that state, not
written: Kafka's idempotence rule). Franz's broker side, ``AlterPartitionManager``, is sent
to both controllers too (``test_the_manager_against_kafkas_controller``). The accepted path
(writes, UpdateMetadata) and NOT_CONTROLLER from a broker that is not the controller need
several brokers: ``tests/cluster/test_replication_alter_partition.py`` and, with a Kafka broker
as the leader, ``test_alter_partition_interop.py``.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from franz.cluster.alter_partition import AlterPartitionManager, IsrUpdate, IsrUpdateResult
from franz.errors import ErrorCode
from franz.metadata.cache import BrokerEndpoint, MetadataBroker, MetadataCache
from franz.protocol.api_keys import INTER_BROKER_APIS, ApiKey
from franz.protocol.kafka_uuid import uuid_from_str
from franz.storage.files import TopicPartition
from tests.support.cluster import Cluster, new_chroot, start_cluster
from tests.support.differential import Session, Step, compare
from tests.support.differential_scenarios import create_topic
from tests.support.kafka_ref import KafkaBroker

TOPIC = "d-alter-partition"
VERSIONS = range(INTER_BROKER_APIS[ApiKey.ALTER_PARTITION].max_version + 1)


@pytest.fixture(scope="module")
def franz_zero(zookeeper: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """One cluster-mode Franz broker with Kafka's broker id 0, its own controller."""
    base = Path(tmp_path_factory.mktemp("franz-alter-partition"))
    with start_cluster(new_chroot(zookeeper, "franz-alter"), base, ids=[0]) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def both(kafka: KafkaBroker, franz_zero: Cluster) -> list[tuple[str, str]]:
    """(bootstrap, zookeeper.connect) of Kafka and Franz, each with the topic created."""
    brokers = [
        (kafka.bootstrap, kafka.properties["zookeeper.connect"]),
        (franz_zero.brokers[0].bootstrap, franz_zero.zk_connect),
    ]
    for bootstrap, _ in brokers:
        with Session(bootstrap, "alter-partition", 0) as session:
            create_topic(session, TOPIC)
    return brokers


def _facts(zookeeper_connect: str) -> tuple[int, uuid.UUID]:
    """Broker 0's broker epoch and the topic's id, from the cluster's ZooKeeper."""
    client = KazooClient(hosts=zookeeper_connect)
    client.start(timeout=15)
    try:
        stat = client.exists("/brokers/ids/0")
        assert stat is not None
        data, _ = client.get(f"/brokers/topics/{TOPIC}")
        return int(stat.czxid), uuid_from_str(json.loads(data)["topic_id"])
    finally:
        client.stop()
        client.close()


def _request(
    version: int,
    broker_epoch: int,
    topic_id: uuid.UUID,
    *,
    leader_epoch: int = 0,
    isr: tuple[int, ...] = (0,),
    partition_epoch: int = 0,
    partition: int = 0,
    topic: str = TOPIC,
    recovery: int = 0,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "partition_index": partition,
        "leader_epoch": leader_epoch,
        "new_isr": list(isr),
        "new_isr_with_epochs": [{"broker_id": r, "broker_epoch": -1} for r in isr],
        "leader_recovery_state": recovery,
        "partition_epoch": partition_epoch,
    }
    return {
        "broker_id": 0,
        "broker_epoch": broker_epoch,
        "topics": [{"topic_name": topic, "topic_id": topic_id, "partitions": [data]}],
    }


def _steps(session: Session, version: int, broker_epoch: int, topic_id: uuid.UUID) -> None:
    def send(label: str, **fields: Any) -> None:
        epoch = fields.pop("broker_epoch", broker_epoch)
        request = _request(version, epoch, fields.pop("topic_id", topic_id), **fields)
        session.send(ApiKey.ALTER_PARTITION, request, label=label)

    send("stale broker epoch", broker_epoch=broker_epoch - 1)
    send("newer broker epoch", broker_epoch=broker_epoch + 1)
    if version >= 2:
        send("unknown topic id", topic_id=uuid.UUID("0b7c4a1e-2d3f-4a5b-8c9d-0e1f2a3b4c5d"))
    else:
        send("unknown topic name", topic="d-alter-partition-nope")
    send("unknown partition", partition=3)
    send("fenced leader epoch", leader_epoch=-1, isr=())
    send("newer leader epoch", leader_epoch=1)
    send("newer partition epoch", partition_epoch=1)
    send("stale partition epoch", partition_epoch=-1, isr=())
    send("ineligible replica", isr=(0, 99))
    if version >= 1:  # KIP-704: RECOVERED never goes back to RECOVERING
        send("recovered to recovering", recovery=1)
    send("the current state", isr=(0,))


@pytest.mark.parametrize("version", VERSIONS, ids=[f"v{v}" for v in VERSIONS])
def test_same_answers_as_kafkas_controller(version: int, both: list[tuple[str, str]]) -> None:
    transcripts: list[list[Step]] = []
    for bootstrap, zookeeper_connect in both:
        with Session(bootstrap, "alter-partition", version) as session:
            broker_epoch, topic_id = _facts(zookeeper_connect)
            _steps(session, version, broker_epoch, topic_id)
        transcripts.append(session.transcript)
    top = [step.response["error_code"] for step in transcripts[0]]
    assert top[:2] == ["stale_broker_epoch(77)"] * 2  # at top level, from Kafka too
    problems = compare("alter-partition", *transcripts)
    assert not problems, "\n".join(problems)


def test_the_manager_against_kafkas_controller(both: list[tuple[str, str]]) -> None:
    """Franz's ``AlterPartitionManager`` (ApiVersions, then v3) to Kafka's controller and to
    Franz's: the same answers to the state the partition has and to an ineligible replica."""
    answers: list[list[IsrUpdateResult]] = []
    for bootstrap, zookeeper_connect in both:
        broker_epoch, topic_id = _facts(zookeeper_connect)
        host, port = bootstrap.rsplit(":", 1)
        cache = MetadataCache(broker_id=0)
        cache.update_metadata(
            controller_id=0,
            live_brokers=[MetadataBroker(0, (BrokerEndpoint(host, int(port)),))],
            partition_states=[],
        )

        async def run(
            cache: MetadataCache = cache, epoch: int = broker_epoch, topic_id: uuid.UUID = topic_id
        ) -> list[IsrUpdateResult]:
            manager = AlterPartitionManager(0, cache, lambda: epoch)
            manager.start()
            try:
                tp = TopicPartition(TOPIC, 0)
                same = await manager.submit(tp, topic_id, IsrUpdate(0, (0,), 0, 0))
                ineligible = await manager.submit(tp, topic_id, IsrUpdate(0, (0, 99), 0, 0))
                return [same, ineligible]
            finally:
                await manager.shutdown()

        answers.append(asyncio.run(asyncio.wait_for(run(), 60)))
    on_kafka, on_franz = answers
    assert on_kafka == [
        IsrUpdateResult(ErrorCode.NONE, 0, 0, (0,), 0, 0),
        IsrUpdateResult.failed(ErrorCode.INELIGIBLE_REPLICA),
    ]
    assert on_franz == on_kafka
