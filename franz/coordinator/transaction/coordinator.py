"""The transaction coordinator: InitProducerId, AddPartitionsToTxn, EndTxn and their upkeep.

Kafka's name: ``TransactionCoordinator`` (``core/.../coordinator/transaction/
TransactionCoordinator.scala``, 3.9), with the marker completion of
``TransactionMarkerChannelManager``. Rules kept, as Kafka's:

* **InitProducerId** (``handleInitProducerId``): an empty id is INVALID_REQUEST; a timeout
  not in ``(0, transaction.max.timeout.ms]`` is INVALID_TRANSACTION_TIMEOUT; an unknown id
  is created (a new producer id, epoch -1, Empty). Then (``prepareInitProducerIdTransit``): a
  pending transition is CONCURRENT_TRANSACTIONS; an expected producer id (KIP-360) that is
  neither the current one, nor the last one with an exhausted epoch, while the epoch is not
  -1, is PRODUCER_FENCED; PrepareCommit/PrepareAbort are CONCURRENT_TRANSACTIONS;
  Empty/Complete* bump the epoch (a new producer id once it is exhausted); Ongoing fences
  the current producer (epoch + 1, PrepareEpochFence), aborts its transaction and answers
  CONCURRENT_TRANSACTIONS so that the client retries and gets a second bump.
* **AddPartitionsToTxn** (``handleAddPartitionsToTransaction``): unknown id or other producer
  id INVALID_PRODUCER_ID_MAPPING; other epoch PRODUCER_FENCED; pending transition or
  Prepare* CONCURRENT_TRANSACTIONS; partitions already in an Ongoing transaction NONE at
  once; else -> Ongoing, written to the log. ``verify_partitions`` is KIP-890's
  ``handleVerifyPartitionsInTransaction`` (AddPartitionsToTxn v4+ with VerifyOnly).
* **EndTxn** (``endTransaction``): other producer id INVALID_PRODUCER_ID_MAPPING; a client's
  epoch must equal the current one, the coordinator's own (a fence or a timeout) may be
  higher, else PRODUCER_FENCED; a pending transition (other than the fence) is
  CONCURRENT_TRANSACTIONS. Ongoing -> PrepareCommit/PrepareAbort, written, answered NONE;
  then the markers are written to every partition and CompleteCommit/CompleteAbort is
  logged. A retry of a completed EndTxn: CompleteCommit + commit and CompleteAbort + abort
  are NONE; PrepareCommit + commit and PrepareAbort + abort CONCURRENT_TRANSACTIONS; any
  other pairing, and Empty, INVALID_TXN_STATE.
* **Timeouts** (``abortTimedOutTransactions``, every
  ``transaction.abort.timed.out.transaction.cleanup.interval.ms``): an Ongoing transaction
  older than its timeout gets its epoch bumped (fence) and is aborted.
* **Expiry** (``transactional.id.expiration.ms``, checked every
  ``transaction.remove.expired.transaction.cleanup.interval.ms``): idle Empty/Complete* ids
  are tombstoned and forgotten.
* **Markers**: for every partition of a PrepareCommit/PrepareAbort transaction the
  ``MarkerWriter`` (``franz.broker.txn_marker_channel``) writes a COMMIT/ABORT marker with the
  coordinator epoch; NONE (or UNSUPPORTED_FOR_MESSAGE_FORMAT) removes the partition;
  INVALID_PRODUCER_EPOCH and TRANSACTION_COORDINATOR_FENCED stop the sending (this coordinator
  is stale); other errors are retried after ``MARKER_RETRY_BACKOFF_MS``. When none is left,
  the Complete* transition is logged (retried while COORDINATOR_NOT_AVAILABLE). Loading a
  partition resumes the markers of every Prepare* transaction (``loadTransactionsForTxn
  TopicPartition`` -> ``addTxnMarkersToSend``). A coordinator epoch that changed stops it all.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from franz.clock import Clock
from franz.coordinator.transaction.metadata import (
    NO_PRODUCER_EPOCH,
    TopicPartition,
    TransactionMetadata,
    TxnTransitMetadata,
    is_epoch_exhausted,
)
from franz.coordinator.transaction.state_manager import (
    CoordinatorEpochAndMetadata,
    TransactionStateManager,
)
from franz.coordinator.transaction.states import TransactionState
from franz.errors import ErrorCode

__all__ = [
    "MARKER_RETRY_BACKOFF_MS",
    "InitProducerIdResult",
    "MarkerWriter",
    "TransactionConfig",
    "TransactionCoordinator",
    "prepare_end",
]

log = logging.getLogger(__name__)

_S = TransactionState

#: Between two attempts at a marker that could not be written (Kafka's channel retries on its
#: next poll, ``retry.backoff.ms`` 100).
MARKER_RETRY_BACKOFF_MS: Final = 100

#: A marker's outcome that counts as written (Kafka's ``TransactionMarkerRequestCompletion
#: Handler``: UNSUPPORTED_FOR_MESSAGE_FORMAT partitions are skipped).
_MARKER_DONE: Final = frozenset({ErrorCode.NONE, ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT})
#: A marker's outcome that means this coordinator is stale: stop sending.
_MARKER_FENCED: Final = frozenset(
    {ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.TRANSACTION_COORDINATOR_FENCED}
)


class MarkerWriter(Protocol):
    """Writes one transaction's markers to its partitions' leaders; per-partition outcomes
    (``franz.broker.txn_marker_channel.TxnMarkerChannel``)."""

    async def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        partitions: Sequence[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]: ...


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    """Kafka's ``TransactionConfig`` (broker keys of the same names)."""

    transaction_max_timeout_ms: int = 900_000
    transactional_id_expiration_ms: int = 604_800_000
    abort_timed_out_transactions_interval_ms: int = 10_000
    remove_expired_transactional_ids_interval_ms: int = 3_600_000

    @classmethod
    def from_broker_config(cls, get: Callable[[str], Any]) -> TransactionConfig:
        return cls(
            get("transaction.max.timeout.ms"),
            get("transactional.id.expiration.ms"),
            get("transaction.abort.timed.out.transaction.cleanup.interval.ms"),
            get("transaction.remove.expired.transaction.cleanup.interval.ms"),
        )


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error: ErrorCode
    producer_id: int = -1
    producer_epoch: int = -1


class TransactionCoordinator:
    """Kafka's ``TransactionCoordinator`` (module docstring). ``generate_producer_id`` hands
    out fresh producer ids (may await a block claim in cluster mode)."""

    def __init__(
        self,
        config: TransactionConfig,
        state: TransactionStateManager,
        markers: MarkerWriter,
        generate_producer_id: Callable[[], Awaitable[int] | int],
        clock: Clock,
    ) -> None:
        self.config = config
        self.state = state
        self._markers = markers
        self._generate = generate_producer_id
        self._clock = clock
        self._tasks: set[asyncio.Task[None]] = set()
        #: Transactions whose markers wait for a partition leader / whose Complete* append
        #: waits to be retried (Kafka's ``TransactionMarkerChannelManager`` gauges
        #: UnknownDestinationQueueSize and LogAppendRetryQueueSize; ``franz.metrics.groups``).
        self.awaiting_leader: set[str] = set()
        self.awaiting_log_append: set[str] = set()
        self._closed = False
        now = clock.wall_ms()
        self._last_abort_ms = now
        self._last_expiry_ms = now

    def _now(self) -> int:
        return self._clock.wall_ms()

    async def _new_producer_id(self) -> int:
        pid = self._generate()
        return pid if isinstance(pid, int) else await pid

    # --- InitProducerId -----------------------------------------------------------------------

    async def handle_init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None,
    ) -> InitProducerIdResult:
        """``handleInitProducerId`` for a transactional id; ``expected`` is KIP-360's
        (producer id, epoch) when the request names one."""
        if not transactional_id:
            return InitProducerIdResult(ErrorCode.INVALID_REQUEST)
        if not 0 < timeout_ms <= self.config.transaction_max_timeout_ms:
            return InitProducerIdResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
        current = self.state.get(transactional_id)
        if current is None:
            producer_id = await self._new_producer_id()
            created = TransactionMetadata.create(
                transactional_id, producer_id, NO_PRODUCER_EPOCH, timeout_ms, self._now()
            )
            current = self.state.put_if_absent(created)
        if isinstance(current, ErrorCode):
            return InitProducerIdResult(current)
        prepared = await self._prepare_init(transactional_id, timeout_ms, current, expected)
        if isinstance(prepared, ErrorCode):
            return InitProducerIdResult(prepared)
        epoch = current.coordinator_epoch
        if prepared.txn_state is _S.PREPARE_EPOCH_FENCE:
            error = await self._end_transaction(
                transactional_id,
                prepared.producer_id,
                prepared.producer_epoch,
                commit=False,
                from_client=False,
            )
            return InitProducerIdResult(
                ErrorCode.CONCURRENT_TRANSACTIONS if error is ErrorCode.NONE else error
            )
        error = await self.state.append(transactional_id, epoch, prepared, self._now())
        if error is not ErrorCode.NONE:
            log.info("returning %s to InitProducerId of %r", error.name, transactional_id)
            return InitProducerIdResult(error)
        log.info(
            "initialized transactional id %r with producer id %d and epoch %d",
            transactional_id,
            prepared.producer_id,
            prepared.producer_epoch,
        )
        return InitProducerIdResult(ErrorCode.NONE, prepared.producer_id, prepared.producer_epoch)

    async def _prepare_init(
        self,
        transactional_id: str,
        timeout_ms: int,
        current: CoordinatorEpochAndMetadata,
        expected: tuple[int, int] | None,
    ) -> TxnTransitMetadata | ErrorCode:
        """``prepareInitProducerIdTransit``."""
        metadata = current.metadata
        if metadata.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if expected is not None and not (
            metadata.producer_epoch == NO_PRODUCER_EPOCH
            or expected[0] == metadata.producer_id
            or (expected[0] == metadata.last_producer_id and is_epoch_exhausted(expected[1]))
        ):
            return ErrorCode.PRODUCER_FENCED
        state = metadata.state
        if state in (_S.PREPARE_ABORT, _S.PREPARE_COMMIT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if state in (_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT):
            if metadata.is_producer_epoch_exhausted and (
                expected is None or expected[1] == metadata.producer_epoch
            ):
                new_id = await self._new_producer_id()
                if metadata.pending_transition_in_progress:  # raced while awaiting the id
                    return ErrorCode.CONCURRENT_TRANSACTIONS
                return metadata.prepare_producer_id_rotation(
                    new_id, timeout_ms, self._now(), expected is not None
                )
            return metadata.prepare_increment_producer_epoch(
                timeout_ms, None if expected is None else expected[1], self._now()
            )
        if state is _S.ONGOING:
            return metadata.prepare_fence_producer_epoch()
        raise RuntimeError(f"transactional id {transactional_id!r} is in state {state.kafka_name}")

    # --- AddPartitionsToTxn -------------------------------------------------------------------

    def _check_producer(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> CoordinatorEpochAndMetadata | ErrorCode:
        current = self.state.get(transactional_id)
        if current is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if isinstance(current, ErrorCode):
            return current
        metadata = current.metadata
        if metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if metadata.pending_transition_in_progress or metadata.state in (
            _S.PREPARE_COMMIT,
            _S.PREPARE_ABORT,
        ):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return current

    async def handle_add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> ErrorCode:
        """``handleAddPartitionsToTransaction`` (also AddOffsetsToTxn's partition)."""
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        added = frozenset(partitions)
        current = self._check_producer(transactional_id, producer_id, producer_epoch)
        if isinstance(current, ErrorCode):
            return current
        metadata = current.metadata
        if metadata.state is _S.ONGOING and added <= metadata.topic_partitions:
            return ErrorCode.NONE
        transit = metadata.prepare_add_partitions(added, self._now())
        return await self.state.append(
            transactional_id, current.coordinator_epoch, transit, self._now()
        )

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """``handleVerifyPartitionsInTransaction`` (KIP-890, Kafka 3.9): each partition NONE
        if it is in the transaction, TRANSACTION_ABORTABLE if not (the leader maps it to
        INVALID_TXN_STATE for clients that predate it); for all of them INVALID_REQUEST (no
        id), the id's lookup error, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, or
        CONCURRENT_TRANSACTIONS while the transaction is being committed or aborted. A
        pending transition is not checked, as in Kafka: partitions join the metadata once
        their addition is written, and the append itself checks again."""
        wanted = list(partitions)
        if not transactional_id:
            return dict.fromkeys(wanted, ErrorCode.INVALID_REQUEST)
        current = self._verifiable(transactional_id, producer_id, producer_epoch)
        if isinstance(current, ErrorCode):
            return dict.fromkeys(wanted, current)
        added = current.metadata.topic_partitions
        return {
            tp: ErrorCode.NONE if tp in added else ErrorCode.TRANSACTION_ABORTABLE
            for tp in wanted
        }

    def _verifiable(
        self, transactional_id: str, producer_id: int, producer_epoch: int
    ) -> CoordinatorEpochAndMetadata | ErrorCode:
        """``_check_producer`` without the pending-transition check (verification's)."""
        current = self.state.get(transactional_id)
        if current is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if isinstance(current, ErrorCode):
            return current
        metadata = current.metadata
        if metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.PRODUCER_FENCED
        if metadata.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        return current

    # --- EndTxn ----------------------------------------------------------------------------

    async def handle_end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> ErrorCode:
        """``handleEndTransaction``: a client's EndTxn."""
        return await self._end_transaction(
            transactional_id, producer_id, producer_epoch, commit, from_client=True
        )

    async def _end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        from_client: bool,
    ) -> ErrorCode:
        if not transactional_id:
            return ErrorCode.INVALID_REQUEST
        current = self.state.get(transactional_id)
        if current is None:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if isinstance(current, ErrorCode):
            return current
        prepared = prepare_end(
            current.metadata, producer_id, producer_epoch, commit, from_client, self._now()
        )
        if isinstance(prepared, ErrorCode):
            return prepared
        transit, is_epoch_fence = prepared
        coordinator_epoch = current.coordinator_epoch
        error = await self.state.append(transactional_id, coordinator_epoch, transit, self._now())
        if error is not ErrorCode.NONE:
            if is_epoch_fence:
                again = self.state.get(transactional_id)
                if (
                    isinstance(again, CoordinatorEpochAndMetadata)
                    and again.coordinator_epoch == coordinator_epoch
                ):
                    # The bumped epoch was never written: the next fence reuses it.
                    again.metadata.has_failed_epoch_fence = True
            log.info(
                "EndTxn(%s) of %r not logged: %s", _result(commit), transactional_id, error.name
            )
            return error
        self._start_markers(transactional_id, coordinator_epoch, current.metadata)
        return ErrorCode.NONE

    # --- markers -------------------------------------------------------------------------------

    def _start_markers(
        self, transactional_id: str, coordinator_epoch: int, metadata: TransactionMetadata
    ) -> None:
        """Start the markers on the next event-loop turn: after the EndTxn answer.

        Kafka answers EndTxn first (``responseCallback(Errors.NONE)``) and only then queues
        the markers (``addTxnMarkersToSend``). A task created here would run its first step
        before the handler's answer is written (the connection writes it from the handler
        task's done callback, scheduled after this task's first step), and the client would
        wait for the marker appends; a callback scheduled now runs before that done callback
        and creates the task, whose first step comes after it."""
        asyncio.get_running_loop().call_soon(
            self._spawn_completion, transactional_id, coordinator_epoch, metadata
        )

    def _spawn_completion(
        self, transactional_id: str, coordinator_epoch: int, metadata: TransactionMetadata
    ) -> None:
        if self._closed:
            return
        task = asyncio.get_running_loop().create_task(
            self._complete_transaction(transactional_id, coordinator_epoch, metadata)
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _still_owner(self, transactional_id: str, coordinator_epoch: int) -> bool:
        current = self.state.get(transactional_id)
        return (
            isinstance(current, CoordinatorEpochAndMetadata)
            and current.coordinator_epoch == coordinator_epoch
        )

    async def _complete_transaction(
        self, transactional_id: str, coordinator_epoch: int, metadata: TransactionMetadata
    ) -> None:
        """``addTxnMarkersToSend`` and ``tryAppendToLog``: markers, then Complete*."""
        commit = metadata.state is _S.PREPARE_COMMIT
        try:
            while metadata.topic_partitions:
                if not self._still_owner(transactional_id, coordinator_epoch):
                    return
                pending = sorted(metadata.topic_partitions)
                outcome = await self._markers.write_markers(
                    metadata.producer_id,
                    metadata.producer_epoch,
                    coordinator_epoch,
                    commit,
                    pending,
                )
                if not self._still_owner(transactional_id, coordinator_epoch):
                    return
                retry = False
                if ErrorCode.LEADER_NOT_AVAILABLE in outcome.values():
                    self.awaiting_leader.add(transactional_id)
                else:
                    self.awaiting_leader.discard(transactional_id)
                for tp in pending:
                    code = outcome.get(tp, ErrorCode.UNKNOWN_SERVER_ERROR)
                    if code in _MARKER_DONE:
                        metadata.remove_partition(tp)
                    elif code in _MARKER_FENCED:
                        log.info(
                            "stopped sending %s markers of %r: %s from %s",
                            _result(commit),
                            transactional_id,
                            code.name,
                            tp,
                        )
                        return
                    else:
                        retry = True
                if retry:
                    await asyncio.sleep(MARKER_RETRY_BACKOFF_MS / 1000)
            while True:
                if not self._still_owner(transactional_id, coordinator_epoch):
                    return
                transit = metadata.prepare_complete(self._now())
                error = await self.state.append(
                    transactional_id, coordinator_epoch, transit, self._now()
                )
                if error is ErrorCode.NONE:
                    log.debug("completed %s of %r", _result(commit), transactional_id)
                    return
                if error is not ErrorCode.COORDINATOR_NOT_AVAILABLE:
                    log.info(
                        "could not log the completed %s of %r: %s",
                        _result(commit),
                        transactional_id,
                        error.name,
                    )
                    return
                self.awaiting_log_append.add(transactional_id)
                await asyncio.sleep(MARKER_RETRY_BACKOFF_MS / 1000)
        except Exception:
            log.exception("completing the transaction of %r failed", transactional_id)
        finally:
            self.awaiting_leader.discard(transactional_id)
            self.awaiting_log_append.discard(transactional_id)

    def resume_markers(self, partition: int, loaded: Iterable[TransactionMetadata]) -> None:
        """After loading ``partition``: finish every transaction caught in Prepare*."""
        epoch = self.state.coordinator_epoch(partition)
        if epoch is None:
            return
        for metadata in loaded:
            if metadata.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
                self._start_markers(metadata.transactional_id, epoch, metadata)

    # --- upkeep ------------------------------------------------------------------------------

    async def abort_timed_out_transactions(self) -> int:
        """``abortTimedOutTransactions``: fence and abort; how many were started."""
        started = 0
        for metadata in self.state.timed_out_transactions(self._now()):
            if metadata.pending_transition_in_progress:
                continue
            transit = metadata.prepare_fence_producer_epoch()
            started += 1
            error = await self._end_transaction(
                metadata.transactional_id,
                transit.producer_id,
                transit.producer_epoch,
                commit=False,
                from_client=False,
            )
            if error is ErrorCode.NONE:
                log.info(
                    "aborted the transaction of %r: open past its timeout of %d ms",
                    metadata.transactional_id,
                    metadata.txn_timeout_ms,
                )
            else:
                log.info(
                    "rollback of the timed-out transaction of %r: %s",
                    metadata.transactional_id,
                    error.name,
                )
        return started

    async def remove_expired_transactional_ids(self) -> int:
        """``removeExpiredTransactionalIds``: tombstone idle ids; how many were removed."""
        removed = 0
        now = self._now()
        for metadata in self.state.expirable(now, self.config.transactional_id_expiration_ms):
            metadata.prepare_dead()
            if await self.state.write_tombstone(metadata.transactional_id, now) is ErrorCode.NONE:
                removed += 1
        if removed:
            log.info("removed %d expired transactional id(s)", removed)
        return removed

    async def tick(self) -> None:
        """The broker's periodic call: each upkeep task at its own Kafka interval
        (``transaction-abort`` and ``transactionalId-expiration`` on Kafka's scheduler)."""
        now = self._now()
        if now - self._last_abort_ms >= self.config.abort_timed_out_transactions_interval_ms:
            self._last_abort_ms = now
            await self.abort_timed_out_transactions()
        if now - self._last_expiry_ms >= self.config.remove_expired_transactional_ids_interval_ms:
            self._last_expiry_ms = now
            await self.remove_expired_transactional_ids()

    async def shutdown(self) -> None:
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def prepare_end(
    metadata: TransactionMetadata,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    from_client: bool,
    now_ms: int,
) -> tuple[TxnTransitMetadata, bool] | ErrorCode:
    """``endTransaction``'s decision before the append (pure but for the prepared state):
    the transit and whether it completes an epoch fence, or the error to answer."""
    if metadata.producer_id != producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING
    # A client's epoch must match; the coordinator's own (fence, timeout) may be newer.
    if (from_client and producer_epoch != metadata.producer_epoch) or (
        producer_epoch < metadata.producer_epoch
    ):
        return ErrorCode.PRODUCER_FENCED
    if metadata.pending_transition_in_progress and (
        metadata.pending_state is not _S.PREPARE_EPOCH_FENCE
    ):
        return ErrorCode.CONCURRENT_TRANSACTIONS
    state = metadata.state
    if state is _S.ONGOING:
        is_fence = not commit and metadata.pending_state is _S.PREPARE_EPOCH_FENCE
        if is_fence:
            metadata.apply_epoch_fence(producer_epoch)
        next_state = _S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT
        return metadata.prepare_abort_or_commit(next_state, now_ms), is_fence
    if state is _S.COMPLETE_COMMIT:
        return ErrorCode.NONE if commit else ErrorCode.INVALID_TXN_STATE
    if state is _S.COMPLETE_ABORT:
        return ErrorCode.NONE if not commit else ErrorCode.INVALID_TXN_STATE
    if state is _S.PREPARE_COMMIT:
        return ErrorCode.CONCURRENT_TRANSACTIONS if commit else ErrorCode.INVALID_TXN_STATE
    if state is _S.PREPARE_ABORT:
        return ErrorCode.CONCURRENT_TRANSACTIONS if not commit else ErrorCode.INVALID_TXN_STATE
    if state is _S.EMPTY:
        return ErrorCode.INVALID_TXN_STATE
    raise RuntimeError(
        f"transactional id {metadata.transactional_id!r} is in state {state.kafka_name}"
    )


def _result(commit: bool) -> str:
    return "COMMIT" if commit else "ABORT"
