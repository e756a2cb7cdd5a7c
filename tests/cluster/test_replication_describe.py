"""``topics --describe --under-replicated-partitions`` / ``--unavailable-partitions`` on a
cluster with a stopped broker (issue 17, "Acceptance": they list exactly the partitions a
stopped broker leaves behind, and none after it returns).

Its own cluster (three ``franz broker`` processes) with topics of replication factor 3, 2
and 1, three partitions each (Kafka's assignment: every broker holds one RF 1 partition and
two RF 2 ones). One broker, not the controller, is stopped with SIGTERM. As Kafka's
controller does, Franz's moves its leaderships and drops it from every ISR it was in
(``OfflineReplica``), except where it is the last replica: an RF 1 partition keeps it as
its ISR and has no leader. So:

* ``--under-replicated-partitions`` (Kafka's ``isr.size < replicas.size``) lists exactly
  the RF 3 and RF 2 partitions the broker holds;
* ``--unavailable-partitions`` (no leader, or a leader not among the live brokers) lists
  exactly the RF 1 partition on it;
* after it returns and every ISR is whole again, both list nothing.

Each time, Kafka 3.9.2's own ``kafka-topics`` (``org.apache.kafka.tools.TopicCommand`` on the
reference class path) runs against the same Franz cluster and prints the same lines as
``franz topics``: the Java admin client's reading of Franz's Metadata and the tool's
predicates are the oracle. Skipped only without ``java``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.cluster import (
    BROKER_IDS,
    Cluster,
    eventually,
    new_chroot,
    partition_state,
    start_cluster,
)
from tests.support.kafka_ref import run_franz_tool, run_kafka_tool
from tests.support.zookeeper import ZooKeeperServer

TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
#: Topic name -> replication factor.
TOPICS = {"urp-rf3": 3, "urp-rf2": 2, "urp-rf1": 1}
PARTITIONS = 3
_PARTITION_LINE = re.compile(r"^\tTopic: (\S+)\tPartition: (\d+)\t")


@pytest.fixture(scope="module")
def dcluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    if shutil.which("java") is None:
        pytest.skip("java not found: Kafka's kafka-topics is the reference here")
    base = Path(tmp_path_factory.mktemp("replication-describe"))
    props = {"replica.lag.time.max.ms": "3000"}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap()})
        new = [NewTopic(name, PARTITIONS, rf) for name, rf in TOPICS.items()]
        for future in admin.create_topics(new, operation_timeout=30).values():
            future.result(60)
        for name in TOPICS:
            eventually(lambda name=name: all_whole(c, name), 60, f"{name}: every ISR whole")
        yield c


def assignment(cluster: Cluster, topic: str) -> dict[int, list[int]]:
    return {int(p): r for p, r in cluster.json(f"/brokers/topics/{topic}")["partitions"].items()}


def all_whole(cluster: Cluster, topic: str) -> bool:
    return all(_whole(cluster, topic, p, r) for p, r in assignment(cluster, topic).items())


def _whole(cluster: Cluster, topic: str, partition: int, replicas: list[int]) -> bool:
    state = partition_state(cluster, topic, partition)
    return state is not None and state["leader"] >= 0 and sorted(state["isr"]) == sorted(replicas)


def describe(cluster: Cluster, report: str) -> list[str]:
    """``topics --describe <report>`` over the test's topics, by ``franz topics`` and by
    Kafka's tool against the same cluster; both must exit 0 and print the same lines (the
    one returned)."""
    args = ["--bootstrap-server", cluster.bootstrap(), "--describe", "--topic", "urp-.*", report]
    franz = run_franz_tool("topics", *args)
    kafka = run_kafka_tool(TOPIC_COMMAND, *args)

    def view(result: subprocess.CompletedProcess[str]) -> list[str]:
        return [
            f"exit {result.returncode}",
            *result.stdout.splitlines(),
            *result.stderr.splitlines(),
        ]

    assert view(franz) == view(kafka), (
        f"franz:\n{franz.stdout}{franz.stderr}\nkafka:\n{kafka.stdout}{kafka.stderr}"
    )
    assert franz.returncode == 0 and franz.stderr == "", franz.stderr
    return franz.stdout.splitlines()


def listed(lines: list[str]) -> set[tuple[str, int]]:
    """The (topic, partition) of every partition line; no other line is printed."""
    out = set()
    for line in lines:
        match = _PARTITION_LINE.match(line)
        assert match is not None, line
        out.add((match.group(1), int(match.group(2))))
    return out


def metadata_settled(cluster: Cluster, victim: int) -> bool:
    """Every live broker's Metadata shows the victim out: no leadership, in no ISR but that
    of its RF 1 partition."""
    for broker in cluster.live():
        for entry in cluster.kcat_metadata(broker)["topics"]:
            if entry["topic"] not in TOPICS:
                continue
            rf = TOPICS[entry["topic"]]
            for p in entry["partitions"]:
                replicas = [r["id"] for r in p["replicas"]]
                isr = [r["id"] for r in p["isrs"]]
                if victim not in replicas:
                    continue
                if p["leader"] == victim or (rf > 1 and victim in isr):
                    return False
                if rf == 1 and p["leader"] != -1:
                    return False
    return True


def test_under_replicated_and_unavailable_partitions_follow_a_stopped_broker(
    dcluster: Cluster,
) -> None:
    cluster = dcluster
    assert describe(cluster, "--under-replicated-partitions") == []
    assert describe(cluster, "--unavailable-partitions") == []

    controller = cluster.controller_id()
    victim = next(b for b in BROKER_IDS if b != controller)
    held = {
        (topic, p)
        for topic in TOPICS
        for p, replicas in assignment(cluster, topic).items()
        if victim in replicas
    }
    under = {(t, p) for t, p in held if TOPICS[t] > 1}
    unavailable = {(t, p) for t, p in held if TOPICS[t] == 1}
    # Kafka's assignment spreads the replicas over all brokers: the victim holds every RF 3
    # partition, two RF 2 ones and one RF 1 partition.
    assert len(under) == PARTITIONS + 2 and len(unavailable) == 1, held

    assert cluster.brokers[victim].stop() == 0
    try:
        for topic, p in held:
            expected_isr = (
                [victim]
                if TOPICS[topic] == 1
                else sorted(b for b in assignment(cluster, topic)[p] if b != victim)
            )

            def settled(topic: str = topic, p: int = p, isr: list[int] = expected_isr) -> bool:
                state = partition_state(cluster, topic, p)
                return state is not None and sorted(state["isr"]) == isr

            eventually(
                settled, 60, f"{topic}-{p}: ISR {expected_isr} after broker {victim} stopped"
            )
        eventually(lambda: metadata_settled(cluster, victim), 30, "every broker's Metadata agrees")

        under_lines = describe(cluster, "--under-replicated-partitions")
        assert listed(under_lines) == under, under_lines
        assert all("Leader: none" not in line for line in under_lines), under_lines
        unavailable_lines = describe(cluster, "--unavailable-partitions")
        print("\n".join(["", *under_lines, *unavailable_lines]))
        assert listed(unavailable_lines) == unavailable, unavailable_lines
        ((topic, p),) = unavailable
        assert f"\tLeader: none\tReplicas: {victim}\tIsr: {victim}\t" in unavailable_lines[0]
    finally:
        cluster.brokers[victim].start()

    for topic in TOPICS:
        eventually(lambda topic=topic: all_whole(cluster, topic), 60, f"{topic}: ISRs whole again")
    eventually(
        lambda: all(
            all(
                sorted(r["id"] for r in p["isrs"]) == sorted(r["id"] for r in p["replicas"])
                and p["leader"] >= 0
                for entry in cluster.kcat_metadata(broker)["topics"]
                if entry["topic"] in TOPICS
                for p in entry["partitions"]
            )
            for broker in cluster.live()
        ),
        30,
        "every broker's Metadata shows whole ISRs",
    )
    assert describe(cluster, "--under-replicated-partitions") == []
    assert describe(cluster, "--unavailable-partitions") == []
