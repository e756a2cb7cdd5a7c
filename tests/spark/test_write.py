"""Batch writes to ``format("franz")``, read back with confluent-kafka (not the connector).

Each test writes through a real local SparkSession to a real broker and checks what landed:
keys, values and headers byte for byte, the partition Kafka's murmur2 partitioner picks for a
key, the ``partition``, ``timestamp`` and ``topic`` columns, the ``topic`` option overriding the
column; and that bad input fails the write with a clear message instead of dropping rows.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka.partitioner.default import murmur2
from pyspark.sql import SparkSession
from pyspark.sql.utils import AnalysisException

from tests.support.broker import BrokerProcess

pytestmark = pytest.mark.slow

HEADERS_DDL = "array<struct<key:string,value:binary>>"


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(timeout=30)


def read_topic(bootstrap: str, topic: str, timeout: float = 30.0) -> list[dict[str, Any]]:
    """Every record of ``topic`` (all partitions, from the start to the end offsets)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "test-reader", "enable.auto.commit": False}
    )
    try:
        metadata = consumer.list_topics(topic, timeout=10)
        partitions = sorted(metadata.topics[topic].partitions)
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in partitions
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions if ends[p] > 0])
        records: list[dict[str, Any]] = []
        deadline = time.monotonic() + timeout
        while sum(ends.values()) > len(records) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            records.append(
                {
                    "partition": msg.partition(),
                    "offset": msg.offset(),
                    "key": msg.key(),
                    "value": msg.value(),
                    "headers": msg.headers(),
                    "timestamp": msg.timestamp(),
                }
            )
        assert len(records) == sum(ends.values()), f"read {len(records)} of {ends}"
        return records
    finally:
        consumer.close()


def java_partition(key: bytes, partitions: int) -> int:
    """The Java producer's partition for a keyed record (``toPositive(murmur2(key)) % n``)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def writer(df: Any, bootstrap: str, **options: str) -> Any:
    out = df.write.format("franz").mode("append").option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        out = out.option(key, value)
    return out


def test_binary_keys_values_headers_and_partition_column(
    spark: SparkSession, broker: BrokerProcess
) -> None:
    create_topic(broker.bootstrap, "events", 3)
    rows = []
    for i in range(60):
        key = None if i % 10 == 0 else bytes([i, 0, 255]) + f"key-{i}".encode()
        headers = [("h1", bytes([i, 0, 1])), ("empty", b""), ("null", None)] if i % 3 == 0 else None
        partition = 1 if i % 7 == 0 else None
        rows.append((key, bytes([0, i, 0xFF]) * 5, headers, partition))
    df = spark.createDataFrame(
        rows, f"key binary, value binary, headers {HEADERS_DDL}, partition int"
    ).repartition(2)
    writer(df, broker.bootstrap, topic="events").save()

    records = read_topic(broker.bootstrap, "events")
    assert len(records) == 60
    by_value = {r["value"]: r for r in records}
    assert len(by_value) == 60
    for key, value, headers, partition in rows:
        record = by_value[value]
        assert record["key"] == key
        if headers is None:
            assert record["headers"] is None
        else:
            assert record["headers"] == headers
        if partition is not None:
            assert record["partition"] == partition
        elif key is not None:
            assert record["partition"] == java_partition(key, 3), key
    # keyed records spread as murmur2 spreads them, so the check above is not vacuous
    assert {r["partition"] for r in records if r["key"] is not None} == {0, 1, 2}


def test_string_columns_and_topic_column(spark: SparkSession, broker: BrokerProcess) -> None:
    create_topic(broker.bootstrap, "a", 2)
    create_topic(broker.bootstrap, "b", 2)
    rows = [("a" if i % 2 else "b", f"ключ-{i}", f"value-{i} ✓", "ignored") for i in range(40)]
    df = spark.createDataFrame(rows, "topic string, key string, value string, extra string")
    writer(df, broker.bootstrap).save()

    for topic in ("a", "b"):
        records = read_topic(broker.bootstrap, topic)
        expected = {(k.encode(), v.encode()) for t, k, v, _ in rows if t == topic}
        assert {(r["key"], r["value"]) for r in records} == expected
        for r in records:
            assert r["partition"] == java_partition(r["key"], 2)


def test_topic_option_overrides_the_topic_column(
    spark: SparkSession, broker: BrokerProcess
) -> None:
    create_topic(broker.bootstrap, "a", 1)
    create_topic(broker.bootstrap, "chosen", 1)
    df = spark.createDataFrame([("a", f"v{i}") for i in range(10)], "topic string, value string")
    writer(df, broker.bootstrap, topic="chosen").save()
    assert sorted(r["value"] for r in read_topic(broker.bootstrap, "chosen")) == sorted(
        f"v{i}".encode() for i in range(10)
    )
    assert read_topic(broker.bootstrap, "a") == []


def test_null_key_null_value_and_timestamp_column(
    spark: SparkSession, broker: BrokerProcess
) -> None:
    create_topic(broker.bootstrap, "ts", 1)
    stamp = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    df = spark.createDataFrame(
        [(None, "v1", stamp), ("k2", None, None)], "key string, value string, timestamp timestamp"
    ).coalesce(1)
    before = int(time.time() * 1000)
    writer(df, broker.bootstrap, topic="ts").save()
    records = sorted(read_topic(broker.bootstrap, "ts"), key=lambda r: r["offset"])
    assert [(r["key"], r["value"]) for r in records] == [(None, b"v1"), (b"k2", None)]
    assert records[0]["timestamp"][1] == 1714979289123  # truncated to ms, as Spark
    assert records[1]["timestamp"][1] >= before  # null: the producer's clock


def test_many_small_rows(spark: SparkSession, broker: BrokerProcess) -> None:
    """Volume: every row lands once (the rows/s figure is printed, never asserted)."""
    create_topic(broker.bootstrap, "bulk", 2)
    n = 200_000
    df = spark.range(n).selectExpr("cast(id as string) as key", "cast(id as string) as value")
    started = time.monotonic()
    writer(df, broker.bootstrap, topic="bulk").save()
    took = time.monotonic() - started
    print(f"batch write: {n} rows in {took:.1f} s ({n / took:,.0f} rows/s)")
    records = read_topic(broker.bootstrap, "bulk", timeout=120)
    assert len(records) == n
    assert len({r["value"] for r in records}) == n


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ddl", "options", "message"),
    [
        ("key string", {"topic": "t"}, "Required attribute 'value' not found"),
        ("value int", {"topic": "t"}, "value attribute unsupported type int"),
        ("key int, value string", {"topic": "t"}, "key attribute unsupported type int"),
        ("value string", {}, "topic option required when no 'topic' attribute is present"),
        ("topic int, value string", {}, "topic attribute unsupported type int"),
        ("value string, partition long", {"topic": "t"}, "partition attribute unsupported type"),
        ("value string, headers map<string,binary>", {"topic": "t"}, "headers attribute"),
        ("value string", {"topic": "t", "kafka.key.serializer": "x"}, "kafka.key.serializer"),
    ],
)
def test_bad_schema_fails_before_writing(
    spark: SparkSession, ddl: str, options: dict[str, str], message: str
) -> None:
    df = spark.createDataFrame([], ddl)
    with pytest.raises(AnalysisException, match=message):
        writer(df, "127.0.0.1:1", **options).save()


def test_overwrite_mode_is_refused(spark: SparkSession) -> None:
    df = spark.createDataFrame([("v",)], "value string")
    out = df.write.format("franz").mode("overwrite").option("kafka.bootstrap.servers", "x:1")
    with pytest.raises(AnalysisException, match="Save mode Overwrite not allowed for Kafka"):
        out.option("topic", "t").save()


def test_unknown_topic_fails_the_job(spark: SparkSession, tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "b", {"auto.create.topics.enable": "false"}).start()
    try:
        df = spark.createDataFrame([("v",)], "value string")
        with pytest.raises(Exception, match="Topic missing not present in metadata") as info:
            writer(df, broker.bootstrap, topic="missing").save()
        assert "UNKNOWN_TOPIC_OR_PART" in str(info.value) or "Unknown topic" in str(info.value)
    finally:
        assert broker.stop() == 0


def test_auto_created_topic_follows_the_broker(spark: SparkSession, broker: BrokerProcess) -> None:
    df = spark.createDataFrame([("v",)], "value string")
    writer(df, broker.bootstrap, topic="created-on-write").save()
    assert [r["value"] for r in read_topic(broker.bootstrap, "created-on-write")] == [b"v"]


def test_unreachable_bootstrap_fails_within_max_block_ms(spark: SparkSession) -> None:
    df = spark.createDataFrame([("v",)], "value string").coalesce(1)
    started = time.monotonic()
    with pytest.raises(Exception, match="not present in metadata after 2000 ms"):
        writer(df, "127.0.0.1:1", topic="t", **{"kafka.max.block.ms": "2000"}).save()
    assert time.monotonic() - started < 60


@pytest.mark.parametrize(
    ("rows", "ddl", "message"),
    [
        ([("t", "v"), (None, "v")], "topic string, value string", "null topic present"),
        ([("v", 5)], "value string, partition int", "Unknown partition"),
        ([("v", [(None, b"x")])], f"value string, headers {HEADERS_DDL}", "Null header keys"),
    ],
)
def test_bad_rows_fail_the_job(
    spark: SparkSession,
    broker: BrokerProcess,
    rows: list[tuple[Any, ...]],
    ddl: str,
    message: str,
) -> None:
    create_topic(broker.bootstrap, "t", 2)
    df = spark.createDataFrame(rows, ddl).coalesce(1)
    options = {} if ddl.startswith("topic") else {"topic": "t"}
    with pytest.raises(Exception, match=message):
        writer(df, broker.bootstrap, **options).save()


def test_a_delivery_error_fails_the_job(spark: SparkSession, broker: BrokerProcess) -> None:
    """The broker refuses the batch (over the topic's max.message.bytes): the task fails
    naming the topic, partition and error, rather than dropping the record."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = NewTopic("small", 1, 1, config={"max.message.bytes": "1000"})
    admin.create_topics([topic])["small"].result(timeout=30)
    df = spark.createDataFrame([("x" * 5000,)], "value string")
    with pytest.raises(Exception, match="Failed to deliver a record to topic small partition 0"):
        writer(df, broker.bootstrap, topic="small").save()
    assert read_topic(broker.bootstrap, "small") == []
