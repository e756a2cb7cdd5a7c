"""A partition reassignment survives its controller (issue 18: "SIGKILL the controller during
a reassignment: it completes after failover").

Four ``franz broker`` processes; the partitions move between the three that are not the
controller, so that the SIGKILLed controller holds none of their replicas. The topic znode
records the move (``adding_replicas`` / ``removing_replicas``) before anything else
(Kafka's phase U), which is what the next controller resumes from: it bumps the leader epoch,
tells the replicas again, and completes the move once the leader's AlterPartition puts the
new replica in the ISR (the dead controller never committed it).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from tests.support.cluster import Cluster, eventually, new_chroot, start_cluster
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
from tests.support.zookeeper import ZooKeeperServer

PARTITIONS = 4


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("reassignment-failover"))
    props = {"replica.fetch.max.bytes": "4096"}
    chroot = new_chroot(zookeeper_server.connect_string)
    with start_cluster(chroot, base, ids=(4, 1, 2, 3), extra_props=props) as c:
        yield c


def test_controller_sigkilled_mid_move_completes_after_failover(cluster: Cluster) -> None:
    controller = cluster.controller_id()
    assert controller is not None
    a, b, c = sorted(i for i in cluster.brokers if i != controller)
    topic = "failover"
    before = {p: [a, b] if p % 2 == 0 else [b, a] for p in range(PARTITIONS)}
    after = {p: [b, c] if p % 2 == 0 else [c, b] for p in range(PARTITIONS)}
    create_topic(cluster, topic, before)
    survivors = ",".join(cluster.brokers[i].bootstrap for i in (a, b, c))
    traffic = Traffic(survivors, topic, PARTITIONS, value_size=1000)
    try:
        traffic.wait_acked(20_000, 120)
        answers = alter_reassignments(cluster, {(topic, p): r for p, r in after.items()})
        assert answers == {(topic, p): (0, None) for p in range(PARTITIONS)}
        cluster.brokers[controller].kill()
        killed_at = time.monotonic()
        # The move was under way when its controller died: the topic znode says so.
        znode = topic_znode(cluster, topic)
        assert znode["adding_replicas"], znode
        moving = {str(p) for p in znode["adding_replicas"]}
        eventually(
            lambda: cluster.controller_id() not in (None, controller),
            60,
            "another broker becomes the controller",
        )
        new_controller = cluster.controller_id()
        assert new_controller in (a, b, c)
        # Listed by the new controller as long as it is not done.
        for (t, p), (replicas, adding, removing) in list_reassignments(cluster).items():
            assert t == topic and str(p) in moving
            assert (replicas, adding, removing) == ([*after[p], a], [c], [a])
        took = wait_until_reassigned(cluster, topic, 180)
        print(f"completed {time.monotonic() - killed_at:.1f} s after the SIGKILL ({took:.1f})")
        time.sleep(1.0)
    finally:
        unreported = traffic.stop()
    assert unreported == 0
    assert traffic.delivery_errors == []
    znode = topic_znode(cluster, topic)
    assert znode["partitions"] == {str(p): r for p, r in after.items()}
    assert (znode["adding_replicas"], znode["removing_replicas"]) == ({}, {})
    for p in range(PARTITIONS):
        state = cluster.json(f"/brokers/topics/{topic}/partitions/{p}/state")
        assert sorted(state["isr"]) == sorted([b, c]) and state["leader"] in (b, c), state
    eventually(lambda: dirs_of(cluster, a, topic) == [], 30, f"broker {a}'s replicas deleted")
    for p in range(PARTITIONS):
        records = read_all(survivors, topic, p)
        for offset, value in traffic.acked[p].items():
            assert records.get(offset) == value, f"{topic}-{p}@{offset} lost"
        eventually(
            lambda p=p: log_bytes(cluster, b, topic, p) == log_bytes(cluster, c, topic, p),
            60,
            f"{topic}-{p}: the two new replicas hold the same bytes",
        )
