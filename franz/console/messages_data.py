"""The message browser's and the produce form's cluster access (``/topics/{name}/messages``).

``browse(cluster, topic, query)`` reads a bounded page of records, blocking (the page runs it
through ``cluster.run`` on a worker thread):

1. DescribeTopics (its partitions; UNKNOWN_TOPIC_OR_PART is ``TopicNotFound``);
2. one batched ListOffsets for the log start offsets and one for the high watermarks
   (``AdminClient.list_offsets``), plus one for a timestamp when ``from=timestamp``
   (ListOffsets with a timestamp: what ``Consumer.offsets_for_times`` sends);
3. per partition the range ``[start, end)``: ``earliest`` from the log start offset,
   ``offset`` from the offset (kept within the log), ``timestamp`` from the first offset
   whose timestamp is at or after it (none: nothing to show), ``latest`` the last ``limit``
   records before the high watermark; ``end`` is at most ``limit`` records on and never past
   the high watermark read in step 2: the browser never waits for new data;
4. a Consumer ``assign()``-ed to those ranges (no group membership, never commits) consumes
   until each partition reached its ``end`` or its end of log (``enable.partition.eof``:
   a range ending in transaction markers, or at the last stable offset of an open
   transaction), or the time budget ran out (``BrowseResult.incomplete``).

With every partition, the records are merged by timestamp and the first ``limit`` kept (the
last ``limit`` for ``latest``). ``_Clients`` says which librdkafka clients are kept.
``produce`` sends one record and waits for its delivery report.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin._listoffsets import OffsetSpec

from franz.console.cluster import ConsoleCluster
from franz.console.messages_format import BrowseQuery, ProduceForm, Shown, iso_time, show_bytes

__all__ = [
    "BrowseResult",
    "BrowsedRecord",
    "PartitionRange",
    "ProduceFailed",
    "TopicNotFound",
    "browse",
    "produce",
]

#: The most a page spends consuming (the console's timeout may be longer).
BROWSE_BUDGET_S: Final = 10.0
_TIMESTAMP_TYPES: Final = {
    TIMESTAMP_CREATE_TIME: "CreateTime",
    TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime",
}


class TopicNotFound(LookupError):
    """The topic does not exist (UNKNOWN_TOPIC_OR_PARTITION)."""


class ProduceFailed(Exception):
    """A produce the cluster refused: ``str()`` is Kafka's error name and message."""


@dataclass(frozen=True)
class PartitionRange:
    """What the page read of one partition: its log start offset (``low``), high watermark
    (``high``) and the range ``[start, end)`` asked for."""

    partition: int
    low: int
    high: int
    start: int
    end: int


@dataclass(frozen=True)
class BrowsedRecord:
    partition: int
    offset: int
    timestamp_ms: int | None
    timestamp_type: str  # CreateTime, LogAppendTime or NoTimestampType (Kafka's names)
    key: Shown
    value: Shown
    headers: list[tuple[str, Shown]]

    @property
    def iso(self) -> str:
        return "" if self.timestamp_ms is None else iso_time(self.timestamp_ms)


@dataclass
class BrowseResult:
    topic: str
    partitions: list[int]
    ranges: list[PartitionRange]
    records: list[BrowsedRecord] = field(default_factory=list)
    #: True when the time budget ran out before every range was read.
    incomplete: bool = False


class _Clients:
    """The librdkafka clients of one console. A new consumer per page (measured: creating,
    assigning and closing one costs under 10 ms on loopback, and a re-assigned long-lived
    one was slower, ~100 ms, waiting out its previous fetch state); one producer for the
    console's lifetime, made on first use (producers are thread-safe and meant to live)."""

    def __init__(self, cluster: ConsoleCluster) -> None:
        self.cluster = cluster
        self._producer: Producer | None = None

    def new_consumer(self) -> Consumer:
        return self.cluster.consumer(
            **{
                "enable.partition.eof": True,
                # at a range's end a fetch would otherwise wait up to 500 ms for data
                "fetch.wait.max.ms": 50,
                "auto.offset.reset": "earliest",
            }
        )

    def producer(self) -> Producer:
        if self._producer is None:
            self._producer = self.cluster.producer(
                **{"message.timeout.ms": int(self.cluster.timeout_s * 1000), "linger.ms": 0}
            )
        return self._producer


_POOL: Final[weakref.WeakKeyDictionary[ConsoleCluster, _Clients]] = weakref.WeakKeyDictionary()
_POOL_LOCK: Final = threading.Lock()


def _clients(cluster: ConsoleCluster) -> _Clients:
    with _POOL_LOCK:
        clients = _POOL.get(cluster)
        if clients is None:
            clients = _POOL[cluster] = _Clients(cluster)
        return clients


def _kafka_text(error: KafkaError) -> str:
    return f"{error.name()}: {error.str()}"


def _partitions(cluster: ConsoleCluster, topic: str) -> list[int]:
    """The topic's partitions. DescribeTopics (a Metadata request that never auto-creates
    the topic, unlike a producer-type handle's ``list_topics(topic)``)."""
    futures = cluster.admin.describe_topics(
        TopicCollection([topic]), request_timeout=cluster.timeout_s
    )
    try:
        described = futures[topic].result(cluster.timeout_s + 5)
    except KafkaException as exc:
        if exc.args[0].code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
            raise TopicNotFound(topic) from None
        raise
    return sorted(p.id for p in described.partitions)


def _list_offsets(
    cluster: ConsoleCluster, topic: str, partitions: list[int], spec: Any
) -> dict[int, int]:
    futures = cluster.admin.list_offsets(
        {TopicPartition(topic, p): spec for p in partitions}, request_timeout=cluster.timeout_s
    )
    return {tp.partition: f.result(cluster.timeout_s + 5).offset for tp, f in futures.items()}


def plan_ranges(
    partitions: list[int],
    low: dict[int, int],
    high: dict[int, int],
    query: BrowseQuery,
    at_time: dict[int, int] | None = None,
) -> list[PartitionRange]:
    """Each partition's ``[start, end)`` for ``query`` (module docstring, step 3)."""
    ranges = []
    for p in partitions:
        lo, hi = low[p], high[p]
        if query.start == "earliest":
            start = lo
        elif query.start == "latest":
            start = max(lo, hi - query.limit)
        elif query.start == "offset":
            start = min(max(query.offset or 0, lo), hi)
        else:
            found = (at_time or {}).get(p, -1)
            start = hi if found < 0 else min(max(found, lo), hi)
        ranges.append(PartitionRange(p, lo, hi, start, min(hi, start + query.limit)))
    return ranges


def browse(cluster: ConsoleCluster, topic: str, query: BrowseQuery) -> BrowseResult:
    """A page of ``topic``'s records for ``query`` (module docstring); blocking."""
    partitions = _partitions(cluster, topic)
    shown = [p for p in partitions if query.partition in (None, p)]
    if query.partition is not None and not shown:
        raise ValueError(f"topic {topic!r} has no partition {query.partition}")
    low = _list_offsets(cluster, topic, shown, OffsetSpec.earliest())  # type: ignore[no-untyped-call]
    high = _list_offsets(cluster, topic, shown, OffsetSpec.latest())  # type: ignore[no-untyped-call]
    at_time = None
    if query.start == "timestamp" and query.timestamp_ms is not None:
        at_time = _list_offsets(cluster, topic, shown, OffsetSpec.for_timestamp(query.timestamp_ms))
    ranges = plan_ranges(shown, low, high, query, at_time)
    result = BrowseResult(topic, partitions, ranges)
    wanted = [r for r in ranges if r.start < r.end]
    if wanted:
        clients = _clients(cluster)
        consumer = clients.new_consumer()
        try:
            messages, result.incomplete = _consume(consumer, topic, wanted)
        finally:
            consumer.close()
        result.records = [_record(m, query) for m in _page(messages, query)]
    return result


def _consume(
    consumer: Consumer, topic: str, ranges: list[PartitionRange]
) -> tuple[list[Any], bool]:
    ends = {r.partition: r.end for r in ranges}
    next_offsets = {r.partition: r.start for r in ranges}
    consumer.assign([TopicPartition(topic, r.partition, r.start) for r in ranges])
    records: list[Any] = []  # confluent_kafka.Message, formatted once a page is chosen
    deadline = time.monotonic() + BROWSE_BUDGET_S
    try:
        while ends and time.monotonic() < deadline:
            # consume() returns when it has num_messages or after timeout: ask for at most
            # what is still due, so a page never waits out the timeout for records that
            # cannot come (unless offsets are missing: compaction, transaction markers)
            due = sum(ends[p] - next_offsets[p] for p in ends)
            for message in consumer.consume(num_messages=max(1, min(due, 1000)), timeout=0.05):
                partition = message.partition()
                if message.topic() != topic or partition not in ends:
                    continue
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        del ends[partition]
                        continue
                    raise KafkaException(error)
                offset = int(message.offset() or 0)
                if offset >= ends[partition]:
                    del ends[partition]
                    continue
                next_offsets[partition] = offset + 1
                records.append(message)
                if offset + 1 >= ends[partition]:
                    del ends[partition]
    finally:
        consumer.unassign()
    return records, bool(ends)


def _record(message: Any, query: BrowseQuery) -> BrowsedRecord:
    kind, timestamp = message.timestamp()
    headers = message.headers() or []
    return BrowsedRecord(
        partition=message.partition(),
        offset=message.offset(),
        timestamp_ms=timestamp if kind in _TIMESTAMP_TYPES else None,
        timestamp_type=_TIMESTAMP_TYPES.get(kind, "NoTimestampType"),
        key=show_bytes(message.key(), query.format, query.full),
        value=show_bytes(message.value(), query.format, query.full),
        headers=[(str(k), show_bytes(v, query.format, query.full)) for k, v in headers],
    )


def _page(messages: list[Any], query: BrowseQuery) -> list[Any]:
    """One partition: offset order. Every partition: merged by timestamp (then partition and
    offset), the first ``limit`` kept, or the last ``limit`` for ``latest``."""
    if query.partition is not None:
        return sorted(messages, key=lambda m: m.offset())
    merged = sorted(messages, key=lambda m: (m.timestamp()[1], m.partition(), m.offset()))
    return merged[-query.limit :] if query.start == "latest" else merged[: query.limit]


def produce(cluster: ConsoleCluster, topic: str, form: ProduceForm) -> tuple[int, int]:
    """Produce one record to an existing topic (``TopicNotFound`` otherwise) and wait for
    its delivery report: ``(partition, offset)``, or ``ProduceFailed`` with Kafka's error
    name and message."""
    _partitions(cluster, topic)  # never auto-create a topic by producing to it
    producer = _clients(cluster).producer()
    outcome: list[tuple[KafkaError | None, Any]] = []

    def delivered(error: KafkaError | None, message: Any) -> None:
        outcome.append((error, message))

    kwargs: dict[str, Any] = {"value": form.value, "on_delivery": delivered}
    if form.key is not None:
        kwargs["key"] = form.key
    if form.headers:
        kwargs["headers"] = form.headers
    if form.partition is not None:
        kwargs["partition"] = form.partition
    try:
        producer.produce(topic, **kwargs)
    except KafkaException as exc:
        raise ProduceFailed(_kafka_text(exc.args[0])) from None
    except BufferError as exc:
        raise ProduceFailed(f"_QUEUE_FULL: {exc}") from None
    deadline = time.monotonic() + cluster.timeout_s
    while not outcome and time.monotonic() < deadline:
        producer.poll(0.05)
    if not outcome:
        raise ProduceFailed("_MSG_TIMED_OUT: no delivery report within the console's timeout")
    error, message = outcome[0]
    if error is not None:
        raise ProduceFailed(_kafka_text(error))
    return int(message.partition()), int(message.offset())
