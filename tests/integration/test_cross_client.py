"""Every client reads exactly what every other client wrote, through a real Franz broker.

The matrix is producer x codec x consumer: each producer (confluent-kafka, kafka-python,
aiokafka, kcat) writes keyed records with headers into a 3-partition topic once per codec it
can use here (``codecs_for``), and each of the three other clients reads them back. A consumer
must see the same partitions and offsets (per-partition order as produced, offsets from 0),
keys and values (null, empty and binary ones), headers (order, duplicates, null values) and
CreateTime timestamps as produced. The batches stored on disk must carry the codec the producer
was asked for, so every cell really crosses that codec.

kcat cannot set timestamps or vary headers per record (see ``tests.support.clients``): its
records carry one fixed header set and timestamps that must fall inside the produce run.

One broker serves the whole module (``num.partitions=3``); each (producer, codec) pair writes
its own topic on first use and the three consumer cells reuse it.

``test_auto_creation`` is each client's test that producing to an unknown topic creates it with
the broker's ``num.partitions``; every other test creates its topics with CreateTopics.
"""

from __future__ import annotations

import random
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from confluent_kafka.admin import AdminClient

from tests.support.broker import BrokerProcess
from tests.support.clients import (
    CLIENTS,
    CREATE_TIME,
    Client,
    Codec,
    Consumed,
    OutRecord,
    ProduceResult,
    codec_problems,
    codecs_for,
    consume_with,
    create_topic,
    end_offsets,
    format_records,
    produce_with,
    stored_batches,
)

PARTITIONS = 3
RECORDS = 300
#: CreateTime stamps from an hour ago: a broker that restamped them would be caught, and they
#: are well within the default retention (7 days), which deletes segments by max timestamp.
BASE_TIMESTAMP_MS = (time.time_ns() // 1_000_000) - 3_600_000

PRODUCER_CODECS = [(p, c) for p in CLIENTS for c in codecs_for(p)]
MATRIX = [(p, c, consumer) for p, c in PRODUCER_CODECS for consumer in CLIENTS if consumer != p]


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("cross-client"), {"num.partitions": "3"})
    proc.start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


@dataclass(frozen=True)
class Produced:
    topic: str
    records: list[OutRecord]
    result: ProduceResult


_produced: dict[tuple[Client, Codec], Produced] = {}


def _records(producer: Client, seed: int) -> list[OutRecord]:
    """RECORDS keyed records over PARTITIONS partitions, compressible but with binary parts.

    Null keys, empty keys and values, binary keys/values/header values (NUL and high bytes
    included), duplicate header keys and null header values (not from kafka-python, whose
    ``send`` refuses them); null values (tombstones) except from kcat, which could then not
    send empty ones.
    """
    rng = random.Random(seed)
    kcat = producer == "kcat"
    fixed_headers: tuple[tuple[str, bytes | None], ...] = (
        ("src", b"kcat"),
        ("bin", bytes(range(1, 256))),
        ("dup", b"first"),
        ("dup", b"second"),
        ("null", None),
    )
    records = []
    for i in range(RECORDS):
        if i % 11 == 5 and not (kcat and i % 19 == 4):  # kcat skips a message without both
            key: bytes | None = None
        elif i % 13 == 7:
            key = b""
        else:
            key = b"key-%d-" % i + rng.randbytes(rng.randrange(0, 8))
        if not kcat and i % 17 == 9 and key is not None:
            value: bytes | None = None
        elif i % 19 == 4:
            value = b""
        else:
            text = b"value %d of %s " % (i, producer.encode())
            value = text * rng.randrange(1, 40) + rng.randbytes(rng.randrange(0, 64))
        if kcat:
            headers = fixed_headers
        elif i % 4 == 0:
            headers = ()
        else:
            headers = (
                ("idx", b"%d" % i),
                ("bin", rng.randbytes(rng.randrange(0, 16)) + b"\x00\xff"),
                ("dup", b"first"),
                ("dup", b"second"),
                # kafka-python's send() refuses null header values.
                *([] if producer == "kafka-python" else [("null", None)]),
            )
        records.append(
            OutRecord(
                key=key,
                value=value,
                headers=headers,
                partition=i % PARTITIONS,
                timestamp_ms=None if kcat else BASE_TIMESTAMP_MS + 13 * i,
            )
        )
    return records


def _produce_once(broker: BrokerProcess, producer: Client, codec: Codec) -> Produced:
    if (producer, codec) not in _produced:
        topic = f"cross-{producer}-{codec}"
        create_topic(broker.bootstrap, topic, PARTITIONS)
        records = _records(producer, seed=zlib.crc32(f"{producer}/{codec}".encode()))
        result = produce_with(producer, broker.bootstrap, topic, records, codec, timeout=60)
        _produced[producer, codec] = Produced(topic, records, result)
    return _produced[producer, codec]


def _expected(produced: Produced) -> list[Consumed]:
    """Per partition, the records in produce order at offsets 0, 1, 2, ..."""
    next_offset = dict.fromkeys(range(PARTITIONS), 0)
    expected = []
    for record in produced.records:
        assert record.partition is not None
        offset = next_offset[record.partition]
        next_offset[record.partition] += 1
        expected.append(
            Consumed(
                record.partition,
                offset,
                record.key,
                record.value,
                record.headers,
                -1 if record.timestamp_ms is None else record.timestamp_ms,
                CREATE_TIME,
            )
        )
    return expected


def _mismatches(
    expected: list[Consumed], got: list[Consumed], window: tuple[int, int] | None
) -> list[str]:
    """Differences between what was produced and what a consumer delivered.

    ``window``: the produce run's wall-clock bounds, for records whose CreateTime the
    producing client stamped itself (expected timestamp -1).
    """
    problems = []
    for partition in range(PARTITIONS):
        want = [r for r in expected if r.partition == partition]
        have = [r for r in got if r.partition == partition]
        offsets = [r.offset for r in have]
        if offsets != sorted(offsets):
            problems.append(f"partition {partition}: offsets out of order: {offsets[:50]}")
        if len(have) != len(want):
            problems.append(
                f"partition {partition}: {len(have)} records, expected {len(want)}; "
                f"got {format_records(have)}"
            )
        for w, h in zip(want, have, strict=False):
            if h.timestamp_type is not None and h.timestamp_type != CREATE_TIME:
                problems.append(f"timestamp type {h.timestamp_type}, not CreateTime: {h}")
            if w.timestamp_ms == -1:
                assert window is not None
                if not window[0] <= h.timestamp_ms <= window[1]:
                    problems.append(f"timestamp {h.timestamp_ms} outside produce run {window}: {h}")
                h = h._replace(timestamp_ms=-1)
            if h._replace(timestamp_type=CREATE_TIME) != w:
                problems.append(f"expected {w}\n      got {h}")
        if len(problems) > 10:
            break
    return problems


@pytest.mark.parametrize(("producer", "codec", "consumer"), MATRIX)
def test_consumer_reads_what_producer_wrote(shared_broker, producer, codec, consumer):
    produced = _produce_once(shared_broker, producer, codec)
    expected = _expected(produced)
    if producer != "kcat":
        acks = [(a.partition, a.offset) if a else None for a in produced.result.acks]
        assert acks == [(r.partition, r.offset) for r in expected], (
            f"{producer} was acknowledged at other (partition, offset)s than expected"
        )
    got = consume_with(
        consumer, shared_broker.bootstrap, produced.topic, range(PARTITIONS), RECORDS, timeout=60
    )
    window = (produced.result.started_ms, produced.result.finished_ms)
    problems = _mismatches(expected, got, window)
    assert not problems, f"{consumer} reading {producer}/{codec}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize(("producer", "codec"), PRODUCER_CODECS)
def test_stored_batches_carry_the_producers_codec(shared_broker, producer, codec):
    """The log holds the producer's batches as sent: v2 batches compressed with its codec
    (uncompressed only where librdkafka may skip compression, see ``codec_problems``)."""
    produced = _produce_once(shared_broker, producer, codec)
    problems = []
    for partition in range(PARTITIONS):
        batches = stored_batches(shared_broker, produced.topic, partition)
        count = sum(batch.records_count for batch in batches)
        assert count == RECORDS // PARTITIONS, f"partition {partition} stores {count} records"
        problems += [f"partition {partition}: {p}" for p in codec_problems(batches, codec)]
    assert not problems, f"{producer} with {codec}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("client", CLIENTS)
def test_auto_creation(broker_factory, tmp_path, client):
    """Producing to an unknown topic creates it with ``num.partitions`` partitions."""
    broker = broker_factory(tmp_path / "b", {"num.partitions": "3"}).start()
    topic = f"auto-{client}"
    records = [OutRecord(b"key-%d" % i, b"value-%d" % i) for i in range(60)]
    produce_with(client, broker.bootstrap, topic, records, timeout=30)
    metadata = AdminClient({"bootstrap.servers": broker.bootstrap}).list_topics(topic, timeout=10)
    assert sorted(metadata.topics[topic].partitions) == [0, 1, 2], metadata.topics[topic]
    offsets = end_offsets(broker.bootstrap, topic, range(3))
    assert sum(high for _, high in offsets.values()) == len(records), offsets
    got = consume_with("confluent-kafka", broker.bootstrap, topic, range(3), len(records))
    assert sorted(r.value for r in got) == sorted(r.value for r in records)
    for partition in range(3):
        values = [r.value for r in got if r.partition == partition]
        order = [r.value for r in records if r.value in values]
        assert values == order, f"partition {partition} is not in produce order"
        assert [r.offset for r in got if r.partition == partition] == list(range(len(values)))
