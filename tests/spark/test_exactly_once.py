"""Issue 6's exactly-once acceptance: a Franz topic streamed into a Parquet sink.

Spark's file sink plus the source's checkpointed offsets give exactly-once output, provided
the source replays a planned batch with exactly the same range. These tests hold the
connector to that: 100,000 records, then 50,000 more, then a driver SIGKILLed in the middle
of a micro-batch and restarted from its checkpoint; the sink must hold every (partition,
offset) exactly once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyspark.sql import SparkSession

from tests.spark.conftest import spark_environment
from tests.support.broker import BrokerProcess

pytestmark = pytest.mark.slow

PARTITIONS = 3


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=30)
    futures[topic].result(timeout=30)


def produce(bootstrap: str, topic: str, first: int, count: int) -> None:
    """``count`` records ``k<i>``/``v<i>``, spread over the partitions by key."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all"})
    for i in range(first, first + count):
        while True:
            try:
                producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode())
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0, "records left unsent"


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "franz-test-watermarks"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(PARTITIONS)
        }
    finally:
        consumer.close()


def run_available_now(
    spark: SparkSession, bootstrap: str, topic: str, checkpoint: Path, output: Path
) -> list[int]:
    """One availableNow run into the Parquet sink; the rows of each micro-batch it ran."""
    query = (
        spark.readStream.format("franz")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", "40000")
        .load()
        .select("partition", "offset", "key", "value")
        .writeStream.format("parquet")
        .option("path", str(output))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(240), "the availableNow query did not finish in 240 s"
    assert query.exception() is None, query.exception()
    return [int(p["numInputRows"]) for p in query.recentProgress]


def assert_exactly_once(spark: SparkSession, output: Path, ends: dict[int, int]) -> None:
    """The sink holds offsets [0, end) of every partition, each exactly once, intact."""
    df = spark.read.parquet(str(output))
    rows = df.select("partition", "offset", "key", "value").collect()
    expected = sum(ends.values())
    assert len(rows) == expected
    seen: dict[int, set[int]] = {p: set() for p in ends}
    for row in rows:
        seen[row["partition"]].add(row["offset"])
        assert row["key"][1:] == row["value"][1:], row  # k<i> travels with v<i>
    for partition, end in ends.items():
        assert seen[partition] == set(range(end)), f"partition {partition}: gaps or extras"


def test_available_now_twice_is_exactly_once(
    spark: SparkSession, broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = "eo-rerun"
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, 0, 100_000)
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "out"

    first = run_available_now(spark, broker.bootstrap, topic, checkpoint, output)
    assert sum(first) == 100_000
    assert max(first) <= 40_000 and len(first) >= 3, first
    assert_exactly_once(spark, output, end_offsets(broker.bootstrap, topic))

    produce(broker.bootstrap, topic, 100_000, 50_000)
    second = run_available_now(spark, broker.bootstrap, topic, checkpoint, output)
    assert sum(second) == 50_000, second
    ends = end_offsets(broker.bootstrap, topic)
    assert sum(ends.values()) == 150_000
    assert_exactly_once(spark, output, ends)

    # A third run with nothing new runs no batch and writes nothing.
    third = run_available_now(spark, broker.bootstrap, topic, checkpoint, output)
    assert sum(third) == 0
    assert_exactly_once(spark, output, ends)


def _start_driver(
    bootstrap: str, topic: str, checkpoint: Path, output: Path, log: Path
) -> subprocess.Popen[bytes]:
    args = [
        sys.executable,
        "-m",
        "tests.spark.stream_driver",
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--checkpoint",
        str(checkpoint),
        "--output",
        str(output),
        "--max-offsets",
        "30000",
    ]
    with log.open("ab") as sink:
        return subprocess.Popen(
            args,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=spark_environment(),
            cwd=Path(__file__).resolve().parents[2],
            start_new_session=True,
        )


def _reap_group(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Wait for the driver's JVM and Python workers (its process group) to exit on their own
    after the driver died; SIGKILL what is left of the group we started after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def test_driver_killed_mid_batch_restarts_exactly_once(
    spark: SparkSession, broker: BrokerProcess, tmp_path: Path
) -> None:
    topic = "eo-crash"
    create_topic(broker.bootstrap, topic)
    produce(broker.bootstrap, topic, 0, 150_000)
    checkpoint, output, log = tmp_path / "checkpoint", tmp_path / "out", tmp_path / "driver.log"
    target = 2  # kill while batch 2 runs: planned (offsets/2) but not committed (commits/2)

    driver = _start_driver(broker.bootstrap, topic, checkpoint, output, log)
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and driver.poll() is None:
            planned = (checkpoint / "offsets" / str(target)).exists()
            if planned and not (checkpoint / "commits" / str(target)).exists():
                driver.send_signal(signal.SIGKILL)
                break
            time.sleep(0.005)
        else:
            pytest.fail(f"batch {target} never seen in flight:\n{log.read_text()[-3000:]}")
        assert driver.wait(30) == -signal.SIGKILL
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait(30)
        _reap_group(driver)
    assert not (checkpoint / "commits" / str(target)).exists(), "killed after the commit"
    planned_range = (checkpoint / "offsets" / str(target)).read_text()

    restarted = _start_driver(broker.bootstrap, topic, checkpoint, output, log)
    try:
        assert restarted.wait(240) == 0, log.read_text()[-3000:]
    finally:
        if restarted.poll() is None:
            restarted.kill()
            restarted.wait(30)
        _reap_group(restarted)

    # The batch was replayed with the range planned before the crash, then the rest ran.
    assert (checkpoint / "offsets" / str(target)).read_text() == planned_range
    assert (checkpoint / "commits" / str(target)).exists()
    ends = end_offsets(broker.bootstrap, topic)
    assert sum(ends.values()) == 150_000
    assert_exactly_once(spark, output, ends)
