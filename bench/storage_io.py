"""The storage bench's building blocks: batches, timed loops, the socket drain, read runs.

Everything here is timed by the caller's rules: loops take a deadline (``time.perf_counter``
value) and return how much they did and whether the deadline cut them short; the read runs
return a ``Run``. See ``bench/storage_bench.py`` for the scenarios and ``bench/README.md``.
"""

from __future__ import annotations

import contextlib
import os
import random
import resource
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.report import Run
from franz.protocol.records.inflated import RecordBatchBuilder
from franz.storage.log import Log
from franz.storage.log_manager import LogManager

__all__ = [
    "VALUE_SIZE",
    "BatchTemplate",
    "Drain",
    "GiB",
    "KeptLog",
    "KiB",
    "MiB",
    "Range",
    "build_template",
    "chunk_ranges",
    "cpu_seconds",
    "franz_append_loop",
    "franz_ranges",
    "franz_read_run",
    "fwrite",
    "make_pool",
    "maxrss_mib",
    "reset_only_loop",
    "sendfile_run",
    "write_loop",
]

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

VALUE_SIZE = 100
SEED = 20240917
_BASE_OFFSET = struct.Struct(">q")
_LENGTH = struct.Struct(">q")

# The far end of the loopback socket: reads a length, drains that many bytes, acks.
_DRAIN = r"""
import socket, struct, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
buf = memoryview(bytearray(1 << 20))
while True:
    head = b""
    while len(head) < 8:
        chunk = s.recv(8 - len(head))
        if not chunk:
            sys.exit(0)
        head += chunk
    (n,) = struct.unpack(">q", head)
    if n < 0:
        break
    while n:
        got = s.recv_into(buf, min(n, len(buf)))
        if not got:
            sys.exit(1)
        n -= got
    s.sendall(b"k")
s.close()
"""


# -- batches --------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchTemplate:
    """One real v2 batch (uncompressed, ~100 B values), as a client would send it."""

    label: str
    data: bytes
    records: int

    @property
    def size(self) -> int:
        return len(self.data)


def build_template(label: str, target_size: int, seed: int = SEED) -> BatchTemplate:
    """The largest batch of ``VALUE_SIZE``-byte records no bigger than ``target_size``."""
    rng = random.Random(seed)
    values: list[bytes] = []
    timestamp = time.time_ns() // 1_000_000

    def build(n: int) -> bytes:
        while len(values) < n:
            values.append(rng.randbytes(VALUE_SIZE))
        builder = RecordBatchBuilder()
        for value in values[:n]:
            builder.append(timestamp, None, value)
        return bytes(builder.build())

    n = max(1, target_size // (VALUE_SIZE + 10))
    data = build(n)
    per_record = max(1.0, (len(data) - 61) / n)
    n = max(1, int((target_size - 61) / per_record))
    data = build(n)
    while len(data) > target_size and n > 1:
        n -= 1
        data = build(n)
    while True:
        bigger = build(n + 1)
        if len(bigger) > target_size:
            break
        n, data = n + 1, bigger
    return BatchTemplate(label, data, n)


def make_pool(template: BatchTemplate, pool_bytes: int, batches: int) -> list[bytearray]:
    """Distinct writable copies, cycled through by the timed loops."""
    count = max(1, min(batches, pool_bytes // template.size))
    return [bytearray(template.data) for _ in range(count)]


# -- timed loops ----------------------------------------------------------------------------


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def maxrss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _chunks(pool: list[bytearray], total: int) -> Callable[[int], list[bytearray]]:
    k = len(pool)
    return lambda done: pool if total - done >= k else pool[: total - done]


def franz_append_loop(log: Log, pool: list[bytearray], n: int, deadline: float) -> tuple[int, bool]:
    """Append ``n`` batches from ``pool``; returns (batches appended, cut by the deadline)."""
    append = log.append_as_leader
    reset = _BASE_OFFSET.pack_into
    chunk = _chunks(pool, n)
    clock = time.perf_counter
    done = 0
    while done < n:
        part = chunk(done)
        for buf in part:
            reset(buf, 0, 0)  # franz patched baseOffset on the previous pass; clients send 0
            append(buf, leader_epoch=0)
        done += len(part)
        if done < n and clock() > deadline:
            return done, True
    return done, False


def reset_only_loop(pool: list[bytearray], n: int) -> float:
    """Seconds the franz loop spends outside franz (pool iteration + baseOffset reset)."""
    reset = _BASE_OFFSET.pack_into
    chunk = _chunks(pool, n)
    sink = len
    done = 0
    start = time.perf_counter()
    while done < n:
        part = chunk(done)
        for buf in part:
            reset(buf, 0, 0)
            sink(buf)  # stands in for the call to append
        done += len(part)
    return time.perf_counter() - start


def write_loop(
    write: Callable[[Any, bytearray], Any],
    target: Any,
    pool: list[bytearray],
    n: int,
    deadline: float,
) -> tuple[int, bool]:
    chunk = _chunks(pool, n)
    clock = time.perf_counter
    done = 0
    while done < n:
        part = chunk(done)
        for buf in part:
            write(target, buf)
        done += len(part)
        if done < n and clock() > deadline:
            return done, True
    return done, False


def fwrite(f: Any, buf: bytearray) -> int:
    return int(f.write(buf))


@dataclass
@dataclass
class KeptLog:
    manager: LogManager
    log: Log
    template: BatchTemplate
    directory: Path


class Drain:
    """A loopback TCP connection whose far end, another process, discards what it gets."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(30)
        port = self.listener.getsockname()[1]
        self.proc = subprocess.Popen([sys.executable, "-c", _DRAIN, str(port)])
        try:
            self.sock, _ = self.listener.accept()
        except BaseException:
            self.proc.kill()
            self.proc.wait()
            self.listener.close()
            raise
        self.sock.settimeout(None)
        self.fd = self.sock.fileno()

    def begin(self, nbytes: int) -> None:
        self.sock.sendall(_LENGTH.pack(nbytes))

    def pad(self, nbytes: int) -> None:
        zeros = bytes(min(nbytes, MiB))
        while nbytes > 0:
            part = min(nbytes, len(zeros))
            self.sock.sendall(zeros[:part])
            nbytes -= part

    def wait_ack(self) -> None:
        if self.sock.recv(1) != b"k":
            raise RuntimeError("the drain process went away")

    def __enter__(self) -> Drain:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(OSError):
            self.sock.sendall(_LENGTH.pack(-1))
        self.sock.close()
        self.listener.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _sendfile_all(out_fd: int, in_fd: int, position: int, size: int) -> None:
    sendfile = os.sendfile
    while size:
        sent = sendfile(out_fd, in_fd, position, size)
        if sent <= 0:
            raise RuntimeError("sendfile sent nothing")
        position += sent
        size -= sent


def franz_read_run(drain: Drain, kept: KeptLog, max_bytes: int, deadline: float) -> Run:
    """Consume the whole log: Log.read at the next offset, sendfile the range it returns.

    A consumer learns the next offset from the batches it received; every batch here has
    the template's size and record count, so it is computed from the range's size.
    """
    log, template = kept.log, kept.template
    hw, total = log.high_watermark, log.size_in_bytes
    batch_size, records = template.size, template.records
    read, send, out_fd, clock = log.read, _sendfile_all, drain.fd, time.perf_counter
    offset, sent, reads, cut = log.log_start_offset, 0, 0, False
    c0, t0 = cpu_seconds(), time.perf_counter()
    drain.begin(total)
    while offset < hw:
        info = read(offset, max_bytes, max_offset=hw)
        size = info.size
        if size <= 0 or size % batch_size:
            raise RuntimeError(f"Log.read({offset}) returned {size} bytes")
        send(out_fd, info.fd, info.position, size)
        sent += size
        offset += size // batch_size * records
        reads += 1
        if not reads % 64 and clock() > deadline:
            cut = True
            break
    t1, c1 = _finish(drain, cut, total - sent)
    if not cut and (sent != total or offset != hw):
        raise RuntimeError(f"read {sent} of {total} bytes, up to offset {offset} of {hw}")
    return Run(t1 - t0, sent, sent // batch_size, c1 - c0, cut)


def _finish(drain: Drain, cut: bool, missing: int) -> tuple[float, float]:
    """Stop the clocks: after the receiver has everything, or at once for a run cut short
    (then the receiver is padded with ``missing`` bytes so it can finish, untimed)."""
    if cut:
        t1, c1 = time.perf_counter(), cpu_seconds()
        drain.pad(missing)
        drain.wait_ack()
        return t1, c1
    drain.wait_ack()
    return time.perf_counter(), cpu_seconds()


Range = tuple[Path, int, int]


def franz_ranges(kept: KeptLog, max_bytes: int) -> list[Range]:
    """The (file, position, size) ranges a franz consumer of the whole log sends (untimed)."""
    log, template = kept.log, kept.template
    paths = {segment.fd: segment.log_path for segment in log.segments}
    ranges: list[Range] = []
    offset = log.log_start_offset
    while offset < log.high_watermark:
        info = log.read(offset, max_bytes, max_offset=log.high_watermark)
        ranges.append((paths[info.fd], info.position, info.size))
        offset += info.size // template.size * template.records
    return ranges


def chunk_ranges(kept: KeptLog, chunk: int) -> list[Range]:
    """Every segment file cut in ``chunk``-byte pieces."""
    return [
        (segment.log_path, position, min(chunk, segment.size - position))
        for segment in kept.log.segments
        for position in range(0, segment.size, chunk)
    ]


def sendfile_run(drain: Drain, ranges: list[Range], batch_size: int, deadline: float) -> Run:
    """The same bytes, ``sendfile`` of the given file ranges, no franz lookup."""
    fds = {path: os.open(path, os.O_RDONLY) for path in dict.fromkeys(p for p, _, _ in ranges)}
    todo = [(fds[path], position, size) for path, position, size in ranges]
    total = sum(size for _, _, size in todo)
    send, out_fd, clock = _sendfile_all, drain.fd, time.perf_counter
    sent, calls, cut = 0, 0, False
    try:
        c0, t0 = cpu_seconds(), time.perf_counter()
        drain.begin(total)
        for fd, position, size in todo:
            send(out_fd, fd, position, size)
            sent += size
            calls += 1
            if not calls % 64 and clock() > deadline:
                cut = True
                break
        t1, c1 = _finish(drain, cut, total - sent)
    finally:
        for fd in fds.values():
            os.close(fd)
    return Run(t1 - t0, sent, sent // batch_size, c1 - c0, cut)
