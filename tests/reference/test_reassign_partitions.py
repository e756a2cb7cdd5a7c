"""Issue 18, item 3: ``franz reassign-partitions`` and ``franz log-dirs`` against a 3-broker Apache
Kafka 3.9 cluster, next to Kafka's own ``kafka-reassign-partitions`` and ``kafka-log-dirs``.

The scenarios of ``tests.support.reassign_scenarios`` run with both tools (each moves a twin
topic from the same cluster state; both run the read-only steps on the same state), and
every output must be Kafka 3.9's text exactly: checked here against Kafka's own tool, so
that ``tests/cluster/test_reassign_partitions.py`` can hold a Franz cluster to them. The
effects are checked too: replicas moved with their data (sizes from DescribeLogDirs,
records read back), throttle configs set by ``--throttle`` and cleared by ``--verify`` and
``--cancel``.

Broker 3 has two log dirs, so a replica can be moved between them (AlterReplicaLogDirs),
throttled by ``--replica-alter-log-dirs-throttle`` so that --verify and log-dirs see it
moving (``tests.support.reassign_scenarios.log_dir_move``, which a Franz cluster runs too).
The brokers are started one after the other from the test's thread: they run under
``setpriv --pdeathsig``, which would kill them when a pool thread that started them exits.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.kafka_ref import KafkaBroker
from tests.support.reassign import (
    BROKERS,
    client,
    create_topic,
    eventually,
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
    log_dir_move,
    run_with_plan,
    throttled_move_cancelled,
)

IMPLS = ("kafka", "franz")


@pytest.fixture(scope="module")
def kafka_cluster(zookeeper: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Kafka brokers 1, 2, 3 on a chroot of their own; broker 3 has two log dirs. Yields the
    bootstrap string."""
    base = tmp_path_factory.mktemp("kafka-reassign")
    chroot = f"{zookeeper}/reassign-{uuid.uuid4().hex[:8]}"
    brokers: list[KafkaBroker] = []
    try:
        for broker_id in BROKERS:
            properties = {"auto.create.topics.enable": "false"}
            if broker_id == 3:
                properties["log.dirs"] = f"{base}/b3/dir-a,{base}/b3/dir-b"
            broker = KafkaBroker(
                base / f"b{broker_id}", chroot, broker_id=broker_id, properties=properties
            )
            brokers.append(broker)
            broker.start()
        bootstrap = ",".join(b.bootstrap for b in brokers)
        eventually(lambda: len(client(bootstrap).nodes().brokers) == 3, 60, "3 brokers")
        yield bootstrap
    finally:
        for broker in brokers:
            broker.stop()


def test_list_with_nothing_moving(kafka_cluster: str) -> None:
    list_with_nothing_moving(kafka_cluster, IMPLS)


def test_execute_then_verify_a_completed_move(kafka_cluster: str, tmp_path: Path) -> None:
    completed_move(kafka_cluster, tmp_path, IMPLS)


def test_throttled_move_in_progress_then_cancelled(kafka_cluster: str, tmp_path: Path) -> None:
    throttled_move_cancelled(kafka_cluster, tmp_path, IMPLS)


def test_cancel_leaves_a_reassignment_that_only_adds_replicas(
    kafka_cluster: str, tmp_path: Path
) -> None:
    cancel_skips_a_move_that_only_adds(kafka_cluster, tmp_path, IMPLS)


def test_log_dir_move_on_one_broker(kafka_cluster: str, tmp_path: Path) -> None:
    log_dir_move(kafka_cluster, tmp_path, IMPLS)


def test_errors_as_kafka(kafka_cluster: str, tmp_path: Path) -> None:
    """Kafka's terse refusals are the same bytes on stdout; the others are one line."""
    create_topic(kafka_cluster, "errs", [[1]])
    plan = write_plan(tmp_path / "unknown-broker.json", "errs", {0: [1, 7]})
    for impl in IMPLS:
        unknown = run_with_plan(impl, kafka_cluster, "--execute", plan)
        assert unknown[0] == 1 and "Unknown broker id 7" in unknown[1] + unknown[2], impl
    plan = write_plan(tmp_path / "no-partition.json", "errs", {5: [1]})
    for impl in IMPLS:
        missing = run_with_plan(impl, kafka_cluster, "--execute", plan)
        assert missing[0] == 1 and "Unable to find partition: errs-5" in missing[1] + missing[2]
    assert run_with_plan("franz", kafka_cluster, "--verify", plan, "--throttle", "5") == (
        1,
        "",
        'franz reassign-partitions: error: Option "[throttle]" can\'t be used with action '
        '"[verify]"\n',
    )
    assert partitions(kafka_cluster, "errs") == {0: (1, [1], [1])}


def test_log_dirs_tool(kafka_cluster: str) -> None:
    """``franz log-dirs`` prints what Kafka's LogDirsCommand prints, byte for byte (the
    brokers, log dirs, partitions and JSON keys in Kafka's hash-map orders)."""
    create_topic(kafka_cluster, "dirs-listed", [[1], [2], [3], [3]])
    produce(kafka_cluster, "dirs-listed", 2, 10, 50)
    for args in (
        ("--describe",),
        ("--describe", "--topic-list", "dirs-listed,moved-kafka"),
        ("--describe", "--broker-list", "3,1", "--topic-list", "dirs-listed"),
        ("--describe", "--broker-list", "1,7"),
    ):
        results = [outcome(log_dirs(impl, kafka_cluster, *args)) for impl in IMPLS]
        assert results[0] == results[1], args
    listed = outcome(log_dirs("franz", kafka_cluster, "--describe", "--topic-list", "dirs-listed"))
    assert listed[1].splitlines()[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 1,2,3",
    ]
    absent = outcome(log_dirs("franz", kafka_cluster, "--describe", "--broker-list", "1,7"))
    assert absent == (
        1,
        "",
        "ERROR: The given brokers do not exist from --broker-list: 7. Current existent "
        "brokers: 1,2,3\n",
    )
