"""Create, delete, describe, or change a topic (Kafka's ``kafka-topics.sh``).

    franz topics --bootstrap-server HOST:PORT --create --topic T [--partitions N]
                 [--replication-factor R | --replica-assignment 0:1,1:0] [--config k=v]...
                 [--if-not-exists]
    franz topics --bootstrap-server HOST:PORT --alter --topic T --partitions N [--if-exists]
    franz topics --bootstrap-server HOST:PORT --delete --topic T [--if-exists]
    franz topics --bootstrap-server HOST:PORT --list [--topic REGEX] [--exclude-internal]
    franz topics --bootstrap-server HOST:PORT --describe [--topic REGEX] [--exclude-internal]
                 [--if-exists] [--under-replicated-partitions | --unavailable-partitions |
                  --under-min-isr-partitions | --at-min-isr-partitions |
                  --topics-with-overrides]

``--topic`` is a regular expression over whole topic names except with --create (commas
mean "or"; escape dots: "test\\.topic"). Without ``--partitions`` or
``--replication-factor``, --create uses the cluster defaults. Output is Kafka 3.9's:
``Created topic T.``; --list prints one name per line; --describe prints one line per topic
(``Topic: T  TopicId: ...  PartitionCount: N  ReplicationFactor: R  Configs: k=v,...``, the
configs that are not defaults) then one line per partition (``Topic: T  Partition: P
Leader: L  Replicas: ...  Isr: ...  Elr: N/A  LastKnownElr: N/A``), tab-separated. --alter
and --delete print nothing, as Kafka's tool. To change topic configs use ``franz configs``.
"""

from __future__ import annotations

import argparse
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewPartitions, NewTopic

from franz.admin.client import check_reachable, kafka_error, make_admin, result, unreachable
from franz.admin.configs_wire import RESOURCE_TOPIC, ConfigInfo
from franz.admin.options import ToolError, add_connection_options
from franz.admin.topics import (
    describe_resource_configs,
    has_collision_chars,
    kafka_describe_order,
    partition_line,
    select_topics,
    topic_id_text,
    topic_line,
)

__all__ = ["add_arguments", "run"]

_ACTIONS = ("create", "alter", "delete", "list", "describe")
_REPORTS = (
    "under_replicated_partitions",
    "unavailable_partitions",
    "under_min_isr_partitions",
    "at_min_isr_partitions",
)
_COLLISION_WARNING = (
    "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore "
    "('_') could collide. To avoid issues it is best to use either, but not both."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser)
    actions = parser.add_mutually_exclusive_group(required=True)
    actions.add_argument("--create", action="store_true", help="Create a new topic.")
    actions.add_argument(
        "--alter", action="store_true", help="Alter the number of partitions of a topic."
    )
    actions.add_argument("--delete", action="store_true", help="Delete a topic.")
    actions.add_argument("--list", action="store_true", help="List all available topics.")
    actions.add_argument(
        "--describe", action="store_true", help="List details for the given topics."
    )
    parser.add_argument(
        "--topic",
        help="the topic to create, alter, describe or delete; a regular expression except "
        "with --create",
    )
    parser.add_argument("--partitions", type=int, metavar="N", help="number of partitions")
    parser.add_argument(
        "--replication-factor", type=int, metavar="R", help="replication factor (--create)"
    )
    parser.add_argument(
        "--replica-assignment",
        metavar="B1:B2,B1:B2,...",
        help="manual partition-to-broker assignment: partitions separated by ',', the "
        "replicas of one partition by ':'",
    )
    parser.add_argument(
        "--config",
        action="append",
        metavar="name=value",
        help="a topic config override for --create (repeatable)",
    )
    parser.add_argument(
        "--if-exists", action="store_true", help="alter, delete or describe only if it exists"
    )
    parser.add_argument(
        "--if-not-exists", action="store_true", help="create only if it does not exist"
    )
    parser.add_argument(
        "--exclude-internal", action="store_true", help="leave internal topics out (list/describe)"
    )
    parser.add_argument(
        "--under-replicated-partitions",
        action="store_true",
        help="describe: only partitions whose ISR is smaller than their replica set",
    )
    parser.add_argument(
        "--unavailable-partitions",
        action="store_true",
        help="describe: only partitions whose leader is not available",
    )
    parser.add_argument(
        "--under-min-isr-partitions",
        action="store_true",
        help="describe: only partitions whose ISR is smaller than min.insync.replicas",
    )
    parser.add_argument(
        "--at-min-isr-partitions",
        action="store_true",
        help="describe: only partitions whose ISR size equals min.insync.replicas",
    )
    parser.add_argument(
        "--topics-with-overrides",
        action="store_true",
        help="describe: only topics that have config overrides (no partition lines)",
    )
    parser.set_defaults(_parser=parser)


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Kafka's ``TopicCommandOptions.checkInvalidArgs``: each option with its actions."""
    action = next(a for a in _ACTIONS if getattr(args, a))

    def only(option: str, allowed: tuple[str, ...]) -> None:
        if action not in allowed:
            parser.error(f"option --{option} can only be used with --{' or --'.join(allowed)}")

    if action in ("create", "alter", "delete") and not args.topic:
        parser.error(f"--{action} requires --topic")
    if args.config:
        only("config", ("create",))
    if args.partitions is not None:
        only("partitions", ("create", "alter"))
    if args.replication_factor is not None:
        only("replication-factor", ("create",))
    if args.replica_assignment is not None:
        only("replica-assignment", ("create",))
        if args.partitions is not None or args.replication_factor is not None:
            parser.error(
                "option --replica-assignment cannot be used with --partitions or "
                "--replication-factor"
            )
    if action == "alter" and args.partitions is None:
        parser.error("--alter requires --partitions")
    reports = [r for r in _REPORTS if getattr(args, r)]
    for report in reports:
        only(report.replace("_", "-"), ("describe",))
    if args.topics_with_overrides:
        only("topics-with-overrides", ("describe",))
        if reports:
            parser.error(
                "option --topics-with-overrides cannot be used with --"
                + reports[0].replace("_", "-")
            )
    if args.if_exists:
        only("if-exists", ("alter", "delete", "describe"))
    if args.if_not_exists:
        only("if-not-exists", ("create",))
    if args.exclude_internal:
        only("exclude-internal", ("list", "describe"))


def run(args: argparse.Namespace) -> int:
    check_args(args._parser, args)
    admin = make_admin(args)
    metadata = check_reachable(admin, args)
    if args.create:
        _create(admin, args)
    elif args.list:
        names = select_topics(metadata.topics, args.topic, args.exclude_internal)
        print("\n".join(names))
    else:
        topics = select_topics(metadata.topics, args.topic, args.exclude_internal)
        if args.topic and not topics and not args.if_exists:
            raise ToolError(f"Topic '{args.topic}' does not exist as expected")
        if topics and args.alter:
            partitions = [NewPartitions(t, args.partitions) for t in topics]
            for future in admin.create_partitions(partitions).values():
                result(future, args)
        elif topics and args.delete:
            for future in admin.delete_topics(topics).values():
                result(future, args)
        elif topics and args.describe:
            _describe(admin, args, metadata, topics)
    return 0


def _create(admin: AdminClient, args: argparse.Namespace) -> None:
    topic = args.topic
    if has_collision_chars(topic):
        print(_COLLISION_WARNING)
    rf = args.replication_factor
    if rf is not None and not 1 <= rf <= 32767:
        raise ToolError("The replication factor must be between 1 and 32767 inclusive")
    if args.partitions is not None and args.partitions < 1:
        raise ToolError("The partitions must be greater than 0")
    configs: dict[str, str] = {}
    for item in args.config or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or "=" in value:
            raise ToolError(
                'Invalid topic config: all configs to be added must be in the format "key=val".'
            )
        configs[key.strip()] = value.strip()
    if args.replica_assignment is not None:
        assignment = _parse_replica_assignment(args.replica_assignment)
        new = NewTopic(
            topic, len(assignment), replica_assignment=assignment, config=configs
        )
    else:
        partitions = -1 if args.partitions is None else args.partitions
        new = NewTopic(topic, partitions, -1 if rf is None else rf, config=configs)
    (future,) = admin.create_topics([new]).values()
    try:
        future.result(timeout=args.timeout_ms / 1000)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else None
        exists = isinstance(error, KafkaError) and error.code() == KafkaError.TOPIC_ALREADY_EXISTS
        if exists and args.if_not_exists:
            return
        raise kafka_error(exc, args) from exc
    except TimeoutError as exc:
        raise unreachable(args) from exc
    print(f"Created topic {topic}.")


def _parse_replica_assignment(text: str) -> list[list[int]]:
    """Kafka's ``parseReplicaAssignment``: ``0:1,1:2`` -> [[0, 1], [1, 2]]."""
    assignment: list[list[int]] = []
    for index, part in enumerate(text.split(",")):
        try:
            brokers = [int(b.strip()) for b in part.split(":")]
        except ValueError as exc:
            raise ToolError(f"--replica-assignment: not a broker id list: {part!r}") from exc
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise ToolError(
                "Partition replica lists may not contain duplicate entries: "
                + ",".join(map(str, duplicates))
            )
        if assignment and len(brokers) != len(assignment[0]):
            raise ToolError(f"Partition {index} has different replication factor: {brokers}")
        assignment.append(brokers)
    return assignment


def _describe(
    admin: AdminClient, args: argparse.Namespace, metadata: Any, topics: list[str]
) -> None:
    descriptions = {
        name: result(future, args)
        for name, future in admin.describe_topics(TopicCollection(topics)).items()
    }
    live = {node.id for node in result(admin.describe_cluster(), args).nodes}
    reports = [r for r in _REPORTS if getattr(args, r)]
    for name in kafka_describe_order(topics):
        description = descriptions[name]
        configs = describe_resource_configs(
            admin, args, metadata, RESOURCE_TOPIC, name, include_synonyms=False
        )
        partitions = sorted(description.partitions, key=lambda p: p.id)
        if not reports:
            has_overrides = any(not c.is_default for c in configs)
            if not args.topics_with_overrides or has_overrides:
                print(
                    topic_line(
                        name,
                        topic_id_text(description.topic_id),
                        len(partitions),
                        len(partitions[0].replicas) if partitions else 0,
                        configs,
                    )
                )
        if args.topics_with_overrides:
            continue
        min_isr = _min_isr(configs)
        for p in partitions:
            if reports and not any(_matches(r, p, live, min_isr) for r in reports):
                continue
            leader = None if p.leader is None or p.leader.id < 0 else p.leader.id
            print(
                partition_line(
                    name, p.id, leader, [n.id for n in p.replicas], [n.id for n in p.isr]
                )
            )


def _min_isr(configs: list[ConfigInfo]) -> int:
    for config in configs:
        if config.name == "min.insync.replicas" and config.value is not None:
            return int(config.value)
    return 1


def _matches(report: str, partition: Any, live: set[int], min_isr: int) -> bool:
    """Kafka's ``PartitionDescription`` predicates."""
    has_leader = partition.leader is not None and partition.leader.id >= 0
    isr = len(partition.isr)
    if report == "under_replicated_partitions":
        return len(partition.replicas) - isr > 0
    if report == "unavailable_partitions":
        return not has_leader or partition.leader.id not in live
    if report == "under_min_isr_partitions":
        return not has_leader or isr < min_isr
    return isr == min_isr  # at_min_isr_partitions
