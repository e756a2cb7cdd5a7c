"""Replication's leader side with real brokers: acks=all waits for the ISR, followers leave
the ISR after ``replica.lag.time.max.ms`` and rejoin once caught up, ``min.insync.replicas``,
the high watermark bounds what consumers see, and a leader SIGKILLed under an idempotent
producer loses nothing acknowledged.

Its own cluster (three ``franz broker`` processes, ids 1-3): ``replica.lag.time.max.ms`` 3 s
keeps the ISR tests short, and a ZooKeeper session timeout of 12 s keeps a follower stopped
(SIGSTOP) for a few seconds registered, so it is the leader's AlterPartition, not the
controller's broker-failure handling, that takes it out of the ISR. Each test's topic is led
by the controller and followed by the other two brokers, so stopping followers never stops
the controller.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.support.broker import BrokerProcess  # noqa: E402
from tests.support.cluster import (  # noqa: E402
    Cluster,
    eventually,
    log_bytes,
    new_chroot,
    start_cluster,
)
from tests.support.zookeeper import ZooKeeperServer  # noqa: E402

LAG_MS = 3000


@pytest.fixture(scope="module")
def lcluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("replication-leader"))
    props = {"replica.lag.time.max.ms": str(LAG_MS), "zookeeper.session.timeout.ms": "12000"}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def state(cluster: Cluster, topic: str, partition: int = 0) -> dict[str, Any]:
    return cluster.json(f"/brokers/topics/{topic}/partitions/{partition}/state")


def isr_is(cluster: Cluster, topic: str, isr: list[int], partition: int = 0) -> bool:
    return sorted(state(cluster, topic, partition)["isr"]) == sorted(isr)


def controller_led_topic(cluster: Cluster, min_isr: int) -> tuple[str, int, list[int]]:
    """A one-partition RF 3 topic led by the controller; (topic, leader, followers)."""
    controller = cluster.controller_id()
    assert controller is not None
    followers = sorted(b for b in cluster.brokers if b != controller)
    topic = f"lead-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    new = NewTopic(
        topic,
        1,
        replica_assignment=[[controller, *followers]],
        config={"min.insync.replicas": str(min_isr)},
    )
    admin.create_topics([new], operation_timeout=30)[topic].result(60)
    eventually(
        lambda: cluster.kazoo.exists(f"/brokers/topics/{topic}/partitions/0/state") is not None,
        30,
        f"{topic}: a partition state",
    )
    assert state(cluster, topic)["leader"] == controller
    return topic, controller, followers


def produce_one(
    bootstrap: str, topic: str, value: bytes, **config: Any
) -> tuple[KafkaError | None, int]:
    """Produce ``value`` to partition 0 and wait for its delivery: (error, offset)."""
    outcome: list[tuple[KafkaError | None, int]] = []
    producer = Producer({"bootstrap.servers": bootstrap, **config})
    producer.produce(
        topic,
        value,
        partition=0,
        on_delivery=lambda err, msg: outcome.append((err, msg.offset())),
    )
    assert producer.flush(60) == 0
    return outcome[0]


def consume_all(bootstrap: str, topic: str, partition: int, until: int) -> list[bytes]:
    """Every record of ``topic``/``partition`` below offset ``until`` (bounded)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:6]}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, partition, 0)])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            got.append(msg.value())
            if msg.offset() + 1 >= until:
                break
    finally:
        consumer.close()
    return got


def stopped(broker: BrokerProcess) -> None:
    os.kill(broker.pid, signal.SIGSTOP)


def resumed(broker: BrokerProcess) -> None:
    os.kill(broker.pid, signal.SIGCONT)


def test_acks_all_is_acknowledged_once_every_follower_has_the_record(lcluster: Cluster) -> None:
    topic, _leader, followers = controller_led_topic(lcluster, min_isr=2)
    for n in range(10):
        value = b"replicated-%d-%s" % (n, uuid.uuid4().hex.encode())
        error, offset = produce_one(lcluster.bootstrap(), topic, value, acks="all")
        assert error is None and offset == n
        # Acknowledged: the HW passed the record, so every ISR follower appended it.
        for follower in followers:
            assert value in log_bytes(lcluster.brokers[follower], topic)


def test_a_stopped_follower_leaves_the_isr_and_rejoins_once_caught_up(lcluster: Cluster) -> None:
    topic, leader, followers = controller_led_topic(lcluster, min_isr=2)
    victim = lcluster.brokers[followers[-1]]
    assert produce_one(lcluster.bootstrap(), topic, b"before", acks="all")[0] is None
    stopped(victim)
    try:
        start = time.monotonic()
        # acks=all waits for the stopped follower until the leader drops it from the ISR.
        error, _ = produce_one(lcluster.bootstrap(), topic, b"during", acks="all")
        assert error is None
        took = time.monotonic() - start
        assert took >= LAG_MS / 1000 * 0.5, took
        expected = [leader, followers[0]]
        assert isr_is(lcluster, topic, expected)  # the state znode (AlterPartition)
        for broker_id in (leader, followers[0]):

            def metadata_shows(broker_id: int = broker_id) -> bool:
                metadata = lcluster.kcat_metadata(lcluster.brokers[broker_id], topic)
                (partition,) = metadata["topics"][0]["partitions"]
                return sorted(i["id"] for i in partition["isrs"]) == sorted(expected)

            eventually(metadata_shows, 30, f"broker {broker_id}'s Metadata shows the ISR")
        for n in range(5):
            assert produce_one(lcluster.bootstrap(), topic, b"more-%d" % n, acks="all")[0] is None
    finally:
        resumed(victim)
    eventually(
        lambda: isr_is(lcluster, topic, [leader, *followers]), 30, "the follower rejoins the ISR"
    )
    leader_log = log_bytes(lcluster.brokers[leader], topic)
    eventually(lambda: log_bytes(victim, topic) == leader_log, 30, "the follower caught up")
    print(f"acks=all during a stopped follower: acknowledged after {took:.2f} s")


def test_min_insync_replicas_refuses_acks_all_with_two_replicas_stopped(
    lcluster: Cluster,
) -> None:
    topic, leader, followers = controller_led_topic(lcluster, min_isr=2)
    acknowledged = [b"acked-%d" % n for n in range(5)]
    for value in acknowledged:
        assert produce_one(lcluster.bootstrap(), topic, value, acks="all")[0] is None
    for follower in followers:
        stopped(lcluster.brokers[follower])
    try:
        eventually(lambda: isr_is(lcluster, topic, [leader]), 30, "the ISR shrinks to the leader")
        error, _ = produce_one(
            lcluster.brokers[leader].bootstrap,
            topic,
            b"refused",
            acks="all",
            retries=0,
            **{"enable.idempotence": False},
        )
        assert error is not None and error.code() == KafkaError.NOT_ENOUGH_REPLICAS, error
        # acks=1 is still taken (min.insync.replicas concerns acks=all only).
        assert produce_one(lcluster.brokers[leader].bootstrap, topic, b"one", acks=1)[0] is None
    finally:
        for follower in followers:
            resumed(lcluster.brokers[follower])
    eventually(
        lambda: isr_is(lcluster, topic, [leader, *followers]), 30, "the followers rejoin the ISR"
    )
    error, offset = produce_one(lcluster.bootstrap(), topic, b"resumed", acks="all")
    assert error is None
    got = consume_all(lcluster.bootstrap(), topic, 0, offset + 1)
    assert got == [*acknowledged, b"one", b"resumed"]


def test_consumers_see_nothing_above_the_high_watermark(lcluster: Cluster) -> None:
    topic, leader, followers = controller_led_topic(lcluster, min_isr=1)
    assert produce_one(lcluster.bootstrap(), topic, b"committed", acks="all") == (None, 0)
    for follower in followers:
        stopped(lcluster.brokers[follower])
    try:
        start = time.monotonic()
        error, offset = produce_one(lcluster.brokers[leader].bootstrap, topic, b"open", acks=1)
        assert error is None and offset == 1
        consumer = Consumer(
            {"bootstrap.servers": lcluster.bootstrap(), "group.id": f"hw-{uuid.uuid4().hex[:6]}"}
        )
        try:
            consumer.assign([TopicPartition(topic, 0, 0)])
            first = consumer.poll(10)
            assert first is not None and first.value() == b"committed"
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
            later = consumer.poll(0.5)
            if time.monotonic() - start < LAG_MS / 1000 * 0.8:
                # The followers still count in the ISR: the HW stays below "open".
                assert (low, high) == (0, 1)
                assert later is None or later.error() is not None
            # Whenever "open" shows, the ISR had dropped the stopped followers first.
            deadline = time.monotonic() + 30
            while later is None or later.error() is not None:
                assert time.monotonic() < deadline, "open never became visible"
                later = consumer.poll(0.5)
            assert later.value() == b"open"
            assert isr_is(lcluster, topic, [leader])
        finally:
            consumer.close()
    finally:
        for follower in followers:
            resumed(lcluster.brokers[follower])
    eventually(
        lambda: isr_is(lcluster, topic, [leader, *followers]), 30, "the followers rejoin the ISR"
    )


def test_leader_sigkill_under_an_idempotent_producer_loses_no_acknowledged_record(
    lcluster: Cluster,
) -> None:
    controller = lcluster.controller_id()
    assert controller is not None
    victim_id = next(b for b in sorted(lcluster.brokers) if b != controller)
    others = sorted(b for b in lcluster.brokers if b != victim_id)
    topic = f"failover-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": lcluster.bootstrap()})
    new = NewTopic(
        topic,
        2,
        replica_assignment=[[victim_id, *others], [others[0], victim_id, others[1]]],
        config={"min.insync.replicas": "2"},
    )
    admin.create_topics([new], operation_timeout=30)[topic].result(60)
    eventually(
        lambda: all(
            lcluster.kazoo.exists(f"/brokers/topics/{topic}/partitions/{p}/state") is not None
            for p in range(2)
        ),
        30,
        f"{topic}: partition states",
    )
    assert state(lcluster, topic, 0)["leader"] == victim_id
    acked: dict[int, list[bytes]] = {0: [], 1: []}
    failures: list[str] = []
    stop = threading.Event()

    def delivered(err: Any, msg: Any) -> None:
        if err is None:
            acked[msg.partition()].append(msg.value())
        else:
            failures.append(str(err))

    def run() -> None:
        producer = Producer(
            {
                "bootstrap.servers": lcluster.bootstrap(),
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
            }
        )
        n = 0
        while not stop.is_set():
            for p in (0, 1):
                producer.produce(topic, b"%d-%08d" % (p, n), partition=p, on_delivery=delivered)
            n += 1
            producer.poll(0.01)
        assert producer.flush(120) == 0

    thread = threading.Thread(target=run)
    thread.start()
    victim = lcluster.brokers[victim_id]
    try:
        eventually(lambda: len(acked[0]) >= 200, 30, "records acknowledged before the kill")
        victim.kill()
        eventually(
            lambda: state(lcluster, topic, 0)["leader"] in others, 40, "a new leader from the ISR"
        )
        count = len(acked[0])
        eventually(lambda: len(acked[0]) >= count + 200, 60, "records acknowledged after")
        victim.start()
        eventually(
            lambda: isr_is(lcluster, topic, [victim_id, *others]), 60, "the old leader rejoins"
        )
    finally:
        stop.set()
        thread.join(150)
        if victim.proc is None:
            victim.start()
    assert not thread.is_alive()
    assert failures == []
    for p in (0, 1):
        values = acked[p]
        got = consume_all(lcluster.bootstrap(), topic, p, until=len(values))
        # Exactly once, in order: the idempotent producer's retries were deduplicated.
        assert got == values, (p, len(got), len(values))
