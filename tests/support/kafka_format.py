"""An independent reader for Apache Kafka's on-disk log format, written from Kafka's spec.

This module deliberately knows nothing about franz: it restates Kafka's documented formats
(the "Record Batch", "Record", "Record Header" and "Control Batches" sections of Kafka's
implementation docs, the protocol guide's varint/zigzag rules, and the file formats documented
in Kafka's storage classes) and parses files against them.  Tests use it to prove that what
franz writes is readable by something that only knows Kafka.

Spec, restated
==============

Integers are big-endian two's complement unless stated otherwise.

Log segment (``<base offset, 20 digits>.log``)
    A concatenation of record batches, nothing else (no file header, no padding).

Record batch (magic 2), 61-byte header then the records::

    baseOffset:            int64   offset of the first record
    batchLength:           int32   bytes after this field (size on disk = batchLength + 12)
    partitionLeaderEpoch:  int32
    magic:                 int8    must be 2
    crc:                   uint32  CRC-32C (Castagnoli) of every byte from attributes to batch end
    attributes:            int16   bits 0-2 compression (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd),
                                   bit 3 timestamp type (0 CreateTime, 1 LogAppendTime),
                                   bit 4 transactional, bit 5 control batch,
                                   bit 6 hasDeleteHorizonMs (baseTimestamp is the delete horizon)
    lastOffsetDelta:       int32
    baseTimestamp:         int64
    maxTimestamp:          int64
    producerId:            int64
    producerEpoch:         int16
    baseSequence:          int32
    recordsCount:          int32
    records:               recordsCount records; when compressed, the concatenated records are
                           compressed as one stream that directly follows recordsCount

Compression streams: gzip is a gzip (RFC 1952) stream; snappy is Kafka's (xerial) framing --
an 8-byte magic ``0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00``, int32 version, int32 minimum compatible
version, then blocks of int32 length + raw snappy block (a stream without the magic is one raw
snappy block); lz4 is an LZ4 frame; zstd is a zstd frame.

Record (lengths are signed zigzag varints, as in protobuf's ``sint32``/``sint64``)::

    length:          varint   bytes that follow this field
    attributes:      int8     unused
    timestampDelta:  varlong  record timestamp = baseTimestamp + timestampDelta
    offsetDelta:     varint   record offset = baseOffset + offsetDelta
    keyLength:       varint   -1 = null key
    key:             byte[]
    valueLength:     varint   -1 = null value
    value:           byte[]
    headersCount:    varint
    headers:         headersCount times
        headerKeyLength:   varint  (never negative)
        headerKey:         UTF-8 string
        headerValueLength: varint  -1 = null value
        headerValue:       byte[]

A varint is at most 5 bytes and a varlong at most 10 (7 bits per byte, least significant group
first, high bit = continuation); zigzag maps n to ``(n << 1) ^ (n >> 63)``.

Control batch: one record whose key is ``version: int16, type: int16`` (0 = abort, 1 = commit).

Offset index (``.index``): 8-byte entries ``relativeOffset: int32, position: int32``; the
absolute offset is ``segment base offset + relativeOffset``, the position is the byte position
in the ``.log`` file of the batch (Kafka indexes ``(last offset of the appended batch, position
where it starts)`` every ``index.interval.bytes``).  Kafka preallocates the active segment's index
with zeros and trims it to ``entries * 8`` bytes when the segment is rolled or closed.

Time index (``.timeindex``): 12-byte entries ``timestamp: int64, relativeOffset: int32``;
``(T, O)`` means the largest timestamp seen in the segment up to offset ``O`` is ``T`` (Kafka
writes the max timestamp so far and the last offset of the batch that carried it).  Timestamps
never decrease.  Preallocated and trimmed like the offset index.

Transaction index (``.txnindex``): 34-byte entries ``version: int16 (0), producerId: int64,
firstOffset: int64, lastOffset: int64, lastStableOffset: int64`` (one per aborted transaction).

Checkpoint files (``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``): UTF-8 text, line 1 the version
(``0``), line 2 the entry count, then one ``topic partition offset`` line per entry.  An empty
file is an empty checkpoint.  ``leader-epoch-checkpoint`` is the same frame with
``epoch startOffset`` lines.

``partition.metadata``: ``version: 0`` then ``topic_id: <uuid>`` where the UUID is 16 bytes in
URL-safe base64 without padding (22 characters), never all zeros.

``meta.properties``: a Java properties file (``#``/``!`` comments, ``key=value``).
"""

from __future__ import annotations

import base64
import bisect
import gzip
import itertools
import re
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import cramjam
import crc32c

__all__ = [
    "BATCH_HEADER_SIZE",
    "COMPRESSION_GZIP",
    "COMPRESSION_LZ4",
    "COMPRESSION_NONE",
    "COMPRESSION_SNAPPY",
    "COMPRESSION_ZSTD",
    "LOG_OVERHEAD",
    "AbortedTxn",
    "Batch",
    "BatchList",
    "KafkaFormatError",
    "PartialTail",
    "PartitionDirReport",
    "Record",
    "SegmentReport",
    "check_partition_dir",
    "count_index_padding",
    "decode_varint",
    "decompress",
    "parse_checkpoint",
    "parse_control_key",
    "parse_leader_epoch_checkpoint",
    "parse_log_segment",
    "parse_meta_properties",
    "parse_offset_index",
    "parse_partition_metadata",
    "parse_time_index",
    "parse_txn_index",
    "segment_file_name",
]

LOG_OVERHEAD = 12  # baseOffset + batchLength
BATCH_HEADER_SIZE = 61
_MAGIC_POSITION = 16  # baseOffset(8) + batchLength(4) + partitionLeaderEpoch(4)
_CRC_COVERED_START = 21  # ... + magic(1) + crc(4)
_HEADER = struct.Struct(">qiibIhiqqqhii")
assert _HEADER.size == BATCH_HEADER_SIZE

COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
COMPRESSION_SNAPPY = 2
COMPRESSION_LZ4 = 3
COMPRESSION_ZSTD = 4
_COMPRESSION_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16

OFFSET_INDEX_ENTRY_SIZE = 8
TIME_INDEX_ENTRY_SIZE = 12
TXN_INDEX_ENTRY_SIZE = 34

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class KafkaFormatError(ValueError):
    """Data that does not follow Kafka's on-disk format (or a violated invariant).

    Raised by ``check_partition_dir`` it carries the full ``report``.
    """

    report: PartitionDirReport | None = None


# --------------------------------------------------------------------------------------------
# Data model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """One record of a v2 batch, with its absolute offset and timestamp resolved."""

    length: int
    attributes: int
    timestamp_delta: int
    offset_delta: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    offset: int  # batch base_offset + offset_delta
    timestamp: int  # batch base_timestamp + timestamp_delta (what CreateTime readers see)


@dataclass(frozen=True)
class Batch:
    """One v2 record batch as found at ``position`` in a log segment."""

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
    crc_valid: bool
    records: list[Record]
    computed_crc: int = 0
    # Set only when the CRC is wrong and the (corrupt) records could not be decoded.
    decode_error: str | None = None

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def compression_name(self) -> str:
        return _COMPRESSION_NAMES.get(self.compression, f"unknown({self.compression})")

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return (self.attributes >> 3) & 1

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & 0x40)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def size_in_bytes(self) -> int:
        return self.batch_length + LOG_OVERHEAD

    @property
    def end_position(self) -> int:
        return self.position + self.size_in_bytes

    def record_timestamp(self, record: Record) -> int:
        """The timestamp a Kafka consumer sees: the batch's max timestamp under LogAppendTime."""
        return self.max_timestamp if self.timestamp_type == 1 else record.timestamp


@dataclass(frozen=True)
class PartialTail:
    """An incomplete batch at the very end of a segment (e.g. a torn write)."""

    position: int
    available: int  # bytes present from ``position`` to the end of the data
    declared_size: int | None  # batchLength + 12, when the length field was readable


class BatchList(list[Batch]):
    """A list of batches that also says whether an incomplete batch ended the data."""

    partial_tail: PartialTail | None = None


@dataclass(frozen=True)
class AbortedTxn:
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


@dataclass
class SegmentReport:
    base_offset: int
    log_path: Path
    size: int
    batches: list[Batch]
    records: list[Record]
    offset_index: list[tuple[int, int]] | None  # None when the file is absent
    time_index: list[tuple[int, int]] | None
    offset_index_padding: int  # trailing all-zero (preallocated, untrimmed) entries
    time_index_padding: int
    txn_index: list[AbortedTxn] | None
    partial_tail: PartialTail | None

    @property
    def next_offset(self) -> int:
        return self.batches[-1].next_offset if self.batches else self.base_offset


@dataclass
class PartitionDirReport:
    path: Path
    topic: str | None
    partition: int | None
    segments: list[SegmentReport]
    batches: list[Batch]
    records: list[Record]
    leader_epochs: list[tuple[int, int]] | None  # None when leader-epoch-checkpoint is absent
    topic_id: str | None  # None when partition.metadata is absent
    other_files: list[str]  # names this checker does not interpret
    problems: list[str] = field(default_factory=list)

    @property
    def log_end_offset(self) -> int:
        if not self.segments:
            return 0
        return self.segments[-1].next_offset


# --------------------------------------------------------------------------------------------
# Primitives
# --------------------------------------------------------------------------------------------


def decode_varint(data: bytes | memoryview, pos: int, *, long: bool = False) -> tuple[int, int]:
    """Decode one zigzag varint (``long=False``, <= 5 bytes) or varlong (<= 10 bytes).

    Returns ``(value, position after it)``.
    """
    max_bytes = 10 if long else 5
    result = 0
    shift = 0
    for i in range(max_bytes):
        if pos + i >= len(data):
            raise KafkaFormatError(f"varint at {pos} runs past the end of the data")
        byte = data[pos + i]
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            bits = 64 if long else 32
            if result >> bits:
                raise KafkaFormatError(f"varint at {pos} does not fit in {bits} bits")
            return (result >> 1) ^ -(result & 1), pos + i + 1
        shift += 7
    kind = "varlong" if long else "varint"
    raise KafkaFormatError(f"{kind} at {pos} is longer than {max_bytes} bytes")


def _snappy_decompress(payload: bytes) -> bytes:
    if not payload.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(payload))
    if len(payload) < _XERIAL_HEADER_SIZE:
        raise KafkaFormatError("xerial snappy header is truncated")
    out = bytearray()
    pos = _XERIAL_HEADER_SIZE
    while pos < len(payload):
        if pos + 4 > len(payload):
            raise KafkaFormatError(f"xerial snappy block length at {pos} is truncated")
        (block_len,) = struct.unpack_from(">i", payload, pos)
        pos += 4
        if block_len < 0 or pos + block_len > len(payload):
            raise KafkaFormatError(f"xerial snappy block at {pos} has bad length {block_len}")
        out += bytes(cramjam.snappy.decompress_raw(payload[pos : pos + block_len]))
        pos += block_len
    return bytes(out)


def decompress(codec: int, payload: bytes) -> bytes:
    """Decompress a batch's records section for compression ``codec`` (attributes bits 0-2)."""
    try:
        if codec == COMPRESSION_NONE:
            return payload
        if codec == COMPRESSION_GZIP:
            return gzip.decompress(payload)
        if codec == COMPRESSION_SNAPPY:
            return _snappy_decompress(payload)
        if codec == COMPRESSION_LZ4:
            return bytes(cramjam.lz4.decompress(payload))
        if codec == COMPRESSION_ZSTD:
            return bytes(cramjam.zstd.decompress(payload))
    except KafkaFormatError:
        raise
    except (OSError, EOFError, zlib.error, cramjam.DecompressionError) as exc:
        name = _COMPRESSION_NAMES[codec]
        raise KafkaFormatError(f"cannot decompress {name} records: {exc}") from exc
    raise KafkaFormatError(f"unknown compression codec {codec}")


# --------------------------------------------------------------------------------------------
# Records and batches
# --------------------------------------------------------------------------------------------


def _read_bytes(body: bytes, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    length, pos = decode_varint(body, pos)
    if length == -1:
        return None, pos
    if length < -1:
        raise KafkaFormatError(f"{what} length {length} is negative")
    if pos + length > end:
        raise KafkaFormatError(f"{what} of {length} bytes runs past the end of its record")
    return body[pos : pos + length], pos + length


def _decode_records(raw: bytes, count: int, base_offset: int, base_timestamp: int) -> list[Record]:
    records: list[Record] = []
    pos = 0
    for index in range(count):
        if pos >= len(raw):
            raise KafkaFormatError(
                f"recordsCount is {count} but the records end after {index} records"
            )
        length, body_start = decode_varint(raw, pos)
        if length < 6:  # attributes + five one-byte varints at the very least
            raise KafkaFormatError(f"record {index} has impossible length {length}")
        end = body_start + length
        if end > len(raw):
            raise KafkaFormatError(f"record {index} (length {length}) runs past the batch end")
        p = body_start
        attributes = raw[p]
        p += 1
        timestamp_delta, p = decode_varint(raw, p, long=True)
        offset_delta, p = decode_varint(raw, p)
        key, p = _read_bytes(raw, p, end, "key")
        value, p = _read_bytes(raw, p, end, "value")
        header_count, p = decode_varint(raw, p)
        if header_count < 0:
            raise KafkaFormatError(f"record {index} has negative header count {header_count}")
        headers: list[tuple[str, bytes | None]] = []
        for h in range(header_count):
            if p >= end:
                raise KafkaFormatError(f"record {index} header {h} runs past the record end")
            key_len, p = decode_varint(raw, p)
            if key_len < 0:
                raise KafkaFormatError(f"record {index} header {h} has negative key length")
            if p + key_len > end:
                raise KafkaFormatError(f"record {index} header {h} key runs past the record end")
            try:
                header_key = raw[p : p + key_len].decode("utf-8")
            except UnicodeDecodeError as exc:
                raise KafkaFormatError(
                    f"record {index} header {h} key is not UTF-8: {exc}"
                ) from exc
            p += key_len
            header_value, p = _read_bytes(raw, p, end, "header value")
            headers.append((header_key, header_value))
        if p > end:
            raise KafkaFormatError(f"record {index} overruns its declared length {length}")
        if p != end:
            raise KafkaFormatError(
                f"record {index} declares length {length} but its fields use {p - body_start}"
            )
        records.append(
            Record(
                length=length,
                attributes=attributes,
                timestamp_delta=timestamp_delta,
                offset_delta=offset_delta,
                key=key,
                value=value,
                headers=headers,
                offset=base_offset + offset_delta,
                timestamp=base_timestamp + timestamp_delta,
            )
        )
        pos = end
    if pos != len(raw):
        raise KafkaFormatError(
            f"{len(raw) - pos} trailing bytes inside the batch after its {count} records"
        )
    return records


def _decode_batch_records(
    payload: bytes,
    attributes: int,
    records_count: int,
    last_offset_delta: int,
    base_offset: int,
    base_timestamp: int,
) -> list[Record]:
    codec = attributes & 0x07
    if codec not in _COMPRESSION_NAMES:
        raise KafkaFormatError(f"unknown compression codec {codec}")
    if records_count < 0:
        raise KafkaFormatError(f"negative recordsCount {records_count}")
    if last_offset_delta < 0:
        raise KafkaFormatError(f"negative lastOffsetDelta {last_offset_delta}")
    records = _decode_records(
        decompress(codec, payload), records_count, base_offset, base_timestamp
    )
    deltas = [r.offset_delta for r in records]
    if any(b <= a for a, b in itertools.pairwise(deltas)):
        raise KafkaFormatError(f"record offset deltas are not strictly increasing: {deltas}")
    if deltas and (deltas[0] < 0 or deltas[-1] > last_offset_delta):
        raise KafkaFormatError(
            f"record offset deltas {deltas[0]}..{deltas[-1]} fall outside "
            f"0..lastOffsetDelta ({last_offset_delta})"
        )
    return records


def _decode_batch(data: bytes, pos: int) -> Batch:
    (
        base_offset,
        batch_length,
        leader_epoch,
        magic,
        crc,
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        records_count,
    ) = _HEADER.unpack_from(data, pos)
    end = pos + LOG_OVERHEAD + batch_length
    computed = crc32c.crc32c(data[pos + _CRC_COVERED_START : end])
    crc_valid = computed == crc

    records: list[Record] = []
    decode_error: str | None = None
    try:
        records = _decode_batch_records(
            data[pos + BATCH_HEADER_SIZE : end],
            attributes,
            records_count,
            last_offset_delta,
            base_offset,
            base_timestamp,
        )
    except KafkaFormatError as exc:
        if crc_valid:
            raise KafkaFormatError(
                f"batch at position {pos} (base offset {base_offset}): {exc}"
            ) from exc
        decode_error = str(exc)
    return Batch(
        base_offset=base_offset,
        batch_length=batch_length,
        partition_leader_epoch=leader_epoch,
        magic=magic,
        crc=crc,
        attributes=attributes,
        last_offset_delta=last_offset_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        records_count=records_count,
        position=pos,
        crc_valid=crc_valid,
        records=records,
        computed_crc=computed,
        decode_error=decode_error,
    )


def parse_log_segment(data: bytes, *, allow_partial_tail: bool = False) -> BatchList:
    """Parse a ``.log`` file: a sequence of magic-2 record batches.

    A batch that is cut short by the end of ``data`` raises ``KafkaFormatError`` unless
    ``allow_partial_tail``; then it is left out and described in ``result.partial_tail``.
    A batch whose CRC does not match is returned with ``crc_valid=False`` (its records are
    decoded when possible, otherwise ``decode_error`` says why).  Every other deviation from
    the format raises ``KafkaFormatError`` (a ``ValueError``).
    """
    data = bytes(data)
    batches = BatchList()
    pos = 0
    total = len(data)
    while pos < total:
        available = total - pos
        if available < LOG_OVERHEAD:
            tail = PartialTail(position=pos, available=available, declared_size=None)
        else:
            base_offset, batch_length = struct.unpack_from(">qi", data, pos)
            if batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
                raise KafkaFormatError(
                    f"batch at position {pos} (base offset {base_offset}): batchLength "
                    f"{batch_length} is shorter than the {BATCH_HEADER_SIZE - LOG_OVERHEAD}-byte "
                    "minimum"
                )
            if available > _MAGIC_POSITION and data[pos + _MAGIC_POSITION] != 2:
                raise KafkaFormatError(
                    f"batch at position {pos} (base offset {base_offset}): magic is "
                    f"{data[pos + _MAGIC_POSITION]}, only magic 2 is supported"
                )
            size = batch_length + LOG_OVERHEAD
            if size <= available:
                batch = _decode_batch(data, pos)
                batches.append(batch)
                pos += size
                continue
            tail = PartialTail(position=pos, available=available, declared_size=size)
        if not allow_partial_tail:
            declared = "" if tail.declared_size is None else f" of {tail.declared_size}"
            raise KafkaFormatError(
                f"incomplete batch at position {pos}: only {available} bytes{declared} present"
            )
        batches.partial_tail = tail
        break
    return batches


def parse_control_key(key: bytes | None) -> tuple[int, int]:
    """``(version, type)`` from a control record's key (type 0 = abort, 1 = commit)."""
    if key is None or len(key) < 4:
        raise KafkaFormatError(f"control record key {key!r} is shorter than 4 bytes")
    version, kind = struct.unpack_from(">hh", key, 0)
    return version, kind


# --------------------------------------------------------------------------------------------
# Index files
# --------------------------------------------------------------------------------------------


def count_index_padding(data: bytes, entry_size: int) -> int:
    """Number of trailing all-zero ``entry_size``-byte entries (Kafka's preallocation)."""
    if len(data) % entry_size:
        raise KafkaFormatError(
            f"index of {len(data)} bytes is not a multiple of the {entry_size}-byte entry size"
        )
    zero = bytes(entry_size)
    count = 0
    end = len(data)
    while end > 0 and data[end - entry_size : end] == zero:
        count += 1
        end -= entry_size
    return count


def _index_entries(data: bytes, entry_size: int, allow_padding: bool, what: str) -> tuple[int, int]:
    """(number of real entries, number of padding entries)."""
    data = bytes(data)
    total = len(data) // entry_size
    padding = count_index_padding(data, entry_size)
    if allow_padding:
        return total - padding, padding
    # A trimmed file may legitimately start with one all-zero entry (relative offset 0 at
    # position/timestamp 0); every later all-zero entry is padding.
    untrimmed = padding - 1 if padding and padding == total else padding
    if untrimmed:
        raise KafkaFormatError(
            f"{what} has {untrimmed} trailing all-zero (preallocated) entries: the file was not "
            f"trimmed to entries * {entry_size} bytes; pass allow_padding=True to ignore them"
        )
    return total, 0


def parse_offset_index(
    data: bytes, base_offset: int, *, allow_padding: bool = False
) -> list[tuple[int, int]]:
    """``[(absolute offset, position)]`` from a ``.index`` file.

    A trimmed index (what Kafka leaves after rolling or closing a segment) is exactly
    ``entries * 8`` bytes; trailing all-zero entries are preallocated space and raise unless
    ``allow_padding`` (then they are dropped -- use ``count_index_padding`` to see how many).
    Kafka never indexes position 0, so an all-zero first entry is treated as padding then.
    """
    count, _ = _index_entries(data, OFFSET_INDEX_ENTRY_SIZE, allow_padding, "offset index")
    entries: list[tuple[int, int]] = []
    for i in range(count):
        relative, position = struct.unpack_from(">ii", data, i * OFFSET_INDEX_ENTRY_SIZE)
        if relative < 0 or position < 0:
            raise KafkaFormatError(
                f"offset index entry {i} is negative: relative offset {relative}, "
                f"position {position}"
            )
        entries.append((base_offset + relative, position))
    return entries


def parse_time_index(
    data: bytes, base_offset: int, *, allow_padding: bool = False
) -> list[tuple[int, int]]:
    """``[(timestamp, absolute offset)]`` from a ``.timeindex`` file (see parse_offset_index)."""
    count, _ = _index_entries(data, TIME_INDEX_ENTRY_SIZE, allow_padding, "time index")
    entries: list[tuple[int, int]] = []
    for i in range(count):
        timestamp, relative = struct.unpack_from(">qi", data, i * TIME_INDEX_ENTRY_SIZE)
        if relative < 0:
            raise KafkaFormatError(f"time index entry {i} has negative relative offset {relative}")
        entries.append((timestamp, base_offset + relative))
    return entries


def parse_txn_index(data: bytes) -> list[AbortedTxn]:
    """Aborted transactions from a ``.txnindex`` file (34-byte entries, version 0)."""
    data = bytes(data)
    if len(data) % TXN_INDEX_ENTRY_SIZE:
        raise KafkaFormatError(
            f"transaction index of {len(data)} bytes is not a multiple of {TXN_INDEX_ENTRY_SIZE}"
        )
    result: list[AbortedTxn] = []
    for i in range(len(data) // TXN_INDEX_ENTRY_SIZE):
        txn = AbortedTxn(*struct.unpack_from(">hqqqq", data, i * TXN_INDEX_ENTRY_SIZE))
        if txn.version != 0:
            raise KafkaFormatError(f"transaction index entry {i} has version {txn.version}")
        result.append(txn)
    return result


# --------------------------------------------------------------------------------------------
# Text files
# --------------------------------------------------------------------------------------------

_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_WHITESPACE = re.compile(r"\s+", re.ASCII)
_JAVA_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)


def _lines(text: str) -> list[str]:
    """Lines as Java's BufferedReader.readLine returns them (a final terminator is optional)."""
    if not text:
        return []
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


def _java_int(text: str, lo: int, hi: int, what: str) -> int:
    if not _JAVA_INT.fullmatch(text):
        raise KafkaFormatError(f"malformed {what}: {text!r}")
    value = int(text)
    if not lo <= value <= hi:
        raise KafkaFormatError(f"{what} {value} is out of range")
    return value


def _split_fields(line: str) -> list[str]:
    """Java's ``Pattern.compile("\\\\s+").split(line)``: trailing empty fields are dropped."""
    parts = _WHITESPACE.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _checkpoint_entries(text: str, fields: int, what: str) -> list[list[str]]:
    lines = _lines(text)
    if not lines:
        return []  # Kafka creates checkpoint files empty and reads them as empty
    version = _java_int(lines[0], _INT32_MIN, _INT32_MAX, f"{what} version line")
    if version != 0:
        raise KafkaFormatError(f"{what} has version {version}, expected 0")
    if len(lines) == 1:
        return []
    expected = _java_int(lines[1], _INT32_MIN, _INT32_MAX, f"{what} entry count line")
    entries: list[list[str]] = []
    for line in lines[2:]:
        parts = _split_fields(line)
        if len(parts) != fields:
            raise KafkaFormatError(f"malformed line in {what}: {line!r}")
        entries.append(parts)
    if len(entries) != expected:
        raise KafkaFormatError(f"{what} declares {expected} entries but holds {len(entries)}")
    return entries


def parse_checkpoint(text: str) -> dict[tuple[str, int], int]:
    """An offset checkpoint file: ``0``, count, then ``topic partition offset`` lines."""
    result: dict[tuple[str, int], int] = {}
    for topic, partition, offset in _checkpoint_entries(text, 3, "offset checkpoint"):
        key = (topic, _java_int(partition, _INT32_MIN, _INT32_MAX, "partition"))
        if key in result:
            raise KafkaFormatError(f"offset checkpoint lists {key} twice")
        result[key] = _java_int(offset, _INT64_MIN, _INT64_MAX, "offset")
    return result


def parse_leader_epoch_checkpoint(text: str) -> list[tuple[int, int]]:
    """``leader-epoch-checkpoint``: ``0``, count, then ``epoch startOffset`` lines."""
    return [
        (
            _java_int(epoch, _INT32_MIN, _INT32_MAX, "leader epoch"),
            _java_int(start, _INT64_MIN, _INT64_MAX, "start offset"),
        )
        for epoch, start in _checkpoint_entries(text, 2, "leader epoch checkpoint")
    ]


_UUID_TEXT = re.compile(r"[A-Za-z0-9_-]{22}")


def parse_partition_metadata(text: str) -> str:
    """The topic id from ``partition.metadata`` (``version: 0`` / ``topic_id: <uuid>``)."""
    lines = _lines(text)
    if len(lines) < 2 or any(line.strip() for line in lines[2:]):
        raise KafkaFormatError(f"partition.metadata must hold exactly two lines: {text!r}")
    values: list[str] = []
    for line, key in zip(lines[:2], ("version", "topic_id"), strict=True):
        parts = re.split(r":\s+", line, maxsplit=1)
        if len(parts) != 2 or parts[0] != key:
            raise KafkaFormatError(f"malformed line in partition.metadata: {line!r}")
        values.append(parts[1])
    version = _java_int(values[0], _INT32_MIN, _INT32_MAX, "partition.metadata version")
    if version != 0:
        raise KafkaFormatError(f"partition.metadata has version {version}, expected 0")
    topic_id = values[1]
    if not _UUID_TEXT.fullmatch(topic_id):
        raise KafkaFormatError(
            f"topic id {topic_id!r} is not 22 characters of URL-safe base64 without padding"
        )
    raw = base64.urlsafe_b64decode(topic_id + "==")
    if len(raw) != 16 or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != topic_id:
        raise KafkaFormatError(f"topic id {topic_id!r} does not encode 16 bytes canonically")
    if raw == bytes(16):
        raise KafkaFormatError("topic id is the all-zero UUID")
    return topic_id


_PROPERTY_WHITESPACE = " \t\f"
_PROPERTY_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape_property(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 >= len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise KafkaFormatError(f"malformed \\uxxxx escape in {text!r}")
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_PROPERTY_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def _logical_property_lines(text: str) -> Iterable[str]:
    pending: str | None = None
    for natural in _lines(text):
        line = natural.lstrip(_PROPERTY_WHITESPACE)
        if pending is None and (not line or line[0] in "#!"):
            continue
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2:
            pending = (pending or "") + line[:-1]
            continue
        yield (pending or "") + line
        pending = None
    if pending is not None:
        yield pending


def parse_meta_properties(text: str) -> dict[str, str]:
    """A Java properties file (``meta.properties``) as a dict, per ``Properties.load``."""
    result: dict[str, str] = {}
    for line in _logical_property_lines(text):
        i = 0
        key_chars: list[str] = []
        while i < len(line):
            ch = line[i]
            if ch == "\\" and i + 1 < len(line):
                key_chars.append(line[i : i + 2])
                i += 2
                continue
            if ch in "=:" or ch in _PROPERTY_WHITESPACE:
                break
            key_chars.append(ch)
            i += 1
        while i < len(line) and line[i] in _PROPERTY_WHITESPACE:
            i += 1
        if i < len(line) and line[i] in "=:":
            i += 1
            while i < len(line) and line[i] in _PROPERTY_WHITESPACE:
                i += 1
        result[_unescape_property("".join(key_chars))] = _unescape_property(line[i:])
    return result


def segment_file_name(base_offset: int, suffix: str) -> str:
    """``00000000000000000042.log`` for ``(42, ".log")`` (the dot is added if missing)."""
    if base_offset < 0:
        raise ValueError(f"negative base offset {base_offset}")
    if suffix and not suffix.startswith("."):
        suffix = "." + suffix
    return f"{base_offset:020d}{suffix}"


# --------------------------------------------------------------------------------------------
# Whole partition directories
# --------------------------------------------------------------------------------------------

_SEGMENT_FILE = re.compile(r"(\d{20})\.(log|index|timeindex|txnindex)")
_KNOWN_FILES = {"leader-epoch-checkpoint", "partition.metadata"}


def _batch_containing(batches: list[Batch], offset: int) -> Batch | None:
    index = bisect.bisect_right([b.base_offset for b in batches], offset) - 1
    if index >= 0 and batches[index].base_offset <= offset <= batches[index].last_offset:
        return batches[index]
    return None


def _check_batches(seg: SegmentReport, strict: bool, problems: list[str]) -> None:
    name = seg.log_path.name
    for batch in seg.batches:
        where = f"{name}: batch at position {batch.position} (offsets {batch.base_offset}.."
        where += f"{batch.last_offset})"
        if not batch.crc_valid:
            problems.append(
                f"{where}: CRC {batch.crc:#010x} does not match computed {batch.computed_crc:#010x}"
            )
        if batch.last_offset - seg.base_offset > _INT32_MAX:
            problems.append(f"{where}: offset does not fit relative to the segment base")
        if not strict:
            continue
        deltas = [r.offset_delta for r in batch.records]
        if batch.crc_valid and deltas != list(range(batch.records_count)):
            problems.append(f"{where}: record offset deltas {deltas} are not 0..count-1")
        if batch.crc_valid and batch.last_offset_delta != batch.records_count - 1:
            problems.append(
                f"{where}: lastOffsetDelta {batch.last_offset_delta} but "
                f"{batch.records_count} records"
            )
        if batch.records and batch.timestamp_type == 0 and not batch.is_control:
            newest = max(r.timestamp for r in batch.records)
            if newest != batch.max_timestamp:
                problems.append(
                    f"{where}: maxTimestamp {batch.max_timestamp} but the newest record "
                    f"timestamp is {newest}"
                )
        if batch.is_control and batch.crc_valid:
            if batch.records_count != 1:
                problems.append(f"{where}: control batch holds {batch.records_count} records")
            elif batch.records[0].key is None or len(batch.records[0].key or b"") < 4:
                problems.append(f"{where}: control record key is shorter than 4 bytes")


def _check_offset_index(seg: SegmentReport, multi_batch_entries: bool, problems: list[str]) -> None:
    if seg.offset_index is None:
        return
    name = seg.log_path.with_suffix(".index").name
    by_position = {b.position: i for i, b in enumerate(seg.batches)}
    previous: tuple[int, int] | None = None
    for offset, position in seg.offset_index:
        where = f"{name}: entry ({offset}, {position})"
        if previous is not None and (offset <= previous[0] or position <= previous[1]):
            problems.append(f"{where} does not strictly follow {previous}")
        previous = (offset, position)
        index = by_position.get(position)
        if index is None:
            problems.append(f"{where}: position is not the start of a batch")
            continue
        batch = seg.batches[index]
        if multi_batch_entries:
            ends = {b.last_offset for b in seg.batches[index:]}
            if offset not in ends:
                problems.append(
                    f"{where}: offset is not the last offset of the batch at that position or "
                    "of a batch after it"
                )
        elif batch.last_offset != offset:
            problems.append(
                f"{where}: the batch there spans {batch.base_offset}..{batch.last_offset}; "
                "its last offset should be the entry's offset"
            )


def _check_time_index(seg: SegmentReport, problems: list[str]) -> None:
    if seg.time_index is None:
        return
    name = seg.log_path.with_suffix(".timeindex").name
    previous: tuple[int, int] | None = None
    for timestamp, offset in seg.time_index:
        where = f"{name}: entry ({timestamp}, {offset})"
        if previous is not None and (timestamp < previous[0] or offset < previous[1]):
            problems.append(f"{where}: goes backwards after {previous}")
        previous = (timestamp, offset)
        batch = _batch_containing(seg.batches, offset)
        if batch is None:
            problems.append(f"{where}: no batch in the segment holds that offset")
        elif batch.max_timestamp != timestamp:
            problems.append(
                f"{where}: the batch holding the offset (position {batch.position}) has "
                f"maxTimestamp {batch.max_timestamp}"
            )


def check_partition_dir(
    path: Path,
    *,
    allow_partial_tail: bool = False,
    allow_compacted: bool = False,
    require_indexes: bool = True,
    allow_index_padding: bool = True,
    allow_multi_batch_index_entries: bool = False,
    raise_on_problems: bool = True,
) -> PartitionDirReport:
    """Read a partition directory the way a Kafka broker lays it out and check its invariants.

    Checked: segment files are ``<20-digit base offset>.log`` with ``.index``/``.timeindex``
    beside them (``require_indexes``); batch offsets are contiguous within and across
    segments (next base = previous last + 1) and a non-empty segment's base offset is its
    first batch's base offset; every CRC is valid; each offset-index entry points at the
    start of a batch whose last offset is the entry's offset (or, with
    ``allow_multi_batch_index_entries``, of a batch at or after it -- Kafka indexes whole
    appends); index entries strictly increase; time-index entries never go backwards and the
    batch holding each entry's offset has that max timestamp; within a batch record offset
    deltas are 0..count-1, lastOffsetDelta = count-1 and, under CreateTime, maxTimestamp is
    the newest record's timestamp.  ``allow_compacted`` relaxes contiguity to "strictly
    increasing" and skips the per-record checks (compaction leaves gaps).  Trailing
    preallocated index entries are counted in the report (``*_index_padding``) and are a
    problem only without ``allow_index_padding``.  A torn batch at the end of the last
    segment is tolerated (and reported) with ``allow_partial_tail``.

    Problems are collected in ``report.problems``; with ``raise_on_problems`` (the default)
    any problem raises ``KafkaFormatError`` listing them all.  Data that cannot be parsed at
    all raises at once.
    """
    path = Path(path)
    if not path.is_dir():
        raise KafkaFormatError(f"{path} is not a directory")
    problems: list[str] = []
    names = sorted(p.name for p in path.iterdir())
    by_kind: dict[str, dict[int, str]] = {}
    other: list[str] = []
    for name in names:
        match = _SEGMENT_FILE.fullmatch(name)
        if match:
            by_kind.setdefault(match.group(2), {})[int(match.group(1))] = name
        elif name not in _KNOWN_FILES:
            other.append(name)
            if name.endswith((".log", ".index", ".timeindex")):
                problems.append(f"{name}: not named <20-digit base offset>.<suffix>")
    logs = by_kind.get("log", {})
    for kind in ("index", "timeindex", "txnindex"):
        for base, name in by_kind.get(kind, {}).items():
            if base not in logs:
                problems.append(f"{name}: no {segment_file_name(base, '.log')} beside it")

    segments: list[SegmentReport] = []
    bases = sorted(logs)
    for n, base in enumerate(bases):
        log_path = path / logs[base]
        data = log_path.read_bytes()
        is_last = n == len(bases) - 1
        try:
            batches = parse_log_segment(data, allow_partial_tail=allow_partial_tail and is_last)
        except KafkaFormatError as exc:
            raise KafkaFormatError(f"{log_path}: {exc}") from exc
        indexes: dict[str, tuple[list[tuple[int, int]] | None, int]] = {}
        for kind, parser in (("index", parse_offset_index), ("timeindex", parse_time_index)):
            index_path = path / segment_file_name(base, "." + kind)
            if not index_path.exists():
                if require_indexes:
                    problems.append(f"{index_path.name}: missing")
                indexes[kind] = (None, 0)
                continue
            raw = index_path.read_bytes()
            try:
                entry_size = OFFSET_INDEX_ENTRY_SIZE if kind == "index" else TIME_INDEX_ENTRY_SIZE
                padding = count_index_padding(raw, entry_size)
                indexes[kind] = (parser(raw, base, allow_padding=True), padding)
            except KafkaFormatError as exc:
                raise KafkaFormatError(f"{index_path}: {exc}") from exc
            if padding and not allow_index_padding:
                problems.append(
                    f"{index_path.name}: {padding} trailing preallocated entries (not trimmed)"
                )
        txn_path = path / segment_file_name(base, ".txnindex")
        txn_index = parse_txn_index(txn_path.read_bytes()) if txn_path.exists() else None
        segments.append(
            SegmentReport(
                base_offset=base,
                log_path=log_path,
                size=len(data),
                batches=list(batches),
                records=[r for b in batches for r in b.records],
                offset_index=indexes["index"][0],
                time_index=indexes["timeindex"][0],
                offset_index_padding=indexes["index"][1],
                time_index_padding=indexes["timeindex"][1],
                txn_index=txn_index,
                partial_tail=batches.partial_tail,
            )
        )

    strict = not allow_compacted
    expected: int | None = None  # the smallest offset the next batch / segment may use
    for seg in segments:
        name = seg.log_path.name
        if expected is not None:
            if strict and seg.base_offset != expected:
                problems.append(
                    f"{name}: segment base offset {seg.base_offset}, expected {expected} "
                    "(the previous segment's next offset)"
                )
            elif not strict and seg.base_offset < expected:
                problems.append(
                    f"{name}: segment base offset {seg.base_offset} overlaps earlier offsets "
                    f"(next free offset {expected})"
                )
        if seg.batches:
            first = seg.batches[0].base_offset
            if (strict and first != seg.base_offset) or first < seg.base_offset:
                problems.append(
                    f"{name}: first batch starts at offset {first}, segment base is "
                    f"{seg.base_offset}"
                )
        for prev, batch in itertools.pairwise(seg.batches):
            if (strict and batch.base_offset != prev.next_offset) or (
                batch.base_offset < prev.next_offset
            ):
                problems.append(
                    f"{name}: batch at position {batch.position} starts at offset "
                    f"{batch.base_offset}, previous batch ended at {prev.last_offset}"
                )
        _check_batches(seg, strict, problems)
        _check_offset_index(seg, allow_multi_batch_index_entries, problems)
        _check_time_index(seg, problems)
        expected = seg.next_offset

    leader_epochs: list[tuple[int, int]] | None = None
    epoch_path = path / "leader-epoch-checkpoint"
    if epoch_path.exists():
        leader_epochs = parse_leader_epoch_checkpoint(epoch_path.read_text(encoding="utf-8"))
        for a, b in itertools.pairwise(leader_epochs):
            if b[0] <= a[0] or b[1] <= a[1]:
                problems.append(f"leader-epoch-checkpoint: entry {b} does not follow {a}")
    topic_id: str | None = None
    metadata_path = path / "partition.metadata"
    if metadata_path.exists():
        topic_id = parse_partition_metadata(metadata_path.read_text(encoding="utf-8"))

    topic: str | None = None
    partition: int | None = None
    dir_match = re.fullmatch(r"(.+)-(\d+)", path.name)
    if dir_match:
        topic, partition = dir_match.group(1), int(dir_match.group(2))

    report = PartitionDirReport(
        path=path,
        topic=topic,
        partition=partition,
        segments=segments,
        batches=[b for s in segments for b in s.batches],
        records=[r for s in segments for r in s.records],
        leader_epochs=leader_epochs,
        topic_id=topic_id,
        other_files=other,
        problems=problems,
    )
    if problems and raise_on_problems:
        error = KafkaFormatError(f"{path} breaks Kafka's log layout:\n  " + "\n  ".join(problems))
        error.report = report
        raise error
    return report
