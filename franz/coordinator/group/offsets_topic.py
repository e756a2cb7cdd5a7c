"""The group coordinator's view of ``__consumer_offsets``: what it writes and how it reloads.

Kafka's ``GroupMetadataManager`` (3.x): every OffsetCommit request becomes one record batch
of ``OffsetKey`` -> ``OffsetCommitValue`` records on the group's partition
(``partition_for(group_id, offsets.topic.num.partitions)``); a completed rebalance, a group
becoming Empty and a deleted group become one ``GroupMetadataKey`` record (a tombstone when
the group is gone). Offsets that expire or are deleted get tombstones. The topic is
compacted, so the latest record per key is the state; reloading replays a partition from its
log start in offset order, the last record per key winning.

A TxnOffsetCommit becomes a *transactional* batch (the producer's id and epoch, base sequence
-1, the isTransactional attribute) of the same offset records. Its offsets stay pending per
producer id until the transaction's control batch (an end-transaction marker written by
WriteTxnMarkers): COMMIT makes them committed unless the partition's committed offset was
appended later (Kafka's ``CommitRecordMetadataAndOffset.olderThan``: the batch offsets are
compared, so compaction cannot resurrect an older commit), ABORT drops them. Offsets still
pending at the log end stay pending in the loaded groups (Kafka's ``loadGroupsAndOffsets``).

This module is sans-IO: ``CoordinatorLog`` is the broker's side (append a batch to a
partition of ``__consumer_offsets``); ``replay`` turns the batches the broker reads back into
``LoadedPartition`` values.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from franz.coordinator.group.offsets_schema import (
    CoordinatorRecordError,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitValue,
    OffsetKey,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from franz.errors import InvalidRecordError
from franz.protocol.records.batch import RecordBatchView
from franz.protocol.records.compression import CompressionType
from franz.protocol.records.control import ControlRecordType, parse_control_record_type
from franz.protocol.records.inflated import build_batch, iter_records

__all__ = [
    "OFFSETS_TOPIC",
    "CommitRecordMetadataAndOffset",
    "CoordinatorLog",
    "LoadedPartition",
    "OffsetAndMetadata",
    "TopicPartitionKey",
    "encode_records",
    "group_metadata_record",
    "group_tombstone",
    "offset_commit_record",
    "offset_commit_records",
    "offset_tombstone",
    "replay",
]

log = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"

TopicPartitionKey = tuple[str, int]
"""(topic, partition): how the coordinator keys committed offsets."""

Record = tuple[bytes, bytes | None]
"""One ``__consumer_offsets`` record: encoded key, encoded value (None = tombstone)."""


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset (Kafka's ``OffsetAndMetadata``).

    ``expire_timestamp_ms`` is set only by OffsetCommit v2-v4 with an explicit
    ``retention_time_ms`` (then the value is written as OffsetCommitValue v1, as Kafka does);
    otherwise expiry follows ``offsets.retention.minutes`` from the group's state.
    """

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = -1
    expire_timestamp_ms: int | None = None

    def to_value(self) -> OffsetCommitValue:
        return OffsetCommitValue(
            offset=self.offset,
            metadata=self.metadata,
            commit_timestamp=self.commit_timestamp_ms,
            leader_epoch=self.leader_epoch,
            expire_timestamp=-1 if self.expire_timestamp_ms is None else self.expire_timestamp_ms,
        )

    @classmethod
    def from_value(cls, value: OffsetCommitValue) -> OffsetAndMetadata:
        return cls(
            offset=value.offset,
            leader_epoch=value.leader_epoch,
            metadata=value.metadata,
            commit_timestamp_ms=value.commit_timestamp,
            expire_timestamp_ms=None if value.expire_timestamp < 0 else value.expire_timestamp,
        )


@dataclass(frozen=True, slots=True)
class CommitRecordMetadataAndOffset:
    """An offset with the base offset of the ``__consumer_offsets`` batch that carried it
    (Kafka's ``CommitRecordMetadataAndOffset``; None: a transactional commit not appended
    yet). When a transactional commit completes, the one appended later wins."""

    appended_batch_offset: int | None
    offset: OffsetAndMetadata


class CoordinatorLog(Protocol):
    """Where the coordinator's records go: the broker appends a batch to a partition of
    ``__consumer_offsets`` and returns the batch's base offset once it is committed (raises
    ``ApiError`` otherwise, e.g. NOT_COORDINATOR when the partition moved, or the storage
    error). ``verification_guard``: the KIP-890 guard of a TxnOffsetCommit's transactional
    batch (opaque here; ``franz.storage.verification``)."""

    async def append(
        self, partition: int, batch: bytearray, verification_guard: object | None = None
    ) -> int: ...


def offset_commit_record(group_id: str, tp: TopicPartitionKey, om: OffsetAndMetadata) -> Record:
    key = encode_offset_commit_key(OffsetKey(group_id, tp[0], tp[1]))
    return key, encode_offset_commit_value(om.to_value())


_INT16 = struct.Struct(">h")
_KEY_TAIL = struct.Struct(">i")
_VALUE_V3_HEAD = struct.Struct(">hqi")
_INT64 = struct.Struct(">q")


def _string(value: str) -> bytes:
    data = value.encode("utf-8")
    if len(data) > 0x7FFF:
        raise ValueError(f"string of {len(data)} UTF-8 bytes is longer than 32767")
    return _INT16.pack(len(data)) + data


def offset_commit_records(
    group_id: str, offsets: Iterable[tuple[TopicPartitionKey, OffsetAndMetadata]]
) -> list[Record]:
    """``offset_commit_record`` for many partitions of one commit, byte-identical, with the
    group and topic names encoded once: the OffsetCommit hot path (a consumer commits every
    partition it owns, often every few seconds)."""
    key_prefix = b"\x00\x01" + _string(group_id)
    topics: dict[str, bytes] = {}
    records: list[Record] = []
    for tp, om in offsets:
        if om.expire_timestamp_ms is not None:
            records.append(offset_commit_record(group_id, tp, om))  # value v1, rare
            continue
        topic = topics.get(tp[0])
        if topic is None:
            topic = topics[tp[0]] = key_prefix + _string(tp[0])
        value = (
            _VALUE_V3_HEAD.pack(3, om.offset, om.leader_epoch)
            + _string(om.metadata)
            + _INT64.pack(om.commit_timestamp_ms)
        )
        records.append((topic + _KEY_TAIL.pack(tp[1]), value))
    return records


def offset_tombstone(group_id: str, tp: TopicPartitionKey) -> Record:
    return encode_offset_commit_key(OffsetKey(group_id, tp[0], tp[1])), None


def group_metadata_record(group_id: str, value: GroupMetadataValue) -> Record:
    return encode_group_metadata_key(GroupMetadataKey(group_id)), encode_group_metadata_value(value)


def group_tombstone(group_id: str) -> Record:
    return encode_group_metadata_key(GroupMetadataKey(group_id)), None


def encode_records(
    records: Iterable[Record],
    timestamp_ms: int,
    compression: CompressionType = CompressionType.NONE,
    *,
    producer: tuple[int, int] | None = None,
) -> bytearray:
    """One v2 batch (base offset 0, patched by the log) holding ``records``, CreateTime.

    With ``producer`` (id, epoch) the batch is a transactional one of that producer (a
    TxnOffsetCommit): Kafka's ``storeOffsets`` builds it with the producer's id and epoch,
    base sequence -1 (``RecordBatch.NO_SEQUENCE``) and ``isTransactional``, whatever the id.
    """
    producer_id, producer_epoch = producer if producer is not None else (-1, -1)
    return build_batch(
        ((timestamp_ms, key, value) for key, value in records),
        compression=compression,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=producer is not None,
    )


@dataclass(slots=True)
class LoadedPartition:
    """The state one ``__consumer_offsets`` partition replays to.

    ``offsets[group][tp]`` are the committed offsets and ``appended[group][tp]`` the base
    offset of the batch each came in; ``groups[group]`` the latest group metadata;
    ``deleted_groups`` the groups whose last group record is a tombstone (their offsets are
    gone too unless committed again afterwards). ``pending[producer_id][group][tp]`` are
    transactional offsets whose transaction has no marker yet.
    """

    offsets: dict[str, dict[TopicPartitionKey, OffsetAndMetadata]] = field(default_factory=dict)
    appended: dict[str, dict[TopicPartitionKey, int]] = field(default_factory=dict)
    groups: dict[str, GroupMetadataValue] = field(default_factory=dict)
    deleted_groups: set[str] = field(default_factory=set)
    pending: dict[int, dict[str, dict[TopicPartitionKey, CommitRecordMetadataAndOffset]]] = field(
        default_factory=dict
    )
    records: int = 0
    skipped: int = 0

    def apply(
        self,
        key_bytes: bytes | None,
        value_bytes: bytes | None,
        *,
        batch_offset: int = -1,
        producer_id: int | None = None,
    ) -> None:
        """Apply one record in offset order (Kafka's ``doLoadGroupsAndOffsets``);
        ``producer_id`` is set for a record of a transactional batch (offsets only)."""
        if key_bytes is None:
            self.skipped += 1
            return
        try:
            key = decode_key(key_bytes)
            self.records += 1
            if isinstance(key, OffsetKey):
                self._apply_offset(key, value_bytes, batch_offset, producer_id)
            elif value_bytes is None:
                self.groups.pop(key.group, None)
                self.deleted_groups.add(key.group)
            else:
                self.groups[key.group] = decode_group_metadata_value(value_bytes)
                self.deleted_groups.discard(key.group)
        except CoordinatorRecordError as exc:
            # Kafka fails the load on an unknown key version; a record franz cannot read is
            # skipped with a warning instead of making every group of the partition unusable.
            self.skipped += 1
            log.warning("skipping unreadable __consumer_offsets record: %s", exc)

    def _apply_offset(
        self, key: OffsetKey, value_bytes: bytes | None, batch_offset: int, producer_id: int | None
    ) -> None:
        tp = (key.topic, key.partition)
        if producer_id is not None:
            pending = self.pending.setdefault(producer_id, {})
            if value_bytes is None:
                pending.get(key.group, {}).pop(tp, None)
            else:
                om = OffsetAndMetadata.from_value(decode_offset_commit_value(value_bytes))
                pending.setdefault(key.group, {})[tp] = CommitRecordMetadataAndOffset(
                    batch_offset, om
                )
        elif value_bytes is None:
            self.offsets.get(key.group, {}).pop(tp, None)
            self.appended.get(key.group, {}).pop(tp, None)
        else:
            value = decode_offset_commit_value(value_bytes)
            self.offsets.setdefault(key.group, {})[tp] = OffsetAndMetadata.from_value(value)
            self.appended.setdefault(key.group, {})[tp] = batch_offset

    def end_txn(self, producer_id: int, commit: bool) -> None:
        """A transaction marker of ``producer_id``: on COMMIT its pending offsets become
        committed where no offset appended later is (``olderThan``); either way they are no
        longer pending."""
        pending = self.pending.pop(producer_id, None)
        if not commit or not pending:
            return
        for group_id, tps in pending.items():
            offsets = self.offsets.setdefault(group_id, {})
            appended = self.appended.setdefault(group_id, {})
            for tp, txn in tps.items():
                position = txn.appended_batch_offset
                assert position is not None
                if tp not in offsets or appended.get(tp, -1) < position:
                    offsets[tp] = txn.offset
                    appended[tp] = position

    def pending_by_group(
        self,
    ) -> dict[str, dict[int, dict[TopicPartitionKey, CommitRecordMetadataAndOffset]]]:
        """``pending`` regrouped as group -> producer id -> offsets (empty ones left out)."""
        by_group: dict[str, dict[int, dict[TopicPartitionKey, CommitRecordMetadataAndOffset]]] = {}
        for producer_id, groups in self.pending.items():
            for group_id, tps in groups.items():
                if tps:
                    by_group.setdefault(group_id, {})[producer_id] = dict(tps)
        return by_group


def replay(
    batches: Iterable[RecordBatchView], into: LoadedPartition | None = None
) -> LoadedPartition:
    """Replay record batches of one partition (in offset order) into a ``LoadedPartition``.

    A control batch's first record decides its producer's pending offsets (COMMIT, or any
    other type: dropped, as Kafka's loader treats everything but COMMIT); records of
    transactional batches are held per producer id until then.
    """
    loaded = into if into is not None else LoadedPartition()
    for batch in batches:
        if batch.is_control_batch:
            for record in iter_records(batch):
                try:
                    control = parse_control_record_type(record.key)
                except InvalidRecordError as exc:
                    log.warning("skipping unreadable __consumer_offsets control record: %s", exc)
                    break
                loaded.end_txn(batch.producer_id, control is ControlRecordType.COMMIT)
                break
            continue
        producer_id = batch.producer_id if batch.is_transactional else None
        base = batch.base_offset
        for record in iter_records(batch):
            loaded.apply(record.key, record.value, batch_offset=base, producer_id=producer_id)
    return loaded
