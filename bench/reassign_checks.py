"""What ``reassign_bench`` reads after (and during) a move: the tool's ``--verify`` states, the
probe's latencies and acknowledged records, the new replica's log files, a consumer's view
through the cluster, the old replica's directories, the burst of a quota window.

Pure: :func:`verify_states`, :func:`latency_summary`, :func:`acked_check`,
:func:`first_window_bytes`, :func:`count_log_records` (over bytes). With I/O:
:func:`replica_records` (reads a broker's ``.log`` files), :func:`old_dirs` (lists a log dir),
:func:`consume_all` (a confluent-kafka consumer).
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bench.ack_probe import probe_stamp
from bench.report import percentile
from franz.errors import FranzError

__all__ = [
    "Latency",
    "LogCount",
    "Read",
    "acked_check",
    "consume_all",
    "count_log_records",
    "first_window_bytes",
    "latency_summary",
    "old_dirs",
    "replica_records",
    "verify_states",
]


# -- the tool's output -----------------------------------------------------------------------------


def verify_states(output: str, topic: str) -> dict[int, str]:
    """Partition -> ``completed``, ``in progress`` or ``not moving`` from ``--verify``'s lines
    (Kafka 3.9's ``ReassignPartitionsCommand`` texts: "Reassignment of partition t-0 is
    completed." / "... is still in progress." / "There is no active reassignment of
    partition t-0, but replica set is 1,2 rather than 2,3.")."""
    name = re.escape(topic)
    moving = rf"^Reassignment of partition {name}-(\d+) is (completed|still in progress)\.$"
    idle = rf"^There is no active reassignment of partition {name}-(\d+), but"
    states: dict[int, str] = {}
    for p, state in re.findall(moving, output, re.M):
        states[int(p)] = "completed" if state == "completed" else "in progress"
    for p in re.findall(idle, output, re.M):
        states[int(p)] = "not moving"
    return states


# -- the probe -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Latency:
    """Send-to-ack latencies (ms) of the probe records sent in a window."""

    records: int
    p50: float
    p99: float
    max: float


def latency_summary(
    deliveries: Iterable[tuple[int, int, int]], start_ns: int, end_ns: int
) -> Latency | None:
    """p50/p99/max of the records sent in ``[start_ns, end_ns)`` (``deliveries``: sequence
    number, send and ack times in ns); None when none was sent then."""
    ms = sorted((ack - sent) / 1e6 for _, sent, ack in deliveries if start_ns <= sent < end_ns)
    if not ms:
        return None
    return Latency(len(ms), percentile(ms, 50), percentile(ms, 99), ms[-1])


def acked_check(acked: Iterable[int], found: Iterable[int]) -> tuple[int, int]:
    """(acknowledged sequence numbers not found, extra copies found of any sequence number):
    (0, 0) when every acknowledged record is in the topic exactly once."""
    counts = Counter(found)
    lost = sum(1 for seq in set(acked) if counts[seq] == 0)
    duplicated = sum(n - 1 for n in counts.values() if n > 1)
    return lost, duplicated


def first_window_bytes(samples: Sequence[tuple[float, int]], window_s: float) -> int | None:
    """Bytes copied in the first ``window_s`` seconds of a copy, from samples (time, bytes):
    from the last sample still at the first value to the last one within ``window_s`` after
    it; None when the copy never started or was over before the window ended."""
    if not samples:
        return None
    first = samples[0][1]
    moving = next((i for i, (_, b) in enumerate(samples) if b > first), None)
    if moving is None:
        return None
    t0 = samples[max(0, moving - 1)][0]
    within = [b for t, b in samples if t <= t0 + window_s]
    if samples[-1][0] < t0 + window_s:
        return None
    return within[-1] - first


# -- the new replica's files -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LogCount:
    """A replica's records read from its ``.log`` files: how many (control batches' left
    out), the offset after the last batch, and the batches that did not start where the
    previous one ended."""

    records: int
    next_offset: int
    gaps: int

    def holds(self, high_watermark: int) -> bool:
        """Exactly the records below ``high_watermark``, from offset 0 without a gap."""
        return self.records == self.next_offset == high_watermark and not self.gaps


def count_log_records(segments: Iterable[bytes]) -> LogCount:
    """Walk the batches of a partition's segments (in base-offset order), validating each
    (header and CRC-32C: ``franz.protocol.records.batch.iter_batches``)."""
    from franz.protocol.records.batch import iter_batches

    records, next_offset, gaps = 0, None, 0
    for data in segments:
        for batch in iter_batches(data):
            if next_offset is not None and batch.base_offset != next_offset:
                gaps += 1
            next_offset = batch.next_offset
            if not batch.is_control_batch:
                records += batch.records_count
    return LogCount(records, next_offset or 0, gaps)


def replica_records(log_dir: Path, topic: str) -> dict[int, LogCount]:
    """Partition -> :class:`LogCount` of ``topic``'s replicas in one broker's log dir."""
    prefix = f"{topic}-"
    counts: dict[int, LogCount] = {}
    if not log_dir.is_dir():
        return counts
    for entry in log_dir.iterdir():
        suffix = entry.name[len(prefix) :]
        if not (entry.name.startswith(prefix) and suffix.isdigit() and entry.is_dir()):
            continue
        segments = sorted(entry.glob("*.log"))  # 20-digit base offsets sort as numbers
        try:
            counts[int(suffix)] = count_log_records(s.read_bytes() for s in segments)
        except (OSError, FranzError):  # a segment still growing or just rolled: read again
            continue
    return counts


def old_dirs(log_dir: Path, topic: str) -> list[str]:
    """``topic``'s directories in a log dir: ``<topic>-<p>`` and those awaiting deletion
    (``<topic>-<p>.<uuid>-delete``, removed after ``file.delete.delay.ms``)."""
    if not log_dir.is_dir():
        return []
    return sorted(e.name for e in log_dir.iterdir() if e.name.startswith(f"{topic}-"))


# -- reading through the cluster -------------------------------------------------------------------


@dataclass
class Read:
    """What a consumer of every partition got: records per partition, partitions where an
    offset was skipped, and the probe records' sequence numbers."""

    counts: dict[int, int] = field(default_factory=dict)
    gaps: set[int] = field(default_factory=set)
    probe_seqs: list[int] = field(default_factory=list)


def consume_all(
    bootstrap: str, topic: str, high_watermarks: Mapping[int, int], timeout_s: float
) -> Read:
    """Read every partition from offset 0 to its high watermark (no group, assigned), counting
    records and checking offsets follow each other; stops at ``timeout_s``."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "franz-reassign-bench",
         "enable.auto.commit": False, "log_level": 3}
    )  # fmt: skip
    read = Read(counts={p: 0 for p in high_watermarks})
    following = {p: 0 for p in high_watermarks}
    left = {p for p, hw in high_watermarks.items() if hw > 0}
    consumer.assign([TopicPartition(topic, p, 0) for p in left])
    deadline = time.monotonic() + timeout_s
    try:
        while left and time.monotonic() < deadline:
            for message in consumer.consume(1000, 1.0):
                if message.error() is not None:
                    continue
                p, offset = int(message.partition() or 0), int(message.offset() or 0)
                if offset != following[p]:
                    read.gaps.add(p)
                following[p] = offset + 1
                read.counts[p] += 1
                stamp = probe_stamp(message.value())
                if stamp is not None:
                    read.probe_seqs.append(stamp[0])
                if following[p] >= high_watermarks[p]:
                    left.discard(p)
    finally:
        consumer.close()
    return read
