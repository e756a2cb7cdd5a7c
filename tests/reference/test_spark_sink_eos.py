"""The ``franz`` sink with ``exactlyOnce``: one transaction per write task, on Kafka and Franz.

Issue 19's Spark acceptance, each test on Apache Kafka 3.9 (which proves the test) and on
Franz (``["kafka", "franz"]``, as ``test_transactions_eos.py``). A topic streamed into
another through ``format("franz")`` both ways, output read with
``isolation.level=read_committed``, must hold each input record exactly once (keyed by the
input's ``partition:offset``):

- a micro-batch replayed after its sink commit (``commits/N`` deleted): every task finds its
  marker and writes nothing, not even aborted records;
- a write task that fails on its first attempt after some of its records reached the broker
  (a UDF raises once the output partition's high watermark moved): the retry fences the
  attempt, whose records were aborted (its ``write()`` found its input cut short: Spark just
  stops the stream when a task fails upstream), and read_committed sees each input once.
  (Had the attempt committed the rows it got, the retry would find them in its task marker,
  check they are its first rows and write the rest: ``franz.spark.txn_writer``.)
- the driver SIGKILLed while a micro-batch's transactions are open (records of the batch in
  the output's log, ``commits/N`` not written) and restarted from its checkpoint
  (``tests.spark.stream_driver --sink-topic``). Checking ``commits/N`` and sending SIGKILL is
  not atomic: when the kill lands just after Spark wrote ``commits/N``, the driver is
  restarted from its checkpoint and killed again in a later batch, until one kill lands
  mid-batch (bounded by a deadline).

One SparkSession for the module, ``local[2,4]`` so that a failed task is tried again (plain
``local[2]`` has no task retries), stopped at the end of the module: it must not be the
first of the process when ``test_spark_kafka.py`` runs (its session needs Spark's Kafka jars
at the JVM's start), hence this module's name, collected after it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from pyspark import SparkContext
from pyspark.sql import DataFrame, SparkSession

from franz.spark.write_rows import marker_group, task_marker_group
from tests.spark.conftest import build_session, spark_environment
from tests.spark.test_exactly_once import _reap_group
from tests.support.clients import create_topic
from tests.support.kafka_ref import HasBootstrap

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROOT = Path(__file__).resolve().parents[2]
BROKERS = ["kafka", "franz"]


@pytest.fixture(scope="module")
def spark(kafka_libs: Path) -> Iterator[SparkSession]:
    """A ``local[2,4]`` session (failed tasks are retried), stopped after the module."""
    if SparkContext._active_spark_context is not None:
        pytest.fail("a SparkSession is already running: this module needs one with task retries")
    session = build_session("franz-sink-eos", master="local[2,4]")
    try:
        yield session
    finally:
        session.stop()


def produce_input(
    bootstrap: str, topic: str, count: int, partitions: int, pad: int = 0, start: int = 0
) -> None:
    """Values ``v<i>`` (and ``pad`` dots), record ``i`` to partition ``i % partitions``, for
    ``i`` in ``[start, start + count)`` (``start`` a multiple of ``partitions`` continues an
    input written so, keeping record ``i`` at offset ``i // partitions``)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "log_level": 2})
    for i in range(start, start + count):
        while True:
            try:
                producer.produce(topic, value=b"v%d" % i + b"." * pad, partition=i % partitions)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0, "input records left unsent"


def input_keys(count: int, partitions: int) -> Counter[bytes]:
    """The ``partition:offset`` of every input record (:func:`produce_input`'s layout)."""
    return Counter(b"%d:%d" % (i % partitions, i // partitions) for i in range(count))


def read_output(bootstrap: str, topic: str, isolation: str) -> list[tuple[bytes, bytes]]:
    """Every record of ``topic`` a consumer with ``isolation.level=isolation`` reads, to the
    end (the LSO for read_committed, the high watermark otherwise)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{uuid.uuid4().hex[:8]}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "log_level": 2,
        }
    )
    try:
        partitions = sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        out: list[tuple[bytes, bytes]] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + 120
        while len(at_end) < len(partitions) and time.monotonic() < deadline:
            for m in consumer.consume(1000, timeout=1.0):
                if m.error() is not None:
                    if m.error().code() == -191:  # _PARTITION_EOF
                        at_end.add(m.partition())
                    continue
                at_end.discard(m.partition())
                out.append((m.key(), m.value()))
    finally:
        consumer.close()
    assert len(at_end) == len(partitions), f"{isolation} did not reach the end of {topic}"
    return out


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> int:
    """The sum of ``topic``'s high watermarks (uncommitted records and markers included)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "hw",
            "isolation.level": "read_uncommitted",  # the HW; read_committed gives the LSO
            "log_level": 2,
        }
    )
    try:
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)
        )
    finally:
        consumer.close()


def assert_each_input_once(output: list[tuple[bytes, bytes]], count: int, parts: int) -> None:
    keys = Counter(key for key, _ in output)
    repeated = [k for k, n in keys.items() if n > 1]
    assert not repeated, f"{len(repeated)} inputs written twice, e.g. {repeated[:5]}"
    assert keys == input_keys(count, parts), f"{len(output)} records for {count} inputs"
    for key, value in output:
        partition, offset = map(int, key.split(b":"))
        assert value.rstrip(b".") == b"v%d" % (offset * parts + partition), (key, value)


def source(spark: SparkSession, bootstrap: str, topic: str, max_offsets: int = 0) -> DataFrame:
    reader = (
        spark.readStream.format("franz")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    if max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets))
    return reader.load()


def run_available_now(df: DataFrame, bootstrap: str, topic: str, checkpoint: Path) -> list[Any]:
    """Run the query with ``exactlyOnce`` to the end of its input; its progress reports."""
    query = (
        df.writeStream.format("franz")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("exactlyOnce", "true")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        assert query.awaitTermination(240), "the query did not finish in 240 s"
        assert query.exception() is None, query.exception()
    finally:
        query.stop()
    return [dict(p) for p in query.recentProgress]


def forget_commit(checkpoint: Path, batch_id: int) -> None:
    (checkpoint / "commits" / str(batch_id)).unlink()
    (checkpoint / "commits" / f".{batch_id}.crc").unlink(missing_ok=True)


def group_offsets(bootstrap: str, group: str) -> list[tuple[str, int, int, str]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])
    result = listed[group].result(timeout=30)
    return [(tp.topic, tp.partition, tp.offset, tp.metadata) for tp in result.topic_partitions]


def names() -> tuple[str, str]:
    tag = uuid.uuid4().hex[:8]
    return f"sink-eos-in-{tag}", f"sink-eos-out-{tag}"


@pytest.mark.parametrize("name", BROKERS)
def test_replayed_batch_is_skipped_by_every_task(
    request: pytest.FixtureRequest, spark: SparkSession, name: str, tmp_path: Path
) -> None:
    bootstrap = request.getfixturevalue(name).bootstrap
    source_topic, sink = names()
    count, parts = 3000, 3
    create_topic(bootstrap, source_topic, parts)
    create_topic(bootstrap, sink, parts)
    produce_input(bootstrap, source_topic, count, parts)
    df = source(spark, bootstrap, source_topic, max_offsets=1000).selectExpr(
        "concat(partition, ':', offset) as key", "value"
    )
    checkpoint = tmp_path / "checkpoint"
    first = run_available_now(df, bootstrap, sink, checkpoint)
    last = max(p["batchId"] for p in first)
    assert last >= 2, first
    assert_each_input_once(read_output(bootstrap, sink, "read_committed"), count, parts)

    # Each task partition's marker: its own group, offset last + 1, the batch in the metadata.
    query_id = str(json.loads((checkpoint / "metadata").read_text())["id"])
    for p in range(parts):
        [(topic, partition, offset, metadata)] = group_offsets(
            bootstrap, task_marker_group(query_id, p)
        )
        assert (topic, partition, offset) == (sink, 0, last + 1)
        marker = json.loads(metadata)
        assert marker["batchId"] == last and marker["queryId"] == query_id and marker["rows"] > 0
    assert group_offsets(bootstrap, marker_group(query_id)) == []  # no driver-side marker

    # The crash after the sink's commit: Spark replays the last batch, every task skips it.
    forget_commit(checkpoint, last)
    replay = run_available_now(df, bootstrap, sink, checkpoint)
    assert any(p["batchId"] == last and p["numInputRows"] > 0 for p in replay), replay
    assert (checkpoint / "commits" / str(last)).exists()
    assert_each_input_once(read_output(bootstrap, sink, "read_committed"), count, parts)
    # Nothing was written again, not even in an aborted transaction.
    assert len(read_output(bootstrap, sink, "read_uncommitted")) == count


def _failing_gate(bootstrap: str, sink: str, seen: Path) -> Any:
    """A UDF ``value -> value`` that, on the first attempt of the task reading input partition
    0, waits at offset 2000 until that task's records reached the broker (output partition
    0's high watermark moved; then it creates ``seen``), then raises."""
    from pyspark.sql.functions import udf

    def gate(partition: int, offset: int, value: bytes) -> bytes:
        # Imported here: cloudpickle would try to pickle confluent-kafka's classes by value.
        import time

        from confluent_kafka import Consumer, TopicPartition
        from pyspark import TaskContext

        context = TaskContext.get()
        first_attempt = context is not None and context.attemptNumber() == 0
        if partition == 0 and offset == 2000 and first_attempt:
            # read_uncommitted: librdkafka's default, read_committed, would give the LSO
            consumer = Consumer(
                {
                    "bootstrap.servers": bootstrap,
                    "group.id": "gate",
                    "isolation.level": "read_uncommitted",
                }
            )
            try:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    tp = TopicPartition(sink, 0)
                    if consumer.get_watermark_offsets(tp, timeout=5)[1] > 0:
                        open(seen, "w").close()
                        break
                    time.sleep(0.1)
            finally:
                consumer.close()
            raise RuntimeError("injected failure after some records were produced")
        return value

    return udf(gate, "binary", useArrow=False)


@pytest.mark.parametrize("name", BROKERS)
def test_task_failing_mid_write_leaves_nothing_visible(
    request: pytest.FixtureRequest, spark: SparkSession, name: str, tmp_path: Path
) -> None:
    bootstrap = request.getfixturevalue(name).bootstrap
    source_topic, sink = names()
    count, parts = 6000, 2
    create_topic(bootstrap, source_topic, parts)
    create_topic(bootstrap, sink, parts)
    # 500-byte values: an Arrow batch of 500 rows outgrows the JVM's 64 KiB socket buffer
    # (spark.buffer.size), so the sink's worker gets the rows before the UDF stops.
    produce_input(bootstrap, source_topic, count, parts, pad=500)
    gate = _failing_gate(bootstrap, sink, tmp_path / "gate-saw-records")
    df = source(spark, bootstrap, source_topic).selectExpr(
        "partition", "offset", "concat(partition, ':', offset) as key", "value"
    )
    # Task p writes output partition p; small Arrow batches reach the sink while the UDF runs.
    df = df.select("partition", "key", gate("partition", "offset", "value").alias("value"))
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "500")
    try:
        progress = run_available_now(df, bootstrap, sink, tmp_path / "checkpoint")
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")
    assert sum(p["numInputRows"] for p in progress) == count

    assert (tmp_path / "gate-saw-records").exists(), "the task failed before writing anything"
    committed = read_output(bootstrap, sink, "read_committed")
    assert_each_input_once(committed, count, parts)
    # The failed attempt's records are in the log, aborted (the sink saw its input cut short):
    # read_uncommitted sees them too, and they are the failed task's (input partition 0).
    everything = read_output(bootstrap, sink, "read_uncommitted")
    assert len(everything) > len(committed), "the failed attempt's records were not aborted"
    assert all(
        key.startswith(b"0:") for key, n in Counter(k for k, _ in everything).items() if n > 1
    )


def _start_driver(
    bootstrap: str, topic: str, sink: str, checkpoint: Path, log: Path
) -> subprocess.Popen[bytes]:
    args = [
        sys.executable,
        "-m",
        "tests.spark.stream_driver",
        "--bootstrap",
        bootstrap,
        "--topic",
        topic,
        "--sink-topic",
        sink,
        "--checkpoint",
        str(checkpoint),
        "--max-offsets",
        "15000",
    ]
    with log.open("ab") as out:
        return subprocess.Popen(
            args,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=spark_environment(),
            cwd=ROOT,
            start_new_session=True,
        )


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(30)
    _reap_group(proc)


def _kill_mid_batch(
    driver: subprocess.Popen[bytes],
    bootstrap: str,
    sink: str,
    parts: int,
    checkpoint: Path,
    log: Path,
    after: int,
    deadline: float,
) -> int | None:
    """SIGKILL ``driver`` while a batch ``N > after`` is planned (``offsets/N``), not
    committed (``commits/N``), and more than 100 of its records are in the output's log (its
    high watermarks past where they were when the batch was first seen planned): ``N``, once
    the driver is dead; ``None`` if the driver exited on its own first (its input all done).

    The kill may still land just after Spark wrote ``commits/N``: the caller looks.
    """
    seen_at: dict[int, int] = {}  # batch -> the output's high watermarks when first seen
    while time.monotonic() < deadline and driver.poll() is None:
        planned = sorted(int(f.name) for f in (checkpoint / "offsets").glob("[0-9]*"))
        batch = planned[-1] if planned else -1
        if batch > after and not (checkpoint / "commits" / str(batch)).exists():
            written = high_watermarks(bootstrap, sink, parts)
            seen_at.setdefault(batch, written)
            if written > seen_at[batch] + 100:
                driver.send_signal(signal.SIGKILL)
                assert driver.wait(30) == -signal.SIGKILL
                return batch
        time.sleep(0.01)
    if driver.poll() is not None:
        assert driver.returncode == 0, log.read_text()[-3000:]
    return None


@pytest.mark.parametrize("name", BROKERS)
def test_driver_killed_mid_batch_restarts_exactly_once(
    request: pytest.FixtureRequest, spark: SparkSession, name: str, tmp_path: Path
) -> None:
    broker: HasBootstrap = request.getfixturevalue(name)
    bootstrap = broker.bootstrap
    source_topic, sink = names()
    count, parts, per_batch = 90_000, 3, 15_000
    create_topic(bootstrap, source_topic, parts)
    create_topic(bootstrap, sink, parts)
    produce_input(bootstrap, source_topic, count, parts)
    checkpoint, log = tmp_path / "checkpoint", tmp_path / "driver.log"

    # Kill while batch N >= 1 is planned (offsets/N), not committed (commits/N), and some of
    # its records are in the output's log, i.e. with transactions open. A kill that landed
    # just after commits/N (or a driver that ran out of input first) is not what this test
    # is about: restart from the checkpoint, with another batch of input, and kill again in
    # a later batch. Every restart is a recovery too, checked by the exactly-once output.
    killed_in: int | None = None
    late_kills: list[int] = []
    after = 0
    deadline = time.monotonic() + 420
    while killed_in is None:
        if time.monotonic() >= deadline:
            pytest.fail(
                f"no kill landed mid-batch (late kills in batches {late_kills}):\n"
                f"{log.read_text()[-3000:]}"
            )
        driver = _start_driver(bootstrap, source_topic, sink, checkpoint, log)
        try:
            batch = _kill_mid_batch(
                driver, bootstrap, sink, parts, checkpoint, log, after, deadline
            )
        finally:
            _stop(driver)
        if batch is not None and not (checkpoint / "commits" / str(batch)).exists():
            killed_in = batch
            break
        if batch is not None:
            late_kills.append(batch)
            after = batch
        else:  # the driver finished its input (or the deadline passed): next round needs more
            planned = sorted(int(f.name) for f in (checkpoint / "offsets").glob("[0-9]*"))
            after = max(after, planned[-1] if planned else 0)
        produce_input(bootstrap, source_topic, per_batch, parts, start=count)
        count += per_batch
    planned_range = (checkpoint / "offsets" / str(killed_in)).read_text()

    restarted = _start_driver(bootstrap, source_topic, sink, checkpoint, log)
    try:
        assert restarted.wait(300) == 0, log.read_text()[-3000:]
    finally:
        _stop(restarted)
    assert (checkpoint / "offsets" / str(killed_in)).read_text() == planned_range
    assert (checkpoint / "commits" / str(killed_in)).exists()
    assert_each_input_once(read_output(bootstrap, sink, "read_committed"), count, parts)


def test_batch_write_refuses_exactly_once(spark: SparkSession) -> None:
    frame = spark.range(3).selectExpr("cast(id as string) as value")
    with pytest.raises(Exception, match="'exactlyOnce' applies to streaming writes only"):
        (
            frame.write.format("franz")
            .mode("append")
            .option("kafka.bootstrap.servers", "127.0.0.1:9")
            .option("topic", "nowhere")
            .option("exactlyOnce", "true")
            .save()
        )
