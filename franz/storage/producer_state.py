"""Idempotent-producer state of one partition (Kafka's ``ProducerStateManager``).

Per producer id seen in the partition's log, a ``ProducerStateEntry`` keeps the producer
epoch, the metadata of its last ``NUM_BATCHES_TO_RETAIN`` (5) appended batches (first/last
sequence, first/last offset, max timestamp) and the timestamp of its last batch. Only batch
headers feed it (producerId, producerEpoch, baseSequence, lastOffsetDelta, maxTimestamp,
attributes): records are never decoded, except the one record of an end-transaction marker.

Appends (``Log.append_as_leader``) check every batch with ``producerId >= 0`` *before*
anything is written, against the state as updated by the earlier batches of the same append
(Kafka's ``ProducerAppendInfo``). Checks by origin (Kafka's ``AppendOrigin``):

- ``CLIENT`` (Produce): duplicate detection, then epoch and sequence:

  * same epoch and (baseSequence, lastSequence) equal to one of the 5 cached batches: a
    *duplicate* (a retried batch). Nothing is appended; the caller acknowledges with the
    cached batch's offsets. When an append mixes duplicates with new batches,
    ``DuplicateSequenceError`` (DUPLICATE_SEQUENCE_NUMBER, 46) refuses all of it. (Kafka
    acknowledges the first duplicate and silently drops the rest; real producers send one
    batch per partition, so neither case arises in practice.)
  * epoch below the entry's: ``InvalidProducerEpochError`` (INVALID_PRODUCER_EPOCH, 47;
    Kafka >= 2.7 answers this rather than PRODUCER_FENCED for data batches).
  * no entry for the producer id and baseSequence != 0: ``UnknownProducerIdError``
    (UNKNOWN_PRODUCER_ID, 59): the producer's state is gone (expired, or its batches were
    deleted). This is the pre-KIP-360 rule; Kafka >= 2.5 accepts any sequence from a
    producer it holds no state for.
  * epoch above the entry's (a bumped epoch): baseSequence must be 0, else
    ``OutOfOrderSequenceError`` (OUT_OF_ORDER_SEQUENCE_NUMBER, 45).
  * same epoch: baseSequence must follow the last sequence, wrapping at Int32.MAX to 0
    (Kafka's ``incrementSequence``), else ``OutOfOrderSequenceError``.
  * baseSequence < 0 with a producer id: ``InvalidRecordError`` (Kafka's ``LogValidator``).

- ``COORDINATOR`` (broker-internal leader appends, WriteTxnMarkers): the epoch check only.
- ``REPLICATION`` (follower appends, and rebuilding from the log): no epoch or sequence
  checks.

Transactions (KIP-98; ``franz.storage.transactions`` has the life cycle and the LSO), for
every origin as Kafka 3.9's ``ProducerAppendInfo`` (no KIP-890 verification):

* a transactional data batch of a producer with no ongoing transaction starts one at its
  base offset (``currentTxnFirstOffset``); a non-transactional batch of a producer with one
  is refused with ``InvalidTxnStateError`` (INVALID_TXN_STATE, 48), replication included.
* an end-transaction marker (a control batch; its one record is decoded) with an epoch below
  the producer's: ``InvalidProducerEpochError``; with a coordinator epoch below the one last
  seen for the producer: ``TransactionCoordinatorFencedError`` (TRANSACTION_COORDINATOR_FENCED,
  52). Replication logs both instead. The marker ends the ongoing transaction (a
  ``CompletedTxn``, none if there was none), sets the producer's epoch and coordinator epoch,
  and keeps its cached batches unless the epoch changed. A control batch without records
  changes nothing (its transaction was cleaned away).

KIP-890 part 1 (``transaction_verification_enabled``, the broker's
``transaction.partition.verification.enable``; ``franz.storage.verification`` has the guard):
for ``CLIENT`` and ``COORDINATOR`` appends, a transactional data batch of a producer with no
ongoing transaction in the partition must carry the producer's current verification guard,
else ``InvalidTxnStateError`` ("Record was not part of an ongoing transaction"), checked
after the duplicate check and before the sequence checks, as Kafka's
``UnifiedLog.analyzeAndValidateProducerState``. Any transactional batch or marker of a
producer clears its verification entry once written (Kafka's ``updateProducers``).

Snapshots: ``franz.storage.producer_entry`` has the format (Kafka's ``PID_SNAPSHOT_MAP_SCHEMA``).
A snapshot restores ongoing transactions (``CurrentTxnFirstOffset``).

Expiration: an entry with no ongoing transaction whose last timestamp is
``producer.id.expiration.ms`` (Kafka default 86400000, one day) or more in the past is
removed by ``remove_expired_producers`` (called every
``producer.id.expiration.check.interval.ms``, default 600000) and skipped when a snapshot
is loaded. Entries of producers whose batches were all deleted by retention are
kept until they expire (Kafka >= 2.4, KIP-360).

Not thread-safe: owned by its ``Log``.
"""

from __future__ import annotations

import bisect
import enum
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Final

from franz.errors import (
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    TransactionCoordinatorFencedError,
    UnknownProducerIdError,
)
from franz.protocol.records.batch import RecordBatchView
from franz.protocol.records.control import read_end_txn_marker
from franz.storage.files import SNAPSHOT_SUFFIX, offset_from_file_name, segment_file
from franz.storage.producer_entry import (
    NUM_BATCHES_TO_RETAIN,
    PRODUCER_SNAPSHOT_VERSION,
    BatchMetadata,
    CorruptSnapshotError,
    ProducerStateEntry,
    decode_snapshot,
    encode_snapshot,
    read_snapshot,
    write_snapshot,
)
from franz.storage.transactions import CompletedTxn, TransactionState, TxnMetadata
from franz.storage.verification import VerificationGuard, VerificationStates

__all__ = [
    "DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS",
    "DEFAULT_PRODUCER_ID_EXPIRATION_MS",
    "NUM_BATCHES_TO_RETAIN",
    "PRODUCER_SNAPSHOT_VERSION",
    "AppendOrigin",
    "BatchMetadata",
    "CorruptSnapshotError",
    "ProducerAppendInfo",
    "ProducerStateEntry",
    "ProducerStateManager",
    "decode_snapshot",
    "encode_snapshot",
    "read_snapshot",
    "write_snapshot",
]

log = logging.getLogger(__name__)

#: ``producer.id.expiration.ms`` and ``producer.id.expiration.check.interval.ms`` defaults.
DEFAULT_PRODUCER_ID_EXPIRATION_MS: Final = 86_400_000
DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS: Final = 600_000

_INT32_MAX: Final = 2**31 - 1
_NONE: Final[frozenset[int]] = frozenset()


class AppendOrigin(enum.Enum):
    """Who appends, hence how much is checked (Kafka's ``AppendOrigin``)."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


@dataclass(frozen=True, slots=True)
class ProducerAppendInfo:
    """The outcome of checking one append (Kafka's ``ProducerAppendInfo``).

    ``updated``: the entries as they will be once the append is written (private copies;
    :meth:`ProducerStateManager.update` installs them). ``duplicates``: non-empty when every
    batch of the append was a duplicate; they are the cached batches, in request order.
    ``started``: the transactions the append begins; ``completed``: those its markers end,
    which the log indexes and completes once it is written
    (``franz.storage.transactions.complete_transactions``). ``transactional``: the producers
    with a transactional batch or marker in the append, whose verification entries the
    append clears (KIP-890).
    """

    updated: dict[int, ProducerStateEntry]
    duplicates: tuple[BatchMetadata, ...] = ()
    started: tuple[TxnMetadata, ...] = ()
    completed: tuple[CompletedTxn, ...] = ()
    transactional: frozenset[int] = frozenset()


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


class ProducerStateManager:
    """The producer entries of one partition and its ``.snapshot`` files."""

    def __init__(
        self,
        directory: Path,
        name: str,
        *,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        transaction_verification_enabled: bool = False,
    ) -> None:
        self.dir = directory
        self.name = name
        self.producer_id_expiration_ms = producer_id_expiration_ms
        #: ``transaction.partition.verification.enable`` (Kafka's
        #: ``ProducerStateManagerConfig.transactionVerificationEnabled``; the broker's
        #: default is true, a bare log's false).
        self.transaction_verification_enabled = transaction_verification_enabled
        self._producers: dict[int, ProducerStateEntry] = {}
        #: KIP-890 verifications in progress (Kafka's ``verificationStates``).
        self.verification_states = VerificationStates()
        #: Ongoing and unreplicated transactions (Kafka's ``ongoingTxns``/``unreplicatedTxns``).
        self.transactions = TransactionState()
        self._snapshots: list[int] = self._list_snapshots()

    # -- state ---------------------------------------------------------------------------

    @property
    def producers(self) -> Mapping[int, ProducerStateEntry]:
        """The active producers, by producer id (read-only view)."""
        return MappingProxyType(self._producers)

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def has_ongoing_transaction(self, producer_id: int) -> bool:
        """Kafka 3.9's ``UnifiedLog.hasOngoingTransaction`` (by producer id only)."""
        entry = self._producers.get(producer_id)
        return entry is not None and entry.current_txn_first_offset >= 0

    # -- KIP-890 verification ------------------------------------------------------------

    def _check_verified(
        self, batch: RecordBatchView, guard: VerificationGuard | None
    ) -> None:
        """Kafka's check in ``analyzeAndValidateProducerState``: a transactional data batch
        of a producer with no ongoing transaction needs the producer's current guard."""
        producer_id = batch.producer_id
        if self.has_ongoing_transaction(producer_id):
            return
        if self.verification_states.guard(producer_id).verify(guard):
            return
        raise InvalidTxnStateError("Record was not part of an ongoing transaction")

    # -- appends -------------------------------------------------------------------------

    def prepare_append(
        self,
        batches: Sequence[RecordBatchView],
        origin: AppendOrigin,
        verification_guard: VerificationGuard | None = None,
    ) -> ProducerAppendInfo:
        """Check ``batches`` (offsets already assigned) in order; nothing is changed yet.

        Raises the errors listed in the module docstring. Batches without a producer id pass
        through; control batches must be whole (their marker record is read).
        ``verification_guard``: the guard the leader's KIP-890 verification returned (none:
        the append was not verified).
        """
        updated: dict[int, ProducerStateEntry] = {}
        duplicates: list[BatchMetadata] = []
        started: list[TxnMetadata] = []
        completed: list[CompletedTxn] = []
        transactional: set[int] = set()
        verify = self.transaction_verification_enabled and origin is not AppendOrigin.REPLICATION
        fresh = 0
        for batch in batches:
            producer_id = batch.producer_id
            if producer_id < 0:
                fresh += 1
                continue
            entry = updated.get(producer_id)
            if entry is None:
                entry = self._producers.get(producer_id)
            if batch.is_control_batch:
                working = updated.get(producer_id)
                if working is None:
                    working = entry.copy() if entry is not None else ProducerStateEntry(producer_id)
                    updated[producer_id] = working
                self._append_marker(working, batch, origin, completed)
                if batch.is_transactional:
                    transactional.add(producer_id)
                fresh += 1
                continue
            epoch = batch.producer_epoch
            first_seq = batch.base_sequence
            is_txn = batch.is_transactional
            if origin is AppendOrigin.CLIENT:
                if first_seq < 0:
                    raise InvalidRecordError(
                        f"invalid sequence number {first_seq} in a record batch with "
                        f"producerId {producer_id} for {self.name}"
                    )
                last_seq = batch.last_sequence
                if entry is not None:
                    duplicate = entry.find_duplicate(epoch, first_seq, last_seq)
                    if duplicate is not None:
                        duplicates.append(duplicate)
                        continue
                if is_txn and verify:
                    self._check_verified(batch, verification_guard)
                self._check_sequence(entry, producer_id, epoch, first_seq, batch.base_offset)
            elif origin is AppendOrigin.COORDINATOR:
                if is_txn and verify:
                    self._check_verified(batch, verification_guard)
                if entry is not None:
                    self._check_epoch(entry, epoch, batch.base_offset)
            if is_txn:
                transactional.add(producer_id)
            working = updated.get(producer_id)
            if working is None:
                working = entry.copy() if entry is not None else ProducerStateEntry(producer_id)
                updated[producer_id] = working
            self._append_data(working, batch, started)
            fresh += 1
        if duplicates and fresh:
            raise DuplicateSequenceError(
                f"an append to {self.name} mixes {len(duplicates)} duplicate batch(es) with "
                f"{fresh} new one(s); producers send one batch per partition"
            )
        return ProducerAppendInfo(
            updated,
            tuple(duplicates),
            tuple(started),
            tuple(completed),
            frozenset(transactional) if transactional else _NONE,
        )

    def _append_data(
        self, entry: ProducerStateEntry, batch: RecordBatchView, started: list[TxnMetadata]
    ) -> None:
        """Kafka's ``appendDataBatch`` once the batch is checked: cache it, then the
        transaction rules (a transactional batch starts a transaction; a plain one during a
        transaction is refused)."""
        entry.add_batch(
            batch.producer_epoch,
            batch.base_sequence,
            batch.last_sequence,
            batch.base_offset,
            batch.last_offset,
            batch.max_timestamp,
        )
        transactional = batch.is_transactional
        if entry.current_txn_first_offset >= 0 and not transactional:
            raise InvalidTxnStateError(
                f"expected transactional write from producer {entry.producer_id} at offset "
                f"{batch.base_offset} in partition {self.name}"
            )
        if entry.current_txn_first_offset < 0 and transactional:
            entry.current_txn_first_offset = batch.base_offset
            started.append(TxnMetadata(entry.producer_id, batch.base_offset))

    def _append_marker(
        self,
        entry: ProducerStateEntry,
        batch: RecordBatchView,
        origin: AppendOrigin,
        completed: list[CompletedTxn],
    ) -> None:
        """Kafka's ``ProducerAppendInfo.appendEndTxnMarker`` (see the module docstring)."""
        found = read_end_txn_marker(batch)
        if found is None:
            return  # an empty control batch: the whole transaction was cleaned from the log
        marker, timestamp = found
        epoch, offset = batch.producer_epoch, batch.base_offset
        if epoch < entry.producer_epoch:
            if origin is not AppendOrigin.REPLICATION:
                self._check_epoch(entry, epoch, offset)
            log.warning(
                "epoch of producer %d at offset %d in %s is %d, which is smaller than the last "
                "seen epoch %d",
                entry.producer_id,
                offset,
                self.name,
                epoch,
                entry.producer_epoch,
            )
        if entry.coordinator_epoch > marker.coordinator_epoch:
            message = (
                f"invalid coordinator epoch for producerId {entry.producer_id} at offset "
                f"{offset} in partition {self.name}: {marker.coordinator_epoch} (zombie), "
                f"{entry.coordinator_epoch} (current)"
            )
            if origin is not AppendOrigin.REPLICATION:
                raise TransactionCoordinatorFencedError(message)
            log.info("%s", message)
        if entry.current_txn_first_offset >= 0:
            completed.append(
                CompletedTxn(
                    entry.producer_id,
                    entry.current_txn_first_offset,
                    offset,
                    is_aborted=not marker.is_commit,
                )
            )
        entry.end_txn(epoch, marker.coordinator_epoch, timestamp)

    def _check_epoch(self, entry: ProducerStateEntry, epoch: int, offset: int) -> None:
        if epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"epoch of producer {entry.producer_id} at offset {offset} in {self.name} is "
                f"{epoch}, which is smaller than the last seen epoch {entry.producer_epoch}"
            )

    def _check_sequence(
        self,
        entry: ProducerStateEntry | None,
        producer_id: int,
        epoch: int,
        first_seq: int,
        offset: int,
    ) -> None:
        if entry is None:
            if first_seq != 0:
                raise UnknownProducerIdError(
                    f"found no record of producerId {producer_id} on {self.name}: it may have "
                    f"expired or its batches were deleted; first sequence {first_seq} is not 0"
                )
            return
        self._check_epoch(entry, epoch, offset)
        if epoch != entry.producer_epoch:
            if first_seq != 0:
                raise OutOfOrderSequenceError(
                    f"invalid sequence number for new epoch of producer {producer_id} at offset "
                    f"{offset} in {self.name}: {epoch} (request epoch), {first_seq} (seq. "
                    f"number), {entry.producer_epoch} (current producer epoch)"
                )
        elif not _in_sequence(entry.last_seq, first_seq):
            raise OutOfOrderSequenceError(
                f"out of order sequence number for producer {producer_id} at offset {offset} "
                f"in {self.name}: {first_seq} (incoming seq. number), {entry.last_seq} "
                "(current end sequence number)"
            )

    def update(self, info: ProducerAppendInfo) -> None:
        """Install the entries of a checked append once it is written, and start its
        transactions. Its completed transactions are the log's to index and complete."""
        self._producers.update(info.updated)
        for txn in info.started:
            self.transactions.start(txn)
        if self.verification_states:
            # Kafka's updateProducers: the transaction has its first offset, or is over.
            for producer_id in info.transactional:
                self.verification_states.clear(producer_id)

    def replay(
        self,
        batches: Iterable[RecordBatchView],
        on_completed: Callable[[CompletedTxn, int], None] | None = None,
    ) -> int:
        """Apply batches as ``REPLICATION`` appends (rebuilding from the log; Kafka's
        ``loadProducersFromRecords`` and ``LogSegment.updateProducerState``). Data batches may
        be headers only; control batches must be whole.

        Each completed transaction is passed to ``on_completed`` with its LSO (recovery
        rebuilds ``.txnindex`` files with it), then completed. Returns how many batches
        carried a producer id. Raises ``InvalidTxnStateError`` as an append would.
        """
        producers = self._producers
        transactions = self.transactions
        applied = 0
        started: list[TxnMetadata] = []
        completed: list[CompletedTxn] = []
        for batch in batches:
            producer_id = batch.producer_id
            if producer_id < 0:
                continue
            entry = producers.get(producer_id)
            if entry is None:
                entry = producers[producer_id] = ProducerStateEntry(producer_id)
            if batch.is_control_batch:
                self._append_marker(entry, batch, AppendOrigin.REPLICATION, completed)
            else:
                self._append_data(entry, batch, started)
            for txn in started:
                transactions.start(txn)
            for done in completed:
                if on_completed is not None:
                    on_completed(done, transactions.last_stable_offset(done))
                transactions.complete(done)
            started.clear()
            completed.clear()
            applied += 1
        return applied

    # -- expiration ----------------------------------------------------------------------

    def _is_expired(self, entry: ProducerStateEntry, now_ms: int) -> bool:
        """Kafka's ``isProducerExpired``: a producer with an ongoing transaction never is."""
        return (
            entry.current_txn_first_offset < 0
            and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms
        )

    def remove_expired_producers(self, now_ms: int) -> int:
        """Drop entries idle for ``producer.id.expiration.ms``; returns how many."""
        expired = [pid for pid, e in self._producers.items() if self._is_expired(e, now_ms)]
        for producer_id in expired:
            del self._producers[producer_id]
        self.verification_states.remove_expired(now_ms, self.producer_id_expiration_ms)
        return len(expired)

    # -- snapshots -----------------------------------------------------------------------

    @property
    def snapshot_offsets(self) -> list[int]:
        return list(self._snapshots)

    @property
    def latest_snapshot_offset(self) -> int | None:
        return self._snapshots[-1] if self._snapshots else None

    def snapshot_path(self, offset: int) -> Path:
        return segment_file(self.dir, offset, SNAPSHOT_SUFFIX)

    def take_snapshot(self, offset: int) -> Path | None:
        """Write the current state as ``<offset>.snapshot`` if ``offset`` is past the latest
        snapshot (0 when there is none), as Kafka's ``takeSnapshot`` ("if not a new offset,
        then it is not worth taking another snapshot"): an empty log gets none, so stopping
        a broker with thousands of empty partitions costs no fsync for each.

        ``offset`` must be the log end offset (the state describes everything below it).
        Raises ``OSError``.
        """
        if offset <= (self._snapshots[-1] if self._snapshots else 0):
            return None
        path = self.snapshot_path(offset)
        write_snapshot(path, self._producers.values())
        bisect.insort(self._snapshots, offset)
        log.debug("wrote a producer snapshot of %s at offset %d", self.name, offset)
        return path

    def truncate_and_reload(
        self, log_start_offset: int, log_end_offset: int, now_ms: int, *, keep: bool = False
    ) -> int:
        """Forget the state; delete snapshots above ``log_end_offset``; load the latest.

        Returns the offset from which the log must be replayed: the loaded snapshot's
        offset, or ``log_start_offset`` when no snapshot is usable. Corrupt snapshots are
        deleted (with a warning) and the next older one is tried. ``keep``: delete nothing,
        only load the latest snapshot at or below ``log_end_offset`` (a scratch state, such
        as the loader's for rebuilding transaction indexes).
        """
        self._producers.clear()
        self.transactions.clear()
        usable = [o for o in self._snapshots if o <= log_end_offset]
        if not keep:
            for offset in self._snapshots[len(usable) :]:
                self._delete_snapshot(offset)
        while usable:
            offset = usable.pop()
            path = self.snapshot_path(offset)
            try:
                entries = read_snapshot(path)
            except (CorruptSnapshotError, FileNotFoundError) as exc:
                log.warning(
                    "failed to load the producer snapshot %s of %s: %s%s",
                    path,
                    self.name,
                    exc,
                    "" if keep else "; deleting it",
                )
                if not keep:
                    self._delete_snapshot(offset)
                continue
            for entry in entries:
                if not self._is_expired(entry, now_ms):
                    self._load_entry(entry)
            return offset
        return log_start_offset

    def _load_entry(self, entry: ProducerStateEntry) -> None:
        """Kafka's ``loadProducerEntry``: a snapshot's ongoing transaction is ongoing again."""
        self._producers[entry.producer_id] = entry
        if entry.current_txn_first_offset >= 0:
            self.transactions.start(TxnMetadata(entry.producer_id, entry.current_txn_first_offset))

    def truncate_fully(self) -> None:
        """Forget every producer and delete every snapshot (the log restarts empty)."""
        self._producers.clear()
        self.transactions.clear()
        for snapshot in list(self._snapshots):
            self._delete_snapshot(snapshot)

    def delete_snapshots_before(self, offset: int) -> int:
        """Delete snapshots below ``offset`` except the latest one; returns how many."""
        doomed = [o for o in self._snapshots[:-1] if o < offset]
        for snapshot in doomed:
            self._delete_snapshot(snapshot)
        return len(doomed)

    def _delete_snapshot(self, offset: int) -> None:
        self.snapshot_path(offset).unlink(missing_ok=True)
        self._snapshots.remove(offset)

    def _list_snapshots(self) -> list[int]:
        offsets = []
        if self.dir.is_dir():
            for path in self.dir.iterdir():
                if path.name.endswith(SNAPSHOT_SUFFIX):
                    try:
                        offsets.append(offset_from_file_name(path.name))
                    except ValueError:
                        continue
        return sorted(offsets)

    def __repr__(self) -> str:
        return (
            f"ProducerStateManager({self.name}, producers={len(self._producers)}, "
            f"snapshots={self._snapshots})"
        )
