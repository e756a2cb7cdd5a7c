"""Measure the latency of one record from produce to fetch (Kafka's ``EndToEndLatency``,
``kafka-run-class.sh kafka.tools.EndToEndLatency``).

    franz end-to-end-latency BROKER_LIST TOPIC NUM_MESSAGES PRODUCER_ACKS MESSAGE_SIZE_BYTES
        [PROPERTIES_FILE]
    franz end-to-end-latency --bootstrap-server HOST:PORT --topic TOPIC --num-records N
        --producer-acks 1|all --record-size BYTES [--command-config FILE] [--timeout MS]

The first form is Kafka 3.9's positional one, the second the flags of newer Kafka. A
consumer is assigned every partition of TOPIC at its end; then, N times, one record of
MESSAGE_SIZE_BYTES (one random letter repeated) is produced synchronously (linger.ms=0,
acks as given: 1 or all) and polled back (fetch.wait.max.ms=0), and the time from send to
receipt is measured. Every 1000th record prints ``i<TAB>latency ms``; then

    Avg latency: X.XXXX ms
    Percentiles: 50th = a, 99th = b, 99.9th = c

(percentiles in whole ms). A TOPIC that does not exist is created with 1 partition and
replication factor 1 (``Topic "t" does not exist. Will create topic with 1 partition(s) and
replication factor = 1``), as Kafka does. A record not received within 60 s, or a
different record received, fails the run (exit 1).

PROPERTIES_FILE / --command-config are client configs for both clients (librdkafka keys).
Franz extension: --timeout MS (default 30000) bounds the first metadata request, so an
unreachable cluster fails at once with one line (exit 1).
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from franz.admin.options import ToolError, properties_file
from franz.admin.perf import (
    add_timeout_option,
    client_observers,
    e2e_average_line,
    e2e_percentiles_line,
    e2e_progress_line,
    require_topic,
    split_java_client_config,
)

__all__ = ["add_arguments", "run"]

#: Kafka's EndToEndLatency.POLL_TIMEOUT_MS
POLL_TIMEOUT_MS = 60_000


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "positional",
        nargs="*",
        metavar="ARG",
        help="broker_list topic num_messages producer_acks message_size_bytes [properties_file]",
    )
    parser.add_argument("--bootstrap-server", metavar="HOST:PORT", help="the broker(s)")
    parser.add_argument("--topic", help="the topic to produce to and consume from")
    parser.add_argument("--num-records", type=int, metavar="N", help="records to send")
    parser.add_argument("--producer-acks", metavar="ACKS", help="1 or all")
    parser.add_argument("--record-size", type=int, metavar="BYTES", help="record size")
    parser.add_argument("--command-config", metavar="FILE", help="client properties file")
    add_timeout_option(parser)
    parser.set_defaults(parser=parser)  # run() reports bad values as argparse errors (exit 2)


class Settings:
    """The run's inputs, from either form of the command line."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        num_messages: int,
        acks: str,
        size: int,
        properties: str | None,
    ) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.num_messages = num_messages
        self.acks = acks
        self.size = size
        self.properties = properties


_USAGE = (
    "USAGE: franz end-to-end-latency broker_list topic num_messages producer_acks "
    "message_size_bytes [optional] properties_file, or --bootstrap-server --topic "
    "--num-records --producer-acks --record-size [--command-config]"
)


def settings(args: argparse.Namespace) -> Settings:
    """Read either form; a mixed or partial one is an argparse error (exit 2)."""
    flags = [args.bootstrap_server, args.topic, args.num_records, args.producer_acks]
    flags += [args.record_size, args.command_config]
    if args.positional:
        if any(f is not None for f in flags) or len(args.positional) not in (5, 6):
            args.parser.error(_USAGE)
        bootstrap, topic, count, acks, size = args.positional[:5]
        props = args.positional[5] if len(args.positional) == 6 else None
        try:
            num, nbytes = int(count), int(size)
        except ValueError:
            args.parser.error(f"num_messages and message_size_bytes must be numbers; {_USAGE}")
        return Settings(bootstrap, topic, num, acks, nbytes, props or None)
    if any(f is None for f in flags[:5]):
        args.parser.error(_USAGE)
    return Settings(
        args.bootstrap_server,
        args.topic,
        args.num_records,
        args.producer_acks,
        args.record_size,
        args.command_config,
    )


def _base_config(s: Settings) -> dict[str, Any]:
    config: dict[str, Any] = properties_file(s.properties, "properties file")
    config["bootstrap.servers"] = s.bootstrap
    return split_java_client_config(config)[0]


def run(args: argparse.Namespace) -> int:
    from confluent_kafka import Consumer, Producer

    s = settings(args)
    if s.acks not in ("1", "all"):
        args.parser.error(
            "Latency testing requires synchronous acknowledgement. Please use 1 or all"
        )
    if s.num_messages <= 0 or s.size < 0:
        args.parser.error("num_messages must be positive and message_size_bytes not negative")
    base = _base_config(s)
    logger, _ = client_observers(base, print_metrics=False)
    consumer = Consumer(
        {
            **base,
            "group.id": f"test-group-{int(time.time() * 1000)}",
            "enable.auto.commit": False,
            "auto.offset.reset": "latest",
            "fetch.wait.max.ms": 0,  # no temporal batching
        }
    )
    producer = Producer({**base, "linger.ms": 0, "acks": s.acks})
    try:
        _ensure_topic(consumer, s, base, args.timeout_ms)
        _assign_at_end(consumer, s.topic, args.timeout_ms)
        return _measure(producer, consumer, s)
    except BaseException:
        logger.disabled = True
        raise
    finally:
        consumer.close()


def _ensure_topic(consumer: Any, s: Settings, base: dict[str, Any], timeout_ms: int) -> None:
    try:
        require_topic(consumer, s.bootstrap, s.topic, timeout_ms)
        return
    except ToolError as exc:
        if "does not exist" not in str(exc):
            raise
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    print(
        f'Topic "{s.topic}" does not exist. Will create topic with 1 partition(s) and '
        "replication factor = 1",
        flush=True,
    )
    admin = AdminClient({k: v for k, v in base.items() if k != "logger"})
    futures = admin.create_topics([NewTopic(s.topic, 1, 1)], request_timeout=timeout_ms / 1000)
    try:
        futures[s.topic].result(timeout_ms / 1000)
    except Exception as exc:
        print(f"Creation of topic {s.topic} failed")
        raise ToolError(f"could not create topic {s.topic!r}: {exc}") from None
    deadline = time.monotonic() + timeout_ms / 1000
    while True:  # the new topic's leader may take a moment to show in metadata
        found = consumer.list_topics(s.topic, timeout=timeout_ms / 1000).topics.get(s.topic)
        if (
            found is not None
            and found.error is None
            and found.partitions
            and all(p.leader >= 0 for p in found.partitions.values())
        ):
            return
        if time.monotonic() > deadline:
            raise ToolError(f"topic {s.topic!r} was created but has no leader yet")
        time.sleep(0.05)


def _assign_at_end(consumer: Any, topic: str, timeout_ms: int) -> None:
    """Assign every partition at its current end offset, resolved now (Kafka's
    seekToEnd + position()): a record produced later is always after it."""
    from confluent_kafka import TopicPartition

    metadata = consumer.list_topics(topic, timeout=timeout_ms / 1000)
    assignment = []
    for pid in sorted(metadata.topics[topic].partitions):
        tp = TopicPartition(topic, pid)
        _low, high = consumer.get_watermark_offsets(tp, timeout=timeout_ms / 1000, cached=False)
        assignment.append(TopicPartition(topic, pid, high))
    consumer.assign(assignment)


def _measure(producer: Any, consumer: Any, s: Settings) -> int:
    rnd = random.Random(0)
    latencies = [0] * s.num_messages
    total_ns = 0
    delivered: list[Any] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        delivered.append(err)

    for i in range(s.num_messages):
        message = bytes([rnd.randrange(26) + 65]) * s.size
        begin = time.perf_counter_ns()
        producer.produce(s.topic, message, on_delivery=on_delivery)
        producer.flush()
        if delivered and delivered[-1] is not None:
            raise ToolError(f"send failed: {delivered[-1].str()}")
        record = consumer.poll(POLL_TIMEOUT_MS / 1000)
        elapsed = time.perf_counter_ns() - begin
        if record is None:
            raise ToolError(
                f"poll() timed out before finding a result (timeout:[{POLL_TIMEOUT_MS}])"
            )
        if record.error() is not None:
            raise ToolError(f"poll() failed: {record.error().str()}")
        if record.value() != message:
            raise ToolError(
                f"The message read [{record.value()!r}] did not match the message sent "
                f"[{message!r}]"
            )
        if i % 1000 == 0:
            print(e2e_progress_line(i, elapsed), flush=True)
        total_ns += elapsed
        latencies[i] = elapsed // 1_000_000
    print(e2e_average_line(total_ns, s.num_messages))
    print(e2e_percentiles_line(latencies))
    return 0
