"""Read records from standard input, one per line, and produce them (Kafka's
``kafka-console-producer.sh``).

    franz console-producer --bootstrap-server HOST:PORT --topic TOPIC [options] < lines
    franz console-producer ... --property parse.key=true --property key.separator=:
    franz console-producer ... --property parse.headers=true   # h1:v1,h2:v2<TAB>value

Each line is one record (lines end at \\n, \\r\\n or \\r). Reader properties (--property,
Kafka's LineMessageReader): parse.key=false, key.separator=\\t, parse.headers=false,
headers.delimiter=\\t, headers.separator=, (a regex), headers.key.separator=:,
ignore.error=false, null.marker (fields equal to it become null). With parse.headers and
parse.key a line is "h1:v1,h2:v2<TAB>key<TAB>value".

Producer settings as Kafka's tool: acks -1, linger.ms 1000 (--timeout), request.timeout.ms
1500, retries 3, retry.backoff.ms 100, batch.size 16384, the murmur2 partitioner of the Java
client (same key, same partition). --producer-property and --producer.config take client
properties (librdkafka names; the Java names buffer.memory, send.buffer.bytes are
translated, serializer keys ignored) and win over the defaults, not over explicit flags.

On end of input (or SIGINT/SIGTERM) pending records are flushed. The exit code is 0 when
every record was acknowledged; otherwise 1 with one line saying how many records failed and
why (Kafka's tool logs failures and still exits 0 unless --sync). A line the reader cannot
parse stops the tool with exit 1 after flushing the records before it. An unknown topic
fails after --max-block-ms when the broker does not auto-create topics.
"""

from __future__ import annotations

import argparse
import io
import signal
import sys
import time
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

import confluent_kafka

from franz.admin.client import quiet
from franz.admin.console import (
    CODECS,
    ConsoleConfigError,
    LineReaderConfig,
    LineRecord,
    add_bootstrap_option,
    add_client_config_options,
    librdkafka_config,
    parse_line,
    parse_property_args,
)
from franz.admin.options import ToolError, properties_file

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_bootstrap_option(parser)
    parser.add_argument("--topic", required=True, help="REQUIRED: the topic to produce to")
    parser.add_argument(
        "--property",
        action="append",
        metavar="KEY=VALUE",
        help="line reader property (parse.key, key.separator, parse.headers, "
        "headers.delimiter, headers.separator, headers.key.separator, "
        "ignore.error, null.marker); repeatable",
    )
    parser.add_argument(
        "--reader-config", metavar="FILE", help="line reader properties file (--property wins)"
    )
    add_client_config_options(parser, "producer")
    parser.add_argument(
        "--compression-codec",
        nargs="?",
        const="gzip",
        metavar="CODEC",
        help="none, gzip, snappy, lz4 or zstd; without a value: gzip",
    )
    parser.add_argument(
        "--sync",
        action="store_true",
        help="send each record and wait for its acknowledgement before the next",
    )
    parser.add_argument(
        "--request-required-acks", metavar="ACKS", help="the producer's acks (default -1)"
    )
    parser.add_argument(
        "--timeout",
        type=int,
        metavar="MS",
        dest="linger_ms",
        help="linger.ms: how long a record may wait for a batch (default 1000)",
    )
    parser.add_argument(
        "--batch-size",
        "--max-partition-memory-bytes",
        type=int,
        dest="batch_size",
        metavar="BYTES",
        help="batch.size (default 16384)",
    )
    parser.add_argument(
        "--request-timeout-ms",
        type=int,
        metavar="MS",
        help="request.timeout.ms, the ack timeout (default 1500)",
    )
    parser.add_argument(
        "--message-send-max-retries", type=int, metavar="N", help="retries (default 3)"
    )
    parser.add_argument(
        "--retry-backoff-ms", type=int, metavar="MS", help="retry.backoff.ms (default 100)"
    )
    parser.add_argument(
        "--metadata-expiry-ms", type=int, metavar="MS", help="metadata.max.age.ms (default 300000)"
    )
    parser.add_argument(
        "--max-memory-bytes", type=int, metavar="BYTES", help="buffer.memory (default 33554432)"
    )
    parser.add_argument(
        "--socket-buffer-size", type=int, metavar="BYTES", help="send.buffer.bytes (default 102400)"
    )
    parser.add_argument(
        "--max-block-ms",
        type=int,
        metavar="MS",
        help="how long to wait for the cluster, for a topic's metadata and for "
        "room in the send buffer (default 60000)",
    )


#: flag dest -> (producer property it sets, Kafka's default). A flag given on the command
#: line wins; otherwise the default applies only if no config source set the property
#: (Kafka's CommandLineUtils.maybeMergeOptions).
_MERGED_FLAGS: dict[str, tuple[str, int | str]] = {
    "linger_ms": ("linger.ms", 1000),
    "request_required_acks": ("acks", "-1"),
    "request_timeout_ms": ("request.timeout.ms", 1500),
    "message_send_max_retries": ("retries", 3),
    "retry_backoff_ms": ("retry.backoff.ms", 100),
    "socket_buffer_size": ("send.buffer.bytes", 102400),
    "max_memory_bytes": ("buffer.memory", 32 * 1024 * 1024),
    "batch_size": ("batch.size", 16 * 1024),
    "metadata_expiry_ms": ("metadata.max.age.ms", 300_000),
    "max_block_ms": ("max.block.ms", 60_000),
}


def reader_config(args: argparse.Namespace) -> LineReaderConfig:
    props = properties_file(args.reader_config, "--reader-config")
    props.update(parse_property_args(args.property, "--property"))
    return LineReaderConfig.from_properties(props)


def producer_config(args: argparse.Namespace) -> tuple[dict[str, str], int]:
    """The librdkafka config and the max block time in ms (Java's ``max.block.ms``, which
    librdkafka lacks: it bounds the connection check, the wait for a topic's metadata
    (``topic.metadata.propagation.max.ms``) and the wait for room in the local queue)."""
    props = properties_file(args.producer_config, "--producer.config")
    props.update(parse_property_args(args.producer_property, "--producer-property"))
    props["bootstrap.servers"] = args.bootstrap_server
    codec = (args.compression_codec or "none").lower()
    if codec not in CODECS:
        raise ConsoleConfigError(
            f"--compression-codec {args.compression_codec!r}: choose from {', '.join(CODECS)}"
        )
    props["compression.type"] = codec
    props.setdefault("client.id", "console-producer")
    for dest, (key, default) in _MERGED_FLAGS.items():
        given = getattr(args, dest)
        if given is not None:
            props[key] = str(given)
        elif key not in props:
            props[key] = str(default)
    try:
        max_block_ms = int(props.pop("max.block.ms"))
    except ValueError:
        raise ConsoleConfigError("max.block.ms expects milliseconds") from None
    config = librdkafka_config(props)
    config.setdefault("partitioner", "murmur2_random")  # the Java client's key hashing
    quiet(config)  # the tool reports a failed connection in one line
    config.setdefault("topic.metadata.propagation.max.ms", str(max_block_ms))
    if "delivery.timeout.ms" not in config:
        config.setdefault("message.timeout.ms", "120000")  # Java's delivery.timeout.ms
    return config, max_block_ms


class _Interrupted(Exception):
    """SIGINT or SIGTERM arrived while reading input."""


@dataclass
class _Signals:
    """SIGINT/SIGTERM end the input: they raise ``_Interrupted`` while reading (a blocked
    ``read`` is interrupted) and are only recorded while flushing."""

    signum: int | None = None
    reading: bool = True
    previous: dict[int, Any] = field(default_factory=dict)

    def install(self) -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self.previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
        if self.reading:
            raise _Interrupted


@dataclass
class _Deliveries:
    """Delivery reports: how many records were acknowledged and the first failures."""

    sent: int = 0
    acked: int = 0
    failed: int = 0
    first_error: str | None = None
    first_failed_line: int | None = None

    def callback(self, line_number: int) -> Any:
        def on_delivery(err: Any, msg: Any) -> None:
            if err is None:
                self.acked += 1
                return
            self.failed += 1
            if self.first_error is None:
                self.first_error = str(err.str() if hasattr(err, "str") else err)
                self.first_failed_line = line_number

        return on_delivery


def _produce(
    producer: confluent_kafka.Producer,
    topic: str,
    record: LineRecord,
    on_delivery: Any,
    max_block_ms: int,
) -> None:
    deadline = time.monotonic() + max_block_ms / 1000
    while True:
        try:
            producer.produce(
                topic,
                value=record.value,
                key=record.key,
                headers=list(record.headers) or None,
                on_delivery=on_delivery,
            )
            return
        except BufferError:  # the local queue is full: serve delivery reports and retry
            if time.monotonic() > deadline:
                raise ToolError(
                    f"the producer's buffer stayed full for {max_block_ms} ms "
                    "(--max-block-ms); is the cluster accepting records?"
                ) from None
            producer.poll(0.05)


def _check_cluster(producer: confluent_kafka.Producer, bootstrap: str, timeout_ms: int) -> None:
    try:
        producer.list_topics(timeout=timeout_ms / 1000)
    except confluent_kafka.KafkaException as exc:
        raise ToolError(
            f"could not reach the cluster at {bootstrap} within {timeout_ms} ms "
            f"({exc.args[0].str() if exc.args else exc}); check that it is running and "
            "that --bootstrap-server is right"
        ) from None


def _input_lines() -> io.TextIOWrapper:
    # Universal newlines as Java's readLine (\n, \r\n, \r); surrogateescape keeps any byte.
    return io.TextIOWrapper(
        sys.stdin.buffer, encoding="utf-8", errors="surrogateescape", newline=None
    )


def run(args: argparse.Namespace) -> int:
    try:
        reader = reader_config(args)
        config, max_block_ms = producer_config(args)
    except ConsoleConfigError as exc:
        print(f"franz {args.tool}: error: {exc}", file=sys.stderr)
        return 2
    try:
        producer = confluent_kafka.Producer(config)
    except confluent_kafka.KafkaException as exc:
        raise ToolError(f"invalid producer config: {exc.args[0].str()}") from None
    _check_cluster(producer, args.bootstrap_server, max_block_ms)
    prompt = sys.stdin.isatty() and sys.stdout.isatty()
    deliveries = _Deliveries()
    signals = _Signals()
    signals.install()
    parse_error: ToolError | None = None
    try:
        lines = _input_lines()
        line_number = 0
        try:
            while True:
                if prompt:
                    sys.stdout.write(">")
                    sys.stdout.flush()
                line = lines.readline()
                if not line:
                    break
                line_number += 1
                try:
                    record = parse_line(line.removesuffix("\n"), reader, line_number)
                except ToolError as exc:
                    parse_error = exc
                    break
                _produce(
                    producer, args.topic, record, deliveries.callback(line_number), max_block_ms
                )
                deliveries.sent += 1
                if args.sync:
                    producer.flush()
                    if deliveries.failed:
                        break
                else:
                    producer.poll(0)
        except _Interrupted:
            pass
        signals.reading = False
        producer.flush()
    finally:
        signals.restore()
    if deliveries.failed:
        raise ToolError(
            f"{deliveries.failed} of {deliveries.sent} record(s) were not delivered to topic "
            f"{args.topic!r}: {deliveries.first_error} (first failed input line: "
            f"{deliveries.first_failed_line})"
        )
    if parse_error is not None:
        raise parse_error
    if signals.signum is not None:
        return 128 + signals.signum
    return 0
