"""Streaming reads of the ``franz`` source: availableNow queries into a Parquet sink with a
checkpoint, against a real broker (one per module; each test uses its own topics).

Every query run costs ~1-3 s, so the data is small and each test restarts queries from the
same checkpoint to check what a restart reads.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient, NewPartitions
from pyspark.sql import SparkSession

from franz.spark.offsets import offsets_from_json, offsets_to_json
from tests.support.broker import BrokerProcess
from tests.support.clients import OutRecord, create_topic, produce_with

pytestmark = pytest.mark.slow

#: Record timestamps: an hour ago, whole seconds (older ones would fall to time retention).
T0 = (time.time_ns() // 1_000_000_000 - 3600) * 1000


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("broker") / "data").start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


def produce(broker: BrokerProcess, topic: str, records: list[OutRecord]) -> None:
    produce_with("confluent-kafka", broker.bootstrap, topic, records, config={"linger.ms": 5})


def run_available_now(
    spark: SparkSession, broker: BrokerProcess, base: Path, **options: str
) -> list[dict[str, Any]]:
    """One availableNow run from ``base``'s checkpoint into ``base/out``; its progress list."""
    reader = spark.readStream.format("franz").option("kafka.bootstrap.servers", broker.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (
        reader.load()
        .writeStream.format("parquet")
        .option("path", str(base / "out"))
        .option("checkpointLocation", str(base / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(120), "the availableNow query did not finish in 120 s"
        return [json.loads(p.json) if hasattr(p, "json") else dict(p) for p in query.recentProgress]
    finally:
        query.stop()


def sink_rows(spark: SparkSession, base: Path) -> list[tuple[str, int, int]]:
    rows = spark.read.parquet(str(base / "out")).select("topic", "partition", "offset").collect()
    return sorted((r["topic"], r["partition"], r["offset"]) for r in rows)


def last_offsets(base: Path) -> tuple[str, dict[str, Any]]:
    """The newest ``checkpoint/offsets/<n>`` file's source offsets: raw line and parsed."""
    files = sorted((base / "checkpoint" / "offsets").glob("[0-9]*"), key=lambda p: int(p.name))
    line = files[-1].read_text().strip().splitlines()[-1]
    return line, json.loads(line)


def test_available_now_honours_max_offsets_per_trigger(
    spark: SparkSession, kafka: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(kafka.bootstrap, "limited", partitions=3)
    sizes = {0: 500, 1: 300, 2: 200}
    produce(
        kafka,
        "limited",
        [OutRecord(None, b"%d" % i, partition=p) for p, n in sizes.items() for i in range(n)],
    )
    progress = run_available_now(
        spark,
        kafka,
        tmp_path,
        subscribe="limited",
        startingOffsets="earliest",
        maxOffsetsPerTrigger="300",
    )
    counts = [p["numInputRows"] for p in progress]
    assert all(c <= 300 for c in counts), counts
    assert sum(counts) == 1000 and len([c for c in counts if c]) >= 4, counts
    rows = sink_rows(spark, tmp_path)
    assert len(rows) == 1000 and len(set(rows)) == 1000
    assert Counter(p for _, p, _ in rows) == Counter(sizes)

    # The checkpoint holds canonical offsets: sorted topics, numerically sorted partitions.
    line, offsets = last_offsets(tmp_path)
    assert offsets == {"limited": {"0": 500, "1": 300, "2": 200}}
    assert line == json.dumps(offsets_to_json(offsets_from_json(offsets)))
    # reportLatestOffset shows up as the source's latestOffset in the progress.
    latest = progress[-1]["sources"][0]["latestOffset"]
    latest = json.loads(latest) if isinstance(latest, str) else latest
    assert latest == {"limited": {"0": 500, "1": 300, "2": 200}}

    # A restart with nothing new runs no batch and reads nothing.
    again = run_available_now(
        spark, kafka, tmp_path, subscribe="limited", maxOffsetsPerTrigger="300"
    )
    assert sum(p["numInputRows"] for p in again) == 0
    assert len(sink_rows(spark, tmp_path)) == 1000


def test_new_partitions_and_pattern_topics_are_picked_up(
    spark: SparkSession, kafka: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(kafka.bootstrap, "grow-a", partitions=1)
    produce(kafka, "grow-a", [OutRecord(None, b"a%d" % i, partition=0) for i in range(50)])
    options = {"subscribePattern": "grow-.*", "startingOffsets": "earliest"}
    first = run_available_now(spark, kafka, tmp_path, **options, maxOffsetsPerTrigger="20")
    assert sum(p["numInputRows"] for p in first) == 50

    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.create_partitions([NewPartitions("grow-a", 3)]).values():
        future.result(30)
    create_topic(kafka.bootstrap, "grow-b", partitions=1)
    produce(kafka, "grow-a", [OutRecord(None, b"n", partition=p) for p in (0, 1, 2, 1)])
    produce(kafka, "grow-b", [OutRecord(None, b"b%d" % i, partition=0) for i in range(30)])
    second = run_available_now(spark, kafka, tmp_path, **options, maxOffsetsPerTrigger="20")
    counts = [p["numInputRows"] for p in second]
    assert sum(counts) == 34 and all(c <= 20 for c in counts), counts

    rows = sink_rows(spark, tmp_path)
    assert len(rows) == len(set(rows)) == 84
    assert Counter((t, p) for t, p, _ in rows) == {
        ("grow-a", 0): 51,
        ("grow-a", 1): 2,
        ("grow-a", 2): 1,
        ("grow-b", 0): 30,
    }
    _, offsets = last_offsets(tmp_path)
    assert offsets == {"grow-a": {"0": 51, "1": 2, "2": 1}, "grow-b": {"0": 30}}


def test_starting_offsets_json_by_timestamp_and_latest(
    spark: SparkSession, kafka: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(kafka.bootstrap, "starts", partitions=2)
    produce(
        kafka,
        "starts",
        [
            OutRecord(None, b"%d" % i, partition=i % 2, timestamp_ms=T0 + 1000 * i)
            for i in range(100)
        ],
    )
    by_json = run_available_now(
        spark,
        kafka,
        tmp_path / "json",
        subscribe="starts",
        startingOffsets=json.dumps({"starts": {"0": 10, "1": -1}}),
    )
    assert sum(p["numInputRows"] for p in by_json) == 40
    assert sink_rows(spark, tmp_path / "json") == [("starts", 0, o) for o in range(10, 50)]

    # Partition 0 holds even i at offset i // 2, partition 1 odd i; ts = T0 + 1000 i.
    by_ts = run_available_now(
        spark,
        kafka,
        tmp_path / "ts",
        subscribe="starts",
        startingOffsetsByTimestamp=json.dumps({"starts": {"0": T0 + 90_000, "1": T0 + 1}}),
    )
    assert sum(p["numInputRows"] for p in by_ts) == 5 + 50
    assert sink_rows(spark, tmp_path / "ts") == [("starts", 0, o) for o in range(45, 50)] + [
        ("starts", 1, o) for o in range(50)
    ]

    # The streaming default is latest, resolved once: a restart reads what came after.
    assert (
        sum(
            p["numInputRows"]
            for p in run_available_now(spark, kafka, tmp_path / "latest", subscribe="starts")
        )
        == 0
    )
    produce(kafka, "starts", [OutRecord(None, b"late", partition=1)] * 3)
    later = run_available_now(spark, kafka, tmp_path / "latest", subscribe="starts")
    assert sum(p["numInputRows"] for p in later) == 3
    assert sink_rows(spark, tmp_path / "latest") == [("starts", 1, o) for o in (50, 51, 52)]


def test_fail_on_data_loss_in_streaming(
    spark: SparkSession, kafka: BrokerProcess, tmp_path: Path
) -> None:
    create_topic(kafka.bootstrap, "lossy")
    produce(kafka, "lossy", [OutRecord(None, b"%d" % i, partition=0) for i in range(100)])
    options = {"subscribe": "lossy", "startingOffsets": "earliest"}
    assert (
        sum(p["numInputRows"] for p in run_available_now(spark, kafka, tmp_path, **options)) == 100
    )

    produce(kafka, "lossy", [OutRecord(None, b"%d" % i, partition=0) for i in range(100, 200)])
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    deleted = admin.delete_records([confluent_kafka.TopicPartition("lossy", 0, 150)])
    for future in deleted.values():
        future.result(30)

    with pytest.raises(Exception, match="failOnDataLoss"):
        run_available_now(spark, kafka, tmp_path, **options)
    assert len(sink_rows(spark, tmp_path)) == 100

    lenient = run_available_now(spark, kafka, tmp_path, **options, failOnDataLoss="false")
    assert sum(p["numInputRows"] for p in lenient) == 50
    rows = sink_rows(spark, tmp_path)
    assert rows == [("lossy", 0, o) for o in [*range(100), *range(150, 200)]]
