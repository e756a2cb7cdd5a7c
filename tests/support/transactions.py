"""Transactional producers and isolation-level reads with the Python clients (issue 19's
acceptance tests: ``tests/integration/test_transactions_clients.py`` on one broker,
``tests/cluster/test_transactions_cluster.py`` on three).

``produce_transactions(client, bootstrap, topic, tid)`` writes ``TRANSACTIONS`` in order: a
committed transaction (``c1-*``), an aborted one (``a-*``), a committed one (``c2-*``) and a
last committed one-record transaction (``end-0``), records alternating over ``PARTITIONS``
partitions; ``expected_keys(committed_only)`` is what a consumer must read per partition.
"""

from __future__ import annotations

import asyncio
import warnings

import aiokafka
import confluent_kafka

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka

from tests.support.clients import Consumed

__all__ = [
    "CONSUMERS",
    "PARTITIONS",
    "PRODUCERS",
    "TRANSACTIONS",
    "expected_keys",
    "isolation",
    "produce_transactions",
    "records_by_partition",
]

PARTITIONS = 2
PRODUCERS = ["confluent-kafka", "kafka-python", "aiokafka"]
CONSUMERS = ["confluent-kafka", "kafka-python", "aiokafka", "kcat"]

#: (transaction label, commit?, record count) in produce order; records alternate partitions.
TRANSACTIONS = [("c1", True, 6), ("a", False, 4), ("c2", True, 5), ("end", True, 1)]


def _records(label: str, count: int) -> list[tuple[int, bytes, bytes]]:
    return [
        (i % PARTITIONS, f"{label}-{i}".encode(), f"v-{label}-{i}".encode()) for i in range(count)
    ]


def _produce_confluent(bootstrap: str, topic: str, tid: str) -> None:
    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
    producer.init_transactions(60)
    for label, commit, count in TRANSACTIONS:
        producer.begin_transaction()
        for partition, key, value in _records(label, count):
            producer.produce(topic, key=key, value=value, partition=partition)
        if commit:
            producer.commit_transaction(60)
        else:
            producer.flush(60)  # the records are in the log before the abort
            producer.abort_transaction(60)


def _produce_kafka_python(bootstrap: str, topic: str, tid: str) -> None:
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    try:
        producer.init_transactions()
        for label, commit, count in TRANSACTIONS:
            producer.begin_transaction()
            for partition, key, value in _records(label, count):
                producer.send(topic, key=key, value=value, partition=partition)
            producer.flush(60)
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(10)


async def _produce_aiokafka(bootstrap: str, topic: str, tid: str) -> None:
    producer = aiokafka.AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    await producer.start()
    try:
        for label, commit, count in TRANSACTIONS:
            await producer.begin_transaction()
            sent = [
                await producer.send(topic, key=key, value=value, partition=partition)
                for partition, key, value in _records(label, count)
            ]
            await asyncio.gather(*sent)
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
    finally:
        await producer.stop()


def produce_transactions(client: str, bootstrap: str, topic: str, tid: str) -> None:
    """Write ``TRANSACTIONS`` to ``topic`` with ``client``'s transactional producer."""
    if client == "confluent-kafka":
        _produce_confluent(bootstrap, topic, tid)
    elif client == "kafka-python":
        _produce_kafka_python(bootstrap, topic, tid)
    elif client == "aiokafka":
        asyncio.run(_produce_aiokafka(bootstrap, topic, tid))
    else:
        raise ValueError(f"unknown producer client {client!r}")


def isolation(client: str, level: str) -> dict[str, str]:
    if client in ("kafka-python", "aiokafka"):
        return {"isolation_level": level}
    return {"isolation.level": level}


def records_by_partition(records: list[Consumed]) -> dict[int, list[tuple[int, bytes | None]]]:
    out: dict[int, list[tuple[int, bytes | None]]] = {p: [] for p in range(PARTITIONS)}
    for r in records:
        out[r.partition].append((r.offset, r.key))
    return out


def expected_keys(committed_only: bool) -> dict[int, list[bytes]]:
    out: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    for label, commit, count in TRANSACTIONS:
        if commit or not committed_only:
            for partition, key, _ in _records(label, count):
                out[partition].append(key)
    return out
