"""Measure consumer throughput (Kafka's ``kafka-consumer-perf-test.sh``).

    franz consumer-perf-test --bootstrap-server HOST:PORT (--topic TOPIC | --include REGEX)
        --messages N [--group GROUP] [--fetch-size BYTES] [--from-latest] [--timeout MS]
        [--show-detailed-stats [--reporting-interval MS]] [--hide-header]
        [--date-format PATTERN] [--consumer.config FILE] [--print-metrics]

Joins GROUP (default perf-consumer-<random>), subscribes to the topic(s), consumes N
records from the committed offsets (from the earliest without any; --from-latest: the
latest) and prints Kafka's header and one CSV line:

    start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec

(the header is one line). Bytes are key plus value bytes; MB is 1024 * 1024 bytes;
rebalance.time.ms is the time until partitions were assigned, fetch.time.ms the rest.
--show-detailed-stats prints instead a line per --reporting-interval (default 5000 ms)
with the header ``time, threadId, ...``. Times use --date-format, a Java SimpleDateFormat
pattern (default yyyy-MM-dd HH:mm:ss:SSS).

--timeout (default 10000 ms) is Kafka's longest wait between records: when it passes
before N records, a WARNING line is printed and the totals of what was read follow. It
also bounds the first metadata request: an unreachable cluster or an unknown --topic fails
at once with one line (exit 1).

The client is librdkafka (confluent-kafka): --consumer.config takes librdkafka keys (the
Java client's names librdkafka shares work; Java-only ones are dropped with a note).
--fetch-size sets max.partition.fetch.bytes, --socket-buffer-size
socket.receive.buffer.bytes; client.id defaults to perf-consumer-client. Offsets are
committed automatically (librdkafka's default, as the Java client's).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from franz.admin.options import ToolError, properties_file
from franz.admin.perf import (
    CONSUMER_DETAILED_HEADER,
    CONSUMER_HEADER,
    DEFAULT_DATE_FORMAT,
    client_observers,
    consumer_progress_line,
    consumer_total_line,
    drop_java_only_config,
    flatten_librdkafka_stats,
    format_metrics,
    java_date_formatter,
    require_topic,
)

__all__ = ["add_arguments", "run"]

#: records asked of librdkafka per consume() call
BATCH = 10_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-server",
        required=True,
        metavar="HOST:PORT",
        help="REQUIRED: the server(s) to connect to",
    )
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--topic", help="the topic to consume from")
    which.add_argument("--include", metavar="REGEX", help="regular expression of topics")
    parser.add_argument(
        "--messages", required=True, type=int, metavar="COUNT", help="REQUIRED: records to read"
    )
    parser.add_argument(
        "--group",
        default=f"perf-consumer-{random.randrange(100_000)}",
        metavar="GID",
        help="the group id to consume on (default perf-consumer-<random>)",
    )
    parser.add_argument(
        "--fetch-size",
        type=int,
        default=1024 * 1024,
        metavar="SIZE",
        help="max bytes per partition per fetch (default 1048576)",
    )
    parser.add_argument(
        "--from-latest",
        action="store_true",
        help="without a committed offset, start at the latest record instead of the earliest",
    )
    parser.add_argument(
        "--socket-buffer-size",
        type=int,
        default=2 * 1024 * 1024,
        metavar="SIZE",
        help="TCP receive buffer size (default 2097152)",
    )
    parser.add_argument(
        "--consumer.config", dest="consumer_config", metavar="FILE", help="consumer config file"
    )
    parser.add_argument("--print-metrics", action="store_true", help="print the metrics")
    parser.add_argument(
        "--show-detailed-stats",
        action="store_true",
        help="print stats every --reporting-interval",
    )
    parser.add_argument(
        "--timeout",
        dest="timeout_ms",
        type=int,
        default=10_000,
        metavar="MS",
        help="longest wait between records, in ms (default 10000)",
    )
    parser.add_argument(
        "--reporting-interval",
        type=int,
        default=5_000,
        metavar="INTERVAL_MS",
        help="interval of --show-detailed-stats lines, in ms (default 5000)",
    )
    parser.add_argument(
        "--date-format",
        default=DEFAULT_DATE_FORMAT,
        help=f"SimpleDateFormat pattern of times (default {DEFAULT_DATE_FORMAT})",
    )
    parser.add_argument("--hide-header", action="store_true", help="do not print the header")
    parser.set_defaults(parser=parser)  # run() reports bad values as argparse errors (exit 2)


def consumer_config(args: argparse.Namespace) -> dict[str, Any]:
    config: dict[str, Any] = properties_file(args.consumer_config, "--consumer.config")
    config.update(
        {
            "bootstrap.servers": args.bootstrap_server,
            "group.id": args.group,
            "socket.receive.buffer.bytes": args.socket_buffer_size,
            "max.partition.fetch.bytes": args.fetch_size,
            "auto.offset.reset": "latest" if args.from_latest else "earliest",
        }
    )
    config.setdefault("client.id", "perf-consumer-client")
    return drop_java_only_config(config, "consumer-perf-test")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def run(args: argparse.Namespace) -> int:

    from confluent_kafka import Consumer

    if args.messages < 0:
        args.parser.error("--messages must not be negative")
    if args.reporting_interval <= 0:
        args.parser.error("Reporting interval must be greater than 0.")
    try:
        date_format = java_date_formatter(args.date_format)
    except ValueError as exc:
        args.parser.error(f"--date-format: {exc}")
    config = consumer_config(args)
    logger, stats_json = client_observers(config, print_metrics=args.print_metrics)

    consumer = Consumer(config)
    try:
        require_topic(
            consumer,
            args.bootstrap_server,
            args.topic,
            args.timeout_ms,
            hint="; create it with franz topics --create, or check the name",
        )
        return _consume(consumer, args, date_format, stats_json)
    except BaseException:
        logger.disabled = True
        raise
    finally:
        consumer.close()


def _consume(
    consumer: Any, args: argparse.Namespace, date_format: Any, stats_json: list[str]
) -> int:
    if not args.hide_header:
        print(CONSUMER_DETAILED_HEADER if args.show_detailed_stats else CONSUMER_HEADER)

    start_ms = _now_ms()
    join = {"start": start_ms, "total": 0, "round": 0, "assigned": 0}

    def on_assign(_consumer: Any, partitions: list[Any]) -> None:
        if join["assigned"] == 0:
            elapsed = _now_ms() - join["start"]
            join["total"] += elapsed
            join["round"] += elapsed
        join["assigned"] += len(partitions)

    def on_revoke(_consumer: Any, partitions: list[Any]) -> None:
        join["assigned"] = max(0, join["assigned"] - len(partitions))
        if join["assigned"] == 0:
            join["start"] = _now_ms()

    subscription = [args.topic] if args.topic else [f"^{args.include}"]
    consumer.subscribe(subscription, on_assign=on_assign, on_revoke=on_revoke)

    wanted = args.messages
    messages = 0
    nbytes = 0
    last_messages = 0
    last_bytes = 0
    now = start_ms
    last_report = start_ms
    last_consumed = start_ms
    consume = consumer.consume
    while messages < wanted and now - last_consumed <= args.timeout_ms:
        batch = consume(min(BATCH, wanted - messages), 0.1)
        now = _now_ms()
        if not batch:
            continue
        last_consumed = now
        for msg in batch:
            error = msg.error()
            if error is not None:
                if error.fatal() or not error.retriable():
                    raise ToolError(f"consuming failed: {error.str()}")
                continue
            messages += 1
            key = msg.key()
            nbytes += len(msg) + (len(key) if key is not None else 0)
        if args.show_detailed_stats and now - last_report >= args.reporting_interval:
            print(
                consumer_progress_line(
                    bytes_read=nbytes,
                    last_bytes_read=last_bytes,
                    messages_read=messages,
                    last_messages_read=last_messages,
                    start_ms=last_report,
                    end_ms=now,
                    join_time_ms=join["round"],
                    date_format=date_format,
                ),
                flush=True,
            )
            join["round"] = 0
            last_report = now
            last_messages = messages
            last_bytes = nbytes
    end_ms = _now_ms()
    if messages < wanted:
        print(
            "WARNING: Exiting before consuming the expected number of messages: timeout "
            f"({args.timeout_ms} ms) exceeded. You can use the --timeout option to increase "
            "the timeout."
        )
    if args.print_metrics:
        # serve the client until fresh statistics arrive; paused first, so that no record is
        # handed out (and its offset committed) beyond the ones counted
        consumer.pause(consumer.assignment())
        seen = len(stats_json)
        deadline = time.monotonic() + 3.0
        while len(stats_json) == seen and time.monotonic() < deadline:
            consumer.poll(0.1)
    if not args.show_detailed_stats:
        print(
            consumer_total_line(
                start_ms=start_ms,
                end_ms=end_ms,
                total_bytes=nbytes,
                total_messages=messages,
                join_time_ms=join["total"],
                date_format=date_format,
            ),
            flush=True,
        )
    if args.print_metrics and stats_json:
        for line in format_metrics(flatten_librdkafka_stats(json.loads(stats_json[-1]))):
            print(line)
    return 0
