"""Issue 18, item 3: ``franz reassign-partitions`` and ``franz log-dirs`` against three
``franz broker`` processes (ids 1-3, the module's ``cluster``; broker 3 has two log dirs, as
in the Kafka cluster of ``tests/reference/test_reassign_partitions.py``).

The reassignment scenarios are those ``tests/reference/test_reassign_partitions.py`` runs on
Apache Kafka 3.9 with Kafka's own tool (``tests.support.reassign_scenarios``): the same
steps, the same expected texts and effects, here with ``franz reassign-partitions`` only.
The brokers serve AlterPartitionReassignments (45) and ListPartitionReassignments (46)
and take the replication throttles as dynamic configs (the fixtures check both first).
``franz log-dirs`` (DescribeLogDirs) and a replica moved between broker 3's log dirs
(AlterReplicaLogDirs, as ``--execute`` sends it for a ``log_dirs`` entry), reported by
``--verify`` and ``log-dirs`` while it moves and once it has, run too.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
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
from franz.errors import ErrorCode
from tests.support.cluster import AckedProducer, Cluster, log_bytes, new_chroot, start_cluster
from tests.support.reassign import (
    client,
    consume,
    create_topic,
    eventually,
    log_dir_rate,
    log_dirs,
    outcome,
    partitions,
    produce,
    replica_dirs,
    set_log_dir_rate,
    write_plan,
)
from tests.support.reassign_scenarios import (
    LOG_DIR_THROTTLE,
    SLOW_RECORDS,
    SLOW_SIZE,
    cancel_skips_a_move_that_only_adds,
    completed_move,
    list_with_nothing_moving,
    log_dir_move,
    run_with_plan,
    throttled_move_cancelled,
)
from tests.support.zookeeper import ZooKeeperServer

IMPLS = ("franz",)
ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS = 45, 46


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """Brokers 1-3 on a chroot of their own; broker 3 with log dirs ``dir-a`` and ``dir-b``."""
    base = Path(tmp_path_factory.mktemp("cluster"))
    b3 = (base / "broker-3").resolve()
    overrides = {3: {"log.dirs": f"{b3}/dir-a,{b3}/dir-b"}}
    with start_cluster(
        new_chroot(zookeeper_server.connect_string), base, broker_overrides=overrides
    ) as c:
        yield c


def log_dirs_of(cluster: Cluster, broker_id: int) -> list[str]:
    return cluster.brokers[broker_id].overrides["log.dirs"].split(",")


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


def test_log_dir_move_on_one_broker(reassignable: str, tmp_path: Path) -> None:
    log_dir_move(reassignable, tmp_path, IMPLS)


def test_throttled_move_in_progress_then_cancelled(throttleable: str, tmp_path: Path) -> None:
    throttled_move_cancelled(throttleable, tmp_path, IMPLS)


def test_cancel_leaves_a_reassignment_that_only_adds_replicas(
    throttleable: str, tmp_path: Path
) -> None:
    cancel_skips_a_move_that_only_adds(throttleable, tmp_path, IMPLS)


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
        listed = broker["logDirs"]
        assert sorted(d["logDir"] for d in listed) == sorted(log_dirs_of(cluster, broker["broker"]))
        for log_dir in listed:
            assert log_dir["error"] is None
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


def test_log_dir_move_reported_by_verify_and_log_dirs(cluster: Cluster, tmp_path: Path) -> None:
    """A replica moves between broker 3's log dirs (the AlterReplicaLogDirs of
    ``--execute``'s last step, sent as the tool sends it), throttled: ``--verify`` and
    ``franz log-dirs`` report it moving, with Kafka's texts; once the throttle is lifted it
    completes and ``--verify`` reports it and clears the throttles. Runs whether or not the
    controller serves the reassignment APIs (``--verify`` then warns that it reads the
    current replicas)."""
    bootstrap = cluster.bootstrap()
    topic = "dirs-moved"
    create_topic(bootstrap, topic, [[3]])
    sent = produce(bootstrap, topic, 0, SLOW_RECORDS, SLOW_SIZE)
    (now,) = replica_dirs(bootstrap, 3, topic, 0)
    (target,) = [d for d in log_dirs_of(cluster, 3) if d != now]
    set_log_dir_rate(bootstrap, 3, LOG_DIR_THROTTLE)
    assert client(bootstrap).alter_replica_log_dirs(3, {(topic, 0): target}) == {
        (topic, 0): ErrorCode.NONE
    }
    assert replica_dirs(bootstrap, 3, topic, 0) == {now: False, target: True}
    plan = write_plan(tmp_path / "dirs.json", topic, {0: [3]}, {0: [target]})
    code, out, err = run_with_plan("franz", bootstrap, "--verify", plan)
    assert (code, out) == (
        0,
        "Status of partition reassignment:\n"
        f"Reassignment of partition {topic}-0 is completed.\n"
        f"Reassignment of replica {topic}-0-3 is still in progress.\n",
    )
    assert err == "" or "does not serve ListPartitionReassignments (API 46)" in err, err

    def described() -> dict[tuple[str, str, bool], tuple[int, int]]:
        code, out, err = outcome(
            log_dirs("franz", bootstrap, "--describe", "--broker-list", "3", "--topic-list", topic)
        )
        assert (code, err) == (0, "")
        (broker,) = json.loads(out.splitlines()[2])["brokers"]
        return {
            (d["logDir"], p["partition"], p["isFuture"]): (p["size"], p["offsetLag"])
            for d in broker["logDirs"]
            for p in d["partitions"]
        }

    shown = described()
    assert set(shown) == {(now, f"{topic}-0", False), (target, f"{topic}-0", True)}
    # The throttled copier has started (its first bytes may take a moment) and not finished.
    eventually(
        lambda: described()[target, f"{topic}-0", True][0] > 0, 30, "the future replica grows"
    )
    shown = described()
    size, lag = shown[now, f"{topic}-0", False]
    future_size, future_lag = shown[target, f"{topic}-0", True]
    assert lag == 0 and 0 < future_lag < SLOW_RECORDS and 0 < future_size < size

    set_log_dir_rate(bootstrap, 3, None)
    eventually(
        lambda: replica_dirs(bootstrap, 3, topic, 0) == {target: False}, 60, "moved to " + target
    )
    code, out, err = run_with_plan("franz", bootstrap, "--verify", plan)
    assert (code, out) == (
        0,
        "Status of partition reassignment:\n"
        f"Reassignment of partition {topic}-0 is completed.\n"
        f"Reassignment of replica {topic}-0-3 completed successfully.\n"
        "Clearing broker-level throttles on brokers 1,2,3\n"
        f"Clearing topic-level throttles on topic {topic}\n",
    )
    assert log_dir_rate(bootstrap, 3) is None
    assert consume(bootstrap, topic, 0, SLOW_RECORDS) == sent
    # The replica lives on in its new dir: a restart of broker 3 serves it from there.
    assert cluster.brokers[3].stop() == 0
    cluster.brokers[3].start()
    eventually(lambda: partitions(cluster.bootstrap(), topic).get(0, (-1,))[0] == 3, 60, "led")
    assert replica_dirs(cluster.bootstrap(), 3, topic, 0) == {target: False}
    assert consume(cluster.bootstrap(), topic, 0, SLOW_RECORDS) == sent


def test_a_follower_replica_moves_while_it_replicates(cluster: Cluster) -> None:
    """Broker 3 follows broker 1's partition while its replica moves to its other log dir:
    an acks=all producer goes on, the follower stays in the ISR, and the moved replica holds
    the leader's bytes exactly (the copier copies the follower's log as its fetcher appends
    to it)."""
    bootstrap = cluster.bootstrap()
    topic = "dirs-follower"
    create_topic(bootstrap, topic, [[1, 3]])
    produce(bootstrap, topic, 0, SLOW_RECORDS, SLOW_SIZE)
    (now,) = replica_dirs(bootstrap, 3, topic, 0)
    (target,) = [d for d in log_dirs_of(cluster, 3) if d != now]
    set_log_dir_rate(bootstrap, 3, 1_000_000)
    producer = AckedProducer(bootstrap, topic, [0], pad=b"f" * 200)
    try:
        eventually(lambda: producer.count() > 100, 30, "the producer runs")
        moved = client(bootstrap).alter_replica_log_dirs(3, {(topic, 0): target})
        assert moved == {(topic, 0): ErrorCode.NONE}
        assert replica_dirs(bootstrap, 3, topic, 0) == {now: False, target: True}
        time.sleep(2)
        set_log_dir_rate(bootstrap, 3, None)
        eventually(lambda: replica_dirs(bootstrap, 3, topic, 0) == {target: False}, 60, "moved")
        count = producer.count()
        eventually(lambda: producer.count() > count + 100, 30, "the producer goes on")
    finally:
        assert producer.stop() == 0
    assert producer.errors == []
    assert partitions(bootstrap, topic)[0] == (1, [1, 3], [1, 3])
    leader, follower = cluster.brokers[1], cluster.brokers[3]
    eventually(
        lambda: log_bytes(follower, topic) == log_bytes(leader, topic),
        30,
        "the moved follower holds the leader's bytes",
    )
    assert Path(target, f"{topic}-0").is_dir()
