"""Idempotent-producer state: sequence checks, duplicates, snapshots, rebuilds, expiration.

Everything runs against a real ``Log`` on real files (``tmp_path``) with a ``ManualClock``;
batches are built with ``RecordBatchBuilder`` carrying producerId/producerEpoch/baseSequence.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import crc32c
import pytest

import franz.storage.segment as segment_module
from franz.clock import ManualClock
from franz.errors import (
    DuplicateSequenceError,
    ErrorCode,
    InvalidProducerEpochError,
    InvalidRecordError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
    error_code_for,
)
from franz.protocol.records.batch import RecordBatchView
from franz.protocol.records.inflated import RecordBatchBuilder
from franz.storage.log import Log
from franz.storage.producer_state import (
    NUM_BATCHES_TO_RETAIN,
    BatchMetadata,
    CorruptSnapshotError,
    ProducerStateEntry,
    decode_snapshot,
    encode_snapshot,
)
from tests.unit.storage.conftest import (
    CLOCK_START_MS,
    TP,
    ManagerFactory,
    flip_byte,
    small_config,
)

PID = 4242
INT32_MAX = 2**31 - 1


def idem(
    seq: int,
    count: int = 3,
    *,
    epoch: int = 0,
    pid: int = PID,
    ts: int = CLOCK_START_MS,
    transactional: bool = False,
    base_offset: int = 0,
) -> bytearray:
    """An idempotent producer's batch of ``count`` records starting at sequence ``seq``."""
    builder = RecordBatchBuilder(
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=transactional,
        base_offset=base_offset,
    )
    for i in range(count):
        builder.append(ts + i, b"k%d" % i, b"v" * 20)
    return builder.build()


def plain(count: int = 2, ts: int = CLOCK_START_MS) -> bytearray:
    builder = RecordBatchBuilder()
    for i in range(count):
        builder.append(ts + i, None, b"plain")
    return builder.build()


def open_log(path: Path, clock: ManualClock, **kwargs: Any) -> Log:
    return Log(path / TP.dir_name, TP, small_config(), clock, **kwargs)


def log_bytes(log: Log) -> bytes:
    return b"".join(segment.log_path.read_bytes() for segment in log.segments)


def snapshot_files(log: Log) -> list[str]:
    return sorted(p.name for p in log.dir.glob("*.snapshot"))


@pytest.fixture
def log(tmp_path: Path, clock: ManualClock) -> Log:
    return open_log(tmp_path, clock)


# -- sequence checks ---------------------------------------------------------------------------


def test_in_order_sequences_are_appended_and_tracked(log: Log) -> None:
    infos = [log.append_as_leader(idem(seq), 0) for seq in (0, 3, 6)]
    assert [(i.first_offset, i.last_offset, i.duplicate) for i in infos] == [
        (0, 2, False),
        (3, 5, False),
        (6, 8, False),
    ]
    entry = log.producer_state.last_entry(PID)
    assert entry is not None
    assert (entry.producer_epoch, entry.last_seq, entry.last_data_offset) == (0, 8, 8)
    assert [(b.first_seq, b.last_seq, b.first_offset, b.last_offset) for b in entry.batches] == [
        (0, 2, 0, 2),
        (3, 5, 3, 5),
        (6, 8, 6, 8),
    ]


@pytest.mark.parametrize("retried", range(NUM_BATCHES_TO_RETAIN))
def test_each_of_the_last_five_batches_is_acknowledged_with_its_original_offsets(
    log: Log, retried: int
) -> None:
    originals = []
    for n in range(7):
        log.append_as_leader(plain(), 0)  # offsets differ from sequences
        originals.append(log.append_as_leader(idem(3 * n), 0))
    cached = originals[-NUM_BATCHES_TO_RETAIN:]
    leo, stored = log.log_end_offset, log_bytes(log)

    seq = 3 * (7 - NUM_BATCHES_TO_RETAIN + retried)
    info = log.append_as_leader(idem(seq), 0)

    assert info.duplicate
    assert (info.first_offset, info.last_offset) == (
        cached[retried].first_offset,
        cached[retried].last_offset,
    )
    assert (info.valid_bytes, info.batch_count) == (0, 0)
    assert info.max_timestamp == CLOCK_START_MS + 2
    # Kafka's UnifiedLog.append reports a duplicate's max timestamp as its logAppendTime,
    # under CreateTime too (tests/reference/test_differential.py, produce-idempotent).
    assert info.log_append_time == CLOCK_START_MS + 2
    assert log.log_end_offset == leo
    assert log_bytes(log) == stored


def test_the_sixth_oldest_batch_is_out_of_order(log: Log) -> None:
    for n in range(NUM_BATCHES_TO_RETAIN + 1):
        log.append_as_leader(idem(3 * n), 0)
    stored = log_bytes(log)
    with pytest.raises(OutOfOrderSequenceError) as caught:
        log.append_as_leader(idem(0), 0)
    assert (
        error_code_for(caught.value) is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        and int(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER) == 45
    )
    assert log_bytes(log) == stored


def test_a_sequence_gap_is_out_of_order_and_nothing_is_written(log: Log) -> None:
    log.append_as_leader(idem(0), 0)
    stored = log_bytes(log)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idem(4), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idem(2), 0)  # overlaps without matching a cached batch
    assert (log.log_end_offset, log_bytes(log)) == (3, stored)
    assert log.append_as_leader(idem(3), 0).first_offset == 3


def test_an_unknown_producer_must_start_at_sequence_zero(log: Log) -> None:
    with pytest.raises(UnknownProducerIdError) as caught:
        log.append_as_leader(idem(5), 0)
    assert (
        error_code_for(caught.value) is ErrorCode.UNKNOWN_PRODUCER_ID
        and int(ErrorCode.UNKNOWN_PRODUCER_ID) == 59
    )
    assert log.log_end_offset == 0 and log.active_segment.size == 0
    assert log.append_as_leader(idem(0), 0).first_offset == 0


def test_a_lower_epoch_is_fenced(log: Log) -> None:
    log.append_as_leader(idem(0, epoch=3), 0)
    for seq in (0, 3):
        with pytest.raises(InvalidProducerEpochError) as caught:
            log.append_as_leader(idem(seq, epoch=2), 0)
        assert (
            error_code_for(caught.value) is ErrorCode.INVALID_PRODUCER_EPOCH
            and int(ErrorCode.INVALID_PRODUCER_EPOCH) == 47
        )
    assert log.log_end_offset == 3


def test_a_new_epoch_starts_at_sequence_zero_and_forgets_the_old_batches(log: Log) -> None:
    log.append_as_leader(idem(0, epoch=1), 0)
    log.append_as_leader(idem(3, epoch=1), 0)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idem(6, epoch=2), 0)
    info = log.append_as_leader(idem(0, epoch=2), 0)
    assert (info.first_offset, info.duplicate) == (6, False)
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(idem(3, epoch=1), 0)  # a retry from the fenced epoch
    entry = log.producer_state.last_entry(PID)
    assert entry is not None and entry.producer_epoch == 2 and len(entry.batches) == 1


def test_sequences_wrap_at_int32_max(log: Log) -> None:
    # Seed the state through replication: a client cannot start anywhere but 0.
    log.append_as_follower(idem(INT32_MAX - 4, 3, base_offset=0))  # sequences ..-4 .. -2
    wrapping = log.append_as_leader(idem(INT32_MAX - 1, 3), 0)  # INT32_MAX - 1, MAX, 0
    assert (wrapping.first_offset, wrapping.last_offset) == (3, 5)
    entry = log.producer_state.last_entry(PID)
    assert entry is not None and entry.last_seq == 0
    assert log.append_as_leader(idem(INT32_MAX - 1, 3), 0).duplicate
    assert log.append_as_leader(idem(1), 0).first_offset == 6
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idem(0), 0)


def test_batch_ending_at_int32_max_is_followed_by_zero(log: Log) -> None:
    log.append_as_follower(idem(INT32_MAX - 2, 3, base_offset=0))
    assert log.append_as_leader(idem(0), 0).first_offset == 3


def test_batches_of_one_producer_in_one_append_must_chain(log: Log) -> None:
    info = log.append_as_leader(idem(0) + idem(3) + plain() + idem(6), 0)
    assert (info.first_offset, info.last_offset, info.batch_count) == (0, 10, 4)
    stored = log_bytes(log)
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idem(9) + idem(13), 0)
    assert log_bytes(log) == stored
    entry = log.producer_state.last_entry(PID)
    assert entry is not None and entry.last_seq == 8, "a refused append changes no state"


def test_an_append_of_only_duplicates_is_acknowledged_as_a_whole(log: Log) -> None:
    log.append_as_leader(idem(0), 0)
    log.append_as_leader(idem(3), 0)
    info = log.append_as_leader(idem(0) + idem(3), 0)
    assert info.duplicate and (info.first_offset, info.last_offset) == (0, 5)


@pytest.mark.parametrize(
    "records", [lambda: idem(3) + idem(6), lambda: idem(0) + plain()], ids=["new", "plain"]
)
def test_duplicates_mixed_with_new_batches_are_refused(
    log: Log, records: Callable[[], bytearray]
) -> None:
    log.append_as_leader(idem(0), 0)
    log.append_as_leader(idem(3), 0)
    stored = log_bytes(log)
    with pytest.raises(DuplicateSequenceError) as caught:
        log.append_as_leader(records(), 0)
    assert error_code_for(caught.value) == ErrorCode.DUPLICATE_SEQUENCE_NUMBER
    assert log_bytes(log) == stored


def test_producers_are_independent_and_plain_batches_leave_no_state(log: Log) -> None:
    log.append_as_leader(plain(), 0)
    assert not log.producer_state.producers
    log.append_as_leader(idem(0, pid=1), 0)
    log.append_as_leader(idem(0, pid=2, epoch=7), 0)
    log.append_as_leader(idem(3, pid=1), 0)
    assert log.append_as_leader(idem(0, pid=2, epoch=7), 0).duplicate
    assert sorted(log.producer_state.producers) == [1, 2]


def test_a_client_batch_with_a_producer_id_needs_a_sequence(log: Log) -> None:
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(idem(-1), 0)


def test_transactional_batches_follow_the_same_sequence_rules(log: Log) -> None:
    log.append_as_leader(idem(0, transactional=True), 0)
    assert log.append_as_leader(idem(0, transactional=True), 0).duplicate
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idem(7, transactional=True), 0)


def test_follower_appends_update_the_state_without_checks(log: Log) -> None:
    log.append_as_follower(idem(10, base_offset=0))  # an unknown producer at sequence 10
    log.append_as_follower(idem(0, epoch=0, base_offset=3, pid=9))
    log.append_as_follower(idem(50, base_offset=6))  # a gap: the leader decided
    entry = log.producer_state.last_entry(PID)
    assert entry is not None and [b.first_offset for b in entry.batches] == [0, 6]
    # As leader later, the follower-written batches are known.
    assert log.append_as_leader(idem(10), 0).first_offset == 0
    assert log.append_as_leader(idem(53), 0).first_offset == 9


def test_broker_internal_appends_check_epochs_only(log: Log) -> None:
    log.append_as_leader(idem(0, epoch=5), 0)
    assert log.append_as_leader(idem(40, epoch=5), 0, from_client=False).first_offset == 3
    with pytest.raises(InvalidProducerEpochError):
        log.append_as_leader(idem(43, epoch=4), 0, from_client=False)


def test_a_duplicate_under_log_append_time_reports_the_original_append_time(
    tmp_path: Path, clock: ManualClock
) -> None:
    config = small_config({"message.timestamp.type": "LogAppendTime"})
    log = Log(tmp_path / TP.dir_name, TP, config, clock)
    first = log.append_as_leader(idem(0), 0)
    clock.advance(5_000)
    again = log.append_as_leader(idem(0), 0)
    assert again.duplicate
    assert again.log_append_time == first.log_append_time == CLOCK_START_MS


# -- the snapshot format -----------------------------------------------------------------------


def _entry_bytes(
    pid: int, epoch: int, last_seq: int, last_offset: int, delta: int, ts: int
) -> bytes:
    return (
        pid.to_bytes(8, "big", signed=True)
        + epoch.to_bytes(2, "big", signed=True)
        + last_seq.to_bytes(4, "big", signed=True)
        + last_offset.to_bytes(8, "big", signed=True)
        + delta.to_bytes(4, "big", signed=True)
        + ts.to_bytes(8, "big", signed=True)
        + (-1).to_bytes(4, "big", signed=True)  # CoordinatorEpoch
        + (-1).to_bytes(8, "big", signed=True)  # CurrentTxnFirstOffset
    )


def test_an_empty_snapshot_is_kafkas_ten_bytes() -> None:
    # version 1, CRC-32C of the 4-byte zero count (0x48674BC7), count 0
    assert encode_snapshot([]) == bytes.fromhex("000148674bc700000000")
    assert decode_snapshot(bytes.fromhex("000148674bc700000000")) == []


def test_snapshot_bytes_match_kafkas_layout_and_round_trip(log: Log) -> None:
    log.append_as_leader(idem(0, pid=7, epoch=2), 0)  # offsets 0..2
    log.append_as_leader(plain(), 0)  # 3..4
    log.append_as_leader(idem(3, 4, pid=7, epoch=2, ts=CLOCK_START_MS + 100), 0)  # 5..8
    log.append_as_leader(idem(0, 1, pid=3, epoch=0, ts=CLOCK_START_MS + 7), 0)  # 9
    log.roll()
    path = log.dir / f"{10:020d}.snapshot"
    body = (
        (2).to_bytes(4, "big")
        + _entry_bytes(3, 0, 0, 9, 0, CLOCK_START_MS + 7)
        + _entry_bytes(7, 2, 6, 8, 3, CLOCK_START_MS + 103)
    )
    expected = (1).to_bytes(2, "big") + crc32c.crc32c(body).to_bytes(4, "big") + body
    assert path.read_bytes() == expected
    assert len(expected) == 2 + 4 + 4 + 2 * 46

    restored = {entry.producer_id: entry for entry in decode_snapshot(expected)}
    assert restored[7].producer_epoch == 2
    assert list(restored[7].batches) == [BatchMetadata(3, 6, 5, 8, CLOCK_START_MS + 103)]
    assert list(restored[3].batches) == [BatchMetadata(0, 0, 9, 9, CLOCK_START_MS + 7)]
    assert encode_snapshot(restored.values()) == expected


def test_a_snapshot_entry_without_a_batch_restores_the_epoch_only() -> None:
    body = (1).to_bytes(4, "big") + _entry_bytes(5, 4, -1, -1, 0, CLOCK_START_MS)
    data = (1).to_bytes(2, "big") + crc32c.crc32c(body).to_bytes(4, "big") + body
    (entry,) = decode_snapshot(data)
    assert (entry.producer_id, entry.producer_epoch, entry.last_seq) == (5, 4, -1)
    assert not entry.batches
    assert encode_snapshot([entry]) == data


def test_snapshot_first_sequence_wraps_like_kafkas_decrement_sequence() -> None:
    entry = ProducerStateEntry(1, 0)
    entry.add_batch(0, INT32_MAX - 1, 1, 100, 103, CLOCK_START_MS)
    (restored,) = decode_snapshot(encode_snapshot([entry]))
    assert list(restored.batches) == list(entry.batches)


@pytest.mark.parametrize(
    "damage",
    [
        lambda d: d[:1] + b"\x02" + d[2:],  # version 2
        lambda d: d[:20] + bytes([d[20] ^ 1]) + d[21:],  # CRC mismatch
        lambda d: d[:-1],  # torn
        lambda d: b"",
    ],
    ids=["version", "crc", "torn", "empty"],
)
def test_a_damaged_snapshot_is_corrupt(damage: Callable[[bytes], bytes]) -> None:
    entry = ProducerStateEntry(1, 0)
    entry.add_batch(0, 0, 2, 0, 2, CLOCK_START_MS)
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(damage(encode_snapshot([entry])))


# -- snapshots and the log's life cycle --------------------------------------------------------


def _five_batches(log: Log) -> None:
    for n in range(5):
        log.append_as_leader(idem(3 * n), 0)


def test_state_survives_a_clean_close_and_reopen(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(tmp_path, clock)
    _five_batches(log)
    log.close()
    assert snapshot_files(log) == [f"{15:020d}.snapshot"]

    def forbidden(*_: object, **__: object) -> None:
        raise AssertionError("a clean restart must not replay the log")

    monkeypatch.setattr(segment_module.LogSegment, "iter_batch_headers", forbidden)
    reopened = open_log(tmp_path, clock)
    info = reopened.append_as_leader(idem(12), 0)
    assert info.duplicate and (info.first_offset, info.last_offset) == (12, 14)
    # A snapshot keeps only the last batch (as Kafka's): older retries are now out of order.
    with pytest.raises(OutOfOrderSequenceError):
        reopened.append_as_leader(idem(9), 0)
    assert reopened.append_as_leader(idem(15), 0).first_offset == 15


def test_state_survives_a_crash_by_replaying_the_log(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    _five_batches(log)
    log.close_without_flush()
    assert snapshot_files(log) == []

    reopened = open_log(tmp_path, clock, had_clean_shutdown=False)
    for n in range(5):  # rebuilt from the batch headers: all five batches are known again
        info = reopened.append_as_leader(idem(3 * n), 0)
        assert info.duplicate and info.first_offset == 3 * n
    assert reopened.append_as_leader(idem(15), 0).first_offset == 15


def test_a_crash_replays_only_the_batches_after_the_last_snapshot(
    tmp_path: Path, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(tmp_path, clock)
    _five_batches(log)
    log.roll()  # snapshot at 15
    log.append_as_leader(idem(15), 0)
    log.append_as_leader(idem(18), 0)
    log.close_without_flush()
    assert snapshot_files(log) == [f"{15:020d}.snapshot"]

    walked: list[int] = []
    original = segment_module.LogSegment.iter_batch_headers

    def recording(
        self: segment_module.LogSegment, start_position: int = 0
    ) -> Iterator[RecordBatchView]:
        walked.append(self.base_offset)
        return original(self, start_position)

    monkeypatch.setattr(segment_module.LogSegment, "iter_batch_headers", recording)
    reopened = open_log(tmp_path, clock, had_clean_shutdown=False)
    assert walked == [15]
    entry = reopened.producer_state.last_entry(PID)
    assert entry is not None
    assert [b.first_seq for b in entry.batches] == [12, 15, 18]
    assert reopened.append_as_leader(idem(15), 0).duplicate
    assert reopened.append_as_leader(idem(21), 0).first_offset == 21


def test_recovery_cutting_below_a_snapshot_deletes_it_and_rebuilds_from_the_log(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    _five_batches(log)  # offsets 0..14 in segment 0
    log.roll()  # snapshot at 15
    log.append_as_leader(idem(15), 0)
    *_, fifth = log.segments[0].iter_locations()
    log.close_without_flush()
    flip_byte(log.dir / f"{0:020d}.log", fifth.position + fifth.size - 1)  # corrupt 12..14

    reopened = open_log(tmp_path, clock, had_clean_shutdown=False)
    assert reopened.log_end_offset == 12
    assert reopened.producer_state.snapshot_offsets == []
    entry = reopened.producer_state.last_entry(PID)
    assert entry is not None and entry.last_seq == 11
    assert reopened.append_as_leader(idem(12), 0).first_offset == 12


def test_rolls_snapshot_the_state_at_the_new_base_offset(log: Log) -> None:
    log.append_as_leader(idem(0), 0)
    log.roll()
    log.roll()  # nothing new: no second roll, no second snapshot
    log.append_as_leader(plain(), 0)
    log.roll()
    assert snapshot_files(log) == [f"{3:020d}.snapshot", f"{5:020d}.snapshot"]
    for offset in (3, 5):
        (entry,) = decode_snapshot((log.dir / f"{offset:020d}.snapshot").read_bytes())
        assert (entry.producer_id, entry.last_seq, entry.last_data_offset) == (PID, 2, 2)
    assert not list(log.dir.glob("*.tmp"))


def test_truncation_rebuilds_the_state_and_drops_later_snapshots(log: Log) -> None:
    for n in range(4):
        log.append_as_leader(idem(3 * n), 0)
        log.roll()
    assert log.producer_state.snapshot_offsets == [3, 6, 9, 12]
    log.truncate_to(7)  # inside the batch at 6..8: it goes
    assert log.log_end_offset == 6
    assert log.producer_state.snapshot_offsets == [3, 6]
    entry = log.producer_state.last_entry(PID)
    assert entry is not None and entry.last_seq == 5
    assert log.append_as_leader(idem(6), 0).first_offset == 6
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(idem(12), 0)


def test_truncation_between_snapshots_replays_from_the_older_one(log: Log) -> None:
    log.append_as_leader(idem(0), 0)
    log.roll()  # snapshot at 3
    for seq in (3, 6, 9):
        log.append_as_leader(idem(seq), 0)
    log.truncate_to(9)
    entry = log.producer_state.last_entry(PID)
    assert entry is not None
    assert [b.first_seq for b in entry.batches] == [0, 3, 6]  # snapshot's last + replayed
    assert log.append_as_leader(idem(3), 0).duplicate


def test_truncating_fully_forgets_every_producer(log: Log) -> None:
    log.append_as_leader(idem(0), 0)
    log.roll()
    log.truncate_fully_and_start_at(100)
    assert not log.producer_state.producers and snapshot_files(log) == []
    with pytest.raises(UnknownProducerIdError):
        log.append_as_leader(idem(3), 0)
    assert log.append_as_leader(idem(0), 0).first_offset == 100


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: flip_byte(p, 12),
        lambda p: flip_byte(p, 1),
        lambda p: p.write_bytes(p.read_bytes()[:7]),
        lambda p: p.write_bytes(b""),
    ],
    ids=["crc", "version", "torn", "empty"],
)
def test_a_corrupt_snapshot_is_deleted_and_the_state_rebuilt_from_the_log(
    tmp_path: Path,
    clock: ManualClock,
    caplog: pytest.LogCaptureFixture,
    damage: Callable[[Path], object],
) -> None:
    log = open_log(tmp_path, clock)
    _five_batches(log)
    log.close()
    path = log.dir / f"{15:020d}.snapshot"
    damage(path)
    with caplog.at_level(logging.WARNING, logger="franz.storage.producer_state"):
        reopened = open_log(tmp_path, clock)
    assert "failed to load the producer snapshot" in caplog.text
    assert not path.exists()
    assert reopened.append_as_leader(idem(0), 0).duplicate  # rebuilt from the log: all 5
    reopened.close()
    assert path.exists(), "the clean close writes a good snapshot again"


def test_a_corrupt_latest_snapshot_falls_back_to_the_previous_one(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(idem(0), 0)
    log.roll()  # 3
    log.append_as_leader(idem(3), 0)
    log.close()  # 6
    flip_byte(log.dir / f"{6:020d}.snapshot", 20)
    reopened = open_log(tmp_path, clock)
    assert reopened.producer_state.snapshot_offsets == [3]
    entry = reopened.producer_state.last_entry(PID)
    assert entry is not None and entry.last_seq == 5


def test_snapshots_above_the_log_end_offset_are_deleted_on_load(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(idem(0), 0)
    log.close()
    stray = log.dir / f"{500:020d}.snapshot"
    stray.write_bytes(encode_snapshot([]))
    reopened = open_log(tmp_path, clock)
    assert not stray.exists()
    assert reopened.producer_state.snapshot_offsets == [3]


def test_retention_deletes_snapshots_below_the_log_start_offset_but_keeps_the_latest(
    log: Log,
) -> None:
    for n in range(4):
        log.append_as_leader(idem(3 * n), 0)
        log.roll()
    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(7)
    log.delete_old_segments()
    assert log.log_start_offset == 7
    assert log.producer_state.snapshot_offsets == [9, 12]
    log.maybe_increment_log_start_offset(12)
    log.delete_old_segments()
    assert log.producer_state.snapshot_offsets == [12]
    # The producer's batches are gone, its state is not (until it expires).
    assert log.append_as_leader(idem(12), 0).first_offset == 12


# -- expiration --------------------------------------------------------------------------------


def test_idle_producers_expire(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, producer_id_expiration_ms=60_000)
    log.append_as_leader(idem(0, 1, pid=1, ts=clock.wall_ms()), 0)
    clock.advance(30_000)
    log.append_as_leader(idem(0, 1, pid=2, ts=clock.wall_ms()), 0)
    clock.advance(29_999)
    assert log.remove_expired_producers() == 0
    clock.advance(1)  # Kafka's rule: idle for producer.id.expiration.ms or more
    assert log.remove_expired_producers() == 1
    assert sorted(log.producer_state.producers) == [2]
    with pytest.raises(UnknownProducerIdError):
        log.append_as_leader(idem(1, 1, pid=1, ts=clock.wall_ms()), 0)
    assert log.append_as_leader(idem(0, 1, pid=1, ts=clock.wall_ms()), 0).first_offset == 2


def test_expired_entries_are_not_loaded_from_a_snapshot(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock, producer_id_expiration_ms=60_000)
    log.append_as_leader(idem(0, 1, ts=clock.wall_ms()), 0)
    log.close()
    clock.advance(60_000)
    reopened = open_log(tmp_path, clock, producer_id_expiration_ms=60_000)
    assert not reopened.producer_state.producers


def test_log_manager_expires_producers_on_its_interval_and_snapshots_on_shutdown(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    manager = open_manager(
        tmp_path,
        producer_id_expiration_ms=1_000_000,
        producer_id_expiration_check_interval_ms=600_000,
    )
    log = manager.get_or_create_log(TP)
    log.append_as_leader(idem(0, ts=clock.wall_ms()), 0)
    clock.advance(600_000)
    manager.tick()
    assert PID in log.producer_state.producers, "not idle long enough yet"
    clock.advance(600_000)
    manager.tick()
    assert not log.producer_state.producers
    log.append_as_leader(idem(0, ts=clock.wall_ms()), 0)
    manager.shutdown()
    assert snapshot_files(log) == [f"{6:020d}.snapshot"]

    restarted = open_manager(tmp_path, producer_id_expiration_ms=1_000_000)
    reloaded = restarted.get_log(TP)
    assert reloaded is not None
    assert reloaded.append_as_leader(idem(0, ts=clock.wall_ms()), 0).duplicate
