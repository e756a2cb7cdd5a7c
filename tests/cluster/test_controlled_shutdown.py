"""Controlled shutdown (Kafka 3.9's ZooKeeper mode): a SIGTERMed broker asks the controller to
move its leaderships before it stops, so clients fail over at once.

Its own cluster (three ``franz broker`` processes, ids 1-3, on a chroot of their own) with a
6 s ZooKeeper session timeout, so a leadership move by the session-expiry path would be
visibly later. The tests run in file order: the rolling-shutdown test stops every broker, so
it comes last. Replication is the next issue: a new leader starts from an empty log, so the
consumer checks that records produced after each move arrive, not every record.
"""

from __future__ import annotations

import re
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

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from franz.errors import ErrorCode  # noqa: E402
from franz.protocol.messages import build, request_type, response_type  # noqa: E402
from tests.support.broker import BrokerProcess  # noqa: E402
from tests.support.cluster import Cluster, eventually, new_chroot, start_cluster  # noqa: E402
from tests.support.wire import WireClient, api_versions  # noqa: E402
from tests.support.zookeeper import ZooKeeperServer  # noqa: E402

SESSION_MS = 6000
TOPIC = "rolling"
PARTITIONS = 6
#: Small, so the last broker (whose partitions nobody can take over) stops quickly.
RETRIES = 2
BACKOFF_MS = 300
CONTROLLED_SHUTDOWN = 7


@pytest.fixture(scope="module")
def cs_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("controlled-shutdown"))
    props = {
        "zookeeper.session.timeout.ms": str(SESSION_MS),
        "controlled.shutdown.max.retries": str(RETRIES),
        "controlled.shutdown.retry.backoff.ms": str(BACKOFF_MS),
    }
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap()})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)], operation_timeout=30)[TOPIC].result(
            60
        )
        eventually(lambda: len(leaders(c)) == PARTITIONS, 30, "every partition has a leader")
        yield c


def leaders(cluster: Cluster, topic: str = TOPIC) -> dict[int, int]:
    """partition -> leader, as ZooKeeper's state znodes say (what the controller wrote)."""
    found: dict[int, int] = {}
    for p in range(PARTITIONS):
        path = f"/brokers/topics/{topic}/partitions/{p}/state"
        if cluster.kazoo.exists(path) is not None:
            found[p] = int(cluster.json(path)["leader"])
    return found


def kcat_leaders(cluster: Cluster, broker: BrokerProcess) -> dict[int, int]:
    (entry,) = cluster.kcat_metadata(broker, TOPIC)["topics"]
    return {p["partition"]: p["leader"] for p in entry["partitions"]}


def controlled_shutdown(
    client: WireClient, broker_id: int, broker_epoch: int, version: int = 3
) -> tuple[int, list[tuple[str, int]]]:
    """A raw ControlledShutdown (v1 has no broker epoch); its error code and remaining
    partitions."""
    request = build(
        request_type(CONTROLLED_SHUTDOWN, version),
        {"broker_id": broker_id, "broker_epoch": broker_epoch},
    )
    correlation_id = client.send(request)
    response = client.recv(response_type(CONTROLLED_SHUTDOWN, version), correlation_id, 30)
    remaining = [(p.topic_name, p.partition_index) for p in response.remaining_partitions]
    return int(response.error_code), remaining


def test_controlled_shutdown_is_served_and_a_stale_broker_epoch_is_refused(
    cs_cluster: Cluster,
) -> None:
    controller = cs_cluster.controller_id()
    assert controller is not None
    other = next(b for b in cs_cluster.brokers if b != controller)
    epoch = cs_cluster.kazoo.exists(f"/brokers/ids/{other}").czxid
    before = leaders(cs_cluster)
    with WireClient.connect(cs_cluster.brokers[controller].bootstrap) as client:
        # Served in cluster mode as by a Kafka 3.9 ZooKeeper-mode broker.
        assert api_versions(client)[CONTROLLED_SHUTDOWN] == (0, 3)
        # An older registration of the broker: refused, nothing moves (KIP-380).
        assert controlled_shutdown(client, other, epoch - 1) == (
            ErrorCode.STALE_BROKER_EPOCH,
            [],
        )
        # A broker that is not registered.
        assert controlled_shutdown(client, 99, -1) == (ErrorCode.BROKER_NOT_AVAILABLE, [])
        assert controlled_shutdown(client, 99, -1, version=1) == (
            ErrorCode.BROKER_NOT_AVAILABLE,
            [],
        )
    # Only the controller acts on it.
    with WireClient.connect(cs_cluster.brokers[other].bootstrap) as client:
        assert controlled_shutdown(client, other, epoch) == (ErrorCode.NOT_CONTROLLER, [])
    # Nothing was acted on: the partitions ``other`` leads did not move.
    assert other in set(before.values())
    assert leaders(cs_cluster) == before


class Traffic:
    """A confluent-kafka producer (acks=all) and consumer (every partition assigned) running
    through the leadership moves; each value names the phase it was produced in."""

    def __init__(self, bootstrap: str) -> None:
        self.phase = "start"
        self.delivery_errors: list[str] = []
        self.consumer_errors: list[str] = []
        self.delivered = 0
        self.consumed: dict[int, set[str]] = {p: set() for p in range(PARTITIONS)}
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"cs-{uuid.uuid4().hex[:8]}",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        self._consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        self._threads = [
            threading.Thread(target=self._produce, daemon=True),
            threading.Thread(target=self._consume, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _on_delivery(self, err: Any, message: Any) -> None:
        with self._lock:
            if err is not None:
                self.delivery_errors.append(f"{message.partition()}: {err}")
            else:
                self.delivered += 1

    def _produce(self) -> None:
        n = 0
        while not self._stop.is_set():
            for p in range(PARTITIONS):
                value = f"{self.phase}:{n}".encode()
                self._producer.produce(TOPIC, value, partition=p, on_delivery=self._on_delivery)
            n += 1
            self._producer.poll(0.02)
        self._producer.flush(60)

    def _consume(self) -> None:
        while not self._stop.is_set():
            message = self._consumer.poll(0.2)
            if message is None:
                continue
            if message.error() is not None:
                with self._lock:
                    self.consumer_errors.append(str(message.error()))
                continue
            with self._lock:
                self.consumed[message.partition()].add(message.value().decode().split(":")[0])

    def saw_phase_everywhere(self, phase: str) -> bool:
        with self._lock:
            return all(phase in phases for phases in self.consumed.values())

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(90)
        self._consumer.close()


def sigterm_and_watch(
    cluster: Cluster, victim: int, observer: BrokerProcess
) -> tuple[float, float, int]:
    """SIGTERM ``victim``; the seconds until ZooKeeper's state znodes and then the
    ``observer``'s Metadata (kcat) show no partition led by it, and its exit code."""
    process = cluster.brokers[victim]
    assert process.proc is not None
    started = time.monotonic()
    process.proc.send_signal(signal.SIGTERM)
    in_zk = eventually(lambda: victim not in leaders(cluster).values(), 30, "leaders moved in ZK")
    eventually(
        lambda: victim not in kcat_leaders(cluster, observer).values(),
        30,
        "the observer's Metadata shows the new leaders",
    )
    visible_after = time.monotonic() - started
    process.proc.wait(30)  # (no second SIGTERM: it would hit the exiting interpreter)
    return in_zk, visible_after, process.stop()


def moved_before_deregistration(cluster: Cluster, victim: int, led: set[int]) -> None:
    """Each partition ``victim`` led was last written (its new leader) before the victim's
    ``/brokers/ids`` znode went: its state's mzxid precedes the last child change of
    ``/brokers/ids`` (the victim's deregistration; no other broker came or went since)."""
    assert cluster.kazoo.exists(f"/brokers/ids/{victim}") is None
    deregistered = cluster.kazoo.exists("/brokers/ids").pzxid
    for p in led:
        state = cluster.kazoo.exists(f"/brokers/topics/{TOPIC}/partitions/{p}/state")
        assert state.mzxid < deregistered, f"partition {p} moved only after broker {victim} left"
        value = cluster.json(f"/brokers/topics/{TOPIC}/partitions/{p}/state")
        assert value["leader"] != victim and victim not in value["isr"]
        assert value["leader"] in value["isr"]


def test_sigterm_moves_leaders_away_first_then_the_controller_then_the_last_broker(
    cs_cluster: Cluster,
) -> None:
    cluster = cs_cluster
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    controller = cluster.controller_id()
    assert controller is not None
    before = leaders(cluster)
    assert set(before.values()) == set(cluster.brokers), f"leaders on every broker: {before}"
    victim = next(b for b in sorted(cluster.brokers) if b != controller)
    third = next(b for b in sorted(cluster.brokers) if b not in (victim, controller))
    traffic = Traffic(cluster.bootstrap())
    try:
        eventually(lambda: traffic.saw_phase_everywhere("start"), 30, "records consumed")

        # 1. A broker that leads partitions and is not the controller.
        led = {p for p, b in before.items() if b == victim}
        traffic.phase = "after-1"
        in_zk, visible, code = sigterm_and_watch(cluster, victim, cluster.brokers[third])
        print(
            f"broker {victim} (not the controller): leaders moved in ZooKeeper {in_zk:.2f} s, "
            f"in Metadata {visible:.2f} s after SIGTERM (session timeout {SESSION_MS} ms)"
        )
        assert code == 0
        output = cluster.brokers[victim].output()
        assert "Starting controlled shutdown" in output
        assert "Controlled shutdown request returned successfully" in output
        moved_before_deregistration(cluster, victim, led)
        assert in_zk < SESSION_MS / 1000
        eventually(lambda: traffic.saw_phase_everywhere("after-1"), 30, "consumed after move 1")

        # 2. The controller itself: it sends ControlledShutdown to its own listener.
        led = {p for p, b in leaders(cluster).items() if b == controller}
        assert led, "the controller leads partitions"
        traffic.phase = "after-2"
        in_zk, visible, code = sigterm_and_watch(cluster, controller, cluster.brokers[third])
        print(
            f"broker {controller} (the controller): leaders moved in ZooKeeper {in_zk:.2f} s, "
            f"in Metadata {visible:.2f} s after SIGTERM (session timeout {SESSION_MS} ms)"
        )
        assert code == 0
        output = cluster.brokers[controller].output()
        assert "Controlled shutdown request returned successfully" in output
        moved_before_deregistration(cluster, controller, led)
        assert in_zk < SESSION_MS / 1000
        assert set(leaders(cluster).values()) == {third}
        eventually(lambda: cluster.controller_id() == third, 30, f"broker {third} controller")
        eventually(lambda: traffic.saw_phase_everywhere("after-2"), 30, "consumed after move 2")
    finally:
        traffic.stop()
    assert traffic.delivery_errors == []
    assert traffic.consumer_errors == []
    assert traffic.delivered > 0

    eventually(
        lambda: cluster.kcat_metadata(cluster.brokers[third])["controllerid"] == third,
        30,
        f"broker {third} knows it is the controller",
    )
    # 3. The last broker: no other in-sync replica can lead its partitions, so the controller
    # (itself) reports them remaining; it retries, then shuts down anyway. A partition with a
    # single replica (on the only broker left) is never "remaining" (Kafka's
    # partitionLeadersOnBroker).
    admin = AdminClient({"bootstrap.servers": cluster.brokers[third].bootstrap})
    admin.create_topics([NewTopic("single", 1, 1)], operation_timeout=30)["single"].result(60)
    process = cluster.brokers[third]
    assert process.proc is not None
    started = time.monotonic()
    process.proc.send_signal(signal.SIGTERM)
    process.proc.wait(60)
    took = time.monotonic() - started
    assert process.stop() == 0
    output = process.output()
    reported = re.findall(r"with (\d+) partitions remaining to move: (.*)", output)
    assert len(reported) == RETRIES, output[-3000:]
    for count, names in reported:
        remaining = set(names.split(", "))
        assert int(count) == len(remaining)
        # (and __consumer_offsets' partitions if the consumer's group created the topic)
        assert {f"{TOPIC}-{p}" for p in range(PARTITIONS)} <= remaining
        assert "single-0" not in remaining
    assert "Retrying controlled shutdown (1 retries remaining)" in output
    assert "Proceeding to do an unclean shutdown" in output
    assert took < 30
