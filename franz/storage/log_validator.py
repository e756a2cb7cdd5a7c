"""Record-level checks and broker-side recompression of appended batches (Kafka's
``LogValidator``), done only where a batch needs them.

The common append stays zero-copy (``Log.append_as_leader``): header and CRC checks, then
``baseOffset`` / ``partitionLeaderEpoch`` patched in place. A batch is rewritten only when
the topic's ``compression.type`` names a codec (``uncompressed``, ``gzip``, ``snappy``,
``lz4``, ``zstd``; Kafka's ``BrokerCompressionType``) other than the batch's: it is
recompressed with that codec (``producer``, and a matching codec, keep the batch as it
came). Its records are decoded only when

- the topic is compacted (``cleanup.policy`` has ``compact``) and the batch comes from a
  client: every record needs a key;
- the batch header's timestamps fail the cheap screen (``screen_timestamps``): its first
  (``baseTimestamp``) or largest (``maxTimestamp``) CreateTime timestamp lies outside
  ``[now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms]``
  (KIP-937), or the producer set the LogAppendTime bit. The records are then checked one
  by one to name the bad ones. Kafka checks every record's timestamp; the screen misses a
  record whose timestamp is below both its batch's first and largest ones while those are
  in range (producers write records in time order, so the first is the smallest).

Record errors (KIP-467): each bad record gives a ``RecordError(batch_index, message)``, the
index of the record in its batch, with Kafka's message. The batch is then refused as a
whole with INVALID_TIMESTAMP if any error is a timestamp error, else INVALID_RECORD, and the
exception carries the record errors for the Produce response (v8+: ``record_errors``,
``error_message``), as Kafka's ``processRecordErrors``.

Recompression (``recompress_batch``) decompresses the batch's records block and compresses
it with the target codec at the topic's KIP-390 level; the header keeps every field but the
codec bits, ``batchLength`` and the CRC: producer id, epoch, base sequence and the
transactional bit stay (idempotence and retries work unchanged), and so do the records'
bytes. Kafka's ``buildRecordsAndAssignOffsets`` re-encodes the records instead, with offset
deltas 0..n-1 and ``baseTimestamp`` the first record's: the same record bytes for batches
written as every client writes them (deltas 0..n-1, the first record's timestamp as
``baseTimestamp``, record attributes 0). Franz keeps a producer's bytes as its zero-copy path
does for a matching codec, at the cost of decompression and compression only (no per-record
work in Python). A control batch written uncompressed stays so (Kafka never compresses
those). Magic is always 2.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

import crc32c

from franz.config.topic import LogConfig
from franz.errors import CorruptRecordError, InvalidRecordError, InvalidTimestampError, RecordError
from franz.protocol.records.batch import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    RecordBatchView,
    TimestampType,
)
from franz.protocol.records.compression import CompressionType, compress, decompress
from franz.protocol.records.inflated import Record

__all__ = [
    "check_records",
    "compression_level",
    "needs_rebuild",
    "recompress_batch",
    "screen_timestamps",
    "target_compression",
    "timestamp_bounds",
]

#: ``compression.type`` values that keep batches as produced.
PRODUCER: Final = "producer"
_LONG_MIN: Final = -(1 << 63)
# Header positions (``franz.protocol.records.batch``).
_BATCH_LENGTH_POS: Final = 8
_CRC_POS: Final = 17
_CRC_START: Final = 21
_ATTRIBUTES_POS: Final = 21
_CODEC_MASK: Final = 0x07
_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
_UINT32: Final = struct.Struct(">I")


def target_compression(config: LogConfig) -> CompressionType | None:
    """The codec batches are stored with; None for ``producer`` (as the producer sent it)."""
    name = config.compression_type
    if name == PRODUCER:
        return None
    if name == "uncompressed":
        return CompressionType.NONE
    return CompressionType.from_config_name(name)


def compression_level(config: LogConfig, codec: CompressionType) -> int | None:
    """The KIP-390 level configured for ``codec``; None for codecs without one."""
    if codec is CompressionType.GZIP:
        return config.compression_gzip_level
    if codec is CompressionType.LZ4:
        return config.compression_lz4_level
    if codec is CompressionType.ZSTD:
        return config.compression_zstd_level
    return None


def needs_rebuild(view: RecordBatchView, target: CompressionType | None) -> bool:
    """Whether ``view`` must be recompressed to ``target`` (Kafka's ``!inPlaceAssignment``)."""
    if target is None:
        return False
    source = view.compression_type
    if source is target:
        return False
    # Kafka: "Do not compress control records unless they are written compressed".
    return not (source is CompressionType.NONE and view.is_control_batch)


def timestamp_bounds(config: LogConfig) -> tuple[int, int]:
    """(before, after): how far a CreateTime timestamp may lie behind and ahead of now.

    ``message.timestamp.before.max.ms`` / ``after.max.ms`` (KIP-937), each capped by the
    deprecated ``message.timestamp.difference.max.ms``.
    """
    difference = config.message_timestamp_difference_max_ms
    return (
        min(config.message_timestamp_before_max_ms, difference),
        min(config.message_timestamp_after_max_ms, difference),
    )


def screen_timestamps(
    view: RecordBatchView, now: int, log_append_time: bool, before: int, after: int
) -> bool:
    """True if the batch header alone shows its timestamps are fine (no decoding needed)."""
    if view.timestamp_type == TimestampType.LOG_APPEND_TIME:
        return False  # a producer may not set it; the records say how it is refused
    if log_append_time:
        return True  # the broker stamps its own time
    for timestamp in (view.base_timestamp, view.max_timestamp):
        if timestamp != NO_TIMESTAMP and (now - timestamp > before or timestamp - now > after):
            return False
    return True


def check_records(
    view: RecordBatchView,
    records: Sequence[Record],
    *,
    partition: str,
    now: int,
    compact: bool,
    log_append_time: bool,
    before: int,
    after: int,
) -> None:
    """Kafka's ``validateRecord`` on each record, then ``processRecordErrors``.

    Raises ``InvalidTimestampError`` if any record's timestamp is refused, else
    ``InvalidRecordError`` if any record is, both carrying every ``RecordError``.
    """
    errors: list[RecordError] = []
    timestamp_error = False
    batch_log_append_time = view.timestamp_type == TimestampType.LOG_APPEND_TIME
    for index, record in enumerate(records):
        if compact and record.key is None:
            errors.append(
                RecordError(
                    index,
                    "Compacted topic cannot accept message without key in topic partition "
                    f"{partition}",
                )
            )
            continue
        timestamp = record.timestamp
        if not log_append_time and timestamp != NO_TIMESTAMP:
            if now - timestamp > before or timestamp - now > after:
                timestamp_error = True
                errors.append(
                    RecordError(
                        index,
                        f"Timestamp {timestamp} of message with offset {record.offset} is out "
                        f"of range. The timestamp should be within [{_java_long(now - before)}, "
                        f"{_java_long(now + after)}]",
                    )
                )
        elif batch_log_append_time:
            timestamp_error = True
            errors.append(
                RecordError(
                    index,
                    f"Invalid timestamp type in message {_java_record(record)}. Producer "
                    "should not set timestamp type to LogAppendTime.",
                )
            )
    if not errors:
        return
    if timestamp_error:
        raise InvalidTimestampError(
            "One or more records have been rejected due to invalid timestamp", errors
        )
    shown = ", ".join(str(error) for error in errors[:3])
    raise InvalidRecordError(
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]",
        errors,
    )


def recompress_batch(
    view: RecordBatchView, codec: CompressionType, level: int | None
) -> bytearray:
    """``view`` with its records block recompressed with ``codec`` (see the module docstring).

    ``baseOffset`` and ``partitionLeaderEpoch`` are left for the append to patch, and
    LogAppendTime for it to stamp. ``CorruptRecordError`` if the block does not decompress
    with the batch's codec (``iter_records`` reports it so).
    """
    source = view.compression_type
    try:
        records = decompress(source, view.records_payload())
    except ValueError as exc:
        raise CorruptRecordError(
            f"record batch at offset {view.base_offset} does not decompress with "
            f"{source.config_name}: {exc}"
        ) from exc
    payload = compress(codec, records, level)
    out = bytearray(view.raw()[:BATCH_HEADER_SIZE])
    _INT32.pack_into(out, _BATCH_LENGTH_POS, BATCH_HEADER_SIZE - LOG_OVERHEAD + len(payload))
    _INT16.pack_into(out, _ATTRIBUTES_POS, (view.attributes & ~_CODEC_MASK) | int(codec))
    out += payload
    _UINT32.pack_into(out, _CRC_POS, crc32c.crc32c(memoryview(out)[_CRC_START:]))
    return out


def _java_long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit integer, as Java's ``long`` arithmetic does."""
    return (value - _LONG_MIN) % (1 << 64) + _LONG_MIN


def _java_record(record: Record) -> str:
    """Java's ``DefaultRecord.toString``."""
    key = 0 if record.key is None else len(record.key)
    value = 0 if record.value is None else len(record.value)
    return (
        f"DefaultRecord(offset={record.offset}, timestamp={record.timestamp}, "
        f"key={key} bytes, value={value} bytes)"
    )
