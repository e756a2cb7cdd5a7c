"""The group coordinator's view of ``__consumer_offsets``: what it writes and how it reloads.

Kafka's ``GroupMetadataManager`` (3.x): every OffsetCommit request becomes one record batch
of ``OffsetKey`` -> ``OffsetCommitValue`` records on the group's partition
(``partition_for(group_id, offsets.topic.num.partitions)``); a completed rebalance, a group
becoming Empty and a deleted group become one ``GroupMetadataKey`` record (a tombstone when
the group is gone). Offsets that expire or are deleted get tombstones. The topic is
compacted, so the latest record per key is the state; reloading replays a partition from its
log start in offset order, the last record per key winning.

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
from franz.protocol.records.batch import RecordBatchView
from franz.protocol.records.compression import CompressionType
from franz.protocol.records.inflated import build_batch, iter_records

__all__ = [
    "OFFSETS_TOPIC",
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


class CoordinatorLog(Protocol):
    """Where the coordinator's records go: the broker appends a batch to a partition of
    ``__consumer_offsets`` and returns once it is committed (raises ``ApiError`` otherwise,
    e.g. NOT_COORDINATOR when the partition moved, or the storage error)."""

    async def append(self, partition: int, batch: bytearray) -> None: ...


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
) -> bytearray:
    """One v2 batch (base offset 0, patched by the log) holding ``records``, CreateTime."""
    return build_batch(
        ((timestamp_ms, key, value) for key, value in records), compression=compression
    )


@dataclass(slots=True)
class LoadedPartition:
    """The state one ``__consumer_offsets`` partition replays to.

    ``offsets[group][tp]`` are the committed offsets; ``groups[group]`` the latest group
    metadata; ``deleted_groups`` the groups whose last group record is a tombstone (their
    offsets are gone too unless committed again afterwards).
    """

    offsets: dict[str, dict[TopicPartitionKey, OffsetAndMetadata]] = field(default_factory=dict)
    groups: dict[str, GroupMetadataValue] = field(default_factory=dict)
    deleted_groups: set[str] = field(default_factory=set)
    records: int = 0
    skipped: int = 0

    def apply(self, key_bytes: bytes | None, value_bytes: bytes | None) -> None:
        """Apply one record in offset order (Kafka's ``doLoadGroupsAndOffsets``)."""
        if key_bytes is None:
            self.skipped += 1
            return
        try:
            key = decode_key(key_bytes)
            self.records += 1
            if isinstance(key, OffsetKey):
                tp = (key.topic, key.partition)
                if value_bytes is None:
                    self.offsets.get(key.group, {}).pop(tp, None)
                else:
                    value = decode_offset_commit_value(value_bytes)
                    self.offsets.setdefault(key.group, {})[tp] = OffsetAndMetadata.from_value(value)
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


def replay(
    batches: Iterable[RecordBatchView], into: LoadedPartition | None = None
) -> LoadedPartition:
    """Replay record batches of one partition (in offset order) into a ``LoadedPartition``.

    Control batches (transaction markers) carry no group state and are skipped.
    """
    loaded = into if into is not None else LoadedPartition()
    for batch in batches:
        if batch.is_control_batch:
            continue
        for record in iter_records(batch):
            loaded.apply(record.key, record.value)
    return loaded
