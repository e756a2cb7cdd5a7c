"""The suite's reference servers (Redis, NATS JetStream) and the parsing of their tools' output.

Each server is started by the suite on a free loopback port with a data directory of its own
inside the suite's temp dir, its whole configuration on the command line (no config file, no
system service touched), registered by PID in ``broker_clients.CHILDREN`` so the suite's exit
path can kill it, and stopped by PID (SIGTERM, then SIGKILL after a grace period):

- :class:`RedisServer`: Debian's ``redis-server`` with ``appendonly yes`` and ``appendfsync
  everysec`` (the AOF, fsynced once a second: Redis's durable setting closest to a Kafka
  broker's page-cache writes), ``save ""`` (no RDB snapshots in the middle of a run);
- :class:`NatsServer`: Debian's ``nats-server -js`` with JetStream's file storage under
  ``--store_dir``.

The pure parsers at the top (``redis-benchmark --csv`` and plain output) are unit-tested with
output captured from the installed binary.
"""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from bench.broker_clients import ProcSample, register, sample_process, unregister

__all__ = [
    "NatsServer",
    "RedisBenchmark",
    "RedisServer",
    "free_port",
    "parse_redis_benchmark",
    "redis_benchmark_args",
    "tool_version",
]


# -- redis-benchmark output (pure) -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RedisBenchmark:
    """One ``redis-benchmark`` test's summary: requests/s and latencies in ms (None if absent)."""

    test: str
    rps: float
    avg_ms: float | None = None
    p50_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None


_SUMMARY = re.compile(r"throughput summary:\s*([\d.]+)\s*requests per second")
_QUIET = re.compile(r"([\d.]+) requests per second(?:, p50=([\d.]+) msec)?")


def _num(value: str | None) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except ValueError:
        return None


def parse_redis_benchmark(output: str) -> RedisBenchmark:
    """The result of a one-command ``redis-benchmark`` run, in any of its three formats.

    ``--csv`` (Redis 7): a header line ``"test","rps","avg_latency_ms",...`` then one quoted
    row per test; the plain format's ``throughput summary: N requests per second`` and
    ``latency summary (msec)`` block; ``-q``'s ``TEST: N requests per second, p50=X msec``
    (after carriage-return progress lines). ValueError if none is found.
    """
    text = output.replace("\r", "\n")
    if '"rps"' in text:
        start = text.index('"test"')
        rows = list(csv.DictReader(io.StringIO(text[start:])))
        if rows and _num(rows[-1].get("rps")) is not None:
            row = rows[-1]
            return RedisBenchmark(
                test=row.get("test", ""),
                rps=float(row["rps"]),
                avg_ms=_num(row.get("avg_latency_ms")),
                p50_ms=_num(row.get("p50_latency_ms")),
                p99_ms=_num(row.get("p99_latency_ms")),
                max_ms=_num(row.get("max_latency_ms")),
            )
    match = _SUMMARY.search(text)
    if match:
        lines = text.splitlines()
        avg = p50 = p99 = mx = None
        for i, line in enumerate(lines):
            if line.strip().startswith("avg") and "p50" in line and i + 1 < len(lines):
                names, values = line.split(), lines[i + 1].split()
                got = dict(zip(names, values, strict=False))
                avg, p50 = _num(got.get("avg")), _num(got.get("p50"))
                p99, mx = _num(got.get("p99")), _num(got.get("max"))
        test = next((ln.strip(" =") for ln in lines if ln.startswith("====")), "")
        return RedisBenchmark(test, float(match.group(1)), avg, p50, p99, mx)
    for line in reversed(text.splitlines()):
        found = _QUIET.search(line)
        if found and "rps=" not in line:
            test = line[: found.start()].rstrip(": ")
            return RedisBenchmark(test, float(found.group(1)), p50_ms=_num(found.group(2)))
    raise ValueError(f"no redis-benchmark result in the output:\n{output[-1000:]}")


def redis_benchmark_args(
    port: int, key: str, value: str, requests: int, clients: int, pipeline: int
) -> list[str]:
    """``redis-benchmark`` running only ``XADD key * v <value>``, ``--csv`` output."""
    if "\n" in value or "\r" in value:
        raise ValueError("redis-benchmark splits its output on newlines: no newline in value")
    return [
        "redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-n", str(requests),
        "-c", str(clients), "-P", str(pipeline), "--csv", "XADD", key, "*", "v", value,
    ]  # fmt: skip


# -- the servers --------------------------------------------------------------------------------


def free_port() -> int:
    """A loopback port free right now (the server binds it a moment later; races are rare)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def tool_version(args: list[str]) -> str:
    """The first line a ``--version`` style command prints, or ``?``."""
    try:
        out = subprocess.run(args, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else "?"


class _Server:
    """A server child on a free loopback port, with its own data dir; stopped by PID."""

    name = "server"
    stop_signal = signal.SIGTERM

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir)
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def args(self) -> list[str]:
        raise NotImplementedError

    def ready(self) -> bool:
        raise NotImplementedError

    def sample(self) -> ProcSample | None:
        return sample_process(self.proc.pid) if self.proc is not None else None

    def log_tail(self) -> str:
        try:
            return (self.data_dir / "server.log").read_text(errors="replace")[-1500:]
        except OSError:
            return ""

    def start(self, timeout: float = 20.0) -> _Server:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        log = (self.data_dir / "server.log").open("ab")
        try:
            self.proc = subprocess.Popen(
                self.args(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
        finally:
            log.close()
        register(self.proc.pid, self)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                tail = self.log_tail()
                self._forget()
                raise RuntimeError(f"{self.name} exited early:\n{tail}")
            with contextlib.suppress(OSError):
                if self.ready():
                    return self
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"{self.name} did not answer within {timeout} s:\n{self.log_tail()}")

    def stop(self, timeout: float = 15.0) -> int:
        """``stop_signal`` to our PID, wait, SIGKILL if it lingers; the exit code (0 if clean)."""
        if self.proc is None:
            return 0
        if self.proc.poll() is None:
            self.proc.send_signal(self.stop_signal)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                return -9
        code = self.proc.returncode if self.proc is not None else -9
        self._forget()
        return code

    def kill(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self._forget()

    def _forget(self) -> None:
        if self.proc is not None:
            unregister(self.proc.pid)
        self.proc = None


class RedisServer(_Server):
    """``redis-server`` with the AOF on (``appendfsync everysec``), no RDB, loopback only."""

    name = "redis-server"

    def args(self) -> list[str]:
        return [
            "redis-server",
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--protected-mode", "yes",
            "--dir", str(self.data_dir),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            "--save", "",
            "--daemonize", "no",
            "--logfile", "",  # stdout, which start() sends to server.log
        ]  # fmt: skip

    def ready(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as s:
            s.sendall(b"PING\r\n")
            return s.recv(64).startswith(b"+PONG")


class NatsServer(_Server):
    """``nats-server -js`` with JetStream file storage in the data dir, loopback only."""

    name = "nats-server"
    # nats-server shuts down cleanly on SIGTERM too, but exits 1; SIGINT (its ``--signal
    # quit``) is the same orderly JetStream shutdown with exit code 0.
    stop_signal = signal.SIGINT

    def args(self) -> list[str]:
        return [
            "nats-server", "-js", "-a", "127.0.0.1", "-p", str(self.port),
            "-sd", str(self.data_dir / "jetstream"),
        ]  # fmt: skip

    def ready(self) -> bool:
        with socket.create_connection(("127.0.0.1", self.port), timeout=1.0) as s:
            # the client port opens after JetStream has recovered its store
            return s.recv(4096).startswith(b"INFO")

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"
