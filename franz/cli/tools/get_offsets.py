"""Get topic-partition offsets (Kafka's ``kafka-get-offsets.sh``, ``GetOffsetShell``).

    franz get-offsets --bootstrap-server HOST:PORT [--topic TOPIC_REGEX] [--partitions 0,1]
                      [--time -1|latest|-2|earliest|-3|max-timestamp|<timestamp ms>]
                      [--topic-partitions t1:1,t2:0-3,t3,t4:5-,t5:-3]
                      [--exclude-internal-topics] [--command-config FILE] [--timeout MS]

Prints one line ``<topic>:<partition>:<offset>`` per partition, sorted as Kafka sorts them
(by the text ``<topic>-<partition>``). ``--time`` (default latest) is the ListOffsets
timestamp: -1 the log end offset, -2 the log start offset, -3 the offset of the record with
the largest timestamp, or a timestamp in ms: the first offset whose timestamp is at or after
it. A partition without such an offset (a timestamp after the last record) prints no line.

``--topic`` is a regular expression matched against the whole topic name (all topics when
absent); ``--partitions`` a comma separated list of partition ids (all when absent).
``--topic-partitions`` (not with --topic/--partitions) is a comma separated list of
``TOPIC_REGEX[:PARTITIONS]`` rules, PARTITIONS being a number, ``N-M`` (M excluded), ``N-``
or ``-M``. Internal topics are included unless ``--exclude-internal-topics``.

Errors (exit 1, one line): no partition matches the filters ("Could not match any
topic-partitions with the specified filters"), a malformed --time, no broker reachable.
A partition whose ListOffsets fails is skipped with a line on stderr, as Kafka does.
Not supported: -4/earliest-local and -5/latest-tiered (tiered storage; librdkafka has no
offset spec for them).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from typing import Any, Final

from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin._listoffsets import OffsetSpec  # not re-exported for mypy

from franz.admin.client import kafka_error_text, make_admin, tp_name, wait
from franz.admin.options import ToolError, add_connection_options
from franz.admin.partition_admin import read_cluster

__all__ = ["PartitionRule", "add_arguments", "parse_rules", "parse_time", "run"]

INT32_MAX: Final = (1 << 31) - 1
#: Kafka's TOPIC_PARTITION_PATTERN for --topic-partitions rules.
_RULE = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")
_TIME_HELP: Final = (
    "-1 or latest / -2 or earliest / -3 or max-timestamp, or a specified long format timestamp"
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser)
    parser.add_argument(
        "--topic-partitions",
        metavar="topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3",
        help="comma separated topic-partition rules (not with --topic or --partitions)",
    )
    parser.add_argument(
        "--topic", metavar="TOPIC", help="the topic (a regular expression); all if absent"
    )
    parser.add_argument(
        "--partitions", metavar="IDS", help="comma separated partition ids; all if absent"
    )
    parser.add_argument(
        "--time",
        default="latest",
        metavar="TIME",
        help=f"timestamp of the offsets before that: <timestamp> / {_TIME_HELP} (default latest)",
    )
    parser.add_argument(
        "--exclude-internal-topics",
        action="store_true",
        help="exclude internal topics (included by default)",
    )


@dataclass(frozen=True)
class PartitionRule:
    """A topic regex (full match) and a partition range [low, high), or one partition."""

    topic: re.Pattern[str]
    low: int = 0
    high: int = INT32_MAX
    only: frozenset[int] | None = None

    def topic_allowed(self, topic: str) -> bool:
        return self.topic.fullmatch(topic) is not None

    def allowed(self, topic: str, partition: int) -> bool:
        if not self.topic_allowed(topic):
            return False
        if self.only is not None:
            return not self.only or partition in self.only
        return self.low <= partition < self.high


def _topic_regex(text: str) -> re.Pattern[str]:
    # Kafka's TopicFilter.IncludeList: commas mean alternation, spaces and quotes are dropped.
    cleaned = text.strip().replace(",", "|").replace(" ", "")
    cleaned = re.sub(r"^[\"']+", "", cleaned)
    cleaned = re.sub(r"[\"']+$", "", cleaned)
    try:
        return re.compile(cleaned)
    except re.error as exc:
        raise ToolError(f"{text} is an invalid regex: {exc}") from None


def parse_rules(
    topic_partitions: str | None, topic: str | None, partitions: str | None
) -> list[PartitionRule]:
    """The filter of Kafka's GetOffsetShell: a partition passes if any rule allows it."""
    if topic_partitions is not None:
        if topic is not None or partitions is not None:
            raise ToolError("--topic-partitions cannot be used with --topic or --partitions")
        rules = []
        for spec in topic_partitions.split(","):
            match = _RULE.fullmatch(spec)
            if match is None:
                raise ToolError(f"Invalid rule specification: {spec}")
            groups = [g or None for g in match.groups()]
            regex = _topic_regex(groups[0] or ".*")
            if groups[1] is not None:
                rules.append(PartitionRule(regex, only=frozenset({int(groups[1])})))
            else:
                low = int(groups[2]) if groups[2] else 0
                high = int(groups[3]) if groups[3] else INT32_MAX
                rules.append(PartitionRule(regex, low, high))
        return rules
    ids: frozenset[int] = frozenset()
    if partitions:
        try:
            ids = frozenset(int(p) for p in partitions.split(","))
        except ValueError:
            raise ToolError(
                "--partitions expects a comma separated list of numeric partition ids, but "
                f"received: {partitions}"
            ) from None
    return [PartitionRule(_topic_regex(topic if topic is not None else ".*"), only=ids)]


def parse_time(text: str) -> int:
    """Kafka's ``parseOffsetSpec``: the ListOffsets timestamp of ``--time`` (-1 latest,
    -2 earliest, -3 max-timestamp, else a timestamp in ms)."""
    named = {"latest": -1, "earliest": -2, "max-timestamp": -3}
    if text in named:
        return named[text]
    if text in ("earliest-local", "latest-tiered"):
        raise ToolError(f"--time {text} (tiered storage) is not supported by franz get-offsets")
    try:
        timestamp = int(text)
    except ValueError:
        raise ToolError(f"Malformed time argument {text}. Please use {_TIME_HELP}") from None
    if timestamp in (-4, -5):
        raise ToolError(
            f"--time {timestamp} (tiered storage) is not supported by franz get-offsets"
        )
    return timestamp


def offset_spec(timestamp: int) -> Any:
    """confluent-kafka's ``OffsetSpec`` for a ListOffsets timestamp."""
    if timestamp == -1:
        return OffsetSpec.latest()  # type: ignore[no-untyped-call]
    if timestamp == -2:
        return OffsetSpec.earliest()  # type: ignore[no-untyped-call]
    if timestamp == -3:
        return OffsetSpec.max_timestamp()  # type: ignore[no-untyped-call]
    return OffsetSpec.for_timestamp(timestamp)


def run(args: argparse.Namespace) -> int:
    rules = parse_rules(args.topic_partitions, args.topic, args.partitions)
    spec = offset_spec(parse_time(args.time))
    admin = make_admin(args, {"client.id": "GetOffsetShell"})
    cluster = read_cluster(admin, args)
    selected = [
        (topic, partition)
        for topic in cluster.topics(include_internal=not args.exclude_internal_topics)
        for partition in cluster.partitions[topic]
        if any(rule.allowed(topic, partition) for rule in rules)
    ]
    if not selected:
        raise ToolError("Could not match any topic-partitions with the specified filters")
    futures = admin.list_offsets(
        {TopicPartition(t, p): spec for t, p in selected},
        request_timeout=args.timeout_ms / 1000,
    )
    by_key = {(tp.topic, tp.partition): f for tp, f in futures.items()}
    lines: dict[str, str] = {}
    for topic, partition in selected:
        name = tp_name(topic, partition)
        try:
            info = wait(by_key[(topic, partition)], args)
        except KafkaException as exc:
            print(
                f"Skip getting offsets for topic-partition {name} due to error: "
                f"{kafka_error_text(exc)}",
                file=sys.stderr,
            )
            continue
        if info.offset != -1:  # ListOffsetsResponse.UNKNOWN_OFFSET: no such offset
            lines[name] = f"{topic}:{partition}:{info.offset}"
    for name in sorted(lines):
        print(lines[name])
    return 0
