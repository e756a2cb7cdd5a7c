"""Measure producer throughput and latency (Kafka's ``kafka-producer-perf-test.sh``).

    franz producer-perf-test --topic TOPIC --num-records N
        (--record-size BYTES | --payload-file FILE [--payload-delimiter D] | --payload-monotonic)
        --throughput RECORDS_PER_SEC (-1: unthrottled)
        (--producer-props bootstrap.servers=HOST:PORT [k=v ...] | --producer.config FILE |
         --bootstrap-server HOST:PORT) [--print-metrics] [--timeout MS]
        [--transaction-duration-ms MS [--transactional-id ID]]

Sends N records with null keys to TOPIC as fast as allowed (Kafka's ThroughputThrottler
when --throughput is positive) and prints, every 5 s and at the end, Kafka's lines:

    N records sent, X records/sec (Y MB/sec), Z ms avg latency, W ms max latency.
    N records sent, X records/sec (Y MB/sec), Z ms avg latency, W ms max latency,
    a ms 50th, b ms 95th, c ms 99th, d ms 99.9th.

(the final line is one line). Latency is from produce() to the delivery report, whole ms,
as librdkafka measures it (``Message.latency()``). --record-size sends one buffer of random
letters A-Z allocated once (Kafka refills it per record; with compression this matters);
--payload-file picks a random line (split on --payload-delimiter, default newline; empty
pieces skipped) per record; --payload-monotonic sends 0, 1, 2, ... as text.

The client is librdkafka (confluent-kafka): --producer-props and --producer.config take
librdkafka keys; the Java client's names librdkafka shares work (acks, linger.ms,
batch.size, compression.type, client.id, ...), Java-only ones (key.serializer,
buffer.memory, max.block.ms, ...) are dropped with a note on stderr. Defaults are
librdkafka's (acks=all, linger.ms=5), client.id perf-producer-client. --command-config and
--command-property are accepted as the newer names of --producer.config/--producer-props.
--print-metrics prints librdkafka's statistics as Kafka's metrics table.

Franz extensions: --timeout MS (default 30000) bounds the first metadata request, so an
unreachable cluster or a topic that does not exist (and is not auto-created) fails at once
with one line. Records whose delivery failed are not counted (as Kafka); the first errors
are printed on stderr and the exit code is 1.

Transactions are Kafka 3.9's rules (KIP-98; the 3.9 tool, not the later one that enables
them from a transactional id alone): they are on when --transaction-duration-ms is positive
(default 0: off), with transactional.id set to --transactional-id (default
``performance-producer-default-transactional-id``; it overrides a transactional.id from
--producer-props or --producer.config). The producer then runs ``init_transactions()``
before the first record, ``begin_transaction()`` before a transaction's first record, and
``commit_transaction()`` after the record whose send time is at least the duration after the
transaction began, and once more at the end for a partly filled transaction. The output lines
are unchanged (latency still runs from produce() to the delivery report, which the commit's
flush waits for). A transactional.id with transactions off is refused with exit code 1:
Kafka's producer fails the first send then ("Cannot add partition ... before completing a
call to initTransactions"). init_transactions and commit_transaction block up to
TRANSACTION_BLOCK_MS (Kafka's max.block.ms default); a failure is one error line, exit 1.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from franz.admin.options import ToolError, parse_key_values, properties_file
from franz.admin.perf import (
    REPORTING_INTERVAL_MS,
    ProducerStats,
    ThroughputThrottler,
    add_timeout_option,
    client_observers,
    drop_java_only_config,
    flatten_librdkafka_stats,
    format_metrics,
    require_topic,
)

__all__ = ["add_arguments", "run"]

#: failed deliveries printed on stderr before the rest are only counted
MAX_PRINTED_FAILURES = 5
#: ProducerPerformance's default ``--transactional-id`` (Kafka 3.9)
DEFAULT_TRANSACTIONAL_ID = "performance-producer-default-transactional-id"
#: how long init_transactions / commit_transaction may block: the Java producer's
#: ``max.block.ms`` default, which bounds ``initTransactions`` / ``commitTransaction``
TRANSACTION_BLOCK_MS = 60_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topic", required=True, metavar="TOPIC", help="produce to this topic")
    parser.add_argument(
        "--num-records",
        required=True,
        type=int,
        metavar="NUM-RECORDS",
        help="number of records to produce",
    )
    payload = parser.add_mutually_exclusive_group(required=True)
    payload.add_argument(
        "--record-size", type=int, metavar="RECORD-SIZE", help="record size in bytes"
    )
    payload.add_argument(
        "--payload-file",
        metavar="PAYLOAD-FILE",
        help="UTF-8 file whose pieces (split on --payload-delimiter) are sent at random",
    )
    payload.add_argument(
        "--payload-monotonic",
        action="store_true",
        help="payloads are 0, 1, 2, ... as text",
    )
    parser.add_argument(
        "--payload-delimiter",
        default="\\n",
        metavar="PAYLOAD-DELIMITER",
        help="delimiter of --payload-file (default: \\n)",
    )
    parser.add_argument(
        "--throughput",
        required=True,
        type=float,
        metavar="THROUGHPUT",
        help="throttle to about THROUGHPUT records/sec; -1 disables throttling",
    )
    parser.add_argument(
        "--producer-props",
        "--command-property",
        nargs="+",
        action="extend",
        dest="producer_props",
        metavar="PROP-NAME=PROP-VALUE",
        help="producer configs (bootstrap.servers, acks, linger.ms, ...); override the file's",
    )
    parser.add_argument(
        "--producer.config",
        "--command-config",
        dest="producer_config",
        metavar="CONFIG-FILE",
        help="producer config properties file",
    )
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST:PORT",
        help="the broker(s) to connect to (instead of --producer-props bootstrap.servers=)",
    )
    parser.add_argument(
        "--print-metrics", action="store_true", help="print the client's metrics at the end"
    )
    parser.add_argument(
        "--transactional-id",
        default=DEFAULT_TRANSACTIONAL_ID,
        metavar="TRANSACTIONAL-ID",
        help="the transactional.id to use if --transaction-duration-ms is > 0 "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--transaction-duration-ms",
        type=int,
        default=0,
        metavar="TRANSACTION-DURATION",
        help="the max age of each transaction: commit_transaction is called after this time "
        "has elapsed; transactions are only enabled if this value is positive (default: 0)",
    )
    add_timeout_option(parser)
    parser.set_defaults(parser=parser)  # run() reports bad values as argparse errors (exit 2)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def producer_config(args: argparse.Namespace) -> dict[str, Any]:
    """The librdkafka config: the file, then --producer-props, then --bootstrap-server;
    client.id defaults to perf-producer-client; Java-only keys dropped with a note."""
    config: dict[str, Any] = properties_file(args.producer_config, "--producer.config")
    config.update(parse_key_values(args.producer_props, "--producer-props"))
    if args.bootstrap_server:
        config["bootstrap.servers"] = args.bootstrap_server
    if not config.get("bootstrap.servers"):
        args.parser.error(
            "no bootstrap servers: give --bootstrap-server HOST:PORT or "
            "--producer-props bootstrap.servers=HOST:PORT"
        )
    apply_transactions(config, args.transactional_id, args.transaction_duration_ms)
    config.setdefault("client.id", "perf-producer-client")
    return drop_java_only_config(config, "producer-perf-test")


def apply_transactions(config: dict[str, Any], transactional_id: str, duration_ms: int) -> bool:
    """Kafka 3.9's ProducerPerformance rule: transactions are on iff ``duration_ms > 0``,
    and then ``transactional.id`` is ``transactional_id`` (over any in ``config``). Returns
    whether they are on. A ``transactional.id`` in ``config`` with transactions off raises
    ``ToolError``: the producer could not send (Kafka's fails its first send)."""
    if duration_ms > 0:
        config["transactional.id"] = transactional_id
        return True
    if "transactional.id" in config:
        raise ToolError(
            f"transactional.id={config['transactional.id']} is set but transactions are off "
            f"(--transaction-duration-ms {duration_ms} is not positive), and a transactional "
            "producer cannot send outside a transaction; give --transaction-duration-ms MS "
            "or drop transactional.id"
        )
    return False


def _payload_source(args: argparse.Namespace) -> tuple[bytes | None, Callable[[int], bytes]]:
    """``(fixed payload or None, payload of record i)``."""
    rnd = random.Random(0)
    if args.record_size is not None:
        fixed = bytes(rnd.randrange(26) + 65 for _ in range(args.record_size))
        return fixed, lambda i: fixed
    if args.payload_monotonic:
        return None, lambda i: str(i).encode()
    path = Path(args.payload_file)
    print(f"Reading payloads from: {path.resolve()}")
    if not path.is_file() or path.stat().st_size == 0:
        raise ToolError(f"--payload-file {path}: file does not exist or is empty")
    delimiter = "\n" if args.payload_delimiter == "\\n" else args.payload_delimiter
    text = path.read_text(encoding="utf-8")
    pieces = [p.encode() for p in text.split(delimiter) if p]
    print(f"Number of messages read: {len(pieces)}")
    if not pieces:
        raise ToolError(f"--payload-file {path}: no payload between the delimiters")
    choose = rnd.randrange
    count = len(pieces)
    return None, lambda i: pieces[choose(count)]


def _error_text(exc: BaseException) -> str:
    error = exc.args[0] if exc.args else exc
    return str(error.str() if hasattr(error, "str") else error)


def _transaction_step(step: Callable[[float], object], what: str) -> None:
    """``step(TRANSACTION_BLOCK_MS in s)``; a librdkafka error becomes one ToolError line."""
    from confluent_kafka import KafkaException

    try:
        step(TRANSACTION_BLOCK_MS / 1000.0)
    except KafkaException as exc:
        raise ToolError(f"{what} failed: {_error_text(exc)}") from None


def run(args: argparse.Namespace) -> int:
    from confluent_kafka import KafkaException, Producer

    if args.num_records <= 0:
        args.parser.error("--num-records should be greater than zero")
    if args.record_size is not None and args.record_size <= 0:
        args.parser.error("--record-size should be greater than zero")
    if args.throughput == 0:
        args.parser.error("--throughput 0 would never send; give a rate, or -1 for no limit")
    config = producer_config(args)
    logger, stats_json = client_observers(config, print_metrics=args.print_metrics)
    fixed, payload_of = _payload_source(args)
    try:
        producer = Producer(config)
    except KafkaException as exc:  # librdkafka refuses the config (acks=1 with transactions)
        raise ToolError(f"invalid producer config: {_error_text(exc)}") from None
    try:
        require_topic(
            producer,
            str(config["bootstrap.servers"]),
            args.topic,
            args.timeout_ms,
            hint=" (and the cluster does not create it); create it with franz topics --create",
        )
        if "transactional.id" in config:
            _transaction_step(
                producer.init_transactions,
                f"init_transactions (transactional.id {config['transactional.id']})",
            )
        return _produce(producer, args, fixed, payload_of, stats_json)
    except BaseException:
        logger.disabled = True
        raise


def _produce(
    producer: Any,
    args: argparse.Namespace,
    fixed: bytes | None,
    payload_of: Callable[[int], bytes],
    stats_json: list[str],
) -> int:

    pending: list[float] = []  # delivery latencies (s), folded into stats in C-speed steps
    sizes: list[int] = []
    failures: list[str] = []
    failed = 0

    def on_failure(err: Any) -> None:
        nonlocal failed
        failed += 1
        if len(failures) < MAX_PRINTED_FAILURES:
            failures.append(str(err.str() if hasattr(err, "str") else err))
            print(f"franz producer-perf-test: delivery failed: {failures[-1]}", file=sys.stderr)

    append_latency = pending.append
    append_size = sizes.append
    if fixed is not None:

        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                append_latency(msg.latency())
            else:
                on_failure(err)

    else:

        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                append_latency(msg.latency())
                append_size(len(msg))
            else:
                on_failure(err)

    record_size = len(fixed) if fixed is not None else 0
    stats = ProducerStats(args.num_records, _now_ms())

    def fold() -> None:
        if not pending:
            return
        latencies = [int(s * 1000.0) for s in pending]
        nbytes = len(latencies) * record_size if fixed is not None else sum(sizes)
        pending.clear()
        sizes.clear()
        stats.record_many(latencies, nbytes)

    def maybe_window(now: int) -> None:
        if now - stats.window_start_ms >= REPORTING_INTERVAL_MS:
            fold()
            if stats.window_count:
                print(stats.window_line(now), flush=True)

    poll = producer.poll
    produce = producer.produce
    topic = args.topic
    throttler = ThroughputThrottler(args.throughput, stats.start_ms, sleep=poll)
    throttled = args.throughput > 0
    transactional = args.transaction_duration_ms > 0
    duration_ms = args.transaction_duration_ms
    transaction_size = 0  # Kafka's currentTransactionSize
    transaction_start = 0
    timed = throttled or transactional
    for i in range(args.num_records):
        value = fixed if fixed is not None else payload_of(i)
        if transactional and transaction_size == 0:
            _transaction_step(lambda _timeout: producer.begin_transaction(), "begin_transaction")
            transaction_start = _now_ms()
        send_start = _now_ms() if timed else 0
        while True:
            try:
                produce(topic, value, on_delivery=on_delivery)
                break
            except BufferError:  # local queue full: serve delivery reports, then retry
                poll(0.05)
        poll(0)
        transaction_size += 1
        if transactional and duration_ms <= send_start - transaction_start:
            _transaction_step(producer.commit_transaction, "commit_transaction")
            transaction_size = 0
        if throttled:
            if throttler.should_throttle(i, send_start):
                throttler.throttle()
            maybe_window(send_start)
        elif i & 1023 == 0:
            maybe_window(_now_ms())
    if transactional and transaction_size != 0:
        _transaction_step(producer.commit_transaction, "commit_transaction")
    while len(producer) > 0:
        poll(0.1)
        maybe_window(_now_ms())
    poll(0)
    fold()
    end = _now_ms()
    if args.print_metrics:
        _await_stats(producer, stats_json)
    print(stats.total_line(end), flush=True)
    if args.print_metrics and stats_json:
        for line in format_metrics(flatten_librdkafka_stats(json.loads(stats_json[-1]))):
            print(line)
    if failed:
        print(
            f"franz producer-perf-test: error: {failed} of {args.num_records} records were "
            f"not delivered (first: {failures[0]})",
            file=sys.stderr,
        )
        return 1
    return 0


def _await_stats(client: Any, stats_json: list[str], timeout_s: float = 3.0) -> None:
    """Serve the client until a statistics event newer than now has arrived (bounded)."""
    seen = len(stats_json)
    deadline = time.monotonic() + timeout_s
    while len(stats_json) == seen and time.monotonic() < deadline:
        client.poll(0.1)
