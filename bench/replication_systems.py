"""The replication benches' systems: three-broker clusters (franz, Apache Kafka 3.9) on one
ZooKeeper, and what their Metadata and log dirs say. (The acks=all producer that times them
is ``bench.ack_probe``.)

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
- :func:`start_zookeeper`, :func:`cluster_makers`, :func:`require_free`: what every bench on
  these clusters does first (one ZooKeeper, franz then Kafka when its jars are there, the
  free-disk check).

Every process is registered with ``bench.broker_clients`` (``stop_all`` kills what is left by
PID) and listed in the bench's ``owned`` list (``bench.harness.stop_owned`` stops it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.broker_clients import register, unregister

__all__ = [
    "ClusterSystem",
    "FranzCluster",
    "KafkaCluster",
    "PartitionView",
    "TopicView",
    "create_topic",
    "follower_share",
    "log_bytes",
    "read_topic",
    "require_free",
    "start_zookeeper",
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

    def remove_data(self) -> None:
        """Delete the brokers' log dirs (after :meth:`stop`: a bench that fills GiBs frees
        them before the next cluster starts)."""
        for i in BROKER_IDS:
            shutil.rmtree(self.log_dir(i), ignore_errors=True)


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


ClusterMaker = Callable[[Path, str, int, list[Any]], ClusterSystem]


def start_zookeeper(base: Path, owned: list[Any]) -> Any:
    """Debian's ZooKeeper (``tests.support.zookeeper``) in ``base/zookeeper``, with its shipped
    ``tickTime=2000`` (sessions of 4 s up to 40 s: 20 ticks), registered and in ``owned``;
    returned once it answers."""
    from tests.support.zookeeper import ZooKeeperServer, zookeeper_available

    if not zookeeper_available():
        raise RuntimeError("ZooKeeper not installed (scripts/setup.sh: zookeeper)")
    zk = ZooKeeperServer(base / "zookeeper", tick_ms=2000, min_session_ms=4000)
    owned.append(zk)
    zk.start()
    assert zk.proc is not None
    register(zk.proc.pid, zk.proc)
    took = zk.wait_ready(60)
    print(f"  ZooKeeper on {zk.connect_string} ready in {took:.1f} s", flush=True)
    return zk


def cluster_makers(peer: str, warn: Callable[[str], None]) -> list[tuple[str, ClusterMaker]]:
    """franz's cluster, then (``peer`` "kafka") Kafka 3.9's if its jars are there (else a
    warning says how to fetch them): ``(key, make(base, zk_connect, session_ms, owned))``."""
    makers: list[tuple[str, ClusterMaker]] = [("franz", FranzCluster)]
    if peer == "kafka":
        from bench.kafka_peer import KafkaUnavailable, kafka_libs

        try:
            libs = kafka_libs()
        except KafkaUnavailable as exc:
            warn(f"no Kafka peer: {exc}")
        else:
            makers.append(("kafka", lambda b, z, s, o: KafkaCluster(b, z, s, o, libs)))
    return makers


def require_free(base: Path, need: int) -> None:
    """Print the free disk under ``base`` and what the run needs; SystemExit if short."""
    free = shutil.disk_usage(base).free
    print(
        f"  free disk under {base}: {free / (1 << 30):.1f} GiB (needs {need / (1 << 30):.1f} GiB)",
        flush=True,
    )
    if free < need:
        raise SystemExit(f"need {need >> 20} MiB free under {base}, have {free >> 20} MiB")
