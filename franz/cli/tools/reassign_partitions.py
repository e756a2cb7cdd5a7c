"""Move partition replicas between brokers (Kafka's ``kafka-reassign-partitions.sh``).

    franz reassign-partitions --bootstrap-server HOST:PORT
        (--generate --topics-to-move-json-file FILE --broker-list 0,1 [--disable-rack-aware]
         | --execute --reassignment-json-file FILE
         | --verify --reassignment-json-file FILE [--preserve-throttles])
        [--command-config FILE] [--timeout MS]

``--generate`` reads ``{"topics": [{"topic": "t"}], "version": 1}`` and prints, as Kafka
3.9's ``ReassignPartitionsCommand``, the current assignment of those topics and a proposed
one over the brokers of ``--broker-list`` (Kafka's rack-unaware ``assignReplicasToBrokers``:
a random start broker, replicas on the following brokers)::

    Current partition replica assignment
    {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[0],"log_dirs":["any"]}]}

    Proposed partition reassignment configuration
    {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[0],"log_dirs":["any"]}]}

``--execute`` reads such a reassignment JSON, refuses a plan naming a broker the cluster
does not have ("Unknown broker id 5") or a partition it does not have ("Unable to find
partition: t-9"), prints the current assignment (to save for a rollback) and then starts
the moves. A plan that changes nothing sends nothing and says so. Moving replicas needs
Kafka's AlterPartitionReassignments API, which Franz's broker does not implement and this
tool does not send: a plan that would move replicas is refused (exit 1) with the reason
(on a single-broker cluster replicas have nowhere to go).

``--verify`` prints "Status of partition reassignment:" then, per partition, "Reassignment
of partition t-0 is completed." or "There is no active reassignment of partition t-0, but
replica set is 0 rather than 1.", then clears the replication throttles as Kafka does
(unless ``--preserve-throttles``; only on live brokers, where Kafka also names the plan's
absent ones): "Clearing broker-level throttles on broker 0" and
"Clearing topic-level throttles on topic t", deleting ``leader.replication.throttled.rate``,
``follower.replication.throttled.rate``, ``replica.alter.log.dirs.io.max.bytes.per.second``
(brokers) and ``leader.replication.throttled.replicas``,
``follower.replication.throttled.replicas`` (topics). Ongoing reassignments are not listed
(ListPartitionReassignments is not available through librdkafka): every partition is
reported from its current replicas.

Not supported: ``--cancel``, ``--list``, ``--additional``, throttles on ``--execute``, log
directory moves (``log_dirs`` other than "any"), rack-aware assignment.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin._resource import ResourceType

from franz.admin.client import kafka_error_text, make_admin, tp_name, wait
from franz.admin.options import ToolError, add_connection_options
from franz.admin.partition_admin import ClusterView, read_cluster

__all__ = [
    "add_arguments",
    "assign_replicas_to_brokers",
    "format_reassignment_json",
    "parse_reassignment_json",
    "parse_topics_json",
    "run",
    "status_lines",
]

ANY_LOG_DIR = "any"
BROKER_THROTTLES = (
    "leader.replication.throttled.rate",
    "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
)
TOPIC_THROTTLES = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)

Assignment = dict[tuple[str, int], list[int]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument(
        "--generate", action="store_true", help="generate a candidate partition reassignment"
    )
    action.add_argument(
        "--execute", action="store_true", help="start the reassignment of --reassignment-json-file"
    )
    action.add_argument(
        "--verify", action="store_true", help="report the status of --reassignment-json-file"
    )
    parser.add_argument(
        "--topics-to-move-json-file",
        metavar="FILE",
        help='with --generate: {"topics": [{"topic": "foo"}], "version": 1}',
    )
    parser.add_argument(
        "--broker-list",
        metavar="0,1,2",
        help="with --generate: the brokers to which the partitions may be assigned",
    )
    parser.add_argument(
        "--reassignment-json-file",
        metavar="FILE",
        help="with --execute/--verify: the reassignment JSON, as --generate proposes it",
    )
    parser.add_argument(
        "--disable-rack-aware",
        action="store_true",
        help="with --generate: ignore racks (franz always does)",
    )
    parser.add_argument(
        "--preserve-throttles",
        action="store_true",
        help="with --verify: do not clear the replication throttles",
    )


# -- JSON (pure) --------------------------------------------------------------------------------


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ToolError("The input string is not a valid JSON") from None


def _version(data: Any) -> None:
    if not isinstance(data, dict):
        raise ToolError("The input string is not a JSON object")
    version = data.get("version", 1)
    if version != 1:
        raise ToolError(f"Not supported version field value {version}")


def _get(entry: Any, name: str) -> Any:
    if not isinstance(entry, dict) or name not in entry:
        raise ToolError(f"No such field exists: `{name}` in {json.dumps(entry)}")
    return entry[name]


def _duplicates(items: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    dups: list[Any] = []
    for item in items:
        if item in seen and item not in dups:
            dups.append(item)
        seen.add(item)
    return dups


def parse_topics_json(text: str) -> list[str]:
    """``--topics-to-move-json-file``: the topics, duplicates refused (Kafka's messages)."""
    data = _json(text)
    _version(data)
    topics = [str(_get(entry, "topic")) for entry in data.get("topics") or []]
    dups = _duplicates(topics)
    if dups:
        raise ToolError(
            f"List of topics to reassign contains duplicate entries: [{', '.join(dups)}]"
        )
    return topics


def parse_broker_list(text: str) -> list[int]:
    try:
        brokers = [int(b) for b in text.split(",")]
    except ValueError:
        raise ToolError(f"--broker-list expects comma separated broker ids, got {text!r}") from None
    dups = _duplicates(brokers)
    if dups:
        raise ToolError(f"Broker list contains duplicate entries: [{', '.join(map(str, dups))}]")
    return brokers


def parse_reassignment_json(text: str) -> Assignment:
    """``--reassignment-json-file`` for --execute/--verify: {(topic, partition): replicas}."""
    data = _json(text)
    _version(data)
    parts: list[tuple[tuple[str, int], list[int]]] = []
    for entry in data.get("partitions") or []:
        topic, partition = _get(entry, "topic"), _get(entry, "partition")
        replicas = _get(entry, "replicas")
        if not isinstance(replicas, list) or not all(isinstance(r, int) for r in replicas):
            raise ToolError(f"replicas of {tp_name(topic, partition)} must be a list of ids")
        log_dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if len(log_dirs) != len(replicas):
            raise ToolError(
                f"Size of replicas list {replicas} is different from size of log dirs list "
                f"{log_dirs} for partition {tp_name(topic, partition)}"
            )
        if any(d != ANY_LOG_DIR for d in log_dirs):
            raise ToolError(
                'log directory moves (log_dirs other than "any") are not supported by franz '
                "reassign-partitions"
            )
        parts.append(((str(topic), int(partition)), list(replicas)))
    return _checked(parts)


def _checked(parts: list[tuple[tuple[str, int], list[int]]]) -> Assignment:
    if not parts:
        raise ToolError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in parts):
        raise ToolError("Partition replica list cannot be empty")
    dup_parts = _duplicates([key for key, _ in parts])
    if dup_parts:
        raise ToolError(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(tp_name(*key) for key in dup_parts)
        )
    dup_replicas = [
        f"{tp_name(*key)} contains multiple entries for {','.join(map(str, dups))}"
        for key, replicas in parts
        if (dups := _duplicates(replicas))
    ]
    if dup_replicas:
        raise ToolError(
            "Partition replica lists may not contain duplicate entries: " + ". ".join(dup_replicas)
        )
    return dict(parts)


def format_reassignment_json(assignment: Assignment) -> str:
    """Kafka's ``formatAsReassignmentJson``: partitions sorted by topic then partition."""
    partitions = [
        {
            "topic": topic,
            "partition": partition,
            "replicas": assignment[(topic, partition)],
            "log_dirs": [ANY_LOG_DIR] * len(assignment[(topic, partition)]),
        }
        for topic, partition in sorted(assignment)
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def assign_replicas_to_brokers(
    brokers: list[int],
    partitions: int,
    replication_factor: int,
    rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Kafka's rack-unaware ``AdminUtils.assignReplicasToBrokers``: partition p's first
    replica is broker ``(p + start) % n``, the others follow with a shift that grows every
    ``n`` partitions; ``start`` and the first shift are random."""
    if partitions <= 0:
        raise ToolError("Number of partitions must be larger than 0.")
    if replication_factor <= 0:
        raise ToolError("Replication factor must be larger than 0.")
    if replication_factor > len(brokers):
        raise ToolError(
            f"Replication factor: {replication_factor} larger than available brokers: "
            f"{len(brokers)}."
        )
    rng = rng or random.Random()
    ids = sorted(brokers)
    n = len(ids)
    start = rng.randrange(n)
    shift = rng.randrange(n)
    out: dict[int, list[int]] = {}
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [ids[first]]
        for j in range(replication_factor - 1):
            offset = 1 + (shift + j) % (n - 1)
            replicas.append(ids[(first + offset) % n])
        out[p] = replicas
    return out


def status_lines(targets: Assignment, current: Assignment) -> list[str]:
    """Kafka's ``partitionReassignmentStatesToString`` for partitions with no active
    reassignment (a missing partition has the empty replica set)."""
    lines = ["Status of partition reassignment:"]
    for key in sorted(targets):
        now, target = current.get(key, []), targets[key]
        if now == target:
            lines.append(f"Reassignment of partition {tp_name(*key)} is completed.")
        else:
            lines.append(
                f"There is no active reassignment of partition {tp_name(*key)}, but replica "
                f"set is {','.join(map(str, now))} rather than {','.join(map(str, target))}."
            )
    return lines


# -- cluster -------------------------------------------------------------------------------------


def _read_file(path: str | None, flag: str) -> str:
    if path is None:
        raise ToolError(f"{flag} is required with this action")
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise ToolError(f"cannot read {flag} {path}: {exc.strerror or exc}") from None


def _broker_ids(admin: Any, args: argparse.Namespace) -> frozenset[int]:
    """DescribeCluster's nodes (Kafka's ``describeCluster().nodes()``)."""
    result = wait(admin.describe_cluster(request_timeout=args.timeout_ms / 1000), args)
    return frozenset(node.id for node in result.nodes)


def _current(cluster: ClusterView, keys: list[tuple[str, int]]) -> Assignment:
    return {
        (t, p): list(cluster.partitions[t][p].replicas)
        for t, p in keys
        if t in cluster.partitions and p in cluster.partitions[t]
    }


def generate(admin: Any, args: argparse.Namespace) -> int:
    if args.topics_to_move_json_file is None or args.broker_list is None:
        raise ToolError("--generate needs --topics-to-move-json-file and --broker-list")
    brokers = parse_broker_list(args.broker_list)
    topics = parse_topics_json(
        _read_file(args.topics_to_move_json_file, "--topics-to-move-json-file")
    )
    cluster = read_cluster(admin, args)
    for topic in topics:
        if topic not in cluster.partitions:
            raise ToolError(f"Topic {topic} not found.")
    current = {
        (t, p): list(view.replicas) for t in topics for p, view in cluster.partitions[t].items()
    }
    alive = sorted(set(brokers) & _broker_ids(admin, args))
    proposed: Assignment = {}
    for topic in sorted(set(topics)):
        parts = cluster.partitions[topic]
        factor = len(parts[min(parts)].replicas)
        for p, replicas in assign_replicas_to_brokers(alive, len(parts), factor).items():
            proposed[(topic, p)] = replicas
    print(f"Current partition replica assignment\n{format_reassignment_json(current)}\n")
    print(f"Proposed partition reassignment configuration\n{format_reassignment_json(proposed)}")
    return 0


def execute(admin: Any, args: argparse.Namespace) -> int:
    plan = parse_reassignment_json(
        _read_file(args.reassignment_json_file, "--reassignment-json-file")
    )
    brokers = _broker_ids(admin, args)
    named = sorted({b for replicas in plan.values() for b in replicas})
    unknown = [b for b in named if b not in brokers]
    if unknown:
        raise ToolError(f"Unknown broker id {unknown[0]}")
    cluster = read_cluster(admin, args)
    current = _current(cluster, list(plan))
    missing = [tp_name(*key) for key in plan if key not in current]
    if missing:
        raise ToolError(f"Unable to find partition: {', '.join(missing)}")
    print("Current partition replica assignment\n")
    print(format_reassignment_json(current))
    print("\nSave this to use as the --reassignment-json-file option during rollback")
    moving = sorted(key for key in plan if plan[key] != current[key])
    if not moving:
        names = ",".join(tp_name(*key) for key in sorted(plan))
        print(f"No partition reassignment needed: the replicas of {names} are already as planned.")
        return 0
    names = ",".join(tp_name(*key) for key in moving)
    if len(brokers) == 1:
        raise ToolError(
            f"the cluster has a single broker ({min(brokers)}): the replicas of {names} "
            "cannot move (nothing was changed)"
        )
    raise ToolError(
        f"moving the replicas of {names} needs AlterPartitionReassignments, which franz "
        "reassign-partitions does not send (nothing was changed)"
    )


def verify(admin: Any, args: argparse.Namespace) -> int:
    plan = parse_reassignment_json(
        _read_file(args.reassignment_json_file, "--reassignment-json-file")
    )
    cluster = read_cluster(admin, args)
    for line in status_lines(plan, _current(cluster, list(plan))):
        print(line)
    print()  # Kafka prints the (here empty) log-dir move states
    if args.preserve_throttles:
        return 0
    # Kafka also names the plan's brokers that the cluster does not have; a config change
    # cannot be addressed to those, so only live brokers are named and cleared here.
    brokers = set(_broker_ids(admin, args))
    topics = sorted({topic for topic, _ in plan})
    ids = sorted(brokers)
    print(
        f"Clearing broker-level throttles on broker{'' if len(ids) == 1 else 's'} "
        + ",".join(map(str, ids))
    )
    for broker in ids:  # librdkafka allows one BROKER resource per call
        _delete_configs(admin, args, ResourceType.BROKER, [str(broker)], BROKER_THROTTLES)
    print(
        f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} "
        + ",".join(topics)
    )
    _delete_configs(admin, args, ResourceType.TOPIC, topics, TOPIC_THROTTLES)
    return 0


def _delete_configs(
    admin: Any,
    args: argparse.Namespace,
    kind: ResourceType,
    names: list[str],
    keys: tuple[str, ...],
) -> None:
    resources = [
        ConfigResource(
            kind,
            name,
            incremental_configs=[
                ConfigEntry(key, None, incremental_operation=AlterConfigOpType.DELETE)
                for key in keys
            ],
        )
        for name in names
    ]
    futures = admin.incremental_alter_configs(resources, request_timeout=args.timeout_ms / 1000)
    for resource, future in futures.items():
        try:
            wait(future, args)
        except KafkaException as exc:
            raise ToolError(
                f"clearing the throttles of {resource.name} failed: {kafka_error_text(exc)}"
            ) from None


def run(args: argparse.Namespace) -> int:
    admin = make_admin(args, {"client.id": "reassign-partitions-tool"})
    if args.generate:
        return generate(admin, args)
    if args.execute:
        return execute(admin, args)
    return verify(admin, args)
