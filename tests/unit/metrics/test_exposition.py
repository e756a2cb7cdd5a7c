"""``encode_text`` writes exactly what prometheus_client's ``generate_latest`` writes (the
text format 0.0.4), for Franz's families and for the ones it hands over."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, Info, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from franz.metrics.exposition import encode_text
from franz.metrics.traffic import BrokerTopicStats, LoopIdle, RequestMetricsRegistry
from franz.metrics.traffic_collectors import TrafficSources, register_traffic
from franz.storage.files import TopicPartition


class _Log:
    size_in_bytes = 123_456_789
    segments = (1, 2)
    log_start_offset = 0
    log_end_offset = 10**12
    offline = False


class _Odd(Collector):
    """Label values that need escaping, an untyped family, a value Go writes as +Inf."""

    def collect(self) -> Iterator[Metric]:
        gauge = Metric("odd_gauge", 'help with \\ and\nnewline and "quotes"', "gauge")
        gauge.add_sample("odd_gauge", {"b": 'quote " here', "a": "back\\slash\nnl"}, 1.5)
        gauge.add_sample("odd_gauge", {}, float("inf"))
        yield gauge
        untyped = Metric("odd_untyped", "untyped", "unknown")
        untyped.add_sample("odd_untyped", {"x": "1"}, -0.0)
        yield untyped


def _registry() -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    stats = BrokerTopicStats()
    for t in ("a", "b-1", "c.d"):
        stats.appended(stats.produce_request(t), 10**7 + 1, 3)
    requests = RequestMetricsRegistry()
    for ms in range(40):
        requests.get("Produce").record(9, 0, ms * 1_000_000, 0, 0)
    logs = {TopicPartition("a", p): _Log() for p in range(4)}
    sources = TrafficSources(lambda: stats, lambda: requests, lambda: 1, lambda: logs)
    register_traffic(registry, sources, LoopIdle())
    registry.register(_Odd())
    # Families encode_text hands to generate_latest: _created samples, histogram, info.
    Counter("plain_counter", "a counter", ["l"], registry=registry).labels("v").inc(2)
    Histogram("plain_histogram", "a histogram", registry=registry).observe(0.3)
    Info("plain_info", "an info", registry=registry).info({"version": "1"})
    return registry


def test_the_same_bytes_as_generate_latest() -> None:
    registry = _registry()
    assert encode_text(registry) == generate_latest(registry)


def test_an_empty_registry() -> None:
    registry = CollectorRegistry(auto_describe=False)
    assert encode_text(registry) == generate_latest(registry) == b""
