"""Batch reads of the ``franz`` source: a real local SparkSession against a real broker.

One broker serves the whole module (each test uses its own topics), with a fast log cleaner
for the compacted-topic case. Records are produced with confluent-kafka; the reference reader
for ``endingOffsets`` is ``kcat`` (librdkafka's own consumer, a separate process).
"""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from typing import Any

import confluent_kafka
import pytest
from confluent_kafka.admin import AdminClient
from pyspark.sql import DataFrame, SparkSession

from tests.support.broker import BrokerProcess
from tests.support.clients import OutRecord, create_topic, end_offsets, produce_with, run_kcat

pytestmark = pytest.mark.slow

#: Record timestamps: an hour ago, whole seconds (older ones would fall to time retention).
T0 = (time.time_ns() // 1_000_000_000 - 3600) * 1000

OVERRIDES = {"log.cleaner.backoff.ms": "100", "log.retention.check.interval.ms": "500"}


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("broker") / "data", OVERRIDES).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


def load(spark: SparkSession, broker: BrokerProcess, **options: str) -> DataFrame:
    reader = spark.read.format("franz").option("kafka.bootstrap.servers", broker.bootstrap)
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def rows_of(df: DataFrame) -> list[dict[str, Any]]:
    return [r.asDict(recursive=True) for r in df.orderBy("topic", "partition", "offset").collect()]


def produce(broker: BrokerProcess, topic: str, records: list[OutRecord], **config: Any) -> None:
    config.setdefault("linger.ms", 5)
    produce_with("confluent-kafka", broker.bootstrap, topic, records, config=config)


def utc(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).replace(tzinfo=None)


def test_columns_types_keys_values_headers_and_create_time(
    spark: SparkSession, kafka: BrokerProcess
) -> None:
    create_topic(kafka.bootstrap, "cols", partitions=2)
    records = [
        OutRecord(None, b"null-key", partition=0, timestamp_ms=T0 + 123),
        OutRecord(
            b"k1",
            None,
            headers=(("h1", b"a"), ("h2", None)),
            partition=0,
            timestamp_ms=T0 + 124,
        ),
        OutRecord(b"k2", b"\x00\xff", headers=(("h1", b"b"),), partition=1, timestamp_ms=T0 + 125),
    ]
    produce(kafka, "cols", records)

    df = load(spark, kafka, subscribe="cols", includeHeaders="true")
    assert df.dtypes == [
        ("key", "binary"),
        ("value", "binary"),
        ("topic", "string"),
        ("partition", "int"),
        ("offset", "bigint"),
        ("timestamp", "timestamp"),
        ("timestampType", "int"),
        ("headers", "array<struct<key:string,value:binary>>"),
    ]
    got = rows_of(df)
    assert got == [
        {
            "key": None,
            "value": bytearray(b"null-key"),
            "topic": "cols",
            "partition": 0,
            "offset": 0,
            "timestamp": utc(T0 + 123),
            "timestampType": 0,
            "headers": None,
        },
        {
            "key": bytearray(b"k1"),
            "value": None,
            "topic": "cols",
            "partition": 0,
            "offset": 1,
            "timestamp": utc(T0 + 124),
            "timestampType": 0,
            "headers": [{"key": "h1", "value": bytearray(b"a")}, {"key": "h2", "value": None}],
        },
        {
            "key": bytearray(b"k2"),
            "value": bytearray(b"\x00\xff"),
            "topic": "cols",
            "partition": 1,
            "offset": 0,
            "timestamp": utc(T0 + 125),
            "timestampType": 0,
            "headers": [{"key": "h1", "value": bytearray(b"b")}],
        },
    ]
    plain = load(spark, kafka, subscribe="cols")
    assert plain.columns == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    ]
    assert plain.count() == 3


def test_log_append_time_topic(spark: SparkSession, kafka: BrokerProcess) -> None:
    create_topic(kafka.bootstrap, "lat", config={"message.timestamp.type": "LogAppendTime"})
    before = time.time_ns() // 1_000_000
    produce(kafka, "lat", [OutRecord(b"k", b"v", partition=0, timestamp_ms=1000)] * 3)
    after = time.time_ns() // 1_000_000
    got = rows_of(load(spark, kafka, subscribe="lat"))
    assert [r["timestampType"] for r in got] == [1, 1, 1]
    for r in got:
        # The broker's append time, not the producer's 1000 ms.
        assert utc(before - 1000) <= r["timestamp"] <= utc(after + 1000)


def kcat_range(
    broker: BrokerProcess, topic: str, partition: int, start: int, count: int
) -> list[tuple[int, bytes | None, bytes | None]]:
    """What kcat reads: ``count`` records of ``topic``-``partition`` from ``start``."""
    args = [
        "-C",
        "-b",
        broker.bootstrap,
        "-t",
        topic,
        "-p",
        str(partition),
        "-o",
        str(start),
        "-c",
        str(count),
        "-e",
        "-J",
        "-q",
    ]
    result = run_kcat(args, timeout=30)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    out = []
    for line in result.stdout.decode("utf-8", "surrogateescape").splitlines():
        env = json.loads(line)
        key, value = env["key"], env["payload"]
        out.append(
            (
                env["offset"],
                None if key is None else key.encode("utf-8", "surrogateescape"),
                None if value is None else value.encode("utf-8", "surrogateescape"),
            )
        )
    return out


def test_json_starting_and_ending_offsets_equal_what_kcat_reads(
    spark: SparkSession, kafka: BrokerProcess
) -> None:
    create_topic(kafka.bootstrap, "ranges", partitions=3)
    records = [
        OutRecord(None if i % 7 == 0 else b"key-%d" % i, b"value-%d" % i, partition=i % 3)
        for i in range(600)
    ]
    produce(kafka, "ranges", records)
    starting = {"ranges": {"0": 10, "1": -2, "2": 150}}
    ending = {"ranges": {"0": 60, "1": -1, "2": 170}}
    df = load(
        spark,
        kafka,
        subscribe="ranges",
        startingOffsets=json.dumps(starting),
        endingOffsets=json.dumps(ending),
    )
    got = rows_of(df)
    expected_ranges = {0: (10, 60), 1: (0, 200), 2: (150, 170)}
    for partition, (start, end) in expected_ranges.items():
        mine = [
            (r["offset"], None if r["key"] is None else bytes(r["key"]), bytes(r["value"]))
            for r in got
            if r["partition"] == partition
        ]
        theirs = kcat_range(kafka, "ranges", partition, start, end - start)
        assert len(theirs) == end - start
        assert mine == theirs, f"partition {partition}"
    assert len(got) == 50 + 200 + 20


def test_min_partitions_makes_more_input_partitions(
    spark: SparkSession, kafka: BrokerProcess
) -> None:
    create_topic(kafka.bootstrap, "minparts", partitions=2)
    produce(kafka, "minparts", [OutRecord(None, b"%d" % i, partition=i % 2) for i in range(400)])
    plain = load(spark, kafka, subscribe="minparts")
    assert plain.rdd.getNumPartitions() == 2
    split = load(spark, kafka, subscribe="minparts", minPartitions="6")
    assert split.rdd.getNumPartitions() == 6
    offsets = split.select("partition", "offset").collect()
    assert len(offsets) == 400 and len(set(offsets)) == 400


def test_subscribe_pattern_and_assign(spark: SparkSession, kafka: BrokerProcess) -> None:
    for topic in ("pat-a", "pat-b", "other-pat-a"):
        create_topic(kafka.bootstrap, topic, partitions=2)
        produce(kafka, topic, [OutRecord(None, topic.encode(), partition=i % 2) for i in range(10)])
    by_pattern = load(spark, kafka, subscribePattern="pat-.*")
    counts = {r["topic"]: r["count"] for r in by_pattern.groupBy("topic").count().collect()}
    assert counts == {"pat-a": 10, "pat-b": 10}
    assigned = load(spark, kafka, assign='{"pat-b":[1],"other-pat-a":[0]}')
    got = {(r["topic"], r["partition"]) for r in assigned.select("topic", "partition").collect()}
    assert got == {("pat-b", 1), ("other-pat-a", 0)}
    assert assigned.count() == 10
    listed = load(spark, kafka, subscribe="pat-a,other-pat-a")
    assert listed.count() == 20


def test_offsets_by_timestamp(spark: SparkSession, kafka: BrokerProcess) -> None:
    create_topic(kafka.bootstrap, "bytime", partitions=2)
    base = T0
    produce(
        kafka,
        "bytime",
        [
            OutRecord(None, b"%d" % i, partition=i % 2, timestamp_ms=base + 1000 * i)
            for i in range(20)
        ],
    )
    # Partition 0 has even i (offset i//2, ts base+1000i); partition 1 the odd ones.
    by_ts = load(
        spark,
        kafka,
        subscribe="bytime",
        startingOffsetsByTimestamp=json.dumps({"bytime": {"0": base + 5000, "1": base}}),
        endingOffsetsByTimestamp=json.dumps({"bytime": {"0": base + 14_500, "1": base + 4000}}),
    )
    got = sorted((r["partition"], r["offset"]) for r in by_ts.collect())
    # p0: first ts >= base+5000 is i=6 (offset 3); end: first ts >= base+14500 is i=16 (8).
    # p1: from offset 0; end: first ts >= base+4000 is i=5 (offset 2).
    assert got == [(0, o) for o in range(3, 8)] + [(1, 0), (1, 1)]
    global_ts = load(spark, kafka, subscribe="bytime", startingTimestamp=str(base + 15_000))
    assert sorted((r["partition"], r["offset"]) for r in global_ts.collect()) == [
        (0, 8),
        (0, 9),
        (1, 7),
        (1, 8),
        (1, 9),
    ]
    future = str(base + 10_000_000)
    with pytest.raises(Exception, match="No offset matched"):
        load(spark, kafka, subscribe="bytime", startingTimestamp=future).collect()
    latest = load(
        spark,
        kafka,
        subscribe="bytime",
        startingTimestamp=future,
        startingOffsetsByTimestampStrategy="latest",
    )
    assert latest.count() == 0


def test_compacted_topic_with_gaps(spark: SparkSession, kafka: BrokerProcess) -> None:
    config = {
        "cleanup.policy": "compact",
        "segment.bytes": "4096",
        "min.cleanable.dirty.ratio": "0.01",
        "file.delete.delay.ms": "1000",
    }
    create_topic(kafka.bootstrap, "compacted", config=config)
    # Every tenth record has a key of its own and survives compaction: gaps between them.
    for r in range(8):
        produce(
            kafka,
            "compacted",
            [
                OutRecord(
                    b"unique-%d-%d" % (r, i) if i % 10 == 0 else b"key-%d" % (i % 5),
                    b"value-%d" % i,
                    partition=0,
                )
                for i in range(100)
            ],
            **{"batch.size": 1500, "linger.ms": 2},
        )
    _, high = end_offsets(kafka.bootstrap, "compacted", [0])[0]
    assert high == 800
    # Wait until the cleaner has compacted and then left the log alone (two equal reads).
    deadline = time.monotonic() + 60
    previous = None
    while True:
        expected = kcat_range(kafka, "compacted", 0, 0, high)
        if len(expected) < high - 50 and expected == previous:
            break
        if time.monotonic() > deadline:
            break
        previous = expected
        time.sleep(1.0)
    assert len(expected) < high - 50, "the cleaner never compacted the topic"
    got = [
        (r["offset"], bytes(r["key"]), bytes(r["value"]))
        for r in rows_of(load(spark, kafka, subscribe="compacted"))
    ]
    assert got == expected
    # Ranges that start, end or lie entirely inside gaps (minPartitions splits the log
    # into pieces, some with no record at all) still read exactly what is there.
    split = load(spark, kafka, subscribe="compacted", minPartitions="16")
    assert split.rdd.getNumPartitions() == 16
    assert [(r["offset"], bytes(r["key"]), bytes(r["value"])) for r in rows_of(split)] == expected
    present = {offset for offset, _, _ in expected}
    gap = next(o for o in range(1, high) if o not in present and o - 1 in present)
    within = load(
        spark,
        kafka,
        subscribe="compacted",
        startingOffsets=json.dumps({"compacted": {"0": gap}}),
        endingOffsets=json.dumps({"compacted": {"0": gap + 15}}),
    )
    assert [r["offset"] for r in rows_of(within)] == sorted(
        o for o in present if gap <= o < gap + 15
    )


def test_fail_on_data_loss_after_delete_records(spark: SparkSession, kafka: BrokerProcess) -> None:
    create_topic(kafka.bootstrap, "deleted")
    produce(kafka, "deleted", [OutRecord(None, b"%d" % i, partition=0) for i in range(100)])
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    for future in admin.delete_records([confluent_kafka.TopicPartition("deleted", 0, 40)]).values():
        future.result(30)
    start = json.dumps({"deleted": {"0": 10}})
    with pytest.raises(Exception, match="failOnDataLoss"):
        load(spark, kafka, subscribe="deleted", startingOffsets=start).collect()
    lenient = load(spark, kafka, subscribe="deleted", startingOffsets=start, failOnDataLoss="false")
    assert sorted(r["offset"] for r in lenient.collect()) == list(range(40, 100))
    # earliest resolves to the new log start: nothing lost, nothing raised.
    assert load(spark, kafka, subscribe="deleted").count() == 60


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"subscribe": "bad-opts"}, "'kafka.bootstrap.servers'"),
        (
            {
                "kafka.bootstrap.servers": "{bs}",
                "subscribe": "bad-opts",
                "assign": '{"bad-opts":[0]}',
            },
            "Only one of the following options can be specified",
        ),
        ({"kafka.bootstrap.servers": "{bs}"}, "One of the following options must be specified"),
        (
            {
                "kafka.bootstrap.servers": "{bs}",
                "subscribe": "bad-opts",
                "startingOffsets": "{nope",
            },
            "'startingOffsets'",
        ),
        (
            {"kafka.bootstrap.servers": "{bs}", "assign": '{"no-such-topic":[0]}'},
            "'assign'.*no-such-topic-0",
        ),
        (
            {
                "kafka.bootstrap.servers": "{bs}",
                "subscribe": "bad-opts",
                "startingOffsets": "latest",
            },
            "starting offset can't be latest for batch queries",
        ),
        (
            {
                "kafka.bootstrap.servers": "{bs}",
                "subscribe": "bad-opts",
                "endingOffsets": '{"bad-opts":{"0":1}}',
            },
            "must specify all TopicPartitions",
        ),
    ],
)
def test_bad_options_name_the_option(
    spark: SparkSession, kafka: BrokerProcess, options: dict[str, str], match: str
) -> None:
    if (
        "bad-opts"
        not in AdminClient({"bootstrap.servers": kafka.bootstrap}).list_topics(timeout=10).topics
    ):
        create_topic(kafka.bootstrap, "bad-opts", partitions=2)
    reader = spark.read.format("franz")
    for key, value in options.items():
        reader = reader.option(key, value.replace("{bs}", kafka.bootstrap))
    with pytest.raises(Exception, match=match):
        reader.load().collect()


def test_missing_topic_reads_nothing(spark: SparkSession, kafka: BrokerProcess) -> None:
    assert load(spark, kafka, subscribe="never-created").count() == 0
