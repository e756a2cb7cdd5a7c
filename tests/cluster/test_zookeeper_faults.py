"""ZooKeeper lost while a 3-broker cluster runs (issue 16, "Bad input and faults").

Each test runs its own ZooKeeper (never the session's shared one: these tests stop it) and
three ``franz broker`` processes. While ZooKeeper is paused (SIGSTOP) for less and for more
than ``zookeeper.session.timeout.ms``, or while a 3-member ensemble loses its leader,
confluent-kafka keeps producing (acks=1) to and consuming from partitions led by every
broker, without a delivery error; afterwards every broker is registered again, exactly one
controller exists, every broker's metadata agrees, and topics can be created and deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)
from kio.schema.describe_configs.v4.request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from kio.static.primitive import i8

from franz.metadata.zookeeper import (
    ZooKeeperClient,
    ZooKeeperConfig,
    ZooKeeperConnectionError,
)
from tests.support.cluster import (
    BROKER_IDS,
    SESSION_MS,
    Cluster,
    eventually,
    start_cluster,
)
from tests.support.wire import WireClient
from tests.support.zookeeper import (
    ZooKeeperEnsemble,
    ZooKeeperServer,
    start_standalone,
    zookeeper_available,
)

pytestmark = pytest.mark.skipif(
    not zookeeper_available(), reason="ZooKeeper is not installed (scripts/setup.sh)"
)

TOPIC = "steady"
#: What a broker logs when kazoo reports its session expired.
EXPIRED = "ZooKeeper session state EXPIRED"
SUSPENDED = "ZooKeeper session state SUSPENDED"
PARTITIONS = 3
#: librdkafka's connection errors go to logging (shown on failure), not to stderr.
CLIENT_LOG = logging.getLogger("tests.zookeeper_faults.librdkafka")


class Traffic:
    """A thread that produces (acks=1) one record per partition every ``interval_s`` and
    consumes every partition from offset 0, until ``stop``; keeps what went wrong."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, interval_s: float = 0.1):
        self.topic = topic
        self.partitions = partitions
        self.interval_s = interval_s
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": 1,
                "linger.ms": 5,
                "message.timeout.ms": 60000,
            },
            logger=CLIENT_LOG,
        )
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"traffic-{topic}",
                "enable.auto.commit": False,
                # A leader move to a replica with an empty log (no replication yet) resets
                # the consumer to the start; strict ``stop`` then finds the difference.
                "auto.offset.reset": "earliest",
            },
            logger=CLIENT_LOG,
        )
        self.consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        self.errors: list[str] = []
        self.delivered: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        self.consumed: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        self.sent = 0
        #: Set once ``stop`` ran (a test's ``finally`` stops traffic a failure left running).
        self.stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="traffic", daemon=True)

    def _on_delivery(self, err: Any, message: Any) -> None:
        if err is not None:
            self.errors.append(f"delivery {message.partition()}: {err}")
        else:
            self.delivered[message.partition()].append(message.value())

    def _consume(self, timeout_s: float) -> None:
        message = self.consumer.poll(timeout_s)
        if message is None:
            return
        error = message.error()
        if error is not None:
            if error.code() != KafkaError._PARTITION_EOF:
                self.errors.append(f"consume: {error}")
            return
        partition, value = message.partition(), message.value()
        assert partition is not None and value is not None
        self.consumed[partition].append(value)

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self.stopped.is_set():
            if time.monotonic() < next_at:
                # Never a negative timeout: confluent-kafka would wait forever.
                self._consume(max(0.0, min(self.interval_s, next_at - time.monotonic())))
                continue
            next_at += self.interval_s
            for p in range(self.partitions):
                value = f"{p}-{self.sent}".encode()
                self.producer.produce(self.topic, value, partition=p, on_delivery=self._on_delivery)
            self.sent += 1
            self.producer.poll(0)

    def start(self) -> Traffic:
        self._thread.start()
        return self

    def wait_for_deliveries(self, count: int, timeout_s: float) -> None:
        """Wait until every partition has ``count`` more records delivered (and consumed)."""
        goal = {p: len(v) + count for p, v in self.delivered.items()}
        eventually(
            lambda: all(len(self.consumed[p]) >= goal[p] for p in goal) or bool(self.errors),
            timeout_s,
            f"{count} more records delivered and consumed on every partition",
        )
        assert self.errors == []

    def mark(self) -> dict[int, int]:
        """How many records each partition has delivered so far."""
        return {p: len(v) for p, v in self.delivered.items()}

    def stop(self, since: dict[int, int] | None = None) -> None:
        """Stop producing, flush, consume to the end. Nothing failed, and every delivered
        record was consumed in order; with ``since`` (a ``mark``) only the records delivered
        after it are checked (their partition's leadership moved: without replication, the
        new leader lacks what the old one held)."""
        self.stopped.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), "the traffic thread did not stop within 30 s"
        start = since or {p: 0 for p in self.delivered}

        def caught_up(p: int) -> bool:
            tail = self.delivered[p][start[p] :]
            return self.consumed[p][-len(tail) :] == tail if tail else True

        try:
            assert self.producer.flush(60) == 0
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not all(caught_up(p) for p in self.delivered):
                self._consume(0.2)
        finally:
            closer = threading.Thread(target=self.consumer.close, daemon=True)
            closer.start()
            closer.join(30)
        assert not closer.is_alive(), "the consumer did not close within 30 s"
        assert self.errors == []
        for p in range(self.partitions):
            assert len(self.delivered[p]) == self.sent, f"partition {p}: not all delivered"
            if since is None:
                assert self.consumed[p] == self.delivered[p], f"partition {p}: consumed differ"
            else:
                assert caught_up(p), f"partition {p}: records since the mark not consumed"


def create_topic(cluster: Cluster, name: str, partitions: int, replicas: int) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(name, partitions, replicas)], operation_timeout=30)[name].result(
        60
    )


def leaders(cluster: Cluster, broker_id: int, topic: str) -> dict[int, int]:
    metadata = cluster.kcat_metadata(cluster.brokers[broker_id], topic)
    (entry,) = metadata["topics"]
    return {p["partition"]: p["leader"] for p in entry["partitions"]}


def create_led_everywhere(cluster: Cluster) -> dict[int, int]:
    """An RF 3 topic whose partitions are led by the 3 brokers; its leaders."""
    create_topic(cluster, TOPIC, PARTITIONS, 3)
    eventually(
        lambda: sorted(leaders(cluster, 1, TOPIC).values()) == sorted(BROKER_IDS),
        30,
        "a partition led by every broker",
    )
    return leaders(cluster, 1, TOPIC)


def assert_cluster_healthy(cluster: Cluster, tag: str) -> dict[int, int]:
    """Every broker registered, one controller, metadata agreeing on brokers, controller and
    leaders (all live), a topic created and deleted; the leaders of ``TOPIC``."""
    eventually(
        lambda: sorted(cluster.kazoo.get_children("/brokers/ids")) == [str(b) for b in BROKER_IDS],
        30,
        "every broker registered again",
    )
    eventually(lambda: cluster.controller_id() in BROKER_IDS, 30, "a controller")

    agreed: dict[int, int] = {}

    def converged() -> bool:
        controller = cluster.controller_id()
        seen = []
        for broker_id in BROKER_IDS:
            metadata = cluster.kcat_metadata(cluster.brokers[broker_id], TOPIC)
            if sorted(b["id"] for b in metadata["brokers"]) != list(BROKER_IDS):
                return False
            if metadata["controllerid"] != controller:
                return False
            (entry,) = metadata["topics"]
            seen.append({p["partition"]: p["leader"] for p in entry["partitions"]})
        if any(s != seen[0] for s in seen) or not set(seen[0].values()) <= set(BROKER_IDS):
            return False
        agreed.update(seen[0])
        return len(agreed) == PARTITIONS

    eventually(converged, 30, "every broker's metadata names the same brokers, controller, leaders")
    outputs = [cluster.brokers[b].output() for b in BROKER_IDS]
    # Exactly one broker acts as the controller (its seat and ZooKeeper agree).
    acting = [
        b
        for b, out in zip(BROKER_IDS, outputs, strict=True)
        if out.rfind("is the controller, epoch") > out.rfind("resigns as controller")
    ]
    assert acting == [cluster.controller_id()]
    name = f"after-{tag}"
    create_topic(cluster, name, 3, 3)
    eventually(
        lambda: all(
            len(leaders(cluster, b, name)) == 3 and -1 not in leaders(cluster, b, name).values()
            for b in BROKER_IDS
        ),
        30,
        f"{name} led on every broker's metadata",
    )
    # The config change notification watches work again on every broker.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()}, logger=CLIENT_LOG)
    resource = ConfigResource(
        ResourceType.TOPIC,
        name,
        incremental_configs=[
            ConfigEntry("retention.ms", "654321", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([resource])[resource].result(30)
    for broker_id in BROKER_IDS:
        eventually(
            lambda b=broker_id: described(cluster, b, name, "retention.ms") == "654321",
            20,
            f"broker {broker_id} describes {name}'s new retention.ms",
        )
    admin.delete_topics([name], operation_timeout=30)[name].result(60)
    eventually(lambda: cluster.kazoo.exists(f"/brokers/topics/{name}") is None, 30, "deleted")
    return agreed


def described(cluster: Cluster, broker_id: int, topic: str, key: str) -> str | None:
    """``key`` of ``topic`` as broker ``broker_id`` describes it (DescribeConfigs)."""
    client = WireClient.connect(cluster.brokers[broker_id].bootstrap)
    try:
        response = client.request(
            DescribeConfigsRequest(
                resources=(
                    DescribeConfigsResource(
                        resource_type=i8(2), resource_name=topic, configuration_keys=(key,)
                    ),
                ),
                include_synonyms=False,
                include_documentation=False,
            )
        )
    finally:
        client.close()
    (result,) = response.results
    return {c.name: c.value for c in result.configs}.get(key)


def assert_create_topics_times_out(cluster: Cluster) -> None:
    """CreateTopics needs ZooKeeper: without it the broker answers REQUEST_TIMED_OUT within
    ``zookeeper.connection.timeout.ms`` (the session timeout here) plus the session timeout
    for a request already in flight, instead of leaving the request hanging."""
    admin = AdminClient({"bootstrap.servers": cluster.brokers[1].bootstrap}, logger=CLIENT_LOG)
    started = time.monotonic()
    future = admin.create_topics(
        [NewTopic("during-outage", 1, 1)], operation_timeout=30, request_timeout=30
    )["during-outage"]
    with pytest.raises(KafkaException) as raised:
        future.result(30)
    took = time.monotonic() - started
    assert raised.value.args[0].code() == KafkaError.REQUEST_TIMED_OUT, raised.value
    assert took < 2 * SESSION_MS / 1000 + 3, took


# ------------------------------------------------------------------ a standalone server


@pytest.fixture
def own_zookeeper(tmp_path: Path) -> Iterator[ZooKeeperServer]:
    counter = iter(range(10))
    server = start_standalone(lambda: tmp_path / f"zk-{next(counter)}", 30)
    try:
        yield server
    finally:
        if server.proc is not None and server.is_running():
            os.kill(server.proc.pid, signal.SIGCONT)
        server.stop()


@contextlib.contextmanager
def paused(server: ZooKeeperServer, pause_ms: int) -> Iterator[None]:
    """ZooKeeper stopped (SIGSTOP) for ``pause_ms`` (at least the body's time)."""
    assert server.proc is not None
    os.kill(server.proc.pid, signal.SIGSTOP)
    started = time.monotonic()
    try:
        yield
        time.sleep(max(0.0, pause_ms / 1000 - (time.monotonic() - started)))
    finally:
        os.kill(server.proc.pid, signal.SIGCONT)


def test_zookeeper_paused_brokers_keep_serving_and_recover(
    own_zookeeper: ZooKeeperServer, tmp_path: Path
) -> None:
    """Paused for half the session timeout, then for twice it, under traffic."""
    zk_connect = f"{own_zookeeper.connect_string}/franz"
    with start_cluster(zk_connect, tmp_path / "brokers") as cluster:
        topic_leaders = create_led_everywhere(cluster)
        traffic = Traffic(cluster.bootstrap(), TOPIC, PARTITIONS).start()
        try:
            traffic.wait_for_deliveries(5, 30)
            # Shorter than the session timeout. Brokers keep serving what they lead; a
            # CreateTopics sent meanwhile waits for ZooKeeper (within
            # zookeeper.connection.timeout.ms) and works once it is back.
            with paused(own_zookeeper, SESSION_MS // 2):
                traffic.wait_for_deliveries(5, SESSION_MS / 2000)
                admin = AdminClient({"bootstrap.servers": cluster.bootstrap()}, logger=CLIENT_LOG)
                pending = admin.create_topics(
                    [NewTopic("during-pause", 3, 3)], operation_timeout=30, request_timeout=60
                )["during-pause"]
            traffic.wait_for_deliveries(5, 30)
            pending.result(60)
            assert len(cluster.json("/brokers/topics/during-pause")["partitions"]) == 3
            after = assert_cluster_healthy(cluster, "short")
            if not [b for b in BROKER_IDS if EXPIRED in cluster.brokers[b].output()]:
                # The sessions survived (on a machine not starved they do): nothing moved.
                assert after == topic_leaders
            # Longer than the session timeout: brokers keep serving; CreateTopics times out.
            logged = {b: len(cluster.brokers[b].output()) for b in BROKER_IDS}
            with paused(own_zookeeper, SESSION_MS * 2):
                traffic.wait_for_deliveries(5, SESSION_MS / 1000)
                assert_create_topics_times_out(cluster)
            traffic.wait_for_deliveries(5, 30)
            after = assert_cluster_healthy(cluster, "long")
            since = {b: cluster.brokers[b].output()[logged[b] :] for b in BROKER_IDS}
            # Every broker lost its connection; ZooKeeper expires the sessions on SIGCONT
            # unless a reconnection wins the race with its session tracker (seen: never).
            assert all(SUSPENDED in since[b] for b in BROKER_IDS)
            print(f"sessions expired: brokers {[b for b in BROKER_IDS if EXPIRED in since[b]]}")
            # Sessions expired: the first broker to register again becomes the controller
            # and, as Kafka's does, sees the others dead for a moment and takes over their
            # leaderships (which, without replication yet, starts from an empty log).
            mark = traffic.mark()
            traffic.wait_for_deliveries(5, 30)
            traffic.stop(since=None if after == topic_leaders else mark)
        finally:
            if not traffic.stopped.is_set():
                traffic.stop()


# ------------------------------------------------------------------ a 3-member ensemble


def test_ensemble_losing_its_leader_keeps_the_cluster_working(tmp_path: Path) -> None:
    ensemble = ZooKeeperEnsemble(tmp_path / "zookeeper").start()
    try:
        ensemble.wait_ready(60)
        with start_cluster(f"{ensemble.connect_string}/franz", tmp_path / "brokers") as cluster:
            topic_leaders = create_led_everywhere(cluster)
            epoch = int(cluster.kazoo.get("/controller_epoch")[0])
            traffic = Traffic(cluster.bootstrap(), TOPIC, PARTITIONS).start()
            try:
                traffic.wait_for_deliveries(5, 30)
                eventually(lambda: ensemble.leader() is not None, 30, "a ZK leader")
                old = ensemble.leader()
                assert old is not None
                old.stop(kill=True)
                eventually(
                    lambda: ensemble.leader() not in (None, old),
                    30,
                    "the survivors elect a new ZooKeeper leader",
                )
                traffic.wait_for_deliveries(5, 30)
                assert assert_cluster_healthy(cluster, "leader-lost") == topic_leaders
                # The brokers' sessions moved to the survivors: none expired.
                assert not [b for b in BROKER_IDS if EXPIRED in cluster.brokers[b].output()]
                # The controller stayed, or was re-elected once.
                assert int(cluster.kazoo.get("/controller_epoch")[0]) in (epoch, epoch + 1)
                old.start()
                old.wait_ready(60)
                traffic.wait_for_deliveries(5, 30)
                traffic.stop()
            finally:
                if not traffic.stopped.is_set():
                    traffic.stop()
    finally:
        ensemble.stop()


# ------------------------------------------------------------------ the client alone


def stop_whole(pid: int) -> None:
    """SIGSTOP ``pid`` and wait (bounded) until every thread of it is stopped: the signal
    stops a multi-threaded JVM's threads one by one, and a request sent meanwhile was once
    answered by a ZooKeeper that was "paused" (a loaded CI run)."""
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        states = []
        for stat in Path(f"/proc/{pid}/task").glob("*/stat"):
            with contextlib.suppress(OSError):
                states.append(stat.read_text().rsplit(")", 1)[1].split()[0])
        if states and all(state in ("T", "t") for state in states):
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} did not stop within 5 s")


def test_zookeeper_requests_wait_for_the_connection_within_a_bound(
    own_zookeeper: ZooKeeperServer,
) -> None:
    """A request made while ZooKeeper is paused waits for it and succeeds when it comes
    back within ``zookeeper.connection.timeout.ms``; past that it fails with
    ``ZooKeeperConnectionError``; the event loop keeps running meanwhile."""
    assert own_zookeeper.proc is not None
    pid = own_zookeeper.proc.pid
    config = ZooKeeperConfig(
        f"{own_zookeeper.connect_string}/client",
        session_timeout_ms=4000,
        connection_timeout_ms=3000,
    )

    async def run() -> None:
        loop = asyncio.get_running_loop()
        client = ZooKeeperClient(config)
        await client.start()
        stalls: list[float] = []

        async def tick() -> None:
            while True:
                before = loop.time()
                await asyncio.sleep(0.05)
                stalls.append(loop.time() - before - 0.05)

        ticker = loop.create_task(tick())
        try:
            await client.create("/x", b"1")
            stop_whole(pid)
            try:
                pending = loop.create_task(client.get("/x"))
                await asyncio.sleep(1.5)
                assert not pending.done()
            finally:
                os.kill(pid, signal.SIGCONT)
            assert (await pending)[0] == b"1"
            stop_whole(pid)
            try:
                started = loop.time()
                with pytest.raises(ZooKeeperConnectionError):
                    await client.get("/x")
                took = loop.time() - started
            finally:
                os.kill(pid, signal.SIGCONT)
            # At most the session timeout for the answer, then the connection timeout.
            assert 2.5 < took < 4 + 3 + 3, took
            assert max(stalls) < 1.0, max(stalls)
        finally:
            ticker.cancel()
            await client.close()

    asyncio.run(asyncio.wait_for(run(), 60))
