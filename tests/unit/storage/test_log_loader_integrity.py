"""The loader's integrity checks on a clean start, on real files (issue 14, items 1 and 2).

- Every start checks the active segment's tail (last index entry's batch to end of file)
  and cuts what does not validate, so bytes appended while the broker was down never sit
  between the last batch and new appends.
- ``log.recovery.verify.all`` CRC-checks every segment and reports corrupt batches, keeping
  them and everything after them.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path

import pytest

from franz.clock import ManualClock
from franz.protocol.records.batch import RecordBatchView
from franz.storage.batch_check import check_batches
from tests.support.kafka_format import check_partition_dir
from tests.unit.storage.conftest import (
    BATCH_SIZE,
    CLOCK_START_MS,
    RECORDS_PER_BATCH,
    TP,
    ManagerFactory,
    Written,
    append_batches,
    flip_byte,
    make_batch,
    read_records,
    segment_path,
    small_config,
)
from tests.unit.storage.test_recovery import TAILS

BATCHES = 50  # 150 records: segments at 0, 45, 90 (full) and 135 (5 batches, active)


def _write_and_shut_down(
    open_manager: ManagerFactory, clock: ManualClock, log_dir: Path, **kwargs: object
) -> tuple[Path, list[Written]]:
    manager = open_manager(log_dir, **kwargs)
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, BATCHES)
    log.update_high_watermark(log.log_end_offset)
    manager.shutdown()
    return log.dir, written


# -- the active segment's tail on a clean start ----------------------------------------------


@pytest.mark.parametrize("tail", sorted(TAILS))
def test_clean_start_cuts_invalid_bytes_after_the_last_batch(
    open_manager: ManagerFactory,
    clock: ManualClock,
    tmp_path: Path,
    tail: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    log_dir, written = _write_and_shut_down(open_manager, clock, tmp_path)
    active = segment_path(log_dir, 135, ".log")
    valid_size = active.stat().st_size
    junk = TAILS[tail](150)
    with open(active, "ab") as f:
        f.write(junk)

    with caplog.at_level(logging.WARNING, "franz.storage.log_loader"):
        log = open_manager(tmp_path).get_log(TP)
    assert log is not None
    assert active.stat().st_size == valid_size
    assert log.log_end_offset == 150
    assert f"cut {len(junk)} invalid byte(s) at position {valid_size}" in caplog.text
    assert "now ends at offset 150" in caplog.text
    assert read_records(log) == written
    more = append_batches(log, clock, 20)
    assert more[0].offset == 150
    assert read_records(log) == written + more


def test_clean_start_cuts_an_indexed_last_batch_whose_crc_fails(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    # index.interval.bytes 256: every batch but a segment's first is indexed, the last too.
    config = small_config({"index.interval.bytes": 256})
    log_dir, written = _write_and_shut_down(open_manager, clock, tmp_path, config=config)
    active = segment_path(log_dir, 135, ".log")
    flip_byte(active, 4 * BATCH_SIZE + 100)  # a record byte of the last batch (147..149)

    manager = open_manager(tmp_path, config=config)
    log = manager.get_log(TP)
    assert log is not None
    assert active.stat().st_size == 4 * BATCH_SIZE
    assert log.log_end_offset == 147
    assert all(e.position < 4 * BATCH_SIZE for e in _offset_entries(log))
    assert read_records(log) == written[:147]
    more = append_batches(log, clock, 20)
    assert read_records(log) == written[:147] + more
    log.update_high_watermark(log.log_end_offset)
    manager.shutdown()
    check_partition_dir(log_dir, allow_index_padding=False)


def test_clean_start_reads_only_the_tail_of_an_intact_log(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    log_dir, _ = _write_and_shut_down(open_manager, clock, tmp_path)
    flip_byte(segment_path(log_dir, 45, ".log"), 100)  # an old segment: not read on a clean start
    log = open_manager(tmp_path).get_log(TP)
    assert log is not None
    assert log.log_end_offset == 150
    assert log.corrupt_batches == []
    assert segment_path(log_dir, 45, ".log").stat().st_size == 15 * BATCH_SIZE


def _offset_entries(log):  # type: ignore[no-untyped-def]
    index = log.active_segment.offset_index
    return [index.entry_at(i) for i in range(index.entries)]


# -- log.recovery.verify.all -------------------------------------------------------------------


def test_verify_all_reports_a_corrupt_batch_of_an_old_segment_and_keeps_everything(
    open_manager: ManagerFactory,
    clock: ManualClock,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    log_dir, written = _write_and_shut_down(open_manager, clock, tmp_path)
    sizes = {p.name: p.stat().st_size for p in log_dir.glob("*.log")}
    flip_byte(segment_path(log_dir, 45, ".log"), 5 * BATCH_SIZE + 100)  # offsets 60..62

    with caplog.at_level(logging.ERROR, "franz.storage.log_loader"):
        log = open_manager(tmp_path, recovery_verify_all=True).get_log(TP)
    assert log is not None
    found = [(base, c.position, c.base_offset, c.last_offset) for base, c in log.corrupt_batches]
    assert found == [(45, 5 * BATCH_SIZE, 60, 62)]
    assert "CRC mismatch" in log.corrupt_batches[0][1].error  # type: ignore[operator]
    assert f"corrupt batch at position {5 * BATCH_SIZE} of " in caplog.text
    assert "offsets 60..62" in caplog.text
    assert {p.name: p.stat().st_size for p in log_dir.glob("*.log")} == sizes, "nothing is cut"
    assert log.log_end_offset == 150
    assert read_records(log, 0, 60) == written[:60]
    assert read_records(log, 63) == written[63:]
    # The corrupt batch is served as stored (sendfile); the consumer's CRC check finds it.
    served = RecordBatchView(log.read(60, 10_000, max_offset=150).read_bytes(), 0)
    assert (served.base_offset, served.compute_crc() == served.crc) == (60, False)


def test_verify_all_reports_a_batch_whose_length_is_damaged_as_unwalkable(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    log_dir, _ = _write_and_shut_down(open_manager, clock, tmp_path)
    path = segment_path(log_dir, 0, ".log")
    with open(path, "r+b") as f:
        f.seek(2 * BATCH_SIZE + 8)
        f.write(struct.pack(">i", 10**6))  # batchLength runs past the end
    log = open_manager(tmp_path, recovery_verify_all=True).get_log(TP)
    assert log is not None
    [(base, bad)] = log.corrupt_batches
    assert (base, bad.position, bad.walkable) == (0, 2 * BATCH_SIZE, False)
    assert bad.size == 13 * BATCH_SIZE, "the rest of the segment cannot be walked"
    assert log.log_end_offset == 150


# -- check_batches (pure) ----------------------------------------------------------------------


def _batches(count: int) -> bytearray:
    out = bytearray()
    for i in range(count):
        batch = make_batch(i * RECORDS_PER_BATCH, CLOCK_START_MS)
        struct.pack_into(">q", batch, 0, i * RECORDS_PER_BATCH)
        out += batch
    return out


def test_check_batches_accepts_a_valid_log() -> None:
    checks = list(check_batches(_batches(4)))
    assert [(c.position, c.base_offset, c.last_offset, c.error) for c in checks] == [
        (i * BATCH_SIZE, 3 * i, 3 * i + 2, None) for i in range(4)
    ]


def test_check_batches_walks_past_a_crc_failure() -> None:
    data = _batches(4)
    data[BATCH_SIZE + 100] ^= 1
    errors = [(c.position, c.walkable) for c in check_batches(data) if c.error]
    assert errors == [(BATCH_SIZE, True)]


def test_check_batches_reports_an_offset_going_backwards() -> None:
    data = _batches(3)
    struct.pack_into(">q", data, 2 * BATCH_SIZE, 0)  # baseOffset lies outside the CRC
    [bad] = [c for c in check_batches(data) if c.error]
    assert (bad.position, bad.error) == (2 * BATCH_SIZE, "offset 0 does not follow 6")


@pytest.mark.parametrize(
    ("junk", "reason"),
    [
        (b"\x00" * 100, "batch length 0"),
        (b"\x01" * 20, "a partial batch header"),
        (bytes(8) + struct.pack(">ii", 100, 0) + b"\x01" + bytes(100), "magic 1"),
    ],
)
def test_check_batches_ends_at_unwalkable_bytes(junk: bytes, reason: str) -> None:
    data = _batches(2) + junk
    checks = list(check_batches(data))
    assert [c.error for c in checks[:2]] == [None, None]
    [bad] = checks[2:]
    assert bad.error is not None and bad.error.startswith(reason)
    assert (bad.position, bad.size, bad.walkable) == (2 * BATCH_SIZE, len(junk), False)
