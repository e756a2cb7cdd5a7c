"""Deflated record batches: a zero-copy view over Kafka's magic v2 batch header.

This is the broker's hot path. A batch arrives from a producer, is checked (length, magic,
CRC-32C), has ``baseOffset`` and ``partitionLeaderEpoch`` patched in place (both lie before
the CRC'd range, so the CRC stays valid) and is written to the log as it came. Records are
never decoded here; ``franz.protocol.records.inflated`` does that where semantics need it.

Wire and disk format (all integers big-endian; KIP-98, Kafka's ``DefaultRecordBatch``)::

    offset  size  field
         0     8  baseOffset
         8     4  batchLength          bytes after this field: the batch is 12 + batchLength
        12     4  partitionLeaderEpoch
        16     1  magic                2
        17     4  crc                  CRC-32C (Castagnoli) of bytes [21, end)
        21     2  attributes           bits 0-2 codec, 3 timestampType (1 = LogAppendTime),
                                       4 isTransactional, 5 isControlBatch,
                                       6 hasDeleteHorizonMs (KIP-534)
        23     4  lastOffsetDelta
        27     8  baseTimestamp        (firstTimestamp)
        35     8  maxTimestamp
        43     8  producerId           -1 when not idempotent
        51     2  producerEpoch
        53     4  baseSequence
        57     4  recordsCount
        61     -  records              compressed as one block when the codec is not none

Glossary: *deflated* batch = these bytes, untouched; *inflated* batch = decoded records.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Final

import crc32c

from franz.errors import CorruptRecordError, InvalidRecordError
from franz.protocol.records.compression import CompressionType

__all__ = [
    "BATCH_HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "RecordBatchView",
    "TimestampType",
    "iter_batches",
    "peek_batch_size",
]

#: baseOffset + batchLength: the part of a batch not counted in ``batchLength`` (Kafka's
#: ``Records.LOG_OVERHEAD``).
LOG_OVERHEAD: Final = 12
#: Fixed part of a v2 batch, up to and including ``recordsCount``.
BATCH_HEADER_SIZE: Final = 61
#: Smallest legal ``batchLength``: the header without the 12-byte log overhead.
MIN_BATCH_LENGTH: Final = BATCH_HEADER_SIZE - LOG_OVERHEAD
MAGIC_V2: Final = 2
NO_PARTITION_LEADER_EPOCH: Final = -1
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
NO_TIMESTAMP: Final = -1

_CRC_START: Final = 21
_MAGIC_POS: Final = 16
_CRC_POS: Final = 17
_ATTRIBUTES_POS: Final = 21
_MAX_TIMESTAMP_POS: Final = 35
_LEADER_EPOCH_POS: Final = 12

_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_OFFSET_AND_LENGTH = struct.Struct(">qi")
_MAGIC = struct.Struct(">b")

_COMPRESSION_MASK: Final = 0x07
_TIMESTAMP_TYPE_BIT: Final = 0x08
_TRANSACTIONAL_BIT: Final = 0x10
_CONTROL_BIT: Final = 0x20
_DELETE_HORIZON_BIT: Final = 0x40


class TimestampType:
    """``attributes`` bit 3 (Kafka's ``TimestampType``); a batch's records share it."""

    CREATE_TIME: Final = 0
    LOG_APPEND_TIME: Final = 1


class RecordBatchView:
    """A v2 batch header read from ``buffer`` at ``position``, without copying the batch.

    The header is unpacked once at construction. The view checks only what it must to read
    the header safely (61 bytes present, magic 2); :meth:`validate` checks the rest. Setters
    patch the underlying buffer, which must then be writable (a ``bytearray`` or a writable
    ``memoryview``).
    """

    __slots__ = (
        "_buffer",
        "attributes",
        "base_offset",
        "base_sequence",
        "base_timestamp",
        "batch_length",
        "crc",
        "last_offset_delta",
        "magic",
        "max_timestamp",
        "partition_leader_epoch",
        "position",
        "producer_epoch",
        "producer_id",
        "records_count",
    )

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    position: int

    def __init__(self, buffer: bytes | bytearray | memoryview, position: int = 0) -> None:
        if len(buffer) - position < BATCH_HEADER_SIZE:
            raise CorruptRecordError(
                f"record batch header at position {position} is truncated: "
                f"{len(buffer) - position} of {BATCH_HEADER_SIZE} bytes"
            )
        magic = buffer[position + _MAGIC_POS]
        if magic != MAGIC_V2:
            # Kafka 4 removed message formats v0/v1 (KIP-724); Franz only stores v2.
            raise CorruptRecordError(f"unsupported record batch magic {magic} (only 2)")
        (
            self.base_offset,
            self.batch_length,
            self.partition_leader_epoch,
            self.magic,
            self.crc,
            self.attributes,
            self.last_offset_delta,
            self.base_timestamp,
            self.max_timestamp,
            self.producer_id,
            self.producer_epoch,
            self.base_sequence,
            self.records_count,
        ) = _HEADER.unpack_from(buffer, position)
        self._buffer: bytes | bytearray | memoryview = buffer
        self.position = position

    # -- derived fields ----------------------------------------------------------------------

    @property
    def size_in_bytes(self) -> int:
        """The whole batch: log overhead + ``batchLength``."""
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression_type(self) -> CompressionType:
        return CompressionType(self.attributes & _COMPRESSION_MASK)

    @property
    def timestamp_type(self) -> int:
        return (self.attributes & _TIMESTAMP_TYPE_BIT) >> 3

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control_batch(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & _DELETE_HORIZON_BIT)

    @property
    def last_sequence(self) -> int:
        """The sequence of the last record; wraps at 2^31 as Kafka's does."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % (1 << 31)

    def raw(self) -> memoryview:
        """The batch's bytes as a view (no copy)."""
        return memoryview(self._buffer)[self.position : self.position + self.size_in_bytes]

    def records_payload(self) -> memoryview:
        """The bytes after the header: the records, compressed as one block if a codec is set."""
        start = self.position + BATCH_HEADER_SIZE
        return memoryview(self._buffer)[start : self.position + self.size_in_bytes]

    # -- checks ------------------------------------------------------------------------------

    def compute_crc(self) -> int:
        start = self.position + _CRC_START
        end = self.position + self.size_in_bytes
        return int(crc32c.crc32c(memoryview(self._buffer)[start:end]))

    def is_valid(self) -> bool:
        """Whether the whole batch is present and its CRC matches (Kafka's ``isValid``)."""
        if self.batch_length < MIN_BATCH_LENGTH:
            return False
        if len(self._buffer) - self.position < self.size_in_bytes:
            return False
        return self.compute_crc() == self.crc

    def validate(self) -> None:
        """Check length, CRC and header consistency; raise with the protocol's error.

        ``CorruptRecordError`` (CORRUPT_MESSAGE) for bytes damaged in transit or on disk:
        a length outside the buffer or a CRC mismatch, the cases Kafka's
        ``DefaultRecordBatch.ensureValid`` reports so. ``InvalidRecordError`` (INVALID_RECORD)
        for an intact batch that is semantically wrong (Kafka's ``LogValidator``).
        """
        if self.batch_length < MIN_BATCH_LENGTH:
            raise CorruptRecordError(
                f"record batch at position {self.position} has batchLength "
                f"{self.batch_length}, smaller than the {MIN_BATCH_LENGTH}-byte header"
            )
        if len(self._buffer) - self.position < self.size_in_bytes:
            raise CorruptRecordError(
                f"record batch at position {self.position} is truncated: batchLength "
                f"{self.batch_length} runs past the end of the buffer"
            )
        actual = self.compute_crc()
        if actual != self.crc:
            raise CorruptRecordError(
                f"record batch at position {self.position} is corrupt "
                f"(stored crc = {self.crc}, computed crc = {actual})"
            )
        if self.last_offset_delta < 0 or self.records_count < 0:
            raise InvalidRecordError(
                f"record batch has lastOffsetDelta {self.last_offset_delta} and "
                f"{self.records_count} records"
            )
        if self.attributes & ~0x7F:
            raise InvalidRecordError(
                f"record batch has unknown attribute bits {self.attributes:#x}"
            )
        if (self.attributes & _COMPRESSION_MASK) > CompressionType.ZSTD:
            raise InvalidRecordError(
                f"record batch has unknown compression codec {self.attributes & 7}"
            )

    # -- in-place patches (outside the CRC: no recomputation) --------------------------------

    def set_base_offset(self, base_offset: int) -> None:
        _INT64.pack_into(self._buffer, self.position, base_offset)
        self.base_offset = base_offset

    def set_partition_leader_epoch(self, epoch: int) -> None:
        _INT32.pack_into(self._buffer, self.position + _LEADER_EPOCH_POS, epoch)
        self.partition_leader_epoch = epoch

    # -- patches inside the CRC'd range: the CRC is recomputed -------------------------------

    def set_log_append_time(self, timestamp_ms: int) -> None:
        """Stamp the batch with LogAppendTime: ``maxTimestamp`` = broker time, bit 3 set.

        Kafka does the same for ``message.timestamp.type=LogAppendTime``: records keep their
        deltas, readers use ``maxTimestamp`` for every record of such a batch.
        """
        attributes = self.attributes | _TIMESTAMP_TYPE_BIT
        _INT16.pack_into(self._buffer, self.position + _ATTRIBUTES_POS, attributes)
        _INT64.pack_into(self._buffer, self.position + _MAX_TIMESTAMP_POS, timestamp_ms)
        self.attributes = attributes
        self.max_timestamp = timestamp_ms
        self._rewrite_crc()

    def _rewrite_crc(self) -> None:
        crc = self.compute_crc()
        _UINT32.pack_into(self._buffer, self.position + _CRC_POS, crc)
        self.crc = crc

    def __repr__(self) -> str:
        return (
            f"RecordBatchView(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"size={self.size_in_bytes}, position={self.position}, "
            f"codec={self.compression_type.config_name}, count={self.records_count}, "
            f"max_timestamp={self.max_timestamp}, leader_epoch={self.partition_leader_epoch})"
        )


def peek_batch_size(buffer: bytes | bytearray | memoryview, position: int = 0) -> int | None:
    """The size of the batch starting at ``position``, or None if fewer than 12 bytes remain.

    Reads only ``batchLength``: the cheap step of walking a log by batch headers.
    """
    if len(buffer) - position < LOG_OVERHEAD:
        return None
    _, length = _OFFSET_AND_LENGTH.unpack_from(buffer, position)
    return int(LOG_OVERHEAD + length)


def iter_batches(
    buffer: bytes | bytearray | memoryview, position: int = 0, end: int | None = None
) -> Iterator[RecordBatchView]:
    """Yield the batches of ``buffer[position:end]`` in order, validating each as it goes.

    Raises ``CorruptRecordError`` / ``InvalidRecordError`` at the first bad batch, and
    ``CorruptRecordError`` for a partial batch at the end: a producer's record set is all
    whole batches. (Recovery, which tolerates a torn tail, walks the log itself.)
    """
    stop = len(buffer) if end is None else end
    while position < stop:
        view = RecordBatchView(memoryview(buffer)[:stop], position)
        view.validate()
        yield view
        position += view.size_in_bytes
