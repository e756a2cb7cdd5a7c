"""Issue 19's client acceptance: transactional producers of every Python client, read by every
consumer client at both isolation levels.

For each producer client (confluent-kafka, kafka-python, aiokafka) a topic of 2 partitions
gets, in order: a committed transaction (``c1-*``), an aborted one (``a-*``), a committed one
(``c2-*``) and a last committed one-record transaction (the sentinel). Then every consumer
client (confluent-kafka, kafka-python, aiokafka, kcat) reads both partitions from offset 0:

* ``isolation.level=read_committed``: exactly the committed records, in produce order per
  partition; the sentinel comes after ``c2-*``, so an aborted record that slipped through
  would show up before it;
* ``read_uncommitted``: the aborted records too, at their offsets, and the control batches'
  offsets skipped by every client (no client delivers a marker as a record).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker import BrokerProcess
from tests.support.clients import consume_with, create_topic
from tests.support.transactions import (
    CONSUMERS,
    PARTITIONS,
    PRODUCERS,
    expected_keys,
    isolation,
    produce_transactions,
    records_by_partition,
)


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data_dir: Path = tmp_path_factory.mktemp("txn-clients")
    proc = BrokerProcess(data_dir).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


@pytest.fixture(scope="module", params=PRODUCERS)
def produced(request: pytest.FixtureRequest, broker: BrokerProcess) -> tuple[str, str]:
    """A topic written by one producer client as ``TRANSACTIONS`` says; (client, topic)."""
    client = request.param
    topic = f"txn-{client}-{uuid.uuid4().hex[:6]}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    tid = f"tid-{topic}"
    produce_transactions(client, broker.bootstrap, topic, tid)
    return client, topic


@pytest.mark.parametrize("consumer", CONSUMERS)
def test_read_committed_sees_exactly_the_committed_records(
    broker: BrokerProcess, produced: tuple[str, str], consumer: str
) -> None:
    producer, topic = produced
    expected = expected_keys(committed_only=True)
    got = consume_with(
        consumer,
        broker.bootstrap,
        topic,
        list(range(PARTITIONS)),
        sum(len(keys) for keys in expected.values()),
        config=isolation(consumer, "read_committed"),
    )
    by_partition = records_by_partition(got)
    assert {p: [k for _, k in rs] for p, rs in by_partition.items()} == expected, (
        f"{producer} -> {consumer}"
    )
    for records in by_partition.values():  # in offset order, none twice
        offsets = [o for o, _ in records]
        assert offsets == sorted(set(offsets))


@pytest.mark.parametrize("consumer", CONSUMERS)
def test_read_uncommitted_sees_the_aborted_records_too(
    broker: BrokerProcess, produced: tuple[str, str], consumer: str
) -> None:
    producer, topic = produced
    expected = expected_keys(committed_only=False)
    got = consume_with(
        consumer,
        broker.bootstrap,
        topic,
        list(range(PARTITIONS)),
        sum(len(keys) for keys in expected.values()),
        config=isolation(consumer, "read_uncommitted"),
    )
    by_partition = records_by_partition(got)
    assert {p: [k for _, k in rs] for p, rs in by_partition.items()} == expected, (
        f"{producer} -> {consumer}"
    )
    # Each transaction's marker takes an offset of each partition it wrote to: the records
    # of the next transaction start one offset after the previous one's last record.
    for partition, records in by_partition.items():
        offsets = [o for o, _ in records]
        keys = [k for _, k in records]
        for i in range(1, len(records)):
            same_txn = keys[i].split(b"-")[0] == keys[i - 1].split(b"-")[0]  # type: ignore[union-attr]
            assert offsets[i] - offsets[i - 1] == (1 if same_txn else 2), (partition, records)
