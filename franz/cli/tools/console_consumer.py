"""Consume records and print them to standard output (Kafka's ``kafka-console-consumer.sh``).

    franz console-consumer --bootstrap-server HOST:PORT --topic TOPIC [--from-beginning]
    franz console-consumer ... --include 'REGEX' [--group GROUP]
    franz console-consumer ... --topic TOPIC --partition N [--offset earliest|latest|N]
    franz console-consumer ... --max-messages N --timeout-ms MS
    franz console-consumer ... --property print.key=true --property print.timestamp=true

Records are printed by Kafka's DefaultMessageFormatter (--property): print.timestamp,
print.partition, print.offset, print.headers, print.key (false), print.value (true),
key.separator (\\t), line.separator (\\n), headers.separator (,), null.literal (null);
fields in that order, e.g. "CreateTime:1700000000000<TAB>Partition:0<TAB>Offset:4<TAB>
h1:v1,h2:v2<TAB>key<TAB>value"; NO_HEADERS for a record without headers.

--topic or --include subscribes as a member of a group: --group, else a generated
console-consumer-NNNNN group that never commits (as Kafka: enable.auto.commit=false unless
set). With --group, offsets of printed records are auto-committed (every 5 s and on exit),
so the next run resumes after the last printed record; --from-beginning applies when the
group has no committed offset. --partition assigns one partition without a group, starting
at --offset (default latest; earliest with --from-beginning).

The run ends after --max-messages records, after --timeout-ms without a record, or on
SIGINT/SIGTERM (exit 128+signal, as the JVM); it then prints "Processed a total of N
messages" on stderr. An unknown topic or partition, or a cluster not reachable within 30 s
(or --timeout-ms if shorter), fails with exit 1 and one line. --consumer-property and
--consumer.config take client properties (librdkafka names; Java's (de)serializer keys are
ignored); a topic missing at start is an error unless allow.auto.create.topics=true.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import re
import signal
import sys
import time
from collections.abc import Sequence
from types import FrameType
from typing import Any

import confluent_kafka

from franz.admin.client import quiet
from franz.admin.console import (
    ConsoleConfigError,
    ConsoleRecord,
    FormatterConfig,
    add_bootstrap_option,
    add_client_config_options,
    format_record,
    librdkafka_config,
    parse_property_args,
)
from franz.admin.options import DEFAULT_TIMEOUT_MS, ToolError, properties_file

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_option(parser)
    parser.add_argument("--topic", help="the topic to consume from")
    parser.add_argument(
        "--include",
        metavar="REGEX",
        help="regular expression of the topics to consume (whole names)",
    )
    parser.add_argument(
        "--partition",
        type=int,
        metavar="N",
        help="the partition to consume from (starts at its end unless "
        "--offset or --from-beginning)",
    )
    parser.add_argument(
        "--offset",
        metavar="OFFSET",
        help="with --partition: earliest, latest or a non-negative offset",
    )
    parser.add_argument(
        "--from-beginning",
        action="store_true",
        help="start with the earliest record when there is no committed offset",
    )
    parser.add_argument("--group", metavar="GROUP", help="the consumer group id")
    parser.add_argument(
        "--max-messages",
        type=int,
        metavar="N",
        help="exit after N records (default: consume continually)",
    )
    parser.add_argument(
        "--timeout-ms",
        type=int,
        metavar="MS",
        help="exit when no record is available for MS milliseconds",
    )
    parser.add_argument(
        "--property",
        "--formatter-property",
        action="append",
        dest="property",
        metavar="KEY=VALUE",
        help="formatter property; repeatable",
    )
    parser.add_argument(
        "--formatter-config", metavar="FILE", help="formatter properties file (--property wins)"
    )
    add_client_config_options(parser, "consumer")
    parser.add_argument(
        "--isolation-level",
        choices=("read_uncommitted", "read_committed"),
        help="read_committed skips aborted transactional records (default read_uncommitted)",
    )
    parser.add_argument(
        "--skip-message-on-error",
        action="store_true",
        help="skip a record the consumer reports an error for, instead of stopping",
    )


def _check_flags(args: argparse.Namespace) -> None:
    """Kafka's ConsoleConsumerOptions checks (bad combinations: exit 2)."""
    if (args.topic is None) == (args.include is None):
        raise ConsoleConfigError("exactly one of --topic or --include is required")
    if args.partition is not None:
        if args.topic is None:
            raise ConsoleConfigError("The topic is required when partition is specified.")
        if args.from_beginning and args.offset is not None:
            raise ConsoleConfigError(
                "Options from-beginning and offset cannot be specified together."
            )
    elif args.offset is not None:
        raise ConsoleConfigError("The partition is required when offset is specified.")
    if args.include is not None:
        try:
            re.compile(args.include)
        except re.error as exc:
            raise ConsoleConfigError(f"--include {args.include!r}: {exc}") from None
    if args.max_messages is not None and args.max_messages < 0:
        raise ConsoleConfigError("--max-messages must be non-negative")


def parse_offset(args: argparse.Namespace) -> int:
    """The start offset of ``--partition`` (librdkafka's OFFSET_BEGINNING/OFFSET_END for
    earliest/latest)."""
    if args.offset is None:
        if args.from_beginning:
            return confluent_kafka.OFFSET_BEGINNING
        return confluent_kafka.OFFSET_END
    text = args.offset.lower()
    if text == "earliest":
        return confluent_kafka.OFFSET_BEGINNING
    if text == "latest":
        return confluent_kafka.OFFSET_END
    try:
        offset = int(args.offset)
    except ValueError:
        offset = -1
    if offset < 0:
        raise ConsoleConfigError(
            f"The provided offset value '{args.offset}' is incorrect. Valid values are "
            "'earliest', 'latest', or a non-negative long."
        )
    return offset


def consumer_config(args: argparse.Namespace) -> tuple[dict[str, str], bool]:
    """The librdkafka config, and whether the group was generated."""
    file_props = properties_file(args.consumer_config, "--consumer.config")
    extra = parse_property_args(args.consumer_property, "--consumer-property")
    groups = {g for g in (args.group, file_props.get("group.id"), extra.get("group.id")) if g}
    if len(groups) > 1:
        raise ConsoleConfigError(
            "The group ids provided in different places (directly using '--group', via "
            "'--consumer-property', or via '--consumer.config') do not match. Detected group "
            "ids: " + ", ".join(f"'{g}'" for g in sorted(groups))
        )
    if groups and args.partition is not None:
        raise ConsoleConfigError("Options group and partition cannot be specified together.")
    props = {**file_props, **extra}
    reset = props.get("auto.offset.reset")
    if reset is not None and args.from_beginning and reset != "earliest":
        raise ConsoleConfigError(
            f"Can't simultaneously specify --from-beginning and 'auto.offset.reset={reset}', "
            "please remove one option"
        )
    if reset is None:
        props["auto.offset.reset"] = "earliest" if args.from_beginning else "latest"
    props["bootstrap.servers"] = args.bootstrap_server
    props.setdefault("client.id", "console-consumer")
    if args.isolation_level is not None or "isolation.level" not in props:
        props["isolation.level"] = args.isolation_level or "read_uncommitted"
    generated = not groups
    if generated:
        props["group.id"] = f"console-consumer-{random.randrange(100_000)}"
        # Kafka: the generated group's offsets are not meant to be used again.
        props.setdefault("enable.auto.commit", "false")
    else:
        props["group.id"] = groups.pop()
    config = librdkafka_config(props)
    quiet(config)  # the tool reports a failed connection in one line
    # The tool stores the offset of each printed record itself, so records fetched but not
    # printed (--max-messages) are never committed (Kafka's resetUnconsumedOffsets).
    config["enable.auto.offset.store"] = "false"
    return config, generated


class _Stop:
    """SIGINT/SIGTERM: remembered, checked between polls."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.previous: dict[int, Any] = {}

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum


_TIMESTAMP_TYPES = {
    confluent_kafka.TIMESTAMP_CREATE_TIME: "CreateTime",
    confluent_kafka.TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime",
}


def _as_record(msg: Any) -> ConsoleRecord:
    ts_type, ts = msg.timestamp()
    return ConsoleRecord(
        msg.topic(),
        msg.partition(),
        msg.offset(),
        _TIMESTAMP_TYPES.get(ts_type),
        ts,
        msg.key(),
        msg.value(),
        tuple(msg.headers() or ()),
    )


def _prepare(
    consumer: confluent_kafka.Consumer,
    args: argparse.Namespace,
    config: dict[str, str],
    wait_ms: int,
) -> None:
    """Check the cluster and the topic, then subscribe or assign."""
    try:
        metadata = consumer.list_topics(timeout=wait_ms / 1000)
    except confluent_kafka.KafkaException as exc:
        raise ToolError(
            f"could not reach the cluster at {args.bootstrap_server} within {wait_ms} ms "
            f"({exc.args[0].str() if exc.args else exc}); check that it is running and that "
            "--bootstrap-server is right"
        ) from None
    if args.include is not None:
        consumer.subscribe([f"^({args.include})$"])
        return
    topic = metadata.topics.get(args.topic)
    missing = topic is None or topic.error is not None
    if missing and config.get("allow.auto.create.topics", "false").lower() != "true":
        raise ToolError(
            f"topic {args.topic!r} does not exist; create it (franz topics --create) or check "
            "the name"
        )
    if args.partition is None:
        consumer.subscribe([args.topic])
        return
    if topic is not None and args.partition not in topic.partitions:
        raise ToolError(
            f"partition {args.partition} of topic {args.topic!r} does not exist (it has "
            f"{len(topic.partitions)} partition(s))"
        )
    start = parse_offset(args)
    consumer.assign([confluent_kafka.TopicPartition(args.topic, args.partition, start)])


def _store(consumer: confluent_kafka.Consumer, next_offsets: dict[tuple[str, int], int]) -> None:
    if not next_offsets:
        return
    # A partition revoked meanwhile fails to store: its new owner decides.
    with contextlib.suppress(confluent_kafka.KafkaException):
        consumer.store_offsets(
            offsets=[confluent_kafka.TopicPartition(t, p, o) for (t, p), o in next_offsets.items()]
        )
    next_offsets.clear()


def _consume(
    consumer: confluent_kafka.Consumer,
    args: argparse.Namespace,
    formatter: FormatterConfig,
    stop: _Stop,
) -> tuple[int, str | None]:
    """Print records until a stop condition; (records printed, error that ended the run)."""
    out = sys.stdout.buffer
    count = 0
    limit = args.max_messages
    timeout_s = None if args.timeout_ms is None or args.timeout_ms < 0 else args.timeout_ms / 1000
    waiting_since = time.monotonic()
    next_offsets: dict[tuple[str, int], int] = {}
    try:
        while stop.signum is None and (limit is None or count < limit):
            wait = (
                0.2
                if timeout_s is None
                else max(0.0, min(0.2, waiting_since + timeout_s - time.monotonic()))
            )
            batch: Sequence[Any] = consumer.consume(
                num_messages=500 if limit is None else min(500, limit - count), timeout=wait
            )
            for msg in batch:
                err = msg.error()
                if err is not None:
                    if err.code() == confluent_kafka.KafkaError._PARTITION_EOF:
                        continue
                    if args.skip_message_on_error and not err.fatal():
                        print(
                            f"Error processing message, skipping this message: {err.str()}",
                            file=sys.stderr,
                        )
                        continue
                    return count, err.str()
                out.write(format_record(_as_record(msg), formatter))
                count += 1
                next_offsets[(msg.topic(), msg.partition())] = msg.offset() + 1
                waiting_since = time.monotonic()
            if batch:
                out.flush()
                _store(consumer, next_offsets)
            elif timeout_s is not None and time.monotonic() - waiting_since >= timeout_s:
                break
    except BrokenPipeError:
        print("Unable to write to standard out, closing consumer.", file=sys.stderr)
    finally:
        _store(consumer, next_offsets)
    return count, None


def run(args: argparse.Namespace) -> int:
    try:
        _check_flags(args)
        config, _generated = consumer_config(args)
        props = properties_file(args.formatter_config, "--formatter-config")
        props.update(parse_property_args(args.property, "--property"))
        formatter = FormatterConfig.from_properties(props)
        if args.partition is not None:
            parse_offset(args)
    except ConsoleConfigError as exc:
        print(f"franz {args.tool}: error: {exc}", file=sys.stderr)
        return 2
    try:
        consumer = confluent_kafka.Consumer(config)
    except confluent_kafka.KafkaException as exc:
        raise ToolError(f"invalid consumer config: {exc.args[0].str()}") from None
    stop = _Stop()
    stop.install()
    count = 0
    error: str | None = None
    try:
        wait_ms = DEFAULT_TIMEOUT_MS
        if args.timeout_ms is not None and args.timeout_ms >= 0:
            wait_ms = max(1, min(wait_ms, args.timeout_ms))
        _prepare(consumer, args, config, wait_ms)
        if args.max_messages != 0:
            count, error = _consume(consumer, args, formatter, stop)
    finally:
        consumer.close()  # commits the stored offsets when auto-commit is on
        stop.restore()
        with contextlib.suppress(BrokenPipeError):
            sys.stdout.flush()
        print(f"Processed a total of {count} messages", file=sys.stderr)
    if error is not None:
        raise ToolError(f"error consuming from the cluster, stopped: {error}")
    if stop.signum is not None:
        return 128 + stop.signum
    return 0
