"""A Kafka 3.9 broker's AlterPartition, answered by Franz's controller: Apache Kafka (broker
2) joins a cluster of two Franz brokers (1 and 3, one of them the controller, ``C``), leads a
partition whose other replica is the other Franz broker (``F``), and, when ``F`` stops
fetching (SIGSTOP; its ZooKeeper session outlives the test, so the controller does not take it
out of the ISR itself), shrinks the ISR to itself after ``replica.lag.time.max.ms`` (3 s
here): Kafka's own ``DefaultAlterPartitionManager`` sends AlterPartition (v3, Kafka's
``MetadataVersion`` for IBP 3.9) to the Franz controller, which writes the ``state`` znode,
answers with the new partition epoch (Kafka logs it) and tells every broker.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.clients import run_kcat
from tests.support.cluster import Cluster, eventually, new_chroot, start_cluster
from tests.support.kafka_ref import KafkaBroker

TOPIC = "interop-isr"
STATE = f"/brokers/topics/{TOPIC}/partitions/0/state"
KAFKA_ID = 2


@dataclass(frozen=True)
class Mixed:
    cluster: Cluster
    kafka: KafkaBroker
    controller: int
    follower: int


@pytest.fixture(scope="module")
def mixed(zookeeper: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mixed]:
    base = Path(tmp_path_factory.mktemp("alter-interop"))
    chroot = new_chroot(zookeeper, "franz-kafka-alter")
    props = {"zookeeper.session.timeout.ms": "60000"}
    with start_cluster(chroot, base, ids=[1, 3], extra_props=props) as cluster:
        eventually(lambda: cluster.controller_id() in (1, 3), 30, "a Franz controller")
        controller = cluster.controller_id()
        assert controller is not None
        kafka = KafkaBroker(
            base / "kafka-2",
            chroot,
            broker_id=KAFKA_ID,
            properties={"replica.lag.time.max.ms": "3000"},
        ).start()
        try:
            eventually(
                lambda: cluster.kazoo.exists(f"/brokers/ids/{KAFKA_ID}") is not None,
                30,
                "Kafka broker 2 registered",
            )
            yield Mixed(cluster, kafka, controller, 4 - controller)
        finally:
            kafka.stop()


def state(cluster: Cluster) -> tuple[dict[str, Any], int]:
    data, stat = cluster.kazoo.get(STATE)
    value: dict[str, Any] = json.loads(data)
    return value, int(stat.version)


def test_kafka_leader_shrinks_its_isr_through_the_franz_controller(mixed: Mixed) -> None:
    cluster, kafka, follower = mixed.cluster, mixed.kafka, mixed.follower
    admin = AdminClient({"bootstrap.servers": cluster.brokers[mixed.controller].bootstrap})
    topic = NewTopic(TOPIC, 1, replica_assignment=[[KAFKA_ID, follower]])
    admin.create_topics([topic], operation_timeout=30)[TOPIC].result(60)
    eventually(lambda: cluster.kazoo.exists(STATE) is not None, 30, "the state znode")
    created, created_version = state(cluster)
    assert (created["leader"], created["isr"]) == (KAFKA_ID, [KAFKA_ID, follower])
    pid = cluster.brokers[follower].pid
    # The follower stays stopped until every check is done: once it runs again it catches up
    # and Kafka adds it back to the ISR within milliseconds (then ISR [2] is gone).
    os.kill(pid, signal.SIGSTOP)
    try:
        eventually(lambda: state(cluster)[0]["isr"] == [KAFKA_ID], 60, "Kafka shrank the ISR")
        shrunk, version = state(cluster)
        assert version == created_version + 1
        assert (shrunk["leader"], shrunk["leader_epoch"]) == (KAFKA_ID, created["leader_epoch"])
        # Kafka took the Franz controller's answer (the new partition epoch is the zk version).
        eventually(
            lambda: f"ISR updated to {KAFKA_ID}  and version updated to {version}"
            in kafka.output(),
            30,
            "Kafka's Partition applied the answer",
        )
        # The UpdateMetadata that followed reached the Franz controller and Kafka.
        for bootstrap in (cluster.brokers[mixed.controller].bootstrap, kafka.bootstrap):
            eventually(
                lambda b=bootstrap: isr_in_metadata(b) == [KAFKA_ID],
                30,
                f"{bootstrap}'s Metadata shows ISR [2]",
            )
    finally:
        os.kill(pid, signal.SIGCONT)


def isr_in_metadata(bootstrap: str) -> list[int]:
    done = run_kcat(["-J", "-L", "-b", bootstrap, "-t", TOPIC, "-m", "10"], timeout=30)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    partitions = json.loads(done.stdout)["topics"][0]["partitions"]
    return sorted(int(r["id"]) for r in partitions[0]["isrs"])
