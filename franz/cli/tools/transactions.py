"""Analyze producers' transactional state and repair hanging transactions (Kafka's
``kafka-transactions.sh``, ``org.apache.kafka.tools.TransactionsCommand``, KIP-664).

    franz transactions --bootstrap-server HOST:PORT [--command-config FILE] COMMAND ...

    list [--duration-filter MS]                  ListTransactions on every broker
    describe --transactional-id ID               FindCoordinator + DescribeTransactions
    describe-producers --topic T --partition P [--broker-id B]
                                                 DescribeProducers (leader, or broker B)
    abort --topic T --partition P --start-offset O
    abort --topic T --partition P --producer-id I --producer-epoch E --coordinator-epoch C
                                                 an ABORT marker (WriteTxnMarkers)
    find-hanging (--broker-id B | --topic T [--partition P]) [--max-transaction-timeout MIN]

Output is Kafka 3.9's: a table (``ToolsUtils.prettyPrintTable``) whose every cell, header
included, is padded with spaces to its column's width and followed by a tab::

    TransactionalId	Coordinator	ProducerId	TransactionState
    my-txn         	0          	4000      	Ongoing

``describe``'s columns are CoordinatorId, TransactionalId, ProducerId, ProducerEpoch,
TransactionState, TransactionTimeoutMs, CurrentTransactionStartTimeMs,
TransactionDurationMs (now minus the start; ``None`` with no transaction running) and
TopicPartitions (``topic-partition`` joined by commas, in the order of Kafka's
``HashSet``). ``describe-producers``: ProducerId, ProducerEpoch, LatestCoordinatorEpoch (-1
unknown), LastSequence, LastTimestamp, CurrentTransactionStartOffset (``None``).
``find-hanging`` lists the open transactions whose producer last wrote more than
``--max-transaction-timeout`` minutes ago (15) and whose partition the coordinator does not
know as part of the producer's transaction (or whose transactional id is gone): Topic,
Partition, ProducerId, ProducerEpoch, CoordinatorEpoch, StartOffset, LastTimestamp,
Duration(min). ``abort --start-offset`` finds the producer whose transaction starts there
(DescribeProducers) and aborts with its epochs (coordinator epoch 0 when unknown); it prints
nothing on success.

Failures print Kafka's ``<what failed>: <cause>. Enable debug logging for additional
detail.`` on stderr and exit 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Final

from franz.admin.cluster_wire import cluster_client
from franz.admin.java_order import (
    collection_capacity,
    hash_order,
    string_hash,
    topic_partition_hash,
)
from franz.admin.txn_wire import (
    AbortSpec,
    AdminCallError,
    ProducerState,
    TransactionsClient,
)

__all__ = [
    "DESCRIBE_HEADERS",
    "FIND_HANGING_HEADERS",
    "LIST_HEADERS",
    "PRODUCERS_HEADERS",
    "add_arguments",
    "describe_rows",
    "long_hash",
    "pretty_print_table",
    "producer_rows",
    "run",
]

CLIENT_ID: Final = "transactions-tool"
#: The admin client's ``default.api.timeout.ms``: how long a call may retry.
DEFAULT_API_TIMEOUT_MS: Final = 60_000
#: ``FindHangingTransactionsCommand.MAX_BATCH_SIZE``.
MAX_BATCH_SIZE: Final = 500
DEBUG_HINT: Final = " Enable debug logging for additional detail."

LIST_HEADERS: Final = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS: Final = (
    "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
    "TopicPartitions",
)  # fmt: skip
PRODUCERS_HEADERS: Final = (
    "ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
    "CurrentTransactionStartOffset",
)  # fmt: skip
FIND_HANGING_HEADERS: Final = (
    "Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
    "LastTimestamp", "Duration(min)",
)  # fmt: skip


class _Exit(Exception):
    """``printErrorAndExit``: the message goes to stderr, the tool exits 1."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server",
        required=True,
        metavar="host:port",
        help="hostname and port for the broker to connect to, in the form `host:port` "
        "(multiple comma-separated entries can be given)",
    )
    parser.add_argument(
        "--command-config",
        metavar="FILE",
        help="property file containing configs to be passed to admin client",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    listing = commands.add_parser("list", help="list transactions")
    listing.add_argument(
        "--duration-filter",
        type=int,
        help="Duration (in millis) to filter by: if < 0, all transactions will be returned; "
        "otherwise, only transactions running longer than this duration will be returned",
    )
    describe = commands.add_parser(
        "describe", help="describe the state of an active transactional-id"
    )
    describe.add_argument("--transactional-id", required=True, help="transactional id")
    producers = commands.add_parser(
        "describe-producers", help="describe the states of active producers for a topic partition"
    )
    producers.add_argument(
        "--broker-id",
        type=int,
        help="optional broker id to describe the producer state on a specific replica",
    )
    producers.add_argument("--topic", required=True, help="topic name")
    producers.add_argument("--partition", type=int, required=True, help="partition number")
    abort = commands.add_parser(
        "abort", help="abort a hanging transaction (requires administrative privileges)"
    )
    abort.add_argument("--topic", required=True, help="topic name")
    abort.add_argument("--partition", type=int, required=True, help="partition number")
    newer = abort.add_argument_group(
        "Brokers on versions 3.0 and above",
        "For newer brokers, only the start offset of the transaction to be aborted is required",
    )
    newer.add_argument("--start-offset", type=int, help="start offset of the transaction to abort")
    older = abort.add_argument_group(
        "Brokers on versions older than 3.0",
        "For older brokers, you must provide all of these arguments",
    )
    older.add_argument("--producer-id", type=int, help="producer id")
    older.add_argument("--producer-epoch", type=int, help="producer epoch")
    older.add_argument("--coordinator-epoch", type=int, help="coordinator epoch")
    hanging = commands.add_parser("find-hanging", help="find hanging transactions")
    hanging.add_argument(
        "--broker-id", type=int, help="broker id to search for hanging transactions"
    )
    hanging.add_argument(
        "--max-transaction-timeout",
        type=int,
        default=15,
        help="maximum transaction timeout in minutes to limit the scope of the search "
        "(15 minutes by default)",
    )
    hanging.add_argument(
        "--topic", help="topic name to limit search to (required if --partition is specified)"
    )
    hanging.add_argument("--partition", type=int, help="partition number")


# -- pure formatting ---------------------------------------------------------------------


def pretty_print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """``ToolsUtils.prettyPrintTable``: each cell left-justified to its column's widest value
    (header included) and followed by a tab; the header line first."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]
    return ["".join(f"{cell.ljust(w)}\t" for cell, w in zip(r, widths, strict=True))
            for r in (headers, *rows)]  # fmt: skip


def long_hash(value: int) -> int:
    """``Long.hashCode``: ``(int) (value ^ (value >>> 32))``."""
    value &= 0xFFFFFFFFFFFFFFFF
    h = (value ^ (value >> 32)) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _optional(value: int) -> str:
    return "None" if value < 0 else str(value)


def producer_rows(producers: Sequence[ProducerState]) -> list[list[str]]:
    """``describe-producers``' rows, in the broker's order."""
    return [
        [
            str(p.producer_id),
            str(p.producer_epoch),
            str(p.coordinator_epoch if p.coordinator_epoch >= 0 else -1),
            str(p.last_sequence),
            str(p.last_timestamp),
            _optional(p.txn_start_offset),
        ]
        for p in producers
    ]


def describe_rows(
    transactional_id: str,
    coordinator_id: int,
    producer_id: int,
    producer_epoch: int,
    state: str,
    timeout_ms: int,
    start_time_ms: int,
    partitions: Sequence[tuple[str, int]],
    now_ms: int,
) -> list[list[str]]:
    """``describe``'s one row (``TopicPartitions`` in ``HashSet<TopicPartition>`` order)."""
    ordered = hash_order(dict.fromkeys(partitions), topic_partition_hash)
    return [
        [
            str(coordinator_id),
            transactional_id,
            str(producer_id),
            str(producer_epoch),
            state,
            str(timeout_ms),
            _optional(start_time_ms),
            "None" if start_time_ms < 0 else str(now_ms - start_time_ms),
            ",".join(f"{t}-{p}" for t, p in ordered),
        ]
    ]


def _fail(message: str, cause: Exception | None = None) -> _Exit:
    if cause is None:
        return _Exit(message)
    return _Exit(f"{message}: {cause}.{DEBUG_HINT}")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# -- the commands ------------------------------------------------------------------------


def _list(client: TransactionsClient, args: argparse.Namespace) -> list[str]:
    try:
        by_broker = client.list_transactions(duration_filter=args.duration_filter)
    except AdminCallError as exc:
        raise _fail("Failed to list transactions", exc) from exc
    rows = [
        [listing.transactional_id, str(broker), str(listing.producer_id), listing.state]
        for broker in by_broker  # a HashMap<Integer, ...>: small ids iterate ascending
        for listing in by_broker[broker]
    ]
    return pretty_print_table(LIST_HEADERS, rows)


def _describe(client: TransactionsClient, args: argparse.Namespace) -> list[str]:
    tid = args.transactional_id
    try:
        d = client.describe_transaction(tid)
    except AdminCallError as exc:
        raise _fail(
            f"Failed to describe transaction state of transactional-id `{tid}`", exc
        ) from exc
    rows = describe_rows(
        tid, d.coordinator_id, d.producer_id, d.producer_epoch, d.state, d.timeout_ms,
        d.start_time_ms, d.partitions, _now_ms(),
    )  # fmt: skip
    return pretty_print_table(DESCRIBE_HEADERS, rows)


def _describe_producers(client: TransactionsClient, args: argparse.Namespace) -> list[str]:
    partition = (args.topic, args.partition)
    try:
        states = client.describe_producers([partition], args.broker_id)[partition]
    except AdminCallError as exc:
        where = "leader" if args.broker_id is None else f"broker {args.broker_id}"
        raise _fail(
            f"Failed to describe producers for partition {args.topic}-{args.partition} on {where}",
            exc,
        ) from exc
    return pretty_print_table(PRODUCERS_HEADERS, producer_rows(states))


def _abort(client: TransactionsClient, args: argparse.Namespace) -> list[str]:
    partition = (args.topic, args.partition)
    name = f"{args.topic}-{args.partition}"
    if args.start_offset is None and args.producer_id is None:
        raise _Exit(
            "The transaction to abort must be identified either with --start-offset (for "
            "brokers on 3.0 or above) or with --producer-id, --producer-epoch, and "
            "--coordinator-epoch (for older brokers)"
        )
    if args.start_offset is None:
        if args.producer_epoch is None:
            raise _Exit("Missing required argument --producer-epoch")
        if args.coordinator_epoch is None:
            raise _Exit("Missing required argument --coordinator-epoch")
        # -1 (a producer whose transaction hung before its first marker): Kafka uses 0,
        # which is at most any coordinator epoch.
        spec = AbortSpec(
            partition, args.producer_id, args.producer_epoch, max(0, args.coordinator_epoch)
        )
    else:
        try:
            states = client.describe_producers([partition])[partition]
        except AdminCallError as exc:
            raise _fail(f"Failed to validate producer state for partition {name}", exc) from exc
        found = [s for s in states if s.txn_start_offset == args.start_offset]
        if not found:
            raise _Exit(
                f"Could not find any open transactions starting at offset {args.start_offset} "
                f"on partition {name}"
            )
        state = found[0]
        spec = AbortSpec(
            partition, state.producer_id, state.producer_epoch, max(0, state.coordinator_epoch)
        )
    try:
        client.abort_transaction(spec)
    except AdminCallError as exc:
        raise _fail(f"Failed to abort transaction {spec}", exc) from exc
    return []


def _find_hanging(client: TransactionsClient, args: argparse.Namespace) -> list[str]:
    """``FindHangingTransactionsCommand``: candidates are open transactions older than the
    maximum timeout; a candidate hangs when ListTransactions knows no transactional id for
    its producer, DescribeTransactions no longer finds that id, or the id's transaction
    does not include the candidate's partition (then no coordinator will write its marker).
    Rows come in Kafka's order: producers as a ``HashMap<Long, ...>`` iterates them, each
    producer's partitions as ``DescribeProducersResult.all()``'s ``HashMap``."""
    if args.topic is None and args.broker_id is None:
        raise _Exit(
            "The `find-hanging` command requires either --topic or --broker-id to limit the "
            "scope of the search"
        )
    if args.partition is not None and args.topic is None:
        raise _Exit("The --partition argument requires --topic to be provided")
    max_timeout_ms = args.max_transaction_timeout * 60_000
    partitions = _partitions_to_search(client, args)
    candidates: list[tuple[tuple[str, int], ProducerState]] = []
    for start in range(0, len(partitions), MAX_BATCH_SIZE):
        batch = partitions[start : start + MAX_BATCH_SIZE]
        try:
            found = client.describe_producers(batch, args.broker_id)
        except AdminCallError as exc:
            broker = "Optional.empty" if args.broker_id is None else f"Optional[{args.broker_id}]"
            raise _fail(
                f"Failed to describe producers for {len(batch)} partitions on broker {broker}",
                exc,
            ) from exc
        now = _now_ms()
        for tp in _all_order(batch):
            for state in found[tp]:
                if state.txn_start_offset >= 0 and now - state.last_timestamp > max_timeout_ms:
                    candidates.append((tp, state))
    hanging: list[tuple[tuple[str, int], ProducerState]] = []
    if candidates:
        by_producer: dict[int, list[tuple[tuple[str, int], ProducerState]]] = {}
        for tp, state in candidates:
            by_producer.setdefault(state.producer_id, []).append((tp, state))
        try:
            listings = client.list_transactions(producer_ids=by_producer)
        except AdminCallError as exc:
            raise _fail(
                f"Failed to list transactions for {len(by_producer)} producers", exc
            ) from exc
        ids = {
            listing.producer_id: listing.transactional_id
            for per_broker in listings.values()
            for listing in per_broker
            if listing.producer_id in by_producer
        }
        described: dict[str, frozenset[tuple[str, int]] | None] = {}
        for tid in dict.fromkeys(ids.values()):
            try:
                described[tid] = frozenset(client.describe_transaction(tid).partitions)
            except AdminCallError as exc:
                if "could not be found" not in str(exc):
                    raise _fail(
                        f"Failed to describe {len(set(ids.values()))} transactions", exc
                    ) from exc
                described[tid] = None
        for producer_id in hash_order(by_producer, long_hash):
            tid_or_none = ids.get(producer_id)
            in_txn = described.get(tid_or_none) if tid_or_none is not None else None
            hanging += [
                (tp, s) for tp, s in by_producer[producer_id] if in_txn is None or tp not in in_txn
            ]
    now = _now_ms()
    rows = [
        [
            tp[0], str(tp[1]), str(s.producer_id), str(s.producer_epoch),
            str(s.coordinator_epoch if s.coordinator_epoch >= 0 else -1),
            str(s.txn_start_offset), str(s.last_timestamp),
            str((now - s.last_timestamp) // 60_000),
        ]
        for tp, s in hanging
    ]  # fmt: skip
    return pretty_print_table(FIND_HANGING_HEADERS, rows)


def _all_order(partitions: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """The order ``describeProducers(partitions).all()`` iterates its map in: a
    ``new HashSet<>(partitions)`` (``DescribeProducersHandler.newFuture``) collected
    ``toMap`` (``AdminApiFuture.forKeys``, default capacity), copied into a
    ``new HashMap<>(size)``; a bucket keeps the order it was filled in."""
    keys = hash_order(
        dict.fromkeys(partitions), topic_partition_hash,
        initial_capacity=collection_capacity(len(partitions)),
    )  # fmt: skip
    futures = hash_order(keys, topic_partition_hash)
    return hash_order(futures, topic_partition_hash, initial_capacity=max(1, len(futures)))


def _partitions_to_search(
    client: TransactionsClient, args: argparse.Namespace
) -> list[tuple[str, int]]:
    """The partitions of ``--topic`` (or ``--partition`` alone), else of every topic,
    internal ones included (Kafka 3.9 lists them with ``listInternal(true)``); with
    ``--broker-id``, only those with a replica on that broker."""
    if args.topic is not None and args.partition is not None:
        return [(args.topic, args.partition)]
    try:
        topics = (
            [args.topic] if args.topic is not None else client.list_topics(include_internal=True)
        )
    except AdminCallError as exc:
        raise _fail("Failed to list topics", exc) from exc
    topics = hash_order(dict.fromkeys(topics), string_hash)
    out: list[tuple[str, int]] = []
    for start in range(0, len(topics), MAX_BATCH_SIZE):
        batch = topics[start : start + MAX_BATCH_SIZE]
        try:
            described = client.describe_topics(batch)
        except AdminCallError as exc:
            raise _fail(f"Failed to describe {len(batch)} topics", exc) from exc
        for topic in hash_order(described, string_hash, initial_capacity=len(described)):
            out += [
                (topic, partition)
                for partition, replicas in described[topic]
                if args.broker_id is None or args.broker_id in replicas
            ]
    return out


def run(args: argparse.Namespace) -> int:
    args.timeout_ms = DEFAULT_API_TIMEOUT_MS
    client = TransactionsClient(cluster_client(args, CLIENT_ID))
    commands = {
        "list": _list,
        "describe": _describe,
        "describe-producers": _describe_producers,
        "abort": _abort,
        "find-hanging": _find_hanging,
    }
    try:
        lines = commands[args.command](client, args)
    except _Exit as exc:
        print(exc, file=sys.stderr)
        return 1
    for line in lines:
        print(line)
    return 0
