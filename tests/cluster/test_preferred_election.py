"""Preferred leader elections the controller starts by itself (Kafka 3.9's ZooKeeper mode):
``/admin/preferred_replica_election`` (ZkTriggered, resumed by a new controller) and the
automatic rebalance (``auto.leader.rebalance.enable``), against three ``franz broker``
processes.

Roles follow whoever holds ``/controller`` (``C``) and the two others (``A`` < ``B``). The
topics' partitions are on [A, B] only, so A is their preferred replica.

How leadership moves away from a preferred replica that stays in the ISR: A stops (controlled
shutdown: B leads, the ISR is [B]) and comes back; replication then brings A back into the ISR
([B, A]: B, the leader, adds it through AlterPartition once A caught up). A preferred replica
outside the ISR is one that is stopped.

The module's cluster has the automatic rebalance off; the rebalance test starts a cluster of
its own (with it on, checking every second) and comes first, so the two never run together.
The failover test kills the controller, so it comes last.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import ElectionType, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.support.cluster import (  # noqa: E402
    Cluster,
    eventually,
    new_chroot,
    produce_all,
    start_cluster,
)
from tests.support.zookeeper import ZooKeeperServer  # noqa: E402

PATH = "/admin/preferred_replica_election"
TOPIC = "pref"
#: Partitions on [A, B], each used by one test.
PARTITIONS = 4
CHECKING = "Processing automatic preferred replica leader election"


@dataclass(frozen=True)
class Roles:
    cluster: Cluster
    c: int  # the controller
    a: int
    b: int


def leader_isr(cluster: Cluster, topic: str, partition: int) -> tuple[int, list[int]]:
    state = cluster.json(f"/brokers/topics/{topic}/partitions/{partition}/state")
    return int(state["leader"]), list(state["isr"])


def controller_roles(cluster: Cluster) -> tuple[int, int, int]:
    eventually(lambda: cluster.controller_id() is not None, 30, "a controller")
    c = cluster.controller_id()
    assert c is not None
    a, b = sorted(set(cluster.brokers) - {c})
    return c, a, b


def create_topic(cluster: Cluster, topic: str, assignment: list[list[int]]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    new = NewTopic(topic, len(assignment), replica_assignment=assignment)
    admin.create_topics([new], operation_timeout=30)[topic].result(60)
    for p, replicas in enumerate(assignment):
        eventually(
            lambda p=p, r=replicas[0]: leader_isr(cluster, topic, p)[0] == r,  # type: ignore[misc]
            30,
            f"{topic}-{p} led by {replicas[0]}",
        )


def move_leadership_away(
    cluster: Cluster, a: int, b: int, topic: str, partitions: int, *, restart: bool = True
) -> None:
    """A stops (controlled shutdown: B leads with ISR [B]) and, if ``restart``, starts again."""
    cluster.brokers[a].stop()
    for p in range(partitions):
        eventually(
            lambda p=p: leader_isr(cluster, topic, p) == (b, [b]),  # type: ignore[misc]
            30,
            f"{topic}-{p} led by {b} alone",
        )
    if restart:
        restart_broker(cluster, a, b)


def restart_broker(cluster: Cluster, a: int, b: int) -> None:
    cluster.brokers[a].start()
    eventually(
        lambda: (
            str(a) in cluster.kazoo.get_children("/brokers/ids")
            and len(metadata_brokers(cluster, b)) == 3
        ),
        30,
        f"broker {a} registered again",
    )


def metadata_brokers(cluster: Cluster, broker: int) -> list[int]:
    return [int(x["id"]) for x in cluster.kcat_metadata(cluster.brokers[broker])["brokers"]]


def wait_isr(cluster: Cluster, topic: str, partition: int, leader: int, isr: list[int]) -> None:
    """Until ``topic-partition`` is led by ``leader`` with ``isr`` (replication adds a
    caught-up follower back)."""
    eventually(
        lambda: leader_isr(cluster, topic, partition) == (leader, isr),
        60,
        f"{topic}-{partition} led by {leader} with ISR {isr}",
    )


def write_election(cluster: Cluster, data: bytes) -> None:
    cluster.kazoo.create(PATH, data, makepath=True)
    eventually(lambda: cluster.kazoo.exists(PATH) is None, 30, f"{PATH} deleted by the controller")


def election_json(*partitions: tuple[str, int]) -> bytes:
    """``PreferredReplicaElectionZNode.encode``, as Kafka's tools write it."""
    body = {"version": 1, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    return json.dumps(body, separators=(",", ":")).encode()


# -- the automatic rebalance (its own cluster, first) -----------------------------------------


def test_auto_rebalance_elects_preferred_leaders_only_while_imbalanced(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> None:
    base = Path(tmp_path_factory.mktemp("auto-rebalance"))
    props = {
        "auto.leader.rebalance.enable": "true",
        "leader.imbalance.check.interval.seconds": "1",
    }
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as cl:
        c, a, b = controller_roles(cl)
        create_topic(cl, "auto", [[a, b], [b, a]])
        # Scheduled on the controller (5 s after its failover, then every second), balanced:
        # nothing elected.
        eventually(lambda: cl.brokers[c].output().count(CHECKING) >= 2, 30, "two checks")
        assert "triggered by AutoTriggered" not in cl.brokers[c].output()
        # A's partition moves to B while A is down: A is imbalanced (1 of 1), but its
        # preferred replica cannot lead: an empty election, nothing changes.
        move_leadership_away(cl, a, b, "auto", 1, restart=False)
        eventually(
            lambda: "for partitions  triggered by AutoTriggered" in cl.brokers[c].output(),
            30,
            "an auto election with nothing electable",
        )
        assert leader_isr(cl, "auto", 0) == (b, [b])
        # A comes back and rejoins the ISR: a check gives it its leadership back, the ISR
        # unchanged by the election.
        restart_broker(cl, a, b)
        eventually(lambda: leader_isr(cl, "auto", 0) == (a, [b, a]), 60, "auto-0 back to A")
        assert (
            f"Partition auto-0 completed preferred replica leader election. New leader is {a}"
            in (cl.brokers[c].output())
        )
        # B's own partition (A left its ISR when it stopped, and rejoined) was never moved.
        wait_isr(cl, "auto", 1, b, [b, a])
        produce_all(cl.bootstrap(), [("auto", 0, b"after the rebalance")])
        # Only the active controller checks; a new one starts checking after its failover.
        for other in (a, b):
            assert CHECKING not in cl.brokers[other].output()
        cl.brokers[c].stop()
        eventually(lambda: cl.controller_id() in (a, b), 30, "a new controller")
        new = cl.controller_id()
        assert new is not None
        eventually(lambda: CHECKING in cl.brokers[new].output(), 30, "checks on the new controller")
        assert CHECKING not in cl.brokers[a if new == b else b].output()


# -- /admin/preferred_replica_election (the module's cluster, automatic rebalance off) ---------


@pytest.fixture(scope="module")
def roles(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Roles]:
    base = Path(tmp_path_factory.mktemp("preferred-election"))
    props = {"auto.leader.rebalance.enable": "false"}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as cl:
        c, a, b = controller_roles(cl)
        create_topic(cl, TOPIC, [[a, b]] * PARTITIONS)
        move_leadership_away(cl, a, b, TOPIC, PARTITIONS)
        for p in range(PARTITIONS):
            wait_isr(cl, TOPIC, p, b, [b, a])
        yield Roles(cl, c, a, b)


def test_znode_elects_the_preferred_replica_and_is_deleted(roles: Roles) -> None:
    cl, a, b = roles.cluster, roles.a, roles.b
    assert leader_isr(cl, TOPIC, 0) == (b, [b, a])
    write_election(cl, election_json((TOPIC, 0), ("nope", 0)))
    assert leader_isr(cl, TOPIC, 0) == (a, [b, a])  # ISR unchanged by a preferred election
    out = cl.brokers[roles.c].output()
    assert (
        f"Partition {TOPIC}-0 completed preferred replica leader election. New leader is {a}" in out
    )
    assert "Skipping replica leader election (PREFERRED) for partition nope-0 by ZkTriggered" in out
    # Every broker's metadata follows, and the new leader takes writes.
    eventually(
        lambda: (
            {
                p["partition"]: p["leader"]
                for p in cl.kcat_metadata(cl.brokers[b], TOPIC)["topics"][0]["partitions"]
            }[0]
            == a
        ),
        30,
        "B's metadata shows A leading",
    )
    produce_all(cl.bootstrap(), [(TOPIC, 0, b"led by the preferred replica")])
    # Nothing left to do: the path can be used again, the election is not needed.
    write_election(cl, election_json((TOPIC, 0)))
    assert leader_isr(cl, TOPIC, 0) == (a, [b, a])


def test_znode_for_a_preferred_replica_outside_the_isr_elects_nothing(roles: Roles) -> None:
    cl, a, b = roles.cluster, roles.a, roles.b
    # A stops: it leaves the ISRs (controlled shutdown), and comes back afterwards.
    cl.brokers[a].stop()
    wait_isr(cl, TOPIC, 1, b, [b])
    try:
        write_election(cl, election_json((TOPIC, 1)))
        assert leader_isr(cl, TOPIC, 1) == (b, [b])
    finally:
        restart_broker(cl, a, b)
        for p in (1, 2, 3):
            wait_isr(cl, TOPIC, p, b, [b, a])
    out = cl.brokers[roles.c].output()
    assert f"Error completing replica leader election (PREFERRED) for partition {TOPIC}-1" in out
    assert (
        f"Partition {TOPIC}-1 failed to complete preferred replica leader election to {a}. "
        f"Leader is still {b}"
    ) in out


@pytest.mark.parametrize("data", [b"not json {", b'{"version":1}', b'{"partitions":[{"x":1}]}'])
def test_malformed_znode_is_logged_and_deleted(roles: Roles, data: bytes) -> None:
    cl = roles.cluster
    before = cl.brokers[roles.c].output().count(f"malformed znode {PATH}")
    write_election(cl, data)
    assert cl.brokers[roles.c].output().count(f"malformed znode {PATH}") == before + 1


def test_elect_leaders_preferred_succeeds_through_the_admin_client(roles: Roles) -> None:
    """The success path of ElectLeaders PREFERRED (AdminClientTriggered), the same election."""
    cl, a, b = roles.cluster, roles.a, roles.b
    assert leader_isr(cl, TOPIC, 3) == (b, [b, a])
    admin = AdminClient({"bootstrap.servers": cl.bootstrap()})
    future = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, 3)])
    ((tp, err),) = future.result(60).items()
    assert (tp.topic, tp.partition, err) == (TOPIC, 3, None)
    assert leader_isr(cl, TOPIC, 3) == (a, [b, a])
    # Not ZkTriggered: the znode is not touched, nothing logged as a znode election.
    assert cl.kazoo.exists(PATH) is None
    assert f"Partition {TOPIC}-3 completed preferred replica leader election" not in (
        cl.brokers[roles.c].output()
    )


def test_new_controller_resumes_the_election_left_in_the_znode(roles: Roles) -> None:
    cl, a, b, c = roles.cluster, roles.a, roles.b, roles.c
    assert leader_isr(cl, TOPIC, 2) == (b, [b, a])
    # No controller acts on it: C is dead, A and B were never controllers (no watch).
    cl.brokers[c].kill()
    cl.kazoo.create(PATH, election_json((TOPIC, 2)), makepath=True)
    eventually(lambda: cl.controller_id() in (a, b), 30, "a new controller")
    new = cl.controller_id()
    assert new is not None
    eventually(lambda: cl.kazoo.exists(PATH) is None, 30, f"{PATH} deleted by the new controller")
    assert leader_isr(cl, TOPIC, 2) == (a, [b, a])
    out = cl.brokers[new].output()
    assert f"Partitions undergoing preferred replica election: {TOPIC}-2" in out
    assert f"Resuming preferred replica election for partitions: {TOPIC}-2" in out
    assert f"Partition {TOPIC}-2 completed preferred replica leader election" in out
