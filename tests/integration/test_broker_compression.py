"""Broker-side ``compression.type`` and per-record produce errors (KIP-467) against a real
broker, with real clients (confluent-kafka, kcat, ``franz configs``) and the raw wire.

Recompressed batches are checked where they are stored: the partition's ``.log`` files
(``stored_batches``) and ``franz dump-log-segments``' ``compresscodec``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest

from franz.protocol.records import CompressionType, RecordBatchBuilder
from tests.support.broker import BrokerProcess
from tests.support.clients import (
    OutRecord,
    consume_with,
    create_topic,
    produce_with,
    run_kcat,
    stored_batches,
)
from tests.support.wire import WireClient, create_topics, produce, request_at, wait_for_leaders

INVALID_RECORD = 87
INVALID_TIMESTAMP = 32
INVALID_CONFIG = 40
UNSUPPORTED_COMPRESSION_TYPE = 76
NO_KEY = "Compacted topic cannot accept message without key in topic partition {}"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("compression-broker")).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, proc.output()


def records(count: int = 200) -> list[OutRecord]:
    return [
        OutRecord(b"key-%d" % i, b"value %d " % i * 8, (("h", b"%d" % i),), partition=0)
        for i in range(count)
    ]


def codecs_stored(broker: BrokerProcess, topic: str) -> set[str]:
    return {batch.compression_type.config_name for batch in stored_batches(broker, topic, 0)}


# -- compression.type ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("produced", "topic_codec"),
    [("gzip", "zstd"), ("lz4", "uncompressed"), ("none", "snappy"), ("zstd", "lz4"),
     ("snappy", "gzip")],
)
def test_batches_are_recompressed_to_the_topics_codec(broker, produced, topic_codec):
    topic = f"to-{topic_codec}-from-{produced}"
    create_topic(broker.bootstrap, topic, config={"compression.type": topic_codec})
    sent = records()
    produce_with("confluent-kafka", broker.bootstrap, topic, sent, produced,
                 config={"linger.ms": 50, "enable.idempotence": True})
    expected = {"none" if topic_codec == "uncompressed" else topic_codec}
    assert codecs_stored(broker, topic) == expected
    assert all(b.producer_id >= 0 for b in stored_batches(broker, topic, 0))  # idempotent
    for client in ("confluent-kafka", "kcat"):
        got = consume_with(client, broker.bootstrap, topic, [0], len(sent))
        assert [(r.offset, r.key, r.value) for r in got] == [
            (i, r.key, r.value) for i, r in enumerate(sent)
        ], client
    got = consume_with("confluent-kafka", broker.bootstrap, topic, [0], len(sent))
    assert [r.headers for r in got] == [r.headers for r in sent]


def test_dump_log_segments_shows_the_recompressed_codec(broker):
    create_topic(broker.bootstrap, "dumped", config={"compression.type": "zstd"})
    produce_with("confluent-kafka", broker.bootstrap, "dumped", records(50), "gzip")
    segment = Path(broker.overrides["log.dirs"]) / "dumped-0" / "00000000000000000000.log"
    result = subprocess.run(
        [sys.executable, "-m", "franz", "dump-log-segments", "--files", str(segment)],
        capture_output=True, text=True, timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if line.startswith("baseOffset:")]
    assert lines and all("compresscodec: zstd" in line and "isvalid: true" in line
                         for line in lines)


def test_producer_keeps_each_batchs_own_codec(broker):
    create_topic(broker.bootstrap, "as-produced", config={"compression.type": "producer"})
    produce_with("confluent-kafka", broker.bootstrap, "as-produced", records(), "lz4")
    produce_with("confluent-kafka", broker.bootstrap, "as-produced", records(), "snappy")
    assert codecs_stored(broker, "as-produced") == {"lz4", "snappy"}


def configs_tool(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "franz", "configs", "--bootstrap-server", bootstrap,
         "--entity-type", "topics", *args],
        capture_output=True, text=True, timeout=60,
    )


def test_configs_tool_sets_compression_type_and_refuses_unknown_codecs(broker):
    create_topic(broker.bootstrap, "altered")
    changed = configs_tool(broker.bootstrap, "--entity-name", "altered", "--alter",
                           "--add-config", "compression.type=lz4")
    assert changed.returncode == 0, changed.stderr
    run_kcat(["-P", "-b", broker.bootstrap, "-t", "altered", "-p", "0", "-z", "none"],
             stdin=b"one\ntwo\nthree\n").check_returncode()
    assert codecs_stored(broker, "altered") == {"lz4"}
    refused = configs_tool(broker.bootstrap, "--entity-name", "altered", "--alter",
                           "--add-config", "compression.type=brotli")
    assert refused.returncode == 1
    assert "String must be one of" in refused.stderr


def test_create_topics_takes_codecs_and_refuses_others_with_invalid_config(broker):
    with WireClient.connect(broker.bootstrap) as client:
        response = create_topics(client, {"made-zstd": 1}, configs={"compression.type": "zstd"})
        assert [t.error_code for t in response.topics] == [0]
        response = create_topics(client, {"made-bad": 1}, configs={"compression.type": "none"})
        [topic] = response.topics
        assert topic.error_code == INVALID_CONFIG
        assert topic.error_message == (
            "Invalid value none for configuration compression.type: String must be one of: "
            "uncompressed, zstd, lz4, snappy, gzip, producer"
        )


def test_broker_level_compression_type_and_level_are_the_topic_default(broker_factory, tmp_path):
    proc = broker_factory(
        tmp_path / "gzip-broker", {"compression.type": "gzip", "compression.gzip.level": "1"}
    ).start()
    run_kcat(["-P", "-b", proc.bootstrap, "-t", "auto", "-p", "0", "-z", "snappy"],
             stdin=b"".join(b"record %d\n" % i for i in range(100))).check_returncode()
    assert codecs_stored(proc, "auto") == {"gzip"}
    # zlib writes the level class into the gzip header's XFL byte: 4 for the fastest level.
    assert {bytes(b.records_payload())[8] for b in stored_batches(proc, "auto", 0)} == {4}
    got = consume_with("kcat", proc.bootstrap, "auto", [0], 100)
    assert [r.value for r in got] == [b"record %d" % i for i in range(100)]


def test_a_zstd_topic_refuses_fetches_below_v10(broker):
    create_topic(broker.bootstrap, "zstd-only", config={"compression.type": "zstd"})
    run_kcat(["-P", "-b", broker.bootstrap, "-t", "zstd-only", "-p", "0"],
             stdin=b"a\nb\n").check_returncode()
    fetch = {
        "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20, "session_epoch": -1,
        "topics": [{"topic": "zstd-only", "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20,
             "current_leader_epoch": -1}]}],
    }
    with WireClient.connect(broker.bootstrap) as client:
        old = request_at(client, 1, 9, fetch)
        [partition] = old.responses[0].partitions
        assert partition.error_code == UNSUPPORTED_COMPRESSION_TYPE
        assert partition.high_watermark == -1 and not partition.records
        [partition] = request_at(client, 1, 10, fetch).responses[0].partitions
        assert partition.error_code == 0 and partition.high_watermark == 2


def test_zstd_batches_need_produce_v7(broker):
    create_topic(broker.bootstrap, "zstd-produce")
    batch = RecordBatchBuilder(compression=CompressionType.ZSTD)
    batch.append(time.time_ns() // 1_000_000, b"k", b"v")

    def produce_at(version: int) -> object:
        response = request_at(client, 0, version, {
            "acks": -1, "timeout_ms": 10000,
            "topic_data": [{"name": "zstd-produce", "partition_data": [
                {"index": 0, "records": bytes(batch.build())}]}],
        })
        [partition] = response.responses[0].partition_responses
        return partition

    with WireClient.connect(broker.bootstrap) as client:
        refused = produce_at(6)
        assert refused.error_code == UNSUPPORTED_COMPRESSION_TYPE
        assert produce_at(7).error_code == 0
        refused = produce_at(3)
        assert refused.error_code == UNSUPPORTED_COMPRESSION_TYPE


# -- per-record errors (KIP-467) -------------------------------------------------------------


def keyed_batch(keys: list[bytes | None], timestamps: list[int] | None = None) -> bytes:
    builder = RecordBatchBuilder(compression=CompressionType.GZIP)
    now = time.time_ns() // 1_000_000
    for i, key in enumerate(keys):
        builder.append(now if timestamps is None else timestamps[i], key, b"v")
    return bytes(builder.build())


def test_keyless_records_on_a_compacted_topic_are_listed_at_v8_and_later(broker):
    with WireClient.connect(broker.bootstrap) as client:
        create_topics(client, {"compacted": 1}, configs={"cleanup.policy": "compact"})
        wait_for_leaders(client, "compacted", 1)
        response = produce(client, "compacted", 0, keyed_batch([b"a", None, b"c", None]))
        assert response.error_code == INVALID_RECORD
        assert (response.base_offset, response.log_start_offset) == (-1, 0)
        why = NO_KEY.format("compacted-0")
        assert [(e.batch_index, e.batch_index_error_message) for e in response.record_errors] == [
            (1, why), (3, why)
        ]
        assert response.error_message == (
            "One or more records have been rejected due to 2 record errors in total, and only "
            f"showing the first three errors at most: [RecordError(batchIndex=1, message='{why}'"
            f"), RecordError(batchIndex=3, message='{why}')]"
        )
        # Produce v7 has neither field: the error code alone.
        old = request_at(client, 0, 7, {
            "acks": -1, "timeout_ms": 10000,
            "topic_data": [{"name": "compacted", "partition_data": [
                {"index": 0, "records": keyed_batch([None])}]}],
        })
        [partition] = old.responses[0].partition_responses
        assert partition.error_code == INVALID_RECORD and not hasattr(partition, "record_errors")
        assert produce(client, "compacted", 0, keyed_batch([b"a", b"b"])).error_code == 0


def test_timestamps_out_of_range_are_listed(broker):
    with WireClient.connect(broker.bootstrap) as client:
        create_topics(client, {"recent": 1},
                      configs={"message.timestamp.before.max.ms": "3600000"})
        wait_for_leaders(client, "recent", 1)
        now = time.time_ns() // 1_000_000
        # The first record's is out of range, so the header shows it (log_validator's screen).
        response = produce(client, "recent", 0, keyed_batch([b"a", b"b", b"c"], [5, now, 6]))
        assert response.error_code == INVALID_TIMESTAMP
        assert response.error_message == (
            "One or more records have been rejected due to invalid timestamp"
        )
        assert [e.batch_index for e in response.record_errors] == [0, 2]
        assert response.record_errors[1].batch_index_error_message.startswith(
            "Timestamp 6 of message with offset 2 is out of range. The timestamp should be "
            "within ["
        )


def test_confluent_kafka_sees_invalid_record_for_a_keyless_record(broker):
    create_topic(broker.bootstrap, "compacted-ck", config={"cleanup.policy": "compact"})
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "enable.idempotence": False}
    )
    reports: list[confluent_kafka.KafkaError | None] = []
    producer.produce("compacted-ck", b"no key", partition=0,
                     on_delivery=lambda err, _msg: reports.append(err))
    producer.produce("compacted-ck", b"keyed", key=b"k", partition=0,
                     on_delivery=lambda err, _msg: reports.append(err))
    assert producer.flush(30) == 0
    errors = [err.code() if err is not None else None for err in reports]
    assert confluent_kafka.KafkaError.INVALID_RECORD in errors
