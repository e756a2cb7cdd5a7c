"""Replication faults (issue 17, "Faults"): a zombie leader is fenced and follows, and
unclean leader election chooses between staying offline and losing records.

Each test starts its own cluster of three ``franz broker`` processes (they stop and kill
brokers) with a short ``replica.lag.time.max.ms``.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import AdminClient, NewTopic

from franz.errors import ErrorCode
from tests.support.cluster import (
    Cluster,
    eventually,
    log_bytes,
    new_chroot,
    partition_state,
    produce_acked,
    read_numbers,
    start_cluster,
)
from tests.support.wire import WireClient, batch, metadata, produce
from tests.support.zookeeper import ZooKeeperServer

LAG_MS = 3000


@pytest.fixture
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("replication-faults"))
    props = {"replica.lag.time.max.ms": str(LAG_MS)}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def create_topic(
    cluster: Cluster, topic: str, replicas: list[int], config: dict[str, str] | None = None
) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    new = NewTopic(topic, 1, replica_assignment=[replicas], config=config or {})
    admin.create_topics([new], operation_timeout=30)[topic].result(60)
    eventually(lambda: state(cluster, topic)["isr"] == replicas, 60, f"{topic}: ISR {replicas}")


def state(cluster: Cluster, topic: str) -> dict[str, Any]:
    """Partition 0's state; a leaderless placeholder before the controller wrote it."""
    found = partition_state(cluster, topic)
    return found if found is not None else {"leader": -1, "isr": [], "leader_epoch": -1}


def test_zombie_leader_is_fenced_truncates_and_follows(cluster: Cluster) -> None:
    controller = cluster.controller_id()
    assert controller is not None
    zombie = next(b for b in (1, 2, 3) if b != controller)
    others = [b for b in (1, 2, 3) if b != zombie]
    topic = "zombie"
    create_topic(cluster, topic, [zombie, *others], {"min.insync.replicas": "2"})
    produce_acked(cluster.bootstrap(), topic, range(50))
    epoch_before = state(cluster, topic)["leader_epoch"]

    process = cluster.brokers[zombie]
    os.kill(process.pid, signal.SIGSTOP)
    try:
        # Past its ZooKeeper session: the controller elects another leader from the ISR.
        eventually(lambda: state(cluster, topic)["leader"] in others, 60, "a new leader is elected")
        new_leader = state(cluster, topic)["leader"]
        assert state(cluster, topic)["leader_epoch"] > epoch_before
        live = ",".join(cluster.brokers[b].bootstrap for b in others)
        produce_acked(live, topic, range(50, 100))
    finally:
        os.kill(process.pid, signal.SIGCONT)

    # The zombie, woken, may still believe it leads: a write it takes at once is never
    # acknowledged (its followers fetch from the new leader; then it learns and steps down).
    with WireClient.connect(process.bootstrap, timeout=30) as client:
        response = produce(client, topic, 0, bytes(batch((None, b"zombie"))), acks=-1)
    assert int(response.error_code) != ErrorCode.NONE, response

    # It truncates whatever it took and follows the new leader, byte for byte.
    eventually(lambda: sorted(state(cluster, topic)["isr"]) == [1, 2, 3], 60, "the zombie rejoins")
    eventually(
        lambda: (
            log_bytes(cluster.brokers[zombie], topic)
            == log_bytes(cluster.brokers[new_leader], topic)
        ),
        60,
        "the zombie's log is its new leader's",
    )
    assert read_numbers(cluster.bootstrap(), topic) == list(range(100))
    with WireClient.connect(process.bootstrap) as client:
        answer = metadata(client, [topic])
    [entry] = answer.topics
    assert entry.partitions[0].leader_id == new_leader


def test_unclean_leader_election_off_stays_offline_on_loses_unreplicated(
    cluster: Cluster,
) -> None:
    # Two topics led by broker 1 with broker 2 as follower: ``clean`` keeps the default
    # (unclean.leader.election.enable=false), ``unclean`` allows it.
    create_topic(cluster, "clean", [1, 2])
    create_topic(cluster, "unclean", [1, 2], {"unclean.leader.election.enable": "true"})
    for topic in ("clean", "unclean"):
        produce_acked(cluster.bootstrap(), topic, range(10))
    # The follower dies: the ISRs shrink to the leader, which goes on acknowledging alone.
    cluster.brokers[2].kill()
    for topic in ("clean", "unclean"):
        eventually(lambda t=topic: state(cluster, t)["isr"] == [1], 60, f"{topic}: ISR [1]")
        produce_acked(cluster.brokers[1].bootstrap, topic, range(10, 20))
    # Then the leader dies, and the out-of-sync follower comes back.
    cluster.brokers[1].kill()
    for topic in ("clean", "unclean"):
        eventually(lambda t=topic: state(cluster, t)["leader"] == -1, 60, f"{topic}: offline")
    cluster.brokers[2].start()

    # Allowed: broker 2 leads, without the records it never had, and the controller says so.
    eventually(lambda: state(cluster, "unclean")["leader"] == 2, 60, "unclean: broker 2 leads")
    assert read_numbers(cluster.brokers[2].bootstrap, "unclean") == list(range(10))
    outputs = "".join(b.output() for b in cluster.brokers.values())
    assert "nclean leader election" in outputs

    # Not allowed: the partition stays offline (rather than losing committed records), and
    # Metadata says so.
    time.sleep(2)
    assert state(cluster, "clean")["leader"] == -1
    assert state(cluster, "clean")["isr"] == [1]
    with WireClient.connect(cluster.brokers[2].bootstrap) as client:
        [entry] = metadata(client, ["clean"]).topics
    assert int(entry.partitions[0].error_code) == ErrorCode.LEADER_NOT_AVAILABLE
    assert entry.partitions[0].leader_id == -1

    # The old leader returns: it leads ``clean`` again with all 20 records, and follows
    # broker 2 for ``unclean``, truncated to broker 2's log.
    cluster.brokers[1].start()
    eventually(lambda: state(cluster, "clean")["leader"] == 1, 60, "clean: broker 1 leads")
    assert read_numbers(cluster.bootstrap(), "clean") == list(range(20))
    eventually(lambda: sorted(state(cluster, "unclean")["isr"]) == [1, 2], 60, "unclean: 1 rejoins")
    eventually(
        lambda: (
            log_bytes(cluster.brokers[1], "unclean") == log_bytes(cluster.brokers[2], "unclean")
        ),
        60,
        "unclean: broker 1 truncated to broker 2's log",
    )
    assert read_numbers(cluster.bootstrap(), "unclean") == list(range(10))
