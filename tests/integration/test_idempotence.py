"""Idempotent producers against a real Franz broker: every record stored exactly once.

Client level: confluent-kafka with ``enable.idempotence=true`` and kafka-python 3 (idempotent
by default, KIP-679) each produce 100,000 records; consuming them back must give each record
exactly once, at the offset it was acknowledged at, and the stored batches must carry the
producer id and gap-free sequences (so the producers really ran idempotently).

Wire level (``tests.support.wire`` over a raw socket, batches from ``RecordBatchBuilder``):

- InitProducerId gives a producer id and epoch; a batch sent twice with the same producer id,
  epoch and base sequence is acknowledged both times with error 0 and the same base offset,
  and the log end offset grows once (Kafka's duplicate detection over the last 5 batches).
- A sequence gap gets OUT_OF_ORDER_SEQUENCE_NUMBER (45) and appends nothing.
- A producer id the partition holds no state for, with base sequence 5, gets
  UNKNOWN_PRODUCER_ID (59). This is Kafka's rule before KIP-360 (0.11-2.4), which Franz chose
  (``franz.storage.producer_state``); Kafka >= 2.5 accepts it.
- After a restart (clean stop, and SIGKILL) the last batch resent is still a duplicate: the
  producer state comes back from the ``.snapshot`` files and the log.
"""

from __future__ import annotations

import datetime
import time

import pytest
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest

from franz.protocol.records import RecordBatchBuilder
from tests.support import wire
from tests.support.broker import BrokerProcess
from tests.support.clients import (
    OutRecord,
    consume_with,
    create_topic,
    end_offsets,
    produce_with,
    stored_batches,
)

RECORDS = 100_000
PARTITIONS = 3
NONE = 0
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
UNKNOWN_PRODUCER_ID = 59


def _check_stored_once(broker: BrokerProcess, topic: str, producer: str) -> None:
    records = [
        OutRecord(b"k%d" % i, b"%s record %d " % (producer.encode(), i) * (1 + i % 5), (), i % 3)
        for i in range(RECORDS)
    ]
    config = {"enable.idempotence": True} if producer == "confluent-kafka" else {}
    result = produce_with(producer, broker.bootstrap, topic, records, config=config, timeout=240)
    acks = result.acks
    assert len(set(acks)) == RECORDS, "two records were acknowledged at the same offset"

    offsets = end_offsets(broker.bootstrap, topic, range(PARTITIONS))
    per_partition = [sum(1 for r in records if r.partition == p) for p in range(PARTITIONS)]
    assert offsets == {p: (0, n) for p, n in enumerate(per_partition)}, (
        f"log end offsets {offsets}, expected {per_partition} records per partition"
    )
    got = consume_with(
        "confluent-kafka", broker.bootstrap, topic, range(PARTITIONS), RECORDS, timeout=120
    )
    assert len(got) == RECORDS, f"consumed {len(got)} records, produced {RECORDS}"
    stored = {(r.partition, r.offset): r.value for r in got}
    assert len(stored) == RECORDS, "a (partition, offset) was delivered twice"
    for record, ack in zip(records, acks, strict=True):
        assert ack is not None
        assert ack.partition == record.partition
        assert stored[ack.partition, ack.offset] == record.value, (
            f"offset {ack} holds {stored[ack.partition, ack.offset]!r}, acknowledged for "
            f"{record.value!r}"
        )

    for partition in range(PARTITIONS):
        batches = stored_batches(broker, topic, partition)
        producer_ids = {b.producer_id for b in batches}
        assert len(producer_ids) == 1 and min(producer_ids) >= 0, (
            f"partition {partition}: batches carry producer ids {producer_ids}"
        )
        next_sequence = 0
        for batch in batches:
            assert batch.base_sequence == next_sequence, (
                f"partition {partition}: batch at offset {batch.base_offset} has base sequence "
                f"{batch.base_sequence}, expected {next_sequence}"
            )
            next_sequence += batch.records_count


def test_confluent_kafka_idempotent_producer_stores_every_record_once(broker):
    create_topic(broker.bootstrap, "idempotent-confluent", PARTITIONS)
    _check_stored_once(broker, "idempotent-confluent", "confluent-kafka")


def test_kafka_python_idempotent_by_default_stores_every_record_once(broker):
    create_topic(broker.bootstrap, "idempotent-kafka-python", PARTITIONS)
    _check_stored_once(broker, "idempotent-kafka-python", "kafka-python")


# -- the wire ---------------------------------------------------------------------------------

TOPIC = "idempotence"


def _init_producer_id(client: wire.WireClient) -> tuple[int, int]:
    """InitProducerId v4 (librdkafka's version), no transactional id: (producer id, epoch)."""
    version = wire.api_versions(client).get(22)
    assert version is not None and version[0] <= 4 <= version[1], (
        f"broker advertises InitProducerId {version}, librdkafka needs v4"
    )
    response = client.request(
        InitProducerIdRequest(
            transactional_id=None, transaction_timeout=datetime.timedelta(seconds=60)
        )
    )
    assert response.error_code == NONE, response
    assert response.producer_id >= 0 and response.producer_epoch >= 0, response
    return int(response.producer_id), int(response.producer_epoch)


def _batch(producer_id: int, epoch: int, base_sequence: int, count: int, tag: str) -> bytes:
    builder = RecordBatchBuilder(
        producer_id=producer_id, producer_epoch=epoch, base_sequence=base_sequence
    )
    now = int(time.time() * 1000)
    for i in range(count):
        builder.append(now, b"key", f"{tag} seq {base_sequence + i}".encode())
    return bytes(builder.build())


def _log_end(client: wire.WireClient) -> int:
    answer = wire.list_offsets(client, TOPIC, 0, wire.LATEST_TIMESTAMP)
    assert answer.error_code == NONE, answer
    return int(answer.offset)


def _stored_values(client: wire.WireClient) -> list[tuple[int, bytes | None]]:
    records = wire.decode_records(wire.fetch(client, TOPIC, 0, 0).records)
    return [(r.offset, r.value) for r in records]


@pytest.fixture
def producer(broker):
    """A wire connection to ``broker``, topic ``idempotence`` (1 partition), a producer id."""
    create_topic(broker.bootstrap, TOPIC, 1)
    client = wire.WireClient.connect(broker.bootstrap)
    try:
        producer_id, epoch = _init_producer_id(client)
        yield client, producer_id, epoch
    finally:
        client.close()


def test_resent_batch_is_acknowledged_with_the_same_offset_and_stored_once(producer):
    client, producer_id, epoch = producer
    first = _batch(producer_id, epoch, 0, 5, "a")
    assert wire.produce(client, TOPIC, 0, first).error_code == NONE
    second = _batch(producer_id, epoch, 5, 5, "b")

    answer = wire.produce(client, TOPIC, 0, second)
    assert (answer.error_code, answer.base_offset) == (NONE, 5), answer
    assert _log_end(client) == 10

    again = wire.produce(client, TOPIC, 0, second)
    assert (again.error_code, again.base_offset) == (NONE, 5), (
        f"the resent batch was answered {again}, the original {answer}"
    )
    older = wire.produce(client, TOPIC, 0, first)
    assert (older.error_code, older.base_offset) == (NONE, 0), (
        f"a resent batch among the last five was answered {older}"
    )
    assert _log_end(client) == 10, "a duplicate batch was appended"
    assert _stored_values(client) == [
        *((i, f"a seq {i}".encode()) for i in range(5)),
        *((i, f"b seq {i}".encode()) for i in range(5, 10)),
    ]


def test_sequence_gap_is_out_of_order_and_appends_nothing(producer):
    client, producer_id, epoch = producer
    assert wire.produce(client, TOPIC, 0, _batch(producer_id, epoch, 0, 5, "a")).error_code == NONE

    gap = wire.produce(client, TOPIC, 0, _batch(producer_id, epoch, 7, 5, "gap"))
    assert gap.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER, gap
    assert _log_end(client) == 5

    follows = wire.produce(client, TOPIC, 0, _batch(producer_id, epoch, 5, 5, "b"))
    assert (follows.error_code, follows.base_offset) == (NONE, 5), follows


def test_unknown_producer_id_with_nonzero_sequence_is_refused(producer):
    client, producer_id, _epoch = producer
    stranger = producer_id + 1000
    answer = wire.produce(client, TOPIC, 0, _batch(stranger, 0, 5, 3, "stranger"))
    assert answer.error_code == UNKNOWN_PRODUCER_ID, answer
    assert _log_end(client) == 0


@pytest.mark.parametrize("restart", ["stop", "kill"])
def test_duplicate_is_detected_after_a_restart(broker_factory, tmp_path, restart):
    broker = broker_factory(tmp_path / "b").start()
    create_topic(broker.bootstrap, TOPIC, 1)
    with wire.WireClient.connect(broker.bootstrap) as client:
        producer_id, epoch = _init_producer_id(client)
        for base in (0, 5, 10):
            batch = _batch(producer_id, epoch, base, 5, "r")
            assert wire.produce(client, TOPIC, 0, batch).error_code == NONE
        last = _batch(producer_id, epoch, 15, 5, "r")
        answer = wire.produce(client, TOPIC, 0, last)
        assert (answer.error_code, answer.base_offset) == (NONE, 15), answer

    if restart == "stop":
        assert broker.stop() == 0, broker.output()
        snapshots = sorted((broker.data_dir / "logs" / f"{TOPIC}-0").glob("*.snapshot"))
        assert snapshots, "no producer state snapshot written at a clean shutdown"
    else:
        broker.kill()
    broker.start()

    with wire.WireClient.connect(broker.bootstrap) as client:
        again = wire.produce(client, TOPIC, 0, last)
        assert (again.error_code, again.base_offset) == (NONE, 15), (
            f"after a restart ({restart}) the resent last batch was answered {again}\n"
            f"{broker.output()}"
        )
        assert _log_end(client) == 20
        follows = wire.produce(client, TOPIC, 0, _batch(producer_id, epoch, 20, 5, "r"))
        assert (follows.error_code, follows.base_offset) == (NONE, 20), follows
        gap = wire.produce(client, TOPIC, 0, _batch(producer_id, epoch, 30, 5, "r"))
        assert gap.error_code == OUT_OF_ORDER_SEQUENCE_NUMBER, gap
