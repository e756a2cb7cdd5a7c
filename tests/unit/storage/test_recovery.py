"""Crash recovery of partition logs, on real files.

Crashes are simulated with ``LogManager.close_without_shutdown()`` (no flush, no trimmed
indexes, no clean-shutdown marker), by damaging files directly, and by SIGKILLing a writer
process mid-append. After each, a new ``LogManager`` must start, keep every complete batch,
cut what is torn or corrupt, rebuild indexes, and continue appending at the right offset.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import franz.storage.segment as segment_module
from franz.clock import ManualClock
from franz.storage.checkpoints import (
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
)
from franz.storage.log import Log
from franz.storage.log_manager import CLEAN_SHUTDOWN_FILE
from tests.support.kafka_format import check_partition_dir
from tests.unit.storage.conftest import (
    BATCH_SIZE,
    BATCHES_PER_SEGMENT,
    CLOCK_START_MS,
    RECORDS_PER_BATCH,
    REPO_ROOT,
    TP,
    ManagerFactory,
    Written,
    append_batches,
    expected_record,
    flip_byte,
    index_entries,
    make_batch,
    python_env,
    read_records,
    record_key,
    record_value,
    segment_path,
    small_config,
)

BATCHES = 50  # 150 records: segments at 0, 45, 90 (full) and 135 (5 batches, active)
BASES = [0, 45, 90, 135]


@pytest.fixture
def recover_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Base offsets of the segments whose ``recover`` ran (the real method still runs)."""
    calls: list[int] = []
    original = segment_module.LogSegment.recover

    def recording(self: segment_module.LogSegment, max_batch_size: int | None = None) -> int:
        calls.append(self.base_offset)
        return original(self, max_batch_size)

    monkeypatch.setattr(segment_module.LogSegment, "recover", recording)
    return calls


def _write_and_shut_down(
    open_manager: ManagerFactory, clock: ManualClock, log_dir: Path
) -> tuple[Path, list[Written]]:
    """``BATCHES`` batches in ``TP``, then a clean shutdown; (partition dir, records)."""
    manager = open_manager(log_dir)
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, BATCHES)
    log.update_high_watermark(log.log_end_offset)
    manager.shutdown()
    return log.dir, written


def _assert_timestamp_lookups(log: Log, written: list[Written]) -> None:
    """ListOffsets by timestamp finds every record: its own timestamp finds it, one
    millisecond later finds the next record (timestamps strictly grow with offsets)."""
    for record in written:
        found = log.fetch_offset_by_timestamp(record.timestamp)
        assert found is not None
        assert (found.offset, found.timestamp) == (record.offset, record.timestamp)
        after = log.fetch_offset_by_timestamp(record.timestamp + 1)
        if record is written[-1]:
            assert after is None
        else:
            assert after is not None and after.offset == record.offset + 1


def _assert_continues(log: Log, clock: ManualClock, written: list[Written]) -> list[Written]:
    leo = log.log_end_offset
    more = append_batches(log, clock, 20)
    assert more[0].offset == leo
    assert read_records(log) == written + more
    return written + more


# -- (a) crash without flush ----------------------------------------------------------------


# index.interval.bytes 600: every 3rd batch is indexed and a full segment's last batch is
# not, so rolled segments end with an extra final time-index entry. 256: every batch but a
# segment's first is indexed, so a rolled segment's trimmed time index has no spare slot (a
# rebuild into the trimmed file used to fail with "time index ... is full").
LAYOUTS = {"sparse": small_config(), "dense": small_config({"index.interval.bytes": 256})}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_recovery_after_crash_keeps_every_batch_and_rebuilds_indexes(
    open_manager: ManagerFactory,
    clock: ManualClock,
    tmp_path: Path,
    recover_calls: list[int],
    layout: str,
) -> None:
    config = LAYOUTS[layout]
    manager = open_manager(tmp_path, config=config)
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, BATCHES)
    assert [s.base_offset for s in log.segments] == BASES
    leo = log.log_end_offset
    indexes_before = index_entries(log)
    assert all(offsets for _, offsets, _ in indexes_before)
    manager.close_without_shutdown()

    active_index = segment_path(log.dir, BASES[-1], ".index")
    assert active_index.stat().st_size == 4096, "a crash leaves the active index preallocated"
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    assert not (tmp_path / RECOVERY_POINT_CHECKPOINT).exists()

    restarted = open_manager(tmp_path, config=config)
    assert restarted.had_clean_shutdown == {tmp_path.resolve(): False}
    recovered = restarted.get_log(TP)
    assert recovered is not None
    assert sorted(recover_calls) == BASES, "no recovery point: every segment is re-validated"
    assert recovered.log_end_offset == leo == BATCHES * RECORDS_PER_BATCH
    assert recovered.recovery_point == leo
    assert [s.base_offset for s in recovered.segments] == BASES
    full = BATCHES_PER_SEGMENT * BATCH_SIZE
    assert [s.size for s in recovered.segments] == [full, full, full, 5 * BATCH_SIZE]
    assert read_records(recovered) == written
    # Both indexes are rebuilt entry for entry (rolled segments with their final time-index
    # entry, trimmed); the active segment's are preallocated again.
    assert index_entries(recovered) == indexes_before
    assert recovered.active_segment.offset_index.file_length == 4096
    report = check_partition_dir(recovered.dir, allow_index_padding=True)
    assert [s.offset_index_padding for s in report.segments[:-1]] == [0, 0, 0]
    assert [s.time_index_padding for s in report.segments[:-1]] == [0, 0, 0]
    _assert_timestamp_lookups(recovered, written)

    everything = _assert_continues(recovered, clock, written)
    recovered.update_high_watermark(recovered.log_end_offset)
    restarted.shutdown()
    report = check_partition_dir(recovered.dir, allow_index_padding=False)
    assert report.log_end_offset == len(everything)
    assert [r.value for r in report.records] == [w.value for w in everything]


def test_recovery_starts_at_the_segment_holding_the_recovery_point(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path, recover_calls: list[int]
) -> None:
    manager = open_manager(tmp_path)
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, 40)  # 120 records: up to the middle of segment 90
    log.flush()
    manager.checkpoint_recovery_points()
    written += append_batches(log, clock, 10)
    manager.close_without_shutdown()

    restarted = open_manager(tmp_path)
    recovered = restarted.get_log(TP)
    assert recovered is not None
    assert sorted(recover_calls) == [90, 135], "flushed segments below the point are trusted"
    assert read_records(recovered) == written
    assert recovered.recovery_point == recovered.log_end_offset == 150


# -- (b) torn or corrupt tail -----------------------------------------------------------------


def _half_batch(next_offset: int) -> bytes:
    batch = make_batch(next_offset, CLOCK_START_MS)
    struct.pack_into(">q", batch, 0, next_offset)
    return bytes(batch[: len(batch) // 2])


def _batch_with_bad_crc(next_offset: int) -> bytes:
    batch = make_batch(next_offset, CLOCK_START_MS)
    struct.pack_into(">q", batch, 0, next_offset)
    batch[17] ^= 0xFF  # first byte of the CRC
    return bytes(batch)


def _batch_with_bad_payload(next_offset: int) -> bytes:
    batch = make_batch(next_offset, CLOCK_START_MS)
    struct.pack_into(">q", batch, 0, next_offset)
    batch[-5] ^= 0x01  # a record byte: the stored CRC no longer matches
    return bytes(batch)


TAILS = {
    "garbage": lambda _: bytes(range(7, 207)),
    "zeros": lambda _: bytes(300),
    "short_header": lambda n: _half_batch(n)[:30],
    "half_batch": _half_batch,
    "flipped_crc": _batch_with_bad_crc,
    "flipped_payload_bit": _batch_with_bad_payload,
}


@pytest.mark.parametrize("tail", sorted(TAILS))
def test_recovery_cuts_a_torn_or_corrupt_tail(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path, tail: str
) -> None:
    manager = open_manager(tmp_path)
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, BATCHES)
    leo = log.log_end_offset
    active = log.active_segment.log_path
    valid_size = active.stat().st_size
    manager.close_without_shutdown()
    with open(active, "ab") as f:
        f.write(TAILS[tail](leo))
    assert active.stat().st_size > valid_size

    restarted = open_manager(tmp_path)
    recovered = restarted.get_log(TP)
    assert recovered is not None
    assert active.stat().st_size == valid_size, "cut back to the last whole, valid batch"
    assert recovered.log_end_offset == leo
    assert read_records(recovered) == written
    _assert_continues(recovered, clock, written)


def test_recovery_cuts_a_torn_tail_even_when_the_recovery_point_is_at_the_end(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path, recover_calls: list[int]
) -> None:
    manager = open_manager(tmp_path, config=small_config({"flush.messages": 1}))
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, BATCHES)
    assert log.recovery_point == log.log_end_offset
    manager.checkpoint_recovery_points()
    active = log.active_segment.log_path
    valid_size = active.stat().st_size
    manager.close_without_shutdown()
    with open(active, "ab") as f:
        f.write(_half_batch(log.log_end_offset))

    recovered = open_manager(tmp_path).get_log(TP)
    assert recovered is not None
    assert recover_calls == [135], "only the segment holding the recovery point"
    assert active.stat().st_size == valid_size
    assert read_records(recovered) == written
    _assert_continues(recovered, clock, written)


# -- (c) missing index files ------------------------------------------------------------------


@pytest.mark.parametrize("suffixes", [(".index",), (".timeindex",), (".index", ".timeindex")])
def test_recovery_rebuilds_missing_indexes_of_an_old_segment_after_clean_shutdown(
    open_manager: ManagerFactory,
    clock: ManualClock,
    tmp_path: Path,
    recover_calls: list[int],
    suffixes: tuple[str, ...],
) -> None:
    log_dir, written = _write_and_shut_down(open_manager, clock, tmp_path)
    pristine = {p.name: p.read_bytes() for p in log_dir.glob("*index")}
    for suffix in suffixes:
        segment_path(log_dir, 45, suffix).unlink()

    restarted = open_manager(tmp_path)
    assert restarted.had_clean_shutdown == {tmp_path.resolve(): True}
    assert recover_calls == [45], "only the segment missing an index is read"
    recovered = restarted.get_log(TP)
    assert recovered is not None
    rebuilt = {p.name: p.read_bytes() for p in log_dir.glob(f"{45:020d}.*index")}
    assert rebuilt == {k: v for k, v in pristine.items() if k in rebuilt}
    assert len(rebuilt) == 2, "rebuilt and trimmed at once, byte for byte as before"
    assert recovered.log_end_offset == len(written)
    assert read_records(recovered) == written
    _assert_timestamp_lookups(recovered, written)

    restarted.shutdown()
    assert {p.name: p.read_bytes() for p in log_dir.glob("*index")} == pristine
    check_partition_dir(log_dir, allow_index_padding=False)


# -- (d) corrupt index files ------------------------------------------------------------------


def _fill_ff(path: Path) -> None:
    path.write_bytes(b"\xff" * path.stat().st_size)


def _zero(path: Path) -> None:
    path.write_bytes(bytes(path.stat().st_size))


def _extra_bytes(path: Path) -> None:
    with open(path, "ab") as f:
        f.write(b"\x01\x02\x03")


def _truncate_to_5_bytes(path: Path) -> None:
    os.truncate(path, 5)


CORRUPTIONS = {
    "index-ff": (".index", _fill_ff),
    "index-zeros": (".index", _zero),
    "index-extra-bytes": (".index", _extra_bytes),
    "index-cut-short": (".index", _truncate_to_5_bytes),
    "timeindex-ff": (".timeindex", _fill_ff),
    "timeindex-extra-bytes": (".timeindex", _extra_bytes),
    "timeindex-cut-short": (".timeindex", _truncate_to_5_bytes),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_recovery_rebuilds_a_corrupt_index(
    open_manager: ManagerFactory,
    clock: ManualClock,
    tmp_path: Path,
    recover_calls: list[int],
    corruption: str,
) -> None:
    log_dir, written = _write_and_shut_down(open_manager, clock, tmp_path)
    pristine = {p.name: p.read_bytes() for p in log_dir.glob("*index")}
    suffix, damage = CORRUPTIONS[corruption]
    damage(segment_path(log_dir, 45, suffix))

    restarted = open_manager(tmp_path)
    assert recover_calls == [45]
    recovered = restarted.get_log(TP)
    assert recovered is not None
    rebuilt = segment_path(log_dir, 45, suffix)
    assert rebuilt.read_bytes() == pristine[rebuilt.name], "rebuilt and trimmed at once"
    assert read_records(recovered) == written
    _assert_timestamp_lookups(recovered, written)
    restarted.shutdown()
    assert {p.name: p.read_bytes() for p in log_dir.glob("*index")} == pristine


# -- (e) corruption in the middle ------------------------------------------------------------


@pytest.mark.parametrize("bad_batch", [5, 0], ids=["sixth-batch", "first-batch"])
def test_recovery_truncates_at_mid_log_corruption_and_drops_later_segments(
    open_manager: ManagerFactory,
    clock: ManualClock,
    tmp_path: Path,
    recover_calls: list[int],
    bad_batch: int,
) -> None:
    manager = open_manager(tmp_path)
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, BATCHES)
    log_dir = log.dir
    manager.close_without_shutdown()
    # Damage a record byte of one batch of segment 45 (the 6th: offsets 60..62).
    flip_byte(segment_path(log_dir, 45, ".log"), bad_batch * BATCH_SIZE + 100)
    leo = 45 + bad_batch * RECORDS_PER_BATCH

    restarted = open_manager(tmp_path)
    recovered = restarted.get_log(TP)
    assert recovered is not None
    assert recover_calls == [0, 45], "recovery stops at the corrupt segment"
    assert [s.base_offset for s in recovered.segments] == [0, 45]
    for base in (90, 135):
        assert not list(log_dir.glob(f"{base:020d}.*")), "later segments are deleted"
    assert segment_path(log_dir, 45, ".log").stat().st_size == bad_batch * BATCH_SIZE
    assert recovered.log_end_offset == leo == written[leo - 1].offset + 1
    assert read_records(recovered) == written[:leo]
    assert recovered.active_segment.offset_index.file_length == 4096
    assert all(e.start_offset < leo for e in recovered.leader_epoch_cache.entries)

    everything = _assert_continues(recovered, clock, written[:leo])
    recovered.update_high_watermark(recovered.log_end_offset)
    restarted.shutdown()
    report = check_partition_dir(log_dir, allow_index_padding=False)
    assert [r.offset for r in report.records] == [w.offset for w in everything]


def test_recovery_cutting_below_the_checkpointed_log_start_offset_restarts_the_log_there(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    manager = open_manager(tmp_path)
    log = manager.get_or_create_log(TP)
    append_batches(log, clock, BATCHES)
    log.update_high_watermark(log.log_end_offset)
    assert log.maybe_increment_log_start_offset(100)
    assert manager.cleanup_logs() == 2  # segments 0 and 45
    manager.checkpoint_log_start_offsets()
    manager.checkpoint_high_watermarks()
    log_dir = log.dir
    manager.close_without_shutdown()
    flip_byte(segment_path(log_dir, 90, ".log"), BATCH_SIZE + 100)  # batch 93..95

    recovered = open_manager(tmp_path).get_log(TP)
    assert recovered is not None
    start, hw, leo = recovered.log_start_offset, recovered.high_watermark, recovered.log_end_offset
    assert start <= hw <= leo, f"log start {start}, HW {hw}, LEO {leo}"
    assert (start, leo) == (100, 100)
    more = append_batches(recovered, clock, 2)
    assert more[0].offset == 100
    assert read_records(recovered) == more


def test_recovery_after_crash_right_after_a_roll(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    manager = open_manager(tmp_path)
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, 2 * BATCHES_PER_SEGMENT)
    log.roll()
    assert [(s.base_offset, s.size) for s in log.segments][-1] == (90, 0)
    manager.close_without_shutdown()

    recovered = open_manager(tmp_path).get_log(TP)
    assert recovered is not None
    assert [s.base_offset for s in recovered.segments] == [0, 45, 90]
    assert recovered.log_end_offset == 90
    assert read_records(recovered) == written
    _assert_continues(recovered, clock, written)
    assert [s.base_offset for s in recovered.segments] == [0, 45, 90, 135]


# -- torn checkpoints -------------------------------------------------------------------------


GARBAGE = "\x00\x17not a checkpoint\n\xff"
TORN = {
    "garbage": GARBAGE,
    "missing-entries": "0\n2\norders 0 150\n",
    "cut-line": "0\n1\norders 0",
    "empty": "",
}


@pytest.mark.parametrize("torn", sorted(TORN))
def test_recovery_ignores_a_torn_recovery_point_checkpoint(
    open_manager: ManagerFactory,
    clock: ManualClock,
    tmp_path: Path,
    recover_calls: list[int],
    torn: str,
) -> None:
    manager = open_manager(tmp_path)
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, BATCHES)
    log.flush()
    manager.checkpoint_recovery_points()
    manager.close_without_shutdown()
    (tmp_path / RECOVERY_POINT_CHECKPOINT).write_text(TORN[torn], encoding="utf-8", newline="")

    recovered = open_manager(tmp_path).get_log(TP)
    assert recovered is not None
    assert sorted(recover_calls) == BASES, "an unreadable recovery point means full recovery"
    assert read_records(recovered) == written
    _assert_continues(recovered, clock, written)


@pytest.mark.parametrize("name", [LOG_START_OFFSET_CHECKPOINT, HIGH_WATERMARK_CHECKPOINT])
def test_recovery_ignores_a_torn_offset_checkpoint(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path, name: str
) -> None:
    manager = open_manager(tmp_path)
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, BATCHES)
    log.update_high_watermark(log.log_end_offset)
    manager.checkpoint_log_start_offsets()
    manager.checkpoint_high_watermarks()
    manager.close_without_shutdown()
    (tmp_path / name).write_text(GARBAGE, encoding="utf-8", newline="")

    recovered = open_manager(tmp_path).get_log(TP)
    assert recovered is not None
    assert recovered.log_start_offset == 0
    expected_hw = 0 if name == HIGH_WATERMARK_CHECKPOINT else len(written)
    assert recovered.high_watermark == expected_hw
    assert read_records(recovered) == written


# -- (f) a writer process killed mid-append ---------------------------------------------------

WRITER = """
import sys
from pathlib import Path

from franz.clock import ManualClock
from franz.storage.log_manager import LogManager
from tests.unit.storage.conftest import CLOCK_START_MS, TP, make_batch, small_config

clock = ManualClock(CLOCK_START_MS)
manager = LogManager([Path(sys.argv[1])], default_config=small_config(), clock=clock)
manager.startup()
log = manager.get_or_create_log(TP)
while True:
    first = log.log_end_offset
    timestamp = clock.wall_ms()
    info = log.append_as_leader(make_batch(first, timestamp), 0)
    print(f"offset {info.first_offset} {timestamp}", flush=True)
    clock.advance(10)
"""

ACKS_BEFORE_KILL = 400


def test_recovery_keeps_every_acknowledged_append_of_a_killed_writer(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(tmp_path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO_ROOT,
        env=python_env(),
    )
    acked: list[tuple[int, int]] = []
    try:
        assert writer.stdout is not None
        while len(acked) < ACKS_BEFORE_KILL:
            line = writer.stdout.readline()
            assert line, f"writer died early: {writer.stderr.read() if writer.stderr else ''}"
            _, offset, timestamp = line.split()
            acked.append((int(offset), int(timestamp)))
        writer.send_signal(signal.SIGKILL)
        rest, _ = writer.communicate(timeout=30)
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
    assert writer.returncode == -signal.SIGKILL
    for line in rest.splitlines(keepends=True):
        if line.endswith("\n"):  # a line cut by the kill was never an acknowledgement
            _, offset, timestamp = line.split()
            acked.append((int(offset), int(timestamp)))
    assert [o for o, _ in acked] == list(range(0, len(acked) * RECORDS_PER_BATCH, 3))

    restarted = open_manager(tmp_path)
    assert restarted.had_clean_shutdown == {tmp_path.resolve(): False}
    log = restarted.get_log(TP)
    assert log is not None
    last_acked = acked[-1][0] + RECORDS_PER_BATCH - 1
    assert log.log_end_offset > last_acked
    assert len(log.segments) > ACKS_BEFORE_KILL // BATCHES_PER_SEGMENT
    records = {r.offset: r for r in read_records(log)}
    assert sorted(records) == list(range(log.log_end_offset))
    for offset, timestamp in acked:
        for j in range(RECORDS_PER_BATCH):
            assert records[offset + j] == expected_record(offset + j, timestamp, j)
    # Batches written but not yet acknowledged when the kill came are whole and correct too.
    for offset, record in records.items():
        assert (record.key, record.value) == (record_key(offset), record_value(offset))

    clock.advance(10 * len(records))
    leo = log.log_end_offset
    more = append_batches(log, clock, 5)
    assert more[0].offset == leo
    assert read_records(log, leo) == more
    assert log.log_end_offset == leo + 5 * RECORDS_PER_BATCH
