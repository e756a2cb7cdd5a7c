"""Message formats v0 and v1 (pre-0.11 "message sets"): up-conversion and down-conversion.

Franz stores only magic v2 batches (``franz.protocol.records.batch``), as Kafka 3.x does with
``log.message.format.version`` >= 3.0. Clients that speak the pre-0.11 protocol (Produce v0-2,
Fetch v0-3: librdkafka with ``api.version.request=false``, old Java and Python clients) send and
expect message sets, so Kafka 3.9 converts at the edge, and so does Franz:

- **Produce v0-2**: :func:`upconvert` validates a message set (CRC-32 of every message, and of
  every inner message of a compressed wrapper) and rebuilds it as *one* v2 batch with offset
  deltas 0..n-1 (Kafka's ``LogValidator.convertAndAssignOffsetsNonCompressed`` /
  ``validateMessagesAndAssignOffsetsCompressed``): keys, values and magic v1 timestamps are
  kept; a magic v0 message has no timestamp (-1); the batch keeps the wrapper's codec
  (``compression.type=producer``); the log then assigns offsets as for any batch.
- **Fetch v0-3**: :func:`downconvert` turns v2 batches into messages of magic 0 (Fetch v0-1)
  or 1 (Fetch v2-3) (Kafka's ``RecordsUtil.downConvert``): control batches are dropped,
  headers are dropped (magic < 2 has none), an uncompressed batch becomes one message per
  record (records below the fetch offset are left out: some librdkafka versions rely on it),
  a compressed batch becomes one wrapper message of the same codec holding all its records.

Wire format of one message set entry (Kafka's ``LegacyRecord``; big-endian)::

    offset      int64    absolute; in a v1 wrapper's inner set: relative (0..n-1)
    messageSize int32    bytes after this field
    crc         uint32   CRC-32 (zlib's IEEE polynomial, not CRC-32C) of magic..end
    magic       int8     0 or 1
    attributes  int8     bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4), bit 3 timestamp
                         type (magic 1: 1 = LogAppendTime)
    timestamp   int64    magic 1 only
    key         bytes    int32 length, -1 = null
    value       bytes    int32 length, -1 = null; a wrapper's value is the compressed
                         inner message set

A v1 compressed wrapper's offset is the absolute offset of its *last* inner message and its
timestamp the largest inner timestamp (or the log append time). Magic v0 wrappers carry absolute
inner offsets. LZ4 with magic 0 uses Kafka's broken frame header checksum (KIP-57: computed
over the frame magic too): :func:`decompress_legacy` accepts it and :func:`compress_legacy`
writes it, as Kafka does.
zstd does not exist below v2: a v2 zstd batch cannot be down-converted
(UNSUPPORTED_COMPRESSION_TYPE, as Kafka answers Fetch < v10).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from franz.errors import CorruptRecordError, InvalidRecordError, UnsupportedCompressionTypeError
from franz.protocol.records.batch import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_TIMESTAMP,
    RecordBatchView,
    TimestampType,
    peek_batch_size,
)
from franz.protocol.records.compression import CompressionType, compress, decompress
from franz.protocol.records.inflated import RecordBatchBuilder, iter_records

__all__ = [
    "LegacyRecord",
    "compress_legacy",
    "decompress_legacy",
    "downconvert",
    "downconvert_for_fetch",
    "encode_message",
    "iter_message_set",
    "record_set_magic",
    "upconvert",
]

MAGIC_V0: Final = 0
MAGIC_V1: Final = 1
_OFFSET_SIZE: Final = struct.Struct(">qi")
_CRC_MAGIC_ATTRS: Final = struct.Struct(">Ibb")
_I64: Final = struct.Struct(">q")
_I32: Final = struct.Struct(">i")
#: crc + magic + attributes + key length + value length: the smallest v0 message.
_MIN_MESSAGE_V0: Final = 14
_MAGIC_POS: Final = 16  # offset (8) + size (4) + crc (4): where v2 keeps its magic too
_CODEC_MASK: Final = 0x07
_TIMESTAMP_TYPE_BIT: Final = 0x08
#: ``LazyDownConversionRecordsSend.MAX_READ_SIZE``: the largest overflow batch written at once.
_MAX_OVERFLOW_READ: Final = 128 * 1024


@dataclass(frozen=True, slots=True)
class LegacyRecord:
    """One message of a v0/v1 message set, as on the wire (offsets not yet resolved)."""

    offset: int
    magic: int
    attributes: int
    timestamp: int
    key: bytes | None
    value: bytes | None

    @property
    def codec(self) -> int:
        return self.attributes & _CODEC_MASK

    @property
    def log_append_time(self) -> bool:
        return self.magic >= MAGIC_V1 and bool(self.attributes & _TIMESTAMP_TYPE_BIT)


def record_set_magic(records: bytes | bytearray | memoryview) -> int | None:
    """The magic of the first entry of a record set (v2 batches and messages keep it at the
    same position), or None if the set is too short to tell."""
    if len(records) <= _MAGIC_POS:
        return None
    return int(records[_MAGIC_POS])


def iter_message_set(data: bytes | bytearray | memoryview) -> Iterator[LegacyRecord]:
    """Yield the (shallow) messages of a v0/v1 message set, checking each one's CRC-32.

    ``CorruptRecordError`` (CORRUPT_MESSAGE) for a CRC mismatch, a size that runs past the
    set or is too small for its fields, or a partial message at the end (a producer sends
    whole messages); ``InvalidRecordError`` for a magic other than 0 or 1.
    """
    buf = bytes(data)
    pos = 0
    end = len(buf)
    while pos < end:
        if end - pos < LOG_OVERHEAD:
            raise CorruptRecordError(f"partial message header at position {pos}")
        offset, size = _OFFSET_SIZE.unpack_from(buf, pos)
        start = pos + LOG_OVERHEAD
        stop = start + size
        if size < _MIN_MESSAGE_V0 or stop > end:
            raise CorruptRecordError(
                f"message at position {pos} has size {size}, "
                f"{end - start} bytes remain in the message set"
            )
        crc, magic, attributes = _CRC_MAGIC_ATTRS.unpack_from(buf, start)
        if magic not in (MAGIC_V0, MAGIC_V1):
            raise InvalidRecordError(f"message at position {pos} has magic {magic}, not 0 or 1")
        if zlib.crc32(buf[start + 4 : stop]) != crc:
            raise CorruptRecordError(
                f"message at offset {offset} is corrupt (stored crc = {crc}, "
                f"computed crc = {zlib.crc32(buf[start + 4 : stop])})"
            )
        p = start + 6
        timestamp = NO_TIMESTAMP
        if magic == MAGIC_V1:
            if stop - p < 8 + 8:
                raise CorruptRecordError(f"message at offset {offset} is too short for magic 1")
            (timestamp,) = _I64.unpack_from(buf, p)
            p += 8
        key, p = _read_bytes(buf, p, stop, offset)
        value, p = _read_bytes(buf, p, stop, offset)
        if p != stop:
            raise CorruptRecordError(f"message at offset {offset} has {stop - p} trailing bytes")
        yield LegacyRecord(offset, magic, attributes, timestamp, key, value)
        pos = stop


def _read_bytes(buf: bytes, pos: int, stop: int, offset: int) -> tuple[bytes | None, int]:
    if stop - pos < 4:
        raise CorruptRecordError(f"message at offset {offset} is truncated")
    (n,) = _I32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        return None, pos
    if pos + n > stop:
        raise CorruptRecordError(f"message at offset {offset} has a field past its end")
    return buf[pos : pos + n], pos + n


def iter_deep(wrapper: LegacyRecord) -> Iterator[LegacyRecord]:
    """The messages inside a compressed wrapper, with absolute offsets (Kafka's
    ``AbstractLegacyRecordBatch.DeepRecordsIterator``); the wrapper's log append time
    replaces inner timestamps. ``CorruptRecordError`` for an undecompressable value."""
    if wrapper.value is None:
        raise InvalidRecordError(f"compressed message at offset {wrapper.offset} has no value")
    try:
        inner = decompress_legacy(wrapper.codec, wrapper.magic, wrapper.value)
    except ValueError as exc:
        raise CorruptRecordError(
            f"compressed message at offset {wrapper.offset} does not decompress: {exc}"
        ) from exc
    messages = list(iter_message_set(inner))
    if not messages:
        raise InvalidRecordError(f"compressed message at offset {wrapper.offset} is empty")
    last_relative = messages[-1].offset
    for message in messages:
        if message.magic != wrapper.magic:
            raise InvalidRecordError(
                f"inner message magic {message.magic} does not match its wrapper's {wrapper.magic}"
            )
        if message.codec:
            raise InvalidRecordError(
                "compressed outer message has an inner message with a compression attribute"
            )
        offset = message.offset
        timestamp = message.timestamp
        if wrapper.magic == MAGIC_V1:
            offset = wrapper.offset - last_relative + message.offset
            if wrapper.log_append_time:
                timestamp = wrapper.timestamp
        yield LegacyRecord(
            offset, message.magic, message.attributes, timestamp, message.key, message.value
        )


def upconvert(data: bytes | bytearray | memoryview) -> bytearray:
    """Validate a v0/v1 message set and return it as one v2 batch (base offset 0).

    Timestamps: magic 1 keeps each message's (a LogAppendTime wrapper's for its inner
    messages); magic 0 has none (-1). The batch is compressed with the codec of the set's
    compressed wrappers (the first one), or not at all. Raises as :func:`iter_message_set`
    and :func:`iter_deep`; ``CorruptRecordError`` for an empty set.
    """
    codec = CompressionType.NONE
    records: list[LegacyRecord] = []
    for message in iter_message_set(data):
        if message.codec == CompressionType.NONE:
            records.append(message)
            continue
        if message.codec == CompressionType.ZSTD:
            # Kafka: "ZStandard compression is not supported for magic < 2" (KIP-110).
            raise UnsupportedCompressionTypeError(
                f"message at offset {message.offset} is zstd-compressed, which needs magic 2"
            )
        if message.codec > CompressionType.ZSTD:
            raise InvalidRecordError(
                f"message at offset {message.offset} has invalid codec {message.codec}"
            )
        if codec == CompressionType.NONE:
            codec = CompressionType(message.codec)
        records.extend(iter_deep(message))
    if not records:
        raise CorruptRecordError("the message set is empty")
    builder = RecordBatchBuilder(compression=codec)
    for record in records:
        builder.append(record.timestamp, record.key, record.value)
    return builder.build()


def encode_message(
    offset: int,
    magic: int,
    timestamp: int,
    key: bytes | None,
    value: bytes | None,
    attributes: int = 0,
) -> bytes:
    """One message set entry: offset, size, CRC-32 and the message (Kafka's ``LegacyRecord``)."""
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic >= MAGIC_V1:
        body += _I64.pack(timestamp)
    for field in (key, value):
        if field is None:
            body += _I32.pack(-1)
        else:
            body += _I32.pack(len(field))
            body += field
    crc = zlib.crc32(body)
    return _OFFSET_SIZE.pack(offset, len(body) + 4) + struct.pack(">I", crc) + bytes(body)


def downconvert(data: bytes | bytearray | memoryview, to_magic: int, first_offset: int) -> bytes:
    """Convert the v2 batches in ``data`` (a log read) to a message set of ``to_magic``.

    A partial batch at the end (a read cut at its size limit) is left out. Raises
    ``UnsupportedCompressionTypeError`` for a zstd batch (no such codec below magic 2).
    """
    return b"".join(_downconverted_batches(data, to_magic, first_offset))


def downconvert_for_fetch(
    data: bytes | bytearray | memoryview, to_magic: int, first_offset: int
) -> bytes:
    """A Fetch v0-3 partition's records as Kafka 3.9 sends them: ``downconvert``, sized as
    Kafka's ``LazyDownConversionRecords`` and written as its ``LazyDownConversionRecordsSend``.

    Kafka fixes the records' size before converting all of them: the size of the read
    (``data``, a trailing partial batch included), or of the first batch converted when that
    is larger (a consumer needs one whole batch to progress); nothing at all when no batch
    converts to anything. The converted messages are then cut at that size (a partial last
    message, which consumers skip) or followed by an *overflow batch* filling the rest: offset
    -1, a length past the end (``max(rest + 1, 61)``), zeros, cut at the size too. A zstd
    batch raises ``UnsupportedCompressionTypeError`` when it comes first; after other batches
    it ends the conversion there (Kafka answers the error on the consumer's next fetch).
    """
    pieces: list[bytes] = []
    batches = _downconverted_batches(data, to_magic, first_offset)
    try:
        for piece in batches:
            pieces.append(piece)
    except UnsupportedCompressionTypeError:
        if not pieces:
            raise
    if not pieces:
        return b""
    size = max(len(data), len(pieces[0]))
    out = bytearray(b"".join(pieces)[:size])
    while len(out) < size:
        rest = size - len(out)
        overflow = bytearray(max(LOG_OVERHEAD, min(rest + 1, _MAX_OVERFLOW_READ)))
        _OFFSET_SIZE.pack_into(overflow, 0, -1, max(rest + 1, BATCH_HEADER_SIZE))
        out += overflow[:rest]
    return bytes(out)


def _downconverted_batches(
    data: bytes | bytearray | memoryview, to_magic: int, first_offset: int
) -> Iterator[bytes]:
    """``downconvert``'s messages, one piece per v2 batch that converts to any."""
    position = 0
    end = len(data)
    while position < end:
        size = peek_batch_size(data, position)
        if size is None or position + size > end:
            break
        if data[position + _MAGIC_POS] != MAGIC_V2:
            raise CorruptRecordError(f"stored batch at position {position} is not magic 2")
        batch = RecordBatchView(data, position)
        position += size
        if batch.is_control_batch:
            continue
        codec = batch.compression_type
        if codec == CompressionType.ZSTD:
            raise UnsupportedCompressionTypeError(
                "zstd-compressed records cannot be down-converted to message format "
                f"v{to_magic} (Fetch v0-3)"
            )
        records = [
            r
            for r in iter_records(batch)
            if codec != CompressionType.NONE or r.offset >= first_offset
        ]
        if not records:
            continue
        log_append_time = batch.timestamp_type == TimestampType.LOG_APPEND_TIME
        attributes = _TIMESTAMP_TYPE_BIT if log_append_time and to_magic >= MAGIC_V1 else 0

        append_time = batch.max_timestamp if log_append_time else None

        out = bytearray()
        if codec == CompressionType.NONE:
            for r in records:
                out += encode_message(
                    r.offset,
                    to_magic,
                    r.timestamp if append_time is None else append_time,
                    r.key,
                    r.value,
                    attributes,
                )
            yield bytes(out)
            continue
        base = records[0].offset
        inner = bytearray()
        for r in records:
            inner_offset = r.offset - base if to_magic >= MAGIC_V1 else r.offset
            inner += encode_message(
                inner_offset,
                to_magic,
                r.timestamp if append_time is None else append_time,
                r.key,
                r.value,
                attributes,
            )
        wrapper_timestamp = (
            batch.max_timestamp if log_append_time else max(r.timestamp for r in records)
        )
        out += encode_message(
            records[-1].offset,
            to_magic,
            wrapper_timestamp,
            None,
            compress_legacy(codec, to_magic, inner),
            attributes | int(codec),
        )
        yield bytes(out)


# -- LZ4 with magic 0 (KIP-57) ----------------------------------------------------------------

_LZ4_MAGIC: Final = b"\x04\x22\x4d\x18"
_P1: Final = 2654435761
_P2: Final = 2246822519
_P3: Final = 3266489917
_P4: Final = 668265263
_P5: Final = 374761393
_M32: Final = 0xFFFFFFFF


def decompress_legacy(codec: int, magic: int, data: bytes) -> bytes:
    """Decompress a wrapper's value; for LZ4 with magic 0, first repair the frame header
    checksum that Kafka < 0.10 (and librdkafka for magic 0) compute over the frame magic."""
    if codec == CompressionType.LZ4 and magic == MAGIC_V0:
        data = _fix_lz4_header_checksum(data)
    return decompress(codec, data)


def compress_legacy(codec: int, magic: int, data: bytes | bytearray) -> bytes:
    """Compress a wrapper's inner message set; LZ4 with magic 0 gets the broken frame header
    checksum, as Kafka's ``KafkaLZ4BlockOutputStream`` writes it for magic 0."""
    frame = compress(codec, memoryview(data))
    if codec == CompressionType.LZ4 and magic == MAGIC_V0:
        return _set_lz4_header_checksum(frame, broken=True)
    return frame


def _fix_lz4_header_checksum(frame: bytes) -> bytes:
    return _set_lz4_header_checksum(frame, broken=False)


def _set_lz4_header_checksum(frame: bytes, *, broken: bool) -> bytes:
    """The frame with its header checksum (the byte after the descriptor) recomputed: over
    the descriptor (LZ4's frame format) or, ``broken``, over frame magic + descriptor."""
    if len(frame) < 7 or frame[:4] != _LZ4_MAGIC:
        return frame
    flags = frame[4]
    end = 6 + (8 if flags & 0x08 else 0) + (4 if flags & 0x01 else 0)  # content size, dict id
    if len(frame) <= end:
        return frame
    checksum = (_xxh32(frame[0 if broken else 4 : end]) >> 8) & 0xFF
    return frame[:end] + bytes([checksum]) + frame[end + 1 :]


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 (the LZ4 frame format's checksum), for the few bytes of a frame header."""
    n = len(data)
    i = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed, (seed - _P1) & _M32]
        while i + 16 <= n:
            for lane in range(4):
                (word,) = struct.unpack_from("<I", data, i + 4 * lane)
                v[lane] = (_rotl((v[lane] + word * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (word,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
