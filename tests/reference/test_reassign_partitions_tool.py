"""Kafka 3.9.2's own ``kafka-reassign-partitions`` (``ReassignPartitionsCommand``, Java
admin client: AlterPartitionReassignments and ListPartitionReassignments sent to the
controller it finds in Metadata) drives a move on a Franz cluster: ``--execute`` starts it,
``--verify`` reports it in progress, then completed, and the topic has its new replicas.
A single Kafka broker cannot move anything, so this runs on Franz only; the answers of one
broker are compared with Kafka's by ``test_differential``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from tests.support.cluster import Cluster, eventually, start_cluster
from tests.support.kafka_ref import run_kafka_tool
from tests.support.reassignment import Traffic, create_topic, dirs_of, read_all, topic_znode

TOOL = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
TOPIC = "tool-move"


@pytest.fixture(scope="module")
def cluster(zookeeper: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("reassign-tool"))
    chroot = f"{zookeeper}/franz-reassign-tool"
    with start_cluster(chroot, base, extra_props={"replica.fetch.max.bytes": "4096"}) as c:
        yield c


def test_kafkas_tool_moves_a_topic_and_verifies_it(cluster: Cluster, tmp_path: Path) -> None:
    create_topic(cluster, TOPIC, {0: [1, 2], 1: [2, 1]})
    traffic = Traffic(cluster.bootstrap(), TOPIC, 2, value_size=1000)
    try:
        traffic.wait_acked(10_000, 120)
        plan = {
            "version": 1,
            "partitions": [
                {"topic": TOPIC, "partition": 0, "replicas": [2, 3], "log_dirs": ["any", "any"]},
                {"topic": TOPIC, "partition": 1, "replicas": [3, 2], "log_dirs": ["any", "any"]},
            ],
        }
        plan_file = tmp_path / "plan.json"
        plan_file.write_text(json.dumps(plan))
        common = ["--bootstrap-server", cluster.bootstrap(), "--reassignment-json-file", plan_file]
        executed = run_kafka_tool(TOOL, *common, "--execute")
        assert executed.returncode == 0, executed.stdout + executed.stderr
        assert "Current partition replica assignment" in executed.stdout
        assert (
            f"Successfully started partition reassignments for {TOPIC}-0,{TOPIC}-1"
            in executed.stdout
        ), executed.stdout

        outputs: list[str] = []

        def verified() -> bool:
            done = run_kafka_tool(TOOL, *common, "--verify", "--preserve-throttles")
            assert done.returncode == 0, done.stdout + done.stderr
            outputs.append(done.stdout)
            return all(
                f"Reassignment of partition {TOPIC}-{p} is completed." in done.stdout
                for p in (0, 1)
            )

        eventually(verified, 180, "--verify reports both partitions completed")
    finally:
        unreported = traffic.stop()
    assert unreported == 0
    assert traffic.delivery_errors == []
    assert outputs[-1].startswith("Status of partition reassignment:\n"), outputs[-1]
    statuses = set(re.findall(r"is (still in progress|completed)\.", "".join(outputs)))
    assert "completed" in statuses
    assert topic_znode(cluster, TOPIC)["partitions"] == {"0": [2, 3], "1": [3, 2]}
    eventually(lambda: dirs_of(cluster, 1, TOPIC) == [], 30, "broker 1's replicas deleted")
    for p in (0, 1):
        records = read_all(cluster.bootstrap(), TOPIC, p)
        for offset, value in traffic.acked[p].items():
            assert records.get(offset) == value, f"{TOPIC}-{p}@{offset} lost"
