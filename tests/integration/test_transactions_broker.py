"""The partition leader's side of transactions (KIP-98) against a real broker.

A raw-protocol "producer" (``tests.support.wire``) gets a producer id from InitProducerId
(no transactional id), sends batches with the isTransactional bit under a transactional id
(the broker runs with ``transaction.partition.verification.enable=false``: Kafka 3.9 without
KIP-890 verification appends them; ``test_txn_verification.py`` has the verified path), and
ends each transaction with
WriteTxnMarkers v1, as a transaction coordinator would. Real consumers then read:
confluent-kafka at ``isolation.level`` read_committed / read_uncommitted and kcat with
``-X isolation.level=read_committed``. ListOffsets and DescribeProducers are asked on the
wire. The error paths of WriteTxnMarkers and transactional Produce need no transaction.
"""

from __future__ import annotations

import datetime
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka
import pytest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest

from franz.protocol.records import RecordBatchBuilder
from tests.support import wire
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
WRITE_TXN_MARKERS = 27
DESCRIBE_PRODUCERS = 61
LIST_OFFSETS = 2


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data_dir: Path = tmp_path_factory.mktemp("txn-broker")
    proc = BrokerProcess(
        data_dir, overrides={"transaction.partition.verification.enable": "false"}
    ).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


@pytest.fixture
def client(shared_broker: BrokerProcess) -> Iterator[wire.WireClient]:
    with wire.WireClient.connect(shared_broker.bootstrap) as connection:
        yield connection


def _producer_id(client: wire.WireClient) -> tuple[int, int]:
    response = client.request(
        InitProducerIdRequest(
            transactional_id=None, transaction_timeout=datetime.timedelta(seconds=60)
        )
    )
    assert response.error_code == NONE, response
    return int(response.producer_id), int(response.producer_epoch)


def _txn_batch(producer_id: int, epoch: int, base_sequence: int, values: list[bytes]) -> bytes:
    builder = RecordBatchBuilder(
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=base_sequence,
        is_transactional=True,
    )
    now = int(time.time() * 1000)
    for value in values:
        builder.append(now, None, value)
    return bytes(builder.build())


def _produce(
    client: wire.WireClient, topic: str, records: bytes, transactional_id: str | None
) -> object:
    request = wire.produce_request({(topic, 0): records})
    request = type(request)(
        transactional_id=transactional_id,
        acks=request.acks,
        timeout=request.timeout,
        topic_data=request.topic_data,
    )
    response = client.request(request)
    [topic_response] = response.responses
    [partition] = topic_response.partition_responses
    return partition


def _markers(
    client: wire.WireClient,
    producer_id: int,
    epoch: int,
    commit: bool,
    partitions: dict[str, list[int]],
    *,
    version: int = 1,
) -> dict[tuple[str, int], int]:
    """WriteTxnMarkers with one marker (coordinator epoch 0); the error per partition. v1 with
    kio's classes, v0 (kio has none) written and read by hand: the same fields, not
    flexible."""
    if version == 0:
        return _markers_v0(client, producer_id, epoch, commit, partitions)
    response = wire.request_at(
        client,
        WRITE_TXN_MARKERS,
        version,
        {
            "markers": [
                {
                    "producer_id": producer_id,
                    "producer_epoch": epoch,
                    "transaction_result": commit,
                    "coordinator_epoch": 0,
                    "topics": [
                        {"name": name, "partition_indexes": indexes}
                        for name, indexes in partitions.items()
                    ],
                }
            ]
        },
    )
    [marker] = response.markers
    assert marker.producer_id == producer_id, response
    return {
        (t.name, p.partition_index): int(p.error_code) for t in marker.topics for p in t.partitions
    }


def _markers_v0(
    client: wire.WireClient,
    producer_id: int,
    epoch: int,
    commit: bool,
    partitions: dict[str, list[int]],
) -> dict[tuple[str, int], int]:
    body = struct.pack(">iqhbi", 1, producer_id, epoch, int(commit), len(partitions))
    for name, indexes in partitions.items():
        encoded = name.encode()
        body += struct.pack(">h", len(encoded)) + encoded + struct.pack(">i", len(indexes))
        body += b"".join(struct.pack(">i", index) for index in indexes)
    body += struct.pack(">i", 0)  # coordinator epoch
    correlation_id = client.next_correlation_id()
    client.send_frame(wire.encode_header(WRITE_TXN_MARKERS, 0, correlation_id) + body)
    answer = client.recv_frame(30)
    position = 0

    def take(fmt: str) -> int:
        nonlocal position
        (value,) = struct.unpack_from(fmt, answer, position)
        position += struct.calcsize(fmt)
        return int(value)

    assert take(">i") == correlation_id  # response header v0
    assert take(">i") == 1
    assert take(">q") == producer_id
    errors = {}
    for _ in range(take(">i")):
        size = take(">h")
        name = answer[position : position + size].decode()
        position += size
        for _ in range(take(">i")):
            index = take(">i")
            errors[(name, index)] = take(">h")
    assert position == len(answer)
    return errors


def _list_offset(client: wire.WireClient, topic: str, isolation_level: int) -> int:
    response = wire.request_at(
        client,
        LIST_OFFSETS,
        7,
        {
            "replica_id": -1,
            "isolation_level": isolation_level,
            "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}],
        },
    )
    [partition] = response.topics[0].partitions
    assert partition.error_code == NONE, response
    return int(partition.offset)


def _consume(bootstrap: str, topic: str, isolation: str, expected: int) -> list[bytes]:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{topic}-{isolation}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    values: list[bytes] = []
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            values.append(message.value())
        # Nothing more arrives (an aborted record would come after the committed ones).
        extra = consumer.poll(2.0)
        if extra is not None and extra.error() is None:
            values.append(extra.value())
    finally:
        consumer.close()
    return values


# -- ApiVersions, error paths ---------------------------------------------------------------


def test_write_txn_markers_and_describe_producers_are_advertised_as_kafka_3_9(client):
    advertised = wire.api_versions(client)
    assert advertised[WRITE_TXN_MARKERS] == (0, 1)
    assert advertised[DESCRIBE_PRODUCERS] == (0, 0)


@pytest.mark.parametrize("version", [0, 1])
def test_write_txn_markers_for_unknown_partitions(shared_broker, client, version):
    topic = f"markers-unknown-v{version}"
    create_topic(shared_broker.bootstrap, topic, 1)
    errors = _markers(client, 1000, 0, True, {topic: [0, 5], "never-created": [0]}, version=version)
    assert errors == {
        (topic, 0): NONE,  # a marker of a producer this partition never saw is appended
        (topic, 5): UNKNOWN_TOPIC_OR_PARTITION,
        ("never-created", 0): UNKNOWN_TOPIC_OR_PARTITION,
    }


def test_transactional_batches_without_a_transactional_id_are_refused(shared_broker, client):
    topic = "txn-no-id"
    create_topic(shared_broker.bootstrap, topic, 1)
    producer_id, epoch = _producer_id(client)
    answer = _produce(client, topic, _txn_batch(producer_id, epoch, 0, [b"x"]), None)
    assert answer.error_code == TRANSACTIONAL_ID_AUTHORIZATION_FAILED, answer
    assert wire.list_offsets(client, topic, 0, wire.LATEST_TIMESTAMP).offset == 0


def test_describe_producers_of_an_idempotent_producer(shared_broker, client):
    topic = "describe-producers"
    create_topic(shared_broker.bootstrap, topic, 1)
    producer_id, epoch = _producer_id(client)
    builder = RecordBatchBuilder(producer_id=producer_id, producer_epoch=epoch, base_sequence=0)
    now = int(time.time() * 1000)
    for i in range(3):
        builder.append(now, None, b"v%d" % i)
    assert wire.produce(client, topic, 0, bytes(builder.build())).error_code == NONE
    response = wire.request_at(
        client,
        DESCRIBE_PRODUCERS,
        0,
        {
            "topics": [
                {"name": topic, "partition_indexes": [0, 3]},
                {"name": "nope", "partition_indexes": [0]},
            ]
        },
    )
    by_partition = {(t.name, p.partition_index): p for t in response.topics for p in t.partitions}
    assert by_partition[(topic, 3)].error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert by_partition[("nope", 0)].error_code == UNKNOWN_TOPIC_OR_PARTITION
    found = by_partition[(topic, 0)]
    assert found.error_code == NONE, found
    [state] = found.active_producers
    assert (state.producer_id, state.producer_epoch, state.last_sequence) == (producer_id, epoch, 2)
    assert state.last_timestamp == now
    assert (state.coordinator_epoch, state.current_txn_start_offset) == (-1, -1)


# -- transactions end to end ----------------------------------------------------------------


def test_committed_records_are_visible_and_aborted_ones_hidden(shared_broker, client):
    topic = "txn-visibility"
    create_topic(shared_broker.bootstrap, topic, 1)
    producer_id, epoch = _producer_id(client)
    first = _txn_batch(producer_id, epoch, 0, [b"c0", b"c1"])
    assert _produce(client, topic, first, "tx-1").error_code == NONE
    # Open: read_committed stops at the transaction's first offset (the LSO).
    assert _list_offset(client, topic, 1) == 0
    assert _list_offset(client, topic, 0) == 2
    open_data = wire.fetch(client, topic, 0, 0)
    assert open_data.last_stable_offset == 0 and open_data.high_watermark == 2, open_data
    assert _markers(client, producer_id, epoch, True, {topic: [0]}) == {(topic, 0): NONE}
    assert _list_offset(client, topic, 1) == 3  # two records and the COMMIT marker

    second = _txn_batch(producer_id, epoch, 2, [b"a0", b"a1"])
    assert _produce(client, topic, second, "tx-1").error_code == NONE
    assert _markers(client, producer_id, epoch, False, {topic: [0]}) == {(topic, 0): NONE}
    third = _txn_batch(producer_id, epoch, 4, [b"c2"])
    assert _produce(client, topic, third, "tx-1").error_code == NONE
    assert _markers(client, producer_id, epoch, True, {topic: [0]}) == {(topic, 0): NONE}
    assert _list_offset(client, topic, 1) == _list_offset(client, topic, 0) == 8

    committed = _consume(shared_broker.bootstrap, topic, "read_committed", 3)
    assert committed == [b"c0", b"c1", b"c2"]
    everything = _consume(shared_broker.bootstrap, topic, "read_uncommitted", 5)
    assert everything == [b"c0", b"c1", b"a0", b"a1", b"c2"]
    kcat = subprocess.run(
        [
            "kcat",
            "-C",
            "-b",
            shared_broker.bootstrap,
            "-t",
            topic,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "%s\\n",
            "-X",
            "isolation.level=read_committed",
        ],
        capture_output=True,
        timeout=60,
        check=True,
        text=True,
    )
    assert kcat.stdout.split() == ["c0", "c1", "c2"], kcat


def test_read_committed_consumer_waits_for_the_marker(shared_broker, client):
    topic = "txn-blocked"
    create_topic(shared_broker.bootstrap, topic, 1)
    producer_id, epoch = _producer_id(client)
    assert (
        _produce(client, topic, _txn_batch(producer_id, epoch, 0, [b"t0"]), "tx-2").error_code
        == NONE
    )
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": shared_broker.bootstrap,
            "group.id": "g-blocked",
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            assert message is None or message.error() is not None, message.value()
        assert _markers(client, producer_id, epoch, True, {topic: [0]}) == {(topic, 0): NONE}
        got = None
        deadline = time.monotonic() + 30
        while got is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got = message.value()
        assert got == b"t0"
    finally:
        consumer.close()
    described = wire.request_at(
        client, DESCRIBE_PRODUCERS, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]}
    )
    [state] = described.topics[0].partitions[0].active_producers
    assert (state.producer_id, state.current_txn_start_offset) == (producer_id, -1)
