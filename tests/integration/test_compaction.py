"""Log compaction on a real broker, with real clients (confluent-kafka).

Topics get tiny segments (``segment.bytes``) and ``min.cleanable.dirty.ratio=0.01``, so
every rolled segment makes the log cleanable. The expected view of a consumer reading from
offset 0 (``assign``) comes from an oracle over the produced records and the partition's
active segment, read from the broker's log dir: below the active segment's base offset, the
last record of each key (tombstones until ``delete.retention.ms`` after their first
cleaning); from it on, every record.

Waits are bounded polling loops. The broker passes the ``log.cleaner.*`` keys to its log
manager once wired (``log.cleaner.backoff.ms=100`` here); with Kafka's default backoff
(15 s) the loops still converge within their deadlines.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import confluent_kafka
import pytest
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from tests.support.broker import BrokerProcess
from tests.support.clients import OutRecord, create_topic, end_offsets, produce_with

Row = tuple[int, bytes | None, bytes | None]
T = TypeVar("T")

OVERRIDES = {
    "log.cleaner.backoff.ms": "100",
    "log.retention.check.interval.ms": "500",
}
SMALL_SEGMENTS = {
    "segment.bytes": "4096",
    "min.cleanable.dirty.ratio": "0.01",
    "file.delete.delay.ms": "1000",
}
PRODUCER = {"batch.size": 1500, "linger.ms": 2}
DEADLINE_S = 90.0


@pytest.fixture
def broker(broker_factory: type[BrokerProcess], tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = broker_factory(tmp_path / "broker", OVERRIDES).start()
    yield proc
    code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


def _partition_dir(broker: BrokerProcess, topic: str) -> Path:
    return Path(broker.overrides["log.dirs"]) / f"{topic}-0"


def _active_base(broker: BrokerProcess, topic: str) -> int:
    return max(int(p.name.split(".")[0]) for p in _partition_dir(broker, topic).glob("*.log"))


def _disk_size(broker: BrokerProcess, topic: str) -> int:
    return sum(p.stat().st_size for p in _partition_dir(broker, topic).glob("*.log"))


def _produce(
    broker: BrokerProcess, topic: str, records: list[tuple[bytes, bytes | None]]
) -> list[Row]:
    result = produce_with(
        "confluent-kafka",
        broker.bootstrap,
        topic,
        [OutRecord(k, v, partition=0) for k, v in records],
        config=PRODUCER,
    )
    out = []
    for ack, (key, value) in zip(result.acks, records, strict=True):
        assert ack is not None
        out.append((ack.offset, key, value))
    return sorted(out)


def _consume_all(bootstrap: str, topic: str, timeout: float = 30.0) -> list[Row]:
    """Every record of partition 0 from offset 0 up to the high watermark."""
    (low, high) = end_offsets(bootstrap, topic, [0])[0]
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "franz-tests-unused",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    out: list[Row] = []
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error() is not None:
                if msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                    if msg.offset() >= high:
                        return out
                    continue
                raise AssertionError(f"consumer error: {msg.error()}")
            out.append((msg.offset(), msg.key(), msg.value()))
            if msg.offset() >= high - 1:
                return out
        raise AssertionError(f"did not reach offset {high} (from {low}) in {timeout} s: {out[-3:]}")
    finally:
        consumer.close()


def _oracle(produced: list[Row], active_base: int, *, drop_tombstones: bool) -> list[Row]:
    last = {key: offset for offset, key, _ in produced if offset < active_base}
    return [
        (offset, key, value)
        for offset, key, value in produced
        if offset >= active_base
        or (last.get(key) == offset and (value is not None or not drop_tombstones))
    ]


def _wait_for(what: str, probe: Callable[[], T | None], deadline_s: float = DEADLINE_S) -> T:
    deadline = time.monotonic() + deadline_s
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last is not None and last is not False:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; last probe: {last!r}")


def _updates(count: int, keys: int, prefix: str = "v") -> list[tuple[bytes, bytes | None]]:
    return [(b"key-%02d" % (i % keys), f"{prefix}-{i:05d}-".encode() * 4) for i in range(count)]


def test_many_updates_per_key_shrink_to_the_latest_value_per_key(broker: BrokerProcess) -> None:
    topic = "compacted-updates"
    create_topic(broker.bootstrap, topic, config={"cleanup.policy": "compact", **SMALL_SEGMENTS})
    produced = _produce(broker, topic, _updates(3000, 20))
    size_before = _disk_size(broker, topic)
    assert len(list(_partition_dir(broker, topic).glob("*.log"))) > 20

    def compacted() -> list[Row] | None:
        expected = _oracle(produced, _active_base(broker, topic), drop_tombstones=False)
        seen = _consume_all(broker.bootstrap, topic)
        return seen if seen == expected else None

    seen = _wait_for("the partition to be compacted", compacted)
    active = _active_base(broker, topic)
    assert sum(1 for offset, _, _ in seen if offset < active) <= 20
    assert [r for r in seen if r[0] >= active] == [r for r in produced if r[0] >= active]
    _wait_for(
        "the old segments to leave the disk",
        lambda: not list(_partition_dir(broker, topic).glob("*.deleted")),
    )
    assert _disk_size(broker, topic) < size_before / 4
    assert "cleaned log compacted-updates-0" in broker.output()


def test_tombstones_vanish_after_delete_retention_ms(broker: BrokerProcess) -> None:
    topic = "compacted-tombstones"
    retention_ms = 3000
    config = {"cleanup.policy": "compact", "delete.retention.ms": str(retention_ms)}
    create_topic(broker.bootstrap, topic, config={**config, **SMALL_SEGMENTS})
    records = _updates(200, 10)
    records += [(b"key-%02d" % i, None) for i in range(5)]  # delete keys 0-4
    records += [(b"key-%02d" % (5 + i % 5), b"filler-%05d" % i * 8) for i in range(600)]
    produced_at = time.monotonic()
    produced = _produce(broker, topic, records)
    tombstone_offsets = {o for o, _, v in produced if v is None}
    assert max(tombstone_offsets) < _active_base(broker, topic)

    saw_tombstones_cleaned = False

    def tombstones_gone() -> bool:
        nonlocal saw_tombstones_cleaned
        active = _active_base(broker, topic)
        seen = _consume_all(broker.bootstrap, topic)
        if seen == _oracle(produced, active, drop_tombstones=False):
            saw_tombstones_cleaned = True
        return seen == _oracle(produced, active, drop_tombstones=True)

    _wait_for("the tombstones to vanish", tombstones_gone)
    assert time.monotonic() - produced_at >= retention_ms / 1000
    assert saw_tombstones_cleaned  # a cleaning kept them before their horizon
    seen_keys = {k for _, k, _ in _consume_all(broker.bootstrap, topic)}
    assert not {b"key-%02d" % i for i in range(5)} & seen_keys


def test_compact_delete_topic_also_honours_retention(broker: BrokerProcess) -> None:
    topic = "compacted-and-deleted"
    config = {"cleanup.policy": "compact,delete", "retention.ms": "2000", **SMALL_SEGMENTS}
    create_topic(broker.bootstrap, topic, config=config)
    produced = _produce(broker, topic, _updates(1500, 10))
    time.sleep(2.1)  # let the first records age past retention.ms
    produced += _produce(broker, topic, _updates(300, 10, "w"))

    def retention_applied() -> bool:
        low, high = end_offsets(broker.bootstrap, topic, [0])[0]
        return low > 0 and high == produced[-1][0] + 1

    _wait_for("retention to move the log start offset", retention_applied)
    low, _ = end_offsets(broker.bootstrap, topic, [0])[0]
    seen = _consume_all(broker.bootstrap, topic)
    assert seen and seen[0][0] >= low
    assert set(seen) <= set(produced)


def test_altering_a_topic_to_compact_starts_compaction(broker: BrokerProcess) -> None:
    topic = "altered-to-compact"
    create_topic(broker.bootstrap, topic, config=SMALL_SEGMENTS)
    produced = _produce(broker, topic, _updates(2000, 8))
    size_before = _disk_size(broker, topic)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    [future] = admin.incremental_alter_configs([resource]).values()
    future.result(30)

    def compacted() -> bool:
        expected = _oracle(produced, _active_base(broker, topic), drop_tombstones=False)
        return _consume_all(broker.bootstrap, topic) == expected

    _wait_for("the altered topic to be compacted", compacted)
    _wait_for(
        "the partition to shrink on disk", lambda: _disk_size(broker, topic) < size_before / 4
    )


def test_keyless_records_are_refused_by_a_compacted_topic(broker: BrokerProcess) -> None:
    create_topic(broker.bootstrap, "keyless", 1, config={"cleanup.policy": "compact"})
    reports: list[tuple[bytes | None, str | None]] = []

    def on_delivery(err: Any, msg: Any) -> None:
        reports.append((msg.key(), None if err is None else err.name()))

    producer = confluent_kafka.Producer(
        {"bootstrap.servers": broker.bootstrap, "linger.ms": 0, "retries": 0}
    )
    producer.produce("keyless", key=b"k", value=b"kept", on_delivery=on_delivery)
    producer.flush(10)
    producer.produce("keyless", key=None, value=b"refused", on_delivery=on_delivery)
    producer.flush(10)
    assert reports == [(b"k", None), (None, "INVALID_RECORD")]
    assert end_offsets(broker.bootstrap, "keyless", [0]) == {0: (0, 1)}
