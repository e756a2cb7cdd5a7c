"""Fetch and ListOffsets semantics against a real Franz broker, seen by real clients.

- A fetch at an offset inside a batch: the broker answers from the start of the batch holding
  that offset (it serves stored batches whole, as Kafka does) and the client skips the records
  before the offset it asked for. Checked on the wire (first batch's base offset <= the fetch
  offset <= its last offset) and with every client (records from exactly that offset on).
- ListOffsets by timestamp returns the first offset whose record timestamp is >= the target,
  to the record, also inside a batch (confluent-kafka, kafka-python and aiokafka
  ``offsets_for_times``); none after the last timestamp. Earliest (-2), latest (-1) and
  max timestamp (-3, KIP-734: the first record holding the largest timestamp) are right.
- Long polling: a Fetch with ``max.wait.ms`` parked on an empty partition is answered as soon as
  a record is appended, not when the wait expires. On the wire (an empty fetch waits its
  ``max_wait_ms``; a parked one returns right after a produce), and end to end with
  confluent-kafka (``fetch.wait.max.ms=5000``) and aiokafka (``fetch_max_wait_ms=5000``): over
  20 trials, produce acknowledgement to delivery has median < 50 ms and max < 200 ms.
"""

from __future__ import annotations

import asyncio
import statistics
import threading
import time
import warnings

import aiokafka
import confluent_kafka
import pytest
from aiokafka.structs import TopicPartition as AiokafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from kio.index import load_response_from_request

from franz.protocol.records import build_batch, iter_batches
from tests.support import wire
from tests.support.clients import CLIENTS, consume_with, create_topic

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka
    from kafka.structs import TopicPartition as KafkaPythonTopicPartition

NONE = 0
BATCHES = 3
BATCH_SIZE = 10
TRIALS = 20


def _produce_batches(bootstrap: str, topic: str, partition: int, batches: list[list[int]]) -> None:
    """One wire Produce per batch; ``batches`` lists each batch's record timestamps."""
    offset = 0
    with wire.WireClient.connect(bootstrap) as client:
        for timestamps in batches:
            records = [(ts, b"k", b"record %d" % (offset + i)) for i, ts in enumerate(timestamps)]
            answer = wire.produce(client, topic, partition, bytes(build_batch(records)))
            assert (answer.error_code, answer.base_offset) == (NONE, offset), answer
            offset += len(timestamps)


@pytest.fixture
def batched_topic(broker):
    """Topic ``batched``, 1 partition: 3 batches of 10 records (offsets 0-9, 10-19, 20-29)."""
    create_topic(broker.bootstrap, "batched", 1)
    now = int(time.time() * 1000)
    _produce_batches(
        broker.bootstrap,
        "batched",
        0,
        [[now] * BATCH_SIZE for _ in range(BATCHES)],
    )
    return "batched"


@pytest.mark.parametrize("offset", [5, 10, 15, 29])
def test_wire_fetch_inside_a_batch_starts_at_that_batch(broker, batched_topic, offset):
    with wire.WireClient.connect(broker.bootstrap) as client:
        data = wire.fetch(client, batched_topic, 0, offset)
    assert data.error_code == NONE, data
    assert data.high_watermark == BATCHES * BATCH_SIZE, data
    batches = list(iter_batches(data.records or b""))
    assert batches, f"Fetch at {offset} returned no batches: {data}"
    first = batches[0]
    assert first.base_offset <= offset <= first.last_offset, (
        f"Fetch at {offset}: first batch covers {first.base_offset}-{first.last_offset}"
    )
    assert first.base_offset == offset - offset % BATCH_SIZE
    assert batches[-1].last_offset == BATCHES * BATCH_SIZE - 1


@pytest.mark.parametrize("client", CLIENTS)
def test_client_consuming_from_inside_a_batch_starts_at_that_offset(broker, batched_topic, client):
    got = consume_with(client, broker.bootstrap, batched_topic, {0: 5}, 25, timeout=30)
    assert [(r.offset, r.value) for r in got] == [(o, b"record %d" % o) for o in range(5, 30)]


# -- ListOffsets ------------------------------------------------------------------------------

#: Record i has timestamp BASE + 100 * i; batches of 4 records (offsets 0-3, 4-7, ...).
TIMESTAMP_STEP = 100
TIMED_RECORDS = 20


@pytest.fixture
def timed_topic(broker):
    """Topic ``timed``: partition 0 with increasing timestamps in batches of 4; partition 1
    with its largest timestamp in the middle of a batch (offsets 0-2: +10, +50, +30; 3-4:
    +40, +20)."""
    create_topic(broker.bootstrap, "timed", 2)
    base = int(time.time() * 1000) - 60_000
    stamps = [base + TIMESTAMP_STEP * i for i in range(TIMED_RECORDS)]
    _produce_batches(broker.bootstrap, "timed", 0, [stamps[i : i + 4] for i in range(0, 20, 4)])
    _produce_batches(
        broker.bootstrap, "timed", 1, [[base + 10, base + 50, base + 30], [base + 40, base + 20]]
    )
    return base


def _timestamp_queries(base: int) -> list[tuple[int, int | None]]:
    """(target timestamp, expected offset or None for "no such record")."""
    return [
        (base - 10_000, 0),
        (base, 0),
        (base + 1, 1),
        (base + 100, 1),
        (base + 450, 5),  # inside the second batch (offsets 4-7)
        (base + 699, 7),
        (base + 700, 7),
        (base + 701, 8),
        (base + 1900, 19),
        (base + 1901, None),
    ]


def test_confluent_kafka_offsets_for_times(broker, timed_topic):
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "franz-tests-unused"}
    )
    try:
        for target, expected in _timestamp_queries(timed_topic):
            [answer] = consumer.offsets_for_times(
                [confluent_kafka.TopicPartition("timed", 0, target)], timeout=10
            )
            assert answer.error is None, answer
            # librdkafka reports "no such record" as the end offset -1 (OFFSET_END).
            assert answer.offset == (-1 if expected is None else expected), (
                f"offsets_for_times({target - timed_topic:+d}) = {answer.offset}, "
                f"expected {expected}"
            )
    finally:
        consumer.close()


def test_kafka_python_offsets_for_times(broker, timed_topic):
    consumer = kafka.KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None)
    try:
        tp = KafkaPythonTopicPartition("timed", 0)
        for target, expected in _timestamp_queries(timed_topic):
            answer = consumer.offsets_for_times({tp: target})[tp]
            if expected is None:
                assert answer is None, f"offsets_for_times({target - timed_topic:+d}) = {answer}"
            else:
                assert answer is not None, f"offsets_for_times({target - timed_topic:+d}) = None"
                assert (answer.offset, answer.timestamp) == (
                    expected,
                    timed_topic + TIMESTAMP_STEP * expected,
                ), f"offsets_for_times({target - timed_topic:+d}) = {answer}"
        assert consumer.beginning_offsets([tp]) == {tp: 0}
        assert consumer.end_offsets([tp]) == {tp: TIMED_RECORDS}
    finally:
        consumer.close(autocommit=False)


def test_aiokafka_offsets_for_times(broker, timed_topic):
    async def run() -> None:
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None)
        await consumer.start()
        try:
            tp = AiokafkaTopicPartition("timed", 0)
            for target, expected in _timestamp_queries(timed_topic):
                answer = (await consumer.offsets_for_times({tp: target}))[tp]
                if expected is None:
                    assert answer is None, answer
                else:
                    assert answer is not None, f"offsets_for_times({target}) = None"
                    assert answer.offset == expected, answer
                    assert answer.timestamp == timed_topic + TIMESTAMP_STEP * expected
        finally:
            await consumer.stop()

    asyncio.run(asyncio.wait_for(run(), 60))


def test_earliest_latest_and_max_timestamp(broker, timed_topic):
    base = timed_topic
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    specs = {
        ("earliest", 0): (OffsetSpec.earliest(), 0),
        ("latest", 0): (OffsetSpec.latest(), TIMED_RECORDS),
        ("max", 0): (OffsetSpec.max_timestamp(), TIMED_RECORDS - 1),
        ("earliest", 1): (OffsetSpec.earliest(), 0),
        ("latest", 1): (OffsetSpec.latest(), 5),
        ("max", 1): (OffsetSpec.max_timestamp(), 1),
    }
    for (what, partition), (spec, expected) in specs.items():
        futures = admin.list_offsets({confluent_kafka.TopicPartition("timed", partition): spec})
        [future] = futures.values()
        info = future.result(timeout=10)
        assert info.offset == expected, f"{what} of partition {partition}: {info}"
        if what == "max":
            wanted = base + (TIMESTAMP_STEP * (TIMED_RECORDS - 1) if partition == 0 else 50)
            assert info.timestamp == wanted, f"max timestamp of partition {partition}: {info}"

    with wire.WireClient.connect(broker.bootstrap) as client:
        answer = wire.list_offsets(client, "timed", 1, -3)
        assert (answer.error_code, answer.offset, answer.timestamp) == (NONE, 1, base + 50)
        assert wire.list_offsets(client, "timed", 1, wire.EARLIEST_TIMESTAMP).offset == 0
        assert wire.list_offsets(client, "timed", 1, wire.LATEST_TIMESTAMP).offset == 5


# -- long polling -----------------------------------------------------------------------------


def test_wire_fetch_waits_max_wait_then_wakes_on_append(broker):
    create_topic(broker.bootstrap, "parked", 1)
    with wire.WireClient.connect(broker.bootstrap) as client:
        started = time.monotonic()
        empty = wire.fetch(client, "parked", 0, 0, max_wait_ms=500)
        waited = time.monotonic() - started
        assert empty.error_code == NONE and not empty.records, empty
        assert 0.45 <= waited < 2.0, f"an empty Fetch with max_wait_ms=500 took {waited:.3f} s"

        request = wire.fetch_request({("parked", 0): 0}, max_wait_ms=10_000)
        correlation_id = client.send(request)
        time.sleep(0.3)  # parked in the broker by now
        with wire.WireClient.connect(broker.bootstrap) as producer:
            batch = bytes(build_batch([(int(time.time() * 1000), None, b"wake")]))
            appended = time.monotonic()
            assert wire.produce(producer, "parked", 0, batch).error_code == NONE
        response = client.recv(load_response_from_request(request), correlation_id)
        woke = time.monotonic() - appended
    [topic] = response.responses
    [data] = topic.partitions
    assert [r.value for r in wire.decode_records(data.records)] == [b"wake"], data
    assert woke < 0.2, f"the parked Fetch was answered {woke * 1000:.0f} ms after the append"


def _assert_latencies(client: str, latencies: list[float]) -> None:
    median = statistics.median(latencies)
    worst = max(latencies)
    shown = ", ".join(f"{x * 1000:.1f}" for x in latencies)
    print(f"{client}: median {median * 1000:.1f} ms, max {worst * 1000:.1f} ms ({shown})")
    assert median < 0.050 and worst < 0.200, (
        f"{client}: ack-to-delivery latency median {median * 1000:.1f} ms, max "
        f"{worst * 1000:.1f} ms over {len(latencies)} trials (ms: {shown})"
    )


def test_confluent_kafka_long_poll_delivers_within_50ms_of_the_append(broker):
    create_topic(broker.bootstrap, "latency-confluent", 1)
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "franz-tests-unused",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 5000,
            "fetch.min.bytes": 1,
        }
    )
    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "acks": "all"}
    )
    received: dict[bytes, float] = {}
    acked: dict[bytes, float] = {}
    errors: list[str] = []
    stop = threading.Event()

    def consume() -> None:
        while not stop.is_set():
            msg = consumer.poll(0.05)
            if msg is None:
                continue
            if msg.error() is not None:
                errors.append(str(msg.error()))
                continue
            received[msg.value()] = time.monotonic()

    def on_delivery(err, msg) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            acked[msg.value()] = time.monotonic()

    consumer.assign([confluent_kafka.TopicPartition("latency-confluent", 0, 0)])
    thread = threading.Thread(target=consume, daemon=True)
    thread.start()
    try:
        latencies = []
        for trial in range(TRIALS + 1):  # trial 0 warms up connections and the fetch loop
            time.sleep(0.3)  # let the consumer's next Fetch park in the broker
            value = b"trial %d" % trial
            producer.produce("latency-confluent", value, on_delivery=on_delivery)
            producer.flush(10)
            deadline = time.monotonic() + 10
            while value not in received and time.monotonic() < deadline and not errors:
                time.sleep(0.001)
            assert not errors, errors
            assert value in received, f"trial {trial}: not delivered within 10 s"
            if trial:
                latencies.append(max(0.0, received[value] - acked[value]))
    finally:
        stop.set()
        thread.join(5)
        consumer.close()
    _assert_latencies("confluent-kafka", latencies)


def test_aiokafka_long_poll_delivers_within_50ms_of_the_append(broker):
    create_topic(broker.bootstrap, "latency-aiokafka", 1)

    async def run() -> list[float]:
        tp = AiokafkaTopicPartition("latency-aiokafka", 0)
        consumer = aiokafka.AIOKafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            group_id=None,
            enable_auto_commit=False,
            fetch_max_wait_ms=5000,
        )
        producer = aiokafka.AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap, linger_ms=0, acks="all"
        )
        await consumer.start()
        await producer.start()
        try:
            consumer.assign([tp])
            consumer.seek(tp, 0)
            latencies = []
            for trial in range(TRIALS + 1):
                await asyncio.sleep(0.3)
                receive = asyncio.ensure_future(consumer.getone(tp))
                await asyncio.sleep(0.05)
                await producer.send_and_wait("latency-aiokafka", b"trial %d" % trial, partition=0)
                acked = time.monotonic()
                record = await asyncio.wait_for(receive, 10)
                delivered = time.monotonic()
                assert record.value == b"trial %d" % trial, record
                if trial:
                    latencies.append(max(0.0, delivered - acked))
            return latencies
        finally:
            await producer.stop()
            await consumer.stop()

    latencies = asyncio.run(asyncio.wait_for(run(), 120))
    _assert_latencies("aiokafka", latencies)
