"""Compaction of ``__consumer_offsets`` holding transactional offset commits, end to end.

A transactional producer (confluent-kafka, ``send_offsets_to_transaction``) commits and
aborts a group's offsets in turn, some keys only ever aborted; plain commits of another group
then roll the offsets topic's tiny segments (``offsets.topic.segment.bytes``) so that the
transactions sit below the active segment. The broker runs without its log cleaner until the
stored log is seen holding every commit, aborted ones included; restarted with it
(``log.cleaner.backoff.ms``, ``log.cleaner.min.cleanable.ratio``), it compacts them. Kafka's
``LogCleaner`` drops the records of aborted transactions (``CleanedTransactionMetadata``:
they never enter the offset map, so an aborted commit does not shadow the committed one of
its key) and keeps the last committed record of each key. The test waits until the stored
log shows exactly that, then restarts the broker: ``GroupMetadataManager``'s load of the
compacted partition must give exactly the committed offsets, the aborted ones gone (a key
only ever aborted has no offset).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from franz.coordinator.group.offsets_schema import (
    OffsetKey,
    decode_key,
    decode_offset_commit_value,
)
from franz.protocol.records.inflated import iter_records
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic, stored_batches

OFFSETS_TOPIC = "__consumer_offsets"
TOPIC = "txn-compacted-in"
GROUP = "txn-compacted"
FILLER_GROUP = "filler"
OVERRIDES = {
    "offsets.topic.num.partitions": "1",  # every group's records in one partition
    "offsets.topic.segment.bytes": "1024",  # a few commits a segment
    # Off until the log holds every transaction, aborted ones included (then on, restarted).
    "log.cleaner.enable": "false",
    "log.cleaner.backoff.ms": "100",
    "log.cleaner.min.cleanable.ratio": "0.01",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
}
DEADLINE_S = 90.0

#: (offsets by partition of TOPIC, commit?) in order. Partition 2 is only ever aborted;
#: partition 0's last committed offset (15) is followed by an aborted one (25).
TRANSACTIONS: list[tuple[dict[int, int], bool]] = [
    ({0: 10, 1: 5}, True),
    ({0: 20, 2: 99}, False),
    ({0: 15}, True),
    ({0: 25, 1: 50, 2: 98}, False),
]
#: What OffsetFetch answers for partitions 0-2 (-1001: OFFSET_INVALID, none committed).
EXPECTED = [(0, 15), (1, 5), (2, -1001)]
ABORTED_VALUES = {20, 99, 25, 50, 98}


@pytest.fixture
def broker(broker_factory: type[BrokerProcess], tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = broker_factory(tmp_path / "b", OVERRIDES).start()
    create_topic(proc.bootstrap, TOPIC, 3)
    yield proc
    code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


def run_transactions(bootstrap: str) -> None:
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "log_level": 2})
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "offsets-compaction", "log_level": 2}
    )
    try:
        producer.init_transactions(30)
        metadata = group.consumer_group_metadata()
        for offsets, commit in TRANSACTIONS:
            producer.begin_transaction()
            producer.send_offsets_to_transaction(
                [TopicPartition(TOPIC, p, o) for p, o in offsets.items()], metadata, 30
            )
            if commit:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)
    finally:
        group.close()


def roll_segments(bootstrap: str, commits: int) -> None:
    """Plain (non-transactional) commits of another group, filling segments after the
    transactions so that they are no longer in the active one."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": FILLER_GROUP,
            "enable.auto.commit": False,
            "log_level": 2,
        }
    )
    try:
        for i in range(commits):
            consumer.commit(offsets=[TopicPartition(TOPIC, 0, i + 1)], asynchronous=False)
    finally:
        consumer.close()


def stored_offsets(broker: BrokerProcess) -> list[tuple[int, int, bool]]:
    """``GROUP``'s offset records in the stored log: (partition, offset, transactional)."""
    found = []
    for batch in stored_batches(broker, OFFSETS_TOPIC, 0):
        if batch.is_control_batch:
            continue
        for record in iter_records(batch):
            if record.key is None or record.value is None:
                continue
            key = decode_key(record.key)
            if isinstance(key, OffsetKey) and key.group == GROUP and key.topic == TOPIC:
                value = decode_offset_commit_value(record.value)
                found.append((key.partition, value.offset, batch.is_transactional))
    return found


def committed(bootstrap: str) -> list[tuple[int, int]]:
    """``GROUP``'s committed offsets (OffsetFetch) of ``TOPIC``'s partitions 0-2, -1001
    (OFFSET_INVALID) where none. librdkafka's default ``isolation.level`` is read_committed,
    so it asks with ``require_stable`` (KIP-447) and retries UNSTABLE_OFFSET_COMMIT."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "log_level": 2})
    try:
        answer = consumer.committed([TopicPartition(TOPIC, p) for p in range(3)], timeout=30)
    finally:
        consumer.close()
    assert all(tp.error is None for tp in answer), answer
    return [(tp.partition, tp.offset) for tp in answer]


def test_cleaner_drops_aborted_txn_offsets_and_reload_gives_the_committed(
    broker: BrokerProcess,
) -> None:
    run_transactions(broker.bootstrap)
    assert committed(broker.bootstrap) == EXPECTED
    # Rolled past: the active segment holds only filler commits.
    roll_segments(broker.bootstrap, 30)
    before = stored_offsets(broker)
    assert {offset for _, offset, _ in before} >= ABORTED_VALUES | {10}, before
    assert all(transactional for *_, transactional in before)

    # Compacted: the aborted records gone, partition 0's older committed offset (10)
    # superseded by 15.
    code = broker.stop()
    assert code == 0, broker.output()
    broker.overrides["log.cleaner.enable"] = "true"
    broker.start()
    assert committed(broker.bootstrap) == EXPECTED  # loaded from the log as written
    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            after = sorted(stored_offsets(broker))
        except FileNotFoundError:  # a segment swapped by the cleaner while being read
            after = None
        if after == [(0, 15, True), (1, 5, True)]:
            break
        assert time.monotonic() < deadline, f"not compacted after {DEADLINE_S} s: {after}"
        time.sleep(0.2)

    code = broker.stop()
    assert code == 0, broker.output()
    broker.start()
    assert committed(broker.bootstrap) == EXPECTED
