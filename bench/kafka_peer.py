"""Apache Kafka 3.9 as the suite's peer: ZooKeeper and a Kafka broker as a user would run them,
and Kafka's own perf-test tools (ProducerPerformance, ConsumerPerformance).

Everything runs from Apache Kafka's jars, copied from Maven Central into
``${FRANZ_REFERENCE_CACHE:-~/.cache/franz-reference}/kafka-<version>-<pom hash>/libs`` by
``scripts/fetch-kafka-reference.sh`` (the version is ``tests/reference/pom.xml``'s). The bench
never fetches them itself: :func:`kafka_libs` raises :class:`KafkaUnavailable`, whose message
says how to fetch them, and the suite skips the Kafka rows with that message.

- :class:`ZooKeeperPeer`: ``org.apache.zookeeper.server.quorum.QuorumPeerMain`` from Kafka's
  own class path, as ``zookeeper-server-start.sh`` runs it (``-Xmx512M -Xms512M``), with
  ``config/zookeeper.properties``'s settings (``maxClientCnxns=0``, no AdminServer) on a free
  loopback port. It is not measured: the Kafka rows are the broker process alone (the suite
  prints ZooKeeper's own CPU and RSS in a note).
- :class:`KafkaPeer`: ``kafka.Kafka server.properties``, ZooKeeper mode (``broker_id`` and
  ``overrides`` for the brokers of a cluster, as ``bench.replication_bench`` runs three),
  with the JVM flags of ``kafka-server-start.sh`` (heap ``-Xmx1G -Xms1G``) and
  ``kafka-run-class.sh`` (G1,
  ``MaxGCPauseMillis=20``, ...), :data:`KAFKA_JVM_FLAGS`; the ``server.properties`` is the
  shipped ``config/server.properties`` (:func:`server_properties`) with this run's listener,
  log dir and chroot. Kafka's flush defaults are kept: ``log.flush.interval.messages`` and
  ``log.flush.interval.ms`` unset (never fsync on the produce path, the page cache and the
  replicas are the durability), as franz's defaults (``flush.messages`` / ``flush.ms`` at
  Kafka's ``Long.MAX_VALUE``). Ready at the log line ``started (kafka.server.KafkaServer)``;
  stopped by PID with SIGTERM (Kafka's controlled shutdown; the JVM then exits 143, which
  :meth:`KafkaPeer.stop` reports as 0).
- The perf tools: ``org.apache.kafka.tools.ProducerPerformance`` and ``ConsumerPerformance``
  (``kafka-producer-perf-test.sh`` / ``kafka-consumer-perf-test.sh``, ``-Xmx512M``), one JVM
  per run; :func:`parse_producer_performance` and :func:`parse_consumer_performance` read
  their summaries (pure, unit-tested). ``kafka-reassign-partitions.sh``
  (``org.apache.kafka.tools.reassign.ReassignPartitionsCommand``):
  :func:`reassign_partitions_args`.

Every JVM runs under ``setpriv --pdeathsig KILL`` so none outlives the bench.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bench.peers import _Server

__all__ = [
    "KAFKA_JVM_FLAGS",
    "ConsumerPerf",
    "KafkaPeer",
    "KafkaUnavailable",
    "ProducerPerf",
    "ZooKeeperPeer",
    "consumer_perf_args",
    "kafka_libs",
    "kafka_version",
    "parse_consumer_performance",
    "parse_producer_performance",
    "producer_perf_args",
    "reassign_partitions_args",
    "server_properties",
]

REPO = Path(__file__).resolve().parents[1]
POM = REPO / "tests" / "reference" / "pom.xml"

#: ``kafka-run-class.sh``'s ``KAFKA_JVM_PERFORMANCE_OPTS`` (Kafka 3.9, Java >= 9).
PERFORMANCE_OPTS = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)
#: ``kafka-server-start.sh``'s ``KAFKA_HEAP_OPTS`` plus the performance options.
KAFKA_JVM_FLAGS = ("-Xmx1G", "-Xms1G", *PERFORMANCE_OPTS)
#: ``zookeeper-server-start.sh``'s heap.
ZOOKEEPER_JVM_FLAGS = ("-Xmx512M", "-Xms512M", *PERFORMANCE_OPTS)
#: ``kafka-producer-perf-test.sh`` / ``kafka-consumer-perf-test.sh``'s heap.
TOOL_JVM_FLAGS = ("-Xmx512M", *PERFORMANCE_OPTS)

PRODUCER_PERFORMANCE = "org.apache.kafka.tools.ProducerPerformance"
CONSUMER_PERFORMANCE = "org.apache.kafka.tools.ConsumerPerformance"
REASSIGN_PARTITIONS = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
KAFKA_STARTED = "started (kafka.server.KafkaServer)"

# Kafka's config/log4j.properties logs INFO to files; here to the server's output file, with
# the request and state-change loggers at WARN (their INFO lines are per partition change).
_LOG4J = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
"""
_TOOLS_LOG4J = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Target=System.err
"""


class KafkaUnavailable(RuntimeError):
    """Java or Kafka's jars are missing; the message says how to get them."""


def kafka_version(pom: Path = POM) -> str:
    """The Kafka version pinned in ``tests/reference/pom.xml`` (``<kafka.version>``)."""
    found = re.search(r"<kafka.version>([^<]+)</kafka.version>", pom.read_text())
    if found is None:
        raise KafkaUnavailable(f"no <kafka.version> in {pom}")
    return found.group(1).strip()


def kafka_libs() -> Path:
    """The directory of Kafka's jars, if ``fetch-kafka-reference.sh`` completed; never fetches."""
    if shutil.which("java") is None:
        raise KafkaUnavailable("java not found: run scripts/setup.sh (it installs Java 17)")
    cache = Path(os.environ.get("FRANZ_REFERENCE_CACHE") or Path.home() / ".cache/franz-reference")
    # The fetch script's dir name: the version and the pom's SHA-256 prefix.
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()[:12]
    dest = cache / f"kafka-{kafka_version()}-{digest}"
    if not (dest / ".complete").exists():
        raise KafkaUnavailable(
            f"Apache Kafka's jars are not in {dest}/libs: fetch them with "
            "`bash scripts/fetch-kafka-reference.sh` (Maven Central, ~50 MB, or run "
            "scripts/setup.sh), then run the suite again"
        )
    return dest / "libs"


def _java(libs: Path, flags: tuple[str, ...], log4j: Path, main: str, *args: str) -> list[str]:
    return [
        "setpriv", "--pdeathsig", "KILL", "--", "java", *flags,
        f"-Dlog4j.configuration=file:{log4j}", "-cp", f"{libs}/*", main, *args,
    ]  # fmt: skip


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def server_properties(port: int, zookeeper: str, log_dir: Path, partitions: int) -> dict[str, str]:
    """Kafka 3.9's shipped ``config/server.properties`` (ZooKeeper mode), this run's listener,
    log dir, ZooKeeper chroot and ``num.partitions``; every other key at Kafka's default."""
    return {
        "broker.id": "0",
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "num.network.threads": "3",
        "num.io.threads": "8",
        "socket.send.buffer.bytes": "102400",
        "socket.receive.buffer.bytes": "102400",
        "socket.request.max.bytes": "104857600",
        "log.dirs": str(log_dir),
        "num.partitions": str(partitions),
        "num.recovery.threads.per.data.dir": "1",
        "offsets.topic.replication.factor": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "log.retention.hours": "168",
        "log.retention.check.interval.ms": "300000",
        "zookeeper.connect": zookeeper,
        "zookeeper.connection.timeout.ms": "18000",
        "group.initial.rebalance.delay.ms": "0",
    }


class _JvmServer(_Server):
    """A JVM server: SIGTERM runs its shutdown hooks, after which the JVM exits 143."""

    def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM (for Kafka its controlled shutdown); the JVM's 143 after it is a clean 0."""
        code = super().stop(timeout)
        return 0 if code == 143 else code


class ZooKeeperPeer(_JvmServer):
    """ZooKeeper from Kafka's class path (``zookeeper-server-start.sh``), loopback only."""

    name = "zookeeper"

    def __init__(self, data_dir: Path, libs: Path) -> None:
        super().__init__(data_dir)
        self.libs = libs

    def args(self) -> list[str]:
        config = _write(
            self.data_dir / "zookeeper.properties",
            f"dataDir={self.data_dir / 'data'}\nclientPort={self.port}\n"
            "clientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\n"
            "4lw.commands.whitelist=srvr\n",
        )
        log4j = _write(self.data_dir / "log4j.properties", _TOOLS_LOG4J)
        return _java(self.libs, ZOOKEEPER_JVM_FLAGS, log4j,
                     "org.apache.zookeeper.server.quorum.QuorumPeerMain", str(config))  # fmt: skip

    def ready(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as s:
            s.sendall(b"srvr")
            return b"Mode:" in s.recv(4096)


class KafkaPeer(_JvmServer):
    """An Apache Kafka broker (``kafka.Kafka``), ZooKeeper mode, ``chroot`` of its own."""

    name = "kafka"

    def __init__(
        self,
        data_dir: Path,
        libs: Path,
        zookeeper: str,
        *,
        chroot: str,
        partitions: int,
        broker_id: int = 0,
        overrides: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(data_dir)
        self.libs, self.zookeeper, self.chroot, self.partitions = (
            libs,
            zookeeper,
            chroot,
            partitions,
        )
        self.broker_id = broker_id
        self.overrides = dict(overrides or {})
        self._log_offset = 0

    def args(self) -> list[str]:
        props = server_properties(
            self.port, f"{self.zookeeper}/{self.chroot}", self.data_dir / "logs", self.partitions
        )
        props |= {"broker.id": str(self.broker_id), **self.overrides}
        config = _write(
            self.data_dir / "server.properties", "".join(f"{k}={v}\n" for k, v in props.items())
        )
        log4j = _write(self.data_dir / "log4j.properties", _LOG4J)
        return _java(self.libs, KAFKA_JVM_FLAGS, log4j, "kafka.Kafka", str(config))

    def ready(self) -> bool:
        """This start's ``started`` line (a restart appends to the same log file)."""
        with (self.data_dir / "server.log").open("rb") as f:
            f.seek(self._log_offset)
            return KAFKA_STARTED.encode() in f.read()

    def start(self, timeout: float = 120.0) -> KafkaPeer:
        """Start (again, after ``stop`` or ``kill``: same log dir, a new port)."""
        log = self.data_dir / "server.log"
        self._log_offset = log.stat().st_size if log.exists() else 0
        super().start(timeout)
        return self


# -- Kafka's perf-test tools ----------------------------------------------------------------------


def _tool(libs: Path, main: str, *args: object) -> list[str]:
    log4j = _write(libs.parent / "bench-tools-log4j.properties", _TOOLS_LOG4J)
    return _java(libs, TOOL_JVM_FLAGS, log4j, main, *map(str, args))


def producer_perf_args(
    libs: Path, bootstrap: str, topic: str, records: int, size: int, acks: str
) -> list[str]:
    """``kafka-producer-perf-test.sh --throughput -1`` (as fast as it can) of ``records``
    random values of ``size`` B; the producer's other settings at the Java client's defaults
    (``linger.ms=5``, ``batch.size=16384``, idempotence on when ``acks=all``)."""
    return _tool(libs, PRODUCER_PERFORMANCE, "--topic", topic, "--num-records", records,
                 "--record-size", size, "--throughput", -1, "--producer-props",
                 f"bootstrap.servers={bootstrap}", f"acks={acks}")  # fmt: skip


def consumer_perf_args(libs: Path, bootstrap: str, topic: str, records: int) -> list[str]:
    """``kafka-consumer-perf-test.sh`` reading ``records`` messages of ``topic`` (its own group,
    ``auto.offset.reset=earliest``), the summary without its column header."""
    return _tool(libs, CONSUMER_PERFORMANCE, "--bootstrap-server", bootstrap, "--topic", topic,
                 "--messages", records, "--timeout", 30_000, "--hide-header")  # fmt: skip


def reassign_partitions_args(libs: Path, bootstrap: str, *args: object) -> list[str]:
    """``kafka-reassign-partitions.sh --bootstrap-server bootstrap args`` (``--execute``,
    ``--verify``, ...). The script leaves ``kafka-run-class.sh``'s default heap (256 MB); here
    it gets the perf tools' 512 MB, which only spares it a GC."""
    return _tool(libs, REASSIGN_PARTITIONS, "--bootstrap-server", bootstrap, *args)


@dataclass(frozen=True, slots=True)
class ProducerPerf:
    """ProducerPerformance's last line: its own rate and send-to-ack latencies (ms)."""

    records: int
    records_s: float
    mb_s: float
    avg_ms: float
    max_ms: float
    p50_ms: float
    p99_ms: float


_PRODUCER = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency, "
    r"([\d.]+) ms max latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th"
)


def parse_producer_performance(output: str) -> ProducerPerf:
    """The summary line (the one with percentiles; the periodic lines have none)."""
    found = _PRODUCER.findall(output)
    if not found:
        raise ValueError(f"no ProducerPerformance summary in the output:\n{output[-1500:]}")
    n, rate, mb, avg, mx, p50, _p95, p99 = found[-1]
    return ProducerPerf(int(n), float(rate), float(mb), float(avg), float(mx), float(p50),
                        float(p99))  # fmt: skip


@dataclass(frozen=True, slots=True)
class ConsumerPerf:
    """ConsumerPerformance's summary: records and MB read, the whole run's time (from the
    first poll, the group join included) and the fetch time alone (after the join)."""

    records: int
    mb: float
    seconds: float
    rebalance_ms: float
    fetch_ms: float


def parse_consumer_performance(output: str) -> ConsumerPerf:
    """The comma-separated summary ``start.time, end.time, data.consumed.in.MB, MB.sec,
    data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec,
    fetch.nMsg.sec`` (the last data line with 10 fields)."""
    for line in reversed(output.splitlines()):
        fields = [f.strip() for f in line.split(",")]
        if len(fields) == 10 and not fields[0].startswith("start.time"):
            try:
                mb, mb_s, n = float(fields[2]), float(fields[3]), int(fields[4])
                rebalance, fetch = float(fields[6]), float(fields[7])
            except ValueError:
                continue
            return ConsumerPerf(n, mb, mb / mb_s if mb_s > 0 else 0.0, rebalance, fetch)
    raise ValueError(f"no ConsumerPerformance summary in the output:\n{output[-1500:]}")
