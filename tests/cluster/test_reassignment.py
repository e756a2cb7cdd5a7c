"""Partition reassignment (issue 18, item 1: Kafka 3.9's KIP-455 in ZooKeeper mode) with
broker processes, a real ZooKeeper and confluent-kafka producing at acks=all meanwhile.

The module's cluster (brokers 1-3) fetches as followers at most ``FETCH_BYTES`` per
partition (``replica.fetch.max.bytes``) and producers write small batches, so that a
replica being added takes a few seconds to catch up: long enough to list, cancel or delete
mid-move.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from franz.protocol.api_keys import ApiKey
from tests.support import metrics
from tests.support.cluster import Cluster, eventually, new_chroot, produce_all, start_cluster
from tests.support.reassignment import (
    Traffic,
    alter_reassignments,
    create_topic,
    dirs_of,
    list_reassignments,
    log_bytes,
    read_all,
    topic_znode,
    wait_until_reassigned,
)
from tests.support.wire import WireClient, request_at
from tests.support.zookeeper import ZooKeeperServer

#: ``replica.fetch.max.bytes``: one small batch per partition per follower fetch.
FETCH_BYTES = 4096


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("reassignment"))
    props = {"replica.fetch.max.bytes": str(FETCH_BYTES), "metrics.listener": "127.0.0.1:0"}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def test_move_from_1_2_to_2_3_under_acks_all(cluster: Cluster) -> None:
    """Issue 18's acceptance, at a CI size: six RF=2 partitions move from brokers {1,2} to
    {2,3} while an idempotent acks=all producer keeps writing; the move completes, every
    acknowledged record is on both new replicas (byte-identical logs), broker 1's replica
    directories are gone, and the producer saw no error."""
    topic = "move"
    before = {p: [1, 2] if p % 2 == 0 else [2, 1] for p in range(6)}
    after = {p: [2, 3] if p % 2 == 0 else [3, 2] for p in range(6)}
    create_topic(cluster, topic, before)
    traffic = Traffic(cluster.bootstrap(), topic, 6, value_size=1000)
    try:
        traffic.wait_acked(12_000, 120)  # 12 MB before the move starts
        answers = alter_reassignments(cluster, {(topic, p): r for p, r in after.items()})
        assert answers == {(topic, p): (0, None) for p in range(6)}
        moving = list_reassignments(cluster)
        assert moving, "nothing listed as moving right after the request"
        for (t, p), (replicas, adding, removing) in moving.items():
            assert t == topic
            assert replicas == [*after[p], 1]  # RS = TRS + ORS
            assert (adding, removing) == ([3], [1])
        assert topic_znode(cluster, topic)["adding_replicas"]  # recorded for a failover
        wait_until_reassigned(cluster, topic, 180)
        time.sleep(1.0)  # a little more traffic on the new replicas
    finally:
        unreported = traffic.stop()
    assert unreported == 0
    assert traffic.delivery_errors == []
    znode = topic_znode(cluster, topic)
    assert znode["partitions"] == {str(p): r for p, r in after.items()}
    assert (znode["adding_replicas"], znode["removing_replicas"]) == ({}, {})
    for p in range(6):
        state = cluster.json(f"/brokers/topics/{topic}/partitions/{p}/state")
        assert sorted(state["isr"]) == [2, 3] and state["leader"] in (2, 3), state
    eventually(lambda: dirs_of(cluster, 1, topic) == [], 30, "broker 1's replicas deleted")
    for p in range(6):
        records = read_all(cluster.bootstrap(), topic, p)
        for offset, value in traffic.acked[p].items():
            assert records.get(offset) == value, f"{topic}-{p}@{offset} lost"
        eventually(
            lambda p=p: log_bytes(cluster, 2, topic, p) == log_bytes(cluster, 3, topic, p),
            60,
            f"{topic}-{p}: the two new replicas hold the same bytes",
        )
    assert sum(len(v) for v in traffic.acked.values()) >= 12_000


def test_requests_to_another_broker_are_not_controller(cluster: Cluster) -> None:
    """Only the active controller answers (Kafka's ZooKeeper mode); the others say
    NOT_CONTROLLER, with Kafka's message, at top level."""
    controller = cluster.controller_id()
    other = next(b for i, b in cluster.brokers.items() if i != controller)
    with WireClient.connect(other.bootstrap) as client:
        alter = request_at(
            client,
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            0,
            {"topics": [{"name": "t", "partitions": [{"partition_index": 0, "replicas": [1]}]}]},
        )
        listed = request_at(client, ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, {"topics": None})
    for response in (alter, listed):
        assert int(response.error_code) == 41
        assert response.error_message == "This is not the correct controller for this cluster."


def test_cancel_mid_move_reverts_to_the_original_replicas(cluster: Cluster) -> None:
    """A null target cancels (KIP-455): the partition goes back to its original replicas
    at once, the added replica is stopped and its directory deleted, nothing is lost."""
    topic = "cancel"
    create_topic(cluster, topic, {0: [1, 2]})
    traffic = Traffic(cluster.bootstrap(), topic, 1, value_size=1000)
    try:
        traffic.wait_acked(15_000, 120)
        assert alter_reassignments(cluster, {(topic, 0): [2, 3]}) == {(topic, 0): (0, None)}
        started = time.monotonic()
        assert list_reassignments(cluster) == {(topic, 0): ([2, 3, 1], [3], [1])}
        assert alter_reassignments(cluster, {(topic, 0): None}) == {(topic, 0): (0, None)}
        print(f"cancelled {time.monotonic() - started:.2f} s into the move")
        assert list_reassignments(cluster) == {}
        # Nothing left to cancel.
        assert alter_reassignments(cluster, {(topic, 0): None}) == {
            (topic, 0): (85, "No partition reassignment is in progress.")
        }
        time.sleep(1.0)
    finally:
        unreported = traffic.stop()
    assert unreported == 0
    assert traffic.delivery_errors == []
    znode = topic_znode(cluster, topic)
    assert sorted(znode["partitions"]["0"]) == [1, 2]  # the origin; its order may change
    assert (znode["adding_replicas"], znode["removing_replicas"]) == ({}, {})
    eventually(lambda: dirs_of(cluster, 3, topic) == [], 30, "broker 3's added replica deleted")
    records = read_all(cluster.bootstrap(), topic, 0)
    for offset, value in traffic.acked[0].items():
        assert records.get(offset) == value, f"{topic}-0@{offset} lost"
    eventually(
        lambda: log_bytes(cluster, 1, topic, 0) == log_bytes(cluster, 2, topic, 0),
        60,
        "the original replicas hold the same bytes",
    )


def test_legacy_znode_moves_partitions_and_is_deleted_when_done(cluster: Cluster) -> None:
    """``/admin/reassign_partitions`` (``kafka-reassign-partitions --zookeeper``): the
    controller starts the moves it names, removes each partition as it completes and deletes
    the znode when none is left; a partition that cannot start (an unknown topic) is removed
    at once. A second znode, created after the first was deleted, is acted on too."""
    topic = "legacy"
    create_topic(cluster, topic, {0: [1, 2], 1: [2, 1]})
    produce_all(cluster.bootstrap(), [(topic, p, b"x" * 100) for p in (0, 1) for _ in range(100)])
    path = "/admin/reassign_partitions"
    moves = [
        {"topic": topic, "partition": 0, "replicas": [2, 3]},
        {"topic": topic, "partition": 1, "replicas": [3, 2]},
        {"topic": "no-such-topic", "partition": 0, "replicas": [1]},
    ]
    cluster.kazoo.create(path, json.dumps({"version": 1, "partitions": moves}).encode())
    eventually(lambda: cluster.kazoo.exists(path) is None, 60, "the znode is deleted")
    wait_until_reassigned(cluster, topic, 60)
    assert topic_znode(cluster, topic)["partitions"] == {"0": [2, 3], "1": [3, 2]}
    eventually(lambda: dirs_of(cluster, 1, topic) == [], 30, "broker 1's replicas deleted")

    back = [{"topic": topic, "partition": 0, "replicas": [1, 2]}]
    cluster.kazoo.create(path, json.dumps({"version": 1, "partitions": back}).encode())
    eventually(lambda: cluster.kazoo.exists(path) is None, 60, "the second znode is deleted")
    wait_until_reassigned(cluster, topic, 60)
    assert topic_znode(cluster, topic)["partitions"]["0"] == [1, 2]
    eventually(lambda: dirs_of(cluster, 3, topic) == [f"{topic}-1"], 30, "3 keeps only p1")
    records = read_all(cluster.bootstrap(), topic, 0)
    assert len(records) == 100


def test_topic_deleted_mid_move_is_deleted_and_its_move_dropped(cluster: Cluster) -> None:
    """A topic marked for deletion while one of its partitions moves is deleted at once, as
    Kafka 3.9 does (its ``processTopicDeletion`` marks reassigning topics ineligible before
    queueing them, which halts nothing for a topic not queued yet): every replica of the
    moving set is deleted, the move is forgotten, and meanwhile the move cannot be cancelled
    (the topic is being deleted). The broker receiving the new replica is SIGSTOPped (less
    than its session timeout), so that the move cannot complete first; its leader counts the
    partition as reassigning and not as under-replicated meanwhile."""
    topic = "doomed"
    controller = cluster.controller_id()
    assert controller is not None
    # The replica moves from the controller to the broker that will be stopped.
    x, y = sorted(b for b in cluster.brokers if b != controller)
    create_topic(cluster, topic, {0: [controller, x]})
    produce_all(cluster.bootstrap(), [(topic, 0, b"y" * 1000) for _ in range(2000)])
    stopped = cluster.brokers[y]
    os.kill(stopped.pid, signal.SIGSTOP)
    try:
        assert alter_reassignments(cluster, {(topic, 0): [x, y]}) == {(topic, 0): (0, None)}
        assert list_reassignments(cluster) == {(topic, 0): ([x, y, controller], [y], [controller])}
        url = metrics.metrics_url(cluster.brokers[controller])  # the leader, still
        assert url is not None

        def counted() -> bool:
            samples = metrics.scrape(url)
            reassigning = metrics.value(
                samples, "kafka_server_replicamanager_reassigningpartitions"
            )
            under = metrics.value(samples, "kafka_server_replicamanager_underreplicatedpartitions")
            return reassigning == 1 and under == 0

        eventually(counted, 10, "the leader counts one partition reassigning, none URP")
        cluster.kazoo.create(f"/admin/delete_topics/{topic}", makepath=True)
        time.sleep(0.5)  # the controller starts the deletion; the stopped broker holds it up
        assert alter_reassignments(cluster, {(topic, 0): None}) == {
            (topic, 0): (3, "The partition does not exist.")
        }
    finally:
        os.kill(stopped.pid, signal.SIGCONT)
    eventually(
        lambda: cluster.kazoo.exists(f"/brokers/topics/{topic}") is None,
        60,
        "the topic is deleted",
    )
    eventually(
        lambda: cluster.kazoo.exists(f"/admin/delete_topics/{topic}") is None,
        10,
        "the deletion marker is removed after the topic",
    )
    for broker_id in (1, 2, 3):
        eventually(
            lambda b=broker_id: dirs_of(cluster, b, topic) == [],
            30,
            f"broker {broker_id} has no replica of {topic} left",
        )
    assert list_reassignments(cluster) == {}
