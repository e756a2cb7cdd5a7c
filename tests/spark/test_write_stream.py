"""Streaming writes to ``format("franz")``: records land once, and a replayed batch is skipped.

The source is Spark's file source over JSON files (replayable: a micro-batch re-reads the same
files), one file per micro-batch. The replay test recreates the crash this sink guards
against: the sink's ``commit(messages, N)`` ran, Spark's ``commits/N`` was not written. It
deletes the checkpoint's last ``commits/N`` file and runs the query again: Spark replays batch
N (checked from its progress) and the topic still holds each record once. Then the control:
with the sink's marker group deleted, the same replay writes batch N a second time.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.utils import StreamingQueryException

from franz.spark.write_rows import marker_group
from tests.spark.test_write import create_topic, java_partition, read_topic
from tests.support.broker import BrokerProcess

pytestmark = pytest.mark.slow

SCHEMA = "id long, user string, page string"


def write_events(folder: Path, name: str, first: int, count: int) -> None:
    """One JSON-lines file of ``count`` events with ids from ``first``."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"id": i, "user": f"user-{i % 7}", "page": f"/page/{i % 5}"})
        for i in range(first, first + count)
    ]
    path = folder / name
    path.write_text("\n".join(lines) + "\n")
    # The file source takes files in modification-time order: make that the write order
    # (files written in the same millisecond would otherwise come in any order).
    stamp = 1_700_000_000 + first
    os.utime(path, (stamp, stamp))


def events(spark: SparkSession, folder: Path) -> DataFrame:
    return (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", "1")
        .json(str(folder))
        .selectExpr(
            "user as key",
            "to_json(struct(id, user, page)) as value",
            "array(named_struct('key', 'source', 'value', cast('files' as binary))) as headers",
        )
    )


def run_available_now(
    df: DataFrame,
    bootstrap: str,
    checkpoint: Path,
    topic: str,
    mode: str = "append",
    extra: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Run the query to the end of its input; its progress reports, one per batch."""
    writer = (
        df.writeStream.format("franz")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("checkpointLocation", str(checkpoint))
    )
    for key, value in (extra or {}).items():
        writer = writer.option(key, value)
    query = writer.outputMode(mode).trigger(availableNow=True).start()
    try:
        assert query.awaitTermination(180), "the query did not finish in 180 s"
    finally:
        query.stop()
    return [dict(p) for p in query.recentProgress]


def forget_commit(checkpoint: Path, batch_id: int) -> None:
    """Delete ``commits/<batch_id>`` (and its checksum file), as if the driver died before
    Spark wrote it."""
    (checkpoint / "commits" / str(batch_id)).unlink()
    (checkpoint / "commits" / f".{batch_id}.crc").unlink(missing_ok=True)


def query_id(checkpoint: Path) -> str:
    return str(json.loads((checkpoint / "metadata").read_text())["id"])


def ids(records: list[dict[str, Any]]) -> Counter[int]:
    return Counter(json.loads(r["value"])["id"] for r in records)


def test_streaming_write_lands_once_with_keys_and_headers(
    spark: SparkSession, broker: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "out", 3)
    for n in range(3):
        write_events(tmp_path / "in", f"part-{n}.json", n * 100, 100)
    checkpoint = tmp_path / "checkpoint"
    progress = run_available_now(
        events(spark, tmp_path / "in"), broker.bootstrap, checkpoint, "out"
    )
    assert [p["numInputRows"] for p in progress if p["numInputRows"]] == [100, 100, 100]

    records = read_topic(broker.bootstrap, "out")
    assert ids(records) == Counter(range(300))
    for r in records:
        assert r["key"] == f"user-{json.loads(r['value'])['id'] % 7}".encode()
        assert r["partition"] == java_partition(r["key"], 3)
        assert r["headers"] == [("source", b"files")]

    # new input, same checkpoint: only the new file is written
    write_events(tmp_path / "in", "part-3.json", 300, 50)
    run_available_now(events(spark, tmp_path / "in"), broker.bootstrap, checkpoint, "out")
    assert ids(read_topic(broker.bootstrap, "out")) == Counter(range(350))


def test_replayed_batch_is_not_duplicated(
    spark: SparkSession, broker: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "out", 2)
    for n in range(3):
        write_events(tmp_path / "in", f"part-{n}.json", n * 100, 100)
    checkpoint = tmp_path / "checkpoint"
    df = events(spark, tmp_path / "in")
    # Producer-only settings (max.block.ms is the Java producer's) must not break the markers.
    extra = {"kafka.max.block.ms": "20000", "kafka.client.id": "franz-sink-test"}
    first = run_available_now(df, broker.bootstrap, checkpoint, "out", extra=extra)
    last_batch = max(p["batchId"] for p in first)
    assert ids(read_topic(broker.bootstrap, "out")) == Counter(range(300))

    # The crash: the sink committed batch N, Spark's commit log did not record it.
    forget_commit(checkpoint, last_batch)
    replay = run_available_now(df, broker.bootstrap, checkpoint, "out", extra=extra)
    replayed = [p for p in replay if p["batchId"] == last_batch]
    assert replayed and replayed[0]["numInputRows"] == 100, replay  # Spark did replay it
    assert (checkpoint / "commits" / str(last_batch)).exists()
    assert ids(read_topic(broker.bootstrap, "out")) == Counter(range(300))

    # Control: without the marker (its group deleted) the same replay duplicates the batch.
    group = marker_group(query_id(checkpoint))
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    marker = listed[group].result(timeout=30).topic_partitions
    assert [(tp.topic, tp.partition, tp.offset) for tp in marker] == [("out", 0, last_batch + 1)]
    assert json.loads(marker[0].metadata)["batchId"] == last_batch
    admin.delete_consumer_groups([group])[group].result(timeout=30)
    forget_commit(checkpoint, last_batch)
    run_available_now(df, broker.bootstrap, checkpoint, "out")
    counts = ids(read_topic(broker.bootstrap, "out"))
    assert sum(counts.values()) == 400
    assert {i for i, c in counts.items() if c == 2} == set(range(200, 300))


def test_complete_mode_appends_each_result(
    spark: SparkSession, broker: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "counts", 1)
    write_events(tmp_path / "in", "part-0.json", 0, 50)
    write_events(tmp_path / "in", "part-1.json", 50, 50)
    counts = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", "1")
        .json(str(tmp_path / "in"))
        .groupBy("page")
        .count()
        .selectExpr("page as key", "cast(`count` as string) as value")
    )
    run_available_now(counts, broker.bootstrap, tmp_path / "cp", "counts", mode="complete")
    records = sorted(read_topic(broker.bootstrap, "counts"), key=lambda r: r["offset"])
    # two batches, each the full table of 5 pages (Kafka can't truncate: complete appends)
    assert len(records) == 10
    latest = {r["key"]: int(r["value"]) for r in records}
    assert latest == {f"/page/{p}".encode(): 20 for p in range(5)}


def test_unknown_topic_fails_the_query(spark: SparkSession, tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "b", {"auto.create.topics.enable": "false"}).start()
    try:
        write_events(tmp_path / "in", "part-0.json", 0, 10)
        with pytest.raises(StreamingQueryException, match="Topic nowhere not present in metadata"):
            run_available_now(
                events(spark, tmp_path / "in"), broker.bootstrap, tmp_path / "cp", "nowhere"
            )
    finally:
        assert broker.stop() == 0


def test_topic_to_topic_through_the_franz_source_is_exactly_once_on_replay(
    spark: SparkSession, broker: BrokerProcess, tmp_path: Path
) -> None:
    """``format("franz")`` in and out: a replayed batch re-reads the same offsets and the sink
    skips it, so the output topic holds each input record once, key and headers intact."""
    from confluent_kafka import Producer

    create_topic(broker.bootstrap, "in", 2)
    create_topic(broker.bootstrap, "out", 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random"})
    for i in range(300):
        producer.produce("in", f"{i}".encode(), f"k{i % 11}".encode(), headers=[("n", b"%d" % i)])
    assert producer.flush(30) == 0
    df = (
        spark.readStream.format("franz")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", "in")
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "100")
        .option("includeHeaders", "true")
        .load()
        .select("key", "value", "headers")
    )
    checkpoint = tmp_path / "checkpoint"
    progress = run_available_now(df, broker.bootstrap, checkpoint, "out")
    last_batch = max(p["batchId"] for p in progress)
    assert last_batch >= 2  # several micro-batches

    forget_commit(checkpoint, last_batch)
    replay = run_available_now(df, broker.bootstrap, checkpoint, "out")
    assert any(p["batchId"] == last_batch and p["numInputRows"] > 0 for p in replay), replay

    records = read_topic(broker.bootstrap, "out")
    assert Counter(int(r["value"]) for r in records) == Counter(range(300))
    for r in records:
        i = int(r["value"])
        assert r["key"] == f"k{i % 11}".encode()
        assert r["headers"] == [("n", b"%d" % i)]
        assert r["partition"] == java_partition(r["key"], 2)


def test_a_bad_schema_fails_the_query_before_writing(
    spark: SparkSession, broker: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(broker.bootstrap, "out", 1)
    write_events(tmp_path / "in", "part-0.json", 0, 10)
    no_value = spark.readStream.schema(SCHEMA).json(str(tmp_path / "in")).selectExpr("user as key")
    with pytest.raises(Exception, match="Required attribute 'value' not found"):
        run_available_now(no_value, broker.bootstrap, tmp_path / "cp", "out")
    assert read_topic(broker.bootstrap, "out") == []
