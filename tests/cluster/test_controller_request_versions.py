"""Issue 16: every version of the controller's requests a Kafka 3.9 ZooKeeper-mode broker
serves (LeaderAndIsr v0-7, UpdateMetadata v0-8, StopReplica v0-4), sent over raw TCP to a
real cluster-mode ``franz broker`` (one broker on a chroot of the session ZooKeeper, its own
controller), each applied with Kafka's semantics and fenced by the controller and broker
epochs at every version.

Each request is written once as a mapping with every version's fields (Kafka's names) and
built at the version under test by ``franz.protocol.messages.build``, which keeps the fields
the version has: ``ungrouped_partition_states`` for LeaderAndIsr v0-1 and UpdateMetadata
v0-4, ``topic_states`` above; ``delete_partitions`` for StopReplica v0-2, per partition from
v3; UpdateMetadata v0's ``v0_host`` / ``v0_port``.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")

from franz.errors import ErrorCode
from franz.protocol.api_keys import ApiKey
from franz.protocol.messages import build, request_type, response_type
from tests.support.cluster import Cluster, eventually, new_chroot, start_cluster
from tests.support.wire import (
    WireClient,
    api_versions,
    create_topics,
    metadata,
)
from tests.support.zookeeper import ZooKeeperServer

BROKER = 1


@pytest.fixture(scope="module")
def single(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """One cluster-mode broker (id 1, the controller) on a chroot of its own."""
    base = Path(tmp_path_factory.mktemp("controller-versions"))
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, ids=[BROKER]) as c:
        eventually(lambda: c.controller_id() == BROKER, 30, "broker 1 is the controller")
        yield c


def epochs(cluster: Cluster) -> tuple[int, int]:
    """(controller epoch, this broker's epoch: the czxid of its registration)."""
    controller_epoch = int(cluster.kazoo.get("/controller_epoch")[0])
    stat = cluster.kazoo.exists(f"/brokers/ids/{BROKER}")
    assert stat is not None
    return controller_epoch, stat.czxid


def new_topic(cluster: Cluster, name: str, partitions: int = 1) -> uuid.UUID:
    with WireClient.connect(cluster.brokers[BROKER].bootstrap, timeout=30) as client:
        created = create_topics(client, {name: partitions})
        assert [int(t.error_code) for t in created.topics] == [0], created

        def led() -> bool:
            (described,) = metadata(client, [name]).topics
            return len(described.partitions) == partitions and all(
                p.leader_id == BROKER for p in described.partitions
            )

        eventually(led, 30, f"{name} led by broker {BROKER}")
    encoded = cluster.json(f"/brokers/topics/{name}")["topic_id"]
    return uuid.UUID(bytes=base64.urlsafe_b64decode(encoded + "=="))


def ask(cluster: Cluster, api: ApiKey, version: int, data: dict[str, Any]) -> Any:
    request = build(request_type(api, version), data)
    with WireClient.connect(cluster.brokers[BROKER].bootstrap, timeout=30) as client:
        client.send(request)
        return client.recv(response_type(api, version))


def test_the_broker_advertises_kafkas_ranges(single: Cluster) -> None:
    with WireClient.connect(single.brokers[BROKER].bootstrap) as client:
        advertised = api_versions(client)
    assert advertised[ApiKey.LEADER_AND_ISR] == (0, 7)
    assert advertised[ApiKey.STOP_REPLICA] == (0, 4)
    assert advertised[ApiKey.UPDATE_METADATA] == (0, 8)


# -- LeaderAndIsr -----------------------------------------------------------------------------


def leader_and_isr(
    topic: str,
    topic_id: uuid.UUID,
    *,
    controller_epoch: int,
    broker_epoch: int,
    leader_epoch: int,
    replicas: list[int],
) -> dict[str, Any]:
    state = {
        "partition_index": 0,
        "controller_epoch": controller_epoch,
        "leader": replicas[0],
        "leader_epoch": leader_epoch,
        "isr": replicas,
        "partition_epoch": 0,
        "replicas": replicas,
        "adding_replicas": [],
        "removing_replicas": [],
        "is_new": False,
        "leader_recovery_state": 0,
    }
    return {
        "controller_id": BROKER,
        "controller_epoch": controller_epoch,
        "broker_epoch": broker_epoch,
        "type": 0,
        "ungrouped_partition_states": [{"topic_name": topic, **state}],  # v0-1
        "topic_states": [
            {"topic_name": topic, "topic_id": topic_id, "partition_states": [state]}
        ],  # v2+
        "live_leaders": [{"broker_id": BROKER, "host_name": "127.0.0.1", "port": 9092}],
    }


def partition_codes(response: Any, version: int) -> list[tuple[Any, int, int]]:
    """(topic name up to v4, topic id from v5; partition; error code) of a LeaderAndIsr
    response."""
    if version < 5:
        return [
            (p.topic_name, p.partition_index, int(p.error_code)) for p in response.partition_errors
        ]
    return [
        (t.topic_id, p.partition_index, int(p.error_code))
        for t in response.topics
        for p in t.partition_errors
    ]


@pytest.mark.parametrize("version", range(8))
def test_leader_and_isr_at_every_version(single: Cluster, version: int) -> None:
    topic = f"lai-v{version}"
    topic_id = new_topic(single, topic)
    key = topic if version < 5 else topic_id
    controller_epoch, broker_epoch = epochs(single)

    def send(**kwargs: Any) -> tuple[int, list[tuple[Any, int, int]]]:
        request = leader_and_isr(topic, topic_id, **kwargs)
        response = ask(single, ApiKey.LEADER_AND_ISR, version, request)
        return int(response.error_code), partition_codes(response, version)

    stale = ErrorCode.STALE_CONTROLLER_EPOCH
    current = {"controller_epoch": controller_epoch, "broker_epoch": broker_epoch}
    # Fenced as a whole: an older controller's request, every partition with its code.
    older = {**current, "controller_epoch": controller_epoch - 1}
    assert send(**older, leader_epoch=5, replicas=[BROKER]) == (stale, [(key, 0, stale)])
    if version >= 2:  # KIP-380: v0-1 carry no broker epoch
        old_broker = {**current, "broker_epoch": broker_epoch - 1}
        fenced = ErrorCode.STALE_BROKER_EPOCH
        assert send(**old_broker, leader_epoch=5, replicas=[BROKER]) == (
            fenced,
            [(key, 0, fenced)],
        )
    # Applied: this broker stays leader at leader epoch 5 (the fenced ones changed nothing).
    assert send(**current, leader_epoch=5, replicas=[BROKER]) == (0, [(key, 0, 0)])
    # The same leader epoch again is not newer: STALE_CONTROLLER_EPOCH for the partition.
    assert send(**current, leader_epoch=5, replicas=[BROKER]) == (0, [(key, 0, stale)])
    # A newer state that does not name this broker among the replicas.
    unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert send(**current, leader_epoch=6, replicas=[7]) == (0, [(key, 0, unknown)])
    # The partition still serves, as leader.
    with WireClient.connect(single.brokers[BROKER].bootstrap) as client:
        (answer,) = metadata(client, [topic]).topics
    assert [(p.partition_index, p.leader_id) for p in answer.partitions] == [(0, BROKER)]


# -- UpdateMetadata ---------------------------------------------------------------------------


def update_metadata(
    single: Cluster,
    topic: str,
    topic_id: uuid.UUID,
    fake: int,
    *,
    controller_epoch: int,
    broker_epoch: int,
) -> dict[str, Any]:
    """The live brokers (this one and a ``fake`` one, id ``fake``, on a port of its own) and
    the topic's partition 0 at leader epoch ``fake`` with the fake broker as offline
    replica."""
    me = single.brokers[BROKER]
    host, port = me.bootstrap.rsplit(":", 1)
    state = {
        "partition_index": 0,
        "controller_epoch": controller_epoch,
        "leader": BROKER,
        "leader_epoch": fake,
        "isr": [BROKER],
        "zk_version": 0,
        "replicas": [BROKER, fake],
        "offline_replicas": [fake],
    }

    def broker(broker_id: int, host: str, port: int, rack: str | None) -> dict[str, Any]:
        endpoint = {"port": port, "host": host, "listener": "PLAINTEXT", "security_protocol": 0}
        return {
            "id": broker_id,
            "v0_host": host,
            "v0_port": port,
            "endpoints": [endpoint],
            "rack": rack,
        }

    return {
        "controller_id": BROKER,
        "controller_epoch": controller_epoch,
        "broker_epoch": broker_epoch,
        "ungrouped_partition_states": [{"topic_name": topic, **state}],  # v0-4
        "topic_states": [
            {"topic_name": topic, "topic_id": topic_id, "partition_states": [state]}
        ],  # v5+
        "live_brokers": [
            broker(BROKER, host, int(port), None),
            broker(fake, "127.0.0.2", 20_000 + fake, f"rack-{fake}"),
        ],
    }


@pytest.mark.parametrize("version", range(9))
def test_update_metadata_at_every_version(single: Cluster, version: int) -> None:
    topic = f"um-v{version}"
    topic_id = new_topic(single, topic)
    fake = 100 + version
    controller_epoch, broker_epoch = epochs(single)

    def send(**kwargs: Any) -> int:
        request = update_metadata(single, topic, topic_id, fake, **kwargs)
        return int(ask(single, ApiKey.UPDATE_METADATA, version, request).error_code)

    def described() -> Any:
        with WireClient.connect(single.brokers[BROKER].bootstrap) as client:
            return metadata(client, [topic])

    current = {"controller_epoch": controller_epoch, "broker_epoch": broker_epoch}
    older = {**current, "controller_epoch": controller_epoch - 1}
    assert send(**older) == ErrorCode.STALE_CONTROLLER_EPOCH
    if version >= 5:  # KIP-380: v0-4 carry no broker epoch
        old_broker = {**current, "broker_epoch": broker_epoch - 1}
        assert send(**old_broker) == ErrorCode.STALE_BROKER_EPOCH
    assert fake not in {b.node_id for b in described().brokers}
    assert send(**current) == 0
    response = described()
    # v0's only endpoint, and v1-2's endpoints, are on the listener named after their
    # security protocol (PLAINTEXT), the one this client connected to: the fake broker is
    # listed with its address; a rack from v2.
    brokers = {b.node_id: (b.host, b.port, b.rack) for b in response.brokers}
    assert brokers[fake] == ("127.0.0.2", 20_000 + fake, f"rack-{fake}" if version >= 2 else None)
    assert BROKER in brokers
    (answer,) = response.topics
    (partition,) = answer.partitions
    assert (partition.leader_id, partition.leader_epoch) == (BROKER, fake)
    assert list(partition.replica_nodes) == [BROKER, fake]
    assert list(partition.offline_replicas) == ([fake] if version >= 4 else [])


# -- StopReplica ------------------------------------------------------------------------------


def stop_replica(
    topic: str,
    partitions: list[int],
    *,
    controller_epoch: int,
    broker_epoch: int,
    delete: bool,
    leader_epoch: int = -2,
) -> dict[str, Any]:
    return {
        "controller_id": BROKER,
        "controller_epoch": controller_epoch,
        "broker_epoch": broker_epoch,
        "delete_partitions": delete,  # v0-2
        "ungrouped_partitions": [
            {"topic_name": topic, "partition_index": p} for p in partitions
        ],  # v0
        "topics": [{"name": topic, "partition_indexes": partitions}],  # v1-2
        "topic_states": [
            {
                "topic_name": topic,
                "partition_states": [
                    {"partition_index": p, "leader_epoch": leader_epoch, "delete_partition": delete}
                    for p in partitions
                ],
            }
        ],  # v3+
    }


@pytest.mark.parametrize("version", range(5))
def test_stop_replica_at_every_version(single: Cluster, version: int) -> None:
    topic = f"sr-v{version}"
    topic_id = new_topic(single, topic, partitions=2)
    controller_epoch, broker_epoch = epochs(single)
    logs = single.brokers[BROKER].data_dir / "logs"

    def send(partitions: list[int], **kwargs: Any) -> tuple[int, list[tuple[str, int, int]]]:
        request = stop_replica(topic, partitions, **kwargs)
        response = ask(single, ApiKey.STOP_REPLICA, version, request)
        return int(response.error_code), sorted(
            (p.topic_name, p.partition_index, int(p.error_code)) for p in response.partition_errors
        )

    def answer(code: int, partitions: list[int]) -> list[tuple[str, int, int]]:
        return [(topic, p, code) for p in partitions]

    current = {"controller_epoch": controller_epoch, "broker_epoch": broker_epoch}
    stale = ErrorCode.STALE_CONTROLLER_EPOCH
    older = {**current, "controller_epoch": controller_epoch - 1}
    # Refused as a whole: Kafka lists no partitions then.
    assert send([0, 1], **older, delete=True) == (stale, [])
    if version >= 1:  # KIP-380: v0 carries no broker epoch
        fenced = ErrorCode.STALE_BROKER_EPOCH
        old_broker = {**current, "broker_epoch": broker_epoch - 1}
        assert send([0, 1], **old_broker, delete=True) == (fenced, [])
    assert (logs / f"{topic}-0").is_dir() and (logs / f"{topic}-1").is_dir()
    if version >= 3:  # KIP-570: a leader epoch older than the replica's is fenced
        # (Kafka 3.9's ReplicaManager.stopReplicas stops at an equal one): partition 0 moves
        # to leader epoch 1 first, then a StopReplica at epoch 0 is older.
        moved = leader_and_isr(topic, topic_id, **current, leader_epoch=1, replicas=[BROKER])
        response = ask(single, ApiKey.LEADER_AND_ISR, 7, moved)
        assert partition_codes(response, 7) == [(topic_id, 0, 0)]
        fenced_epoch = ErrorCode.FENCED_LEADER_EPOCH
        assert send([0], **current, delete=True, leader_epoch=0) == (
            0,
            answer(fenced_epoch, [0]),
        )
        assert (logs / f"{topic}-0").is_dir()
    # Without delete: stopped, the log kept.
    assert send([1], **current, delete=False) == (0, answer(0, [1]))
    assert (logs / f"{topic}-1").is_dir()
    # With delete (below v3 one flag for every partition, and no leader epoch: always stops).
    assert send([0, 1], **current, delete=True) == (0, answer(0, [0, 1]))
    eventually(
        lambda: not (logs / f"{topic}-0").exists() and not (logs / f"{topic}-1").exists(),
        15,
        f"{topic}'s logs deleted",
    )
