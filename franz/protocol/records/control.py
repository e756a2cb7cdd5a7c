"""Control records: the end-transaction markers a transaction coordinator writes (KIP-98).

A *control batch* is a v2 batch with attributes bit 5 (isControlBatch) set; its records are
never returned to applications. Kafka 3.9 uses them for transaction markers (COMMIT, ABORT,
always in a batch that also has bit 4, isTransactional) and for KRaft's own log
(LEADER_CHANGE, SNAPSHOT_HEADER/FOOTER, KRAFT_VERSION, KRAFT_VOTERS; never in a partition log
a client reads, listed here only so that their ids are known).

Control record key (Kafka's ``ControlRecordType``), 4 bytes, big-endian::

    version  int16   0 (a reader parses any version >= 0 as v0; a negative one is corrupt)
    type     int16   ABORT 0, COMMIT 1, LEADER_CHANGE 2, SNAPSHOT_HEADER 3,
                     SNAPSHOT_FOOTER 4, KRAFT_VERSION 5, KRAFT_VOTERS 6; others: UNKNOWN

End-transaction marker value (Kafka's ``EndTransactionMarker``), 6 bytes, big-endian::

    version           int16   0 (same rule as the key's version)
    coordinatorEpoch  int32   the transaction coordinator's epoch for the transactional id's
                              ``__transaction_state`` partition; lets a partition leader fence
                              markers from a zombie coordinator

The marker batch (Kafka's ``MemoryRecords.withEndTransactionMarker`` /
``writeEndTransactionalMarker``): magic 2, no compression, CreateTime, attributes
``0x30`` (transactional + control), the transaction's producer id and epoch,
``baseSequence`` -1 (markers carry no sequence), ``lastOffsetDelta`` 0, one record at offset
delta 0 with timestamp delta 0 and no headers, ``baseTimestamp`` = ``maxTimestamp`` = the
marker's timestamp. The broker that receives WriteTxnMarkers builds it with ``baseOffset`` 0,
``partitionLeaderEpoch`` -1 and the current wall-clock time (``KafkaApis`` calls the
``(producerId, producerEpoch, marker)`` overload); the log then assigns the offset and stamps
the leader epoch in place, as for any batch. The batch is 78 bytes (61 + a 17-byte record).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from franz.errors import InvalidRecordError
from franz.protocol.records.batch import (
    NO_PARTITION_LEADER_EPOCH,
    NO_SEQUENCE,
    RecordBatchView,
)
from franz.protocol.records.inflated import Record, RecordBatchBuilder, iter_records

__all__ = [
    "CONTROL_RECORD_KEY_SIZE",
    "CONTROL_RECORD_KEY_VERSION",
    "END_TXN_MARKER_BATCH_SIZE",
    "END_TXN_MARKER_VALUE_SIZE",
    "END_TXN_MARKER_VERSION",
    "ControlRecordType",
    "EndTransactionMarker",
    "build_end_txn_marker_batch",
    "encode_control_record_key",
    "parse_control_record_type",
    "parse_control_record_type_id",
    "read_end_txn_marker",
]

#: ``ControlRecordType.CURRENT_CONTROL_RECORD_KEY_VERSION``.
CONTROL_RECORD_KEY_VERSION: Final = 0
#: ``ControlRecordType.CURRENT_CONTROL_RECORD_KEY_SIZE``: version + type.
CONTROL_RECORD_KEY_SIZE: Final = 4
#: ``EndTransactionMarker.CURRENT_END_TXN_MARKER_VERSION``.
END_TXN_MARKER_VERSION: Final = 0
#: ``EndTransactionMarker.CURRENT_END_TXN_MARKER_VALUE_SIZE``: version + coordinatorEpoch.
END_TXN_MARKER_VALUE_SIZE: Final = 6
#: ``DefaultRecordBatch.RECORD_BATCH_OVERHEAD`` (61) +
#: ``EndTransactionMarker.CURRENT_END_TXN_SCHEMA_RECORD_SIZE`` (17: length varint 1, attributes
#: 1, timestampDelta 1, offsetDelta 1, key length 1 + 4, value length 1 + 6, headers count 1).
END_TXN_MARKER_BATCH_SIZE: Final = 78

_KEY = struct.Struct(">hh")
_MARKER_VALUE = struct.Struct(">hi")


class ControlRecordType(IntEnum):
    """The ``type`` of a control record key (Kafka 3.9's ``ControlRecordType``).

    ``UNKNOWN`` (-1) stands for any type id this version does not know; a reader skips such
    records (Kafka's consumer ignores them). It cannot be written.
    """

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6
    UNKNOWN = -1

    @classmethod
    def from_type_id(cls, type_id: int) -> ControlRecordType:
        """``ControlRecordType.fromTypeId``: an unknown id is ``UNKNOWN``, not an error."""
        try:
            member = cls(type_id)
        except ValueError:
            return cls.UNKNOWN
        return member


def encode_control_record_key(control_type: ControlRecordType) -> bytes:
    """The 4-byte key of a control record of ``control_type`` (``ControlRecordType.recordKey``).

    Raises ``ValueError`` for ``UNKNOWN`` (Kafka's ``IllegalArgumentException``: "Cannot
    serialize UNKNOWN control record type").
    """
    control_type = ControlRecordType(control_type)
    if control_type is ControlRecordType.UNKNOWN:
        raise ValueError("cannot serialize UNKNOWN control record type")
    return _KEY.pack(CONTROL_RECORD_KEY_VERSION, int(control_type))


def parse_control_record_type_id(key: bytes | bytearray | memoryview | None) -> int:
    """The raw ``type`` of a control record key (``ControlRecordType.parseTypeId``).

    Raises ``InvalidRecordError`` (INVALID_RECORD, Kafka's ``InvalidRecordException``) for a
    key shorter than 4 bytes (or none) and for a negative key version. A version above 0 is
    read as v0: later versions may only add fields after ``type``.
    """
    size = 0 if key is None else len(key)
    if key is None or size < CONTROL_RECORD_KEY_SIZE:
        raise InvalidRecordError(
            "invalid value size found for end control record key: must have at least "
            f"{CONTROL_RECORD_KEY_SIZE} bytes, but found only {size}"
        )
    version, type_id = _KEY.unpack_from(key, 0)
    if version < 0:
        raise InvalidRecordError(
            f"invalid version found for control record: {version}; may indicate data corruption"
        )
    return int(type_id)


def parse_control_record_type(
    key: bytes | bytearray | memoryview | None,
) -> ControlRecordType:
    """``ControlRecordType.parse``: the key's type, ``UNKNOWN`` for an id not listed."""
    return ControlRecordType.from_type_id(parse_control_record_type_id(key))


@dataclass(frozen=True, slots=True)
class EndTransactionMarker:
    """The control record that ends a transaction in one partition (``EndTransactionMarker``).

    ``control_type`` is COMMIT or ABORT; anything else raises ``ValueError`` (Kafka's
    ``IllegalArgumentException``, "Invalid control record type for end transaction marker").
    """

    control_type: ControlRecordType
    coordinator_epoch: int

    def __post_init__(self) -> None:
        if self.control_type not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            raise ValueError(
                f"invalid control record type for end transaction marker: {self.control_type!r}"
            )

    @property
    def is_commit(self) -> bool:
        return self.control_type is ControlRecordType.COMMIT

    def serialize_key(self) -> bytes:
        """The record key: ``ControlRecordType.recordKey`` of this marker's type."""
        return encode_control_record_key(self.control_type)

    def serialize_value(self) -> bytes:
        """The record value: version 0, coordinatorEpoch (``serializeValue``)."""
        return _MARKER_VALUE.pack(END_TXN_MARKER_VERSION, self.coordinator_epoch)

    @classmethod
    def deserialize_value(
        cls, control_type: ControlRecordType, value: bytes | bytearray | memoryview | None
    ) -> EndTransactionMarker:
        """``EndTransactionMarker.deserializeValue``.

        ``ValueError`` if ``control_type`` is not COMMIT/ABORT (checked first, as Kafka
        does); ``InvalidRecordError`` for a value under 6 bytes (or none) or with a negative
        version. A version above 0 is read as v0.
        """
        if control_type not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            raise ValueError(
                f"invalid control record type for end transaction marker: {control_type!r}"
            )
        size = 0 if value is None else len(value)
        if value is None or size < END_TXN_MARKER_VALUE_SIZE:
            raise InvalidRecordError(
                "invalid value size found for end transaction marker: must have at least "
                f"{END_TXN_MARKER_VALUE_SIZE} bytes, but found only {size}"
            )
        version, coordinator_epoch = _MARKER_VALUE.unpack_from(value, 0)
        if version < 0:
            raise InvalidRecordError(
                f"invalid version found for end transaction marker: {version}; "
                "may indicate data corruption"
            )
        return cls(control_type, coordinator_epoch)

    @classmethod
    def deserialize(cls, record: Record) -> EndTransactionMarker:
        """``EndTransactionMarker.deserialize``: the marker held by a control record.

        The caller knows the record came from a control batch (Kafka checks
        ``record.isControlRecord()``, a property of the batch, which ``Record`` lacks).
        """
        return cls.deserialize_value(parse_control_record_type(record.key), record.value)


def build_end_txn_marker_batch(
    marker: EndTransactionMarker,
    *,
    producer_id: int,
    producer_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytearray:
    """One end-transaction-marker batch (``MemoryRecords.withEndTransactionMarker``).

    See the module docstring for the layout. ``base_offset`` and ``partition_leader_epoch``
    default to what the broker's WriteTxnMarkers path uses before the log assigns them.
    """
    builder = RecordBatchBuilder(
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        is_transactional=True,
        is_control_batch=True,
    )
    builder.append(timestamp, marker.serialize_key(), marker.serialize_value())
    return builder.build()


def read_end_txn_marker(batch: RecordBatchView) -> tuple[EndTransactionMarker, int] | None:
    """The marker of a control batch and its record's timestamp; None if it has no records.

    What Kafka's ``ProducerAppendInfo.append`` reads from a control batch: the first record
    only, deserialized as an ``EndTransactionMarker`` (so a control batch of another type
    raises ``ValueError``, as Kafka's ``IllegalArgumentException``). The batch's CRC is not
    checked here. Raises ``ValueError`` if ``batch`` is not a control batch.
    """
    if not batch.is_control_batch:
        raise ValueError(f"batch at offset {batch.base_offset} is not a control batch")
    for record in iter_records(batch):
        return EndTransactionMarker.deserialize(record), record.timestamp
    return None
