"""The broker bench's processes: timed children, the mock cluster, the Python client runs.

Everything the broker bench starts is a child process, and every child is registered in
:data:`CHILDREN` while it lives, so :func:`stop_all` can end them by PID on Ctrl-C or an
exception. Three kinds:

- **timed commands** (:func:`run_timed`): ``kcat``, or ``python -m bench.broker_clients
  client|latency``; timed from spawn to exit (``os.wait4`` in a helper thread, which also
  gives the child's own user+sys CPU and peak RSS), killed at a deadline;
- **the mock cluster** (:class:`MockCluster`): librdkafka's in-process mock broker
  (``rd_kafka_mock_cluster_new``, the same code ``test.mock.num.brokers`` starts) hosted in
  a process of its own through ``ctypes`` on confluent-kafka's bundled librdkafka, so that
  (a) it can hold topics with any partition count (``rd_kafka_mock_topic_create``; a mock
  started by ``test.mock.num.brokers`` auto-creates every topic with 4 partitions, its
  hard-coded ``defaults.partition_cnt``) and (b) its CPU and RSS can be read from /proc like
  the broker's. It reads commands on stdin (``topic NAME PARTITIONS``) and exits at EOF, so
  it also ends when the bench dies;
- **client runs** (``python -m bench.broker_clients client|latency``): confluent-kafka
  producer/consumer loops that print one JSON line of results.

The pure parsers (/proc files, the JSON line) are at the top and unit-tested.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import ctypes
import glob
import json
import os
import random
import resource
import select
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "CHILDREN",
    "ChildRun",
    "MockCluster",
    "ProcSample",
    "create_topic",
    "make_input",
    "offsets",
    "parse_json_line",
    "parse_proc_stat",
    "parse_proc_status",
    "python_child",
    "register",
    "run_timed",
    "sample_process",
    "stop_all",
    "unregister",
]

MiB = 1024 * 1024
CLK_TCK = os.sysconf("SC_CLK_TCK")
REPO = Path(__file__).resolve().parents[1]
BENCH_GROUP = "franz-bench"  # confluent-kafka's Consumer insists on a group.id; no commits


# -- /proc parsing (pure) ---------------------------------------------------------------------


def parse_proc_stat(text: str) -> tuple[int, int]:
    """``(utime, stime)`` in clock ticks from a ``/proc/<pid>/stat`` line.

    The second field (``comm``) is in parentheses and may itself hold spaces and
    parentheses, so fields are counted from the *last* ``)``: after it come ``state`` (field
    3), ..., ``utime`` (14) and ``stime`` (15), i.e. indexes 11 and 12 of the rest.
    """
    rest = text[text.rindex(")") + 1 :].split()
    return int(rest[11]), int(rest[12])


def parse_proc_status(text: str) -> dict[str, int]:
    """The ``Vm*`` and ``Rss*`` lines of ``/proc/<pid>/status``, in KiB (``VmRSS: 123 kB``)."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.startswith(("Vm", "Rss")):
            parts = value.split()
            if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
                out[key] = int(parts[0])
    return out


def parse_json_line(output: str) -> dict[str, Any]:
    """The last line of ``output`` that is a JSON object (client children print one)."""
    for line in reversed(output.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            value = json.loads(line)
            if isinstance(value, dict):
                return value
    raise ValueError(f"no JSON result line in the output:\n{output[-2000:]}")


@dataclass(frozen=True, slots=True)
class ProcSample:
    """A process's CPU seconds (user + sys, itself only) and memory now (MiB)."""

    cpu_s: float
    rss_mib: float
    hwm_mib: float


def sample_process(pid: int) -> ProcSample | None:
    """Read ``/proc/<pid>/stat`` and ``status``; None once the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        status = parse_proc_status(Path(f"/proc/{pid}/status").read_text())
    except (OSError, ValueError):
        return None
    utime, stime = parse_proc_stat(stat)
    return ProcSample(
        cpu_s=(utime + stime) / CLK_TCK,
        rss_mib=status.get("VmRSS", 0) / 1024,
        hwm_mib=status.get("VmHWM", 0) / 1024,
    )


# -- children ---------------------------------------------------------------------------------


class _Stoppable(Protocol):
    def kill(self) -> None: ...


CHILDREN: dict[int, _Stoppable | subprocess.Popen[bytes]] = {}
"""Every live child by PID: timed commands, the mock clusters, brokers registered by the bench."""


def register(pid: int, owner: _Stoppable | subprocess.Popen[bytes]) -> None:
    CHILDREN[pid] = owner


def unregister(pid: int) -> None:
    CHILDREN.pop(pid, None)


def stop_all() -> None:
    """SIGKILL every registered child by its PID (the bench's exit path; idempotent)."""
    for pid, owner in list(CHILDREN.items()):
        with contextlib.suppress(Exception):
            if isinstance(owner, subprocess.Popen):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            else:
                owner.kill()
        CHILDREN.pop(pid, None)


@dataclass(slots=True)
class ChildRun:
    """One timed child: wall seconds from spawn to exit, its CPU and peak RSS (wait4)."""

    args: list[str]
    seconds: float
    returncode: int
    cpu_s: float
    maxrss_mib: float
    out_bytes: int = 0
    first_out_s: float | None = None
    last_out_s: float | None = None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe_failure(self) -> str:
        why = "timed out" if self.timed_out else f"exit code {self.returncode}"
        tail = "\n".join(self.stderr.strip().splitlines()[-8:])
        return f"{' '.join(self.args[:3])} ... {why}" + (f":\n{tail}" if tail else "")


def run_timed(
    args: Sequence[str],
    *,
    timeout: float,
    stdin_path: Path | None = None,
    stdout: str = "devnull",
    progress: Callable[[float], None] | None = None,
    progress_every: float = 5.0,
    env: dict[str, str] | None = None,
) -> ChildRun:
    """Run ``args`` to completion (or SIGKILL at ``timeout`` s) and time it.

    ``stdout``: ``"devnull"``; ``"count"`` (count the bytes and note when the first and last
    arrived, relative to spawn: a consumer printing one byte per record gives its stream
    rate without its start-up); ``"capture"`` (keep it, for the client children's JSON line).
    stderr always goes to a pipe drained by a thread (kept, for failure messages).
    ``progress(elapsed)`` is called every ``progress_every`` s while the child runs.
    """
    args = [str(a) for a in args]
    stdin = stdin_path.open("rb") if stdin_path is not None else subprocess.DEVNULL
    out_mode = subprocess.DEVNULL if stdout == "devnull" else subprocess.PIPE
    started = time.perf_counter()
    try:
        proc = subprocess.Popen(
            args, stdin=stdin, stdout=out_mode, stderr=subprocess.PIPE, env=env, cwd=REPO
        )
    finally:
        if stdin_path is not None and not isinstance(stdin, int):
            stdin.close()
    register(proc.pid, proc)
    waited: dict[str, Any] = {}

    def reap() -> None:
        _, status, usage = os.wait4(proc.pid, 0)
        waited["end"] = time.perf_counter()
        waited["status"] = status
        waited["usage"] = usage

    err_chunks: list[bytes] = []
    assert proc.stderr is not None
    err_thread = threading.Thread(
        target=lambda: err_chunks.extend(iter(lambda: proc.stderr.read(65536), b"")),  # type: ignore[union-attr]
        daemon=True,
    )
    reaper = threading.Thread(target=reap, daemon=True)
    err_thread.start()
    reaper.start()
    deadline = started + timeout
    next_progress = started + progress_every
    out = bytearray()
    count, first, last = 0, None, None
    timed_out = False
    try:
        fd = proc.stdout.fileno() if proc.stdout is not None else None
        while True:
            now = time.perf_counter()
            if now >= deadline:
                timed_out = True
                break
            if now >= next_progress:
                if progress is not None:
                    progress(now - started)
                next_progress = now + progress_every
            wait = max(0.0, min(deadline, next_progress) - now)
            if fd is None:
                reaper.join(min(wait, 1.0))
                if not reaper.is_alive():
                    break
                continue
            ready, _, _ = select.select([fd], [], [], min(wait, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            t = time.perf_counter()
            if first is None:
                first = t
            last = t
            count += len(chunk)
            if stdout == "capture":
                out += chunk
        if not timed_out:
            reaper.join(max(0.0, deadline - time.perf_counter()))
            timed_out = reaper.is_alive()
    finally:
        if reaper.is_alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
            reaper.join(5.0)
        unregister(proc.pid)
        err_thread.join(2.0)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    status = waited.get("status", 0)
    proc.returncode = os.waitstatus_to_exitcode(status) if "status" in waited else -9
    usage = waited.get("usage")
    return ChildRun(
        args=args,
        seconds=waited.get("end", time.perf_counter()) - started,
        returncode=proc.returncode,
        cpu_s=(usage.ru_utime + usage.ru_stime) if usage else 0.0,
        maxrss_mib=(usage.ru_maxrss / 1024) if usage else 0.0,
        out_bytes=count,
        first_out_s=None if first is None else first - started,
        last_out_s=None if last is None else last - started,
        stdout=out.decode(errors="replace"),
        stderr=b"".join(err_chunks).decode(errors="replace"),
        timed_out=timed_out,
    )


def python_child(command: str, *args: object) -> list[str]:
    """argv for ``python -m bench.broker_clients <command> <args>``."""
    return [sys.executable, "-m", "bench.broker_clients", command, *(str(a) for a in args)]


# -- files ------------------------------------------------------------------------------------


def make_input(path: Path, records: int, value_size: int = 100, seed: int = 1) -> int:
    """Write ``records`` lines of ``value_size`` random base64 characters + ``\\n``.

    kcat -P sends each line as one keyless record (the newline is the delimiter, not sent).
    Values are distinct and incompressible-looking, like the storage bench's. Returns bytes.
    """
    raw = value_size * 3 // 4 + 3
    chunk = 50_000
    written = 0
    rng = random.Random(seed)
    with path.open("wb") as f:
        left = records
        while left > 0:
            n = min(chunk, left)
            blob = base64.b64encode(rng.randbytes(raw * n))
            step = len(blob) // n
            lines = [blob[i * step : i * step + value_size] for i in range(n)]
            data = b"\n".join(lines) + b"\n"
            f.write(data)
            written += len(data)
            left -= n
    return written


# -- the mock cluster in its own process --------------------------------------------------------


class MockCluster:
    """librdkafka's mock cluster (1 broker) in a child process; topics made on request."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[str] | None = None
        self.bootstrap = ""

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 20.0) -> MockCluster:
        self.proc = subprocess.Popen(
            python_child("mock"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            cwd=REPO,
        )
        register(self.proc.pid, self)
        self.bootstrap = self._reply(timeout).removeprefix("bootstrap ")
        return self

    def _reply(self, timeout: float) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline().strip() if ready else ""
        if not line:
            self.kill()
            raise RuntimeError("the mock cluster process did not answer")
        return line

    def create_topic(self, name: str, partitions: int) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(f"topic {name} {partitions}\n")
        self.proc.stdin.flush()
        reply = self._reply(10.0)
        if reply != "ok":
            raise RuntimeError(f"mock: creating topic {name}: {reply}")

    def stop(self) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(BrokenPipeError, OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        try:
            self.proc.wait(5.0)
        except subprocess.TimeoutExpired:
            self.kill()
        self._forget()

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
            for stream in (self.proc.stdin, self.proc.stdout):
                with contextlib.suppress(Exception):
                    stream.close()  # type: ignore[union-attr]
        self.proc = None


def _librdkafka() -> ctypes.CDLL:
    import confluent_kafka

    libs = Path(confluent_kafka.__file__).resolve().parent.parent / "confluent_kafka.libs"
    found = sorted(glob.glob(str(libs / "librdkafka*.so*")))
    lib = ctypes.CDLL(found[0] if found else "librdkafka.so.1")
    vp, cp, i = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    lib.rd_kafka_conf_new.restype = vp
    lib.rd_kafka_conf_set.argtypes = [vp, cp, cp, cp, ctypes.c_size_t]
    lib.rd_kafka_new.restype = vp
    lib.rd_kafka_new.argtypes = [i, vp, cp, ctypes.c_size_t]
    lib.rd_kafka_mock_cluster_new.restype = vp
    lib.rd_kafka_mock_cluster_new.argtypes = [vp, i]
    lib.rd_kafka_mock_cluster_bootstraps.restype = cp
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [vp]
    lib.rd_kafka_mock_topic_create.restype = i
    lib.rd_kafka_mock_topic_create.argtypes = [vp, cp, i, i]
    return lib


def _mock_main() -> int:
    """Child: host a 1-broker mock cluster; ``topic NAME N`` makes a topic; EOF ends it."""
    lib = _librdkafka()
    errstr = ctypes.create_string_buffer(512)
    conf = lib.rd_kafka_conf_new()
    lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, 512)  # no "no bootstrap" warning
    rk = lib.rd_kafka_new(0, conf, errstr, 512)  # RD_KAFKA_PRODUCER; only hosts the mock
    if not rk:
        print(f"error {errstr.value.decode()}", flush=True)
        return 1
    cluster = lib.rd_kafka_mock_cluster_new(rk, 1)
    print(f"bootstrap {lib.rd_kafka_mock_cluster_bootstraps(cluster).decode()}", flush=True)
    for line in sys.stdin:
        parts = line.split()
        if len(parts) == 3 and parts[0] == "topic":
            err = lib.rd_kafka_mock_topic_create(cluster, parts[1].encode(), int(parts[2]), 1)
            print("ok" if err == 0 else f"error {err}", flush=True)
        else:
            print(f"error unknown command {line.strip()!r}", flush=True)
    os._exit(0)  # the mock's threads need no orderly teardown


# -- admin from the bench process ---------------------------------------------------------------


def create_topic(bootstrap: str, name: str, partitions: int, timeout: float = 30.0) -> str:
    """Create ``name`` with ``partitions`` (replication factor 1) on a real broker.

    CreateTopics first (confluent-kafka's AdminClient); if the broker refuses it (say, it
    does not implement the API yet), fall back to auto-creation by a Metadata request with
    ``allow_auto_topic_creation`` (the broker then applies its ``num.partitions``). Returns
    ``"created"`` or ``"auto-created (...)"``; waits until every partition has a leader.
    """
    from confluent_kafka import KafkaError, KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    how = "created"
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    future = admin.create_topics(
        [NewTopic(name, partitions, 1)], operation_timeout=timeout, request_timeout=timeout
    )[name]
    try:
        future.result(timeout)
    except KafkaException as exc:
        error = exc.args[0]
        if error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
            how = f"auto-created (CreateTopics failed: {error.str()})"
    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    deadline = time.monotonic() + timeout
    while True:
        topic = producer.list_topics(name, timeout=timeout).topics.get(name)
        if (
            topic is not None
            and topic.error is None
            and topic.partitions
            and all(p.leader >= 0 for p in topic.partitions.values())
        ):
            if len(topic.partitions) != partitions:
                how += f"; {len(topic.partitions)} partitions, not {partitions}"
            del producer, admin  # destroyed now, not after the broker has gone
            return how
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {name} has no leaders after {timeout} s")
        time.sleep(0.05)


def offsets(bootstrap: str, topic: str, timeout: float = 10.0) -> dict[int, tuple[int, int]]:
    """``{partition: (log start offset, high watermark)}`` of ``topic`` (ListOffsets)."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": BENCH_GROUP, "log_level": 3})
    try:
        meta = consumer.list_topics(topic, timeout=timeout).topics[topic]
        return _watermarks(consumer, topic, sorted(meta.partitions))
    finally:
        consumer.close()


# -- confluent-kafka client runs (children) ----------------------------------------------------


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _client_conf(args: argparse.Namespace) -> dict[str, Any]:
    conf: dict[str, Any] = {"bootstrap.servers": args.bootstrap, "log_level": 3}
    if args.mock_in_client:
        conf["test.mock.num.brokers"] = 1  # the mock lives in this producer
    return conf


def _watermarks(consumer: Any, topic: str, partitions: list[int]) -> dict[int, tuple[int, int]]:
    from confluent_kafka import TopicPartition

    return {
        p: tuple(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10.0))
        for p in partitions
    }


def _open_producer(args: argparse.Namespace, extra: dict[str, Any]) -> tuple[Any, str, list[int]]:
    """A producer, the bootstrap its consumers should use, and the topic's partitions."""
    from confluent_kafka import Producer

    producer = Producer({**_client_conf(args), **extra})
    deadline = time.monotonic() + 20.0
    while True:
        md = producer.list_topics(args.topic, timeout=10.0)
        topic = md.topics.get(args.topic)
        if topic is not None and topic.error is None and topic.partitions:
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {args.topic} not available: {topic and topic.error}")
        time.sleep(0.1)
    bootstrap = args.bootstrap
    if args.mock_in_client:
        broker = next(iter(md.brokers.values()))
        bootstrap = f"{broker.host}:{broker.port}"
    return producer, bootstrap, sorted(topic.partitions)


def _consumer(bootstrap: str, extra: dict[str, Any]) -> Any:
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": BENCH_GROUP,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": False,
            "fetch.queue.backoff.ms": 10,  # librdkafka 2.x's 1000 ms default caps consumers
            "log_level": 3,
            **extra,
        }
    )


def _client_main(args: argparse.Namespace) -> dict[str, Any]:
    """Child: produce ``records`` values of ``value_size`` B (acks=1), then consume back."""
    from confluent_kafka import OFFSET_BEGINNING, TopicPartition

    producer, bootstrap, partitions = _open_producer(args, {"acks": 1})
    probe = _consumer(bootstrap, {})
    before = _watermarks(probe, args.topic, partitions)
    values = [os.urandom(args.value_size) for _ in range(1024)]
    produce, poll, topic, n = producer.produce, producer.poll, args.topic, args.records
    deadline = time.perf_counter() + args.timeout
    cpu0, t0 = _cpu(), time.perf_counter()
    for i in range(n):
        value = values[i & 1023]
        while True:
            try:
                produce(topic, value)
                break
            except BufferError:
                poll(0.001)
        if not i & 0x3FFF:
            poll(0)
            if time.perf_counter() > deadline:
                break
    left = producer.flush(max(1.0, deadline - time.perf_counter()))
    t1, cpu1 = time.perf_counter(), _cpu()
    after = _watermarks(probe, args.topic, partitions)
    acked = sum(after[p][1] - before[p][1] for p in partitions)
    result: dict[str, Any] = {
        "bootstrap": bootstrap,
        "partitions": len(partitions),
        "produce": {
            "records": n,
            "acked": acked,
            "unflushed": left,
            "seconds": t1 - t0,
            "cpu_s": cpu1 - cpu0,
            "per_partition": [after[p][1] - before[p][1] for p in partitions],
        },
    }
    probe.close()
    if args.consume:
        held = sum(after[p][1] - after[p][0] for p in partitions)
        consumer = _consumer(bootstrap, {})
        got, deadline = 0, time.perf_counter() + args.timeout
        cpu0, t0 = _cpu(), time.perf_counter()
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        consume = consumer.consume
        errors = 0
        while got < held and time.perf_counter() < deadline:
            # never ask for more than is left: consume() waits for num_messages or the timeout
            batch = consume(num_messages=min(10_000, held - got), timeout=1.0)
            ok = sum(1 for m in batch if m.error() is None)
            got += ok
            errors += len(batch) - ok
        t1, cpu1 = time.perf_counter(), _cpu()
        consumer.close()
        result["consume"] = {
            "records": got,
            "expected": held,
            "errors": errors,
            "seconds": t1 - t0,
            "cpu_s": cpu1 - cpu0,
        }
    return result


_STAMP = struct.Struct(">qq")  # sequence number, perf_counter_ns() at send


def _latency_main(args: argparse.Namespace) -> dict[str, Any]:
    """Child: one record at a time to partition 0 (``--acks``, 1 by default), a long-polling
    consumer, same clock."""
    from confluent_kafka import OFFSET_END, TopicPartition

    producer, bootstrap, _ = _open_producer(
        args, {"acks": args.acks, "linger.ms": 0, "socket.nagle.disable": True}
    )
    consumer = _consumer(
        bootstrap,
        {
            "fetch.wait.max.ms": args.fetch_wait_ms,
            "fetch.min.bytes": 1,
            "socket.nagle.disable": True,
        },
    )
    consumer.assign([TopicPartition(args.topic, 0, OFFSET_END)])
    pad = bytes(max(0, args.value_size - _STAMP.size))
    clock = time.perf_counter_ns

    def send(seq: int) -> None:
        producer.produce(args.topic, _STAMP.pack(seq, clock()) + pad, partition=0)
        producer.poll(0)

    # Warm-up: until a record makes the round trip (the consumer's position is resolved).
    warm_deadline = time.monotonic() + args.warmup_s
    seen = False
    while not seen and time.monotonic() < warm_deadline:
        send(-1)
        for _ in range(20):
            msg = consumer.poll(0.05)
            if msg is not None and msg.error() is None:
                seen = True
                break
    if not seen:
        raise RuntimeError("latency warm-up: no record came back")
    while (msg := consumer.poll(0.2)) is not None:  # drain the warm-up records
        pass

    interval = 1e9 / args.rate
    latencies: list[int] = []
    sent = received = 0
    start = clock()
    next_send, end = start, start + int(args.seconds * 1e9)
    while True:
        now = clock()
        if now >= next_send and now < end:
            send(sent)
            sent += 1
            next_send += interval
            continue
        if now >= end and received >= sent:
            break
        if now >= end + 2_000_000_000:
            break  # lost records: counted below
        wait_ms = max(0.0, (min(next_send, end) - now) / 1e6) if now < end else 100.0
        msg = consumer.poll(wait_ms / 1000.0)
        if msg is None or msg.error() is not None:
            continue
        got = clock()
        seq, stamp = _STAMP.unpack_from(msg.value())
        if seq >= 0:
            latencies.append((got - stamp) // 1000)
            received += 1
    producer.flush(5.0)
    consumer.close()
    return {"latencies_us": latencies, "sent": sent, "received": received, "bootstrap": bootstrap}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.broker_clients")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("mock", help="host a mock cluster; reads 'topic NAME N' lines; EOF ends it")
    for name in ("client", "latency"):
        c = sub.add_parser(name)
        c.add_argument("--bootstrap", default="127.0.0.1:9")
        c.add_argument("--mock-in-client", action="store_true")
        c.add_argument("--topic", required=True)
        c.add_argument("--value-size", type=int, default=100)
        c.add_argument("--timeout", type=float, default=60.0)
        if name == "client":
            c.add_argument("--records", type=int, required=True)
            c.add_argument("--consume", action="store_true")
        else:
            c.add_argument("--rate", type=float, default=1000.0)
            c.add_argument("--seconds", type=float, default=5.0)
            c.add_argument("--fetch-wait-ms", type=int, default=500)
            c.add_argument("--warmup-s", type=float, default=15.0)
            c.add_argument("--acks", default="1", help="the producer's acks (1; all, 0)")
    args = p.parse_args(argv)
    if args.command == "mock":
        return _mock_main()
    run = _client_main if args.command == "client" else _latency_main
    print(json.dumps(run(args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
