"""Shared fixtures and helpers for the storage engine's real-file tests.

Everything here writes real files under ``tmp_path`` and moves time with a ``ManualClock``.

Batch shape. ``make_batch`` builds uncompressed batches of ``RECORDS_PER_BATCH`` records whose
keys, values and timestamps are derived from the record's offset, so any reader (this process
or a test reading what a killed subprocess wrote) can check the exact bytes of an offset
without a side table. Every such batch is ``BATCH_SIZE`` bytes.

``small_config()`` rolls a segment every ``BATCHES_PER_SEGMENT`` batches (15, offsets
0, 45, 90, ...) and adds an index entry every third batch (``INDEX_INTERVAL_BYTES``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from franz.clock import ManualClock
from franz.config.topic import LogConfig
from franz.protocol.records.batch import iter_batches
from franz.protocol.records.compression import CompressionType
from franz.protocol.records.inflated import RecordBatchBuilder, iter_records
from franz.storage.files import TopicPartition
from franz.storage.log import Log
from franz.storage.log_manager import LogManager

REPO_ROOT = Path(__file__).resolve().parents[3]
CLOCK_START_MS = 1_700_000_000_000
RECORDS_PER_BATCH = 3
VALUE_SIZE = 50
#: On-disk size of a ``make_batch`` batch (61-byte header + 3 records of 68 bytes).
BATCH_SIZE = 265
SEGMENT_BYTES = 4096
INDEX_INTERVAL_BYTES = 600
#: ``should_roll`` rolls once ``size > segment.bytes - batch size``: 15 batches fit.
BATCHES_PER_SEGMENT = 15

TP = TopicPartition("orders", 0)


def small_config(overrides: Mapping[str, object] | None = None) -> LogConfig:
    """Small segments and frequent index entries (Kafka topic config names)."""
    values: dict[str, object] = {
        "segment.bytes": SEGMENT_BYTES,
        "index.interval.bytes": INDEX_INTERVAL_BYTES,
        "segment.index.bytes": 4096,
    }
    values.update(overrides or {})
    return LogConfig().with_overrides({k: str(v) for k, v in values.items()})


# -- records ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Written:
    """One record as appended (or as read back)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def record_key(offset: int) -> bytes:
    return b"key-%06d" % offset


def record_value(offset: int) -> bytes:
    return (b"%012d|" % offset * 5)[:VALUE_SIZE]


def expected_record(offset: int, batch_timestamp: int, index_in_batch: int) -> Written:
    return Written(
        offset, batch_timestamp + index_in_batch, record_key(offset), record_value(offset)
    )


def make_batch(
    first_offset: int,
    timestamp: int,
    *,
    count: int = RECORDS_PER_BATCH,
    compression: CompressionType = CompressionType.NONE,
) -> bytearray:
    """A client-style batch (baseOffset 0) whose records are derived from ``first_offset``."""
    builder = RecordBatchBuilder(compression=compression)
    for j in range(count):
        offset = first_offset + j
        builder.append(timestamp + j, record_key(offset), record_value(offset))
    return builder.build()


def append_batches(
    log: Log,
    clock: ManualClock,
    batches: int,
    *,
    epoch: int = 0,
    advance_ms: int = 10,
) -> list[Written]:
    """Append ``batches`` ``make_batch`` batches as leader; return every record written."""
    written: list[Written] = []
    for _ in range(batches):
        first = log.log_end_offset
        timestamp = clock.wall_ms()
        info = log.append_as_leader(make_batch(first, timestamp), epoch)
        assert (info.first_offset, info.last_offset) == (first, first + RECORDS_PER_BATCH - 1)
        written.extend(expected_record(first + j, timestamp, j) for j in range(RECORDS_PER_BATCH))
        clock.advance(advance_ms)
    return written


def read_records(log: Log, start: int | None = None, end: int | None = None) -> list[Written]:
    """Every record in [start, end) (default: log start offset .. LEO), via ``Log.read``."""
    offset = log.log_start_offset if start is None else start
    stop = log.log_end_offset if end is None else end
    out: list[Written] = []
    while offset < stop:
        data = log.read(offset, 64 * 1024, max_offset=stop).read_bytes()
        assert data, f"no data at offset {offset} below {stop}"
        for batch in iter_batches(bytearray(data)):
            for record in iter_records(batch):
                if offset <= record.offset < stop:
                    headers = tuple((h.key, h.value) for h in record.headers)
                    out.append(
                        Written(record.offset, record.timestamp, record.key, record.value, headers)
                    )
            offset = max(offset, batch.next_offset)
    return out


# -- files --------------------------------------------------------------------------------------


def segment_path(log_dir: Path, base_offset: int, suffix: str) -> Path:
    return log_dir / f"{base_offset:020d}{suffix}"


def flip_byte(path: Path, position: int) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        byte = f.read(1)
        f.seek(position)
        f.write(bytes([byte[0] ^ 0xFF]))


def index_entries(log: Log) -> list[tuple[int, list[tuple[int, int]], list[tuple[int, int]]]]:
    """(base offset, offset index entries, time index entries) of every segment, in memory."""
    out = []
    for segment in log.segments:
        offsets = [
            tuple(segment.offset_index.entry_at(i)) for i in range(segment.offset_index.entries)
        ]
        times = [tuple(segment.time_index.entry_at(i)) for i in range(segment.time_index.entries)]
        out.append((segment.base_offset, offsets, times))
    return out


# -- processes ----------------------------------------------------------------------------------


def run_python(script: str, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run ``script`` in a fresh interpreter (franz and ``tests`` importable)."""
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO_ROOT,
        env=python_env(),
        check=False,
    )


def python_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


# -- fixtures -----------------------------------------------------------------------------------


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(CLOCK_START_MS)


ManagerFactory = Callable[..., LogManager]


@pytest.fixture
def open_manager(clock: ManualClock) -> Iterator[ManagerFactory]:
    """``open_manager(dirs, config=..., start=True, **kwargs)`` -> a (started) LogManager.

    Every manager made is released at teardown as a crash would (locks and handles only), so
    a failing test never leaks a lock into the next one.
    """
    managers: list[LogManager] = []

    def factory(
        dirs: Path | Sequence[Path],
        *,
        config: LogConfig | None = None,
        start: bool = True,
        **kwargs: object,
    ) -> LogManager:
        log_dirs = [dirs] if isinstance(dirs, Path) else list(dirs)
        manager = LogManager(
            log_dirs,
            default_config=config or small_config(),
            clock=clock,
            **kwargs,  # type: ignore[arg-type]
        )
        managers.append(manager)
        if start:
            manager.startup()
        return manager

    yield factory
    for manager in managers:
        manager.close_without_shutdown()
