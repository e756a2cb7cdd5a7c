"""The sink's pure logic: which columns a DataFrame gives, and how its Arrow batches become records.

Spark's Kafka sink (``KafkaWriter.validateQuery`` and ``KafkaRowWriter``) reads these columns of
the DataFrame by exact name and ignores every other column:

==============  ==========================================  ==================================
column          type                                        when absent
==============  ==========================================  ==================================
``topic``       string                                      the ``topic`` option (required)
``key``         string or binary                            null key
``value``       string or binary (**required**)             error
``headers``     array<struct<key:string,value:binary>>      no headers
``partition``   int                                         the producer's partitioner
``timestamp``   timestamp or double (seconds)               the producer's clock (CreateTime)
==============  ==========================================  ==================================

``timestamp`` follows Spark's current ``KafkaWriter`` (its ``timestampExpression``: a
timestamp is truncated to ms, a double is seconds). The ``topic`` option, when set, overrides
the ``topic`` column, as in Spark. A null topic in a row, or a null header key, fails the
write with Spark's message. A null ``value`` is written as a null value (a tombstone for
compacted topics), as Spark does. A timestamp of exactly the epoch (0 ms) means "no
timestamp" to librdkafka, so such a record gets the producer's clock. Nothing here does I/O:
the writer (:mod:`franz.spark.writer`) feeds :func:`batch_records` into a producer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

from pyspark.sql.datasource import WriterCommitMessage
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DoubleType,
    IntegerType,
    StringType,
    StructType,
    TimestampType,
)

__all__ = [
    "DEFAULT_MAX_BLOCK_MS",
    "SINK_GROUP_PREFIX",
    "FranzCommitMessage",
    "Record",
    "SchemaError",
    "SinkColumns",
    "TaskMarker",
    "batch_records",
    "decode_marker",
    "decode_task_marker",
    "digest_records",
    "encode_marker",
    "marker_group",
    "producer_settings",
    "sink_columns",
    "task_marker_group",
    "task_transactional_id",
]

#: The prefix of the consumer group that records a streaming query's committed micro-batches.
SINK_GROUP_PREFIX = "franz-spark-sink-"

#: The Java producer's ``max.block.ms`` default: how long a write waits for metadata.
DEFAULT_MAX_BLOCK_MS = 60_000

#: librdkafka settings the sink sets unless the user gives ``kafka.<key>``: no loss or
#: duplication from producer retries, and keys hashed with Java's murmur2 so a key lands in the
#: partition a Java client (and Spark's JVM sink) would pick.
PRODUCER_DEFAULTS: dict[str, str] = {
    "acks": "all",
    "enable.idempotence": "true",
    "linger.ms": "5",
    "partitioner": "murmur2_random",
}

#: One record for ``Producer.produce``: topic, key, value, partition (-1: the partitioner's
#: choice), headers (list of (key, value) or None), timestamp in ms (0: now).
Record = tuple[str, Any, Any, int, "list[tuple[str, str | bytes | None]] | None", int]


class SchemaError(ValueError):
    """The DataFrame can't be written to Kafka; the message is Spark's."""


def _type_name(data_type: DataType) -> str:
    return data_type.simpleString()


def _is_headers_type(data_type: DataType) -> bool:
    """``array<struct<key:string,value:binary>>``, nullability and field-name case ignored
    (Spark's ``DataTypeUtils.sameType``)."""
    if not isinstance(data_type, ArrayType) or not isinstance(data_type.elementType, StructType):
        return False
    fields = data_type.elementType.fields
    return (
        len(fields) == 2
        and fields[0].name.lower() == "key"
        and isinstance(fields[0].dataType, StringType)
        and fields[1].name.lower() == "value"
        and isinstance(fields[1].dataType, BinaryType)
    )


@dataclass(frozen=True, slots=True)
class SinkColumns:
    """The columns :func:`sink_columns` found (each flag: present in the DataFrame)."""

    topic_option: str | None
    topic: bool
    key: bool
    headers: bool
    partition: bool
    timestamp: str | None  # "timestamp", "double" or None


def _check(schema: StructType, name: str, allowed: tuple[type[DataType], ...], wanted: str) -> bool:
    """Whether ``name`` is a column; raise Spark's message if its type isn't allowed."""
    for spark_field in schema.fields:
        if spark_field.name == name:
            if not isinstance(spark_field.dataType, allowed):
                found = _type_name(spark_field.dataType)
                raise SchemaError(
                    f"{name} attribute unsupported type {found}. {name} must be a(n) {wanted}"
                )
            return True
    return False


def sink_columns(schema: StructType, topic_option: str | None) -> SinkColumns:
    """Validate ``schema`` as Spark's Kafka sink does; raise :class:`SchemaError` if it can't
    be written."""
    if topic_option is not None:
        has_topic = False  # the option overrides the column: the column is not even checked
    else:
        has_topic = _check(schema, "topic", (StringType,), "string")
        if not has_topic:
            raise SchemaError(
                "topic option required when no 'topic' attribute is present. "
                "Use the topic option for setting a topic."
            )
    has_key = _check(schema, "key", (StringType, BinaryType), "string or binary")
    if not _check(schema, "value", (StringType, BinaryType), "string or binary"):
        raise SchemaError("Required attribute 'value' not found")
    has_headers = False
    for spark_field in schema.fields:
        if spark_field.name == "headers":
            if not _is_headers_type(spark_field.dataType):
                raise SchemaError(
                    f"headers attribute unsupported type {_type_name(spark_field.dataType)}. "
                    "headers must be a(n) array<struct<key:string,value:binary>>"
                )
            has_headers = True
    has_partition = _check(schema, "partition", (IntegerType,), "int")
    timestamp: str | None = None
    if _check(schema, "timestamp", (DoubleType, TimestampType), "double or timestamp"):
        kind = next(f.dataType for f in schema.fields if f.name == "timestamp")
        timestamp = "double" if isinstance(kind, DoubleType) else "timestamp"
    return SinkColumns(topic_option, has_topic, has_key, has_headers, has_partition, timestamp)


def _headers(value: list[dict[str, Any]] | None) -> list[tuple[str, str | bytes | None]] | None:
    if value is None:
        return None
    headers: list[tuple[str, str | bytes | None]] = []
    for header in value:
        if header is None or header["key"] is None:
            raise ValueError("Null header keys are not permitted in the 'headers' column")
        headers.append((header["key"], header["value"]))
    return headers


def _timestamps_ms(column: Any, kind: str) -> list[int]:
    """Record timestamps in ms (0 for null: the producer's clock), as Spark: a timestamp
    column is truncated to ms, a double is seconds since the epoch."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if kind == "double":
        micros = pc.cast(pc.multiply(column, 1_000_000.0), pa.int64(), safe=False)
    else:
        micros = pc.cast(column, pa.int64())
    millis = pc.divide(micros, 1000)
    return list(pc.fill_null(millis, 0).to_pylist())


def batch_records(batch: Any, columns: SinkColumns) -> Iterator[Record]:
    """The records of one ``pyarrow.RecordBatch`` (column by column, then zipped), in order."""
    import pyarrow.compute as pc

    rows = batch.num_rows
    if rows == 0:
        return iter(())
    topics: Any
    if columns.topic_option is not None:
        topics = repeat(columns.topic_option, rows)
    else:
        topic_column = batch.column("topic")
        if topic_column.null_count:
            raise ValueError(
                "null topic present in the data. Use the topic option for setting a default topic."
            )
        topics = topic_column.to_pylist()
    keys: Any = batch.column("key").to_pylist() if columns.key else repeat(None, rows)
    values = batch.column("value").to_pylist()
    partitions: Any = repeat(-1, rows)
    if columns.partition:
        partition_column = batch.column("partition")
        lowest = pc.min(partition_column).as_py()
        if lowest is not None and lowest < 0:  # -1 would silently mean "the partitioner"
            raise ValueError(
                f"Invalid partition: {lowest}. "
                "Partition number should always be non-negative or null."
            )
        partitions = pc.fill_null(partition_column, -1).to_pylist()
    headers: Any = (
        [_headers(h) for h in batch.column("headers").to_pylist()]
        if columns.headers
        else repeat(None, rows)
    )
    timestamps: Any = (
        _timestamps_ms(batch.column("timestamp"), columns.timestamp)
        if columns.timestamp
        else repeat(0, rows)
    )
    return zip(topics, keys, values, partitions, headers, timestamps, strict=False)


def batch_topics(batch: Any, columns: SinkColumns) -> list[str]:
    """The distinct topics one batch writes to (before any record is produced)."""
    if columns.topic_option is not None:
        return [columns.topic_option] if batch.num_rows else []
    import pyarrow.compute as pc

    return sorted(t for t in pc.unique(batch.column("topic")).to_pylist() if t is not None)


def producer_settings(client: Mapping[str, str]) -> tuple[dict[str, str], int]:
    """librdkafka settings for the sink's producer, and the metadata wait in ms.

    ``client`` is :func:`franz.spark.config.client_config`'s output. The sink's defaults
    (:data:`PRODUCER_DEFAULTS`) apply unless set there. ``max.block.ms`` is the Java producer's
    bound on waiting for metadata; librdkafka has no such key, so it is taken out and used as
    the sink's own metadata timeout.
    """
    conf = dict(PRODUCER_DEFAULTS)
    conf.update(client)
    raw = conf.pop("max.block.ms", None)
    max_block_ms = DEFAULT_MAX_BLOCK_MS if raw is None else int(raw)
    if max_block_ms < 0:
        raise ValueError(f"Kafka option 'kafka.max.block.ms' must be >= 0, got {raw!r}")
    return conf, max_block_ms


def marker_group(query_id: str) -> str:
    """The consumer group holding the markers of one streaming query."""
    return f"{SINK_GROUP_PREFIX}{query_id}"


def task_marker_group(query_id: str, task_partition: int) -> str:
    """The consumer group holding the markers of one write task of an ``exactlyOnce`` query
    (:mod:`franz.spark.txn_writer`): committed inside the task's transactions."""
    return f"{SINK_GROUP_PREFIX}{query_id}-{task_partition}"


def task_transactional_id(query_id: str, task_partition: int) -> str:
    """The ``transactional.id`` of one write task of an ``exactlyOnce`` query: the same for
    every attempt and every micro-batch of that task partition, so each attempt fences the
    ones before it (KIP-98)."""
    return f"franz-spark-{query_id}-{task_partition}"


def encode_marker(query_id: str, batch_id: int, rows: int, digest: str | None = None) -> str:
    """The metadata string of a sink-commit marker (an offset commit's metadata); a task
    marker also carries the digest of the rows (:func:`digest_records`)."""
    marker: dict[str, Any] = {"queryId": query_id, "batchId": batch_id, "rows": rows}
    if digest is not None:
        marker["digest"] = digest
    return json.dumps(marker, sort_keys=True)


@dataclass(frozen=True, slots=True)
class TaskMarker:
    """A task marker: the task's output of ``batch_id`` committed so far, ``rows`` records
    whose :func:`digest_records` is ``digest`` (None in markers without one)."""

    batch_id: int
    rows: int
    digest: str | None


def decode_task_marker(metadata: str | None, offset: int) -> TaskMarker | None:
    """The :class:`TaskMarker` in an offset's metadata (batch id from offset - 1 if the
    metadata has none), or None."""
    batch_id = decode_marker(metadata, offset)
    if batch_id is None:
        return None
    rows, digest = -1, None
    try:
        value = json.loads(metadata or "")
    except ValueError:
        value = None
    if isinstance(value, dict):
        if isinstance(value.get("rows"), int):
            rows = int(value["rows"])
        if isinstance(value.get("digest"), str):
            digest = str(value["digest"])
    return TaskMarker(batch_id, rows, digest)


def digest_records(records: Iterator[Record], digest: Any) -> Iterator[Record]:
    """Pass ``records`` through, feeding each to ``digest`` (a ``hashlib`` object): the
    digest of a row sequence, whatever Arrow batches carried it (the ``repr`` of each record
    tuple: bytes, str, ints, header lists, all with a stable ``repr``)."""
    update = digest.update
    for record in records:
        update(repr(record).encode())
        yield record


def decode_marker(metadata: str | None, offset: int) -> int | None:
    """The batch id a marker records (from its metadata, else offset - 1), or None."""
    if metadata:
        try:
            value = json.loads(metadata)
        except ValueError:
            value = None
        if isinstance(value, dict) and isinstance(value.get("batchId"), int):
            return int(value["batchId"])
    return offset - 1 if offset > 0 else None


@dataclass
class FranzCommitMessage(WriterCommitMessage):
    """What one write task reports to the driver's ``commit()``.

    ``counts`` maps ``"topic"`` → ``{partition: records delivered}``. For streaming writes,
    ``query_id`` / ``batch_id`` / ``task_partition`` identify the task; ``skipped`` says the
    task produced nothing because the batch's marker showed it already committed.
    """

    rows: int = 0
    counts: dict[str, dict[int, int]] = field(default_factory=dict)
    query_id: str | None = None
    batch_id: int | None = None
    task_partition: int | None = None
    skipped: bool = False
