"""ElectLeaders (43) in cluster mode (Kafka 3.9's ZooKeeper mode: the active controller's
``ReplicaLeaderElection`` event), against three ``franz broker`` processes.

Its own cluster (ids 1-3) with a 6 s ZooKeeper session timeout. Roles follow whoever holds
``/controller`` (``C``, never stopped) and the two others (``A`` < ``B``): partition 0 is on
[A, B], partition 1 on [C, A]. The unclean test kills A and B and restarts B, so it comes
last. The successful PREFERRED election (preferred replica live and in the ISR but not
leading) cannot be reached without replication (ISRs only shrink today):
``tests/unit/controller/test_replica_election.py`` covers it.
"""

from __future__ import annotations

import datetime
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import ElectionType, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from franz.errors import ErrorCode  # noqa: E402
from franz.protocol.messages import build, request_type, response_type  # noqa: E402
from tests.support.cluster import (  # noqa: E402
    Cluster,
    eventually,
    new_chroot,
    produce_all,
    start_cluster,
)
from tests.support.wire import WireClient  # noqa: E402
from tests.support.zookeeper import ZooKeeperServer  # noqa: E402

SESSION_MS = 6000
ELECT_LEADERS = 43
PREFERRED = 0
UNCLEAN = 1
TOPIC = "elect"


@dataclass(frozen=True)
class Roles:
    cluster: Cluster
    c: int  # the controller
    a: int
    b: int


@pytest.fixture(scope="module")
def roles(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Roles]:
    base = Path(tmp_path_factory.mktemp("elect-leaders"))
    props = {"zookeeper.session.timeout.ms": str(SESSION_MS)}
    zk = new_chroot(zookeeper_server.connect_string)
    with start_cluster(zk, base, extra_props=props) as cluster:
        eventually(lambda: cluster.controller_id() is not None, 30, "a controller")
        c = cluster.controller_id()
        assert c is not None
        a, b = sorted(set(cluster.brokers) - {c})
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
        assignment = [[a, b], [c, a]]
        topic = NewTopic(TOPIC, len(assignment), replica_assignment=assignment)
        admin.create_topics([topic], operation_timeout=30)[TOPIC].result(60)
        eventually(lambda: leader_isr(cluster, 0)[0] == a, 30, "partition 0 led by A")
        eventually(lambda: leader_isr(cluster, 1)[0] == c, 30, "partition 1 led by C")
        yield Roles(cluster, c, a, b)


def leader_isr(cluster: Cluster, partition: int) -> tuple[int, list[int]]:
    path = f"/brokers/topics/{TOPIC}/partitions/{partition}/state"
    if cluster.kazoo.exists(path) is None:
        return -2, []
    state = cluster.json(path)
    return int(state["leader"]), list(state["isr"])


def elect(
    bootstrap: str,
    election_type: int,
    partitions: dict[str, list[int]] | None,
    version: int = 2,
) -> tuple[int, dict[tuple[str, int], tuple[int, str | None]]]:
    """A raw ElectLeaders; the top-level error and (topic, partition) -> (error, message)."""
    body: dict[str, Any] = {
        "election_type": election_type,
        "timeout": datetime.timedelta(seconds=30),
        "topic_partitions": None
        if partitions is None
        else [{"topic": t, "partitions": ps} for t, ps in partitions.items()],
    }
    with WireClient.connect(bootstrap) as client:
        correlation_id = client.send(build(request_type(ELECT_LEADERS, version), body))
        response = client.recv(response_type(ELECT_LEADERS, version), correlation_id, 60)
    results = {
        (r.topic, p.partition_id): (int(p.error_code), p.error_message)
        for r in response.replica_election_results
        for p in r.partition_result
    }
    return int(getattr(response, "error_code", ErrorCode.NONE)), results


def test_no_election_needed_unknown_partitions_and_not_controller(roles: Roles) -> None:
    el_cluster = roles.cluster
    controller = el_cluster.brokers[roles.c].bootstrap
    for election_type in (PREFERRED, UNCLEAN):
        error, results = elect(controller, election_type, {TOPIC: [0, 1, 7], "nope": [0]})
        assert error == ErrorCode.NONE
        not_needed = (ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.ELECTION_NOT_NEEDED.message)
        unknown = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
        assert results == {
            (TOPIC, 0): not_needed,
            (TOPIC, 1): not_needed,
            (TOPIC, 7): unknown,
            ("nope", 0): unknown,
        }
        # Every partition: the ELECTION_NOT_NEEDED ones are left out (KafkaApis).
        assert elect(controller, election_type, None) == (ErrorCode.NONE, {})
    # A broker that is not the controller answers NOT_CONTROLLER for every partition.
    error, results = elect(el_cluster.brokers[roles.a].bootstrap, PREFERRED, {TOPIC: [0, 1]})
    assert (error, results) == (
        ErrorCode.NONE,
        {
            (TOPIC, 0): (ErrorCode.NOT_CONTROLLER, None),
            (TOPIC, 1): (ErrorCode.NOT_CONTROLLER, None),
        },
    )
    # v0 (no election type: preferred).
    assert elect(controller, PREFERRED, {TOPIC: [0]}, version=0)[1] == {(TOPIC, 0): not_needed}
    # confluent-kafka's AdminClient (librdkafka sends it to the controller).
    admin = AdminClient({"bootstrap.servers": el_cluster.bootstrap()})
    future = admin.elect_leaders(ElectionType.PREFERRED, [TopicPartition(TOPIC, 0)])
    ((tp, err),) = future.result(60).items()
    assert (tp.topic, tp.partition) == (TOPIC, 0)
    assert err is not None and err.code() == ErrorCode.ELECTION_NOT_NEEDED
    # franz leader-election (kafka-leader-election.sh) against the cluster.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "franz",
            "leader-election",
            "--bootstrap-server",
            el_cluster.bootstrap(),
            "--election-type",
            "preferred",
            "--all-topic-partitions",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Valid replica already elected" not in done.stdout  # filtered, as Kafka does


def test_unclean_election_of_a_leaderless_partition(roles: Roles) -> None:
    el_cluster, a, b = roles.cluster, roles.a, roles.b
    controller = el_cluster.brokers[roles.c].bootstrap
    # The follower dies: the controller shrinks the ISR.
    el_cluster.brokers[b].kill()
    eventually(lambda: leader_isr(el_cluster, 0) == (a, [a]), 30, "ISR shrinks to [A]")
    # The last ISR member dies: no leader, the ISR is kept (no unclean election by default).
    el_cluster.brokers[a].kill()
    eventually(lambda: leader_isr(el_cluster, 0) == (-1, [a]), 30, "partition 0 leaderless")
    # Nobody to elect.
    assert elect(controller, UNCLEAN, {TOPIC: [0]})[1] == {
        (TOPIC, 0): (
            ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
            f"Failed to elect leader for partition {TOPIC}-0 under strategy "
            "OfflinePartitionLeaderElectionStrategy",
        )
    }
    # B comes back, but it is not in the ISR: still no leader.
    el_cluster.brokers[b].start()
    eventually(
        lambda: len(el_cluster.kcat_metadata(el_cluster.brokers[roles.c])["brokers"]) == 2,
        30,
        "B registered again",
    )
    assert leader_isr(el_cluster, 0) == (-1, [a])
    # The preferred replica (A) is dead: no preferred election.
    (result,) = elect(controller, PREFERRED, {TOPIC: [0]})[1].values()
    assert result[0] == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, result
    # UNCLEAN elects B, the only live replica.
    assert elect(controller, UNCLEAN, {TOPIC: [0, 1]})[1] == {
        (TOPIC, 0): (ErrorCode.NONE, None),
        (TOPIC, 1): (ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.ELECTION_NOT_NEEDED.message),
    }
    assert leader_isr(el_cluster, 0) == (b, [b])
    (entry,) = el_cluster.kcat_metadata(el_cluster.brokers[roles.c], TOPIC)["topics"]
    assert {p["partition"]: p["leader"] for p in entry["partitions"]}[0] == b
    produce_all(el_cluster.bootstrap(), [(TOPIC, 0, b"after-unclean")])
    # B leads but is not the preferred replica, which is still dead.
    (result,) = elect(controller, PREFERRED, {TOPIC: [0]})[1].values()
    assert result[0] == ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, result
