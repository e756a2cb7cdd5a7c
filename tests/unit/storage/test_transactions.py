"""Transactions in the log: producer state, the LSO, ``.txnindex`` files, recovery, truncation.

Everything runs against a real ``Log`` on real files (``tmp_path``) with a ``ManualClock``.
Transactional batches are idempotent batches with the isTransactional bit (0x10); markers are
Kafka's end-transaction control batches (``build_end_txn_marker_batch``), appended as the
coordinator's WriteTxnMarkers appends them (``from_client=False``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from franz.clock import ManualClock
from franz.errors import (
    ErrorCode,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    TransactionCoordinatorFencedError,
    error_code_for,
)
from franz.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_txn_marker_batch,
)
from franz.protocol.records.inflated import RecordBatchBuilder
from franz.storage.index.txn_index import AbortedTxn
from franz.storage.log import Log
from franz.storage.producer_state import read_snapshot
from franz.storage.transactions import CompletedTxn, TransactionState, TxnMetadata
from tests.unit.storage.conftest import CLOCK_START_MS, TP, small_config

P1 = 1001
P2 = 2002


def data(
    seq: int,
    count: int = 2,
    *,
    pid: int = P1,
    epoch: int = 0,
    transactional: bool = True,
) -> bytearray:
    """A producer's batch of ``count`` records from sequence ``seq`` (transactional by default)."""
    builder = RecordBatchBuilder(
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=transactional,
    )
    for i in range(count):
        builder.append(CLOCK_START_MS + i, b"k%d" % i, b"v" * 20)
    return builder.build()


def plain(count: int = 2) -> bytearray:
    builder = RecordBatchBuilder()
    for i in range(count):
        builder.append(CLOCK_START_MS + i, None, b"plain")
    return builder.build()


def marker(commit: bool, *, pid: int = P1, epoch: int = 0, coordinator_epoch: int = 0) -> bytearray:
    control = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    return build_end_txn_marker_batch(
        EndTransactionMarker(control, coordinator_epoch),
        producer_id=pid,
        producer_epoch=epoch,
        timestamp=CLOCK_START_MS,
    )


def end_txn(log: Log, commit: bool, **kwargs: Any) -> int:
    """Append a marker as the coordinator does; returns its offset."""
    return log.append_as_leader(marker(commit, **kwargs), 0, from_client=False).first_offset


def open_log(path: Path, clock: ManualClock, **kwargs: Any) -> Log:
    return Log(path / TP.dir_name, TP, small_config(), clock, **kwargs)


def txn_index_path(log: Log, base: int) -> Path:
    return log.dir / f"{base:020d}.txnindex"


def read_txn_index_file(path: Path) -> list[AbortedTxn]:
    raw = path.read_bytes()
    return [AbortedTxn.decode(raw, i) for i in range(0, len(raw), 34)]


def index_entries(log: Log) -> list[AbortedTxn]:
    return [txn for segment in log.segments for txn in segment.txn_index]


@pytest.fixture
def log(tmp_path: Path, clock: ManualClock) -> Log:
    return open_log(tmp_path, clock)


# -- the LSO ----------------------------------------------------------------------------------


def test_an_ongoing_transaction_holds_the_lso_at_its_first_offset(log: Log) -> None:
    log.append_as_leader(plain(), 0)  # 0-1
    log.update_high_watermark(log.log_end_offset)
    assert (log.first_unstable_offset, log.last_stable_offset) == (None, 2)
    assert log.append_as_leader(data(0, 3), 0).first_offset == 2  # 2-4
    log.append_as_leader(plain(), 0)  # 5-6
    for hw in (3, 5, 7):
        log.update_high_watermark(hw)
        assert log.first_unstable_offset == 2
        assert log.last_stable_offset == 2
    entry = log.producer_state.last_entry(P1)
    assert entry is not None and entry.current_txn_first_offset == 2


def test_the_lso_is_the_hw_while_the_hw_is_below_the_first_unstable_offset(log: Log) -> None:
    log.append_as_leader(plain(), 0)  # 0-1
    log.append_as_leader(data(0), 0)  # 2-3
    log.update_high_watermark(1)
    assert (log.first_unstable_offset, log.last_stable_offset) == (2, 1)


def test_a_commit_moves_the_lso_once_the_hw_passes_its_marker(log: Log) -> None:
    log.append_as_leader(data(0, 3), 0)  # 0-2
    log.append_as_leader(plain(), 0)  # 3-4
    assert end_txn(log, commit=True) == 5
    log.update_high_watermark(5)  # the marker is not replicated yet
    assert (log.first_unstable_offset, log.last_stable_offset) == (0, 0)
    log.update_high_watermark(6)
    assert (log.first_unstable_offset, log.last_stable_offset) == (None, 6)
    assert log.producer_state.transactions.ongoing == []
    assert log.producer_state.transactions.unreplicated == []
    assert not txn_index_path(log, 0).exists()  # commits are not indexed, no file is made


# -- aborts and the .txnindex -------------------------------------------------------------------


def test_an_abort_is_indexed_in_the_marker_segment_with_kafkas_fields(log: Log) -> None:
    log.append_as_leader(data(0, 3), 0)  # 0-2
    assert end_txn(log, commit=False) == 3
    path = txn_index_path(log, 0)
    # version 0, producerId, firstOffset, lastOffset (the marker), lastStableOffset
    assert path.read_bytes() == (
        (0).to_bytes(2, "big")
        + P1.to_bytes(8, "big")
        + (0).to_bytes(8, "big")
        + (3).to_bytes(8, "big")
        + (4).to_bytes(8, "big")
    )
    assert index_entries(log) == [AbortedTxn(P1, 0, 3, 4)]
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 4


def test_collect_aborted_transactions_returns_only_the_overlapping_ones(log: Log) -> None:
    log.append_as_leader(data(0, 3), 0)  # 0-2
    end_txn(log, commit=False)  # 3
    log.append_as_leader(plain(), 0)  # 4-5
    log.update_high_watermark(log.log_end_offset)
    aborted = AbortedTxn(P1, 0, 3, 4)
    assert log.collect_aborted_transactions(0, 6) == [aborted]
    assert log.collect_aborted_transactions(2, 3) == [aborted]
    assert log.collect_aborted_transactions(3, 6) == [aborted]
    assert log.collect_aborted_transactions(4, 6) == []  # after the marker


def test_two_interleaved_producers(log: Log) -> None:
    log.append_as_leader(data(0, pid=P1), 0)  # 0-1
    log.append_as_leader(data(0, pid=P2), 0)  # 2-3
    log.append_as_leader(data(2, pid=P1), 0)  # 4-5
    assert end_txn(log, commit=False, pid=P1) == 6
    log.update_high_watermark(log.log_end_offset)
    # P2's transaction is ongoing: the LSO the abort establishes is its first offset.
    assert index_entries(log) == [AbortedTxn(P1, 0, 6, 2)]
    assert (log.first_unstable_offset, log.last_stable_offset) == (2, 2)
    assert end_txn(log, commit=False, pid=P2) == 7
    assert index_entries(log) == [AbortedTxn(P1, 0, 6, 2), AbortedTxn(P2, 2, 7, 8)]
    log.update_high_watermark(log.log_end_offset)
    assert (log.first_unstable_offset, log.last_stable_offset) == (None, 8)
    assert log.collect_aborted_transactions(0, 8) == index_entries(log)
    assert log.collect_aborted_transactions(7, 8) == [AbortedTxn(P2, 2, 7, 8)]
    assert log.collect_aborted_transactions(8, 9) == []


def test_the_search_stops_at_the_first_complete_segment(log: Log) -> None:
    log.append_as_leader(data(0), 0)  # 0-1
    end_txn(log, commit=False)  # 2, LSO 3
    log.roll()
    log.append_as_leader(data(2), 0)  # 3-4
    end_txn(log, commit=False)  # 5, LSO 6
    assert [seg.base_offset for seg in log.segments] == [0, 3]
    assert [len(seg.txn_index) for seg in log.segments] == [1, 1]
    first, second = AbortedTxn(P1, 0, 2, 3), AbortedTxn(P1, 3, 5, 6)
    # Segment 0's entry has LSO 3 >= the bound 3: its search is complete.
    assert log.collect_aborted_transactions(0, 3) == [first]
    assert log.collect_aborted_transactions(0, 6) == [first, second]
    assert log.collect_aborted_transactions(3, 6) == [second]


def test_a_marker_without_a_transaction_completes_nothing(log: Log) -> None:
    log.append_as_leader(data(0, transactional=False), 0)  # 0-1
    assert end_txn(log, commit=False, coordinator_epoch=3) == 2
    assert not txn_index_path(log, 0).exists()
    entry = log.producer_state.last_entry(P1)
    assert entry is not None and entry.coordinator_epoch == 3
    log.update_high_watermark(log.log_end_offset)
    assert log.last_stable_offset == 3


def test_a_marker_starts_no_transaction_and_keeps_the_producers_batches(log: Log) -> None:
    log.append_as_leader(data(0), 0)
    end_txn(log, commit=True)
    retried = log.append_as_leader(data(0), 0)
    assert retried.duplicate and retried.first_offset == 0


# -- checks ----------------------------------------------------------------------------------


def test_a_marker_with_an_older_producer_epoch_is_fenced(log: Log) -> None:
    log.append_as_leader(data(0, epoch=1), 0)  # 0-1
    end = log.log_end_offset
    with pytest.raises(InvalidProducerEpochError) as caught:
        end_txn(log, commit=True, epoch=0)
    assert error_code_for(caught.value) == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.log_end_offset == end
    assert log.first_unstable_offset == 0
    assert end_txn(log, commit=True, epoch=1) == 2
    assert log.producer_state.transactions.ongoing == []


def test_a_marker_from_an_older_coordinator_epoch_is_fenced(log: Log) -> None:
    log.append_as_leader(data(0), 0)
    end_txn(log, commit=True, coordinator_epoch=5)
    log.append_as_leader(data(2), 0)  # 3-4
    log.update_high_watermark(log.log_end_offset)
    end = log.log_end_offset
    with pytest.raises(TransactionCoordinatorFencedError) as caught:
        end_txn(log, commit=False, coordinator_epoch=4)
    assert error_code_for(caught.value) == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert log.log_end_offset == end
    assert log.first_unstable_offset == 3
    assert end_txn(log, commit=False, coordinator_epoch=5) == 5
    assert index_entries(log) == [AbortedTxn(P1, 3, 5, 6)]


def test_a_plain_batch_during_a_transaction_is_refused(log: Log) -> None:
    log.append_as_leader(data(0), 0)
    with pytest.raises(InvalidTxnStateError) as caught:
        log.append_as_leader(data(2, transactional=False), 0)
    assert error_code_for(caught.value) == ErrorCode.INVALID_TXN_STATE
    assert log.log_end_offset == 2
    assert log.append_as_leader(data(2), 0).first_offset == 2  # the transaction goes on


def test_a_marker_that_bumps_the_epoch_resets_the_sequence(log: Log) -> None:
    log.append_as_leader(data(0), 0)
    end_txn(log, commit=False, epoch=1)  # the coordinator bumped the epoch (abort on timeout)
    entry = log.producer_state.last_entry(P1)
    assert entry is not None and entry.producer_epoch == 1 and not entry.batches
    assert log.append_as_leader(data(0, epoch=1), 0).first_offset == 3


def test_a_follower_indexes_aborts_as_its_leader(tmp_path: Path, clock: ManualClock) -> None:
    leader = open_log(tmp_path / "leader", clock)
    leader.append_as_leader(data(0, pid=P1), 0)
    leader.append_as_leader(data(0, pid=P2), 0)
    end_txn(leader, commit=False, pid=P1)
    end_txn(leader, commit=True, pid=P2)
    leader.append_as_leader(data(2, pid=P1), 0)
    follower = open_log(tmp_path / "follower", clock)
    for segment in leader.segments:
        follower.append_as_follower(segment.log_path.read_bytes())
    assert follower.log_end_offset == leader.log_end_offset
    # P2's transaction (from offset 2) was ongoing when P1's abort was written.
    assert index_entries(follower) == index_entries(leader) == [AbortedTxn(P1, 0, 4, 2)]
    assert txn_index_path(follower, 0).read_bytes() == txn_index_path(leader, 0).read_bytes()
    follower.update_high_watermark(follower.log_end_offset)
    assert follower.last_stable_offset == 6


# -- restarts ---------------------------------------------------------------------------------


def _mixed_history(log: Log) -> None:
    """P1 aborts (0..4) while P2's transaction is open (LSO 2), P2 commits, P1 opens a
    transaction at 7 and leaves it open."""
    log.append_as_leader(data(0, pid=P1), 0)  # 0-1
    log.append_as_leader(data(0, pid=P2), 0)  # 2-3
    end_txn(log, commit=False, pid=P1, coordinator_epoch=2)  # 4
    end_txn(log, commit=True, pid=P2, coordinator_epoch=2)  # 5
    log.roll()
    log.append_as_leader(plain(1), 0)  # 6
    log.append_as_leader(data(2, pid=P1), 0)  # 7-8
    log.update_high_watermark(log.log_end_offset)


def test_a_clean_restart_restores_ongoing_transactions_from_the_snapshot(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    _mixed_history(log)
    log.close()
    entries = {e.producer_id: e for e in read_snapshot(log.dir / f"{9:020d}.snapshot")}
    assert (entries[P1].current_txn_first_offset, entries[P1].coordinator_epoch) == (7, 2)
    assert (entries[P2].current_txn_first_offset, entries[P2].coordinator_epoch) == (-1, 2)

    reopened = open_log(tmp_path, clock, high_watermark=9)
    assert reopened.producer_state.transactions.ongoing == [TxnMetadata(P1, 7)]
    assert (reopened.first_unstable_offset, reopened.last_stable_offset) == (7, 7)
    assert index_entries(reopened) == [AbortedTxn(P1, 0, 4, 2)]
    with pytest.raises(TransactionCoordinatorFencedError):
        end_txn(reopened, commit=False, coordinator_epoch=1)
    assert end_txn(reopened, commit=False, coordinator_epoch=2) == 9
    assert index_entries(reopened) == [AbortedTxn(P1, 0, 4, 2), AbortedTxn(P1, 7, 9, 10)]


def test_an_unclean_restart_rebuilds_the_txn_indexes_and_ongoing_transactions(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock)
    _mixed_history(log)
    end_txn(log, commit=False, pid=P1, coordinator_epoch=2)  # 9, in segment 6
    log.append_as_leader(data(4, pid=P1), 0)  # 10-11: a new transaction
    expected = [txn_index_path(log, base).read_bytes() for base in (0, 6)]
    log.close_without_flush()
    txn_index_path(log, 0).write_bytes(b"\x00" * 10)  # torn
    txn_index_path(log, 6).unlink()

    reopened = open_log(tmp_path, clock, had_clean_shutdown=False, high_watermark=12)
    assert [txn_index_path(reopened, base).read_bytes() for base in (0, 6)] == expected
    assert index_entries(reopened) == [AbortedTxn(P1, 0, 4, 2), AbortedTxn(P1, 7, 9, 10)]
    assert reopened.producer_state.transactions.ongoing == [TxnMetadata(P1, 10)]
    assert (reopened.first_unstable_offset, reopened.last_stable_offset) == (10, 10)
    assert reopened.collect_aborted_transactions(5, 12) == [AbortedTxn(P1, 7, 9, 10)]


@pytest.mark.parametrize("damage", ["missing offset index", "torn txn index"])
def test_an_index_rebuild_after_a_clean_restart_refills_the_txn_index(
    tmp_path: Path, clock: ManualClock, damage: str
) -> None:
    log = open_log(tmp_path, clock)
    _mixed_history(log)
    log.close()
    expected = txn_index_path(log, 0).read_bytes()
    if damage == "missing offset index":  # the loader recovers segment 0
        (log.dir / f"{0:020d}.index").unlink()
        txn_index_path(log, 0).unlink()
    else:  # fails the sanity check: segment 0 is recovered
        with txn_index_path(log, 0).open("ab") as f:
            f.write(b"\x00" * 5)
    reopened = open_log(tmp_path, clock, high_watermark=9)
    assert txn_index_path(reopened, 0).read_bytes() == expected
    assert reopened.producer_state.transactions.ongoing == [TxnMetadata(P1, 7)]


def test_an_orphaned_txn_index_is_removed(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(plain(), 0)
    log.close()
    orphan = txn_index_path(log, 500)
    orphan.write_bytes(AbortedTxn(P1, 500, 501, 502).encode())
    open_log(tmp_path, clock)
    assert not orphan.exists()


# -- truncation, retention, moves ---------------------------------------------------------------


def test_truncation_below_a_marker_reopens_the_transaction(log: Log) -> None:
    log.append_as_leader(data(0, 3), 0)  # 0-2
    end_txn(log, commit=False)  # 3
    log.update_high_watermark(log.log_end_offset)
    assert log.truncate_to(3)
    assert txn_index_path(log, 0).read_bytes() == b""
    assert log.producer_state.transactions.ongoing == [TxnMetadata(P1, 0)]
    assert log.first_unstable_offset == 0
    assert end_txn(log, commit=False) == 3
    assert index_entries(log) == [AbortedTxn(P1, 0, 3, 4)]


def test_truncation_across_segments_drops_their_txn_indexes(log: Log) -> None:
    log.append_as_leader(data(0), 0)  # 0-1
    end_txn(log, commit=False)  # 2
    log.roll()
    log.append_as_leader(data(2), 0)  # 3-4
    end_txn(log, commit=False)  # 5
    log.truncate_to(5)  # segment 3 keeps 3-4, its index loses the abort
    assert txn_index_path(log, 3).read_bytes() == b""
    assert index_entries(log) == [AbortedTxn(P1, 0, 2, 3)]
    assert log.producer_state.transactions.ongoing == [TxnMetadata(P1, 3)]
    log.truncate_to(3)  # segment 3 goes, with its index
    assert not txn_index_path(log, 3).exists()
    assert index_entries(log) == [AbortedTxn(P1, 0, 2, 3)]
    assert log.producer_state.transactions.ongoing == []


def test_truncating_fully_forgets_transactions(log: Log) -> None:
    log.append_as_leader(data(0), 0)
    end_txn(log, commit=False)
    log.truncate_fully_and_start_at(50)
    assert not txn_index_path(log, 0).exists()
    assert log.first_unstable_offset is None
    assert log.collect_aborted_transactions(50, 60) == []


def test_retention_deletes_a_segments_txn_index(log: Log) -> None:
    log.append_as_leader(data(0), 0)
    end_txn(log, commit=False)  # 2
    log.roll()
    log.append_as_leader(plain(), 0)
    log.update_high_watermark(log.log_end_offset)
    log.maybe_increment_log_start_offset(3)
    assert log.delete_old_segments() == 1
    assert not txn_index_path(log, 0).exists()
    deleted = log.dir / f"{0:020d}.txnindex.deleted"
    assert deleted.exists()
    log.delete_expired_files(force=True)
    assert not deleted.exists()
    assert log.collect_aborted_transactions(3, 5) == []


def test_a_renamed_log_dir_keeps_its_txn_index(tmp_path: Path, clock: ManualClock) -> None:
    log = open_log(tmp_path, clock)
    log.append_as_leader(data(0), 0)
    end_txn(log, commit=False)
    moved = tmp_path / "moved"
    log.rename_dir(moved)
    log.append_as_leader(data(2), 0)
    end_txn(log, commit=False)
    assert [txn.last_offset for txn in read_txn_index_file(moved / f"{0:020d}.txnindex")] == [2, 5]


def test_a_producer_with_an_ongoing_transaction_never_expires(
    tmp_path: Path, clock: ManualClock
) -> None:
    log = open_log(tmp_path, clock, producer_id_expiration_ms=60_000)
    log.append_as_leader(data(0, pid=P1), 0)
    log.append_as_leader(data(0, pid=P2, transactional=False), 0)
    clock.advance(120_000)
    assert log.remove_expired_producers() == 1
    assert set(log.producer_state.producers) == {P1}


# -- the transaction state alone --------------------------------------------------------------


def test_transaction_state_orders_by_first_offset_and_refuses_unknown_completions() -> None:
    state = TransactionState()
    state.start(TxnMetadata(P2, 10))
    state.start(TxnMetadata(P1, 4))
    assert state.first_unstable_offset() == state.first_undecided_offset() == 4
    done = CompletedTxn(P1, 4, 12, is_aborted=True)
    assert state.last_stable_offset(done) == 10
    state.complete(done)
    assert state.first_undecided_offset() == 10
    assert state.first_unstable_offset() == 4  # until the HW passes 12
    state.on_high_watermark_updated(12)
    assert state.first_unstable_offset() == 4
    state.on_high_watermark_updated(13)
    assert state.first_unstable_offset() == 10
    with pytest.raises(ValueError):
        state.complete(CompletedTxn(P1, 99, 100, is_aborted=False))
