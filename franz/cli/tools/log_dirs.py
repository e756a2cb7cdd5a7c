"""Describe the brokers' log directories (Kafka's ``kafka-log-dirs.sh``, ``LogDirsCommand``).

    franz log-dirs --bootstrap-server HOST:PORT --describe [--broker-list 0,1,2]
                   [--topic-list t1,t2] [--command-config FILE] [--timeout MS]

Asks every broker of ``--broker-list`` (all live brokers by default) for its log dirs
(DescribeLogDirs, API 35, all partitions; Franz sends it itself, librdkafka has no such
call) and prints, as Kafka 3.9::

    Querying brokers for log directories information
    Received log directory information from brokers 1,2,3
    {"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"t-0","size":1024,"offsetLag":0,"isFuture":false}],"error":null,"logDir":"/data/1"}]}],"version":1}

``size`` is the partition's bytes in that dir, ``offsetLag`` how far a future replica (a
log-dir move, ``isFuture``) is behind the current one, ``error`` the Java exception class of
a failed dir (``org.apache.kafka.common.errors.KafkaStorageException``) or null.
``--topic-list`` keeps only those topics' partitions. Brokers, log dirs, partitions and
JSON keys come in the order Kafka's ``HashMap``s and ``HashSet``s give them
(``franz.admin.java_order``), so the output is Kafka's byte for byte.

A ``--broker-list`` naming brokers the cluster does not have prints Kafka's
"ERROR: The given brokers do not exist from --broker-list: 5. Current existent brokers:
1,2,3" on stderr, exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any, Final

from franz.admin.client import java_exception_class, tp_name
from franz.admin.cluster_wire import ClusterClient, LogDirInfo, cluster_client
from franz.admin.java_order import (
    collection_capacity,
    hash_order,
    int_hash,
    string_hash,
    topic_partition_hash,
)
from franz.admin.options import ToolError, add_connection_options
from franz.errors import ErrorCode

__all__ = ["add_arguments", "format_log_dirs", "run"]

CLIENT_ID: Final = "log-dirs-tool"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser)
    parser.add_argument(
        "--describe",
        action="store_true",
        help="describe the log directories of the brokers (REQUIRED)",
    )
    parser.add_argument(
        "--broker-list",
        default="",
        metavar="0,1,2",
        help="the brokers to query (default: every broker of the cluster)",
    )
    parser.add_argument(
        "--topic-list",
        default="",
        metavar="t1,t2",
        help="the topics whose partitions to show (default: all)",
    )


def _split(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def _int_set_text(ids: Iterable[int]) -> str:
    return ",".join(map(str, ids))


def _keys_in_order(keys: list[str]) -> list[str]:
    """A Jackson-written ``HashMap<String, Object>``'s keys (default capacity)."""
    return hash_order(keys, string_hash)


def _partitions(info: LogDirInfo, topics: set[str]) -> list[dict[str, Any]]:
    """The dir's replicas: the client's ``HashMap<TopicPartition, ReplicaInfo>`` filtered
    into another ``HashMap`` (``Collectors.toMap``)."""
    replicas = dict(info.replicas)
    order = hash_order(list(replicas), topic_partition_hash)
    kept = hash_order([tp for tp in order if not topics or tp[0] in topics], topic_partition_hash)
    keys = _keys_in_order(["partition", "size", "offsetLag", "isFuture"])
    out = []
    for tp in kept:
        replica = replicas[tp]
        values = {
            "partition": tp_name(*tp),
            "size": replica.size,
            "offsetLag": replica.offset_lag,
            "isFuture": replica.is_future,
        }
        out.append({key: values[key] for key in keys})
    return out


def format_log_dirs(
    by_broker: dict[int, dict[str, LogDirInfo]], brokers: list[int], topics: set[str]
) -> str:
    """Kafka's ``formatAsJson``: ``brokers`` is the order the admin client's result map
    iterates in."""
    dir_keys = _keys_in_order(["logDir", "error", "partitions"])
    broker_keys = _keys_in_order(["broker", "logDirs"])
    broker_entries = []
    for broker in brokers:
        dirs = by_broker[broker]
        log_dirs = []
        # logDirDescriptions: new HashMap<>(results.size()) in the broker's order
        for log_dir in hash_order(list(dirs), string_hash, initial_capacity=len(dirs)):
            info = dirs[log_dir]
            values: dict[str, Any] = {
                "logDir": log_dir,
                "error": None
                if info.error == ErrorCode.NONE
                else java_exception_class(info.error),
                "partitions": _partitions(info, topics),
            }
            log_dirs.append({key: values[key] for key in dir_keys})
        entry: dict[str, Any] = {"broker": broker, "logDirs": log_dirs}
        broker_entries.append({key: entry[key] for key in broker_keys})
    top: dict[str, Any] = {"version": 1, "brokers": broker_entries}
    ordered = {key: top[key] for key in _keys_in_order(["version", "brokers"])}
    return json.dumps(ordered, separators=(",", ":"), ensure_ascii=False)


def describe(client: ClusterClient, args: argparse.Namespace) -> int:
    topics = set(_split(args.topic_list))
    try:
        requested = [int(b) for b in _split(args.broker_list)]
    except ValueError as exc:
        raise ToolError(f"--broker-list expects comma separated broker ids: {exc}") from None
    cluster = list(client.nodes().brokers)
    cluster_set = hash_order(dict.fromkeys(cluster), int_hash)
    given = hash_order(dict.fromkeys(requested), int_hash)
    source = given if requested else cluster_set
    # new HashSet<>(collection), then retainAll / removeAll: the table keeps its size
    capacity = collection_capacity(len(source))
    existing = [b for b in hash_order(source, int_hash, initial_capacity=capacity) if b in cluster]
    absent = [
        b
        for b in hash_order(given, int_hash, initial_capacity=collection_capacity(len(given)))
        if b not in cluster
    ]
    if absent:
        print(
            "ERROR: The given brokers do not exist from --broker-list: "
            f"{_int_set_text(absent)}. Current existent brokers: {_int_set_text(cluster_set)}",
            file=sys.stderr,
        )
        return 1
    print("Querying brokers for log directories information", flush=True)
    by_broker = {broker: client.describe_log_dirs(broker) for broker in existing}
    # describeLogDirs: futures in a HashMap(n); allDescriptions copies them into another
    futures = hash_order(existing, int_hash, initial_capacity=len(existing))
    order = hash_order(futures, int_hash, initial_capacity=len(existing))
    print(f"Received log directory information from brokers {_int_set_text(existing)}")
    print(format_log_dirs(by_broker, order, topics))
    return 0


def run(args: argparse.Namespace) -> int:
    if not args.describe:
        raise ToolError('Missing required argument "[describe]"')
    return describe(cluster_client(args, CLIENT_ID), args)
