"""prometheus_client collectors of the broker's traffic (``franz.metrics.traffic``) and logs:
``BrokerTopicMetricsCollector`` (``kafka.server:type=BrokerTopicMetrics``),
``RequestMetricsCollector`` (``kafka.network:type=RequestMetrics``, ``type=RequestChannel``,
``type=SocketServer`` and ``kafka.server:type=KafkaRequestHandlerPool``), ``LogCollector``
(``kafka.log:type=Log`` per partition, computed at scrape, and ``type=LogFlushStats``).

Names come from the JMX exporter's rules (``franz.metrics.names``): a meter's ``Count`` is a
``..._total`` counter; a histogram's or timer's ``Count`` is ``..._count`` and its
``NNthPercentile`` attributes the base name with a ``quantile`` label (``0.50`` ... ``0.999``),
exported here as one summary family without ``_sum`` (the rules export none).

``RequestQueueSize`` in Franz: requests framed but not yet handed to their handler. Franz
hands a request over in the loop step that frames it, so only the requests held by a
connection muted for a client quota count (``KafkaConnection.held_requests``); Kafka's
queue between its network and handler threads has no other equivalent here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector, CollectorRegistry

from franz.metrics.collectors import KafkaMetric, family
from franz.metrics.histogram import Histogram
from franz.metrics.names import MBean, exported_sample
from franz.metrics.traffic import (
    LOG_FLUSH_STATS,
    BrokerTopicStats,
    LoopIdle,
    RequestMetricsRegistry,
    TopicMetrics,
)
from franz.storage.files import TopicPartition

__all__ = [
    "TRAFFIC_METRICS",
    "BrokerTopicMetricsCollector",
    "LogCollector",
    "LogView",
    "RequestMetricsCollector",
    "TrafficSources",
    "histogram_family",
    "register_traffic",
]


def _meter(domain: str, type_: str, name: str, help_: str, *tags: str) -> KafkaMetric:
    return KafkaMetric(MBean(domain, type_, name, tags), "Count", help_)


_BTM = "BrokerTopicMetrics"
#: (TopicMetrics attribute, Kafka meter name, help), all topics and per topic.
TOPIC_METERS: Final = (
    ("messages_in", "MessagesInPerSec", "Records appended by this broker as leader"),
    ("bytes_in", "BytesInPerSec", "Bytes of records appended as leader, as produced"),
    ("bytes_out", "BytesOutPerSec", "Bytes of records sent to consumers in Fetch responses"),
    ("bytes_rejected", "BytesRejectedPerSec", "Bytes refused for exceeding max.message.bytes"),
    ("total_produce_requests", "TotalProduceRequestsPerSec", "Produce partitions handled"),
    ("total_fetch_requests", "TotalFetchRequestsPerSec", "Fetch partitions answered"),
    ("failed_produce_requests", "FailedProduceRequestsPerSec", "Produce partitions failed"),
    ("failed_fetch_requests", "FailedFetchRequestsPerSec", "Fetch partitions failed"),
    (
        "produce_message_conversions",
        "ProduceMessageConversionsPerSec",
        "Records up-converted from Produce v0-2",
    ),
)
_TOPIC_METRICS: Final = tuple(
    (
        attr,
        _meter("kafka.server", _BTM, name, help_),
        _meter("kafka.server", _BTM, name, help_, "topic"),
    )
    for attr, name, help_ in TOPIC_METERS
)
REPLICATION_BYTES_IN: Final = _meter(
    "kafka.server", _BTM, "ReplicationBytesInPerSec", "Bytes a follower appended from leaders"
)
REPLICATION_BYTES_OUT: Final = _meter(
    "kafka.server", _BTM, "ReplicationBytesOutPerSec", "Bytes of records sent to followers"
)


class BrokerTopicMetricsCollector(Collector):
    """``kafka.server:type=BrokerTopicMetrics``: all topics (no label) and per topic (label
    ``topic``) in one family per meter."""

    def __init__(self, stats: Callable[[], BrokerTopicStats]) -> None:
        self.stats = stats

    def collect(self) -> Iterator[Metric]:
        stats = self.stats()
        topics: list[tuple[str, TopicMetrics]] = sorted(stats.topics.items())
        for attr, every, per_topic in _TOPIC_METRICS:
            result = family(every, [((), getattr(stats.all_topics, attr))])
            assert result is not None
            for name, topic in topics:
                exported = exported_sample(per_topic.bean, "Count", (name,))
                assert exported is not None
                result.add_sample(exported.name, dict(exported.labels), getattr(topic, attr))
            yield result
        for metric, value in (
            (REPLICATION_BYTES_IN, stats.replication_bytes_in),
            (REPLICATION_BYTES_OUT, stats.replication_bytes_out),
        ):
            result = family(metric, [((), value)])
            assert result is not None
            yield result


def _histogram_bean(domain: str, type_: str, name: str, *tags: str) -> MBean:
    return MBean(domain, type_, name, tags)


def histogram_family(
    bean: MBean, help_: str, samples: Iterable[tuple[Sequence[str], Histogram]]
) -> Metric | None:
    """One summary family of Yammer histograms (module docstring): per tag values, the
    percentile gauges and the ``_count``; None with no sample."""
    result: Metric | None = None
    for tags, histogram in samples:
        tag_values = tuple(tags)
        count = exported_sample(bean, "Count", tag_values)
        if count is None:
            raise ValueError(f"no JMX exporter rule names {bean.object_name(tags)} Count")
        if result is None:
            base = count.name[: -len("_count")]
            result = Metric(base, f"{help_} ({bean.object_name()})", "summary")
        for attribute, value in histogram.percentiles():
            exported = exported_sample(bean, f"{attribute}thPercentile", tag_values)
            assert exported is not None
            result.add_sample(exported.name, dict(exported.labels), value)
        result.add_sample(count.name, dict(count.labels), histogram.count)
    return result


_RM = "RequestMetrics"
REQUESTS_PER_SEC: Final = _meter(
    "kafka.network", _RM, "RequestsPerSec", "Requests handled", "request", "version"
)
#: (RequestMetrics attribute, Kafka histogram name, help).
REQUEST_HISTOGRAMS: Final = (
    ("total_time", "TotalTimeMs", "Request total time in ms"),
    ("request_queue_time", "RequestQueueTimeMs", "Time framed before its handler ran, ms"),
    ("local_time", "LocalTimeMs", "Time in its handler on the event loop, ms"),
    ("remote_time", "RemoteTimeMs", "Time waiting (purgatory, coordinators), ms"),
    ("response_send_time", "ResponseSendTimeMs", "Time encoding and framing the response, ms"),
)
REQUEST_QUEUE_SIZE: Final = KafkaMetric(
    MBean("kafka.network", "RequestChannel", "RequestQueueSize"),
    "Value",
    "Requests framed and not yet handed to their handler (held by a quota mute)",
)
NETWORK_IDLE: Final = KafkaMetric(
    MBean("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent"),
    "Value",
    "Fraction of the last minute the broker's event loop waited for I/O (0-1)",
)
HANDLER_IDLE: Final = _meter(
    "kafka.server",
    "KafkaRequestHandlerPool",
    "RequestHandlerAvgIdlePercent",
    "Nanoseconds the broker's event loop waited for I/O; rate/1e9 is the idle fraction",
)


class RequestMetricsCollector(Collector):
    """``RequestMetrics`` per request name, and the request queue and idle metrics
    (``franz.metrics.traffic.LoopIdle`` says what idle is here)."""

    def __init__(
        self,
        requests: Callable[[], RequestMetricsRegistry],
        queue_size: Callable[[], int],
        idle: LoopIdle | None,
    ) -> None:
        self.requests = requests
        self.queue_size = queue_size
        self.idle = idle

    def collect(self) -> Iterator[Metric]:
        by_name = sorted(self.requests().by_name.items())
        rates = family(
            REQUESTS_PER_SEC,
            [
                ((name, str(version)), count)
                for name, metrics in by_name
                for version, count in sorted(metrics.requests.items())
            ],
        )
        if rates is not None:
            yield rates
        for attr, histogram_name, help_ in REQUEST_HISTOGRAMS:
            bean = _histogram_bean("kafka.network", _RM, histogram_name, "request")
            result = histogram_family(
                bean, help_, [((name,), getattr(metrics, attr)) for name, metrics in by_name]
            )
            if result is not None:
                yield result
        queue = family(REQUEST_QUEUE_SIZE, [((), self.queue_size())])
        assert queue is not None
        yield queue
        if self.idle is not None:
            idle = self.idle
            for metric, value in (
                (NETWORK_IDLE, idle.idle_fraction()),
                (HANDLER_IDLE, idle.idle_ns),
            ):
                result = family(metric, [((), value)])
                assert result is not None
                yield result


def _tagged_family(
    metric: KafkaMetric, samples: Sequence[tuple[tuple[str, ...], float]]
) -> Metric | None:
    """``family`` for many samples of one gauge whose rule turns each tag into a label of
    the same name and value (the JMX exporter's generic gauge rules): the rules are applied
    to the first sample and, when they give exactly that, reused for the others; otherwise
    each sample goes through ``family``. A scrape of thousands of partitions then costs one
    rule match per gauge, not per partition."""
    if not samples:
        return None
    keys = metric.bean.tag_keys
    first_tags = samples[0][0]
    exported = exported_sample(metric.bean, metric.attribute, first_tags)
    if exported is None or exported.labels != tuple(zip(keys, first_tags, strict=True)):
        return family(metric, samples)
    result = family(metric, samples[:1])
    assert result is not None
    name = exported.name
    for tags, value in samples[1:]:
        result.add_sample(name, dict(zip(keys, tags, strict=True)), value)
    return result


class LogView(Protocol):
    """What ``LogCollector`` reads of ``franz.storage.log.Log``."""

    @property
    def size_in_bytes(self) -> int: ...
    @property
    def segments(self) -> Sequence[object]: ...
    @property
    def log_start_offset(self) -> int: ...
    @property
    def log_end_offset(self) -> int: ...
    @property
    def offline(self) -> bool: ...


def _log_gauge(name: str, help_: str) -> KafkaMetric:
    return KafkaMetric(MBean("kafka.log", "Log", name, ("topic", "partition")), "Value", help_)


LOG_GAUGES: Final = (
    (_log_gauge("Size", "Bytes of the partition's segments"), lambda log: log.size_in_bytes),
    (_log_gauge("NumLogSegments", "Segments of the partition"), lambda log: len(log.segments)),
    (
        _log_gauge("LogStartOffset", "The partition's log start offset"),
        lambda log: log.log_start_offset,
    ),
    (_log_gauge("LogEndOffset", "The partition's log end offset"), lambda log: log.log_end_offset),
)
LOG_FLUSH: Final = MBean("kafka.log", "LogFlushStats", "LogFlushRateAndTimeMs")


class LogCollector(Collector):
    """``kafka.log:type=Log,name=Size|NumLogSegments|LogStartOffset|LogEndOffset`` per
    replica hosted here (leader or follower, as Kafka registers them per ``UnifiedLog``; a
    log on a failed dir has none) and ``LogFlushStats``."""

    def __init__(self, logs: Callable[[], Mapping[TopicPartition, LogView]]) -> None:
        self.logs = logs

    def collect(self) -> Iterator[Metric]:
        logs = [
            ((tp.topic, str(tp.partition)), log)
            for tp, log in sorted(self.logs().items())
            if not log.offline
        ]
        for metric, value in LOG_GAUGES:
            result = _tagged_family(metric, [(tags, value(log)) for tags, log in logs])
            if result is not None:
                yield result
        flush = histogram_family(
            LOG_FLUSH, "Log flushes (fsync), ms", [((), LOG_FLUSH_STATS.timer)]
        )
        assert flush is not None
        yield flush


def _histogram_metrics(bean: MBean, help_: str) -> tuple[KafkaMetric, KafkaMetric]:
    """A histogram's two exported forms (module docstring): its ``Count`` (``..._count``)
    and a percentile (the base name; every percentile shares it, with its ``quantile``)."""
    return KafkaMetric(bean, "Count", help_), KafkaMetric(bean, "50thPercentile", help_)


#: Every Kafka MBean attribute these collectors export, for ``franz.metrics.catalog``.
TRAFFIC_METRICS: Final[tuple[KafkaMetric, ...]] = (
    *(metric for _, every, per_topic in _TOPIC_METRICS for metric in (every, per_topic)),
    REPLICATION_BYTES_IN,
    REPLICATION_BYTES_OUT,
    REQUESTS_PER_SEC,
    *(
        metric
        for _, name, help_ in REQUEST_HISTOGRAMS
        for metric in _histogram_metrics(
            _histogram_bean("kafka.network", _RM, name, "request"), help_
        )
    ),
    REQUEST_QUEUE_SIZE,
    NETWORK_IDLE,
    HANDLER_IDLE,
    *(metric for metric, _ in LOG_GAUGES),
    *_histogram_metrics(LOG_FLUSH, "Log flushes (fsync), ms"),
)


@dataclass(frozen=True, slots=True)
class TrafficSources:
    """Where the traffic collectors read, as callables giving the live objects: the replica
    manager's ``BrokerTopicStats``, the dispatcher's ``RequestMetricsRegistry``, the count of
    held requests over every listener, and the hosted logs."""

    topic_stats: Callable[[], BrokerTopicStats]
    request_metrics: Callable[[], RequestMetricsRegistry]
    queue_size: Callable[[], int]
    logs: Callable[[], Mapping[TopicPartition, LogView]]


def register_traffic(
    registry: CollectorRegistry, sources: TrafficSources, idle: LoopIdle | None
) -> None:
    registry.register(BrokerTopicMetricsCollector(sources.topic_stats))
    registry.register(RequestMetricsCollector(sources.request_metrics, sources.queue_size, idle))
    registry.register(LogCollector(sources.logs))
