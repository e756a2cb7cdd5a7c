"""Inflated record batches: decoding a v2 batch's records, and building batches from records.

Not the hot path (see ``batch``): the broker stores and serves batches as they came. Records
are decoded only where semantics need them (the log cleaner, the CLI tools, idempotence
checks that need more than the header, tests).

Record format inside a v2 batch (Kafka's ``DefaultRecord``; KIP-98), after the batch's
``records`` block has been decompressed as a whole::

    length          varint   bytes of the record after this field
    attributes      int8     unused, 0
    timestampDelta  varlong  timestamp - batch baseTimestamp
    offsetDelta     varint   offset - batch baseOffset
    keyLength       varint   -1 for a null key
    key             bytes
    valueLength     varint   -1 for a null value
    value           bytes
    headersCount    varint
    headers         headersCount x (keyLength varint, key utf-8, valueLength varint
                    (-1 for null), value bytes)

The varints are zigzag (``varint``). With ``timestampType`` LogAppendTime (attributes bit 3)
every record's timestamp is the batch's ``maxTimestamp`` (the broker's append time); the
stored deltas are ignored, as in Kafka's ``DefaultRecordBatch``.

Header keys are decoded as UTF-8 with ``surrogateescape``, and encoded back the same way, so a
key that is not valid UTF-8 survives a decode/encode round trip byte for byte (the cleaner
rewrites retained records; Java would replace such bytes with U+FFFD).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final

import crc32c

from franz.errors import CorruptRecordError, InvalidRecordError
from franz.protocol.records.batch import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RecordBatchView,
    TimestampType,
)
from franz.protocol.records.compression import CompressionType, compress, decompress
from franz.protocol.records.varint import (
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
)

__all__ = [
    "Header",
    "HeaderLike",
    "Record",
    "RecordBatchBuilder",
    "build_batch",
    "iter_records",
]

_HEADER_ENCODING: Final = "utf-8"
_HEADER_ERRORS: Final = "surrogateescape"

# baseOffset .. magic, then crc, then attributes .. recordsCount (see ``batch``).
_PREFIX = struct.Struct(">qiib")
_CRC = struct.Struct(">I")
_SUFFIX = struct.Struct(">hiqqqhii")
_CRC_POS: Final = 17
_CRC_START: Final = 21

_TRANSACTIONAL_BIT: Final = 0x10
_CONTROL_BIT: Final = 0x20
_DELETE_HORIZON_BIT: Final = 0x40
_INT32_MAX: Final = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class Header:
    """A record header: a UTF-8 string key and a nullable byte value (KIP-82)."""

    key: str
    value: bytes | None


#: What ``RecordBatchBuilder.append`` accepts as a header.
HeaderLike = Header | tuple[str, bytes | None]


@dataclass(frozen=True, slots=True)
class Record:
    """One decoded record; ``offset`` and ``timestamp`` are absolute (base + delta)."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    attributes: int = 0


# -- decoding ---------------------------------------------------------------------------------


def iter_records(batch: RecordBatchView) -> Iterator[Record]:
    """Decode the records of ``batch``, strictly.

    The batch's CRC is not checked here: validate the batch first (``iter_batches`` does).

    Raises ``CorruptRecordError`` (CORRUPT_MESSAGE) when the records block does not
    decompress with the batch's codec. A CRC-valid batch whose compressed block is not a valid
    stream was damaged before its CRC was computed, or by a broken codec: the codec-level
    counterpart of a CRC mismatch. (Kafka's record iterator wraps the codec's ``IOException``
    in a ``KafkaException``, "Failed to decompress record stream", not in an
    ``InvalidRecordException``.)

    Raises ``InvalidRecordError`` (INVALID_RECORD) for every structural error in intact
    bytes, where Kafka's ``DefaultRecord.readFrom`` raises ``InvalidRecordException``: a
    truncated or overlong varint, a record whose ``length`` disagrees with the bytes its
    fields take or runs past the block, a length below -1, a negative header count or header
    key length, fewer records than ``recordsCount``, or bytes left after the last record
    (Kafka: "Incorrect declared batch size").

    Records are decoded lazily, one per ``next()``; the first ``next()`` decompresses the
    whole block. Errors therefore surface while iterating, not when this is called.
    """
    if batch.records_count < 0:
        raise InvalidRecordError(f"record batch declares {batch.records_count} records")
    codec_id = batch.attributes & 0x07
    try:
        codec = CompressionType(codec_id)
    except ValueError:
        raise InvalidRecordError(f"record batch has unknown compression codec {codec_id}") from None
    payload = batch.records_payload()
    if len(payload) != batch.size_in_bytes - BATCH_HEADER_SIZE:
        raise InvalidRecordError(
            f"record batch at position {batch.position} is truncated: batchLength "
            f"{batch.batch_length} runs past the end of the buffer"
        )
    try:
        data = decompress(codec, payload)
    except ValueError as exc:
        raise CorruptRecordError(
            f"record batch at offset {batch.base_offset} does not decompress with "
            f"{codec.config_name}: {exc}"
        ) from exc
    log_append_time = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    yield from _decode_records(
        data,
        batch.records_count,
        batch.base_offset,
        batch.base_timestamp,
        batch.max_timestamp if log_append_time else None,
    )


def _decode_records(
    data: bytes, count: int, base_offset: int, base_timestamp: int, fixed_timestamp: int | None
) -> Iterator[Record]:
    end = len(data)
    pos = 0
    for index in range(count):
        if pos >= end:
            raise InvalidRecordError(
                f"record batch declares {count} records but its records end after {index}"
            )
        length, pos = decode_varint(data, pos)
        record_end = pos + length
        if length < 0 or record_end > end:
            raise InvalidRecordError(
                f"record {index} has length {length} but {end - pos} bytes remain in the batch"
            )
        record, pos = _decode_record(
            data, pos, record_end, base_offset, base_timestamp, fixed_timestamp
        )
        if pos != record_end:
            raise InvalidRecordError(
                f"record {index} declares length {length} but its fields take "
                f"{length + pos - record_end} bytes"
            )
        yield record
    if pos != end:
        raise InvalidRecordError(
            f"record batch has {end - pos} bytes after its {count} declared records"
        )


def _decode_record(
    data: bytes,
    pos: int,
    end: int,
    base_offset: int,
    base_timestamp: int,
    fixed_timestamp: int | None,
) -> tuple[Record, int]:
    """Decode one record body in ``data[pos:end]``; return it and the position after it.

    Fields are read against ``end`` (the record's declared end), so a record that claims
    fewer bytes than its fields take fails here rather than reading into its neighbour.
    """
    if pos >= end:
        raise InvalidRecordError("record is empty: no attributes byte")
    attributes = data[pos]
    timestamp_delta, pos = decode_varlong(data, pos + 1)
    offset_delta, pos = decode_varint(data, pos)
    key, pos = _read_nullable_bytes(data, pos, end, "key")
    value, pos = _read_nullable_bytes(data, pos, end, "value")
    header_count, pos = decode_varint(data, pos)
    if header_count < 0:
        raise InvalidRecordError(f"record has an invalid number of headers {header_count}")
    headers: tuple[Header, ...] = ()
    if header_count:
        decoded = []
        for _ in range(header_count):
            key_length, pos = decode_varint(data, pos)
            if key_length < 0:
                raise InvalidRecordError(f"record header has negative key length {key_length}")
            if pos + key_length > end:
                raise InvalidRecordError("record header key runs past the end of its record")
            header_key = data[pos : pos + key_length].decode(_HEADER_ENCODING, _HEADER_ERRORS)
            header_value, pos = _read_nullable_bytes(data, pos + key_length, end, "header value")
            decoded.append(Header(header_key, header_value))
        headers = tuple(decoded)
    if pos > end:  # a varint read past the record's declared end
        raise InvalidRecordError("record fields run past the end of its declared length")
    timestamp = base_timestamp + timestamp_delta if fixed_timestamp is None else fixed_timestamp
    # Java's int8: attributes is signed on the wire.
    signed_attributes = attributes - 256 if attributes > 127 else attributes
    return (
        Record(base_offset + offset_delta, timestamp, key, value, headers, signed_attributes),
        pos,
    )


def _read_nullable_bytes(data: bytes, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    length, pos = decode_varint(data, pos)
    if length < 0:
        if length != -1:
            raise InvalidRecordError(f"record {what} has invalid length {length}")
        return None, pos
    if pos + length > end:
        raise InvalidRecordError(f"record {what} runs past the end of its record")
    return data[pos : pos + length], pos + length


# -- building ---------------------------------------------------------------------------------


class RecordBatchBuilder:
    """Build one valid, deflated v2 batch from records (Kafka's ``MemoryRecordsBuilder``).

    For tests, the CLI tools and the log cleaner; the broker's hot path never builds batches.
    Records are encoded as they are appended into one buffer (linear in the batch size);
    ``build`` compresses that buffer once and writes the header and CRC-32C.

    - ``baseTimestamp`` is the first record's timestamp, as Kafka's producer writes it; with
      ``delete_horizon_ms`` (KIP-534, written by the cleaner) it is the delete horizon instead
      and attributes bit 6 is set. Record timestamps are stored relative to it either way.
    - ``maxTimestamp`` is the largest record timestamp; ``lastOffsetDelta`` the last record's
      offset delta; ``recordsCount`` the number of records.
    - Offset deltas default to 0, 1, 2, ...; an explicit ``offset_delta`` (the cleaner keeps
      the offsets of retained records) must be larger than the previous one.
    - A batch without records (the cleaner keeps one to preserve a producer's state, Kafka's
      ``writeEmptyHeader``) is written uncompressed with ``baseTimestamp`` -1; pass its
      ``last_offset_delta`` and ``max_timestamp`` to ``build``.
    - ``timestamp_type=1`` (LogAppendTime) only sets attributes bit 3; use
      ``RecordBatchView.set_log_append_time`` to stamp ``maxTimestamp`` as a broker does.
    """

    __slots__ = (
        "_base_offset",
        "_base_sequence",
        "_base_timestamp",
        "_buffer",
        "_compression",
        "_count",
        "_delete_horizon_ms",
        "_is_control_batch",
        "_is_transactional",
        "_last_offset_delta",
        "_max_timestamp",
        "_partition_leader_epoch",
        "_producer_epoch",
        "_producer_id",
        "_timestamp_type",
    )

    def __init__(
        self,
        *,
        compression: CompressionType = CompressionType.NONE,
        base_offset: int = 0,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        is_control_batch: bool = False,
        timestamp_type: int = TimestampType.CREATE_TIME,
        delete_horizon_ms: int | None = None,
    ) -> None:
        if timestamp_type not in (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME):
            raise ValueError(f"timestamp_type must be 0 or 1, not {timestamp_type}")
        self._compression = CompressionType(compression)
        self._base_offset = base_offset
        self._partition_leader_epoch = partition_leader_epoch
        self._producer_id = producer_id
        self._producer_epoch = producer_epoch
        self._base_sequence = base_sequence
        self._is_transactional = is_transactional
        self._is_control_batch = is_control_batch
        self._timestamp_type = timestamp_type
        self._delete_horizon_ms = delete_horizon_ms
        self._buffer = bytearray()
        self._count = 0
        self._base_timestamp: int | None = delete_horizon_ms
        self._max_timestamp = NO_TIMESTAMP
        self._last_offset_delta = -1

    def __len__(self) -> int:
        """The number of records appended so far."""
        return self._count

    @property
    def next_offset_delta(self) -> int:
        """The offset delta ``append`` uses when none is given."""
        return self._last_offset_delta + 1

    def append(
        self,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
        headers: Sequence[HeaderLike] = (),
        offset_delta: int | None = None,
    ) -> int:
        """Encode one record; return its offset delta."""
        if offset_delta is None:
            offset_delta = self._last_offset_delta + 1
        elif offset_delta <= self._last_offset_delta:
            raise ValueError(
                f"offset delta {offset_delta} does not follow {self._last_offset_delta} "
                "(offsets must increase monotonically)"
            )
        if offset_delta > _INT32_MAX:
            raise ValueError(f"offset delta {offset_delta} does not fit in an int32")
        if self._base_timestamp is None:
            self._base_timestamp = timestamp
        body = bytearray(b"\x00")  # attributes
        body += encode_varlong(timestamp - self._base_timestamp)
        body += encode_varint(offset_delta)
        _write_nullable_bytes(body, key)
        _write_nullable_bytes(body, value)
        body += encode_varint(len(headers))
        for header in headers:
            header_key, header_value = (
                (header.key, header.value) if isinstance(header, Header) else header
            )
            encoded_key = header_key.encode(_HEADER_ENCODING, _HEADER_ERRORS)
            body += encode_varint(len(encoded_key))
            body += encoded_key
            _write_nullable_bytes(body, header_value)
        self._buffer += encode_varint(len(body))
        self._buffer += body
        if self._count == 0 or timestamp > self._max_timestamp:
            self._max_timestamp = timestamp
        self._count += 1
        self._last_offset_delta = offset_delta
        return offset_delta

    def build(
        self, *, last_offset_delta: int | None = None, max_timestamp: int | None = None
    ) -> bytearray:
        """Return the batch: header, CRC-32C over bytes [21:], compressed records.

        ``last_offset_delta`` / ``max_timestamp`` override the computed values; a batch
        without records needs them (Kafka's ``writeEmptyHeader``: the offsets and time the
        removed records had). An override may not contradict the records appended.
        """
        offset_delta = self._last_offset_delta
        if last_offset_delta is not None:
            if last_offset_delta < offset_delta:
                raise ValueError(
                    f"last_offset_delta {last_offset_delta} is below the last record's "
                    f"offset delta {offset_delta}"
                )
            offset_delta = last_offset_delta
        if offset_delta < 0:
            raise ValueError("a batch without records needs last_offset_delta")
        batch_max_timestamp = self._max_timestamp if max_timestamp is None else max_timestamp
        codec = self._compression if self._count else CompressionType.NONE
        records = compress(codec, memoryview(self._buffer))
        attributes = int(codec) | (self._timestamp_type << 3)
        if self._is_transactional:
            attributes |= _TRANSACTIONAL_BIT
        if self._is_control_batch:
            attributes |= _CONTROL_BIT
        if self._delete_horizon_ms is not None:
            attributes |= _DELETE_HORIZON_BIT
        base_timestamp = NO_TIMESTAMP if self._base_timestamp is None else self._base_timestamp
        out = bytearray(BATCH_HEADER_SIZE)
        _PREFIX.pack_into(
            out,
            0,
            self._base_offset,
            BATCH_HEADER_SIZE - LOG_OVERHEAD + len(records),
            self._partition_leader_epoch,
            MAGIC_V2,
        )
        _SUFFIX.pack_into(
            out,
            _CRC_START,
            attributes,
            offset_delta,
            base_timestamp,
            batch_max_timestamp,
            self._producer_id,
            self._producer_epoch,
            self._base_sequence,
            self._count,
        )
        out += records
        _CRC.pack_into(out, _CRC_POS, crc32c.crc32c(memoryview(out)[_CRC_START:]))
        return out


def _write_nullable_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out += b"\x01"  # zigzag varint -1
    else:
        out += encode_varint(len(data))
        out += data


RecordTuple = (
    tuple[int, bytes | None, bytes | None]
    | tuple[int, bytes | None, bytes | None, Sequence[HeaderLike]]
)


def build_batch(
    records: Iterable[RecordTuple | Record],
    *,
    compression: CompressionType = CompressionType.NONE,
    base_offset: int | None = None,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control_batch: bool = False,
    timestamp_type: int = TimestampType.CREATE_TIME,
) -> bytearray:
    """Build one batch from ``(timestamp, key, value[, headers])`` tuples or ``Record`` s.

    ``Record`` s keep their absolute offsets: ``base_offset`` defaults to the first one's and
    offset deltas follow (the cleaner's rewrite of retained records). Tuples get consecutive
    offsets from ``base_offset`` (default 0).
    """
    items = list(records)
    if base_offset is None:
        first = items[0] if items else None
        base_offset = first.offset if isinstance(first, Record) else 0
    builder = RecordBatchBuilder(
        compression=compression,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        is_transactional=is_transactional,
        is_control_batch=is_control_batch,
        timestamp_type=timestamp_type,
    )
    for item in items:
        if isinstance(item, Record):
            builder.append(
                item.timestamp,
                item.key,
                item.value,
                item.headers,
                offset_delta=item.offset - base_offset,
            )
        elif len(item) == 3:
            builder.append(item[0], item[1], item[2])
        else:
            builder.append(item[0], item[1], item[2], item[3])
    return builder.build()
