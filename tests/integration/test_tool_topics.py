"""``franz topics`` (kafka-topics.sh) as a subprocess against a real broker.

Every action is checked on Kafka 3.9's output lines and the broker's state (read back with
confluent-kafka's AdminClient), and every error case on its exit code and one-line message.
One broker serves the whole module; each test uses its own topic names.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient

from franz.admin.topics import kafka_describe_order
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    proc = BrokerProcess(tmp_path_factory.mktemp("topics-broker")).start()
    try:
        yield proc.bootstrap
    finally:
        code = proc.stop()
    assert code == 0, proc.output()


def topics(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "franz", "topics", "--bootstrap-server", bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def fields(line: str) -> dict[str, str]:
    """``Key: value<TAB>Key: value`` -> dict (values may be empty)."""
    out = {}
    for part in line.strip("\t").split("\t"):
        key, _, value = part.partition(": ")
        out[key] = value
    return out


def partition_counts(bootstrap: str) -> dict[str, int]:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10)
    return {name: len(t.partitions) for name, t in md.topics.items()}


def test_create_prints_created_and_the_topic_exists(bootstrap):
    result = topics(bootstrap, "--create", "--topic", "orders", "--partitions", "3",
                    "--replication-factor", "1", "--config", "retention.ms=1000",
                    "--config", "cleanup.policy=compact")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Created topic orders.\n"
    assert partition_counts(bootstrap)["orders"] == 3
    described = topics(bootstrap, "--describe", "--topic", "orders").stdout.splitlines()
    head = fields(described[0])
    assert set(head["Configs"].split(",")) == {"retention.ms=1000", "cleanup.policy=compact"}


def test_create_with_cluster_defaults_and_collision_warning(bootstrap):
    result = topics(bootstrap, "--create", "--topic", "web.clicks")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore "
        "('_') could collide. To avoid issues it is best to use either, but not both.",
        "Created topic web.clicks.",
    ]
    assert partition_counts(bootstrap)["web.clicks"] == 1  # num.partitions default


def test_create_with_replica_assignment(bootstrap):
    result = topics(bootstrap, "--create", "--topic", "assigned", "--replica-assignment", "0,0")
    assert result.returncode == 0, result.stderr
    lines = topics(bootstrap, "--describe", "--topic", "assigned").stdout.splitlines()
    assert [fields(line)["Replicas"] for line in lines[1:]] == ["0", "0"]


def test_create_existing_topic_fails_unless_if_not_exists(bootstrap):
    create_topic(bootstrap, "dup", partitions=1)
    again = topics(bootstrap, "--create", "--topic", "dup", "--partitions", "2")
    assert again.returncode == 1
    assert again.stderr == "franz topics: error: Topic 'dup' already exists.\n"
    quiet = topics(bootstrap, "--create", "--topic", "dup", "--partitions", "2",
                   "--if-not-exists")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")
    assert partition_counts(bootstrap)["dup"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--partitions", "0"], "The partitions must be greater than 0"),
        (["--replication-factor", "0"],
         "The replication factor must be between 1 and 32767 inclusive"),
        (["--config", "retention.ms"],
         'Invalid topic config: all configs to be added must be in the format "key=val".'),
        (["--replica-assignment", "0:0"],
         "Partition replica lists may not contain duplicate entries: 0"),
    ],
)
def test_create_rejects_bad_values(bootstrap, args, message):
    result = topics(bootstrap, "--create", "--topic", "bad", *args)
    assert result.returncode == 1
    assert result.stderr == f"franz topics: error: {message}\n"
    assert "bad" not in partition_counts(bootstrap)


def test_list_sorted_with_regex_and_exclude_internal(bootstrap):
    for name in ("list-b", "list-a", "other"):
        create_topic(bootstrap, name, partitions=1)
    listed = topics(bootstrap, "--list").stdout.splitlines()
    assert listed == sorted(listed)
    assert {"list-a", "list-b", "other"} <= set(listed)
    assert topics(bootstrap, "--list", "--topic", "list-.*").stdout == "list-a\nlist-b\n"
    # commas mean "or"; the regex must match the whole name
    assert topics(bootstrap, "--list", "--topic", "list-a,other").stdout == "list-a\nother\n"
    assert topics(bootstrap, "--list", "--topic", "list").stdout == "\n"
    # __consumer_offsets exists once a group committed; --exclude-internal hides it
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "lister"})
    try:
        consumer.commit(offsets=[TopicPartition("other", 0, 0)], asynchronous=False)
    finally:
        consumer.close()
    assert topics(bootstrap, "--list", "--topic", "__.*").stdout == "__consumer_offsets\n"
    without = topics(bootstrap, "--list", "--topic", "__.*", "--exclude-internal").stdout
    assert without == "\n"
    assert "__consumer_offsets" not in topics(bootstrap, "--list", "--exclude-internal").stdout


def test_describe_layout(bootstrap):
    create_topic(bootstrap, "described", partitions=3)
    result = topics(bootstrap, "--describe", "--topic", "described")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 4
    head = lines[0].split("\t")
    assert head[0] == "Topic: described"
    assert head[1].startswith("TopicId: ") and len(head[1]) == len("TopicId: ") + 22
    assert head[2:] == ["PartitionCount: 3", "ReplicationFactor: 1", "Configs: "]
    for index, line in enumerate(lines[1:]):
        assert line == (
            f"\tTopic: described\tPartition: {index}\tLeader: 0\tReplicas: 0\tIsr: 0"
            "\tElr: N/A\tLastKnownElr: N/A"
        )


def test_describe_all_topics_and_if_exists(bootstrap):
    create_topic(bootstrap, "every-1", partitions=1)
    create_topic(bootstrap, "every-2", partitions=2)
    out = topics(bootstrap, "--describe").stdout.splitlines()
    heads = [fields(line)["Topic"] for line in out if not line.startswith("\t")]
    # Kafka's order: a Java HashMap's (tests/reference checks it against Kafka's tool).
    assert heads == kafka_describe_order(heads) and {"every-1", "every-2"} <= set(heads)
    missing = topics(bootstrap, "--describe", "--topic", "ghost")
    assert missing.returncode == 1
    assert missing.stderr == "franz topics: error: Topic 'ghost' does not exist as expected\n"
    quiet = topics(bootstrap, "--describe", "--topic", "ghost", "--if-exists")
    assert (quiet.returncode, quiet.stdout) == (0, "")


def test_describe_report_filters(bootstrap):
    create_topic(bootstrap, "filtered", partitions=2)
    create_topic(bootstrap, "strict", partitions=1, config={"min.insync.replicas": "2"})
    # one broker, replication factor 1: nothing under-replicated or unavailable
    for flag in ("--under-replicated-partitions", "--unavailable-partitions"):
        result = topics(bootstrap, "--describe", "--topic", "filtered|strict", flag)
        assert (result.returncode, result.stdout) == (0, ""), flag
    at_min = topics(bootstrap, "--describe", "--topic", "filtered|strict",
                    "--at-min-isr-partitions").stdout.splitlines()
    assert [(fields(x)["Topic"], fields(x)["Partition"]) for x in at_min] == [
        ("filtered", "0"), ("filtered", "1")]
    under_min = topics(bootstrap, "--describe", "--topic", "filtered|strict",
                       "--under-min-isr-partitions").stdout.splitlines()
    assert [(fields(x)["Topic"], fields(x)["Partition"]) for x in under_min] == [("strict", "0")]
    overrides = topics(bootstrap, "--describe", "--topic", "filtered|strict",
                       "--topics-with-overrides").stdout.splitlines()
    assert len(overrides) == 1
    assert fields(overrides[0])["Topic"] == "strict"
    assert fields(overrides[0])["Configs"] == "min.insync.replicas=2"


def test_alter_adds_partitions(bootstrap):
    create_topic(bootstrap, "grow", partitions=1)
    result = topics(bootstrap, "--alter", "--topic", "grow", "--partitions", "4")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    assert partition_counts(bootstrap)["grow"] == 4
    shrink = topics(bootstrap, "--alter", "--topic", "grow", "--partitions", "2")
    assert shrink.returncode == 1
    assert shrink.stderr.startswith("franz topics: error: ")
    assert "4" in shrink.stderr and shrink.stderr.count("\n") == 1
    missing = topics(bootstrap, "--alter", "--topic", "ghost", "--partitions", "2")
    assert missing.returncode == 1
    assert "Topic 'ghost' does not exist as expected" in missing.stderr
    assert topics(bootstrap, "--alter", "--topic", "ghost", "--partitions", "2",
                  "--if-exists").returncode == 0


def test_delete_by_name_and_regex(bootstrap):
    for name in ("gone-1", "gone-2", "kept"):
        create_topic(bootstrap, name, partitions=1)
    result = topics(bootstrap, "--delete", "--topic", "gone-.*")
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    counts = partition_counts(bootstrap)
    assert "gone-1" not in counts and "gone-2" not in counts and "kept" in counts
    missing = topics(bootstrap, "--delete", "--topic", "gone-1")
    assert missing.returncode == 1
    assert missing.stderr == "franz topics: error: Topic 'gone-1' does not exist as expected\n"
    assert topics(bootstrap, "--delete", "--topic", "gone-1", "--if-exists").returncode == 0


def test_command_config_is_used(bootstrap, tmp_path: Path):
    props = tmp_path / "client.properties"
    props.write_text("client.id=ops-tool\n")
    result = topics(bootstrap, "--command-config", str(props), "--list", "--topic", "kept|x")
    assert result.returncode == 0, result.stderr
    bad = tmp_path / "bad.properties"
    bad.write_text("no.such.client.property=1\n")
    refused = topics(bootstrap, "--command-config", str(bad), "--list")
    assert refused.returncode == 1
    assert "no.such.client.property" in refused.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--list", "--describe"],
        ["--topic", "t"],
        ["--create"],
        ["--alter", "--topic", "t"],
        ["--list", "--partitions", "3"],
        ["--describe", "--replication-factor", "1"],
        ["--alter", "--topic", "t", "--partitions", "2", "--config", "a=b"],
        ["--create", "--topic", "t", "--replica-assignment", "0", "--partitions", "1"],
        ["--list", "--under-replicated-partitions"],
        ["--describe", "--topics-with-overrides", "--unavailable-partitions"],
        ["--create", "--topic", "t", "--if-exists"],
        ["--delete", "--topic", "t", "--if-not-exists"],
        ["--create", "--topic", "t", "--exclude-internal"],
    ],
)
def test_bad_flag_combinations_exit_2(bootstrap, args):
    result = topics(bootstrap, *args)
    assert result.returncode == 2, result.stderr
    assert "franz topics: error:" in result.stderr


def test_unreachable_broker_is_one_line_error():
    result = topics("127.0.0.1:1", "--list", "--timeout", "1000")
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert "127.0.0.1:1" in lines[0] and "running" in lines[0]


def test_help_is_the_module_docstring():
    result = subprocess.run([sys.executable, "-m", "franz", "topics", "--help"],
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    assert "kafka-topics.sh" in result.stdout and "--under-replicated-partitions" in result.stdout
