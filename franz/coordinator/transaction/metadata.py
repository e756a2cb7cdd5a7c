"""A transactional id's metadata and its two-phase transitions, as Kafka 3.9 has them.

Kafka's names: ``TransactionMetadata`` and ``TxnTransitMetadata``
(``core/src/main/scala/kafka/coordinator/transaction/TransactionMetadata.scala``, 3.x),
checked against the Kafka 3.9.2 classes. ``value_for_transit`` / ``metadata_from_value`` are
the field mapping of ``TransactionLog.valueToBytes`` / ``readTxnRecordValue``.

Every change is two-phase, as in Kafka:

1. a ``prepare_*`` method checks the move against ``VALID_PREVIOUS_STATES``, records the
   target as ``pending_state`` (so no second transition can start) and returns an immutable
   ``TxnTransitMetadata``: the value to append to ``__transaction_state``;
2. once that append is replicated, ``complete_transition_to(transit)`` checks the transit
   against the current metadata (Kafka's ``completeTransitionTo`` rules, below) and applies
   it; if the append failed, the driver clears ``pending_state`` instead (Kafka's
   ``TransactionStateManager`` does the same).

``complete_transition_to`` accepts a transit only if its state is ``pending_state`` and:

* Empty (InitProducerId): same epoch or a valid bump (epoch + 1, or epoch 0 with a new
  producer id), no partitions, start timestamp -1;
* Ongoing (AddPartitionsToTxn): same producer id and epoch, a superset of the current
  partitions, the same timeout;
* PrepareCommit / PrepareAbort (EndTxn): same producer id and epoch, the same partitions,
  timeout and start timestamp;
* CompleteCommit / CompleteAbort (markers written): same producer id and epoch and timeout,
  a start timestamp other than -1;
* PrepareEpochFence and Dead are never completed (Kafka: the former is cleared by
  ``endTransaction``, see ``apply_epoch_fence``; the latter ends in a tombstone and removal
  from the cache).

Anything else raises ``IllegalTransactionStateError`` (Kafka's ``IllegalStateException``, a
coordinator bug, never a client error); an invalid new producer id or epoch raises
``ValueError`` (``IllegalArgumentException``).

Concurrency: Kafka guards each metadata with a lock (``inLock``); franz's coordinator owns
it on its one event loop. No clock is read: every timestamp is an argument in ms.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from franz.coordinator.transaction.log_schema import (
    TransactionLogRecordError,
    TransactionLogValue,
    group_partitions,
)
from franz.coordinator.transaction.states import TransactionState
from franz.errors import ErrorCode, FranzError

__all__ = [
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "IllegalTransactionStateError",
    "TopicPartition",
    "TransactionMetadata",
    "TxnTransitMetadata",
    "is_epoch_exhausted",
    "metadata_from_value",
    "value_for_transit",
]

NO_PRODUCER_ID: Final = -1
"""``RecordBatch.NO_PRODUCER_ID``."""
NO_PRODUCER_EPOCH: Final = -1
"""``RecordBatch.NO_PRODUCER_EPOCH``."""
_SHORT_MAX: Final = (1 << 15) - 1
_NO_TIMESTAMP: Final = -1

TopicPartition = tuple[str, int]
"""``(topic, partition)``: Kafka's ``TopicPartition``."""

_S = TransactionState


class IllegalTransactionStateError(FranzError):
    """A transition Kafka refuses with ``IllegalStateException``: a coordinator bug."""


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """``TransactionMetadata.isEpochExhausted``: epoch >= Short.MaxValue - 1, so that the
    coordinator can always bump once more to fence an existing producer."""
    return producer_epoch >= _SHORT_MAX - 1


@dataclass(frozen=True, slots=True)
class TxnTransitMetadata:
    """The target of a prepared transition (Kafka's ``TxnTransitMetadata``): immutable, what is
    written to ``__transaction_state`` (see ``value_for_transit``) and then completed."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int


@dataclass(slots=True)
class TransactionMetadata:
    """One transactional id's state (Kafka's ``TransactionMetadata``); mutable, single owner.

    * ``producer_id`` / ``producer_epoch``: the current producer; ``last_producer_id`` /
      ``last_producer_epoch``: the previous ones (KIP-360: let a producer that lost the
      InitProducerId response retry with its old epoch). Neither "last" value is stored in
      the 3.9 log, so both are -1 after a load.
    * ``txn_start_timestamp``: when the first partition of the current transaction was added
      (-1 when none); ``txn_last_update_timestamp``: the last change (drives expiry).
    * ``pending_state``: the target of a prepared, not yet completed transition.
    * ``has_failed_epoch_fence``: a previous fence's write failed, so the next fence reuses the
      already bumped epoch instead of bumping again (never returned to a client).
    """

    transactional_id: str
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = _NO_TIMESTAMP
    txn_last_update_timestamp: int = _NO_TIMESTAMP
    pending_state: TransactionState | None = None
    has_failed_epoch_fence: bool = False

    @classmethod
    def create(
        cls,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        txn_timeout_ms: int,
        timestamp_ms: int,
        state: TransactionState = _S.EMPTY,
    ) -> TransactionMetadata:
        """Kafka's ``TransactionMetadata.apply``: no last producer, no partitions, both
        timestamps ``timestamp_ms``. InitProducerId creates a new id this way with producer
        epoch -1 (the first ``prepare_increment_producer_epoch`` makes it 0)."""
        return cls(
            transactional_id,
            producer_id,
            NO_PRODUCER_ID,
            producer_epoch,
            NO_PRODUCER_EPOCH,
            txn_timeout_ms,
            state,
            set(),
            timestamp_ms,
            timestamp_ms,
        )

    # --- queries -----------------------------------------------------------------------------

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        """``isProducerEpochExhausted``: InitProducerId must rotate the producer id instead."""
        return is_epoch_exhausted(self.producer_epoch)

    @property
    def pending_transition_in_progress(self) -> bool:
        """``pendingTransitionInProgress``: a prepared transition awaits its log append."""
        return self.pending_state is not None

    def should_expire(self, now_ms: int, transactional_id_expiration_ms: int) -> bool:
        """``TransactionStateManager.shouldExpire``: an expirable state, idle for at least
        ``transactional.id.expiration.ms`` (default 604800000, 7 days)."""
        return (
            self.state.is_expiration_allowed
            and self.txn_last_update_timestamp <= now_ms - transactional_id_expiration_ms
        )

    # --- direct changes ------------------------------------------------------------------------

    def add_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """``addPartitions`` (used on load and by ``complete_transition_to``)."""
        self.topic_partitions.update(partitions)

    def remove_partition(self, topic_partition: TopicPartition) -> None:
        """``removePartition``: a partition's marker was written (only while preparing)."""
        if self.state not in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            raise IllegalTransactionStateError(
                f"Transaction metadata's current state is {self.state.kafka_name}, and its"
                f" pending state is {self._pending_name()} while trying to remove partitions"
                " whose txn marker has been sent, this is not expected"
            )
        self.topic_partitions.discard(topic_partition)

    def apply_epoch_fence(self, producer_epoch: int) -> None:
        """The step ``TransactionCoordinator.endTransaction`` takes (with ``isFromClient``
        false) when the pending state is PrepareEpochFence: clear it and adopt
        ``producer_epoch`` -- the fence transit's epoch -- with no last epoch, before
        ``prepare_abort_or_commit(PREPARE_ABORT, ...)``. Kafka sets the fields inline."""
        if self.pending_state is not _S.PREPARE_EPOCH_FENCE:
            raise IllegalTransactionStateError(
                f"TransactionalId {self.transactional_id} has pending state"
                f" {self._pending_name()}, not PrepareEpochFence"
            )
        self.pending_state = None
        self.producer_epoch = producer_epoch
        self.last_producer_epoch = NO_PRODUCER_EPOCH

    # --- prepare -------------------------------------------------------------------------------

    def prepare_no_transit(self) -> TxnTransitMetadata:
        """``prepareNoTransit``: the current values, without setting a pending state (Kafka
        uses it to answer a retried EndTxn and for an InitProducerId that changes nothing)."""
        return TxnTransitMetadata(
            self.producer_id,
            self.last_producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            self.state,
            frozenset(self.topic_partitions),
            self.txn_start_timestamp,
            self.txn_last_update_timestamp,
        )

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """``prepareFenceProducerEpoch``: Ongoing -> PrepareEpochFence with epoch + 1 (the
        same epoch again after a failed fence), last epoch -1, the last update unchanged."""
        if self.producer_epoch == _SHORT_MAX:
            raise IllegalTransactionStateError(
                "Cannot fence producer with epoch equal to Short.MaxValue since this would overflow"
            )
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare_transition_to(
            _S.PREPARE_EPOCH_FENCE,
            self.producer_id,
            bumped,
            NO_PRODUCER_EPOCH,
            self.txn_timeout_ms,
            frozenset(self.topic_partitions),
            self.txn_start_timestamp,
            self.txn_last_update_timestamp,
        )

    def prepare_increment_producer_epoch(
        self, new_txn_timeout_ms: int, expected_producer_epoch: int | None, update_timestamp: int
    ) -> TxnTransitMetadata | ErrorCode:
        """``prepareIncrementProducerEpoch``: InitProducerId on an id with no pending
        transaction -> Empty with a bumped epoch.

        KIP-360 (``expected_producer_epoch`` is the request's ``ProducerEpoch`` when it named
        an existing producer, None otherwise):

        * None: bump; the last epoch becomes -1 (a new producer fences all older ones);
        * the current epoch, or no current epoch (-1): bump, remembering the current epoch as
          the last one (a producer recovering from an abortable error);
        * the last epoch: a retry whose first attempt succeeded; keep epoch and last epoch;
        * anything else: ``ErrorCode.PRODUCER_FENCED``, nothing prepared.

        The expected *producer id* check (and rotating an exhausted id with
        ``prepare_producer_id_rotation``) is the coordinator's
        (``TransactionCoordinator.prepareInitProducerIdTransit``).
        """
        if self.is_producer_epoch_exhausted:
            raise IllegalTransactionStateError(
                f"Cannot allocate any more producer epochs for producerId {self.producer_id}"
            )
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            next_epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif (
            self.producer_epoch == NO_PRODUCER_EPOCH
            or expected_producer_epoch == self.producer_epoch
        ):
            next_epoch, last_epoch = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            next_epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            return ErrorCode.PRODUCER_FENCED
        return self._prepare_transition_to(
            _S.EMPTY,
            self.producer_id,
            next_epoch,
            last_epoch,
            new_txn_timeout_ms,
            frozenset(),
            _NO_TIMESTAMP,
            update_timestamp,
        )

    def prepare_producer_id_rotation(
        self,
        new_producer_id: int,
        new_txn_timeout_ms: int,
        update_timestamp: int,
        record_last_epoch: bool,
    ) -> TxnTransitMetadata:
        """``prepareProducerIdRotation``: -> Empty with a new producer id at epoch 0 (the old
        epoch is exhausted, or KIP-360's fresh id); the last epoch is the current one if
        ``record_last_epoch`` (so a retry can be recognised), else -1."""
        if self.state.has_pending_transaction:
            raise IllegalTransactionStateError(
                "Cannot rotate producer ids while a transaction is still pending"
            )
        return self._prepare_transition_to(
            _S.EMPTY,
            new_producer_id,
            0,
            self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            new_txn_timeout_ms,
            frozenset(),
            _NO_TIMESTAMP,
            update_timestamp,
        )

    def prepare_add_partitions(
        self, added: Iterable[TopicPartition], update_timestamp: int
    ) -> TxnTransitMetadata:
        """``prepareAddPartitions``: -> Ongoing with the union of partitions; a transaction
        that starts here (from Empty, CompleteCommit or CompleteAbort) starts now."""
        if self.state in (_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT):
            start = update_timestamp
        else:
            start = self.txn_start_timestamp
        return self._prepare_transition_to(
            _S.ONGOING,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            frozenset(self.topic_partitions).union(added),
            start,
            update_timestamp,
        )

    def prepare_abort_or_commit(
        self, new_state: TransactionState, update_timestamp: int
    ) -> TxnTransitMetadata:
        """``prepareAbortOrCommit``: -> ``new_state`` (PrepareCommit or PrepareAbort), all
        else unchanged but the last update."""
        return self._prepare_transition_to(
            new_state,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            frozenset(self.topic_partitions),
            self.txn_start_timestamp,
            update_timestamp,
        )

    def prepare_complete(self, update_timestamp: int) -> TxnTransitMetadata:
        """``prepareComplete``: PrepareCommit -> CompleteCommit, otherwise -> CompleteAbort,
        with no partitions. Clears ``has_failed_epoch_fence`` (the abort that followed the
        fence was written, so the bumped epoch is on disk)."""
        new_state = _S.COMPLETE_COMMIT if self.state is _S.PREPARE_COMMIT else _S.COMPLETE_ABORT
        self.has_failed_epoch_fence = False
        return self._prepare_transition_to(
            new_state,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            frozenset(),
            self.txn_start_timestamp,
            update_timestamp,
        )

    def prepare_dead(self) -> TxnTransitMetadata:
        """``prepareDead``: expiry; -> Dead, no partitions, timestamps unchanged. Completed by
        a tombstone and removal from the cache, never by ``complete_transition_to``."""
        return self._prepare_transition_to(
            _S.DEAD,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.txn_timeout_ms,
            frozenset(),
            self.txn_start_timestamp,
            self.txn_last_update_timestamp,
        )

    def _prepare_transition_to(
        self,
        new_state: TransactionState,
        new_producer_id: int,
        new_epoch: int,
        new_last_epoch: int,
        new_txn_timeout_ms: int,
        new_topic_partitions: frozenset[TopicPartition],
        new_txn_start_timestamp: int,
        update_timestamp: int,
    ) -> TxnTransitMetadata:
        """``prepareTransitionTo``; the transit's last producer id is the *current* one."""
        if self.pending_state is not None:
            raise IllegalTransactionStateError(
                f"Preparing transaction state transition to {new_state.kafka_name} while it"
                f" already a pending state {self.pending_state.kafka_name}"
            )
        if new_producer_id < 0:
            raise ValueError(f"Illegal new producer id {new_producer_id}")
        # The epoch is -1 from creation until the first InitProducerId completes, and may stay
        # so until the id expires: only Dead may carry it.
        if new_state is not _S.DEAD and new_epoch < 0:
            raise ValueError(f"Illegal new producer epoch {new_epoch}")
        if self.state not in new_state.valid_previous_states:
            raise IllegalTransactionStateError(
                f"Preparing transaction state transition to {new_state.kafka_name} failed since"
                f" the target state {new_state.kafka_name} is not a valid previous state of the"
                f" current state {self.state.kafka_name}"
            )
        transit = TxnTransitMetadata(
            new_producer_id,
            self.producer_id,
            new_epoch,
            new_last_epoch,
            new_txn_timeout_ms,
            new_state,
            new_topic_partitions,
            new_txn_start_timestamp,
            update_timestamp,
        )
        self.pending_state = new_state
        return transit

    # --- complete ------------------------------------------------------------------------------

    def complete_transition_to(self, transit: TxnTransitMetadata) -> None:
        """``completeTransitionTo``: apply ``transit`` after its log append (rules: module doc)."""
        to_state = self.pending_state
        if to_state is None:
            raise IllegalTransactionStateError(
                f"TransactionalId {self.transactional_id} completing transaction state"
                " transition while it does not have a pending state"
            )
        if to_state is not transit.txn_state:
            self._fail(transit)
        if to_state is _S.EMPTY:
            if (
                (self.producer_epoch != transit.producer_epoch and not self._valid_bump(transit))
                or transit.topic_partitions
                or transit.txn_start_timestamp != _NO_TIMESTAMP
            ):
                self._fail(transit)
            self.txn_timeout_ms = transit.txn_timeout_ms
            self.producer_epoch = transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.producer_id = transit.producer_id
            self.last_producer_id = transit.last_producer_id
        elif to_state is _S.ONGOING:
            if (
                not self._same_producer(transit)
                or not self.topic_partitions <= transit.topic_partitions
                or self.txn_timeout_ms != transit.txn_timeout_ms
            ):
                self._fail(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.add_partitions(transit.topic_partitions)
        elif to_state in (_S.PREPARE_ABORT, _S.PREPARE_COMMIT):
            if (
                not self._same_producer(transit)
                or self.topic_partitions != transit.topic_partitions
                or self.txn_timeout_ms != transit.txn_timeout_ms
                or self.txn_start_timestamp != transit.txn_start_timestamp
            ):
                self._fail(transit)
        elif to_state in (_S.COMPLETE_ABORT, _S.COMPLETE_COMMIT):
            if (
                not self._same_producer(transit)
                or self.txn_timeout_ms != transit.txn_timeout_ms
                or transit.txn_start_timestamp == _NO_TIMESTAMP
            ):
                self._fail(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.topic_partitions.clear()
        elif to_state is _S.PREPARE_EPOCH_FENCE:
            # Never completed: endTransaction clears it on the way to PrepareAbort.
            self._fail(transit)
        else:  # DEAD
            raise IllegalTransactionStateError(
                f"TransactionalId {self.transactional_id} is trying to complete a transition to"
                " Dead. This means that the transactionalId was being expired, and the only"
                " acceptable completion of this operation is to remove the transaction metadata"
                " from the cache, not to persist the Dead in the log."
            )
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.pending_state = None
        self.state = to_state

    def _same_producer(self, transit: TxnTransitMetadata) -> bool:
        """``validProducerEpoch``: same producer id and epoch."""
        return (
            transit.producer_epoch == self.producer_epoch
            and transit.producer_id == self.producer_id
        )

    def _valid_bump(self, transit: TxnTransitMetadata) -> bool:
        """``validProducerEpochBump``: epoch + 1, or epoch 0 under a new producer id."""
        return transit.producer_epoch == self.producer_epoch + 1 or (
            transit.producer_epoch == 0 and transit.producer_id != self.producer_id
        )

    def _fail(self, transit: TxnTransitMetadata) -> None:
        """``throwStateTransitionFailure``: the metadata is left unchanged."""
        raise IllegalTransactionStateError(
            f"TransactionalId {self.transactional_id} failed transition to state {transit}"
            " due to unexpected metadata"
        )

    def _pending_name(self) -> str:
        return "None" if self.pending_state is None else self.pending_state.kafka_name


# --- the log value ---------------------------------------------------------------------------


def value_for_transit(transit: TxnTransitMetadata) -> TransactionLogValue:
    """The ``TransactionLogValue`` Kafka writes for ``transit`` (``valueToBytes``): null
    partitions for Empty (an Empty transit with partitions is refused), else grouped by topic.
    ``last_producer_id`` / ``last_producer_epoch`` are not stored (3.9)."""
    if transit.txn_state is _S.EMPTY and transit.topic_partitions:
        raise IllegalTransactionStateError(
            "Transaction is not expected to have any partitions since its state is Empty:"
            f" {transit}"
        )
    partitions = (
        None if transit.txn_state is _S.EMPTY else group_partitions(transit.topic_partitions)
    )
    return TransactionLogValue(
        producer_id=transit.producer_id,
        producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.txn_timeout_ms,
        state=transit.txn_state,
        partitions=partitions,
        last_update_timestamp_ms=transit.txn_last_update_timestamp,
        start_timestamp_ms=transit.txn_start_timestamp,
    )


def metadata_from_value(transactional_id: str, value: TransactionLogValue) -> TransactionMetadata:
    """``readTxnRecordValue``: the metadata a loaded value stands for. No last producer id or
    epoch (-1); the partitions of an Empty value are ignored. A non-Empty value with null
    partitions is refused (Kafka's loader would fail with a NullPointerException)."""
    metadata = TransactionMetadata(
        transactional_id,
        value.producer_id,
        NO_PRODUCER_ID,
        value.producer_epoch,
        NO_PRODUCER_EPOCH,
        value.transaction_timeout_ms,
        value.state,
        set(),
        value.start_timestamp_ms,
        value.last_update_timestamp_ms,
    )
    if value.state is not _S.EMPTY:
        if value.partitions is None:
            raise TransactionLogRecordError(
                f"TransactionLogValue of {transactional_id!r} in state"
                f" {value.state.kafka_name} has null transactionPartitions"
            )
        for topic, ids in value.partitions:
            metadata.add_partitions((topic, i) for i in ids)
    return metadata
