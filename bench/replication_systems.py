"""The replication bench's systems and probes: three-broker clusters (franz, Apache Kafka 3.9)
on one ZooKeeper, what their Metadata and log dirs say, and an acks=all producer that times
how long a partition stops taking writes.

- :class:`FranzCluster`: three ``franz broker`` processes (``tests.support.broker``), ids 1-3,
  ``zookeeper.connect`` on a fresh chroot, every other key at franz's (Kafka's) defaults but
  ``zookeeper.session.timeout.ms``.
- :class:`KafkaCluster`: three Apache Kafka 3.9 brokers (``bench.kafka_peer.KafkaPeer``: the
  shipped ``server.properties`` and ``kafka-server-start.sh``'s JVM flags), ids 1-3, the same
  ZooKeeper on another chroot, the same session timeout.
- :func:`read_topic`: Metadata v12 of one topic from one broker alone (raw, over TCP), so a
  wait can ask every live broker; :func:`topic_ready` (pure) says when all agree that every
  partition has a live leader and a full ISR.
- :func:`log_bytes` and :func:`follower_share` (pure): the bytes of a topic's ``.log`` files in
  each broker's log dir and the share of its leader's bytes the emptiest follower holds: 0 %
  when followers copy nothing (franz's cluster mode before replication), ~100 % replicated.
- :class:`AckProbe`: an idempotent confluent-kafka producer (``acks=all``) on a thread of its
  own, sending one 100 B record to one partition every ``interval_s`` and noting when each
  is acknowledged; :meth:`AckProbe.watch` arms it to note the first acknowledgement of a
  record *sent at or after* a given instant (a kill), so an acknowledgement already on its
  way when the leader died never counts as the partition being back; :func:`longest_gap`
  (pure) is the longest stretch without acknowledgements around such an instant.

Every process is registered with ``bench.broker_clients`` (``stop_all`` kills what is left by
PID) and listed in the bench's ``owned`` list (``bench.harness.stop_owned`` stops it).
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import signal
import struct
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.broker_clients import register, unregister

__all__ = [
    "AckProbe",
    "ClusterSystem",
    "FranzCluster",
    "KafkaCluster",
    "PartitionView",
    "TopicView",
    "create_topic",
    "follower_share",
    "log_bytes",
    "longest_gap",
    "read_topic",
    "topic_ready",
]

BROKER_IDS = (1, 2, 3)
POLL_S = 0.05


# -- what the brokers say (pure parts) -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionView:
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicView:
    """One broker's Metadata for one topic: live brokers and each partition's state."""

    brokers: tuple[int, ...]
    partitions: dict[int, PartitionView]


def topic_ready(
    views: Sequence[TopicView | None], live: Sequence[int], partitions: int, rf: int
) -> bool:
    """Every live broker answered, lists exactly ``live`` and the same partition states; every
    one of ``partitions`` has a live leader, ``rf`` replicas and all of them in the ISR."""
    if not views or any(v is None for v in views):
        return False
    first = views[0]
    assert first is not None
    for view in views:
        assert view is not None
        if sorted(view.brokers) != sorted(live) or view.partitions != first.partitions:
            return False
    if sorted(first.partitions) != list(range(partitions)):
        return False
    return all(
        p.leader in live and len(p.replicas) == rf and sorted(p.isr) == sorted(p.replicas)
        for p in first.partitions.values()
    )


def follower_share(
    sizes: Mapping[int, Mapping[int, int]], partitions: Mapping[int, PartitionView]
) -> float | None:
    """The smallest follower/leader ratio of ``.log`` bytes over the partitions (``sizes``:
    broker -> partition -> bytes); None when no partition has followers or data."""
    shares = []
    for p, view in partitions.items():
        leader_bytes = sizes.get(view.leader, {}).get(p, 0)
        if leader_bytes <= 0:
            continue
        for follower in view.replicas:
            if follower != view.leader:
                shares.append(sizes.get(follower, {}).get(p, 0) / leader_bytes)
    return min(shares) if shares else None


def log_bytes(log_dir: Path, topic: str) -> dict[int, int]:
    """partition -> bytes of the ``.log`` segments of ``topic`` in one broker's log dir."""
    sizes: dict[int, int] = {}
    if not log_dir.is_dir():
        return sizes
    prefix = f"{topic}-"
    for entry in log_dir.iterdir():
        name = entry.name
        if not (entry.is_dir() and name.startswith(prefix) and name[len(prefix) :].isdigit()):
            continue
        total = 0
        for segment in entry.glob("*.log"):
            with contextlib.suppress(FileNotFoundError):  # deleted by retention meanwhile
                total += segment.stat().st_size
        sizes[int(name[len(prefix) :])] = total
    return sizes


def read_topic(bootstrap: str, topic: str) -> TopicView | None:
    """Metadata v12 for ``topic`` from this broker alone; None when it does not answer."""
    from tests.support.wire import WireClient, metadata

    try:
        client = WireClient.connect(bootstrap, timeout=5.0, client_id="franz-replication-bench")
    except OSError:
        return None
    try:
        response = metadata(client, [topic])
    except (OSError, ConnectionError):
        return None
    finally:
        client.close()
    parts: dict[int, PartitionView] = {}
    for t in response.topics:
        if t.name != topic or t.error_code != 0:
            continue
        for p in t.partitions:
            parts[int(p.partition_index)] = PartitionView(
                int(p.leader_id),
                tuple(int(r) for r in p.replica_nodes),
                tuple(int(r) for r in p.isr_nodes),
            )
    return TopicView(tuple(int(b.node_id) for b in response.brokers), parts)


def create_topic(
    bootstrap: str, name: str, partitions: int, rf: int, config: Mapping[str, str]
) -> None:
    """CreateTopics (confluent-kafka's AdminClient); raises on an error."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    futures = admin.create_topics(
        [NewTopic(name, partitions, rf, config=dict(config))],
        operation_timeout=60,
        request_timeout=90,
    )
    futures[name].result(120)


def wait_until(check: Any, timeout_s: float, what: str, describe: Any = None) -> float:
    """Poll ``check()`` every 50 ms; seconds it took; TimeoutError (with ``describe()``)."""
    started = time.monotonic()
    last_print = started
    while not check():
        now = time.monotonic()
        if now - started > timeout_s:
            seen = f"; seen: {describe()}" if describe is not None else ""
            raise TimeoutError(f"{what}: not within {timeout_s:.0f} s{seen}")
        if now - last_print >= 5.0:
            print(f"    ... waiting for {what}: {now - started:.1f} s", flush=True)
            last_print = now
        time.sleep(POLL_S)
    return time.monotonic() - started


# -- the clusters ----------------------------------------------------------------------------------


class ClusterSystem:
    """Three brokers of one kind (ids 1-3) on a chroot of the bench's ZooKeeper."""

    key = "?"
    label = "?"

    def __init__(self, base: Path, zk_connect: str, session_ms: int, owned: list[Any]) -> None:
        self.base = base
        self.chroot = f"{self.key}-replication-{uuid.uuid4().hex[:10]}"
        self.zk_connect = zk_connect
        self.session_ms = session_ms
        self.owned = owned
        self.nodes: dict[int, Any] = {i: self._make(i) for i in BROKER_IDS}

    # what a kind provides
    def _make(self, broker_id: int) -> Any:
        raise NotImplementedError

    def _start_node(self, node: Any) -> None:
        raise NotImplementedError

    def address(self, broker_id: int) -> str:
        raise NotImplementedError

    def log_dir(self, broker_id: int) -> Path:
        raise NotImplementedError

    # shared
    def start(self) -> ClusterSystem:
        for i in BROKER_IDS:
            self.start_broker(i)
        wait_until(self.all_registered, 120, f"{self.label}: 3 brokers registered")
        return self

    def start_broker(self, broker_id: int) -> None:
        node = self.nodes[broker_id]
        if node in self.owned:
            self.owned.remove(node)
        self.owned.append(node)
        self._start_node(node)
        register(node.proc.pid, node)

    def all_registered(self) -> bool:
        views = [read_topic(self.address(i), "__none__") for i in self.live()]
        return all(v is not None and sorted(v.brokers) == list(BROKER_IDS) for v in views)

    def live(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.proc is not None]

    def bootstrap(self) -> str:
        return ",".join(self.address(i) for i in self.live())

    def pid(self, broker_id: int) -> int:
        return int(self.nodes[broker_id].proc.pid)

    def pids(self) -> list[int]:
        return [self.pid(i) for i in self.live()]

    def signal(self, broker_id: int, sig: signal.Signals) -> None:
        os.kill(self.pid(broker_id), sig)

    def wait_exit(self, broker_id: int, timeout_s: float) -> None:
        """Wait for a broker we signalled to exit (``subprocess.TimeoutExpired`` if not)."""
        self.nodes[broker_id].proc.wait(timeout_s)

    def reap(self, broker_id: int, timeout_s: float = 120.0) -> int:
        """Wait for a broker we signalled to exit (SIGKILL after ``timeout_s``); its code."""
        node = self.nodes[broker_id]
        pid = node.proc.pid
        code = node.proc.wait(timeout_s) if node.proc.poll() is None else node.proc.returncode
        node.stop()  # reaped already: only forgets the handle
        unregister(pid)
        return int(code)

    def views(self, topic: str) -> list[TopicView | None]:
        return [read_topic(self.address(i), topic) for i in self.live()]

    def wait_topic(self, topic: str, partitions: int, rf: int, timeout_s: float = 60.0) -> float:
        """Until every live broker shows ``topic`` with live leaders and full ISRs."""
        return wait_until(
            lambda: topic_ready(self.views(topic), self.live(), partitions, rf),
            timeout_s,
            f"{self.label}: {topic} leaders and full ISRs on every broker",
            lambda: self.views(topic),
        )

    def state(self, topic: str) -> dict[int, PartitionView]:
        """The partition states one live broker reports (empty when none answers)."""
        for i in self.live():
            view = read_topic(self.address(i), topic)
            if view is not None:
                return view.partitions
        return {}

    def sizes(self, topic: str) -> dict[int, dict[int, int]]:
        return {i: log_bytes(self.log_dir(i), topic) for i in BROKER_IDS}

    def stop(self) -> None:
        for node in self.nodes.values():
            if node in self.owned:
                pid = node.proc.pid if node.proc is not None else None
                node.stop()
                self.owned.remove(node)
                if pid is not None:
                    unregister(pid)


class FranzCluster(ClusterSystem):
    key = "franz"
    label = "franz, 3 brokers"

    def _make(self, broker_id: int) -> Any:
        from tests.support.broker import BrokerProcess

        return BrokerProcess(
            self.base / f"{self.chroot}-broker-{broker_id}",
            {
                "broker.id": str(broker_id),
                "zookeeper.connect": f"{self.zk_connect}/{self.chroot}",
                "zookeeper.session.timeout.ms": str(self.session_ms),
            },
        )

    def _start_node(self, node: Any) -> None:
        node.start(timeout=60.0)

    def address(self, broker_id: int) -> str:
        return str(self.nodes[broker_id].bootstrap)

    def log_dir(self, broker_id: int) -> Path:
        return Path(self.nodes[broker_id].data_dir) / "logs"


class KafkaCluster(ClusterSystem):
    key = "kafka"
    label = "Kafka 3.9, 3 brokers"

    def __init__(
        self, base: Path, zk_connect: str, session_ms: int, owned: list[Any], libs: Path
    ) -> None:
        self.libs = libs
        super().__init__(base, zk_connect, session_ms, owned)

    def _make(self, broker_id: int) -> Any:
        from bench.kafka_peer import KafkaPeer

        return KafkaPeer(
            self.base / f"{self.chroot}-broker-{broker_id}",
            self.libs,
            self.zk_connect,
            chroot=self.chroot,
            partitions=1,
            broker_id=broker_id,
            overrides={"zookeeper.session.timeout.ms": str(self.session_ms)},
        )

    def _start_node(self, node: Any) -> None:
        node.start(timeout=180.0)

    def address(self, broker_id: int) -> str:
        return str(self.nodes[broker_id].address)

    def log_dir(self, broker_id: int) -> Path:
        return Path(self.nodes[broker_id].data_dir) / "logs"


# -- the unavailability probe ----------------------------------------------------------------------

_STAMP = struct.Struct(">qq")  # sequence number, time.monotonic_ns() at produce()
_QUIET = logging.getLogger("bench.replication_systems.ack_probe")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def longest_gap(ack_ns: Sequence[int], start_ns: int, end_ns: int) -> float:
    """Seconds of the longest stretch without an acknowledgement between the last one at or
    before ``start_ns`` (or ``start_ns`` itself) and ``end_ns``; ``ack_ns`` is sorted."""
    at = bisect.bisect_right(ack_ns, start_ns)
    previous = ack_ns[at - 1] if at > 0 else start_ns
    longest = 0
    for t in ack_ns[at:]:
        if t > end_ns:
            break
        longest = max(longest, t - previous)
        previous = t
    return max(longest, end_ns - previous if previous < end_ns else 0) / 1e9


class AckProbe:
    """An idempotent ``acks=all`` producer sending to one partition at a fixed rate.

    Runs on its own thread (librdkafka releases the GIL while it waits); the main thread
    only reads the counters and uses :meth:`watch` / :meth:`wait_back`. Times are
    ``time.monotonic_ns()``; an acknowledgement is timed when its delivery report is served
    (``poll``), so each figure is late by at most one send interval. A fatal producer error
    (say UNKNOWN_PRODUCER_ID from a new leader that lacks the producer's state) is noted in
    ``fatal`` and the probe goes on with a new producer, as an application would have to.
    """

    def __init__(self, bootstrap: str, topic: str, partition: int, interval_s: float) -> None:
        self.bootstrap, self.topic, self.partition = bootstrap, topic, partition
        self.interval_ns = int(interval_s * 1e9)
        self.sent = 0
        self.ack_ns: list[int] = []  # in delivery order, which is time order
        self.errors: list[str] = []
        self.fatal: list[str] = []
        self.left = 0
        self._watch_ns: int | None = None
        self.back_ns: int | None = None
        self._back = threading.Event()
        self._stop = threading.Event()
        self._fatal_now = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ack-probe", daemon=True)
        self.failure: BaseException | None = None
        self._flush_s = 30.0

    @property
    def acked(self) -> int:
        return len(self.ack_ns)

    def start(self, warmup_acks: int = 200, timeout_s: float = 60.0) -> AckProbe:
        """Start sending; return once ``warmup_acks`` records were acknowledged."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while self.acked < warmup_acks:
            if self.failure is not None or not self._thread.is_alive():
                raise RuntimeError(f"ack probe stopped: {self.failure!r}; {self.errors[:3]}")
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"ack probe: {self.acked} of {warmup_acks} warm-up records acknowledged "
                    f"in {timeout_s:.0f} s; errors {self.errors[:3]} {self.fatal[:3]}"
                )
            time.sleep(0.01)
        return self

    def watch(self, since_ns: int) -> None:
        """Note the first acknowledgement of a record sent at or after ``since_ns``."""
        self.back_ns = None
        self._back.clear()
        self._watch_ns = since_ns

    def wait_back(self, timeout_s: float) -> float | None:
        """Seconds from the watched instant to that acknowledgement; None if none came."""
        if not self._back.wait(timeout_s) or self.back_ns is None or self._watch_ns is None:
            return None
        return (self.back_ns - self._watch_ns) / 1e9

    def stop(self, flush_s: float = 30.0) -> None:
        self._flush_s = flush_s
        self._stop.set()
        self._thread.join(flush_s + 10.0)

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is not None:
            self.errors.append(str(err.name() if hasattr(err, "name") else err))
            return
        now = time.monotonic_ns()
        self.ack_ns.append(now)
        watch = self._watch_ns
        if watch is not None and self.back_ns is None:
            _, sent_ns = _STAMP.unpack_from(msg.value())
            if sent_ns >= watch:
                self.back_ns = now
                self._back.set()

    def _on_error(self, err: Any) -> None:
        if err.fatal() and not self._fatal_now.is_set():
            self.fatal.append(f"{err.name()}: {err.str()}")
            self._fatal_now.set()

    def _producer(self) -> Any:
        from confluent_kafka import Producer

        return Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 0,
                "socket.nagle.disable": True,
                # connection refused by a killed broker is expected; fatal errors are kept
                "logger": _QUIET,
                "error_cb": self._on_error,
            }
        )

    def _run(self) -> None:
        from confluent_kafka import KafkaError, KafkaException

        try:
            producer = self._producer()
            pad = bytes(100 - _STAMP.size)
            seq = 0
            next_ns = time.monotonic_ns()
            while not self._stop.is_set():
                if self._fatal_now.is_set():
                    # Fatal: this producer refuses everything from now on; its pending
                    # records are dropped with it (an application would do the same).
                    with contextlib.suppress(KafkaException):
                        producer.purge()
                    producer = self._producer()
                    self._fatal_now.clear()
                now = time.monotonic_ns()
                try:
                    if now < next_ns:
                        producer.poll((next_ns - now) / 1e9)
                        continue
                    producer.produce(
                        self.topic,
                        _STAMP.pack(seq, now) + pad,
                        partition=self.partition,
                        on_delivery=self._delivered,
                    )
                    seq += 1
                    self.sent = seq
                    next_ns = max(next_ns + self.interval_ns, now)
                    producer.poll(0)
                except BufferError:
                    producer.poll(0.001)
                except KafkaException as exc:  # poll() and produce() raise the fatal error
                    error = exc.args[0]
                    if not (error.fatal() or error.code() == KafkaError._FATAL):
                        raise
                    if error.code() == KafkaError._FATAL:  # "produce refused": why, poll says
                        try:
                            producer.poll(0)
                        except KafkaException as cause:
                            error = cause.args[0]
                    if not self._fatal_now.is_set():
                        self.fatal.append(f"{error.name()}: {error.str()}")
                        self._fatal_now.set()
            self.left = producer.flush(self._flush_s)
        except BaseException as exc:  # reported by start() / the bench
            self.failure = exc
