"""The transaction coordinator's cache of ``__transaction_state`` and its log appends.

Kafka's name: ``TransactionStateManager`` (``core/.../coordinator/transaction/
TransactionStateManager.scala``, 3.9). It owns, per ``__transaction_state`` partition this
broker leads, the ``TransactionMetadata`` of each transactional id, and the partition's
*coordinator epoch*: the partition's leader epoch from the LeaderAndIsr that made this broker
its leader (every marker it writes carries it, so a partition leader can fence a stale
coordinator).

* ``get(transactional_id)`` answers as Kafka's ``getTransactionState``: NOT_COORDINATOR when
  the id's partition is not led here, COORDINATOR_LOAD_IN_PROGRESS while it loads, else the
  coordinator epoch and the metadata (None if unknown).
* ``append(transactional_id, coordinator_epoch, transit)`` is ``appendTransactionToLog``: the
  key and value of ``transit`` in one v2 batch, appended with acks=all through the
  ``TxnLogWriter`` (``franz.broker.txn_log``). On success, if this broker is still the
  coordinator at the same epoch, ``complete_transition_to`` applies the transit; otherwise
  the pending state is cleared. The append's errors map as Kafka's:
  UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT ->
  COORDINATOR_NOT_AVAILABLE; NOT_LEADER_OR_FOLLOWER, KAFKA_STORAGE_ERROR -> NOT_COORDINATOR;
  MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_FETCH_SIZE -> UNKNOWN_SERVER_ERROR; an
  epoch that changed meanwhile -> NOT_COORDINATOR.
* ``load_partition`` replays a partition's records (latest value per key wins, a tombstone
  removes the id, as ``loadTransactionMetadata``), ``unload_partition`` forgets it
  (``removeTransactionsForTxnTopicPartition``).
* ``timed_out_transactions(now)``: Ongoing transactions with no pending transition whose
  start + timeout is in the past (``timedOutTransactions``); ``expirable(now)``: ids that
  ``transactional.id.expiration.ms`` lets expire.

Concurrency: one owner, the broker's event loop; the awaits are the log appends, across which
``pending_state`` keeps a second transition from starting.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, Protocol

from franz.coordinator.transaction.log_schema import (
    TransactionLogRecordError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    partition_for,
)
from franz.coordinator.transaction.metadata import (
    TransactionMetadata,
    TxnTransitMetadata,
    metadata_from_value,
    value_for_transit,
)
from franz.coordinator.transaction.states import TransactionState
from franz.errors import ApiError, ErrorCode
from franz.protocol.records.inflated import build_batch

__all__ = [
    "TRANSACTION_STATE_TOPIC",
    "CoordinatorEpochAndMetadata",
    "TransactionStateManager",
    "TxnLogWriter",
    "append_error",
]

log = logging.getLogger(__name__)

TRANSACTION_STATE_TOPIC: Final = "__transaction_state"
"""Kafka's ``Topic.TRANSACTION_STATE_TOPIC_NAME``."""

_S = TransactionState

_APPEND_ERRORS: Final[dict[ErrorCode, ErrorCode]] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.NOT_COORDINATOR: ErrorCode.NOT_COORDINATOR,
}


def append_error(code: ErrorCode) -> ErrorCode:
    """``appendTransactionToLog``'s mapping of a failed append to the client's error."""
    return _APPEND_ERRORS.get(code, ErrorCode.UNKNOWN_SERVER_ERROR)


class TxnLogWriter(Protocol):
    """Appends the coordinator's batches to a ``__transaction_state`` partition with acks=all;
    raises an ``ApiError`` (its ``code``) when the append or its replication fails."""

    async def append(self, partition: int, batch: bytearray) -> None: ...


@dataclass(frozen=True, slots=True)
class CoordinatorEpochAndMetadata:
    """Kafka's ``CoordinatorEpochAndTxnMetadata``."""

    coordinator_epoch: int
    metadata: TransactionMetadata


class TransactionStateManager:
    """Kafka's ``TransactionStateManager`` (module docstring); time comes in as arguments."""

    def __init__(self, writer: TxnLogWriter, partition_count: int) -> None:
        self._writer = writer
        #: ``transaction.state.log.num.partitions``, or the existing topic's count.
        self.partition_count = partition_count
        self._epochs: dict[int, int] = {}
        self._loading: dict[int, int] = {}
        self._txns: dict[int, dict[str, TransactionMetadata]] = {}

    # --- ownership ------------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.partition_count)

    def begin_loading(self, partition: int, coordinator_epoch: int) -> None:
        """Elected: the partition answers COORDINATOR_LOAD_IN_PROGRESS until loaded."""
        self._epochs.pop(partition, None)
        self._txns.pop(partition, None)
        self._loading[partition] = coordinator_epoch

    def is_loading(self, partition: int, coordinator_epoch: int | None = None) -> bool:
        epoch = self._loading.get(partition)
        return epoch is not None and (coordinator_epoch is None or epoch == coordinator_epoch)

    def load_partition(
        self, partition: int, coordinator_epoch: int, records: Iterable[tuple[bytes, bytes | None]]
    ) -> list[TransactionMetadata]:
        """Replay ``(key, value)`` records in offset order; the partition is owned from now
        on. Returns the loaded metadata (the caller completes PrepareCommit/PrepareAbort)."""
        loaded: dict[str, TransactionMetadata] = {}
        for key, value in records:
            try:
                transactional_id = decode_key(key)
            except TransactionLogRecordError as exc:
                log.warning("skipping a %s record: %s", TRANSACTION_STATE_TOPIC, exc)
                continue
            if value is None:
                loaded.pop(transactional_id, None)
            else:
                loaded[transactional_id] = metadata_from_value(
                    transactional_id, decode_value(value)
                )
        self._loading.pop(partition, None)
        self._epochs[partition] = coordinator_epoch
        self._txns[partition] = loaded
        return list(loaded.values())

    def unload_partition(self, partition: int, coordinator_epoch: int | None = None) -> int:
        """Resigned: forget the partition (only at ``coordinator_epoch`` if given, as Kafka's
        ``removeTransactionsForTxnTopicPartition``); how many ids were dropped."""
        current = self._epochs.get(partition, self._loading.get(partition))
        if coordinator_epoch is not None and current is not None and current > coordinator_epoch:
            return 0
        self._loading.pop(partition, None)
        self._epochs.pop(partition, None)
        return len(self._txns.pop(partition, {}))

    def owned_partitions(self) -> list[int]:
        return sorted(self._epochs)

    def any_loading(self) -> bool:
        return bool(self._loading)

    def coordinator_epoch(self, partition: int) -> int | None:
        return self._epochs.get(partition)

    # --- lookups ----------------------------------------------------------------------------

    def get(self, transactional_id: str) -> CoordinatorEpochAndMetadata | ErrorCode | None:
        """``getTransactionState``: an error, None (unknown id), or epoch and metadata."""
        partition = self.partition_for(transactional_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        epoch = self._epochs.get(partition)
        if epoch is None:
            return ErrorCode.NOT_COORDINATOR
        metadata = self._txns[partition].get(transactional_id)
        return None if metadata is None else CoordinatorEpochAndMetadata(epoch, metadata)

    def put_if_absent(
        self, metadata: TransactionMetadata
    ) -> CoordinatorEpochAndMetadata | ErrorCode:
        """``putTransactionStateIfNotExists``."""
        current = self.get(metadata.transactional_id)
        if isinstance(current, ErrorCode | CoordinatorEpochAndMetadata):
            return current
        partition = self.partition_for(metadata.transactional_id)
        self._txns[partition][metadata.transactional_id] = metadata
        return CoordinatorEpochAndMetadata(self._epochs[partition], metadata)

    def all_metadata(self) -> Iterator[TransactionMetadata]:
        for txns in self._txns.values():
            yield from txns.values()

    def timed_out_transactions(self, now_ms: int) -> list[TransactionMetadata]:
        """``timedOutTransactions``: Ongoing, no pending transition, start + timeout < now."""
        return [
            m
            for m in self.all_metadata()
            if m.state is _S.ONGOING
            and m.pending_state is None
            and m.txn_start_timestamp + m.txn_timeout_ms < now_ms
        ]

    def expirable(self, now_ms: int, expiration_ms: int) -> list[TransactionMetadata]:
        """Ids ``transactional.id.expiration.ms`` lets expire (no pending transition)."""
        return [
            m
            for m in self.all_metadata()
            if m.pending_state is None and m.should_expire(now_ms, expiration_ms)
        ]

    def remove(self, transactional_id: str) -> None:
        self._txns.get(self.partition_for(transactional_id), {}).pop(transactional_id, None)

    # --- appends ----------------------------------------------------------------------------

    async def append(
        self,
        transactional_id: str,
        coordinator_epoch: int,
        transit: TxnTransitMetadata,
        timestamp_ms: int,
    ) -> ErrorCode:
        """``appendTransactionToLog`` (module docstring): NONE once ``transit`` is written and
        applied, else the client's error (the pending state is then cleared)."""
        partition = self.partition_for(transactional_id)
        value = encode_value(value_for_transit(transit))
        batch = build_batch([(timestamp_ms, encode_key(transactional_id), value)])
        error = ErrorCode.NONE
        try:
            await self._writer.append(partition, batch)
        except ApiError as exc:
            error = append_error(exc.code)
            log.info(
                "appending %s's transition to %s failed: %s",
                transactional_id,
                transit.txn_state.kafka_name,
                exc,
            )
        current = self.get(transactional_id)
        if not isinstance(current, CoordinatorEpochAndMetadata) or (
            current.coordinator_epoch != coordinator_epoch
        ):
            # Resigned (or re-elected) meanwhile: the cache is not ours to change.
            return ErrorCode.NOT_COORDINATOR
        metadata = current.metadata
        if error is ErrorCode.NONE:
            metadata.complete_transition_to(transit)
        elif metadata.pending_state is transit.txn_state:
            metadata.pending_state = None
        return error

    async def write_tombstone(self, transactional_id: str, timestamp_ms: int) -> ErrorCode:
        """``writeTombstonesForExpiredTransactionalIds`` for one id: the key with a null value;
        then the id leaves the cache (its pending Dead state is dropped with it)."""
        partition = self.partition_for(transactional_id)
        batch = build_batch([(timestamp_ms, encode_key(transactional_id), None)])
        try:
            await self._writer.append(partition, batch)
        except ApiError as exc:
            current = self.get(transactional_id)
            if isinstance(current, CoordinatorEpochAndMetadata):
                current.metadata.pending_state = None
            return append_error(exc.code)
        self.remove(transactional_id)
        return ErrorCode.NONE
