"""The pure parts of the traffic metrics: the sliding-window histogram and Yammer's
percentiles, ``BrokerTopicStats``' accounting as Kafka 3.9 does it, request names, the loop's
idle fraction, and the collectors' samples as the JMX exporter's rules name them."""

from __future__ import annotations

import statistics
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from franz.metrics.histogram import PERCENTILES, Histogram, quantile
from franz.metrics.names import MBean, exported_sample
from franz.metrics.traffic import (
    LOG_FLUSH_STATS,
    BrokerTopicStats,
    LoopIdle,
    RequestMetricsRegistry,
    request_name,
)
from franz.metrics.traffic_collectors import (
    BrokerTopicMetricsCollector,
    LogCollector,
    RequestMetricsCollector,
)
from franz.protocol.api_keys import ApiKey
from franz.storage.files import TopicPartition
from tests.unit.storage.test_log import batch, make_log

# -- histogram ---------------------------------------------------------------------------


def test_quantile_is_yammers_uniform_snapshot() -> None:
    values = [float(v) for v in range(1, 101)]  # 1..100
    # UniformSnapshot.getValue: rank q * (n + 1), interpolated.
    assert quantile(values, 0.5) == 50.5
    assert quantile(values, 0.75) == 75.75
    assert quantile(values, 0.99) == pytest.approx(99.99)  # rank 99.99: 99 + 0.99 * (100 - 99)
    assert quantile([], 0.5) == 0.0
    assert quantile([7.0], 0.999) == 7.0
    assert quantile([1.0, 2.0], 0.01) == 1.0  # below the first rank: the smallest


def test_quantile_interpolates_between_neighbours() -> None:
    assert quantile([0.0, 10.0, 20.0, 30.0], 0.5) == 15.0  # rank 2.5


def test_histogram_counts_everything_and_keeps_the_last_window() -> None:
    histogram = Histogram(size=10)
    for v in range(25):
        histogram.update(float(v))
    assert histogram.count == 25
    assert sorted(histogram.window()) == [float(v) for v in range(15, 25)]
    percentiles = dict(histogram.percentiles())
    assert [name for name, _ in histogram.percentiles()] == [name for name, _ in PERCENTILES]
    assert 15.0 <= percentiles["50"] <= 24.0
    assert percentiles["999"] == 24.0


def test_histogram_before_its_window_fills() -> None:
    histogram = Histogram(size=1028)
    for v in (3.0, 1.0, 2.0):
        histogram.update(v)
    assert sorted(histogram.window()) == [1.0, 2.0, 3.0]
    assert dict(histogram.percentiles())["50"] == statistics.median([1.0, 2.0, 3.0])
    assert dict(Histogram().percentiles()) == {name: 0.0 for name, _ in PERCENTILES}


# -- BrokerTopicStats ----------------------------------------------------------------------


def test_appends_count_per_topic_and_for_all_topics() -> None:
    stats = BrokerTopicStats()
    t = stats.produce_request("t")
    stats.appended(t, 1000, 10)
    u = stats.produce_request("u")
    stats.appended(u, 500, 5)
    assert (t.messages_in, t.bytes_in, t.total_produce_requests) == (10, 1000, 1)
    every = stats.all_topics
    assert (every.messages_in, every.bytes_in, every.total_produce_requests) == (15, 1500, 2)


def test_only_unexpected_produce_errors_count_as_failed() -> None:
    stats = BrokerTopicStats()
    t = stats.produce_request("t")
    for expected in (2, 3, 6, 10, 18, 56):  # CORRUPT_MESSAGE ... KAFKA_STORAGE_ERROR
        stats.produce_failed(t, expected)
    assert t.failed_produce_requests == 0
    stats.produce_failed(t, 87)  # INVALID_RECORD: Kafka's processFailedRecord counts it
    assert t.failed_produce_requests == stats.all_topics.failed_produce_requests == 1
    stats.rejected(t, 2_000_000)
    assert t.bytes_rejected == stats.all_topics.bytes_rejected == 2_000_000


def test_fetch_bytes_go_to_consumers_or_to_replication() -> None:
    stats = BrokerTopicStats()
    stats.fetched("t", 0, 700, follower=False)
    stats.fetched("t", 0, 300, follower=True)
    stats.fetched("t", 0, 0, follower=False)
    t = stats.topics["t"]
    assert t.bytes_out == stats.all_topics.bytes_out == 700
    assert stats.replication_bytes_out == 300
    assert t.total_fetch_requests == stats.all_topics.total_fetch_requests == 3


def test_fetch_failures_and_partitions_answered_before_the_read() -> None:
    stats = BrokerTopicStats()
    stats.fetched("t", 6, 0, follower=False)  # NOT_LEADER_OR_FOLLOWER: known, not failed
    stats.fetched("t", 1, 0, follower=False)  # OFFSET_OUT_OF_RANGE: known
    stats.fetched("t", -1, 0, follower=False)  # UNKNOWN_SERVER_ERROR: failed
    assert stats.topics["t"].failed_fetch_requests == 1
    assert stats.topics["t"].total_fetch_requests == 3
    stats.fetched("<unknown topic id x>", 100, 0, follower=False)  # UNKNOWN_TOPIC_ID
    stats.fetched("secret", 29, 0, follower=False)  # TOPIC_AUTHORIZATION_FAILED
    assert set(stats.topics) == {"t"}
    assert stats.all_topics.total_fetch_requests == 3


def test_a_deleted_topic_loses_its_counts_not_the_totals() -> None:
    stats = BrokerTopicStats()
    stats.appended(stats.produce_request("gone"), 10, 1)
    stats.remove_topic("gone")
    assert "gone" not in stats.topics
    assert stats.all_topics.messages_in == 1


def test_request_names_are_kafkas() -> None:
    assert request_name(ApiKey.PRODUCE.name) == "Produce"
    assert request_name(ApiKey.LIST_OFFSETS.name) == "ListOffsets"
    assert request_name(ApiKey.OFFSET_FOR_LEADER_EPOCH.name) == "OffsetForLeaderEpoch"
    assert request_name(ApiKey.SASL_HANDSHAKE.name) == "SaslHandshake"
    assert request_name(ApiKey.DESCRIBE_LOG_DIRS.name) == "DescribeLogDirs"


def test_request_times_are_rounded_ms_and_total_is_their_sum() -> None:
    registry = RequestMetricsRegistry()
    produce = registry.get("Produce")
    assert registry.get("Produce") is produce
    produce.record(9, 0, 1_400_000, 2_600_000, 500_000)  # 1.4 + 2.6 + 0.5 ms
    produce.record(7, 0, 0, 0, 0)
    assert produce.requests == {9: 1, 7: 1}
    assert produce.local_time.window() == [1, 0]
    assert produce.remote_time.window() == [3, 0]
    assert produce.response_send_time.window() == [1, 0]  # Java's Math.round(0.5) is 1
    assert produce.total_time.window() == [5, 0]  # 4.5 ms, half up
    assert produce.total_time.count == 2


# -- idle ----------------------------------------------------------------------------------


class _Selector:
    def __init__(self) -> None:
        self.calls: list[float | None] = []

    def select(self, timeout: float | None = None) -> list[Any]:
        self.calls.append(timeout)
        return []


def test_loop_idle_times_the_selector() -> None:
    idle = LoopIdle()
    selector = _Selector()
    assert idle.install(selector)
    assert selector.select(0.01) == []
    assert selector.calls == [0.01]
    assert idle.idle_ns > 0
    assert not LoopIdle().install(None)


def test_idle_fraction_over_the_window() -> None:
    idle = LoopIdle()
    idle.started_ns = 0
    idle.idle_ns = 5 * 10**9
    assert idle.idle_fraction(now_ns=10 * 10**9) == 0.5  # since the start
    idle.idle_ns += 10 * 10**9
    # Since the oldest scrape kept (t=10 s: none is 60 s old yet): all idle since then.
    assert idle.idle_fraction(now_ns=20 * 10**9) == 1.0
    idle.idle_ns += 0
    # 100 s in: the base is the last scrape at least 60 s ago (t=20 s), idle unchanged since.
    assert idle.idle_fraction(now_ns=100 * 10**9) == 0.0


# -- collectors, named by the JMX exporter's rules ----------------------------------------


def _scrape(*collectors: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry(auto_describe=False)
    for collector in collectors:
        registry.register(collector)
    text = generate_latest(registry).decode()
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_broker_topic_metrics_samples() -> None:
    stats = BrokerTopicStats()
    stats.appended(stats.produce_request("t"), 1000, 10)
    stats.fetched("t", 0, 600, follower=False)
    stats.replication_bytes_in = 42
    samples = _scrape(BrokerTopicMetricsCollector(lambda: stats))
    btm = "kafka_server_brokertopicmetrics_"
    assert samples[(btm + "messagesin_total", ())] == 10
    assert samples[(btm + "messagesin_total", (("topic", "t"),))] == 10
    assert samples[(btm + "bytesin_total", (("topic", "t"),))] == 1000
    assert samples[(btm + "bytesout_total", ())] == 600
    assert samples[(btm + "totalproducerequests_total", ())] == 1
    assert samples[(btm + "totalfetchrequests_total", (("topic", "t"),))] == 1
    assert samples[(btm + "replicationbytesin_total", ())] == 42
    assert samples[(btm + "replicationbytesout_total", ())] == 0
    # Each name is the exporter's for the Kafka MBean's Count.
    bean = MBean("kafka.server", "BrokerTopicMetrics", "BytesRejectedPerSec", ("topic",))
    exported = exported_sample(bean, "Count", ("t",))
    assert exported is not None
    assert (exported.name, exported.labels) in {(n, labels) for n, labels in samples}


def test_request_metrics_samples() -> None:
    registry = RequestMetricsRegistry()
    for ms in range(1, 101):
        registry.get("Produce").record(9, 0, ms * 1_000_000, 0, 0)
    idle = LoopIdle()
    idle.idle_ns = 123
    samples = _scrape(RequestMetricsCollector(lambda: registry, lambda: 2, idle))
    rq = "kafka_network_requestmetrics_"
    assert samples[(rq + "requests_total", (("request", "Produce"), ("version", "9")))] == 100
    assert samples[(rq + "totaltimems_count", (("request", "Produce"),))] == 100
    assert samples[(rq + "localtimems", (("quantile", "0.50"), ("request", "Produce")))] == 50.5
    assert samples[(rq + "totaltimems", (("quantile", "0.999"), ("request", "Produce")))] == 100
    assert samples[(rq + "remotetimems", (("quantile", "0.99"), ("request", "Produce")))] == 0
    assert (rq + "responsesendtimems_count", (("request", "Produce"),)) in samples
    assert (rq + "requestqueuetimems_count", (("request", "Produce"),)) in samples
    assert samples[("kafka_network_requestchannel_requestqueuesize", ())] == 2
    handler_idle = "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count"
    assert samples[(handler_idle, ())] == 123
    assert 0 <= samples[("kafka_network_socketserver_networkprocessoravgidlepercent", ())] <= 1
    # Without the endpoint there is no idle meter: no idle samples.
    without = _scrape(RequestMetricsCollector(lambda: registry, lambda: 0, None))
    assert (handler_idle, ()) not in without
    # Each percentile's name and labels are the exporter's for the Kafka MBean.
    bean = MBean("kafka.network", "RequestMetrics", "TotalTimeMs", ("request",))
    exported = exported_sample(bean, "999thPercentile", ("Produce",))
    assert exported is not None
    assert (exported.name, tuple(sorted(exported.labels))) in samples


class _Log:
    def __init__(self, size: int, segments: int, start: int, end: int, offline: bool) -> None:
        self.size_in_bytes = size
        self.segments = [object()] * segments
        self.log_start_offset = start
        self.log_end_offset = end
        self.offline = offline


def test_log_samples_per_partition() -> None:
    logs = {
        TopicPartition("t", 0): _Log(4096, 2, 10, 99, offline=False),
        TopicPartition("t", 1): _Log(1, 1, 0, 0, offline=True),
    }
    samples = _scrape(LogCollector(lambda: logs))
    labels = (("partition", "0"), ("topic", "t"))
    assert samples[("kafka_log_log_size", labels)] == 4096
    assert samples[("kafka_log_log_numlogsegments", labels)] == 2
    assert samples[("kafka_log_log_logstartoffset", labels)] == 10
    assert samples[("kafka_log_log_logendoffset", labels)] == 99
    assert ("kafka_log_log_size", (("partition", "1"), ("topic", "t"))) not in samples
    assert ("kafka_log_logflushstats_logflushrateandtimems_count", ()) in samples
    flush = ("kafka_log_logflushstats_logflushrateandtimems", (("quantile", "0.50"),))
    assert flush in samples


def test_a_log_flush_is_timed_in_log_flush_stats(tmp_path: Any) -> None:
    log = make_log(tmp_path)
    log.append_as_leader(batch(), leader_epoch=0)
    before = LOG_FLUSH_STATS.timer.count
    log.flush()
    assert LOG_FLUSH_STATS.timer.count == before + 1
    assert log.recovery_point == log.log_end_offset
    log.flush()  # nothing below the log end offset to flush: not a flush
    assert LOG_FLUSH_STATS.timer.count == before + 1
