"""Damaged log files found at startup: bytes after the last batch, a corrupt old batch.

Tail garbage (issue 14, item 1): bytes appended to the active segment's ``.log`` while the
broker was down, after a clean shutdown. The loader validates the active segment's tail on
every start and cuts what does not validate, so new acknowledged appends follow the last
valid batch: a real consumer reads every acknowledged record in order, also after a later
SIGKILL and unclean recovery.

A corrupt batch in an old segment (issue 14, item 2): ``log.recovery.verify.all=true``
reports it at ERROR on start and keeps it and everything after it; the broker serves it as
stored (as Kafka does). What librdkafka consumers see, checked here: with ``check.crcs=true``
an error ``_BAD_MSG`` ("failed CRC32C check") at the batch's base offset, every record
before it delivered and none from it on until the application seeks past it; with the
default ``check.crcs=false`` every record, the damaged one included, as stored.
"""

from __future__ import annotations

import struct
import time
from pathlib import Path

import confluent_kafka
import pytest

from tests.support.clients import OutRecord, consume_with, create_topic, produce_with

TOPIC = "damaged"
COUNT = 1000


def _produce(bootstrap: str, start: int, count: int) -> list[int]:
    records = [OutRecord(None, b"value %d" % i, partition=0) for i in range(start, start + count)]
    result = produce_with(
        "confluent-kafka", bootstrap, TOPIC, records, config={"acks": "1"}, timeout=60
    )
    offsets = [ack.offset for ack in result.acks if ack is not None]
    assert len(offsets) == count
    return offsets


def _consume_values(bootstrap: str, count: int) -> list[tuple[int, bytes | None]]:
    got = consume_with("confluent-kafka", bootstrap, TOPIC, [0], count, 60)
    return [(r.offset, r.value) for r in got]


def _active_log(data_dir: Path) -> Path:
    return sorted((data_dir / "logs" / f"{TOPIC}-0").glob("*.log"))[-1]


def _plausible_batch(base_offset: int) -> bytes:
    """A v2 batch header (offsets after the log end, sane length, magic 2) with a wrong CRC."""
    length = 49 + 40
    header = struct.pack(">qiibI", base_offset, length, 0, 2, 0x12345678)
    # attributes, lastOffsetDelta, timestamps, producer id/epoch, base sequence, record count
    header += struct.pack(">hiqqqhii", 0, 4, 0, 0, -1, -1, -1, 5)
    return header + b"\x07" * (12 + length - len(header))


@pytest.mark.parametrize("garbage", ["random", "plausible-header"])
def test_tail_garbage_after_clean_shutdown_is_cut_before_serving(broker_factory, tmp_path, garbage):
    broker = broker_factory(tmp_path / "b").start()
    create_topic(broker.bootstrap, TOPIC, 1)
    assert _produce(broker.bootstrap, 0, COUNT) == list(range(COUNT))
    assert broker.stop() == 0, broker.output()

    log_file = _active_log(tmp_path / "b")
    junk = _plausible_batch(COUNT) if garbage == "plausible-header" else b"\xde\xad\xbe\xef" * 64
    with log_file.open("ab") as f:
        f.write(junk)

    broker.start()
    assert f"{len(junk)} invalid byte(s)" in broker.output(), broker.output()
    assert _produce(broker.bootstrap, COUNT, COUNT) == list(range(COUNT, 2 * COUNT))
    expected = [(i, b"value %d" % i) for i in range(2 * COUNT)]
    assert _consume_values(broker.bootstrap, 2 * COUNT) == expected

    broker.kill()  # an unclean recovery must not cut anything that was acknowledged
    broker.start()
    assert _consume_values(broker.bootstrap, 2 * COUNT) == expected


def _consume_until_error(bootstrap: str, check_crcs: bool, count: int):  # type: ignore[no-untyped-def]
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "franz-tests-unused",
            "enable.auto.commit": False,
            "check.crcs": check_crcs,
        }
    )
    values: dict[int, bytes | None] = {}
    error = None
    deadline = time.monotonic() + 60
    try:
        consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, 0)])
        while len(values) < count and error is None and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.5):
                if msg.error() is not None:
                    error = (msg.offset(), msg.error())
                    break
                values[msg.offset()] = msg.value()
    finally:
        consumer.close()
    return values, error


def test_verify_all_reports_a_corrupt_old_batch_and_the_broker_serves_it_as_stored(
    broker_factory, tmp_path
):
    overrides = {"log.segment.bytes": "16384"}
    broker = broker_factory(tmp_path / "b", overrides).start()
    create_topic(broker.bootstrap, TOPIC, 1)
    records = [OutRecord(None, b"value %05d" % i, partition=0) for i in range(2000)]
    produce_with(
        "confluent-kafka",
        broker.bootstrap,
        TOPIC,
        records,
        config={"acks": "1", "linger.ms": 0, "batch.num.messages": 10},
        timeout=60,
    )
    assert broker.stop() == 0, broker.output()
    segments = sorted((tmp_path / "b" / "logs" / f"{TOPIC}-0").glob("*.log"))
    assert len(segments) > 2
    data = bytearray(segments[0].read_bytes())
    data[data.index(b"value 00042") + 10] ^= 0x01  # "value 00043" at offset 42
    segments[0].write_bytes(bytes(data))
    sizes = [p.stat().st_size for p in segments]

    broker.overrides["log.recovery.verify.all"] = "true"
    broker.start()
    errors = [line for line in broker.output().splitlines() if " ERROR " in line]
    assert len(errors) == 1 and "corrupt batch at position" in errors[0], broker.output()
    assert str(segments[0]) in errors[0] and "CRC mismatch" in errors[0]
    assert [p.stat().st_size for p in segments] == sizes, "nothing is cut"
    first_offset = int(errors[0].split("offsets ")[1].split("..")[0])
    assert first_offset <= 42

    values, error = _consume_until_error(broker.bootstrap, True, 2000)
    assert error is not None and error[0] == first_offset, error
    assert error[1].code() == confluent_kafka.KafkaError._BAD_MSG
    assert "CRC32C" in error[1].str()
    assert values == {i: b"value %05d" % i for i in range(first_offset)}

    values, error = _consume_until_error(broker.bootstrap, False, 2000)
    assert error is None
    expected = {i: b"value %05d" % i for i in range(2000)}
    assert values == {**expected, 42: b"value 00043"}
