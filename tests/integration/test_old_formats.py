"""Pre-0.11 clients (message formats v0/v1, Produce v0-2, Fetch v0-3) against a real broker.

Clients that do not send ApiVersions use the protocol of the broker release they are told:
librdkafka (confluent-kafka, kcat) with ``api.version.request=false`` and
``broker.version.fallback`` 0.9.0 sends Metadata v0, Produce v1 and Fetch v1 with message
format v0, ListOffsets v0, FindCoordinator v0, OffsetCommit v2 and OffsetFetch v1; with 0.8.2,
Produce v0, Fetch v0 and OffsetCommit v1 (rdkafka_feature.c). (A fallback of 0.10.0 or above
turns ApiVersions back on, so librdkafka never sends message format v1 to a broker that
advertises v2.) kafka-python with ``api_version`` (0, 10, 0) sends Produce v2 / Fetch v2
with message format v1 (timestamps), (0, 9) and (0, 8, 2) Produce/Fetch v1/v0 with v0.

Kafka 3.9 serves all of them: it up-converts message sets to v2 batches on produce and
down-converts v2 batches to the requested magic on fetch (headers dropped, as magic < 2 has
none). So must Franz: every client round-trips keys and values (and magic 1 timestamps) for
every codec it can use there, and old and new clients read each other's records. The old
admin versions (CreateTopics v0-1, DeleteTopics v0, DescribeConfigs v0, DescribeLogDirs v0)
are answered too, in their own bodies, checked with kafka-python's codec for each version.

librdkafka parses Metadata v0 into a buffer sized from the response (4x its wire size): with a
one-character topic name it fails with "tmpabuf memory shortage" against any broker, Kafka
included. The topic names here are long enough.
"""

from __future__ import annotations

import importlib
import json
import logging
import struct
import time
import zlib
from collections.abc import Iterator
from typing import Any

import confluent_kafka as ck
import kafka
import pytest
from kafka.protocol.admin import (
    CreateTopicsRequest,
    DeleteTopicsRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
)
from kafka.protocol.consumer import ListOffsetsRequest, OffsetCommitRequest, OffsetFetchRequest

from franz.errors import ErrorCode
from franz.protocol.records.batch import TimestampType
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic, run_kcat, stored_batches
from tests.support.wire import WireClient, encode_header

CODECS = ["none", "gzip", "snappy", "lz4"]
RECORDS = 20
BASE_TS = 1_700_000_000_000


@pytest.fixture(autouse=True)
def _kafka_python_debug_log(caplog: pytest.LogCaptureFixture) -> None:
    """kafka-python's DEBUG log, shown only when a test fails: an old-protocol consumer that
    got nothing in CI (three times across runs, never reproduced here) leaves its trail."""
    caplog.set_level(logging.DEBUG, logger="kafka")


@pytest.fixture(scope="module")
def old_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("old-formats"))
    proc.start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


#: kafka-python's iteration ends after this long without a record: generous, as a loaded CI
#: machine can take seconds for the old-protocol consumer's metadata and first fetch.
OLD_CONSUMER_TIMEOUT_MS = 20000


def read_records(consumer: kafka.KafkaConsumer, count: int) -> list[Any]:
    """The first ``count`` records (fewer if none comes for ``consumer_timeout_ms``), then
    one more short poll, whose records are appended: the caller's comparison sees any extra."""
    got: list[Any] = []
    for message in consumer:
        got.append(message)
        if len(got) == count:
            for batch in consumer.poll(timeout_ms=1000).values():
                got.extend(batch)
            break
    return got


def records(tag: str) -> list[tuple[bytes | None, bytes]]:
    return [
        (None if i % 5 == 0 else f"{tag}-key-{i}".encode(), f"{tag}-value-{i}".encode() * (i % 4))
        for i in range(RECORDS)
    ]


def fallback_conf(bootstrap: str, fallback: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "api.version.request": False,
        "broker.version.fallback": fallback,
    }


def confluent_produce(
    conf: dict[str, Any], topic: str, data: list[tuple[bytes | None, bytes]], codec: str
) -> list[int]:
    producer = ck.Producer({**conf, "compression.type": codec, "linger.ms": 50})
    results: list[Any] = []
    for i, (key, value) in enumerate(data):
        producer.produce(
            topic,
            key=key,
            value=value,
            timestamp=BASE_TS + i,
            on_delivery=lambda err, msg: results.append((err, msg.offset())),
        )
    assert producer.flush(30) == 0
    assert all(err is None for err, _ in results), results
    return sorted(offset for _, offset in results)


def confluent_consume(
    conf: dict[str, Any], topic: str, count: int, group: str | None = None
) -> list[Any]:
    consumer = ck.Consumer(
        {
            **conf,
            "group.id": group or f"reader-{topic}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([ck.TopicPartition(topic, 0, ck.OFFSET_BEGINNING)])
    got: list[Any] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            got.append(
                (
                    message.offset(),
                    message.key(),
                    message.value(),
                    message.timestamp(),
                    message.headers(),
                )
            )
        if group:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("fallback", ["0.9.0", "0.8.2"])
def test_confluent_kafka_without_api_versions_round_trips(
    old_broker: BrokerProcess, fallback: str, codec: str
) -> None:
    topic = f"confluent-fallback-{fallback}-{codec}"
    create_topic(old_broker.bootstrap, topic)
    data = records(topic)
    conf = fallback_conf(old_broker.bootstrap, fallback)
    assert confluent_produce(conf, topic, data, codec) == list(range(RECORDS))
    batches = stored_batches(old_broker, topic, 0)
    assert all(b.magic == 2 for b in batches)
    if codec != "none":
        assert {b.compression_type.config_name for b in batches} == {codec}
    got = confluent_consume(conf, topic, RECORDS, group=f"g-{topic}")
    assert [(o, k, v) for o, k, v, _, _ in got] == [(i, k, v) for i, (k, v) in enumerate(data)]
    # Message format v0 has no timestamps.
    assert {ts[0] for _, _, _, ts, _ in got} == {ck.TIMESTAMP_NOT_AVAILABLE}
    # The commit went through OffsetCommit v2 (0.9.0) or v1 (0.8.2), and reads back.
    reader = ck.Consumer({**conf, "group.id": f"g-{topic}"})
    try:
        [committed] = reader.committed([ck.TopicPartition(topic, 0)], timeout=15)
    finally:
        reader.close()
    assert committed.offset == RECORDS and committed.error is None


@pytest.mark.parametrize(("api_version", "magic"), [((0, 10, 0), 1), ((0, 9), 0), ((0, 8, 2), 0)])
def test_kafka_python_old_api_versions_round_trip(
    old_broker: BrokerProcess, api_version: tuple[int, ...], magic: int
) -> None:
    topic = "kafka-python-" + "-".join(map(str, api_version))
    create_topic(old_broker.bootstrap, topic)
    data = records(topic)
    producer = kafka.KafkaProducer(bootstrap_servers=old_broker.bootstrap, api_version=api_version)
    try:
        futures = [
            producer.send(topic, key=k, value=v, timestamp_ms=BASE_TS + i)
            for i, (k, v) in enumerate(data)
        ]
        producer.flush(30)
        assert [f.get(10).offset for f in futures] == list(range(RECORDS))
    finally:
        producer.close()
    consumer = kafka.KafkaConsumer(
        topic,
        bootstrap_servers=old_broker.bootstrap,
        api_version=api_version,
        auto_offset_reset="earliest",
        consumer_timeout_ms=OLD_CONSUMER_TIMEOUT_MS,
    )
    try:
        got = [(m.offset, m.key, m.value, m.timestamp) for m in read_records(consumer, RECORDS)]
    finally:
        consumer.close()
    expected_ts = [BASE_TS + i if magic else None for i in range(RECORDS)]
    assert got == [
        (i, k, v, ts) for i, ((k, v), ts) in enumerate(zip(data, expected_ts, strict=True))
    ]
    stored = stored_batches(old_broker, topic, 0)
    timestamps = [b.max_timestamp for b in stored]
    assert timestamps and all(ts >= BASE_TS if magic else ts == -1 for ts in timestamps)


def test_kcat_without_api_versions_round_trips(old_broker: BrokerProcess) -> None:
    topic = "kcat-fallback-0.9.0"
    create_topic(old_broker.bootstrap, topic)
    lines = [f"line-{i}" for i in range(RECORDS)]
    flags = ["-X", "api.version.request=false", "-X", "broker.version.fallback=0.9.0"]
    produced = run_kcat(
        ["-P", "-b", old_broker.bootstrap, "-t", topic, "-K", ":", "-z", "gzip", *flags],
        stdin="".join(f"k{i}:{line}\n" for i, line in enumerate(lines)).encode(),
    )
    assert produced.returncode == 0, produced.stderr.decode(errors="replace")
    consumed = run_kcat(
        ["-C", "-b", old_broker.bootstrap, "-t", topic, "-o", "beginning", "-e", "-J", *flags]
    )
    assert consumed.returncode == 0, consumed.stderr.decode(errors="replace")
    got = [json.loads(line) for line in consumed.stdout.decode().splitlines() if line.strip()]
    assert [(m["offset"], m["key"], m["payload"]) for m in got] == [
        (i, f"k{i}", line) for i, line in enumerate(lines)
    ]


def test_modern_records_read_by_old_clients_lose_only_headers(old_broker: BrokerProcess) -> None:
    topic = "modern-to-old"
    create_topic(old_broker.bootstrap, topic)
    data = records(topic)
    producer = ck.Producer({"bootstrap.servers": old_broker.bootstrap, "compression.type": "lz4"})
    for i, (key, value) in enumerate(data):
        producer.produce(topic, key=key, value=value, timestamp=BASE_TS + i, headers=[("h", b"x")])
    assert producer.flush(30) == 0
    # Magic 1 (Fetch v2, kafka-python (0, 10, 0)): timestamps kept, headers dropped.
    consumer = kafka.KafkaConsumer(
        topic,
        bootstrap_servers=old_broker.bootstrap,
        api_version=(0, 10, 0),
        auto_offset_reset="earliest",
        consumer_timeout_ms=OLD_CONSUMER_TIMEOUT_MS,
    )
    try:
        got = [
            (m.offset, m.key, m.value, m.timestamp, list(m.headers or []))
            for m in read_records(consumer, RECORDS)
        ]
    finally:
        consumer.close()
    assert got == [(i, k, v, BASE_TS + i, []) for i, (k, v) in enumerate(data)]
    # Magic 0 (Fetch v1, librdkafka 0.9.0 fallback): no timestamps, no headers.
    old = confluent_consume(fallback_conf(old_broker.bootstrap, "0.9.0"), topic, RECORDS)
    assert [(o, k, v, h) for o, k, v, _, h in old] == [
        (i, k, v, None) for i, (k, v) in enumerate(data)
    ]


def test_old_records_read_by_modern_clients(old_broker: BrokerProcess) -> None:
    topic = "old-to-modern"
    create_topic(old_broker.bootstrap, topic)
    data = records(topic)
    producer = kafka.KafkaProducer(
        bootstrap_servers=old_broker.bootstrap, api_version=(0, 10, 0), compression_type="gzip"
    )
    try:
        for i, (k, v) in enumerate(data):
            producer.send(topic, key=k, value=v, timestamp_ms=BASE_TS + i)
        producer.flush(30)
    finally:
        producer.close()
    got = confluent_consume({"bootstrap.servers": old_broker.bootstrap}, topic, RECORDS)
    assert [(o, k, v, ts) for o, k, v, ts, _ in got] == [
        (i, k, v, (ck.TIMESTAMP_CREATE_TIME, BASE_TS + i)) for i, (k, v) in enumerate(data)
    ]
    [batch] = stored_batches(old_broker, topic, 0)
    assert batch.timestamp_type == TimestampType.CREATE_TIME
    assert batch.compression_type.config_name == "gzip"


# -- the wire: errors the way Kafka 3.9 answers them -------------------------------------------


def _string(value: str) -> bytes:
    return struct.pack(">h", len(value)) + value.encode()


def _message(key: bytes, value: bytes, timestamp: int) -> bytes:
    body = struct.pack(">bbq", 1, 0, timestamp)
    body += struct.pack(">i", len(key)) + key + struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", 0, len(message)) + message


def _produce_v2(client: WireClient, topic: str, message_set: bytes) -> tuple[int, int]:
    body = (
        struct.pack(">hi", -1, 5000)
        + struct.pack(">i", 1)
        + _string(topic)
        + struct.pack(">ii", 1, 0)
        + struct.pack(">i", len(message_set))
        + message_set
    )
    client.send_frame(encode_header(0, 2, 9) + body)
    payload = client.recv_frame()
    correlation_id, topics = struct.unpack_from(">ii", payload)
    assert correlation_id == 9 and topics == 1, payload.hex()
    pos = 8 + 2 + len(topic)
    (partitions, _index, error, base_offset) = struct.unpack_from(">iihq", payload, pos)
    assert partitions == 1
    return error, base_offset


def test_wrong_crc_is_corrupt_message_and_nothing_is_stored(old_broker: BrokerProcess) -> None:
    topic = "old-format-crc"
    create_topic(old_broker.bootstrap, topic)
    good = _message(b"k", b"v", int(time.time() * 1000))
    bad = bytearray(good)
    bad[-1] ^= 0xFF
    with WireClient.connect(old_broker.bootstrap) as client:
        assert _produce_v2(client, topic, bytes(bad)) == (ErrorCode.CORRUPT_MESSAGE, -1)
        assert _produce_v2(client, topic, good) == (ErrorCode.NONE, 0)
    assert sum(b.records_count for b in stored_batches(old_broker, topic, 0)) == 1


def test_zstd_batches_are_unsupported_compression_type_for_fetch_v3(
    old_broker: BrokerProcess,
) -> None:
    topic = "old-format-zstd"
    create_topic(old_broker.bootstrap, topic)
    producer = ck.Producer({"bootstrap.servers": old_broker.bootstrap, "compression.type": "zstd"})
    producer.produce(topic, value=b"z" * 100)
    assert producer.flush(30) == 0
    body = struct.pack(">iiii", -1, 100, 1, 1 << 20) + struct.pack(">i", 1) + _string(topic)
    body += struct.pack(">iiqi", 1, 0, 0, 1 << 20)
    with WireClient.connect(old_broker.bootstrap) as client:
        client.send_frame(encode_header(1, 3, 4) + body)
        payload = client.recv_frame()
    pos = 4 + 4 + 4 + 2 + len(topic) + 4  # correlation, throttle, topics, name, partitions
    _index, error, _hw = struct.unpack_from(">ihq", payload, pos)
    assert error == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


# -- the other old versions: every advertised version is answered ------------------------------


def _kafka_python_exchange(bootstrap: str, request: Any, version: int) -> Any:
    """Send kafka-python's encoding of ``request`` at ``version`` and decode the answer with
    kafka-python's response class for that version (the header is v0: none is flexible)."""
    with WireClient.connect(bootstrap) as client:
        client.send_frame(
            encode_header(request.API_KEY, version, 77) + bytes(request.encode(version=version))
        )
        payload = client.recv_frame()
    (correlation_id,) = struct.unpack_from(">i", payload)
    assert correlation_id == 77
    response_class = kafka_response_class(request)
    return response_class.decode(payload[4:], version=version)


def kafka_response_class(request: Any) -> Any:
    module = importlib.import_module(type(request).__module__)
    return getattr(module, type(request).__name__.replace("Request", "Response"))


@pytest.mark.parametrize("version", [0, 1])
def test_create_topics_v0_v1_and_delete_topics_v0(old_broker: BrokerProcess, version: int) -> None:
    topic = f"created-by-v{version}"
    request = CreateTopicsRequest(
        topics=[
            CreateTopicsRequest.CreatableTopic(
                name=topic, num_partitions=2, replication_factor=1, assignments=[], configs=[]
            )
        ],
        timeout_ms=10_000,
        validate_only=False,
    )
    response = _kafka_python_exchange(old_broker.bootstrap, request, version)
    assert [(t.name, t.error_code) for t in response.topics] == [(topic, 0)]
    again = _kafka_python_exchange(old_broker.bootstrap, request, version)
    assert [(t.name, t.error_code) for t in again.topics] == [
        (topic, ErrorCode.TOPIC_ALREADY_EXISTS)
    ]
    deleted = _kafka_python_exchange(
        old_broker.bootstrap, DeleteTopicsRequest(topic_names=[topic], timeout_ms=10_000), 0
    )
    assert [(r.name, r.error_code) for r in deleted.responses] == [(topic, 0)]


def test_describe_configs_v0_and_describe_log_dirs_v0(old_broker: BrokerProcess) -> None:
    topic = "described-by-v0"
    create_topic(old_broker.bootstrap, topic, config={"retention.ms": "12345"})
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsRequest.DescribeConfigsResource(
                resource_type=2, resource_name=topic, configuration_keys=None
            )
        ]
    )
    response = _kafka_python_exchange(old_broker.bootstrap, request, 0)
    [result] = response.results
    assert (result.error_code, result.resource_name) == (0, topic)
    configs = {c.name: c for c in result.configs}
    assert configs["retention.ms"].value == "12345" and not configs["retention.ms"].is_default
    assert configs["cleanup.policy"].is_default
    dirs = _kafka_python_exchange(old_broker.bootstrap, DescribeLogDirsRequest(topics=None), 0)
    [log_dir] = dirs.results
    assert log_dir.error_code == 0
    assert topic in {t.name for t in log_dir.topics}


def test_log_append_time_topic_gives_old_clients_the_append_time(old_broker: BrokerProcess) -> None:
    topic = "old-format-append-time"
    create_topic(old_broker.bootstrap, topic, config={"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    # linger.ms: the three records go in one batch (flush sends it at once); with kafka-python's
    # default 0, a loaded machine's sender thread may send the first record on its own.
    producer = kafka.KafkaProducer(
        bootstrap_servers=old_broker.bootstrap, api_version=(0, 10, 0), linger_ms=1000
    )
    try:
        for i in range(3):
            producer.send(topic, value=b"v%d" % i, timestamp_ms=BASE_TS + i)
        producer.flush(30)
    finally:
        producer.close()
    consumer = kafka.KafkaConsumer(
        topic,
        bootstrap_servers=old_broker.bootstrap,
        api_version=(0, 10, 0),
        auto_offset_reset="earliest",
        consumer_timeout_ms=OLD_CONSUMER_TIMEOUT_MS,
    )
    try:
        got = [(m.timestamp, m.timestamp_type) for m in read_records(consumer, 3)]
    finally:
        consumer.close()
    [batch] = stored_batches(old_broker, topic, 0)
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp >= before
    assert got == [(batch.max_timestamp, TimestampType.LOG_APPEND_TIME)] * 3


def test_list_offsets_v0_answers_old_style_offsets(old_broker: BrokerProcess) -> None:
    topic = "old-format-offsets"
    create_topic(old_broker.bootstrap, topic)
    producer = ck.Producer({"bootstrap.servers": old_broker.bootstrap})
    for i in range(5):
        producer.produce(topic, value=b"%d" % i)
    assert producer.flush(30) == 0

    def offsets(timestamp: int, max_num: int) -> tuple[int, list[int]]:
        partition = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=0, timestamp=timestamp, max_num_offsets=max_num
        )
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[ListOffsetsRequest.ListOffsetsTopic(name=topic, partitions=[partition])],
        )
        response = _kafka_python_exchange(old_broker.bootstrap, request, 0)
        [p] = response.topics[0].partitions
        return p.error_code, list(p.old_style_offsets)

    # Kafka's legacyFetchOffsetsBefore: the log end (capped at the HW for consumers), then
    # the base offsets of the segments, newest first.
    assert offsets(-1, 1) == (0, [5])
    assert offsets(-1, 10) == (0, [5, 0])
    assert offsets(-2, 10) == (0, [0])
    assert offsets(0, 10) == (0, [])


@pytest.mark.parametrize("version", [0, 1])
def test_offset_commit_v0_v1_read_back_by_offset_fetch_v0(
    old_broker: BrokerProcess, version: int
) -> None:
    topic = f"old-format-commit-v{version}"
    group = f"old-group-v{version}"
    create_topic(old_broker.bootstrap, topic)
    partition = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
        partition_index=0, committed_offset=42, commit_timestamp=-1, committed_metadata="meta"
    )
    commit = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[OffsetCommitRequest.OffsetCommitRequestTopic(name=topic, partitions=[partition])],
    )
    committed = _kafka_python_exchange(old_broker.bootstrap, commit, version)
    assert [(p.partition_index, p.error_code) for p in committed.topics[0].partitions] == [(0, 0)]
    fetch = OffsetFetchRequest(
        group_id=group,
        topics=[OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=[0])],
    )
    fetched = _kafka_python_exchange(old_broker.bootstrap, fetch, 0)
    [p] = fetched.topics[0].partitions
    assert (p.partition_index, p.committed_offset, p.metadata, p.error_code) == (0, 42, "meta", 0)
