"""Record-level checks and broker-side recompression of appended batches (Kafka's
``LogValidator``), done only where a batch needs them.

The common append stays zero-copy (``Log.append_as_leader``): header and CRC checks, then
``baseOffset`` / ``partitionLeaderEpoch`` patched in place. A batch is decoded here only when

- the topic's ``compression.type`` names a codec (``uncompressed``, ``gzip``, ``snappy``,
  ``lz4``, ``zstd``; Kafka's ``BrokerCompressionType``) other than the batch's: it is
  rebuilt with that codec (``producer``, and a matching codec, keep the batch as it came);
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

Recompression keeps what Kafka's ``buildRecordsAndAssignOffsets`` keeps: the records'
keys, values, headers and timestamps, the producer id, epoch and base sequence, and the
transactional bit (so idempotence and retries work unchanged); offset deltas become
0..n-1; ``baseTimestamp`` is the first record's timestamp. A control batch written
uncompressed stays so (Kafka never compresses those). Magic is always 2.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from franz.config.topic import LogConfig
from franz.errors import InvalidRecordError, InvalidTimestampError, RecordError
from franz.protocol.records.batch import NO_TIMESTAMP, RecordBatchView, TimestampType
from franz.protocol.records.compression import CompressionType
from franz.protocol.records.inflated import Record, RecordBatchBuilder

__all__ = [
    "check_records",
    "compression_level",
    "needs_rebuild",
    "rebuild_batch",
    "screen_timestamps",
    "target_compression",
    "timestamp_bounds",
]

#: ``compression.type`` values that keep batches as produced.
PRODUCER: Final = "producer"
_LONG_MIN: Final = -(1 << 63)


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


def rebuild_batch(
    view: RecordBatchView, records: Sequence[Record], codec: CompressionType, level: int | None
) -> bytearray:
    """``view``'s records as one new batch compressed with ``codec`` (offsets from 0).

    ``baseOffset`` and ``partitionLeaderEpoch`` are left for the append to patch;
    LogAppendTime is stamped by the append too (``set_log_append_time``).
    """
    builder = RecordBatchBuilder(
        compression=codec,
        compression_level=level,
        producer_id=view.producer_id,
        producer_epoch=view.producer_epoch,
        base_sequence=view.base_sequence,
        is_transactional=view.is_transactional,
        is_control_batch=view.is_control_batch,
    )
    for record in records:
        builder.append(record.timestamp, record.key, record.value, record.headers)
    return builder.build()


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
