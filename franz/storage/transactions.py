"""A partition's transactions: ongoing, completed-but-unreplicated, and the LSO (KIP-98).

Kafka keeps this in its ``ProducerStateManager`` (``ongoingTxns``, ``unreplicatedTxns``,
``firstUnstableOffset``, ``lastStableOffset(CompletedTxn)``, ``completeTxn``,
``onHighWatermarkUpdated``); here it is :class:`TransactionState`, owned by the partition's
``ProducerStateManager`` (``franz.storage.producer_state``), plus the ``Log``-side steps of
``UnifiedLog`` (:func:`complete_transactions`, :func:`collect_aborted_transactions`).

Life of a transaction in one partition (Kafka's rules, checked in apache/kafka
``ProducerAppendInfo.java``, ``ProducerStateManager.java``, ``LogSegment.java``,
``UnifiedLog.scala``):

1. The first transactional data batch (attributes bit 4) of a producer with no ongoing
   transaction starts one at the batch's base offset: the producer's
   ``currentTxnFirstOffset``, and a :class:`TxnMetadata` in ``ongoing`` keyed by it.
2. An end-transaction marker (a control batch, written by the coordinator through
   WriteTxnMarkers, or replicated) completes it: a :class:`CompletedTxn` (first offset,
   marker offset, aborted or not). A marker for a producer with no ongoing transaction
   completes nothing (an empty transaction never moved the LSO).
3. Once the marker is written, the log computes the LSO it establishes
   (:meth:`TransactionState.last_stable_offset`: the first offset of the earliest ongoing
   transaction of *another* producer, else the marker offset + 1); an ABORT is then appended
   to the ``.txnindex`` of the segment holding the marker as ``AbortedTxn(producerId,
   firstOffset, lastOffset = marker offset, lastStableOffset)`` (``LogSegment.updateTxnIndex``;
   commits are not indexed), and the transaction moves from ``ongoing`` to ``unreplicated``.
4. When the high watermark passes the marker (``lastOffset < HW``) it leaves ``unreplicated``
   (``onHighWatermarkUpdated``).

*First unstable offset* (FUO): the smallest first offset among ``ongoing`` and
``unreplicated`` transactions, raised to the log start offset. *Last stable offset* (LSO):
``min(FUO, HW)``, the HW when there is no FUO. A READ_COMMITTED consumer reads below the LSO.

Not thread-safe: owned by the partition's ``Log``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from franz.storage.index.txn_index import AbortedTxn

if TYPE_CHECKING:
    from franz.storage.log import Log
    from franz.storage.segment import LogSegment

__all__ = [
    "CompletedTxn",
    "TransactionState",
    "TxnMetadata",
    "collect_aborted_transactions",
    "complete_transactions",
]


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction ended by a marker in this partition (Kafka's ``CompletedTxn``).

    ``last_offset`` is the marker's offset.
    """

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool

    def aborted_txn(self, last_stable_offset: int) -> AbortedTxn:
        """The ``.txnindex`` entry of this (aborted) transaction (``new AbortedTxn(...)``)."""
        return AbortedTxn(self.producer_id, self.first_offset, self.last_offset, last_stable_offset)


@dataclass(slots=True)
class TxnMetadata:
    """An ongoing or unreplicated transaction (Kafka's ``TxnMetadata``); ``last_offset`` is
    the marker's offset once completed, None before."""

    producer_id: int
    first_offset: int
    last_offset: int | None = None


class TransactionState:
    """Kafka's ``ongoingTxns`` and ``unreplicatedTxns`` (both keyed and ordered by first
    offset). A partition has few (one per open transactional producer), so sorted lists of
    keys with ``bisect`` serve as Kafka's ``TreeMap``."""

    __slots__ = ("_ongoing", "_ongoing_keys", "_unreplicated", "_unreplicated_keys")

    def __init__(self) -> None:
        self._ongoing: dict[int, TxnMetadata] = {}
        self._ongoing_keys: list[int] = []
        self._unreplicated: dict[int, TxnMetadata] = {}
        self._unreplicated_keys: list[int] = []

    @property
    def ongoing(self) -> list[TxnMetadata]:
        """Ongoing transactions, by first offset."""
        return [self._ongoing[key] for key in self._ongoing_keys]

    @property
    def unreplicated(self) -> list[TxnMetadata]:
        """Completed transactions whose marker is not yet below the HW, by first offset."""
        return [self._unreplicated[key] for key in self._unreplicated_keys]

    def start(self, txn: TxnMetadata) -> None:
        """A transaction began at ``txn.first_offset`` (``ongoingTxns.put``)."""
        if txn.first_offset not in self._ongoing:
            bisect.insort(self._ongoing_keys, txn.first_offset)
        self._ongoing[txn.first_offset] = txn

    def last_stable_offset(self, completed: CompletedTxn) -> int:
        """The LSO once ``completed``'s marker is written (``lastStableOffset(CompletedTxn)``):
        the first offset of the earliest ongoing transaction of another producer, else the
        marker offset + 1. Call before :meth:`complete`."""
        for key in self._ongoing_keys:
            txn = self._ongoing[key]
            if txn.producer_id != completed.producer_id:
                return txn.first_offset
        return completed.last_offset + 1

    def complete(self, completed: CompletedTxn) -> None:
        """Move the transaction to ``unreplicated`` (``completeTxn``).

        Raises ``ValueError`` (Kafka's ``IllegalArgumentException``) if it was not started.
        """
        txn = self._ongoing.pop(completed.first_offset, None)
        if txn is None:
            raise ValueError(
                f"attempted to complete transaction {completed}, which was not started"
            )
        self._ongoing_keys.remove(completed.first_offset)
        txn.last_offset = completed.last_offset
        if completed.first_offset not in self._unreplicated:
            bisect.insort(self._unreplicated_keys, completed.first_offset)
        self._unreplicated[completed.first_offset] = txn

    def first_undecided_offset(self) -> int | None:
        """The first offset of the earliest ongoing transaction (``firstUndecidedOffset``)."""
        return self._ongoing_keys[0] if self._ongoing_keys else None

    def first_unstable_offset(self) -> int | None:
        """The smaller of the earliest ongoing and earliest unreplicated transactions' first
        offsets (``firstUnstableOffset``), None when there is neither."""
        candidates = [keys[0] for keys in (self._ongoing_keys, self._unreplicated_keys) if keys]
        return min(candidates) if candidates else None

    def on_high_watermark_updated(self, high_watermark: int) -> None:
        """Forget completed transactions whose marker is below ``high_watermark``
        (``onHighWatermarkUpdated`` / ``removeUnreplicatedTransactions``)."""
        doomed = [
            key
            for key in self._unreplicated_keys
            if (last := self._unreplicated[key].last_offset) is not None and last < high_watermark
        ]
        for key in doomed:
            del self._unreplicated[key]
            self._unreplicated_keys.remove(key)

    def clear(self) -> None:
        self._ongoing.clear()
        self._ongoing_keys.clear()
        self._unreplicated.clear()
        self._unreplicated_keys.clear()

    def __repr__(self) -> str:
        return f"TransactionState(ongoing={self.ongoing}, unreplicated={self.unreplicated})"


def complete_transactions(
    target: Log, segment: LogSegment, completed: Iterable[CompletedTxn]
) -> None:
    """The steps of ``UnifiedLog.append`` after the producer entries are installed: per
    completed transaction, compute its LSO, index it in ``segment`` (the one its marker was
    written to) if aborted, then complete it. Raises ``OSError`` (the index write)."""
    state = target.producer_state.transactions
    for txn in completed:
        segment.update_txn_index(txn, state.last_stable_offset(txn))
        state.complete(txn)


def collect_aborted_transactions(
    target: Log, start_offset: int, upper_bound_offset: int
) -> list[AbortedTxn]:
    """Kafka's ``UnifiedLog.collectAbortedTransactions``: from the segment holding
    ``start_offset`` (its floor; none below the first segment) onward, each segment's
    ``.txnindex`` entries overlapping ``[start_offset, upper_bound_offset)``, stopping after
    the first segment whose search is complete (an entry's LSO reached the bound)."""
    segments = target.segments
    if not segments or start_offset < segments[0].base_offset:
        return []
    bases = [segment.base_offset for segment in segments]
    aborted: list[AbortedTxn] = []
    for segment in segments[bisect.bisect_right(bases, start_offset) - 1 :]:
        result = segment.txn_index.collect_aborted_txns(start_offset, upper_bound_offset)
        aborted.extend(result.aborted_transactions)
        if result.is_complete:
            break
    return aborted
