"""``franz.spark.options``: the read options, parsed and refused as Spark's Kafka source does."""

from __future__ import annotations

import pytest

from franz.spark.config import OptionError
from franz.spark.offsets import (
    Earliest,
    GlobalTimestamp,
    Latest,
    SpecificOffsets,
    SpecificTimestamps,
    TopicPartition,
)
from franz.spark.options import parse_read_options

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}


def opts(**extra: str) -> dict[str, str]:
    return {**BASE, **{k.lower(): v for k, v in extra.items()}}


def test_defaults_differ_between_batch_and_streaming() -> None:
    batch = parse_read_options(opts(), streaming=False)
    stream = parse_read_options(opts(), streaming=True)
    assert batch.starting == Earliest() and batch.ending == Latest()
    assert stream.starting == Latest() and stream.ending is None
    assert batch.fail_on_data_loss and not batch.include_headers
    assert batch.max_offsets_per_trigger is None and batch.min_partitions is None
    assert batch.group_id.startswith("spark-kafka-source-")
    assert "group.id" not in batch.client
    assert batch.client["bootstrap.servers"] == "127.0.0.1:9092"


def test_strategies() -> None:
    sub = parse_read_options(opts(subscribe=" a, b ,a"), streaming=True).strategy
    assert sub.kind == "subscribe" and sub.topics == ("a", "b")
    assert sub.matches("a") and not sub.matches("c")
    options = {**opts(), "subscribepattern": "user-.*"}
    del options["subscribe"]
    pat = parse_read_options(options, streaming=True).strategy
    assert pat.matches("user-activity") and not pat.matches("xuser-activity")
    assert not pat.matches("user")
    options = {**opts(), "assign": '{"b":[1,0],"a":[2]}'}
    del options["subscribe"]
    asg = parse_read_options(options, streaming=True).strategy
    assert asg.partitions == (
        TopicPartition("a", 2),
        TopicPartition("b", 0),
        TopicPartition("b", 1),
    )


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"kafka.bootstrap.servers": "x:1"}, "One of the following options must be specified"),
        ({**BASE, "assign": '{"t":[0]}'}, "Only one of the following options"),
        ({"subscribe": "t"}, "kafka.bootstrap.servers"),
        ({**BASE, "subscribe": " , "}, "No topics to subscribe to"),
        ({"kafka.bootstrap.servers": "x:1", "subscribepattern": " "}, "Pattern to subscribe"),
        ({"kafka.bootstrap.servers": "x:1", "subscribepattern": "("}, "subscribePattern"),
        ({"kafka.bootstrap.servers": "x:1", "assign": "{}"}, "'assign'"),
        ({"kafka.bootstrap.servers": "x:1", "assign": '{"t":0}'}, "'assign'"),
        ({"kafka.bootstrap.servers": "x:1", "assign": '{"t":[-1]}'}, "'assign'"),
        ({**BASE, "startingoffsets": "{bad"}, "'startingOffsets'"),
        ({**BASE, "startingoffsets": '{"t":{"x":1}}'}, "'startingOffsets'"),
        ({**BASE, "startingoffsets": '{"t":{"0":-3}}'}, "'startingOffsets'"),
        ({**BASE, "startingoffsets": '{"t":{"0":true}}'}, "'startingOffsets'"),
        ({**BASE, "startingoffsetsbytimestamp": '{"t":{"0":"x"}}'}, "ByTimestamp"),
        ({**BASE, "startingtimestamp": "yesterday"}, "'startingTimestamp'"),
        ({**BASE, "failondataloss": "maybe"}, "'failOnDataLoss'"),
        ({**BASE, "maxoffsetspertrigger": "0"}, "'maxOffsetsPerTrigger'"),
        ({**BASE, "minpartitions": "x"}, "'minPartitions'"),
        ({**BASE, "minoffsetspertrigger": "10"}, "'minOffsetsPerTrigger'"),
        ({**BASE, "startingoffsetsbytimestampstrategy": "skip"}, "ByTimestampStrategy"),
        ({**BASE, "kafka.auto.offset.reset": "earliest"}, "kafka.auto.offset.reset"),
        ({**BASE, "endingoffsets": "latest"}, "'endingOffsets': ending offset not valid"),
        ({**BASE, "endingtimestamp": "5"}, "not valid in streaming"),
    ],
)
def test_streaming_refusals_name_the_option(options: dict[str, str], match: str) -> None:
    with pytest.raises(OptionError, match=match):
        parse_read_options(options, streaming=True)


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({"startingoffsets": "latest"}, "starting offset can't be latest for batch"),
        ({"startingoffsets": '{"t":{"0":-1}}'}, "starting offsets for t-0 can't be latest"),
        ({"endingoffsets": "earliest"}, "ending offset can't be earliest for batch"),
        ({"endingoffsets": '{"t":{"0":-2}}'}, "ending offset for t-0 can't be earliest"),
    ],
)
def test_batch_refuses_what_spark_refuses(extra: dict[str, str], match: str) -> None:
    with pytest.raises(OptionError, match=match):
        parse_read_options({**BASE, **extra}, streaming=False)


def test_offset_specs_and_their_precedence() -> None:
    json_spec = parse_read_options(
        opts(startingOffsets='{"t":{"1":-2,"0":5}}'), streaming=True
    ).starting
    assert json_spec == SpecificOffsets({TopicPartition("t", 1): -2, TopicPartition("t", 0): 5})
    by_ts = parse_read_options(
        opts(startingOffsets="earliest", startingOffsetsByTimestamp='{"t":{"0":1000}}'),
        streaming=True,
    ).starting
    assert by_ts == SpecificTimestamps({TopicPartition("t", 0): 1000})
    global_ts = parse_read_options(
        opts(
            startingOffsets="earliest",
            startingOffsetsByTimestamp='{"t":{"0":1000}}',
            startingTimestamp="2000",
        ),
        streaming=True,
    ).starting
    assert global_ts == GlobalTimestamp(2000)
    batch = parse_read_options(opts(endingOffsetsByTimestamp='{"t":{"0":7}}'), streaming=False)
    assert batch.ending == SpecificTimestamps({TopicPartition("t", 0): 7})


def test_numbers_flags_and_group_id() -> None:
    parsed = parse_read_options(
        opts(
            maxOffsetsPerTrigger="300",
            minPartitions="8",
            maxRecordsPerPartition="1000",
            failOnDataLoss="FALSE",
            includeHeaders="true",
            startingOffsetsByTimestampStrategy="Latest",
            **{"kafkaConsumer.pollTimeoutMs": "5000", "kafka.group.id": "mine"},
        ),
        streaming=True,
    )
    assert parsed.max_offsets_per_trigger == 300
    assert parsed.min_partitions == 8
    assert parsed.max_records_per_partition == 1000
    assert not parsed.fail_on_data_loss and parsed.include_headers
    assert parsed.starting_strategy_latest
    assert parsed.poll_timeout_ms == 5000
    assert parsed.group_id == "mine"
    prefixed = parse_read_options(opts(groupIdPrefix="etl"), streaming=True)
    assert prefixed.group_id.startswith("etl-")
