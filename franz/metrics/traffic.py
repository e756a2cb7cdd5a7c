"""The broker's traffic counts, kept where the traffic happens and read at scrape time: Kafka's
``BrokerTopicStats`` (``kafka.server:type=BrokerTopicMetrics``), ``RequestChannel``'s
``RequestMetrics`` (``kafka.network:type=RequestMetrics``), ``LogFlushStats``, and the event
loop's idle time (Franz's equivalent of the network processors' and request handlers' idle
meters). Pure: no franz imports, so the storage, cluster and broker layers may all count into
it.

Cost rules (the hot paths stay cheap): counts are plain ``int`` attributes of slotted objects
owned by the event loop: no lock, no allocation per request; produce and fetch count per
partition per request with sizes and record counts from the batch headers and file ranges
already at hand (never per record). Only the ``Count`` of Kafka's meters is kept: it is all the
JMX exporter's rules export (``franz.metrics.names``); Prometheus computes the rates.

Kafka 3.9's accounting, followed here:

* ``MessagesInPerSec``, ``BytesInPerSec`` (``ReplicaManager.appendToLocalLog``): per leader
  append that succeeded, the records' size in bytes as the request carried them (whole
  batches, their 12-byte log overhead included) and ``LogAppendInfo.numMessages`` (last offset
  minus first offset plus one: a retried duplicate counts again, as in Kafka). Appends by the
  group and transaction coordinators and the transaction markers go through the same path and
  count too; a follower's appends do not (they are ``ReplicationBytesInPerSec``, all topics
  only).
* ``TotalProduceRequestsPerSec``: one per partition of a Produce reaching the append (plus the
  coordinators' appends), whatever the outcome. ``FailedProduceRequestsPerSec``: those that
  failed for an unexpected reason: not UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
  MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, CORRUPT_MESSAGE or KAFKA_STORAGE_ERROR, which
  Kafka leaves out ("it is supposed to indicate un-expected failures").
* ``BytesRejectedPerSec``: the records' size when a batch is above ``max.message.bytes``
  (``UnifiedLog.analyzeAndValidateRecords``).
* ``BytesOutPerSec`` (``KafkaApis.handleFetchRequest``, ``BrokerTopicStats.updateBytesOut``):
  the records' size of each partition of a Fetch response to a consumer, when the response is
  built; to a follower they are ``ReplicationBytesOutPerSec`` (all topics only).
* ``TotalFetchRequestsPerSec``: one per partition of a Fetch response (Kafka marks it per
  partition read); ``FailedFetchRequestsPerSec``: partitions whose read failed for a reason
  other than the known ones (``ReplicaManager.readFromLocalLog``).
* ``ProduceMessageConversionsPerSec``: records up-converted from Produce v0-2 message sets
  and appended. ``FetchMessageConversionsPerSec`` is not kept (Kafka counts the records
  down-converted for Fetch v0-3; Franz's down-conversion does not count them yet).
* ``TotalFetchRequestsPerSec`` and the rest skip partitions of topics Kafka answers before
  the read (not authorized, unknown), so no per-topic counts appear for names no topic has.

A deleted topic's per-topic counts are dropped (``BrokerTopicStats.removeMetrics``).
"""

from __future__ import annotations

import time
from collections import deque
from typing import Final

from franz.metrics.histogram import Histogram

__all__ = [
    "EXPECTED_FETCH_ERRORS",
    "EXPECTED_PRODUCE_ERRORS",
    "LOG_FLUSH_STATS",
    "BrokerTopicStats",
    "LoopIdle",
    "RequestMetrics",
    "RequestMetricsRegistry",
    "TopicMetrics",
    "request_name",
]

#: Error codes a failed produce partition does not count as failed (module docstring):
#: UNKNOWN_TOPIC_OR_PARTITION 3, NOT_LEADER_OR_FOLLOWER 6, MESSAGE_TOO_LARGE 10,
#: RECORD_LIST_TOO_LARGE 18, CORRUPT_MESSAGE 2, KAFKA_STORAGE_ERROR 56.
EXPECTED_PRODUCE_ERRORS: Final = frozenset({2, 3, 6, 10, 18, 56})
#: Error codes a fetched partition does not count as failed: UNKNOWN_TOPIC_OR_PARTITION 3,
#: NOT_LEADER_OR_FOLLOWER 6, UNKNOWN_LEADER_EPOCH 75, FENCED_LEADER_EPOCH 74,
#: REPLICA_NOT_AVAILABLE 9, KAFKA_STORAGE_ERROR 56, INCONSISTENT_TOPIC_ID 103,
#: OFFSET_OUT_OF_RANGE 1 (``handleOffsetOutOfRangeError``), and the ones Kafka answers before
#: the read (TOPIC_AUTHORIZATION_FAILED 29, UNKNOWN_TOPIC_ID 100,
#: UNSUPPORTED_COMPRESSION_TYPE 76).
EXPECTED_FETCH_ERRORS: Final = frozenset({1, 3, 6, 9, 29, 56, 74, 75, 76, 100, 103})
#: UNKNOWN_TOPIC_OR_PARTITION, TOPIC_AUTHORIZATION_FAILED, UNKNOWN_TOPIC_ID: not counted.
_ANSWERED_BEFORE_READ: Final = frozenset({3, 29, 100})


class TopicMetrics:
    """The counts of one topic's ``BrokerTopicMetrics`` (or of all topics): each the
    ``Count`` of the Kafka meter named in the comment."""

    __slots__ = (
        "bytes_in",
        "bytes_out",
        "bytes_rejected",
        "failed_fetch_requests",
        "failed_produce_requests",
        "messages_in",
        "produce_message_conversions",
        "total_fetch_requests",
        "total_produce_requests",
    )

    def __init__(self) -> None:
        self.messages_in = 0  # MessagesInPerSec
        self.bytes_in = 0  # BytesInPerSec
        self.bytes_out = 0  # BytesOutPerSec
        self.bytes_rejected = 0  # BytesRejectedPerSec
        self.total_produce_requests = 0  # TotalProduceRequestsPerSec
        self.total_fetch_requests = 0  # TotalFetchRequestsPerSec
        self.failed_produce_requests = 0  # FailedProduceRequestsPerSec
        self.failed_fetch_requests = 0  # FailedFetchRequestsPerSec
        self.produce_message_conversions = 0  # ProduceMessageConversionsPerSec


class BrokerTopicStats:
    """Kafka's ``BrokerTopicStats``: ``all_topics`` and one ``TopicMetrics`` per topic seen,
    plus the all-topics-only replication counts (module docstring)."""

    __slots__ = ("all_topics", "replication_bytes_in", "replication_bytes_out", "topics")

    def __init__(self) -> None:
        self.all_topics = TopicMetrics()
        self.topics: dict[str, TopicMetrics] = {}
        self.replication_bytes_in = 0  # ReplicationBytesInPerSec
        self.replication_bytes_out = 0  # ReplicationBytesOutPerSec

    def topic(self, name: str) -> TopicMetrics:
        stats = self.topics.get(name)
        if stats is None:
            stats = self.topics[name] = TopicMetrics()
        return stats

    def remove_topic(self, name: str) -> None:
        """The topic was deleted (``BrokerTopicStats.removeMetrics``)."""
        self.topics.pop(name, None)

    # -- produce (leader appends) ---------------------------------------------------------

    def produce_request(self, topic: str) -> TopicMetrics:
        """A partition reaches the append: ``TotalProduceRequestsPerSec``; returns the topic's
        counts for the outcome."""
        stats = self.topic(topic)
        stats.total_produce_requests += 1
        self.all_topics.total_produce_requests += 1
        return stats

    def appended(self, stats: TopicMetrics, size: int, messages: int) -> None:
        stats.bytes_in += size
        stats.messages_in += messages
        every = self.all_topics
        every.bytes_in += size
        every.messages_in += messages

    def produce_failed(self, stats: TopicMetrics, code: int) -> None:
        if code not in EXPECTED_PRODUCE_ERRORS:
            stats.failed_produce_requests += 1
            self.all_topics.failed_produce_requests += 1

    def rejected(self, stats: TopicMetrics, size: int) -> None:
        stats.bytes_rejected += size
        self.all_topics.bytes_rejected += size

    def produce_converted(self, topic: str, records: int) -> None:
        self.topic(topic).produce_message_conversions += records
        self.all_topics.produce_message_conversions += records

    # -- fetch ----------------------------------------------------------------------------

    def fetched(self, topic: str, code: int, size: int, follower: bool) -> None:
        """One partition of a Fetch response: ``code`` its error, ``size`` its records'
        bytes."""
        if code in _ANSWERED_BEFORE_READ:
            return
        stats = self.topic(topic)
        every = self.all_topics
        stats.total_fetch_requests += 1
        every.total_fetch_requests += 1
        if code and code not in EXPECTED_FETCH_ERRORS:
            stats.failed_fetch_requests += 1
            every.failed_fetch_requests += 1
        if size:
            if follower:
                self.replication_bytes_out += size
            else:
                stats.bytes_out += size
                every.bytes_out += size


def request_name(api_key_name: str) -> str:
    """Kafka's ``ApiKeys.name`` (the message's JSON name) from the enum's: ``LIST_OFFSETS`` ->
    ``ListOffsets``."""
    return "".join(part.capitalize() for part in api_key_name.split("_"))


class RequestMetrics:
    """One request name's ``kafka.network:type=RequestMetrics`` (``RequestChannel``'s
    ``RequestMetrics``): ``RequestsPerSec`` per version (KIP-272) and the time histograms, in
    ms rounded as Kafka rounds them (``Math.round``: half up).

    What the times are in Franz (one event loop, no queues between threads): a request is
    handed to its handler in the loop step that frames it, so ``RequestQueueTimeMs`` is 0
    except for requests a connection muted for a client quota held back (KIP-219): their
    wait. ``LocalTimeMs``: decoding the request and its handler's synchronous run on the
    loop. ``RemoteTimeMs``: from then until its result is ready
    (a long-polling Fetch, an acks=all Produce waiting for followers, a coordinator's wait:
    Kafka's purgatory). ``ResponseSendTimeMs``: encoding the response and framing it, after
    which the bytes are the transport's (asyncio writes them, or ``sendfile`` sends the
    file ranges, without further work of the broker's). ``TotalTimeMs``: their sum.
    """

    __slots__ = (
        "local_time",
        "remote_time",
        "request_queue_time",
        "requests",
        "response_send_time",
        "total_time",
    )

    def __init__(self) -> None:
        #: version -> count (``RequestsPerSec,request=...,version=...`` Count).
        self.requests: dict[int, int] = {}
        self.request_queue_time = Histogram()
        self.local_time = Histogram()
        self.remote_time = Histogram()
        self.response_send_time = Histogram()
        self.total_time = Histogram()

    def record(
        self, version: int, queue_ns: int, local_ns: int, remote_ns: int, send_ns: int
    ) -> None:
        requests = self.requests
        requests[version] = requests.get(version, 0) + 1
        # Java's Math.round of the ms: half up, in integer arithmetic.
        self.request_queue_time.update((queue_ns + 500_000) // 1_000_000)
        self.local_time.update((local_ns + 500_000) // 1_000_000)
        self.remote_time.update((remote_ns + 500_000) // 1_000_000)
        self.response_send_time.update((send_ns + 500_000) // 1_000_000)
        self.total_time.update((queue_ns + local_ns + remote_ns + send_ns + 500_000) // 1_000_000)


class RequestMetricsRegistry:
    """``RequestMetrics`` by Kafka's request name, made on first use. A Fetch counts under
    ``Fetch`` and under ``FetchConsumer`` or ``FetchFollower`` (``RequestChannel``'s
    ``fetchMetricNames``)."""

    __slots__ = ("by_name",)

    def __init__(self) -> None:
        self.by_name: dict[str, RequestMetrics] = {}

    def get(self, name: str) -> RequestMetrics:
        metrics = self.by_name.get(name)
        if metrics is None:
            metrics = self.by_name[name] = RequestMetrics()
        return metrics


class _LogFlushStats:
    """``kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs``: a timer of the log
    flushes (fsyncs of segments below the new recovery point), in ms. Process-wide, as
    Kafka's ``LogFlushStats`` object is per JVM."""

    __slots__ = ("timer",)

    def __init__(self) -> None:
        self.timer = Histogram()

    def flushed(self, elapsed_ns: int) -> None:
        self.timer.update(elapsed_ns / 1e6)


LOG_FLUSH_STATS: Final = _LogFlushStats()

#: How far back ``LoopIdle.idle_fraction`` looks (Kafka's gauges read one-minute rates).
IDLE_WINDOW_S: Final = 60.0


class LoopIdle:
    """Time the broker's event loop spent waiting in its selector for I/O or timers: Franz's
    network processors and request handlers are that one loop, so its idle time is the
    honest equivalent of both ``NetworkProcessorAvgIdlePercent`` (a gauge, fraction 0-1, over
    about the last minute) and ``RequestHandlerAvgIdlePercent`` (a meter whose ``Count`` is
    idle nanoseconds: Kafka marks each handler's idle time divided by the thread count, so
    ``rate(count) / 1e9`` is the idle fraction). Measured by timing the selector's
    ``select`` (two clock reads per loop iteration); installed only when the metrics endpoint
    is on.
    """

    __slots__ = ("_snapshots", "idle_ns", "started_ns")

    def __init__(self) -> None:
        self.idle_ns = 0
        self.started_ns = time.perf_counter_ns()
        #: (time, idle_ns) taken at scrapes, for the windowed fraction.
        self._snapshots: deque[tuple[int, int]] = deque(maxlen=256)

    def install(self, selector: object | None) -> bool:
        """Time ``selector.select`` (an asyncio ``SelectorEventLoop``'s ``_selector``);
        False when the loop has none (another loop implementation: idle stays 0)."""
        original = getattr(selector, "select", None)
        if original is None:
            return False
        clock = time.perf_counter_ns

        def select(timeout: float | None = None) -> object:
            started = clock()
            try:
                return original(timeout)
            finally:
                self.idle_ns += clock() - started

        selector.select = select  # type: ignore[union-attr]
        self.started_ns = clock()
        return True

    def idle_fraction(self, now_ns: int | None = None) -> float:
        """Idle fraction since the last scrape at least ``IDLE_WINDOW_S`` ago (or the oldest
        one kept, or the start); each call is such a scrape."""
        now = time.perf_counter_ns() if now_ns is None else now_ns
        snapshots = self._snapshots
        horizon = now - int(IDLE_WINDOW_S * 1e9)
        while len(snapshots) > 1 and snapshots[1][0] <= horizon:
            snapshots.popleft()
        since, idle_then = snapshots[0] if snapshots else (self.started_ns, 0)
        snapshots.append((now, self.idle_ns))
        elapsed = now - since
        if elapsed <= 0:
            return 1.0
        return max(0.0, min(1.0, (self.idle_ns - idle_then) / elapsed))
