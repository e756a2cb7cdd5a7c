"""Transactions across a coordinator failure (issue 19's cluster acceptance).

Three brokers; ``__transaction_state`` with 3 partitions, replication factor 3 and
``min.insync.replicas`` 2 (``transaction.state.log.*``); a 3-partition data topic, factor 3.
A confluent-kafka transactional producer runs transactions of one record per partition
(``<txn> <i>``) in a loop while the broker coordinating its ``transactional.id`` (the leader of
its ``__transaction_state`` partition) is SIGKILLed mid-stream and later started again. Each
transaction's outcome as the client saw it is kept: committed (``commit_transaction``
returned), aborted (the client aborted it), or unknown (a fatal error: a new producer was made;
its ``init_transactions`` completes or aborts what the old one left).

A read_committed consumer then reads every partition to its end: every committed transaction
is there whole, no aborted one is, and no transaction is there in part (a half-committed
transaction would show one record of three).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from franz.coordinator.transaction.log_schema import partition_for
from tests.support.clients import create_topic
from tests.support.cluster import (
    Cluster,
    eventually,
    new_chroot,
    restart_after_session_expiry,
    start_cluster,
)
from tests.support.zookeeper import ZooKeeperServer

TXN_PARTITIONS = 3
PARTITIONS = 3

pytestmark = pytest.mark.slow


@pytest.fixture
def txn_cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[Cluster]:
    props = {
        "transaction.state.log.num.partitions": str(TXN_PARTITIONS),
        "transaction.state.log.replication.factor": "3",
        "transaction.state.log.min.isr": "2",
        "default.replication.factor": "3",
        "min.insync.replicas": "2",
    }
    with start_cluster(
        new_chroot(zookeeper_server.connect_string), tmp_path, extra_props=props
    ) as c:
        yield c


@dataclass
class Outcomes:
    committed: set[int] = field(default_factory=set)
    aborted: set[int] = field(default_factory=set)
    unknown: set[int] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)


class TransactionLoop:
    """Transactions of one record per partition, numbered, in a thread, until stopped."""

    def __init__(self, bootstrap: str, topic: str, transactional_id: str) -> None:
        self.bootstrap, self.topic, self.transactional_id = bootstrap, topic, transactional_id
        self.outcomes = Outcomes()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.failure: BaseException | None = None

    def _producer(self) -> Producer:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "transactional.id": self.transactional_id,
                "transaction.timeout.ms": 15000,
                "log_level": 2,
            }
        )
        producer.init_transactions(120)
        return producer

    def start(self) -> TransactionLoop:
        self._thread.start()
        return self

    def count(self) -> int:
        o = self.outcomes
        return len(o.committed) + len(o.aborted) + len(o.unknown)

    def _run(self) -> None:
        try:
            producer = self._producer()
            txn = 0
            while not self._stop.is_set():
                txn += 1
                outcome = self._one(producer, txn)
                getattr(self.outcomes, outcome).add(txn)
                if outcome == "unknown":
                    producer = self._producer()
        except BaseException as exc:
            self.failure = exc

    def _one(self, producer: Producer, txn: int) -> str:
        try:
            producer.begin_transaction()
            for p in range(PARTITIONS):
                producer.produce(self.topic, value=f"{txn} {p}".encode(), partition=p)
            for _ in range(10):
                try:
                    producer.commit_transaction(60)
                    return "committed"
                except KafkaException as exc:
                    if not exc.args[0].retriable():
                        raise
                    self.outcomes.errors.append(f"{txn}: commit retried: {exc.args[0]}")
            return "unknown"
        except KafkaException as exc:
            error = exc.args[0]
            self.outcomes.errors.append(f"{txn}: {error}")
            if error.txn_requires_abort():
                try:
                    producer.abort_transaction(60)
                    return "aborted"
                except KafkaException as again:
                    self.outcomes.errors.append(f"{txn}: abort failed: {again.args[0]}")
            return "unknown"

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(300)
        assert not self._thread.is_alive(), "the transaction loop did not stop in 300 s"
        if self.failure is not None:
            raise AssertionError(f"transaction loop failed: {self.failure!r}") from self.failure


def _coordinator(cluster: Cluster, transactional_id: str) -> int:
    partition = partition_for(transactional_id, TXN_PARTITIONS)
    state = cluster.json(f"/brokers/topics/__transaction_state/partitions/{partition}/state")
    return int(state["leader"])


def _read_committed(bootstrap: str, topic: str) -> dict[int, set[int]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen: dict[int, set[int]] = defaultdict(set)
    at_end: set[int] = set()
    deadline = time.monotonic() + 120
    try:
        while len(at_end) < PARTITIONS and time.monotonic() < deadline:
            for m in consumer.consume(500, timeout=1.0):
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        at_end.add(m.partition())
                    continue
                at_end.discard(m.partition())
                txn, p = map(int, m.value().split())
                assert p == m.partition(), m.value()
                seen[txn].add(p)
    finally:
        consumer.close()
    assert len(at_end) == PARTITIONS, "read_committed did not reach every partition's end"
    return seen


def test_killing_the_transaction_coordinator_shows_no_half_transaction(
    txn_cluster: Cluster,
) -> None:
    cluster = txn_cluster
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    create_topic(
        cluster.bootstrap(), topic, PARTITIONS, {"min.insync.replicas": "2"}, replication_factor=3
    )
    transactional_id = f"failover-{uuid.uuid4().hex[:8]}"
    loop = TransactionLoop(cluster.bootstrap(), topic, transactional_id).start()
    try:
        eventually(lambda: len(loop.outcomes.committed) >= 20, 120, "20 transactions committed")
        victim = _coordinator(cluster, transactional_id)
        before = loop.count()
        cluster.brokers[victim].kill()
        # The loop goes on through the failover: a new coordinator is elected and loads the
        # transactional id, and the producer finds it.
        eventually(
            lambda: sum(1 for txn in loop.outcomes.committed if txn > before) >= 20,
            180,
            "20 transactions committed after the coordinator's SIGKILL",
        )
        restart_after_session_expiry(cluster, victim)
        after_restart = loop.count()
        eventually(lambda: loop.count() >= after_restart + 10, 120, "10 transactions after restart")
    finally:
        loop.stop()
    outcomes = loop.outcomes
    seen = _read_committed(cluster.bootstrap(), topic)
    partial = {txn: sorted(ps) for txn, ps in seen.items() if len(ps) != PARTITIONS}
    assert not partial, f"half-visible transactions: {partial}; errors {outcomes.errors[-20:]}"
    assert outcomes.committed <= set(seen), sorted(outcomes.committed - set(seen))[:20]
    visible_aborted = outcomes.aborted & set(seen)
    assert not visible_aborted, sorted(visible_aborted)[:20]
    assert set(seen) <= outcomes.committed | outcomes.unknown
