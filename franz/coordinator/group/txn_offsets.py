"""Transactional offset commits of a group (KIP-98's TxnOffsetCommit) until their marker.

Kafka's ``GroupMetadata`` keeps, beside the committed offsets, ``pendingTransactionalOffset
Commits``: per producer id, the offsets a TxnOffsetCommit wrote to ``__consumer_offsets`` in
that producer's open transaction. They are invisible to OffsetFetch (which answers the last
committed offsets; with ``require_stable``, KIP-447, UNSTABLE_OFFSET_COMMIT for a partition
with one pending) until the transaction coordinator's WriteTxnMarkers writes the marker to
the group's partition and the broker calls ``GroupCoordinator.handle_txn_completion``
(Kafka's ``scheduleHandleTxnCompletion``):

* COMMIT: each pending offset becomes the committed one, unless the committed offset was
  appended to the log *after* it (a plain OffsetCommit written while the transaction was
  open): the higher ``appended_batch_offset`` wins (``completePendingTxnOffsetCommit``,
  ``CommitRecordMetadataAndOffset.olderThan``), the same rule replaying the log applies.
* ABORT: they are dropped.

Lifecycle of one producer's offsets in one group (Kafka's names):
``prepare`` (before the append; ``appended_batch_offset`` None) -> ``on_append`` (the batch's
base offset recorded) or ``fail`` (the append failed: removed, the client retries) ->
``complete`` (commit or abort). Removing a partition's offsets (OffsetDelete, a deleted
topic, expiry) removes its pending ones too (``removeOffsets``). A group holding pending
offsets is not removed as empty (``hasOffsets``).

The functions are pure bookkeeping over ``Group``; ``TxnOffsetCommits`` is the
``GroupCoordinator``'s TxnOffsetCommit half (a base class, kept here so the coordinator's
module stays about membership and plain commits), which does the appends.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Protocol

from franz.coordinator.group import states
from franz.coordinator.group.group import CommitRequest, Group, commit_error
from franz.coordinator.group.offsets_topic import (
    CommitRecordMetadataAndOffset,
    OffsetAndMetadata,
    Record,
    TopicPartitionKey,
    offset_commit_records,
)
from franz.coordinator.group.states import GroupState
from franz.errors import ApiError, ErrorCode

__all__ = [
    "TransactionVerifier",
    "TxnOffsetCommits",
    "complete",
    "fail",
    "has_pending",
    "has_pending_from",
    "on_append",
    "prepare",
    "remove_partitions",
    "remove_topic",
    "verification_error",
]

log = logging.getLogger(__name__)

#: KIP-890: verifies the group's ``__consumer_offsets`` partition (its index) with the
#: transaction coordinator; NONE and the append's guard, or the failure's code.
TransactionVerifier = Callable[[int], Awaitable[tuple[ErrorCode, object | None]]]


def verification_error(code: ErrorCode) -> ErrorCode:
    """Kafka's ``GroupMetadataManager.maybeConvertOffsetCommitError`` for a failed
    verification: NETWORK_EXCEPTION, which older clients may not retry, is
    COORDINATOR_LOAD_IN_PROGRESS (a retry without a coordinator lookup); the rest as an
    append's errors (``commit_error``)."""
    if code is ErrorCode.NETWORK_EXCEPTION:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    return commit_error(code)


def prepare(
    group: Group, producer_id: int, offsets: Mapping[TopicPartitionKey, OffsetAndMetadata]
) -> None:
    """Kafka's ``prepareTxnOffsetCommit``: the offsets are pending before their append."""
    pending = group.pending_txn_offsets.setdefault(producer_id, {})
    for tp, om in offsets.items():
        pending[tp] = CommitRecordMetadataAndOffset(None, om)


def on_append(
    group: Group,
    producer_id: int,
    offsets: Mapping[TopicPartitionKey, OffsetAndMetadata],
    base_offset: int,
) -> None:
    """Kafka's ``onTxnOffsetCommitAppend``: record where the batch landed, for the offsets
    still pending as prepared (a later TxnOffsetCommit of the same partition replaced it)."""
    pending = group.pending_txn_offsets.get(producer_id)
    if pending is None:
        return  # completed or removed meanwhile
    for tp, om in offsets.items():
        current = pending.get(tp)
        if current is not None and current.offset == om:
            pending[tp] = CommitRecordMetadataAndOffset(base_offset, om)


def fail(group: Group, producer_id: int, tps: Iterable[TopicPartitionKey]) -> None:
    """Kafka's ``failPendingTxnOffsetCommit``: the append failed, the offsets are forgotten."""
    pending = group.pending_txn_offsets.get(producer_id)
    if pending is None:
        return
    for tp in tps:
        pending.pop(tp, None)
    if not pending:
        del group.pending_txn_offsets[producer_id]


def complete(group: Group, producer_id: int, commit: bool) -> list[TopicPartitionKey]:
    """Kafka's ``completePendingTxnOffsetCommit``: the marker of ``producer_id``'s
    transaction is in the log. Returns the partitions whose committed offset changed.

    An offset prepared but never appended (its append is still in flight) cannot be part of
    a committed transaction: the producer ends a transaction only after every TxnOffsetCommit
    was answered. Kafka throws IllegalStateException there; it is skipped with a warning.
    """
    pending = group.pending_txn_offsets.pop(producer_id, None)
    if not commit or not pending:
        return []
    changed: list[TopicPartitionKey] = []
    for tp, txn in pending.items():
        position = txn.appended_batch_offset
        if position is None:
            log.warning(
                "group %s: transactional offset of %s[%d] for producer %d committed before its "
                "append completed; ignored",
                group.group_id,
                tp[0],
                tp[1],
                producer_id,
            )
            continue
        if tp in group.offsets and group.appended_batch_offsets.get(tp, -1) >= position:
            continue  # a plain commit appended after this one stays (``olderThan``)
        group.offsets[tp] = txn.offset
        group.appended_batch_offsets[tp] = position
        changed.append(tp)
    return changed


def has_pending_from(group: Group, producer_id: int) -> bool:
    """Kafka's ``hasPendingOffsetCommitsFromProducer``."""
    return producer_id in group.pending_txn_offsets


def has_pending(group: Group, tp: TopicPartitionKey) -> bool:
    """Whether a transactional offset of ``tp`` awaits its marker (the transactional half
    of Kafka's ``hasPendingOffsetCommitsForTopicPartition``: OffsetFetch with
    ``require_stable`` answers UNSTABLE_OFFSET_COMMIT for it)."""
    return any(tp in offsets for offsets in group.pending_txn_offsets.values())


def remove_partitions(group: Group, tps: Iterable[TopicPartitionKey]) -> None:
    """The pending half of Kafka's ``removeOffsets``: a partition whose offsets are removed
    (OffsetDelete, deleted topic, expiry, group deletion) loses its pending ones too."""
    doomed = list(tps)
    for tp in doomed:
        group.appended_batch_offsets.pop(tp, None)
    for pending in group.pending_txn_offsets.values():
        # An emptied producer entry stays until its marker, as in Kafka (``hasOffsets``).
        for tp in doomed:
            pending.pop(tp, None)


def remove_topic(group: Group, topic: str) -> None:
    """``remove_partitions`` for every pending partition of a deleted ``topic``."""
    doomed = {tp for pending in group.pending_txn_offsets.values() for tp in pending}
    remove_partitions(group, [tp for tp in doomed if tp[0] == topic])


class _Coordinator(Protocol):
    """What ``TxnOffsetCommits`` uses of ``GroupCoordinator``."""

    _groups: dict[str, Group]
    _partition_exists: Callable[[str, int], bool]

    def _now(self) -> int: ...

    def group_status(self, group_id: str) -> ErrorCode: ...

    def partition_for(self, group_id: str) -> int: ...

    def _group(self, group_id: str, *, create: bool = False) -> Group | None: ...

    def _forget_if_unused(self, group: Group) -> None: ...

    def _accept_commits(
        self, offsets: Mapping[TopicPartitionKey, CommitRequest], now: int, expire: int | None
    ) -> tuple[dict[TopicPartitionKey, OffsetAndMetadata], dict[TopicPartitionKey, ErrorCode]]: ...

    async def _append(
        self,
        group_id: str,
        records: list[Record],
        producer: tuple[int, int] | None = None,
        verification_guard: object | None = None,
    ) -> int: ...


class TxnOffsetCommits:
    """TxnOffsetCommit and transaction completion for ``GroupCoordinator`` (its base class)."""

    async def commit_txn_offsets(
        self: _Coordinator,
        *,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: Mapping[TopicPartitionKey, CommitRequest],
        verify: TransactionVerifier | None = None,
    ) -> dict[TopicPartitionKey, ErrorCode]:
        """TxnOffsetCommit (Kafka's ``handleTxnCommitOffsets``): the offsets go to the group's
        partition in a transactional batch of ``producer_id``/``producer_epoch`` and stay
        pending until ``handle_txn_completion``.

        Partitions of unknown topics are UNKNOWN_TOPIC_OR_PARTITION whatever the group's
        state (``KafkaApis`` filters them before the coordinator); then the group's status
        (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), then ``validateOffsetCommit`` with
        ``isTransactional``: an anonymous commit (generation -1, no member, v0-2) is allowed
        in any state; a member identity (v3+, KIP-447) is checked as a heartbeat's
        (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION), without
        REBALANCE_IN_PROGRESS and without counting as a heartbeat.

        ``verify`` (KIP-890, ``transaction.partition.verification.enable``): after the group's
        status and before the member checks, the transaction coordinator must have the
        group's ``__consumer_offsets`` partition in the transaction; a failure answers every
        partition ``verification_error(code)``, and the append carries the guard.
        """
        results = {
            tp: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            for tp in offsets
            if not self._partition_exists(*tp)
        }
        known = {tp: c for tp, c in offsets.items() if tp not in results}
        if not known:
            return results
        error = self.group_status(group_id)
        guard: object | None = None
        if error is ErrorCode.NONE and verify is not None:
            code, guard = await verify(self.partition_for(group_id))
            # The partition may have moved while the coordinator answered.
            error = verification_error(code) if code is not ErrorCode.NONE else (
                self.group_status(group_id)
            )
        group = self._group(group_id, create=True) if error is ErrorCode.NONE else None
        if group is not None:
            error = states.validate_offset_commit(
                group.snapshot, member_id, generation_id, group_instance_id, transactional=True
            )
        if group is None or error is not ErrorCode.NONE:
            if group is not None:
                self._forget_if_unused(group)
            results.update(dict.fromkeys(known, error))
            return {tp: results[tp] for tp in offsets}
        accepted, refused = self._accept_commits(known, self._now(), None)
        results.update(refused)
        if accepted:
            prepare(group, producer_id, accepted)
            records = offset_commit_records(group_id, accepted.items())
            try:
                base = await self._append(
                    group_id, records, (producer_id, producer_epoch), guard
                )
            except ApiError as exc:
                fail(group, producer_id, accepted)
                results.update(dict.fromkeys(accepted, commit_error(exc.code)))
            else:
                on_append(group, producer_id, accepted, base)
                results.update(dict.fromkeys(accepted, ErrorCode.NONE))
        self._forget_if_unused(group)
        return {tp: results[tp] for tp in offsets}

    def handle_txn_completion(
        self: _Coordinator, producer_id: int, partitions: Iterable[int], commit: bool
    ) -> None:
        """A marker of ``producer_id``'s transaction was written to these partitions of
        ``__consumer_offsets`` (Kafka's ``handleTxnCompletion``): the producer's pending
        offsets of the groups on them are committed (``commit``) or dropped. Groups not
        loaded here are skipped: their new coordinator replays the marker."""
        wanted = set(partitions)
        for group in list(self._groups.values()):
            if (
                has_pending_from(group, producer_id)
                and group.snapshot.state is not GroupState.DEAD
                and self.partition_for(group.group_id) in wanted
            ):
                changed = complete(group, producer_id, commit)
                log.debug(
                    "group %s: transaction of producer %d %s, %d offset(s) committed",
                    group.group_id,
                    producer_id,
                    "committed" if commit else "aborted",
                    len(changed),
                )

    def has_pending_txn_offset(self: _Coordinator, group_id: str, tp: TopicPartitionKey) -> bool:
        """Whether ``tp`` of ``group_id`` has a transactional offset awaiting its marker
        (OffsetFetch with ``require_stable`` answers UNSTABLE_OFFSET_COMMIT for it)."""
        group = self._groups.get(group_id)
        return group is not None and has_pending(group, tp)
