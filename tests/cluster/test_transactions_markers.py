"""WriteTxnMarkers reaching a broker that does not lead the partition (issue 19, three brokers).

A transaction coordinator sends WriteTxnMarkers to the leader its metadata names; after a
leadership move that broker may be a follower, or hold no replica at all. Kafka 3.9's
``KafkaApis.handleWriteTxnMarkersRequest`` answers per partition: a partition with no local
replica (``replicaManager.getMagic`` is empty) UNKNOWN_TOPIC_OR_PARTITION; a local follower
replica goes to ``appendRecords`` (``isFromClient=false``, acks=-1), whose leader check
answers NOT_LEADER_OR_FOLLOWER; the coordinator retries both (its
``TransactionMarkerRequestCompletionHandler``) and finds the new leader.

The topic's replicas are placed by hand (partition p on two of the three brokers, the
first preferred), so that every broker follows one partition and holds no replica of
another. With a confluent-kafka transaction open on all three partitions:

- WriteTxnMarkers v1 sent raw to each broker for the partition it follows and the one it
  does not hold answers NOT_LEADER_OR_FOLLOWER and UNKNOWN_TOPIC_OR_PARTITION, and writes
  nothing (no control batch in any replica, the transaction still open);
- a commit through the coordinator afterwards writes one COMMIT marker per partition,
  replicated byte for byte to the follower, and read_committed sees every record;
- leadership moved mid-commit: the data partition's leader is SIGSTOPped, the commit is
  asked for (EndTxn is answered once PrepareCommit is written; the coordinator's markers to
  the stopped leader go unanswered), the controller moves leadership to the follower when
  the stopped broker's ZooKeeper session expires, and the coordinator's retry reaches the
  new leader: the marker is written there and the transaction completes (CompleteCommit)
  with the old leader still stopped, which then rejoins holding only the replicated marker.
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from franz.coordinator.transaction.log_schema import partition_for
from franz.protocol.api_keys import ApiKey
from tests.support.clients import stored_batches
from tests.support.cluster import (
    Cluster,
    eventually,
    new_chroot,
    partition_state,
    start_cluster,
)
from tests.support.wire import WireClient, request_at
from tests.support.zookeeper import ZooKeeperServer

NONE = 0
UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
TXN_PARTITIONS = 3
#: partition -> replicas (the first preferred): broker b follows one partition, lacks another.
ASSIGNMENT = [[1, 2], [2, 3], [3, 1]]
FOLLOWED_BY = {2: 0, 3: 1, 1: 2}
NOT_HELD_BY = {3: 0, 1: 1, 2: 2}

pytestmark = pytest.mark.slow


@pytest.fixture
def txn_cluster(zookeeper_server: ZooKeeperServer, tmp_path: Path) -> Iterator[Cluster]:
    props = {
        "transaction.state.log.num.partitions": str(TXN_PARTITIONS),
        # One replica each: a transaction's coordinator writes its state without waiting
        # for the broker the test stops (never its coordinator).
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        # The stopped broker leaves the ISRs in seconds, so acks=all writes go on without it.
        "replica.lag.time.max.ms": "3000",
    }
    with start_cluster(
        new_chroot(zookeeper_server.connect_string), tmp_path, extra_props=props
    ) as c:
        yield c


def create_placed_topic(cluster: Cluster) -> str:
    topic = f"markers-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    new = NewTopic(topic, len(ASSIGNMENT), replica_assignment=ASSIGNMENT)
    admin.create_topics([new])[topic].result(30)
    for p, replicas in enumerate(ASSIGNMENT):
        eventually(
            lambda p=p, replicas=replicas: _led_with_full_isr(cluster, topic, p, replicas),
            30,
            f"{topic}-{p} led by {replicas[0]} with ISR {replicas}",
        )
    return topic


def _led_with_full_isr(cluster: Cluster, topic: str, partition: int, replicas: list[int]) -> bool:
    state = partition_state(cluster, topic, partition)
    return (
        state is not None
        and state["leader"] == replicas[0]
        and sorted(state["isr"]) == sorted(replicas)
    )


def transactional_id_coordinated_by(cluster: Cluster, avoid: int | None = None) -> str:
    """A fresh ``transactional.id`` whose coordinator (its ``__transaction_state``
    partition's leader) is not broker ``avoid``; the topic is created first (by a producer's
    InitProducerId) if need be."""
    warm_up = Producer(
        {"bootstrap.servers": cluster.bootstrap(), "transactional.id": "warm-up", "log_level": 2}
    )
    warm_up.init_transactions(60)
    for _ in range(100):
        tid = f"markers-{uuid.uuid4().hex[:8]}"
        if _coordinator(cluster, tid) not in (None, avoid):
            return tid
    raise AssertionError(f"every transactional id picked is coordinated by broker {avoid}")


def _coordinator(cluster: Cluster, tid: str) -> int | None:
    state = partition_state(cluster, "__transaction_state", partition_for(tid, TXN_PARTITIONS))
    return None if state is None else int(state["leader"])


def transaction_state(cluster: Cluster, tid: str) -> str:
    """DescribeTransactions on ``tid``'s coordinator: its state (``CompleteCommit``, ...)."""
    coordinator = _coordinator(cluster, tid)
    assert coordinator is not None
    with WireClient.connect(cluster.brokers[coordinator].bootstrap) as wire:
        answer = request_at(wire, ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [tid]})
    [state] = answer.transaction_states
    assert state.error_code == NONE, state
    return str(state.transaction_state)


def open_transaction(bootstrap: str, topic: str, tid: str, partitions: list[int]) -> Producer:
    """A confluent-kafka producer with a transaction open: record ``p`` in each partition."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "log_level": 2})
    producer.init_transactions(60)
    producer.begin_transaction()
    for p in partitions:
        producer.produce(topic, value=b"%d" % p, partition=p)
    assert producer.flush(60) == 0
    return producer


def open_txn_producer(wire: WireClient, topic: str, partition: int) -> tuple[int, int]:
    """The (producer id, epoch) with a transaction open in ``topic``-``partition``
    (DescribeProducers on its leader)."""
    answer = request_at(
        wire,
        ApiKey.DESCRIBE_PRODUCERS,
        0,
        {"topics": [{"name": topic, "partition_indexes": [partition]}]},
    )
    [described] = answer.topics[0].partitions
    assert described.error_code == NONE, described
    [state] = [s for s in described.active_producers if s.current_txn_start_offset >= 0]
    return state.producer_id, state.producer_epoch


def write_txn_markers(
    wire: WireClient, producer: tuple[int, int], topic: str, partitions: list[int]
) -> dict[int, int]:
    """WriteTxnMarkers v1 (what Kafka 3.9's coordinator sends): one COMMIT marker for
    ``partitions``; the error code per partition."""
    answer = request_at(
        wire,
        ApiKey.WRITE_TXN_MARKERS,
        1,
        {
            "markers": [
                {
                    "producer_id": producer[0],
                    "producer_epoch": producer[1],
                    "transaction_result": True,
                    "topics": [{"name": topic, "partition_indexes": partitions}],
                    "coordinator_epoch": 0,
                }
            ]
        },
    )
    [marker] = answer.markers
    assert marker.producer_id == producer[0]
    return {p.partition_index: int(p.error_code) for t in marker.topics for p in t.partitions}


def last_stable_offset(bootstrap: str, topic: str, partition: int) -> int:
    """ListOffsets (latest, read_committed) from ``bootstrap``: the partition's LSO."""
    with WireClient.connect(bootstrap) as wire:
        answer = request_at(
            wire,
            ApiKey.LIST_OFFSETS,
            7,
            {
                "replica_id": -1,
                "isolation_level": 1,
                "topics": [
                    {"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1}]}
                ],
            },
        )
    [described] = answer.topics[0].partitions
    assert described.error_code == NONE, described
    return int(described.offset)


def control_batches(cluster: Cluster, broker_id: int, topic: str, partition: int) -> list[Any]:
    return [
        b
        for b in stored_batches(cluster.brokers[broker_id], topic, partition)
        if b.is_control_batch
    ]


def read_committed(bootstrap: str, topic: str) -> list[tuple[int, bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "log_level": 2,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(len(ASSIGNMENT))])
    seen: list[tuple[int, bytes]] = []
    at_end: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while len(at_end) < len(ASSIGNMENT) and time.monotonic() < deadline:
            for m in consumer.consume(100, timeout=1.0):
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        at_end.add(m.partition())
                    continue
                at_end.discard(m.partition())
                seen.append((m.partition(), m.value()))
    finally:
        consumer.close()
    assert len(at_end) == len(ASSIGNMENT), f"read_committed stopped short: {seen}"
    return sorted(seen)


def test_markers_sent_to_a_follower_or_a_non_replica_are_refused_per_partition(
    txn_cluster: Cluster,
) -> None:
    cluster = txn_cluster
    topic = create_placed_topic(cluster)
    tid = transactional_id_coordinated_by(cluster)
    producer = open_transaction(cluster.bootstrap(), topic, tid, [0, 1, 2])
    with WireClient.connect(cluster.brokers[1].bootstrap) as leader_of_0:
        txn = open_txn_producer(leader_of_0, topic, 0)

    for broker_id, broker in cluster.brokers.items():
        followed, not_held = FOLLOWED_BY[broker_id], NOT_HELD_BY[broker_id]
        with WireClient.connect(broker.bootstrap) as wire:
            errors = write_txn_markers(wire, txn, topic, [followed, not_held])
        assert errors == {
            followed: NOT_LEADER_OR_FOLLOWER,
            not_held: UNKNOWN_TOPIC_OR_PARTITION,
        }, f"broker {broker_id}"
    # Nothing written: no replica holds a marker, and the transaction is still open.
    for p, replicas in enumerate(ASSIGNMENT):
        for broker_id in replicas:
            assert control_batches(cluster, broker_id, topic, p) == [], (broker_id, p)
    with WireClient.connect(cluster.brokers[1].bootstrap) as leader_of_0:
        assert open_txn_producer(leader_of_0, topic, 0) == txn

    producer.commit_transaction(60)
    assert read_committed(cluster.bootstrap(), topic) == [(0, b"0"), (1, b"1"), (2, b"2")]
    for p, replicas in enumerate(ASSIGNMENT):
        for broker_id in replicas:
            eventually(
                lambda b=broker_id, p=p: len(control_batches(cluster, b, topic, p)) == 1,
                30,
                f"one COMMIT marker in {topic}-{p} on broker {broker_id}",
            )


def test_coordinator_retries_markers_at_the_new_leader_after_a_move_mid_commit(
    txn_cluster: Cluster,
) -> None:
    cluster = txn_cluster
    topic = create_placed_topic(cluster)
    old_leader, new_leader = ASSIGNMENT[0]
    # The coordinator must stay up: not on the broker stopped below.
    tid = transactional_id_coordinated_by(cluster, avoid=old_leader)
    producer = open_transaction(cluster.bootstrap(), topic, tid, [0])
    epoch_before = partition_state(cluster, topic, 0)["leader_epoch"]  # type: ignore[index]

    victim = cluster.brokers[old_leader]
    os.kill(victim.pid, signal.SIGSTOP)
    try:
        # EndTxn: the coordinator writes PrepareCommit and answers, then sends WriteTxnMarkers
        # to the leader it knows, which does not answer.
        producer.commit_transaction(120)
        assert transaction_state(cluster, tid) == "PrepareCommit"  # the marker is pending
        assert (partition_state(cluster, topic, 0) or {}).get("leader") == old_leader
        # The stopped broker's session expires: the controller elects the follower, and the
        # coordinator's retry writes the marker there.
        eventually(
            lambda: (partition_state(cluster, topic, 0) or {}).get("leader") == new_leader,
            90,
            f"{topic}-0 led by broker {new_leader}",
        )
        state = partition_state(cluster, topic, 0)
        assert state is not None and state["leader_epoch"] > epoch_before
        eventually(
            lambda: len(control_batches(cluster, new_leader, topic, 0)) == 1,
            90,
            f"the COMMIT marker on broker {new_leader}, the new leader",
        )
        eventually(
            lambda: transaction_state(cluster, tid) == "CompleteCommit",
            60,
            "the transaction completed",
        )
        # The new leader's last stable offset is past the marker: the record is committed
        # there (read below, once the stopped broker answers again: librdkafka's consumer
        # close waits for it).
        assert last_stable_offset(cluster.brokers[new_leader].bootstrap, topic, 0) == 2
    finally:
        os.kill(victim.pid, signal.SIGCONT)
    # The old leader rejoins as a follower and copies the marker; it never wrote one of its
    # own (a stale leader's marker would have been truncated: still exactly one).
    eventually(
        lambda: sorted((partition_state(cluster, topic, 0) or {}).get("isr", [])) == [1, 2],
        90,
        f"broker {old_leader} back in the ISR of {topic}-0",
    )
    eventually(
        lambda: len(control_batches(cluster, old_leader, topic, 0)) == 1,
        60,
        f"the COMMIT marker replicated to broker {old_leader}",
    )
    assert read_committed(cluster.bootstrap(), topic) == [(0, b"0")]
