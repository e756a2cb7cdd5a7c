"""Apache Kafka itself as the reference: a Kafka broker and Kafka's tools.

Everything runs from one class path, Apache Kafka's jars copied from Maven Central by
``scripts/fetch-kafka-reference.sh`` (``tests/reference/pom.xml``: ``kafka_2.13`` and
``kafka-tools`` at the version pinned there, into
``~/.cache/franz-reference/kafka-<v>-<pom hash>/libs``; ``scripts/setup.sh`` runs it, and
``reference_libs()`` runs it again lazily, failing with mvn's output if it cannot fetch).

- The ZooKeeper the brokers use is the test session's (``tests/support/zookeeper.py``, the
  ``zookeeper_server`` fixture of ``tests/conftest.py``, shared with ``tests/cluster``).
- ``KafkaBroker``: ``kafka.Kafka server.properties`` in ZooKeeper mode with a chroot per
  broker (Kafka creates it), ``listeners=PLAINTEXT://127.0.0.1:<free port>``, its own log
  dir, ``-Xmx512m`` and C1 only (start-up on a shared 2-core box matters more than peak
  speed). Ready at the log line ``started (kafka.server.KafkaServer)``; SIGTERM is Kafka's
  controlled shutdown, which writes ``.kafka_cleanshutdown`` (exit code 143 from the JVM's
  signal handler is what a clean stop returns).
- ``run_kafka_tool(main_class, *args)``: one JVM per call (about 1-2 s), log4j at WARN on
  stderr as Kafka's ``tools-log4j.properties``.

Every JVM runs under ``setpriv --pdeathsig KILL`` so that none outlives the test runner, and
is stopped through its own ``Popen`` handle (our PID only).

Main classes of the tools in Kafka 3.9 (the scripts' ``exec kafka-run-class.sh`` lines):
``kafka.tools.DumpLogSegments`` (kafka-dump-log.sh), ``org.apache.kafka.tools.TopicCommand``,
``kafka.tools.ConsoleProducer``, ``org.apache.kafka.tools.consumer.ConsoleConsumer``,
``org.apache.kafka.tools.consumer.group.ConsumerGroupCommand``, ``kafka.admin.ConfigCommand``,
``org.apache.kafka.tools.GetOffsetShell``; ``org.apache.zookeeper.ZooKeeperMain``
(zookeeper-shell.sh) writes znodes.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Protocol

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient

__all__ = [
    "DUMP_LOG_SEGMENTS",
    "HasBootstrap",
    "KafkaBroker",
    "ReferenceUnavailable",
    "free_port",
    "reference_libs",
    "run_franz_tool",
    "run_kafka_tool",
    "start_kafka_tool",
    "zookeeper_commands",
]

REPO = Path(__file__).resolve().parents[2]
FETCH_SCRIPT = REPO / "scripts" / "fetch-kafka-reference.sh"

DUMP_LOG_SEGMENTS = "kafka.tools.DumpLogSegments"


class HasBootstrap(Protocol):
    """A broker of either kind: ``KafkaBroker`` or ``tests.support.broker.BrokerProcess``."""

    @property
    def bootstrap(self) -> str: ...


#: Lighter than kafka-run-class.sh's G1 flags: a small serial heap and C1 only start faster
#: on 2 shared cores; -XX:-UsePerfData keeps /tmp/hsperfdata out of it.
_JVM_FLAGS = (
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-XX:-UsePerfData",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
)
_TOOLS_LOG4J = """\
log4j.rootLogger=WARN, stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.appender.stderr.Target=System.err
"""
_BROKER_LOG4J = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
"""
_KAFKA_STARTED = "started (kafka.server.KafkaServer)"


#: What a JVM prints when its listen port was taken (java.net.BindException's message).
_ADDRESS_IN_USE = "Address already in use"
#: Starts tried before a port taken by another process is an error.
_BIND_ATTEMPTS = 3


class _PortTaken(RuntimeError):
    """The server exited because another process bound its port first."""


class ReferenceUnavailable(RuntimeError):
    """Java, ZooKeeper or Kafka's class path is missing; the message says how to get it."""


def free_port() -> int:
    """A loopback port nobody listens on now (the JVMs need a number up front)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_libs: Path | None = None


def reference_libs() -> Path:
    """The dir of Kafka's jars, fetched on first use (a no-op when the cache is complete)."""
    global _libs
    if _libs is None:
        if shutil.which("java") is None:
            raise ReferenceUnavailable("java not found: run scripts/setup.sh (Java 17)")
        result = subprocess.run(
            ["bash", str(FETCH_SCRIPT)], capture_output=True, text=True, timeout=900
        )
        if result.returncode != 0:
            raise ReferenceUnavailable(
                f"{FETCH_SCRIPT.name} failed (exit {result.returncode}):\n{result.stderr}"
            )
        _libs = Path(result.stdout.strip().splitlines()[-1])
    return _libs


def _java(*args: str) -> list[str]:
    return ["setpriv", "--pdeathsig", "KILL", "--", "java", *args]


def _log4j_file(name: str, text: str) -> Path:
    """``name`` beside the shared class path, holding ``text``.

    Written to a temporary file and renamed over, so a JVM of another pytest worker (or of
    another checkout sharing the cache) never reads it half written.
    """
    path = reference_libs().parent / name
    if not path.exists() or path.read_text() != text:
        tmp = path.with_name(f".{name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def run_kafka_tool(
    main_class: str,
    *args: str | Path,
    input: str | None = None,
    timeout: float = 120.0,
) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's tools (its ``main``) on the reference class path; never raises on
    a non-zero exit (the caller checks ``returncode``)."""
    log4j = _log4j_file("tools-log4j.properties", _TOOLS_LOG4J)
    command = _java(
        "-Xmx256m",
        *_JVM_FLAGS,
        f"-Dlog4j.configuration=file:{log4j}",
        "-cp",
        f"{reference_libs()}/*",
        main_class,
        *map(str, args),
    )
    return subprocess.run(
        command, input=input, capture_output=True, text=True, timeout=timeout, check=False
    )


def start_kafka_tool(main_class: str, *args: str | Path, log: Path) -> subprocess.Popen[bytes]:
    """Start one of Kafka's tools in the background (a consumer in a group, ...), its output
    to ``log``; the caller stops it by PID (``Popen.terminate``, then ``wait``)."""
    log4j = _log4j_file("tools-log4j.properties", _TOOLS_LOG4J)
    command = _java(
        "-Xmx256m",
        *_JVM_FLAGS,
        f"-Dlog4j.configuration=file:{log4j}",
        "-cp",
        f"{reference_libs()}/*",
        main_class,
        *map(str, args),
    )
    with log.open("ab") as out:
        return subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT
        )


def run_franz_tool(
    tool: str, *args: str | Path, input: str | None = None, timeout: float = 120.0
) -> subprocess.CompletedProcess[str]:
    """``franz <tool> args`` as a subprocess, the counterpart of ``run_kafka_tool``."""
    return subprocess.run(
        [sys.executable, "-m", "franz", tool, *map(str, args)],
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def zookeeper_commands(connect: str, commands: list[str]) -> subprocess.CompletedProcess[str]:
    """Run zookeeper-shell commands (``create /p data``, ``get /p``) in one JVM, from stdin.

    ZooKeeperMain splits each line on spaces: data must not contain any (compact JSON).
    """
    return run_kafka_tool(
        "org.apache.zookeeper.ZooKeeperMain",
        "-server",
        connect,
        input="\n".join([*commands, "quit", ""]),
    )


class _JavaProcess:
    """A JVM we started: its Popen handle, output file and a stop by PID."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.proc: subprocess.Popen[bytes] | None = None
        self.output_path = self.data_dir / "server.out"
        self._offset = 0

    def _spawn(self, command: list[str]) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._offset = self.output_path.stat().st_size if self.output_path.exists() else 0
        with self.output_path.open("ab") as out:
            self.proc = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def output(self) -> str:
        """What this run of the server printed so far."""
        try:
            with self.output_path.open("rb") as f:
                f.seek(self._offset)
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""

    def _died(self) -> bool:
        return self.proc is None or self.proc.poll() is not None

    def stop(self, timeout: float = 60.0) -> int | None:
        """SIGTERM, wait (SIGKILL after ``timeout``), reap; the exit code."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        code = self.proc.returncode
        self.proc = None
        return code

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


class KafkaBroker(_JavaProcess):
    """An Apache Kafka broker (``kafka.Kafka``) in ZooKeeper mode.

    ``zookeeper_connect`` includes the chroot (``127.0.0.1:2181/kafka-a``). ``properties``
    override or add ``server.properties`` keys (``log.segment.bytes``, ...). ``start()`` may
    be called again after ``stop()`` (same log dir, new port).
    """

    def __init__(
        self,
        data_dir: Path,
        zookeeper_connect: str,
        *,
        broker_id: int = 0,
        log_dir: Path | None = None,
        properties: dict[str, str] | None = None,
    ) -> None:
        super().__init__(data_dir)
        self.log_dir = Path(log_dir) if log_dir is not None else self.data_dir / "logs"
        self.properties = {
            "broker.id": str(broker_id),
            "zookeeper.connect": zookeeper_connect,
            "log.dirs": str(self.log_dir),
            "num.partitions": "1",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            **(properties or {}),
        }
        self.port = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 120.0) -> KafkaBroker:
        """Start, and wait for Kafka's ``started`` line.

        ``free_port()`` lets the port go before the JVM binds it, so another process (a
        parallel pytest worker's server or client) may take it meanwhile: Kafka then exits
        with ``Address already in use`` and is started again on another port.
        """
        for _ in range(_BIND_ATTEMPTS - 1):
            try:
                return self._start_once(timeout)
            except _PortTaken:
                continue
        return self._start_once(timeout)

    def _start_once(self, timeout: float) -> KafkaBroker:
        libs = reference_libs()
        self.port = free_port()
        props = {**self.properties, "listeners": f"PLAINTEXT://127.0.0.1:{self.port}"}
        config = self.data_dir / "server.properties"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        log4j = _log4j_file("broker-log4j.properties", _BROKER_LOG4J)
        self._spawn(
            _java(
                "-Xms128m",
                "-Xmx512m",
                *_JVM_FLAGS,
                f"-Dlog4j.configuration=file:{log4j}",
                "-cp",
                f"{libs}/*",
                "kafka.Kafka",
                str(config),
            )
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if _KAFKA_STARTED in self.output():
                return self
            if self._died():
                output = self.output()
                self.stop()
                if _ADDRESS_IN_USE in output:
                    raise _PortTaken(f"Kafka could not bind port {self.port}:\n{output[-20000:]}")
                raise RuntimeError(f"Kafka exited early:\n{output[-20000:]}")
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"Kafka did not start within {timeout} s:\n{self.output()[-20000:]}")

    def wait_for_controller(self, timeout: float = 120.0) -> None:
        """Wait until the cluster has a controller this broker's Metadata names.

        Kafka prints ``started`` before its controller is elected (``KafkaController`` works
        through its own event queue), and a broker learns the controller only from the
        controller's UpdateMetadata. librdkafka's admin calls (CreateTopics, ...) look the
        controller up in one Metadata answer and wait for the whole operation timeout when it
        is ``-1`` ("Failed while waiting for controller"). So: ``/controller`` and this
        broker's ``/brokers/ids/<id>`` exist in the chroot, then Metadata names a controller.
        """
        deadline = time.monotonic() + timeout
        broker_id = self.properties["broker.id"]
        zk = KazooClient(hosts=self.properties["zookeeper.connect"])
        zk.start(timeout=max(1.0, deadline - time.monotonic()))
        try:
            while not (zk.exists("/controller") and zk.exists(f"/brokers/ids/{broker_id}")):
                if time.monotonic() > deadline or self._died():
                    raise RuntimeError(
                        f"no /controller or /brokers/ids/{broker_id} within {timeout} s:\n"
                        f"{self.output()[-20000:]}"
                    )
                time.sleep(0.1)
        finally:
            zk.stop()
            zk.close()
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 2})
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self._died():
                raise RuntimeError(
                    f"Metadata named no controller within {timeout} s:\n{self.output()[-20000:]}"
                )
            try:
                if admin.list_topics(timeout=min(10.0, remaining)).controller_id >= 0:
                    return
            except KafkaException:
                pass  # a Metadata request timed out: ask again
            time.sleep(0.1)

    def stop(self, timeout: float = 60.0) -> int | None:
        """Controlled shutdown (SIGTERM); a clean stop exits with 143 and logs
        ``shut down completed``."""
        return super().stop(timeout)

    def stopped_cleanly(self) -> bool:
        return "shut down completed (kafka.server.KafkaServer)" in self.output()

    def __enter__(self) -> KafkaBroker:
        return self.start()
