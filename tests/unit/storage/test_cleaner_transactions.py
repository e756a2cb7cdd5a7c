"""The log cleaner and transactions (Kafka's ``LogCleaner`` with ``CleanedTransactionMetadata``).

Real compacted logs with 1 KiB segments, real cleaner threads (``tick`` / ``await_idle`` /
``tick``, as in ``test_cleaner``). Transactional batches are idempotent batches with the
transactional bit; markers are Kafka's end-transaction control batches appended as the
coordinator's WriteTxnMarkers appends them. The HW follows the LEO (one replica), so the LSO
is the first offset of the earliest ongoing transaction, else the LEO.

The reference for what a READ_COMMITTED consumer sees is Kafka's consumer logic
(``CompletedFetch``: the aborted transactions of the fetch, ``consumeAbortedTransactionsUpTo``,
an ABORT marker ends its producer's aborted transaction, control batches are not returned)
over the log's batches below the LSO and ``Log.collect_aborted_transactions``. After a round
it must equal that view before the round, compacted by key below the round's upper bound.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from franz.clock import ManualClock
from franz.protocol.records.batch import RecordBatchView
from franz.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_txn_marker_batch,
    read_end_txn_marker,
)
from franz.protocol.records.inflated import RecordBatchBuilder, iter_records
from franz.storage.cleaner import LogCleaner
from franz.storage.cleaner.cleaner import Cleaner
from franz.storage.cleaner.manager import CleanerConfig, LogCleanerManager
from franz.storage.cleaner.thread import build_job
from franz.storage.files import CLEANED_SUFFIX, SWAP_SUFFIX
from franz.storage.index.txn_index import AbortedTxn
from franz.storage.log import Log
from tests.unit.storage.test_cleaner import (
    DELETE_RETENTION_MS,
    KV,
    Row,
    append_each,
    batches,
    clean_round,
    fast_config,
    open_log,
    oracle,
)

P1 = 1001
P2 = 2002


class Producer:
    """A transactional producer writing straight into a log (sequences tracked)."""

    def __init__(self, lg: Log, clock: ManualClock, pid: int, epoch: int = 0) -> None:
        self.lg, self.clock, self.pid, self.epoch, self.seq = lg, clock, pid, epoch, 0

    def send(self, records: Sequence[KV]) -> list[int]:
        builder = RecordBatchBuilder(
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=self.seq,
            is_transactional=True,
        )
        for key, value in records:
            builder.append(self.clock.wall_ms(), key, value)
        info = self.lg.append_as_leader(builder.build(), 0)
        self.seq += len(records)
        self._advance()
        return list(range(info.first_offset, info.last_offset + 1))

    def end(self, commit: bool) -> int:
        control = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
        batch = build_end_txn_marker_batch(
            EndTransactionMarker(control, 0),
            producer_id=self.pid,
            producer_epoch=self.epoch,
            timestamp=self.clock.wall_ms(),
        )
        offset = self.lg.append_as_leader(batch, 0, from_client=False).first_offset
        self._advance()
        return offset

    def _advance(self) -> None:
        self.lg.update_high_watermark(self.lg.log_end_offset)
        self.clock.advance(1)


def filler(lg: Log, clock: ManualClock, count: int, prefix: bytes = b"f") -> list[Row]:
    """``count`` plain records with keys of their own (one batch each): they roll segments
    and stay through any cleaning."""
    return append_each(lg, clock, [(prefix + b"%d" % i, b"x") for i in range(count)])


def read_committed(lg: Log) -> list[Row]:
    """What a READ_COMMITTED consumer reads from the log start (see the module docstring)."""
    lso = lg.last_stable_offset
    aborted = sorted(
        lg.collect_aborted_transactions(lg.log_start_offset, lso), key=lambda t: t.first_offset
    )
    aborted_pids: set[int] = set()
    out: list[Row] = []
    for batch in batches(lg):
        if batch.base_offset >= lso:
            break
        while aborted and aborted[0].first_offset <= batch.last_offset:
            aborted_pids.add(aborted.pop(0).producer_id)
        if batch.is_control_batch:
            end = read_end_txn_marker(batch)
            if end is not None and not end[0].is_commit:
                aborted_pids.discard(batch.producer_id)
            continue
        if batch.is_transactional and batch.producer_id in aborted_pids:
            continue
        out.extend((r.offset, r.key, r.value) for r in iter_records(batch) if r.offset < lso)
    return out


def markers(lg: Log) -> list[tuple[int, int, bool, int | None]]:
    """(offset, producer id, commit, delete horizon or None) of every non-empty marker."""
    out = []
    for batch in batches(lg):
        end = read_end_txn_marker(batch) if batch.is_control_batch else None
        if end is not None:
            horizon = batch.base_timestamp if batch.has_delete_horizon else None
            out.append((batch.base_offset, batch.producer_id, end[0].is_commit, horizon))
    return out


def data_batches(lg: Log, pid: int) -> list[RecordBatchView]:
    return [b for b in batches(lg) if b.producer_id == pid and not b.is_control_batch]


def txn_index(lg: Log) -> list[AbortedTxn]:
    return [txn for segment in lg.segments for txn in segment.txn_index]


@pytest.fixture
def cleaner(tmp_path: Path, clock: ManualClock) -> Iterator[LogCleaner]:
    made = LogCleaner([tmp_path], clock, fast_config())
    made.startup()
    yield made
    made.shutdown()


def clean_and_check(cleaner: LogCleaner, lg: Log) -> int:
    """One round; asserts the READ_COMMITTED view is the view before, compacted below the
    round's upper bound. Returns that bound."""
    before = read_committed(lg)
    ltc = cleaner.manager.log_to_clean(lg, cleaner._clock.wall_ms())
    assert clean_round(cleaner, lg)
    assert read_committed(lg) == oracle(before, ltc.upper_bound_offset, drop_tombstones=False)
    return ltc.upper_bound_offset


# -- aborted data, committed data, markers --------------------------------------------------


def test_aborted_records_go_committed_compact_and_markers_go_after_their_horizon(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    lg = open_log(tmp_path, clock)
    p1 = Producer(lg, clock, P1)
    aborted = p1.send([(b"k1", b"a1"), (b"k2", b"a2")])
    abort_at = p1.end(commit=False)
    superseded = p1.send([(b"k1", b"b1")])
    commit_superseded_at = p1.end(commit=True)
    (plain_k1,) = [r[0] for r in append_each(lg, clock, [(b"k1", b"z1")])]
    kept = p1.send([(b"k9", b"c9")])
    commit_kept_at = p1.end(commit=True)
    filler(lg, clock, 30)
    assert commit_kept_at < lg.active_segment.base_offset
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in txn_index(lg)] == [
        (P1, aborted[0], abort_at)
    ]

    # Round 1: the aborted records and the superseded committed record go; both markers
    # stay, since their transactions had batches in this round.
    clean_and_check(cleaner, lg)
    offsets = {r.offset for b in batches(lg) for r in iter_records(b)}
    assert not set(aborted) & offsets and superseded[0] not in offsets
    assert {plain_k1, *kept} <= offsets
    assert markers(lg) == [
        (abort_at, P1, False, None),
        (commit_superseded_at, P1, True, None),
        (commit_kept_at, P1, True, None),
    ]
    # The cleaned segment holding the ABORT marker indexes its transaction, as before.
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in txn_index(lg)] == [
        (P1, aborted[0], abort_at)
    ]

    # Round 2 (new dirty data): the markers whose transactions have nothing left get a
    # delete horizon; the index entry goes with the aborted data.
    filler(lg, clock, 30, b"g")
    now = clock.wall_ms()
    clean_and_check(cleaner, lg)
    horizon = now + DELETE_RETENTION_MS
    assert markers(lg) == [
        (abort_at, P1, False, horizon),
        (commit_superseded_at, P1, True, horizon),
        (commit_kept_at, P1, True, None),
    ]
    assert txn_index(lg) == []

    # Before the horizon nothing is cleanable; once it passes a round runs on its own
    # (no new data) and removes the two markers.
    clock.advance(horizon - clock.wall_ms() - 1)
    assert not clean_round(cleaner, lg)
    clock.advance(1)
    clean_and_check(cleaner, lg)
    assert markers(lg) == [(commit_kept_at, P1, True, None)]
    assert [r.value for b in data_batches(lg, P1) for r in iter_records(b)] == [b"c9"]


def test_an_aborted_record_does_not_supersede_an_earlier_value_of_its_key(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    # buildOffsetMap skips aborted batches: the committed value before them is the latest.
    lg = open_log(tmp_path, clock)
    ((committed, _, _),) = append_each(lg, clock, [(b"k", b"committed")])
    p1 = Producer(lg, clock, P1)
    p1.send([(b"k", b"aborted")])
    p1.end(commit=False)
    p1.send([(b"other", b"last")])  # P1's last data batch: the aborted one is not kept empty
    p1.end(commit=True)
    filler(lg, clock, 30)
    clean_and_check(cleaner, lg)
    values = {r.offset: r.value for b in batches(lg) for r in iter_records(b)}
    assert values[committed] == b"committed" and b"aborted" not in values.values()
    assert (committed, b"k", b"committed") in read_committed(lg)


def test_interleaved_transactions_keep_the_read_committed_view_and_the_txnindex(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    lg = open_log(tmp_path, clock)
    p1, p2 = Producer(lg, clock, P1), Producer(lg, clock, P2)
    filler(lg, clock, 8)
    first = p1.send([(b"a", b"p1-aborted"), (b"b", b"p1-aborted")])
    p2.send([(b"a", b"p2-committed")])
    filler(lg, clock, 14, b"g")  # P1's transaction spans two source segments
    p1.send([(b"c", b"p1-aborted")])
    p2.send([(b"b", b"p2-committed")])
    abort_at = p1.end(commit=False)
    p2_commit = p2.end(commit=True)
    filler(lg, clock, 30, b"h")
    (entry,) = txn_index(lg)
    assert lg.segments[0].base_offset <= first[0] < lg.segments[1].base_offset <= abort_at

    clean_and_check(cleaner, lg)
    # P1's last data batch stays as an empty batch (its producer state: last sequence), so
    # its transaction still has a batch and the ABORT stays, indexed as it was.
    (empty,) = data_batches(lg, P1)
    assert empty.records_count == 0 and empty.last_sequence == 2 and empty.is_transactional
    assert [m[:3] for m in markers(lg)] == [(abort_at, P1, False), (p2_commit, P2, True)]
    assert txn_index(lg) == [entry]
    cleaned = lg.segments[lg._segment_index_for(abort_at)]
    assert cleaned.txn_index.path.exists() and cleaned.base_offset <= abort_at
    assert {r[2] for r in read_committed(lg)} >= {b"p2-committed"}
    assert b"p1-aborted" not in {r[2] for r in read_committed(lg)}

    # The view and the index survive a restart (the .txnindex is read from disk).
    view = read_committed(lg)
    lg.close()
    reopened = open_log(tmp_path, clock)
    try:
        reopened.update_high_watermark(reopened.log_end_offset)  # the HW checkpoint's job
        assert txn_index(reopened) == [entry]
        assert read_committed(reopened) == view
    finally:
        reopened.close()


# -- the first unstable offset ------------------------------------------------------------------


def test_an_ongoing_transaction_stops_the_cleaning_at_its_segment(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    lg = open_log(tmp_path, clock)
    append_each(lg, clock, [(b"k%d" % (i % 3), b"old%d" % i) for i in range(20)])
    p1 = Producer(lg, clock, P1)
    (ongoing,) = p1.send([(b"k0", b"in-txn")])
    append_each(lg, clock, [(b"k%d" % (i % 3), b"new%d" % i) for i in range(40)])
    assert lg.last_stable_offset == ongoing
    holding = lg.segments[lg._segment_index_for(ongoing)]
    assert holding is not lg.active_segment and holding is not lg.segments[0]
    untouched = [(s.base_offset, s.read_bytes(0, s.size)) for s in lg.segments]
    untouched = [(base, data) for base, data in untouched if base >= holding.base_offset]

    first_dirty, uncleanable, _ = cleaner.manager.cleanable_offsets(lg, clock.wall_ms())
    assert uncleanable == ongoing
    bound = clean_and_check(cleaner, lg)
    assert bound == holding.base_offset
    # The segment holding the ongoing transaction and everything after it are as written.
    after = [(s.base_offset, s.read_bytes(0, s.size)) for s in lg.segments]
    assert [(b, d) for b, d in after if b >= bound] == untouched
    first_dirty, _, _ = cleaner.manager.cleanable_offsets(lg, clock.wall_ms())
    assert first_dirty <= bound

    # Once committed, the next round compacts its record like any other: superseded by
    # later plain records, it goes; its marker stays while the round saw its batch.
    commit_at = p1.end(commit=True)
    filler(lg, clock, 30)
    clean_and_check(cleaner, lg)
    assert ongoing not in {r.offset for b in batches(lg) for r in iter_records(b)}
    assert [m[:3] for m in markers(lg)] == [(commit_at, P1, True)]


def test_a_marker_of_the_current_epoch_is_kept_empty_when_it_is_all_a_producer_has(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    # Kafka's isBatchLastRecordOfProducer, third case: a producer with no data batch in its
    # current epoch keeps a marker of that epoch (it carries the epoch that fences zombies),
    # as an empty batch once its horizon has passed. Its older marker and data go.
    lg = open_log(tmp_path, clock)
    p1 = Producer(lg, clock, P1)
    (aborted,) = p1.send([(b"k", b"aborted")])
    abort_at = p1.end(commit=False)
    fence_at = Producer(lg, clock, P1, epoch=1).end(commit=False)  # epoch bumped, no txn
    entry = lg.producer_state.last_entry(P1)
    assert entry is not None and (entry.producer_epoch, entry.last_data_offset) == (1, -1)
    filler(lg, clock, 30)

    clean_and_check(cleaner, lg)  # the data goes; its ABORT stays (the round saw the data)
    assert data_batches(lg, P1) == []
    first_horizon = clock.wall_ms() + DELETE_RETENTION_MS
    assert markers(lg) == [(abort_at, P1, False, None), (fence_at, P1, False, first_horizon)]

    clock.advance(DELETE_RETENTION_MS)
    filler(lg, clock, 15, b"g")
    second_horizon = clock.wall_ms() + DELETE_RETENTION_MS
    clean_and_check(cleaner, lg)  # the fencing marker is emptied, the ABORT gets a horizon
    assert markers(lg) == [(abort_at, P1, False, second_horizon)]

    clock.advance(DELETE_RETENTION_MS)
    filler(lg, clock, 15, b"h")
    clean_and_check(cleaner, lg)
    mine = [b for b in batches(lg) if b.producer_id == P1]
    assert [
        (b.base_offset, b.records_count, b.is_control_batch, b.producer_epoch) for b in mine
    ] == [(fence_at, 0, True, 1)]
    assert aborted not in {r[0] for r in read_committed(lg)}
    assert txn_index(lg) == []


# -- the .txnindex through a crash during the swap ----------------------------------------------


@pytest.mark.parametrize("swapped", [("log",), ("log", "index", "timeindex", "txnindex")])
def test_a_crash_during_the_swap_keeps_the_txnindex_with_its_segment(
    tmp_path: Path, clock: ManualClock, swapped: tuple[str, ...]
) -> None:
    # The cleaned .txnindex is one of the swapped files: with every file .swap the loader
    # completes the swap (the cleaned index comes in), otherwise it rolls the group back
    # (the original index stays). The READ_COMMITTED view is the same either way.
    lg = open_log(tmp_path, clock)
    p1, p2 = Producer(lg, clock, P1), Producer(lg, clock, P2)
    p1.send([(b"a", b"p1-aborted")])
    p2.send([(b"a", b"p2-committed")])
    p1.end(commit=False)
    p2.end(commit=True)
    filler(lg, clock, 30)
    (entry,) = txn_index(lg)
    view = read_committed(lg)
    manager = LogCleanerManager([tmp_path], clock)
    job, _ = build_job(
        manager.log_to_clean(lg, clock.wall_ms()), CleanerConfig(), 10_000, clock.wall_ms()
    )
    result = Cleaner(10_000).clean(job)
    assert result.ok
    group = result.groups[0]
    prefix = f"{group.base_offset:020d}"
    assert (lg.dir / f"{prefix}.txnindex{CLEANED_SUFFIX}").exists()
    for name in swapped:
        os.replace(
            lg.dir / f"{prefix}.{name}{CLEANED_SUFFIX}", lg.dir / f"{prefix}.{name}{SWAP_SUFFIX}"
        )
    lg.close()
    reopened = open_log(tmp_path, clock)
    try:
        reopened.update_high_watermark(reopened.log_end_offset)
        assert txn_index(reopened) == [entry]
        completed = len(swapped) == 4
        offsets = {r.offset for b in batches(reopened) for r in iter_records(b)}
        assert (0 in offsets) is not completed  # P1's aborted record: gone iff swapped in
        assert read_committed(reopened) == view
        assert not [
            p for p in reopened.dir.iterdir() if p.name.endswith((CLEANED_SUFFIX, SWAP_SUFFIX))
        ]
    finally:
        reopened.close()
