"""What a cleaning round knows of transactions (Kafka's ``CleanedTransactionMetadata``).

Kafka's ``LogCleaner`` (3.9) walks the batches of a round in offset order and asks this
object, per batch, whether the transaction rules let it go (KIP-98, KIP-534):

- It is fed the aborted transactions (``.txnindex`` entries, ``AbortedTxn``) of the range it
  walks: for the offset map, ``Log.collectAbortedTransactions(firstDirty, upperBound)``; for
  the recopy, per source segment, those of the segment's whole range (so the cleaned
  segment's ``.txnindex`` can be rebuilt). They are consumed in ``firstOffset`` order.
- A transactional data batch whose producer has an aborted transaction begun at or before
  the batch's last offset belongs to that transaction: :meth:`on_batch_read` returns True
  (*discardable*) and records the batch's offset as observed. Any other transactional batch
  marks its producer as having committed data in the round.
- A control batch (:meth:`on_control_batch_read`): an ABORT marker whose transaction had a
  batch observed in this walk must stay (its data is still in the log); it is returned as
  not discardable and its ``AbortedTxn`` is appended to the cleaned segment's ``.txnindex``
  (:attr:`cleaned_index`). An ABORT whose transaction has no batch left is discardable, and
  so is a COMMIT whose producer had no transactional batch since its previous marker. An
  empty control batch (a marker the cleaner already emptied) is discardable. Other control
  types are kept.

"Discardable" for a marker is not "deleted now": the cleaner first gives it a delete horizon
(``now + delete.retention.ms`` in the batch header, KIP-534) and removes it only in a round
after that horizon.

Not thread-safe: one per round, on the cleaner thread.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass

from franz.protocol.records.batch import RecordBatchView
from franz.protocol.records.control import ControlRecordType, parse_control_record_type
from franz.protocol.records.inflated import iter_records
from franz.storage.index.txn_index import AbortedTxn

__all__ = ["CleanedTransactionMetadata"]


@dataclass(slots=True)
class _AbortedTxnState:
    """Kafka's ``AbortedTransactionMetadata``: an aborted transaction being walked."""

    txn: AbortedTxn
    last_observed_batch_offset: int | None = None


class CleanedTransactionMetadata:
    """Transaction state of one cleaning round; see the module docstring."""

    __slots__ = ("_aborted", "_ongoing_aborted", "_ongoing_committed", "cleaned_index")

    def __init__(self, aborted: Iterable[AbortedTxn] = ()) -> None:
        # A min-heap of aborted transactions by first offset (ties by the rest of the entry).
        self._aborted: list[tuple[int, AbortedTxn]] = []
        self._ongoing_committed: set[int] = set()
        self._ongoing_aborted: dict[int, _AbortedTxnState] = {}
        #: The ``.txnindex`` entries of the cleaned segment being written (None: not kept).
        self.cleaned_index: list[AbortedTxn] | None = None
        self.add_aborted_transactions(aborted)

    def add_aborted_transactions(self, aborted: Iterable[AbortedTxn]) -> None:
        for txn in aborted:
            heapq.heappush(self._aborted, (txn.first_offset, txn))

    def _consume_aborted_up_to(self, offset: int) -> None:
        while self._aborted and self._aborted[0][0] <= offset:
            _, txn = heapq.heappop(self._aborted)
            self._ongoing_aborted.setdefault(txn.producer_id, _AbortedTxnState(txn))

    def on_batch_read(self, batch: RecordBatchView) -> bool:
        """A data batch was reached; True if it belongs to an aborted transaction."""
        self._consume_aborted_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        state = self._ongoing_aborted.get(batch.producer_id)
        if state is not None:
            state.last_observed_batch_offset = batch.last_offset
            return True
        self._ongoing_committed.add(batch.producer_id)
        return False

    def on_control_batch_read(self, batch: RecordBatchView) -> bool:
        """A control batch was reached; True if it may be discarded (see the module doc)."""
        self._consume_aborted_up_to(batch.last_offset)
        first = next(iter_records(batch), None)
        if first is None:
            return True  # an empty control batch: a marker already cleaned
        control_type = parse_control_record_type(first.key)  # InvalidRecordError: corrupt
        producer_id = batch.producer_id
        if control_type is ControlRecordType.ABORT:
            state = self._ongoing_aborted.pop(producer_id, None)
            if state is not None and state.last_observed_batch_offset is not None:
                if self.cleaned_index is not None:
                    self.cleaned_index.append(state.txn)
                return False
            return True
        if control_type is ControlRecordType.COMMIT:
            if producer_id in self._ongoing_committed:
                self._ongoing_committed.discard(producer_id)
                return False
            return True
        return False
