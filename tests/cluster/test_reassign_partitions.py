"""Issue 18, item 3: ``franz reassign-partitions`` and ``franz log-dirs`` against three
``franz broker`` processes (ids 1-3, the module's ``cluster``).

The reassignment scenarios are those ``tests/reference/test_reassign_partitions.py`` runs on
Apache Kafka 3.9 with Kafka's own tool (``tests.support.reassign_scenarios``): the same
steps, the same expected texts and effects, here with ``franz reassign-partitions`` only.
The brokers serve AlterPartitionReassignments (45) and ListPartitionReassignments (46)
and take the replication throttles as dynamic configs (the fixtures check both first).
``franz log-dirs`` (DescribeLogDirs) and the refusal of log-dir moves (Franz does not serve
AlterReplicaLogDirs, 34) run too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ResourceType,
)

from franz.admin.wire import connect
from tests.support.cluster import Cluster
from tests.support.reassign import (
    create_topic,
    log_dirs,
    outcome,
    partitions,
    produce,
    write_plan,
)
from tests.support.reassign_scenarios import (
    cancel_skips_a_move_that_only_adds,
    completed_move,
    list_with_nothing_moving,
    run_with_plan,
    throttled_move_cancelled,
)

IMPLS = ("franz",)
ALTER_REPLICA_LOG_DIRS, ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS = 34, 45, 46


def served_by_all(cluster: Cluster, *api_keys: int) -> bool:
    """Whether every live broker lists all ``api_keys`` in its ApiVersions."""
    for broker in cluster.live():
        with connect(broker.bootstrap, 10, "reassign-test") as conn:
            if any(key not in conn.versions for key in api_keys):
                return False
    return True


def takes_throttle_rates(cluster: Cluster) -> bool:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    resource = ConfigResource(
        ResourceType.BROKER,
        "1",
        incremental_configs=[
            ConfigEntry(
                "leader.replication.throttled.rate",
                "10000",
                incremental_operation=AlterConfigOpType.SET,
            )
        ],
    )
    future = admin.incremental_alter_configs([resource], validate_only=True)[resource]
    try:
        future.result(30)
    except KafkaException:
        return False
    return True


@pytest.fixture
def reassignable(cluster: Cluster) -> str:
    """The cluster's bootstrap, once every broker lists the reassignment APIs."""
    assert served_by_all(cluster, ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS)
    return cluster.bootstrap()


@pytest.fixture
def throttleable(cluster: Cluster, reassignable: str) -> str:
    """The same, once the brokers take ``leader.replication.throttled.rate``."""
    assert takes_throttle_rates(cluster)
    return reassignable


def test_list_with_nothing_moving(reassignable: str) -> None:
    list_with_nothing_moving(reassignable, IMPLS)


def test_execute_then_verify_a_completed_move(reassignable: str, tmp_path: Path) -> None:
    completed_move(reassignable, tmp_path, IMPLS)


def test_throttled_move_in_progress_then_cancelled(throttleable: str, tmp_path: Path) -> None:
    throttled_move_cancelled(throttleable, tmp_path, IMPLS)


def test_cancel_leaves_a_reassignment_that_only_adds_replicas(
    throttleable: str, tmp_path: Path
) -> None:
    cancel_skips_a_move_that_only_adds(throttleable, tmp_path, IMPLS)


def test_log_dir_moves_need_alter_replica_log_dirs(cluster: Cluster, tmp_path: Path) -> None:
    """A plan with a ``log_dirs`` path is refused before anything changes when the broker
    does not serve AlterReplicaLogDirs (34)."""
    if served_by_all(cluster, ALTER_REPLICA_LOG_DIRS):
        pytest.skip("the brokers serve AlterReplicaLogDirs")
    bootstrap = cluster.bootstrap()
    create_topic(bootstrap, "pinned", [[1]])
    plan = write_plan(tmp_path / "dirs.json", "pinned", {0: [2]}, {0: ["/data/other"]})
    assert run_with_plan("franz", bootstrap, "--execute", plan) == (
        1,
        "",
        "franz reassign-partitions: error: moving replicas between log directories (log_dirs "
        'other than "any": pinned-0 to /data/other on broker 2) needs AlterReplicaLogDirs '
        '(API 34), which broker 2 does not serve; use "any" (nothing was changed)\n',
    )
    assert partitions(bootstrap, "pinned") == {0: (1, [1], [1])}


def test_log_dirs_describes_every_broker(cluster: Cluster) -> None:
    """``franz log-dirs``: every broker's log dir with its replicas (Kafka's JSON, keys and
    brokers in Kafka's order), ``--broker-list`` and ``--topic-list``, and Kafka's error for
    an unknown broker."""
    bootstrap = cluster.bootstrap()
    create_topic(bootstrap, "listed", [[1, 2], [2, 3]])
    produce(bootstrap, "listed", 1, 20, 100)
    code, out, err = outcome(log_dirs("franz", bootstrap, "--describe", "--topic-list", "listed"))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 1,2,3",
    ]
    assert lines[2].startswith('{"brokers":[{"broker":1,"logDirs":[{"partitions":[')
    report = json.loads(lines[2])
    assert report["version"] == 1
    assert [b["broker"] for b in report["brokers"]] == [1, 2, 3]
    found = {}
    for broker in report["brokers"]:
        (log_dir,) = broker["logDirs"]
        assert log_dir["error"] is None
        assert log_dir["logDir"] == str(cluster.brokers[broker["broker"]].data_dir / "logs")
        for p in log_dir["partitions"]:
            assert (p["offsetLag"], p["isFuture"]) == (0, False)
            found[broker["broker"], p["partition"]] = p["size"]
    assert set(found) == {(1, "listed-0"), (2, "listed-0"), (2, "listed-1"), (3, "listed-1")}
    assert found[1, "listed-0"] == found[2, "listed-0"] == 0 and found[2, "listed-1"] > 0

    code, out, _ = outcome(log_dirs("franz", bootstrap, "--describe", "--broker-list", "2"))
    assert code == 0 and out.splitlines()[1] == "Received log directory information from brokers 2"
    assert [b["broker"] for b in json.loads(out.splitlines()[2])["brokers"]] == [2]
    assert outcome(log_dirs("franz", bootstrap, "--describe", "--broker-list", "2,9")) == (
        1,
        "",
        "ERROR: The given brokers do not exist from --broker-list: 9. Current existent "
        "brokers: 1,2,3\n",
    )
