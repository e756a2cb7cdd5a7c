"""Produce and consume with real Kafka clients; the same inputs and outputs for each.

The integration tests use four third-party clients as conformance oracles: confluent-kafka
(librdkafka), kafka-python, aiokafka and ``kcat`` (librdkafka's command-line tool, a separate
process). ``produce_with`` and ``consume_with`` drive any of them with the same inputs and
return the same normalized values, so a test can cross any producer with any consumer.

Rules the helpers keep:

- These consumers ``assign`` partitions and seek explicitly, never commit, so that every
  client reads exactly the requested range. confluent-kafka needs a ``group.id`` in its
  config; it is set but never used. Group consumption (``subscribe``, commits, rebalances) is
  driven by ``tests/support/groups.py``.
- Every wait is bounded. A consumer that does not receive ``count`` records before its
  deadline fails with an ``AssertionError`` that says what it did receive.
- ``kcat`` runs as a subprocess that is killed by PID if it outlives its deadline.

kcat's limits, which the helpers check rather than paper over:

- It cannot set a record's timestamp (librdkafka stamps CreateTime at ``produce()``), so
  records produced with kcat must have ``timestamp_ms=None``; ``ProduceResult`` carries the
  wall-clock window the run took.
- ``-H name=value`` applies the same headers to every record of a run, so records are sent in
  runs of equal headers. A header value cannot contain NUL (it travels in ``argv``); ``-H
  name`` without ``=`` sends a null value.
- Records travel on stdin split by the ``-D`` delimiter and the ``-K`` key delimiter; keys and
  values must not contain either (``_KCAT_DELIMITER``, ``_KCAT_KEY_DELIMITER``). Delimiters are
  passed fully ``\\xNN``-escaped: kcat's escape parser is greedy (``\\xffE`` is not ``\\xff``
  then ``E``). A line without the key delimiter has a null key; with ``-Z`` (used only when a
  value is null) empty keys and values become null too, so empty ones are refused then. kcat
  skips an empty message, so a record with neither key nor value cannot be sent.
- Consuming uses the JSON envelope (``-J``): kcat escapes control characters and writes other
  bytes raw, so decoding the output as UTF-8 with ``surrogateescape`` and encoding the strings
  back gives the exact bytes of keys, values and header values, nulls and header order
  included (``%h`` in a format string cannot tell a null header from the text ``NULL``).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple, get_args

import confluent_kafka
from confluent_kafka.admin import AdminClient, NewTopic

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka
    import kafka.codec as kafka_python_codec
    from kafka.structs import TopicPartition as KafkaPythonTopicPartition

import aiokafka
import aiokafka.codec as aiokafka_codec
from aiokafka.structs import TopicPartition as AiokafkaTopicPartition

from franz.protocol.records import (
    BATCH_HEADER_SIZE,
    CompressionType,
    RecordBatchView,
    compress,
    iter_batches,
)

__all__ = [
    "ALL_CODECS",
    "CLIENTS",
    "Client",
    "Codec",
    "Consumed",
    "OutRecord",
    "ProduceResult",
    "codec_problems",
    "codecs_for",
    "consume_with",
    "consumer_groups_describe",
    "create_topic",
    "end_offsets",
    "format_records",
    "produce_with",
    "run_kcat",
    "stored_batches",
]

Client = Literal["confluent-kafka", "kafka-python", "aiokafka", "kcat"]
Codec = Literal["none", "gzip", "snappy", "lz4", "zstd"]

CLIENTS: tuple[Client, ...] = get_args(Client)
ALL_CODECS: tuple[Codec, ...] = get_args(Codec)

#: Record delimiter for ``kcat -P``/``-C`` (``-D``): no NUL (kcat takes C strings).
_KCAT_DELIMITER = b"\x1e\xfe\x1f\xfd\x1e\xfc"
#: Key delimiter for ``kcat -P -K``.
_KCAT_KEY_DELIMITER = b"\x1d\xfb\x1d\xfa"

# Kafka's timestampType (record batch attributes bit 3).
CREATE_TIME = 0
LOG_APPEND_TIME = 1


class OutRecord(NamedTuple):
    """A record to produce. ``partition=None`` lets the client's partitioner choose;
    ``timestamp_ms=None`` lets the client stamp CreateTime."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    partition: int | None = None
    timestamp_ms: int | None = None


class Consumed(NamedTuple):
    """A consumed record, normalized across clients.

    ``timestamp_type`` is Kafka's (0 CreateTime, 1 LogAppendTime), or None when the client
    does not report it.
    """

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp_ms: int
    timestamp_type: int | None


class Ack(NamedTuple):
    """Where the broker says a produced record landed."""

    partition: int
    offset: int


@dataclass(frozen=True)
class ProduceResult:
    """``acks[i]`` is the broker's answer for ``records[i]``; None where the client does not
    report offsets (kcat). ``started_ms``/``finished_ms`` bracket the run (wall clock ms)."""

    acks: list[Ack | None]
    started_ms: int
    finished_ms: int


def codecs_for(client: Client) -> tuple[Codec, ...]:
    """The codecs ``client`` can produce with here (kafka-python's and aiokafka's optional
    libraries vary by environment; librdkafka has them all built in)."""
    if client == "kafka-python":
        c = kafka_python_codec
    elif client == "aiokafka":
        c = aiokafka_codec
    else:
        return ALL_CODECS
    available = {
        "none": True,
        "gzip": c.has_gzip(),
        "snappy": c.has_snappy(),
        "lz4": c.has_lz4(),
        "zstd": c.has_zstd(),
    }
    return tuple(codec for codec in ALL_CODECS if available[codec])


def format_records(records: Sequence[Any], limit: int = 8) -> str:
    """A short description of ``records`` for failure messages: count, head and tail."""
    items = list(records)
    if len(items) <= limit:
        shown = [_short(r) for r in items]
    else:
        half = limit // 2
        shown = [
            *(_short(r) for r in items[:half]),
            f"... {len(items) - limit} more ...",
            *(_short(r) for r in items[-half:]),
        ]
    return f"{len(items)} record(s): [" + ", ".join(shown) + "]"


def _short(record: Any) -> str:
    text = repr(record)
    return text if len(text) <= 200 else text[:197] + "..."


# -- admin ------------------------------------------------------------------------------------


def create_topic(
    bootstrap: str,
    topic: str,
    partitions: int = 1,
    config: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    replication_factor: int = 1,
) -> None:
    """Create ``topic`` with CreateTopics (confluent-kafka's AdminClient) and wait until
    Metadata shows every partition with a leader."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [
            NewTopic(
                topic,
                num_partitions=partitions,
                replication_factor=replication_factor,
                config=dict(config or {}),
            )
        ],
        operation_timeout=timeout,
        request_timeout=timeout,
    )
    futures[topic].result(timeout)
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        metadata = admin.list_topics(topic, timeout=max(0.1, deadline - time.monotonic()))
        last = metadata.topics.get(topic)
        if (
            last is not None
            and last.error is None
            and len(last.partitions) == partitions
            and all(p.leader >= 0 for p in last.partitions.values())
        ):
            return
        time.sleep(0.05)
    raise AssertionError(f"topic {topic!r} not ready with {partitions} partitions: {last!r}")


def stored_batches(broker: Any, topic: str, partition: int) -> list[RecordBatchView]:
    """The batch headers of ``topic``-``partition`` as stored in ``broker``'s log dir.

    ``broker`` is a ``BrokerProcess`` (its ``log.dirs`` is ``data_dir/logs``). Reads the
    ``.log`` segment files in offset order; the broker may be running (appends are plain
    writes, visible to readers) or stopped.
    """
    directory = Path(broker.overrides["log.dirs"]) / f"{topic}-{partition}"
    batches: list[RecordBatchView] = []
    for segment in sorted(directory.glob("*.log")):
        batches.extend(iter_batches(segment.read_bytes()))
    return batches


def codec_problems(batches: Sequence[RecordBatchView], codec: Codec) -> list[str]:
    """Why ``batches`` (as stored) were not all compressed with ``codec``; [] if they were.

    librdkafka (confluent-kafka, kcat) sends a batch uncompressed when compressing it would
    make it larger (``rd_kafka_msgset_writer_compress``: "If the compressed data is larger
    than the uncompressed size then throw it away and send as uncompressed"). So an
    uncompressed batch is accepted when its records do not shrink by 10% or more with
    ``codec`` here (our codec's output size differs a little from the client's). At least
    one batch must carry the codec.
    """
    wanted = CompressionType[codec.upper()]
    problems = []
    for batch in batches:
        if batch.compression_type == wanted:
            continue
        size = batch.size_in_bytes - BATCH_HEADER_SIZE
        if batch.compression_type == CompressionType.NONE:
            compressed = len(compress(wanted, batch.records_payload()))
            if compressed >= 0.9 * size:
                continue
            problems.append(
                f"batch at offset {batch.base_offset} ({batch.records_count} records, {size} "
                f"bytes) is uncompressed, though {codec} makes it {compressed} bytes"
            )
        else:
            problems.append(
                f"batch at offset {batch.base_offset} is {batch.compression_type.name}, not {codec}"
            )
    if batches and not any(b.compression_type == wanted for b in batches):
        problems.append(f"no batch of {len(batches)} is compressed with {codec}")
    return problems


def end_offsets(
    bootstrap: str, topic: str, partitions: Iterable[int], timeout: float = 10.0
) -> dict[int, tuple[int, int]]:
    """``{partition: (log start offset, log end offset)}`` via ListOffsets (confluent-kafka)."""
    consumer = confluent_kafka.Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "franz-tests-unused"}
    )
    try:
        return {
            p: consumer.get_watermark_offsets(
                confluent_kafka.TopicPartition(topic, p), timeout=timeout, cached=False
            )
            for p in partitions
        }
    finally:
        consumer.close()


# -- produce ----------------------------------------------------------------------------------


def produce_with(
    client: Client,
    bootstrap: str,
    topic: str,
    records: Sequence[OutRecord],
    codec: Codec = "none",
    *,
    config: Mapping[str, Any] | None = None,
    timeout: float = 60.0,
) -> ProduceResult:
    """Produce ``records`` with ``client`` and wait for every acknowledgement.

    acks=all. ``config`` adds client settings in the client's own spelling (librdkafka
    properties for confluent-kafka and kcat, keyword arguments for kafka-python and aiokafka).
    Raises ``AssertionError`` if any record is not acknowledged in ``timeout`` seconds.
    """
    started = _now_ms()
    if client == "confluent-kafka":
        acks: list[Ack | None] = list(
            _produce_confluent(bootstrap, topic, records, codec, config or {}, timeout)
        )
    elif client == "kafka-python":
        acks = list(_produce_kafka_python(bootstrap, topic, records, codec, config or {}, timeout))
    elif client == "aiokafka":
        acks = list(
            asyncio.run(_produce_aiokafka(bootstrap, topic, records, codec, config or {}, timeout))
        )
    elif client == "kcat":
        _produce_kcat(bootstrap, topic, records, codec, config or {}, timeout)
        acks = [None] * len(records)
    else:
        raise ValueError(f"unknown client {client!r}")
    return ProduceResult(acks, started, _now_ms())


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _produce_confluent(
    bootstrap: str,
    topic: str,
    records: Sequence[OutRecord],
    codec: Codec,
    config: Mapping[str, Any],
    timeout: float,
) -> list[Ack]:
    results: list[Ack | str | None] = [None] * len(records)

    def on_delivery(index: int):  # one closure per record keeps the index
        def callback(err: Any, msg: Any) -> None:
            results[index] = str(err) if err is not None else Ack(msg.partition(), msg.offset())

        return callback

    producer = confluent_kafka.Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": int(timeout * 1000),
            **config,
        }
    )
    deadline = time.monotonic() + timeout
    for index, record in enumerate(records):
        kwargs: dict[str, Any] = {"key": record.key, "value": record.value}
        if record.partition is not None:
            kwargs["partition"] = record.partition
        if record.headers:
            kwargs["headers"] = list(record.headers)
        if record.timestamp_ms is not None:
            kwargs["timestamp"] = record.timestamp_ms
        while True:
            try:
                producer.produce(topic, on_delivery=on_delivery(index), **kwargs)
                break
            except BufferError:  # local queue full: serve delivery reports, then retry
                producer.poll(0.05)
                if time.monotonic() > deadline:
                    raise AssertionError("confluent-kafka: local queue stayed full") from None
        producer.poll(0)
    remaining = producer.flush(max(0.0, deadline - time.monotonic()))
    failed = [(i, r) for i, r in enumerate(results) if not isinstance(r, Ack)]
    if remaining or failed:
        raise AssertionError(
            f"confluent-kafka: {remaining} record(s) still queued, "
            f"{len(failed)} not acknowledged: {format_records(failed)}"
        )
    return [r for r in results if isinstance(r, Ack)]


def _produce_kafka_python(
    bootstrap: str,
    topic: str,
    records: Sequence[OutRecord],
    codec: Codec,
    config: Mapping[str, Any],
    timeout: float,
) -> list[Ack]:
    producer = kafka.KafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=5,
        request_timeout_ms=30_000,
        delivery_timeout_ms=max(int(timeout * 1000), 31_000),
        **config,
    )
    try:
        futures = [
            producer.send(
                topic,
                key=record.key,
                value=record.value,
                headers=list(record.headers),
                partition=record.partition,
                timestamp_ms=record.timestamp_ms,
            )
            for record in records
        ]
        producer.flush(timeout)
        acks = []
        failed = []
        for index, future in enumerate(futures):
            try:
                metadata = future.get(timeout=0.1 if future.is_done else timeout)
                acks.append(Ack(metadata.partition, metadata.offset))
            except Exception as exc:
                failed.append((index, repr(exc)))
        if failed:
            raise AssertionError(
                f"kafka-python: {len(failed)} record(s) not acknowledged: {format_records(failed)}"
            )
        return acks
    finally:
        producer.close(timeout=5)


async def _produce_aiokafka(
    bootstrap: str,
    topic: str,
    records: Sequence[OutRecord],
    codec: Codec,
    config: Mapping[str, Any],
    timeout: float,
) -> list[Ack]:
    producer = aiokafka.AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=None if codec == "none" else codec,
        acks="all",
        linger_ms=5,
        request_timeout_ms=int(timeout * 1000),
        **config,
    )
    await asyncio.wait_for(producer.start(), timeout)
    try:

        async def send_all() -> list[Any]:
            futures = [
                await producer.send(
                    topic,
                    key=record.key,
                    value=record.value,
                    headers=list(record.headers),
                    partition=record.partition,
                    timestamp_ms=record.timestamp_ms,
                )
                for record in records
            ]
            return await asyncio.gather(*futures, return_exceptions=True)

        results = await asyncio.wait_for(send_all(), timeout)
        failed = [(i, r) for i, r in enumerate(results) if isinstance(r, BaseException)]
        if failed:
            raise AssertionError(
                f"aiokafka: {len(failed)} record(s) not acknowledged: {format_records(failed)}"
            )
        return [Ack(r.partition, r.offset) for r in results]
    finally:
        await producer.stop()


def _kcat_escape(delimiter: bytes) -> str:
    return "".join(f"\\x{byte:02x}" for byte in delimiter)


def _produce_kcat(
    bootstrap: str,
    topic: str,
    records: Sequence[OutRecord],
    codec: Codec,
    config: Mapping[str, Any],
    timeout: float,
) -> None:
    null_values = any(r.value is None for r in records)
    for index, record in enumerate(records):
        if record.timestamp_ms is not None:
            raise ValueError(f"record {index}: kcat cannot set a record timestamp")
        for part in (record.key, record.value):
            if part is not None and (_KCAT_DELIMITER in part or _KCAT_KEY_DELIMITER in part):
                raise ValueError(f"record {index} contains a kcat delimiter")
            if null_values and part == b"":
                raise ValueError(f"record {index}: with -Z kcat sends empty keys/values as null")
        if record.key is None and not record.value:
            raise ValueError(
                f"record {index}: kcat skips an empty input message (no key, no value)"
            )
        for name, value in record.headers:
            if "=" in name or (value is not None and b"\0" in value):
                raise ValueError(f"record {index}: header {name!r} cannot travel in kcat's -H")
    # Partitions are independent: per partition keep order, and cut a new kcat run whenever
    # the headers change (kcat's -H applies to a whole run).
    by_partition: dict[int | None, list[OutRecord]] = {}
    for record in records:
        by_partition.setdefault(record.partition, []).append(record)
    deadline = time.monotonic() + timeout
    for partition, group in by_partition.items():
        for headers, run in itertools.groupby(group, key=lambda r: r.headers):
            args = ["-P", "-b", bootstrap, "-t", topic, "-D", _kcat_escape(_KCAT_DELIMITER)]
            args += ["-K", _kcat_escape(_KCAT_KEY_DELIMITER)]
            if partition is not None:
                args += ["-p", str(partition)]
            if codec != "none":
                args += ["-z", codec]
            if null_values:
                args.append("-Z")
            for name, value in headers:
                args += ["-H", name if value is None else f"{name}=".encode() + value]
            settings = {"acks": "all", "linger.ms": "5", **config}
            for key, value in settings.items():
                args += ["-X", f"{key}={value}"]
            data = bytearray()
            for record in run:
                if record.key is not None:
                    data += record.key + _KCAT_KEY_DELIMITER
                data += (record.value or b"") + _KCAT_DELIMITER
            result = run_kcat(args, bytes(data), timeout=max(1.0, deadline - time.monotonic()))
            if result.returncode != 0 or b"ERROR" in result.stderr or b"failed" in result.stderr:
                stderr = result.stderr.decode(errors="replace")
                raise AssertionError(f"kcat -P exited with {result.returncode}: {stderr}")


def run_kcat(
    args: Sequence[str | bytes], stdin: bytes | None = None, timeout: float = 60.0
) -> subprocess.CompletedProcess[bytes]:
    """Run ``kcat args``; kill it by PID if it is still running after ``timeout`` seconds."""
    proc = subprocess.Popen(
        ["kcat", *args],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(
            f"kcat {' '.join(map(str, args[:12]))} did not finish in {timeout:.0f} s; "
            f"stderr: {err.decode(errors='replace')[-2000:]}"
        ) from None
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


# -- consume ----------------------------------------------------------------------------------


def consume_with(
    client: Client,
    bootstrap: str,
    topic: str,
    partitions: Sequence[int] | Mapping[int, int],
    count: int,
    timeout: float = 30.0,
    *,
    config: Mapping[str, Any] | None = None,
) -> list[Consumed]:
    """Consume at least ``count`` records of ``topic`` from ``partitions`` with ``client``.

    ``partitions`` is a list (each read from offset 0) or ``{partition: start offset}``.
    Records come back in the order the client delivered them (per partition: offset order
    if the broker is right); everything delivered up to the point ``count`` was reached is
    returned, so extra records show up rather than being cut off. Raises ``AssertionError``
    listing what arrived if fewer than ``count`` arrive within ``timeout`` seconds.
    """
    starts = dict(partitions) if isinstance(partitions, Mapping) else dict.fromkeys(partitions, 0)
    received: list[Consumed] = []
    deadline = time.monotonic() + timeout
    try:
        if client == "confluent-kafka":
            _consume_confluent(bootstrap, topic, starts, count, deadline, config or {}, received)
        elif client == "kafka-python":
            _consume_kafka_python(bootstrap, topic, starts, count, deadline, config or {}, received)
        elif client == "aiokafka":
            asyncio.run(
                _consume_aiokafka(bootstrap, topic, starts, count, deadline, config or {}, received)
            )
        elif client == "kcat":
            _consume_kcat(bootstrap, topic, starts, count, deadline, config or {}, received)
        else:
            raise ValueError(f"unknown client {client!r}")
    except TimeoutError:
        pass
    if len(received) < count:
        per_partition = {p: sum(1 for r in received if r.partition == p) for p in starts}
        raise AssertionError(
            f"{client} consumed {len(received)} of {count} record(s) of {topic!r} "
            f"from {starts} within {timeout:.0f} s (per partition {per_partition}); "
            f"received {format_records(received)}"
        )
    return received


def _consume_confluent(
    bootstrap: str,
    topic: str,
    starts: dict[int, int],
    count: int,
    deadline: float,
    config: Mapping[str, Any],
    received: list[Consumed],
) -> None:
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "franz-tests-unused",  # required by the API; no subscribe, no commits
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            **config,
        }
    )
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, p, o) for p, o in starts.items()])
        while len(received) < count and time.monotonic() < deadline:
            batch = consumer.consume(
                num_messages=min(10_000, count - len(received)),
                timeout=min(0.5, max(0.0, deadline - time.monotonic())),
            )
            for msg in batch:
                if msg.error() is not None:
                    if msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                        continue
                    raise AssertionError(f"confluent-kafka consumer error: {msg.error()}")
                ts_type, ts = msg.timestamp()
                received.append(
                    Consumed(
                        msg.partition(),
                        msg.offset(),
                        msg.key(),
                        msg.value(),
                        tuple(msg.headers() or ()),
                        ts,
                        _CONFLUENT_TIMESTAMP_TYPES.get(ts_type),
                    )
                )
    finally:
        consumer.close()


_CONFLUENT_TIMESTAMP_TYPES = {
    confluent_kafka.TIMESTAMP_CREATE_TIME: CREATE_TIME,
    confluent_kafka.TIMESTAMP_LOG_APPEND_TIME: LOG_APPEND_TIME,
}


def _consume_kafka_python(
    bootstrap: str,
    topic: str,
    starts: dict[int, int],
    count: int,
    deadline: float,
    config: Mapping[str, Any],
    received: list[Consumed],
) -> None:
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        **config,
    )
    try:
        tps = {p: KafkaPythonTopicPartition(topic, p) for p in starts}
        consumer.assign(list(tps.values()))
        for p, offset in starts.items():
            consumer.seek(tps[p], offset)
        while len(received) < count and time.monotonic() < deadline:
            remaining_ms = int(max(0.0, deadline - time.monotonic()) * 1000)
            polled = consumer.poll(timeout_ms=min(500, remaining_ms), max_records=10_000)
            for records in polled.values():
                received.extend(as_consumed(records))
    finally:
        consumer.close(autocommit=False)


def as_consumed(records: Any) -> list[Consumed]:
    """kafka-python's and aiokafka's ConsumerRecords (the same fields) as ``Consumed``."""
    return [
        Consumed(
            r.partition,
            r.offset,
            r.key,
            r.value,
            tuple(r.headers or ()),
            r.timestamp,
            r.timestamp_type,
        )
        for r in records
    ]


async def _consume_aiokafka(
    bootstrap: str,
    topic: str,
    starts: dict[int, int],
    count: int,
    deadline: float,
    config: Mapping[str, Any],
    received: list[Consumed],
) -> None:
    consumer = aiokafka.AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        group_id=None,
        enable_auto_commit=False,
        **config,
    )
    await asyncio.wait_for(consumer.start(), max(0.1, deadline - time.monotonic()))
    try:
        tps = {p: AiokafkaTopicPartition(topic, p) for p in starts}
        consumer.assign(list(tps.values()))
        for p, offset in starts.items():
            consumer.seek(tps[p], offset)
        while len(received) < count and time.monotonic() < deadline:
            remaining_ms = int(max(0.0, deadline - time.monotonic()) * 1000)
            polled = await consumer.getmany(timeout_ms=min(500, remaining_ms), max_records=10_000)
            for records in polled.values():
                received.extend(as_consumed(records))
    finally:
        await consumer.stop()


_KCAT_TIMESTAMP_TYPES = {"create": CREATE_TIME, "logappend": LOG_APPEND_TIME}


def _consume_kcat(
    bootstrap: str,
    topic: str,
    starts: dict[int, int],
    count: int,
    deadline: float,
    config: Mapping[str, Any],
    received: list[Consumed],
) -> None:
    """One ``kcat -C -e`` per partition from its next offset, repeated until ``count``."""
    next_offsets = dict(starts)
    while len(received) < count and time.monotonic() < deadline:
        before = len(received)
        for partition, offset in next_offsets.items():
            args = ["-C", "-b", bootstrap, "-t", topic, "-p", str(partition)]
            args += ["-o", str(offset), "-e", "-J", "-q"]
            for key, value in config.items():
                args += ["-X", f"{key}={value}"]
            result = run_kcat(args, timeout=max(1.0, deadline - time.monotonic()))
            if result.returncode != 0:
                raise AssertionError(
                    f"kcat -C exited with {result.returncode}: "
                    f"{result.stderr.decode(errors='replace')}"
                )
            for line in result.stdout.decode("utf-8", "surrogateescape").splitlines():
                record = _parse_kcat_json(line)
                received.append(record)
                next_offsets[partition] = record.offset + 1
        if len(received) == before:
            time.sleep(0.1)


def _parse_kcat_json(line: str) -> Consumed:
    envelope = json.loads(line)
    headers = envelope.get("headers") or []
    return Consumed(
        envelope["partition"],
        envelope["offset"],
        _kcat_bytes(envelope["key"]),
        _kcat_bytes(envelope["payload"]),
        tuple((str(headers[i]), _kcat_bytes(headers[i + 1])) for i in range(0, len(headers), 2)),
        envelope["ts"],
        _KCAT_TIMESTAMP_TYPES.get(envelope["tstype"]),
    )


def _kcat_bytes(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8", "surrogateescape")


def consumer_groups_describe(bootstrap: str, group: str) -> list[dict[str, str]]:
    """``franz consumer-groups --describe --group <group>``'s rows, each as {column: value}
    by its header (GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST
    CLIENT-ID); the tool is run as a subprocess and must succeed."""
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "franz", "consumer-groups", "--bootstrap-server", bootstrap,
         "--describe", "--group", group],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines() if line.strip()]
    header = next(line for line in lines if line[0] == "GROUP")
    return [dict(zip(header, line, strict=False)) for line in lines if line[0] == group]
