"""Franz clusters for tests: ZooKeeper (a chroot of the session's server) and ``franz broker``
processes, with kazoo to read the znodes and kcat to read the metadata.

``start_cluster`` starts the brokers and waits until broker ``ids[0]`` sees them all; the
``cluster`` fixture of ``tests/cluster/conftest.py`` is one such cluster per test module.

The replication tests' shared reads: ``partition_state`` (the controller's ``state`` znode),
``isrs_whole`` (every partition led, its ISR all its replicas), ``log_bytes`` (a replica's
``.log`` segments as stored), and ``restart_after_session_expiry`` (a SIGKILLed broker
starts again once ZooKeeper dropped its registration, as a Kafka broker must).
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from tests.support.broker import BrokerProcess
from tests.support.clients import run_kcat

SESSION_MS = 4000
BROKER_IDS = (1, 2, 3)


class Cluster:
    def __init__(self, zk_connect: str, brokers: dict[int, BrokerProcess]) -> None:
        self.zk_connect = zk_connect
        self.brokers = brokers
        hosts, _, chroot = zk_connect.partition("/")
        self.kazoo = KazooClient(hosts=f"{hosts}/{chroot}")
        self.kazoo.start(timeout=15)

    def live(self) -> list[BrokerProcess]:
        return [b for b in self.brokers.values() if b.proc is not None]

    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.live())

    def json(self, path: str) -> dict[str, Any]:
        data, _ = self.kazoo.get(path)
        value: dict[str, Any] = json.loads(data)
        return value

    def controller_id(self) -> int | None:
        """The active controller's id; None while there is none (the znode may vanish
        between a check and a read when the controller's session expires)."""
        try:
            return int(self.json("/controller")["brokerid"])
        except NoNodeError:
            return None

    def kcat_metadata(self, broker: BrokerProcess, topic: str | None = None) -> dict[str, Any]:
        args = ["-J", "-L", "-b", broker.bootstrap, "-m", "10"]
        if topic is not None:
            args += ["-t", topic]
        done = run_kcat(args, timeout=30)
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        value: dict[str, Any] = json.loads(done.stdout)
        return value


def partition_state(cluster: Cluster, topic: str, partition: int = 0) -> dict[str, Any] | None:
    """``/brokers/topics/<topic>/partitions/<p>/state`` (leader, leader_epoch, isr, ...);
    None before the controller wrote it."""
    try:
        return cluster.json(f"/brokers/topics/{topic}/partitions/{partition}/state")
    except NoNodeError:
        return None


def isrs_whole(
    cluster: Cluster, topic: str, partitions: int = 1, replicas: Sequence[int] = BROKER_IDS
) -> bool:
    """Every partition of ``topic`` has a leader and all of ``replicas`` in its ISR."""
    for p in range(partitions):
        state = partition_state(cluster, topic, p)
        if state is None or state["leader"] < 0 or sorted(state["isr"]) != sorted(replicas):
            return False
    return True


def log_bytes(broker: BrokerProcess, topic: str, partition: int = 0) -> bytes:
    """A replica's ``.log`` segments, concatenated in offset order, from whichever of the
    broker's ``log.dirs`` holds the partition (b"" where none does)."""
    for log_dir in broker.overrides["log.dirs"].split(","):
        directory = Path(log_dir) / f"{topic}-{partition}"
        if directory.is_dir():
            return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))
    return b""


def restart_after_session_expiry(cluster: Cluster, broker_id: int, timeout_s: float = 60) -> None:
    """Start a SIGKILLed broker again once ZooKeeper expired its old session: as Kafka's, a
    broker whose predecessor's ``/brokers/ids/<id>`` still exists refuses to start."""
    eventually(
        lambda: cluster.kazoo.exists(f"/brokers/ids/{broker_id}") is None,
        timeout_s,
        f"broker {broker_id}'s old registration expires",
    )
    cluster.brokers[broker_id].start()


class AckedProducer:
    """An idempotent acks=all confluent-kafka producer on its own thread, for fault tests:
    numbered records to ``partitions`` in turn (record ``n`` to ``partitions[n % len]``, its
    value ``n``, then a space and ``pad`` when given), until ``stop``. ``acked`` holds, per
    partition, (monotonic time, n) of every acknowledged record in acknowledgement order;
    ``errors`` every failed delivery; ``stop`` returns what it could not deliver."""

    def __init__(self, bootstrap: str, topic: str, partitions: Sequence[int], pad: bytes = b""):
        self.topic = topic
        self.partitions = list(partitions)
        self.pad = b" " + pad if pad else b""
        self.acked: dict[int, list[tuple[float, int]]] = {p: [] for p in self.partitions}
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._unreported = -1
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on_delivery(self, err: Any, message: Any) -> None:
        with self._lock:
            if err is not None:
                self.errors.append(f"{message.partition()}: {err}")
            else:
                n = int(message.value().split(b" ", 1)[0])
                self.acked[message.partition()].append((time.monotonic(), n))

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            for _ in self.partitions:
                try:
                    self._producer.produce(
                        self.topic,
                        b"%d%s" % (n, self.pad),
                        partition=self.partitions[n % len(self.partitions)],
                        on_delivery=self._on_delivery,
                    )
                    n += 1
                except BufferError:
                    break
            self._producer.poll(0.005)
        self._unreported = self._producer.flush(120)

    def count(self, partition: int | None = None) -> int:
        """Records acknowledged (on ``partition``, or on all)."""
        with self._lock:
            if partition is not None:
                return len(self.acked[partition])
            return sum(len(v) for v in self.acked.values())

    def values(self, partition: int) -> list[int]:
        """The acknowledged record numbers of ``partition``, in acknowledgement order."""
        with self._lock:
            return [n for _, n in self.acked[partition]]

    def stop(self) -> int:
        """Stop producing, flush; the records never acknowledged nor failed (0 expected)."""
        self._stop.set()
        self._thread.join(150)
        assert not self._thread.is_alive(), "the producer did not finish"
        return self._unreported


def produce_acked(bootstrap: str, topic: str, values: range, partition: int = 0) -> None:
    """Produce ``values`` (as decimal strings) to ``partition`` with an idempotent acks=all
    producer; every one must be acknowledged."""
    errors: list[str] = []

    def delivered(err: Any, _message: Any) -> None:
        if err is not None:
            errors.append(str(err))

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for value in values:
        producer.produce(topic, str(value).encode(), partition=partition, on_delivery=delivered)
    assert producer.flush(60) == 0
    assert errors == []


def read_numbers(
    bootstrap: str, topic: str, partition: int = 0, timeout_s: float = 120
) -> list[int]:
    """The record numbers (a value's leading decimal, as ``AckedProducer`` writes them) of a
    partition from offset 0 up to its high watermark, in offset order (confluent-kafka);
    asserts that every offset below the HW was read."""
    deadline = time.monotonic() + timeout_s
    while True:
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"verify-{uuid.uuid4().hex[:8]}"}
        )
        try:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
            break
        except KafkaException:
            # The client's metadata may not have the partition (or its leader) yet, e.g. right
            # after an election or a restart: librdkafka answers _UNKNOWN_PARTITION at once.
            # A new client per attempt: in CI one consumer kept that answer for 120 s while
            # every broker's log showed the partition led and in sync (not root-caused).
            consumer.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    try:
        consumer.assign([TopicPartition(topic, partition, 0)])
        out: list[tuple[int, int]] = []
        while len(out) < high and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                out.append((message.offset(), int(message.value().split(b" ", 1)[0])))
        assert [offset for offset, _ in out] == list(range(high)), (topic, partition, high)
        return [value for _, value in out]
    finally:
        consumer.close()


def eventually(check: Callable[[], bool], timeout_s: float, what: str) -> float:
    """Poll ``check`` until true; the seconds it took."""
    start = time.monotonic()
    while not check():
        if time.monotonic() - start > timeout_s:
            raise AssertionError(f"{what}: not within {timeout_s} s")
        time.sleep(0.05)
    return time.monotonic() - start


def produce_all(bootstrap: str, records: list[tuple[str, int | None, bytes]]) -> None:
    """Produce with confluent-kafka and assert every record was delivered."""
    errors: list[str] = []

    def delivered(err: Any, message: Any) -> None:
        if err is not None:
            errors.append(f"{message.topic()}[{message.partition()}]: {err}")

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for topic, partition, value in records:
        if partition is None:
            producer.produce(topic, value, on_delivery=delivered)
        else:
            producer.produce(topic, value, partition=partition, on_delivery=delivered)
    assert producer.flush(60) == 0
    assert errors == [], errors


def broker_props(broker_id: int, zk_connect: str) -> dict[str, str]:
    return {
        "broker.id": str(broker_id),
        "zookeeper.connect": zk_connect,
        "zookeeper.session.timeout.ms": str(SESSION_MS),
        "offsets.topic.num.partitions": "3",
        # The last broker of a cluster has no one to hand its leaderships to: its controlled
        # shutdown retries, so keep the wait between attempts short (Kafka's default: 5 s).
        "controlled.shutdown.retry.backoff.ms": "500",
    }


def new_chroot(zookeeper_connect_string: str, prefix: str = "franz-cluster") -> str:
    """``zookeeper.connect`` with a fresh chroot (the brokers create it)."""
    return f"{zookeeper_connect_string}/{prefix}-{uuid.uuid4().hex[:12]}"


@contextlib.contextmanager
def start_cluster(
    zk_connect: str,
    base: Path,
    ids: Sequence[int] = BROKER_IDS,
    extra_props: Mapping[str, str] | None = None,
    broker_overrides: Mapping[int, Mapping[str, str]] | None = None,
) -> Iterator[Cluster]:
    """Start one ``franz broker`` per id (``base/broker-<id>``), wait until the first sees them
    all, yield the cluster, then stop every broker still running. ``extra_props`` go to every
    broker, ``broker_overrides[id]`` to one (its own ``log.dirs``, say)."""
    brokers: dict[int, BrokerProcess] = {}
    try:
        for broker_id in ids:
            props = {
                **broker_props(broker_id, zk_connect),
                **(extra_props or {}),
                **(broker_overrides or {}).get(broker_id, {}),
            }
            brokers[broker_id] = BrokerProcess(base / f"broker-{broker_id}", props).start()
        c = Cluster(zk_connect, brokers)
        try:
            eventually(
                lambda: len(c.kcat_metadata(brokers[ids[0]])["brokers"]) == len(ids),
                30,
                f"broker {ids[0]} sees {len(ids)} brokers",
            )
            yield c
        finally:
            c.kazoo.stop()
            c.kazoo.close()
    finally:
        for process in brokers.values():
            process.stop()
