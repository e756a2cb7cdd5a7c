"""Spark's own Kafka connector against Franz, and Franz's connector against Apache Kafka.

One SparkSession for the module, with Spark's ``spark-sql-kafka-0-10`` on its class path
(``tests/reference/spark-kafka-pom.xml``: 4.2.0, the newest on Maven Central, on PySpark
4.3.0), so ``format("kafka")`` and ``format("franz")`` both work in it. A session's jars are
fixed when its JVM starts: this module's session must be the first of the test process
(pytest runs ``tests/reference`` before ``tests/spark``, whose session has no such jars).

- The reference pipeline (``pipelines.demo.run_rounds``, 2,000 events in two rounds) three
  times: ``format("kafka")`` on a Franz broker, ``format("franz")`` on the session's Kafka
  broker, and today's run, ``format("franz")`` on Franz. Each matches ``pipelines.oracle``
  (``pipelines.demo.summarize``), the three summaries are the same lines, and so are the
  outputs themselves: the Parquet windows, the ``page-stats`` and dead-letter records (read
  back with confluent-kafka, headers included; ``source.timestamp`` is the broker's append
  time, so it differs) and the history's rows.
- A batch round trip with Spark's connector on both brokers: a write with keys, null keys,
  headers (a null value, a repeated key) and a ``partition`` column, then a read with
  ``includeHeaders`` and ``startingOffsets`` / ``endingOffsets`` as JSON (an offset, -2
  earliest, -1 latest); Franz gives the rows Kafka gives.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pyspark import SparkContext
from pyspark.sql import SparkSession

from pipelines.common import (
    DLQ_TOPIC,
    STATS_TOPIC,
    ensure_topics,
    read_topic,
    spark_kafka_jars,
)
from pipelines.demo import TOPICS, demo_spec, run_rounds, summarize
from pipelines.events import Event, generate_events
from tests.spark.conftest import SPARK_CONF, spark_environment
from tests.support.broker import BrokerProcess
from tests.support.kafka_ref import KafkaBroker

pytestmark = pytest.mark.slow

EVENTS = 2_000
SEED = 42


@pytest.fixture(scope="module")
def spark(kafka_libs: Path) -> Iterator[SparkSession]:
    """A local[2] session with Spark's Kafka connector; stopped at the end of the module."""
    if SparkContext._active_spark_context is not None:
        pytest.fail(
            "a SparkSession without Spark's Kafka connector is running in this process: run "
            "tests/reference/test_spark_kafka.py before tests/spark (or on its own)"
        )
    env = spark_environment()
    os.environ.update({k: v for k, v in env.items() if k.startswith(("PYSPARK", "SPARK"))})
    builder = SparkSession.builder.master("local[2]").appName("franz-spark-kafka")
    for key, value in {**SPARK_CONF, "spark.jars": ",".join(spark_kafka_jars())}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture(scope="module")
def franz(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("franz") / "broker").start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, proc.output()


# -- the reference pipeline -------------------------------------------------------------------


@dataclass
class PipelineOutputs:
    """A run's summary (the lines ``summarize`` printed, paths left out) and its outputs."""

    code: int
    summary: list[str]
    windows: list[tuple[Any, ...]]
    stats: list[tuple[bytes | None, bytes | None]]
    dead_letters: list[tuple[Any, ...]]
    history: list[tuple[Any, ...]]


def run_pipeline(
    spark: SparkSession, bootstrap: str, connector: str, work: Path, events: list[Event]
) -> PipelineOutputs:
    """The demo's pipeline on ``bootstrap`` (its topics must not exist yet) with ``connector``."""
    ensure_topics(bootstrap, TOPICS)
    log: list[str] = []
    outcome = run_rounds(spark, bootstrap, events, 2, work, connector=connector, report=log.append)
    assert outcome is not None, "\n".join(log)
    run, _ = outcome
    lines: list[str] = []
    code = summarize(spark, bootstrap, events, 2, run.watermark_ms, work, report=lines.append)
    start = next(i for i, line in enumerate(lines) if line.endswith("] summary"))
    summary = [line for line in lines[start + 1 :] if not line.startswith("Parquet: ")]

    windows = sorted(
        tuple(row) for row in spark.read.parquet(str(work / "stream" / "page_stats")).collect()
    )
    stats = sorted(((m.key(), m.value()) for m in read_topic(bootstrap, STATS_TOPIC)), key=repr)
    letters = []
    for m in read_topic(bootstrap, DLQ_TOPIC):
        headers = [(k, v) for k, v in m.headers() or () if k != "source.timestamp"]
        letters.append((m.key(), m.value(), tuple(headers)))
    history = sorted(
        tuple(row)
        for row in spark.read.parquet(str(work / "history"))
        .select("partition", "offset", "key", "value", "event_id", "event_time", "error")
        .collect()
    )
    return PipelineOutputs(code, summary, windows, stats, sorted(letters, key=repr), history)


@pytest.fixture(scope="module")
def events() -> list[Event]:
    return list(generate_events(demo_spec(EVENTS, SEED)))


@pytest.fixture(scope="module")
def todays_run(
    spark: SparkSession, events: list[Event], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PipelineOutputs]:
    """``format("franz")`` on Franz, as ``python -m pipelines.demo`` runs today."""
    base = tmp_path_factory.mktemp("franz-on-franz")
    with BrokerProcess(base / "broker") as broker:
        yield run_pipeline(spark, broker.bootstrap, "franz", base, events)


def assert_same_as_todays(run: PipelineOutputs, todays: PipelineOutputs) -> None:
    assert todays.code == 0, "\n".join(todays.summary)
    assert run.code == 0, "\n".join(run.summary)
    assert "independent check: every figure matches pipelines.oracle" in run.summary
    assert run.summary == todays.summary
    assert len(run.windows) > 50 and run.windows == todays.windows
    assert len(run.stats) == len(run.windows) and run.stats == todays.stats
    assert run.dead_letters and run.dead_letters == todays.dead_letters
    assert len(run.history) == EVENTS and run.history == todays.history


def test_pipeline_with_sparks_kafka_connector_on_franz(
    spark: SparkSession,
    franz: BrokerProcess,
    events: list[Event],
    todays_run: PipelineOutputs,
    tmp_path: Path,
) -> None:
    """``format("kafka")`` against Franz: the oracle's figures and today's outputs."""
    run = run_pipeline(spark, franz.bootstrap, "kafka", tmp_path, events)
    assert_same_as_todays(run, todays_run)


def test_pipeline_with_franz_connector_on_kafka(
    spark: SparkSession,
    kafka: KafkaBroker,
    events: list[Event],
    todays_run: PipelineOutputs,
    tmp_path: Path,
) -> None:
    """``format("franz")`` against Apache Kafka: the oracle's figures and today's outputs."""
    run = run_pipeline(spark, kafka.bootstrap, "franz", tmp_path, events)
    assert_same_as_todays(run, todays_run)


# -- a batch round trip with Spark's connector ------------------------------------------------

ROUND_TRIP_TOPIC = "spark-kafka-round-trip"
ROUND_TRIP_SCHEMA = (
    "key binary, value binary, partition int, headers array<struct<key:string,value:binary>>"
)


def round_trip_rows() -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    for i in range(12):
        key = None if i % 5 == 4 else f"k{i}".encode()
        headers = [("h", f"v{i}".encode()), ("nothing", None), ("h", b"again")][: i % 4]
        rows.append((key, f"value {i}".encode(), i % 3, headers))
    return rows


def round_trip(spark: SparkSession, bootstrap: str) -> list[tuple[Any, ...]]:
    """Write :func:`round_trip_rows` with ``format("kafka")``, read back a JSON offset range."""
    ensure_topics(bootstrap, {ROUND_TRIP_TOPIC: 3})
    # One task, so each partition gets its rows in the order written.
    frame = spark.createDataFrame(round_trip_rows(), ROUND_TRIP_SCHEMA).coalesce(1)
    (
        frame.write.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", ROUND_TRIP_TOPIC)
        .save()
    )
    starting = {ROUND_TRIP_TOPIC: {"0": 1, "1": -2, "2": 2}}
    ending = {ROUND_TRIP_TOPIC: {"0": 3, "1": -1, "2": -1}}
    read = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", ROUND_TRIP_TOPIC)
        .option("includeHeaders", "true")
        .option("startingOffsets", json.dumps(starting))
        .option("endingOffsets", json.dumps(ending))
        .load()
    )
    rows = []
    for r in read.collect():
        headers = tuple((h["key"], h["value"]) for h in r["headers"] or ())
        source = (r["topic"], r["partition"], r["offset"])
        rows.append((*source, r["key"], r["value"], r["timestampType"], headers))
    return sorted(rows)


def test_batch_round_trip_with_sparks_kafka_connector(
    spark: SparkSession, franz: BrokerProcess, kafka: KafkaBroker
) -> None:
    on_franz = round_trip(spark, franz.bootstrap)
    on_kafka = round_trip(spark, kafka.bootstrap)
    assert on_franz == on_kafka
    # Each partition holds 4 rows in write order: partition 0 offsets 1-2, partition 1 all,
    # partition 2 offsets 2-3.
    written = round_trip_rows()
    expected = []
    for partition, first, last in ((0, 1, 3), (1, 0, 4), (2, 2, 4)):
        mine = [row for row in written if row[2] == partition]
        for offset in range(first, last):
            key, value, _, headers = mine[offset]
            expected.append((ROUND_TRIP_TOPIC, partition, offset, key, value, 0, tuple(headers)))
    assert on_franz == sorted(expected)
