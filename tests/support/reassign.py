"""What the ``reassign-partitions`` and ``log-dirs`` tests share, on a Kafka or a Franz cluster
of brokers 1, 2 and 3: topics with a chosen assignment, data, plans, waiting for moves, and
the throttle configs as DescribeConfigs shows them.

The expected texts (``execute_text``, ``cancel_text``, ...) are Kafka 3.9's
``ReassignPartitionsCommand`` output; ``tests/reference/test_reassign_partitions.py`` checks
them against Kafka's own tool on a Kafka cluster, and ``tests/cluster`` reuses them for a
Franz cluster.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from franz.admin.cluster_wire import ClusterClient
from tests.support.kafka_ref import run_franz_tool, run_kafka_tool

REASSIGN_MAIN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
LOG_DIRS_MAIN = "org.apache.kafka.tools.LogDirsCommand"
BROKERS = (1, 2, 3)
TOPIC_THROTTLE_KEYS = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
BROKER_RATE_KEYS = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
LOG_DIR_RATE_KEY = "replica.alter.log.dirs.io.max.bytes.per.second"
CANNOT_EXECUTE = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one. "
    "The --additional flag can also be used to change the throttle by resubmitting the "
    "current reassignment.\n"
)
RUN_VERIFY = (
    "Warning: You must run --verify periodically, until the reassignment completes, to "
    "ensure the throttle is removed.\n"
)


def reassign(impl: str, bootstrap: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """``kafka-reassign-partitions`` (``impl`` "kafka": Kafka's class) or
    ``franz reassign-partitions``."""
    if impl == "kafka":
        return run_kafka_tool(REASSIGN_MAIN, "--bootstrap-server", bootstrap, *args)
    return run_franz_tool("reassign-partitions", "--bootstrap-server", bootstrap, *args)


def log_dirs(impl: str, bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    if impl == "kafka":
        return run_kafka_tool(LOG_DIRS_MAIN, "--bootstrap-server", bootstrap, *args)
    return run_franz_tool("log-dirs", "--bootstrap-server", bootstrap, *args)


def outcome(result: subprocess.CompletedProcess[str]) -> tuple[int, str, str]:
    """Exit code, stdout and stderr without log4j's WARN lines (Kafka's admin client logs
    connection hiccups there)."""
    stderr = "".join(
        line
        for line in result.stderr.splitlines(keepends=True)
        if " WARN " not in line and "(org.apache.kafka" not in line
    )
    return result.returncode, result.stdout, stderr


def eventually(check: Callable[[], bool], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout_s} s")
        time.sleep(0.2)


# -- topics and data -----------------------------------------------------------------------------


def create_topic(bootstrap: str, topic: str, assignment: Sequence[Sequence[int]]) -> None:
    """``topic`` with partition p on ``assignment[p]``; returns once every partition leads."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, len(assignment), replica_assignment=[list(r) for r in assignment])
    admin.create_topics([new], operation_timeout=30, request_timeout=30)[topic].result(40)
    eventually(
        lambda: (
            {p: (r[1], r[2]) for p, r in partitions(bootstrap, topic).items()}
            == {p: (list(r), sorted(r)) for p, r in enumerate(assignment)}
        ),
        30,
        f"{topic} created with its replicas in sync",
    )


def partitions(bootstrap: str, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
    """Partition -> (leader, replicas, sorted ISR) from Metadata (all topics: no auto-create)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    found = admin.list_topics(timeout=20).topics.get(topic)
    if found is None or found.error is not None:
        return {}
    return {p.id: (p.leader, list(p.replicas), sorted(p.isrs)) for p in found.partitions.values()}


def produce(bootstrap: str, topic: str, partition: int, count: int, size: int) -> list[bytes]:
    """``count`` distinct values of ``size`` bytes, acks=all; the values sent."""
    values = [f"{i:08d}".encode().ljust(size, b".") for i in range(count)]
    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "log_level": 2}
    )
    failures: list[str] = []

    def delivered(err: Any, _msg: Any) -> None:
        if err is not None:
            failures.append(str(err))

    for value in values:
        producer.produce(topic, value, partition=partition, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(120) == 0
    assert failures == []
    return values


def consume(bootstrap: str, topic: str, partition: int, count: int) -> list[bytes]:
    """The first ``count`` values of the partition (no group: assign from the start)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False,
         "log_level": 2}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, partition, 0)])
    out: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(out) < count and time.monotonic() < deadline:
            for message in consumer.consume(500, 1.0):
                if message.error() is None:
                    out.append(message.value())
    finally:
        consumer.close()
    return out


def write_plan(
    path: Path,
    topic: str,
    targets: Mapping[int, list[int]],
    log_dirs: Mapping[int, list[str]] | None = None,
) -> Path:
    entries = []
    for partition, replicas in targets.items():
        entry: dict[str, Any] = {"topic": topic, "partition": partition, "replicas": replicas}
        if log_dirs and partition in log_dirs:
            entry["log_dirs"] = log_dirs[partition]
        entries.append(entry)
    path.write_text(json.dumps({"version": 1, "partitions": entries}))
    return path


def assignment_json(topic: str, replicas: Mapping[int, list[int]]) -> str:
    parts = ",".join(
        f'{{"topic":"{topic}","partition":{p},"replicas":{json.dumps(r, separators=(",", ":"))},'
        f'"log_dirs":{json.dumps(["any"] * len(r), separators=(",", ":"))}}}'
        for p, r in sorted(replicas.items())
    )
    return f'{{"version":1,"partitions":[{parts}]}}'


# -- the cluster's view ------------------------------------------------------------------------


def client(bootstrap: str) -> ClusterClient:
    return ClusterClient(bootstrap, timeout_ms=30_000, client_id="reassign-test")


def no_reassignment(bootstrap: str) -> bool:
    return client(bootstrap).list_reassignments() == {}


def wait_moved(
    bootstrap: str, topic: str, targets: Mapping[int, list[int]], timeout: float
) -> None:
    """Until Metadata shows each partition on its target replicas, all in sync, and no
    reassignment is ongoing."""

    def done() -> bool:
        now = partitions(bootstrap, topic)
        return all(
            p in now and now[p][1] == r and now[p][2] == sorted(r) for p, r in targets.items()
        ) and no_reassignment(bootstrap)

    eventually(done, timeout, f"{topic} moved to {dict(targets)}")


def replica_sizes(bootstrap: str, topic: str, partition: int) -> dict[int, int]:
    """Broker -> bytes of the partition's replica there (DescribeLogDirs, current replicas)."""
    cc = client(bootstrap)
    sizes: dict[int, int] = {}
    for broker in cc.nodes().brokers:
        for info in cc.describe_log_dirs(broker, {topic: [partition]}).values():
            for (t, p), replica in info.replicas:
                if (t, p) == (topic, partition) and not replica.is_future:
                    sizes[broker] = replica.size
    return sizes


def log_dir_rate(bootstrap: str, broker: int) -> str | None:
    """``broker``'s dynamic ``replica.alter.log.dirs.io.max.bytes.per.second`` (None: unset)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.BROKER, str(broker))
    entries = admin.describe_configs([resource], request_timeout=20)[resource].result(30)
    entry = entries.get(LOG_DIR_RATE_KEY)
    return None if entry is None or entry.is_default else entry.value


def set_log_dir_rate(bootstrap: str, broker: int, rate: int | None) -> None:
    """Set (None: remove) ``broker``'s log-dir move rate, and wait until it shows."""
    op = AlterConfigOpType.DELETE if rate is None else AlterConfigOpType.SET
    value = None if rate is None else str(rate)
    entry = ConfigEntry(LOG_DIR_RATE_KEY, value, incremental_operation=op)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ResourceType.BROKER, str(broker), incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(30)
    eventually(lambda: log_dir_rate(bootstrap, broker) == value, 30, f"{LOG_DIR_RATE_KEY}")


def replica_dirs(bootstrap: str, broker: int, topic: str, partition: int) -> dict[str, bool]:
    """Log dir -> is future, of the replicas of the partition on ``broker``."""
    dirs = client(bootstrap).describe_log_dirs(broker, {topic: [partition]})
    return {
        log_dir: replica.is_future
        for log_dir, info in dirs.items()
        for (t, p), replica in info.replicas
        if (t, p) == (topic, partition)
    }


def throttles(bootstrap: str, topic: str) -> dict[str, str | None]:
    """The topic's throttled-replica lists and each broker's rates: ``key`` or
    ``broker N key`` -> value, None where not set."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resources = [ConfigResource(ResourceType.TOPIC, topic)] + [
        ConfigResource(ResourceType.BROKER, str(b)) for b in BROKERS
    ]
    out: dict[str, str | None] = {}
    for resource in resources:  # librdkafka: one BROKER resource per request
        entries = admin.describe_configs([resource], request_timeout=20)[resource].result(30)
        if resource.restype == ResourceType.TOPIC:
            keys, prefix = TOPIC_THROTTLE_KEYS, ""
        else:
            keys, prefix = BROKER_RATE_KEYS, f"broker {resource.name} "
        for key in keys:
            entry = entries.get(key)
            out[prefix + key] = None if entry is None or entry.is_default else entry.value
    return out


def assert_throttles(
    bootstrap: str, topic: str, expected: Mapping[str, str | None], timeout_s: float = 30
) -> None:
    """``throttles`` becomes ``expected`` (a broker applies a dynamic config change when
    ZooKeeper notifies it, a moment after the request returned)."""
    deadline = time.monotonic() + timeout_s
    while (now := throttles(bootstrap, topic)) != expected:
        assert time.monotonic() < deadline, f"throttles of {topic}: {now} != {dict(expected)}"
        time.sleep(0.2)


def throttles_set(
    topic_leader: str,
    topic_follower: str,
    rate: int | None,
    brokers: Sequence[int] = BROKERS,
) -> dict[str, str | None]:
    """What ``throttles`` shows after ``--throttle rate`` on a move of ``brokers``."""
    rates: dict[str, str | None] = {
        f"broker {b} {key}": None if rate is None or b not in brokers else str(rate)
        for b in BROKERS
        for key in BROKER_RATE_KEYS
    }
    return {
        "leader.replication.throttled.replicas": topic_leader or None,
        "follower.replication.throttled.replicas": topic_follower or None,
        **rates,
    }


NO_THROTTLES = throttles_set("", "", None)


# -- Kafka 3.9's texts ---------------------------------------------------------------------------


def execute_text(topic: str, current: Mapping[int, list[int]], throttle: int | None = None) -> str:
    """``--execute``'s output for a plan of ``current``'s partitions."""
    names = ",".join(f"{topic}-{p}" for p in sorted(current))
    plural = "" if len(current) == 1 else "s"
    text = (
        "Current partition replica assignment\n\n"
        f"{assignment_json(topic, current)}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback\n"
    )
    if throttle is not None:
        text += RUN_VERIFY + f"The inter-broker throttle limit was set to {throttle} B/s\n"
    return text + f"Successfully started partition reassignment{plural} for {names}\n"


def clearing_text(topic: str) -> str:
    return (
        f"Clearing broker-level throttles on brokers {','.join(map(str, BROKERS))}\n"
        f"Clearing topic-level throttles on topic {topic}\n"
    )


def verify_text(topic: str, lines: Mapping[int, str], *, clears: bool) -> str:
    """``--verify``: a state line per partition (``lines``: partition -> the line's end after
    "partition t-p"), the empty log-dir line, then the clearing lines if nothing moves."""
    body = "".join(
        f"Reassignment of partition {topic}-{p} {end}\n"
        if not end.startswith(",")
        else f"There is no active reassignment of partition {topic}-{p}{end}\n"
        for p, end in sorted(lines.items())
    )
    tail = clearing_text(topic) if clears else ""
    return f"Status of partition reassignment:\n{body}\n{tail}"


def cancel_text(topic: str, cancelled: Sequence[int], *, clears: bool) -> str:
    if cancelled:
        plural = "" if len(cancelled) == 1 else "s"
        first = (
            f"Successfully cancelled partition reassignment{plural} for: "
            + ",".join(f"{topic}-{p}" for p in sorted(cancelled))
            + "\n"
        )
    else:
        first = "None of the specified partition reassignments are active.\n"
    rest = "None of the specified partition moves are active."
    return first + rest + (clearing_text(topic) if clears else "")
