"""Elect partition leaders (Kafka's ``kafka-leader-election.sh``, ``LeaderElectionCommand``).

    franz leader-election --bootstrap-server HOST:PORT --election-type PREFERRED|UNCLEAN
        (--topic TOPIC --partition N | --all-topic-partitions | --path-to-json-file FILE)
        [--command-config FILE] [--timeout MS]

PREFERRED moves leadership back to the first replica of each partition where it is not the
leader; UNCLEAN elects a leader outside the ISR for partitions that have none. The JSON file
lists partitions: ``{"partitions": [{"topic": "foo", "partition": 1}]}``. Output as Kafka
3.9, partitions in its ``HashSet`` order (``java_hash_set_order``)::

    Successfully completed leader election (PREFERRED) for partitions t-0, t-1
    Valid replica already elected for partitions t-2
    Error completing leader election (PREFERRED) for partition: t-3: <error>

and exit 1 when any partition failed ("N replica(s) could not be elected").

Uses the ElectLeaders API (43, KIP-460) through librdkafka. A broker that does not offer it
in its ApiVersions is reported in one line as UNSUPPORTED_VERSION and exit 1; nothing is
elected. A single Franz broker answers "Valid replica already elected" for every partition:
each is led by its only, preferred, replica.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition

from franz.admin.client import (
    is_unreachable,
    java_error_text,
    java_hash_set_order,
    kafka_error_of,
    kafka_error_text,
    make_admin,
    tp_name,
    unreachable,
)
from franz.admin.options import ToolError, add_connection_options

__all__ = ["add_arguments", "parse_election_json", "result_lines", "run"]

#: Kafka's ELECTION_NOT_NEEDED: the preferred (or an ISR) replica already leads.
ELECTION_NOT_NEEDED = 84


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser)
    parser.add_argument(
        "--election-type",
        required=True,
        type=str.upper,
        choices=["PREFERRED", "UNCLEAN"],
        help="PREFERRED: elect the preferred replica where it does not lead; UNCLEAN: elect "
        "any replica where no leader exists (REQUIRED)",
    )
    parser.add_argument("--topic", help="the topic of the election (with --partition)")
    parser.add_argument(
        "--partition", type=int, help="the partition of the election (REQUIRED with --topic)"
    )
    parser.add_argument(
        "--all-topic-partitions",
        action="store_true",
        help="elect on every eligible partition of the cluster",
    )
    parser.add_argument(
        "--path-to-json-file",
        metavar="FILE",
        help='the partitions: {"partitions": [{"topic": "foo", "partition": 1}]}',
    )
    parser.set_defaults(_parser=parser)


def parse_election_json(text: str) -> list[tuple[str, int]]:
    """Kafka's ``parseReplicaElectionData``: the partitions, duplicates refused."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise ToolError("Replica election data is empty") from None  # Kafka: parse -> None
    if not isinstance(data, dict) or "partitions" not in data:
        raise ToolError('Replica election data is missing "partitions" field')
    parts: list[tuple[str, int]] = []
    for entry in data["partitions"]:
        if not isinstance(entry, dict) or "topic" not in entry or "partition" not in entry:
            raise ToolError(f"a partition needs topic and partition: {json.dumps(entry)}")
        parts.append((str(entry["topic"]), int(entry["partition"])))
    dups = sorted({p for p in parts if parts.count(p) > 1})
    if dups:
        raise ToolError(
            "Replica election data contains duplicate partitions: "
            f"[{', '.join(tp_name(*p) for p in dups)}]"
        )
    return sorted(set(parts))


def result_lines(
    election: str, results: dict[tuple[str, int], KafkaError | None]
) -> tuple[list[str], int]:
    """Kafka's output lines for an ElectLeaders result, and the number of failures."""
    # Kafka collects them in HashSets (a HashMap for the failures) in the order of its
    # result map, itself a HashMap: the input order matters only within a bucket.
    ordered = java_hash_set_order(java_hash_set_order(sorted(results)))
    codes = {k: None if e is None else e.code() for k, e in results.items()}
    succeeded = [k for k in ordered if codes[k] is None]
    noop = [k for k in ordered if codes[k] == ELECTION_NOT_NEEDED]
    failed = [k for k in ordered if codes[k] not in (None, ELECTION_NOT_NEEDED)]
    lines = []
    if succeeded:
        names = ", ".join(tp_name(*k) for k in succeeded)
        lines.append(f"Successfully completed leader election ({election}) for partitions {names}")
    if noop:
        names = ", ".join(tp_name(*k) for k in noop)
        lines.append(f"Valid replica already elected for partitions {names}")
    for key in failed:
        error = results[key]
        text = java_error_text(KafkaException(error))
        lines.append(
            f"Error completing leader election ({election}) for partition: {tp_name(*key)}: {text}"
        )
    return lines, len(failed)


def _partitions(args: argparse.Namespace) -> list[tuple[str, int]] | None:
    parser: argparse.ArgumentParser = args._parser
    chosen = [
        name
        for name, given in (
            ("topic", args.topic is not None),
            ("all-topic-partitions", args.all_topic_partitions),
            ("path-to-json-file", args.path_to_json_file is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        parser.error(
            "One and only one of the following options is required: topic, "
            "all-topic-partitions, path-to-json-file"
        )
    if args.topic is not None and args.partition is None:
        parser.error("Missing required option(s): partition")
    if args.topic is None and args.partition is not None:
        parser.error("Option partition is only allowed if topic is used")
    if args.topic is not None:
        return [(args.topic, args.partition)]
    if args.path_to_json_file is not None:
        try:
            text = Path(args.path_to_json_file).read_text()
        except OSError as exc:
            raise ToolError(
                f"cannot read --path-to-json-file {args.path_to_json_file}: {exc.strerror or exc}"
            ) from None
        return parse_election_json(text)
    return None


def run(args: argparse.Namespace) -> int:
    partitions = _partitions(args)
    election = ElectionType.PREFERRED if args.election_type == "PREFERRED" else ElectionType.UNCLEAN
    admin = make_admin(
        args,
        {"socket.timeout.ms": max(10, args.timeout_ms)},
    )
    # confluent-kafka 2.x's elect_leaders rejects request_timeout (a binding bug): the wait
    # is bounded here instead.
    future = admin.elect_leaders(
        election, None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
    )
    try:
        raw: Any = future.result(timeout=args.timeout_ms / 1000)
    except TimeoutError:
        raise unreachable(args) from None
    except KafkaException as exc:
        err = kafka_error_of(exc)
        if err is not None and err.code() == KafkaError._UNSUPPORTED_FEATURE:
            raise ToolError(
                f"the broker at {args.bootstrap_server} does not support ElectLeaders (API 43): "
                "UNSUPPORTED_VERSION (its ApiVersions response does not list the API); "
                "no leader was elected"
            ) from None
        if is_unreachable(exc):
            raise unreachable(args) from None
        raise ToolError(f"leader election failed: {kafka_error_text(exc)}") from None
    # Per partition, confluent-kafka gives a KafkaError (or None on success); a KafkaException
    # wrapping one is accepted too.
    results = {
        (tp.topic, tp.partition): error
        if isinstance(error, KafkaError) or error is None
        else kafka_error_of(error)
        for tp, error in raw.items()
    }
    lines, failures = result_lines(args.election_type, results)
    for line in lines:
        print(line)
    if failures:
        print(f"{failures} replica(s) could not be elected", file=sys.stderr)
        return 1
    return 0
