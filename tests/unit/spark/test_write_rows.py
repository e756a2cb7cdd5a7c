"""The sink's pure logic: schema validation (Spark's messages), Arrow batches to records,
producer settings and commit markers. No Spark session, no broker."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow as pa
import pytest
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from franz.spark.write_rows import (
    FranzCommitMessage,
    SchemaError,
    SinkColumns,
    batch_records,
    batch_topics,
    decode_marker,
    encode_marker,
    marker_group,
    producer_settings,
    sink_columns,
)

HEADERS = "array<struct<key:string,value:binary>>"
HEADERS_ARROW = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


#: The column types these tests use, by their DDL name (parsing DDL needs a JVM).
TYPES: dict[str, DataType] = {
    "string": StringType(),
    "binary": BinaryType(),
    "int": IntegerType(),
    "bigint": LongType(),
    "long": LongType(),
    "double": DoubleType(),
    "timestamp": TimestampType(),
    HEADERS: ArrayType(
        StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    ),
    "array<struct<KEY:string not null,Value:binary>>": ArrayType(
        StructType([StructField("KEY", StringType(), False), StructField("Value", BinaryType())])
    ),
    "array<struct<key:binary,value:binary>>": ArrayType(
        StructType([StructField("key", BinaryType()), StructField("value", BinaryType())])
    ),
    "array<string>": ArrayType(StringType()),
    "map<string,int>": MapType(StringType(), IntegerType()),
}


def schema(ddl: str) -> StructType:
    """A schema from ``"name type, name type"`` (types from :data:`TYPES`)."""
    fields = []
    rest = ddl
    while rest:
        name, rest = rest.split(" ", 1)
        kind = next(k for k in sorted(TYPES, key=len, reverse=True) if rest.startswith(k))
        fields.append(StructField(name, TYPES[kind]))
        rest = rest[len(kind) :].removeprefix(",").strip()
    return StructType(fields)


# --- sink_columns -----------------------------------------------------------------------------


def test_value_only_with_topic_option() -> None:
    assert sink_columns(schema("value binary"), "t") == SinkColumns(
        "t", topic=False, key=False, headers=False, partition=False, timestamp=None
    )


def test_every_column() -> None:
    columns = sink_columns(
        schema(
            f"topic string, key string, value string, headers {HEADERS}, partition int, "
            "timestamp timestamp, other map<string,int>"
        ),
        None,
    )
    assert columns == SinkColumns(
        None, topic=True, key=True, headers=True, partition=True, timestamp="timestamp"
    )


def test_double_timestamp_is_seconds() -> None:
    assert sink_columns(schema("value string, timestamp double"), "t").timestamp == "double"


def test_topic_option_wins_over_a_topic_column_of_any_type() -> None:
    columns = sink_columns(schema("topic int, value string"), "chosen")
    assert columns.topic_option == "chosen" and not columns.topic


def test_header_field_names_are_case_insensitive_and_nullability_ignored() -> None:
    columns = sink_columns(
        schema("value string, headers array<struct<KEY:string not null,Value:binary>>"), "t"
    )
    assert columns.headers


@pytest.mark.parametrize(
    ("ddl", "topic", "message"),
    [
        ("key binary", "t", "Required attribute 'value' not found"),
        ("Value string", "t", "Required attribute 'value' not found"),  # names are exact
        ("value int", "t", "value attribute unsupported type int. value must be a(n) string or"),
        ("key long, value string", "t", "key attribute unsupported type bigint"),
        ("value string", None, "topic option required when no 'topic' attribute is present"),
        ("topic binary, value string", None, "topic attribute unsupported type binary"),
        ("value string, partition bigint", "t", "partition attribute unsupported type bigint"),
        ("value string, headers array<string>", "t", "headers attribute unsupported type"),
        (
            "value string, headers array<struct<key:binary,value:binary>>",
            "t",
            "headers must be a(n) array<struct<key:string,value:binary>>",
        ),
        ("value string, timestamp string", "t", "timestamp attribute unsupported type string"),
    ],
)
def test_bad_schema(ddl: str, topic: str | None, message: str) -> None:
    with pytest.raises(SchemaError) as info:
        sink_columns(schema(ddl), topic)
    assert message in str(info.value)


# --- batch_records ----------------------------------------------------------------------------


def test_records_from_binary_and_string_columns() -> None:
    batch = pa.RecordBatch.from_pydict(
        {
            "key": pa.array([b"\x00k", None, b""], pa.binary()),
            "value": pa.array(["v1", None, "ü"], pa.string()),
        }
    )
    columns = sink_columns(schema("key binary, value string"), "t")
    assert list(batch_records(batch, columns)) == [
        ("t", b"\x00k", "v1", -1, None, 0),
        ("t", None, None, -1, None, 0),
        ("t", b"", "ü", -1, None, 0),
    ]


def test_records_with_topic_headers_partition_and_timestamp() -> None:
    stamp = datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    batch = pa.RecordBatch.from_pydict(
        {
            "topic": pa.array(["a", "b"]),
            "value": pa.array([b"1", b"2"]),
            "headers": pa.array(
                [[{"key": "h", "value": b"\x01"}, {"key": "n", "value": None}], None],
                HEADERS_ARROW,
            ),
            "partition": pa.array([2, None], pa.int32()),
            "timestamp": pa.array([stamp, None], pa.timestamp("us", tz="UTC")),
        }
    )
    columns = sink_columns(
        schema(
            f"topic string, value binary, headers {HEADERS}, partition int, timestamp timestamp"
        ),
        None,
    )
    assert list(batch_records(batch, columns)) == [
        ("a", None, b"1", 2, [("h", b"\x01"), ("n", None)], 1704164645678),
        ("b", None, b"2", -1, None, 0),
    ]
    assert batch_topics(batch, columns) == ["a", "b"]


def test_double_timestamps_are_seconds() -> None:
    batch = pa.RecordBatch.from_pydict(
        {"value": pa.array(["v", "w"]), "timestamp": pa.array([1700000000.25, None])}
    )
    columns = sink_columns(schema("value string, timestamp double"), "t")
    assert [r[5] for r in batch_records(batch, columns)] == [1700000000250, 0]


def test_topic_option_overrides_the_column_per_row() -> None:
    batch = pa.RecordBatch.from_pydict({"topic": pa.array(["x", None]), "value": ["1", "2"]})
    columns = sink_columns(schema("topic string, value string"), "opt")
    assert [r[0] for r in batch_records(batch, columns)] == ["opt", "opt"]
    assert batch_topics(batch, columns) == ["opt"]


def test_null_topic_is_refused() -> None:
    batch = pa.RecordBatch.from_pydict({"topic": pa.array(["x", None]), "value": ["1", "2"]})
    columns = sink_columns(schema("topic string, value string"), None)
    with pytest.raises(ValueError, match="null topic present in the data"):
        list(batch_records(batch, columns))


def test_null_header_key_is_refused() -> None:
    batch = pa.RecordBatch.from_pydict(
        {"value": ["1"], "headers": pa.array([[{"key": None, "value": b"x"}]], HEADERS_ARROW)}
    )
    columns = sink_columns(schema(f"value string, headers {HEADERS}"), "t")
    with pytest.raises(ValueError, match="Null header keys"):
        list(batch_records(batch, columns))


def test_negative_partition_is_refused() -> None:
    batch = pa.RecordBatch.from_pydict(
        {"value": ["1", "2"], "partition": pa.array([None, -1], pa.int32())}
    )
    columns = sink_columns(schema("value string, partition int"), "t")
    with pytest.raises(ValueError, match="Invalid partition: -1"):
        list(batch_records(batch, columns))


def test_empty_batch() -> None:
    batch = pa.RecordBatch.from_pydict({"value": pa.array([], pa.string())})
    columns = sink_columns(schema("value string"), "t")
    assert list(batch_records(batch, columns)) == []
    assert batch_topics(batch, columns) == []


# --- producer settings and markers --------------------------------------------------------------


def test_producer_defaults_and_overrides() -> None:
    conf, max_block = producer_settings({"bootstrap.servers": "h:1", "linger.ms": "50"})
    assert conf == {
        "bootstrap.servers": "h:1",
        "acks": "all",
        "enable.idempotence": "true",
        "linger.ms": "50",
        "partitioner": "murmur2_random",
    }
    assert max_block == 60_000


def test_max_block_ms_is_taken_out_for_the_sink() -> None:
    conf, max_block = producer_settings(
        {"bootstrap.servers": "h:1", "max.block.ms": "1500", "partitioner": "consistent"}
    )
    assert "max.block.ms" not in conf and max_block == 1500
    assert conf["partitioner"] == "consistent"


def test_marker_round_trip() -> None:
    metadata = encode_marker("q-1", 41, 1000)
    assert decode_marker(metadata, 42) == 41
    assert decode_marker(None, 42) == 41  # a marker without metadata: offset - 1
    assert decode_marker("not json", 0) is None
    assert marker_group("q-1") == "franz-spark-sink-q-1"


def test_commit_message_is_a_writer_commit_message() -> None:
    from pyspark.sql.datasource import WriterCommitMessage

    message = FranzCommitMessage(rows=3, counts={"t": {0: 3}}, query_id="q", batch_id=1)
    assert isinstance(message, WriterCommitMessage)
    assert not message.skipped
