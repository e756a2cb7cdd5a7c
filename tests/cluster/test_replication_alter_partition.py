"""AlterPartition (56) in cluster mode, both ends: ``franz.cluster.alter_partition``'s
``AlterPartitionManager`` (on a test-side asyncio loop, as a partition leader's broker would
run it) and raw requests, against the controller of three ``franz broker`` processes.

Its own cluster (ids 1-3); roles follow whoever holds ``/controller`` (``C``) and the two
others (``A`` < ``B``). Topic ``isr`` has one partition on [A, B, C], led by A: the tests
speak for A (its broker id and broker epoch, the czxid of ``/brokers/ids/<A>``), shrinking
and expanding the ISR; cluster mode has no replication yet, so nothing else changes the ISR.
The last test kills C (a controller failover while an item is pending), so it comes last.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")

from franz.cluster.alter_partition import (
    AlterPartitionManager,
    IsrUpdate,
    IsrUpdateResult,
)
from franz.errors import ErrorCode
from franz.metadata.cache import BrokerEndpoint, MetadataBroker, MetadataCache
from franz.protocol.kafka_uuid import uuid_from_str
from franz.protocol.messages import build, request_type, response_type
from franz.storage.files import TopicPartition
from tests.support.cluster import Cluster, eventually, new_chroot, start_cluster
from tests.support.wire import WireClient, api_versions
from tests.support.zookeeper import ZooKeeperServer

ALTER_PARTITION = 56
TOPIC = "isr"
TP = TopicPartition(TOPIC, 0)
STATE = f"/brokers/topics/{TOPIC}/partitions/0/state"


@dataclass(frozen=True)
class Roles:
    cluster: Cluster
    c: int  # the controller
    a: int  # the leader of isr-0
    b: int
    topic_id: uuid.UUID


@pytest.fixture(scope="module")
def roles(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Roles]:
    from confluent_kafka.admin import AdminClient, NewTopic

    base = Path(tmp_path_factory.mktemp("alter-partition"))
    with start_cluster(new_chroot(zookeeper_server.connect_string), base) as cluster:
        eventually(lambda: cluster.controller_id() is not None, 30, "a controller")
        c = cluster.controller_id()
        assert c is not None
        a, b = sorted(set(cluster.brokers) - {c})
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
        topic = NewTopic(TOPIC, 1, replica_assignment=[[a, b, c]])
        admin.create_topics([topic], operation_timeout=30)[TOPIC].result(60)
        eventually(lambda: cluster.kazoo.exists(STATE) is not None, 30, "the state znode")
        assert state(cluster)[0]["leader"] == a
        topic_id = uuid_from_str(cluster.json(f"/brokers/topics/{TOPIC}")["topic_id"])
        yield Roles(cluster, c, a, b, topic_id)


# -- helpers ----------------------------------------------------------------------------------


def state(cluster: Cluster) -> tuple[dict[str, Any], int]:
    """The partition's ``state`` znode (JSON) and its zk version (the partition epoch)."""
    data, stat = cluster.kazoo.get(STATE)
    value: dict[str, Any] = json.loads(data)
    return value, int(stat.version)


def broker_epoch(cluster: Cluster, broker_id: int) -> int:
    stat = cluster.kazoo.exists(f"/brokers/ids/{broker_id}")
    assert stat is not None
    return int(stat.czxid)


def metadata_isr(cluster: Cluster, broker_id: int) -> list[int]:
    topic = cluster.kcat_metadata(cluster.brokers[broker_id], TOPIC)["topics"][0]
    return sorted(int(r["id"]) for r in topic["partitions"][0]["isrs"])


def cache_for(cluster: Cluster, controller_id: int | None) -> MetadataCache:
    """A metadata cache naming ``controller_id`` and the live brokers, as UpdateMetadata
    would leave it on a broker."""
    cache = MetadataCache(broker_id=-1)
    brokers = [
        MetadataBroker(i, (BrokerEndpoint(p.host, p.port),))
        for i, p in cluster.brokers.items()
        if p.proc is not None
    ]
    cache.update_metadata(controller_id=controller_id, live_brokers=brokers, partition_states=[])
    return cache


def alter(
    bootstrap: str,
    version: int,
    broker_id: int,
    epoch: int,
    topics: list[dict[str, Any]],
) -> Any:
    """A raw AlterPartition; ``topics`` in Kafka's field names (``new_isr`` is adapted to
    v3's ``new_isr_with_epochs``)."""
    if version >= 3:
        topics = [
            {
                **topic,
                "partitions": [
                    {
                        **p,
                        "new_isr_with_epochs": [
                            {"broker_id": r, "broker_epoch": -1} for r in p["new_isr"]
                        ],
                    }
                    for p in topic["partitions"]
                ],
            }
            for topic in topics
        ]
    body = {"broker_id": broker_id, "broker_epoch": epoch, "topics": topics}
    with WireClient.connect(bootstrap) as client:
        correlation_id = client.send(build(request_type(ALTER_PARTITION, version), body))
        return client.recv(response_type(ALTER_PARTITION, version), correlation_id, 60)


def partition(leader_epoch: int, isr: list[int], partition_epoch: int, index: int = 0) -> Any:
    return {
        "partition_index": index,
        "leader_epoch": leader_epoch,
        "new_isr": isr,
        "leader_recovery_state": 0,
        "partition_epoch": partition_epoch,
    }


def errors(response: Any) -> dict[tuple[Any, int], int]:
    key = "topic_id" if hasattr(response.topics[0], "topic_id") else "topic_name"
    return {
        (getattr(t, key), int(p.partition_index)): int(p.error_code)
        for t in response.topics
        for p in t.partitions
    }


# -- tests ------------------------------------------------------------------------------------


def test_shrink_then_expand_through_the_manager(roles: Roles) -> None:
    cluster = roles.cluster
    before, version = state(cluster)
    assert sorted(before["isr"]) == sorted([roles.a, roles.b, roles.c])

    async def run() -> tuple[IsrUpdateResult, IsrUpdateResult, IsrUpdateResult]:
        epoch = broker_epoch(cluster, roles.a)
        manager = AlterPartitionManager(roles.a, cache_for(cluster, roles.c), lambda: epoch)
        manager.start()
        try:
            shrink = IsrUpdate(before["leader_epoch"], (roles.a, roles.c), 0, version)
            first = manager.submit(TP, roles.topic_id, shrink)
            # One item per partition: a second one fails fast, as Kafka's.
            again = await manager.submit(TP, roles.topic_id, shrink)
            shrunk = await asyncio.wait_for(first, 60)
            expand = IsrUpdate(
                before["leader_epoch"], (roles.a, roles.c, roles.b), 0, shrunk.partition_epoch
            )
            expanded = await asyncio.wait_for(manager.submit(TP, roles.topic_id, expand), 60)
            return again, shrunk, expanded
        finally:
            await manager.shutdown()

    again, shrunk, expanded = asyncio.run(run())
    assert again.error == ErrorCode.OPERATION_NOT_ATTEMPTED
    assert shrunk == IsrUpdateResult(
        ErrorCode.NONE, roles.a, before["leader_epoch"], (roles.a, roles.c), 0, version + 1
    )
    assert expanded == IsrUpdateResult(
        ErrorCode.NONE,
        roles.a,
        before["leader_epoch"],
        (roles.a, roles.c, roles.b),
        0,
        version + 2,
    )
    # Kafka's LeaderIsrAndControllerEpoch JSON, written by the controller (its epoch), in
    # Kafka's key order; the znode's version is the partition epoch answered.
    controller_epoch, _ = cluster.kazoo.get("/controller_epoch")
    data, stat = cluster.kazoo.get(STATE)
    assert stat.version == version + 2
    assert data.decode() == (
        f'{{"controller_epoch":{int(controller_epoch)},"leader":{roles.a},"version":1,'
        f'"leader_epoch":{before["leader_epoch"]},"isr":[{roles.a},{roles.c},{roles.b}]}}'
    )
    for broker_id in cluster.brokers:
        eventually(
            lambda b=broker_id: metadata_isr(cluster, b) == sorted([roles.a, roles.b, roles.c]),
            30,
            f"broker {broker_id}'s Metadata shows the expanded ISR",
        )


def test_shrink_shows_in_every_brokers_metadata(roles: Roles) -> None:
    cluster = roles.cluster
    current, version = state(cluster)
    epoch = broker_epoch(cluster, roles.a)
    topics = [{"topic_id": roles.topic_id, "partitions": []}]
    topics[0]["partitions"].append(partition(current["leader_epoch"], [roles.a], version))
    response = alter(cluster.brokers[roles.c].bootstrap, 3, roles.a, epoch, topics)
    assert int(response.error_code) == ErrorCode.NONE
    (answer,) = response.topics[0].partitions
    assert (int(answer.error_code), list(answer.isr), int(answer.partition_epoch)) == (
        ErrorCode.NONE,
        [roles.a],
        version + 1,
    )
    assert state(cluster) == ({**current, "isr": [roles.a]}, version + 1)
    for broker_id in cluster.brokers:
        eventually(
            lambda b=broker_id: metadata_isr(cluster, b) == [roles.a],
            30,
            f"broker {broker_id}'s Metadata shows the ISR [A]",
        )
    # Back to the full ISR for the next tests.
    restore = [partition(current["leader_epoch"], current["isr"], version + 1)]
    response = alter(
        cluster.brokers[roles.c].bootstrap,
        3,
        roles.a,
        epoch,
        [{"topic_id": roles.topic_id, "partitions": restore}],
    )
    assert errors(response) == {(roles.topic_id, 0): ErrorCode.NONE}


def test_stale_partition_epoch_is_invalid_update_version(roles: Roles) -> None:
    cluster = roles.cluster
    current, version = state(cluster)
    assert version >= 1
    controller = cluster.brokers[roles.c].bootstrap
    epoch = broker_epoch(cluster, roles.a)
    stale = [partition(current["leader_epoch"], [roles.a], version - 1)]
    response = alter(
        controller, 3, roles.a, epoch, [{"topic_id": roles.topic_id, "partitions": stale}]
    )
    assert errors(response) == {(roles.topic_id, 0): ErrorCode.INVALID_UPDATE_VERSION}
    # The state it already has, with a stale partition epoch: answered, not refused (Kafka's
    # equalsAllowStalePartitionEpoch keeps AlterPartition idempotent).
    same = [partition(current["leader_epoch"], current["isr"], version - 1)]
    response = alter(
        controller, 3, roles.a, epoch, [{"topic_id": roles.topic_id, "partitions": same}]
    )
    (answer,) = response.topics[0].partitions
    assert (int(answer.error_code), int(answer.partition_epoch)) == (ErrorCode.NONE, version)
    assert state(cluster) == (current, version)


def test_wrong_broker_epoch_is_stale_broker_epoch(roles: Roles) -> None:
    cluster = roles.cluster
    current, version = state(cluster)
    epoch = broker_epoch(cluster, roles.a)
    shrink = [partition(current["leader_epoch"], [roles.a], version)]
    for wrong in (epoch - 1, epoch + 1, -1):
        response = alter(
            cluster.brokers[roles.c].bootstrap,
            3,
            roles.a,
            wrong,
            [{"topic_id": roles.topic_id, "partitions": shrink}],
        )
        assert (int(response.error_code), response.topics) == (ErrorCode.STALE_BROKER_EPOCH, ())
    assert state(cluster) == (current, version)


def test_non_controller_answers_not_controller(roles: Roles) -> None:
    cluster = roles.cluster
    current, version = state(cluster)
    epoch = broker_epoch(cluster, roles.a)
    for broker_id in (roles.a, roles.b):
        # Every broker serves (and advertises, as a Kafka 3.9 ZooKeeper-mode broker) v0-v3.
        with WireClient.connect(cluster.brokers[broker_id].bootstrap) as client:
            assert api_versions(client)[ALTER_PARTITION] == (0, 3)
        shrink = [partition(current["leader_epoch"], [roles.a], version)]
        response = alter(
            cluster.brokers[broker_id].bootstrap,
            3,
            roles.a,
            epoch,
            [{"topic_id": roles.topic_id, "partitions": shrink}],
        )
        assert (int(response.error_code), response.topics) == (ErrorCode.NOT_CONTROLLER, ())
    assert state(cluster) == (current, version)


def test_per_partition_refusals(roles: Roles) -> None:
    cluster = roles.cluster
    current, version = state(cluster)
    leader_epoch = current["leader_epoch"]
    controller = cluster.brokers[roles.c].bootstrap
    epoch = broker_epoch(cluster, roles.a)
    unknown_id = uuid.uuid4()
    response = alter(
        controller,
        2,
        roles.a,
        epoch,
        [
            {
                "topic_id": roles.topic_id,
                "partitions": [
                    partition(leader_epoch, [roles.a, 99], version),  # 99 is not a broker
                    partition(leader_epoch, [roles.a], version, index=7),
                ],
            },
            {"topic_id": unknown_id, "partitions": [partition(0, [roles.a], 0)]},
        ],
    )
    assert int(response.error_code) == ErrorCode.NONE
    assert errors(response) == {
        (roles.topic_id, 0): ErrorCode.INELIGIBLE_REPLICA,
        (roles.topic_id, 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        (unknown_id, 0): ErrorCode.UNKNOWN_TOPIC_ID,
    }
    # v0-v1 name topics; an ineligible replica is OPERATION_NOT_ATTEMPTED there (KIP-841).
    response = alter(
        controller,
        1,
        roles.a,
        epoch,
        [
            {"topic_name": TOPIC, "partitions": [partition(leader_epoch, [roles.a, 99], version)]},
            {"topic_name": "nope", "partitions": [partition(0, [roles.a], 0)]},
        ],
    )
    assert errors(response) == {
        (TOPIC, 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    # Epochs: older leader epoch is fenced; newer ones than the controller's mean it is stale.
    cases = {
        (leader_epoch - 1, version): ErrorCode.FENCED_LEADER_EPOCH,
        (leader_epoch + 1, version): ErrorCode.NOT_CONTROLLER,
        (leader_epoch, version + 1): ErrorCode.NOT_CONTROLLER,
    }
    for (le, pe), expected in cases.items():
        response = alter(
            controller,
            3,
            roles.a,
            epoch,
            [{"topic_id": roles.topic_id, "partitions": [partition(le, [roles.a], pe)]}],
        )
        assert errors(response) == {(roles.topic_id, 0): expected}, (le, pe)
    assert state(cluster) == (current, version)


def test_manager_retries_until_it_finds_the_controller(roles: Roles) -> None:
    """Connection refused, then NOT_CONTROLLER from a broker that is not the controller, then
    the metadata names the controller: the pending item is answered by it."""
    cluster = roles.cluster
    current, version = state(cluster)
    epoch = broker_epoch(cluster, roles.a)

    async def until(check: Callable[[], bool], what: str) -> None:
        for _ in range(600):  # 30 s
            if check():
                return
            await asyncio.sleep(0.05)
        raise AssertionError(what)

    async def run() -> IsrUpdateResult:
        cache = MetadataCache(broker_id=-1)
        dead = MetadataBroker(roles.b, (BrokerEndpoint("127.0.0.1", 1),))  # nothing listens
        cache.update_metadata(controller_id=roles.b, live_brokers=[dead], partition_states=[])
        manager = AlterPartitionManager(
            roles.a, cache, lambda: epoch, retry_backoff=0.02, retry_backoff_max=0.1
        )
        manager.start()
        try:
            update = IsrUpdate(current["leader_epoch"], (roles.a, roles.b), 0, version)
            future = manager.submit(TP, roles.topic_id, update)
            await until(lambda: manager.failed_attempts >= 2, "connection refused, retried")
            assert not future.done()
            cache.update_metadata(
                controller_id=roles.b,
                live_brokers=cache_for(cluster, None).alive_brokers(),
                partition_states=[],
            )
            await until(lambda: manager.not_controller_answers >= 2, "NOT_CONTROLLER, retried")
            assert not future.done()
            cache.update_metadata(
                controller_id=roles.c,
                live_brokers=cache_for(cluster, None).alive_brokers(),
                partition_states=[],
            )
            return await asyncio.wait_for(future, 60)
        finally:
            await manager.shutdown()

    result = asyncio.run(run())
    assert result == IsrUpdateResult(
        ErrorCode.NONE, roles.a, current["leader_epoch"], (roles.a, roles.b), 0, version + 1
    )
    assert state(cluster)[0]["isr"] == [roles.a, roles.b]


def test_manager_resends_after_stale_broker_epoch_with_the_current_epoch(roles: Roles) -> None:
    """A top-level STALE_BROKER_EPOCH (the controller has not seen a new registration yet) is
    retried after 50 ms with the broker epoch read again; without a topic id the request is
    v1, naming the topic."""
    cluster = roles.cluster
    current, version = state(cluster)
    epochs = [broker_epoch(cluster, roles.a) - 1, broker_epoch(cluster, roles.a)]

    async def run() -> tuple[IsrUpdateResult, int]:
        manager = AlterPartitionManager(
            roles.a,
            cache_for(cluster, roles.c),
            lambda: epochs[0] if len(epochs) > 1 else epochs[-1],
        )
        manager.start()
        try:
            update = IsrUpdate(current["leader_epoch"], (roles.a, roles.b, roles.c), 0, version)
            future = manager.submit(TP, uuid.UUID(int=0), update)
            while manager.requests_answered < 1:
                await asyncio.sleep(0.01)
            epochs.pop(0)  # the registration the controller knows
            return await asyncio.wait_for(future, 60), manager.requests_answered
        finally:
            await manager.shutdown()

    result, answered = asyncio.run(run())
    assert answered >= 2
    assert result == IsrUpdateResult(
        ErrorCode.NONE,
        roles.a,
        current["leader_epoch"],
        (roles.a, roles.b, roles.c),
        0,
        version + 1,
    )
    assert state(cluster) == ({**current, "isr": [roles.a, roles.b, roles.c]}, version + 1)


def test_controller_failover_while_an_item_is_pending(roles: Roles) -> None:
    """The controller dies; the leader's item waits, retried, until the metadata names the new
    controller, which answers it (with the state the failover left)."""
    cluster = roles.cluster
    epoch = broker_epoch(cluster, roles.a)
    old = roles.c

    async def run() -> IsrUpdateResult:
        cache = cache_for(cluster, old)
        manager = AlterPartitionManager(
            roles.a, cache, lambda: epoch, retry_backoff=0.02, retry_backoff_max=0.2
        )
        manager.start()
        try:
            await asyncio.to_thread(cluster.brokers[old].kill)
            # What the dead controller's successor will have written: wait for it in
            # ZooKeeper (the test stands in for the leader, which would learn it from
            # LeaderAndIsr), proposing meanwhile an update the old controller never sees.
            pending = manager.submit(TP, roles.topic_id, IsrUpdate(0, (roles.a,), 0, 0))
            for _ in range(600):  # the dead controller's address refuses, retried
                if manager.failed_attempts >= 2:
                    break
                await asyncio.sleep(0.05)
            assert manager.failed_attempts >= 2
            assert not pending.done()

            def new_controller() -> bool:
                found = cluster.controller_id()
                return found is not None and found != old

            await asyncio.to_thread(eventually, new_controller, 30, "a new controller")
            new = cluster.controller_id()
            assert new is not None
            cache.update_metadata(
                controller_id=new,
                live_brokers=cache_for(cluster, None).alive_brokers(),
                partition_states=[],
            )
            first = await asyncio.wait_for(pending, 60)
            # Answered by the new controller: the stale proposal is refused...
            assert first.error in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.INVALID_UPDATE_VERSION)
            await asyncio.to_thread(
                eventually,
                lambda: old not in state(cluster)[0]["isr"],
                30,
                "the dead broker out of the ISR",
            )
            current, version = state(cluster)
            update = IsrUpdate(current["leader_epoch"], (roles.a,), 0, version)
            return await asyncio.wait_for(manager.submit(TP, roles.topic_id, update), 60)
        finally:
            await manager.shutdown()

    result = asyncio.run(run())
    current, version = state(cluster)
    assert result == IsrUpdateResult(
        ErrorCode.NONE, roles.a, current["leader_epoch"], (roles.a,), 0, version
    )
    assert current["isr"] == [roles.a]
