"""The perf tools' numbers and lines (``franz.admin.perf``), checked against Kafka's formats
and arithmetic without a broker."""

from __future__ import annotations

import re
import time

import pytest

from franz.admin.perf import (
    CONSUMER_HEADER,
    MAX_SAMPLED_LATENCIES,
    ProducerStats,
    ThroughputThrottler,
    consumer_progress_line,
    consumer_total_line,
    e2e_average_line,
    e2e_percentiles_line,
    e2e_progress_line,
    flatten_librdkafka_stats,
    format_metrics,
    java_date_formatter,
    java_double,
    jfloat,
    percentiles,
    split_java_client_config,
)

#: Kafka's ProducerPerformance lines, as regexes
WINDOW = re.compile(
    r"^(\d+) records sent, (\d+\.\d) records/sec \((\d+\.\d\d) MB/sec\), "
    r"(\d+\.\d) ms avg latency, (\d+\.\d) ms max latency\.$"
)
TOTAL = re.compile(
    r"^(\d+) records sent, (\d+\.\d{6}) records/sec \((\d+\.\d\d) MB/sec\), "
    r"(\d+\.\d\d) ms avg latency, (\d+\.\d\d) ms max latency, (\d+) ms 50th, (\d+) ms 95th, "
    r"(\d+) ms 99th, (\d+) ms 99\.9th\.$"
)


# -- percentiles --------------------------------------------------------------------------------


def test_percentiles_take_the_value_at_int_p_times_n_of_the_sorted_values() -> None:
    values = list(range(1000, 0, -1))  # 1..1000 reversed
    assert percentiles(values, 0.5, 0.95, 0.99, 0.999) == [501, 951, 991, 1000]


def test_percentiles_of_nothing_are_zero_as_kafkas_zero_filled_array() -> None:
    assert percentiles([], 0.5, 0.99) == [0, 0]


def test_percentiles_of_one_value() -> None:
    assert percentiles([7], 0.5, 0.999) == [7, 7]


# -- producer stats -----------------------------------------------------------------------------


def test_total_line_has_kafkas_format_and_arithmetic() -> None:
    stats = ProducerStats(4, start_ms=1_000)
    for latency in (1, 2, 3, 10):
        stats.record(latency, 100)
    line = stats.total_line(now_ms=3_000)  # 4 records in 2 s
    assert line == (
        "4 records sent, 2.000000 records/sec (0.00 MB/sec), 4.00 ms avg latency, "
        "10.00 ms max latency, 3 ms 50th, 10 ms 95th, 10 ms 99th, 10 ms 99.9th."
    )
    assert TOTAL.match(line)


def test_window_line_then_a_new_window() -> None:
    stats = ProducerStats(10, start_ms=0)
    stats.record_many([2, 4], 2 * 1024 * 1024)
    assert not stats.window_due(4_999)
    assert stats.window_due(5_000)
    line = stats.window_line(now_ms=5_000)
    assert line == (
        "2 records sent, 0.4 records/sec (0.40 MB/sec), 3.0 ms avg latency, 4.0 ms max latency."
    )
    assert WINDOW.match(line)
    assert (stats.window_count, stats.window_bytes, stats.window_start_ms) == (0, 0, 5_000)
    assert stats.count == 2 and stats.max_latency == 4  # totals are kept


def test_record_many_equals_record_one_by_one() -> None:
    latencies = [5, 1, 9, 3, 3, 7, 2]
    one = ProducerStats(7, start_ms=0)
    for latency in latencies:
        one.record(latency, 10)
    many = ProducerStats(7, start_ms=0)
    many.record_many(latencies[:3], 30)
    many.record_many(latencies[3:], 40)
    assert many.total_line(1000) == one.total_line(1000)
    assert many.latencies == one.latencies


def test_latency_sampling_keeps_at_most_500000_evenly_and_keeps_phase_across_chunks() -> None:
    n = 1_500_000
    stats = ProducerStats(n, start_ms=0)
    assert stats.sampling == 3
    stats.record_many(list(range(1_000_001)), 0)
    stats.record_many(list(range(1_000_001, n)), 0)
    assert len(stats.latencies) == MAX_SAMPLED_LATENCIES
    assert stats.latencies[:3] == [0, 3, 6]
    assert stats.latencies[-1] == n - 3


def test_total_line_with_nothing_sent_prints_java_nan() -> None:
    line = ProducerStats(5, start_ms=0).total_line(now_ms=0)
    assert line.startswith("0 records sent, NaN records/sec (NaN MB/sec), NaN ms avg latency")


# -- throttler ----------------------------------------------------------------------------------


class FakeTime:
    def __init__(self) -> None:
        self.ns = 0
        self.slept: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.ns += int(seconds * 1e9)

    def monotonic_ns(self) -> int:
        return self.ns


def test_throttler_throttles_only_when_ahead_of_the_target() -> None:
    throttler = ThroughputThrottler(1000, start_ms=0)
    assert not throttler.should_throttle(10, 0)  # no time elapsed yet
    assert throttler.should_throttle(1001, 1000)
    assert not throttler.should_throttle(999, 1000)


def test_unlimited_throughput_never_throttles() -> None:
    assert not ThroughputThrottler(-1, start_ms=0).should_throttle(10**9, 1)


def test_throttler_sleeps_off_its_deficit_once_it_reaches_2_ms() -> None:
    clock = FakeTime()
    throttler = ThroughputThrottler(
        1000, start_ms=0, sleep=clock.sleep, monotonic_ns=clock.monotonic_ns
    )
    throttler.throttle()  # 1 ms of deficit: below MIN_SLEEP_NS
    assert clock.slept == []
    throttler.throttle()  # 2 ms: slept off
    assert clock.slept == [pytest.approx(0.002)]
    assert throttler.sleep_deficit_ns == 0


def test_throttler_sleeps_again_when_woken_early() -> None:
    clock = FakeTime()
    calls: list[float] = []

    def short_sleep(seconds: float) -> None:  # a poll() that returns after half the time
        calls.append(seconds)
        clock.ns += int(seconds * 1e9 / 2) + 1

    throttler = ThroughputThrottler(
        100, start_ms=0, sleep=short_sleep, monotonic_ns=clock.monotonic_ns
    )
    throttler.throttle()  # 10 ms
    assert len(calls) > 1 and calls[0] == pytest.approx(0.010)
    assert clock.ns >= 10_000_000


def test_throttled_loop_holds_the_rate() -> None:
    """A real-clock run of Kafka's loop: 200 sends at 1000/s take about 0.2 s. (Sends in
    the very first millisecond are never throttled, as in Kafka: elapsed time is 0 then.)"""
    start = time.time()
    throttler = ThroughputThrottler(1000, start_ms=int(start * 1000) - 1)
    for i in range(200):
        now_ms = int(time.time() * 1000)
        if throttler.should_throttle(i, now_ms):
            throttler.throttle()
    assert 0.17 <= time.time() - start < 1.0


def test_zero_throughput_is_refused() -> None:
    with pytest.raises(ValueError):
        ThroughputThrottler(0, start_ms=0)


# -- Java number printing -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.5, "1.5"), (2.0, "2.0"), (0.001, "0.001"), (1234567.25, "1234567.25"), (1.0e7, "1.0E7")],
)
def test_java_double_matches_double_to_string(value: float, text: str) -> None:
    assert java_double(value) == text


def test_jfloat_prints_java_specials() -> None:
    assert jfloat(float("nan"), 2) == "NaN"
    assert jfloat(float("inf")) == "Infinity"
    assert jfloat(1 / 3) == "0.333333"


# -- consumer lines -----------------------------------------------------------------------------


def test_java_date_format_default_pattern() -> None:
    fmt = java_date_formatter("yyyy-MM-dd HH:mm:ss:SSS")
    epoch_ms = int(time.mktime((2024, 3, 5, 7, 8, 9, 0, 0, -1))) * 1000 + 42
    assert fmt(epoch_ms) == "2024-03-05 07:08:09:042"


def test_java_date_format_quotes_and_unsupported_letters() -> None:
    fmt = java_date_formatter("HH'h' 'T' yy")
    epoch_ms = int(time.mktime((2024, 3, 5, 7, 8, 9, 0, 0, -1))) * 1000
    assert fmt(epoch_ms) == "07h T 24"
    with pytest.raises(ValueError):
        java_date_formatter("yyyy QQ")


def test_consumer_total_line_matches_consumer_performance() -> None:
    line = consumer_total_line(
        start_ms=0,
        end_ms=2_000,
        total_bytes=4 * 1024 * 1024,
        total_messages=1000,
        join_time_ms=1_000,
        date_format=lambda ms: f"T{ms}",
    )
    assert line == ("T0, T2000, 4.0000, 2.0000, 1000, 500.0000, 1000, 1000, 4.0000, 1000.0000")
    assert len(line.split(", ")) == len(CONSUMER_HEADER.split(", "))


def test_consumer_total_line_with_no_fetch_time_prints_java_infinity_and_nan() -> None:
    line = consumer_total_line(
        start_ms=0,
        end_ms=1_000,
        total_bytes=0,
        total_messages=0,
        join_time_ms=1_000,
        date_format=str,
    )
    assert line.endswith(", 1000, 0, NaN, NaN")


def test_consumer_progress_line() -> None:
    line = consumer_progress_line(
        bytes_read=3 * 1024 * 1024,
        last_bytes_read=1024 * 1024,
        messages_read=300,
        last_messages_read=100,
        start_ms=1_000,
        end_ms=3_000,
        join_time_ms=1_000,
        date_format=lambda ms: f"T{ms}",
    )
    assert line == "T3000, 0, 3.0000, 1.0000, 300, 100.0000, 1000, 1000, 2.0000, 200.0000"


# -- end-to-end latency lines -------------------------------------------------------------------


def test_e2e_lines() -> None:
    assert e2e_progress_line(1000, 1_500_000) == "1000\t1.5"
    assert e2e_average_line(3_000_000, 2) == "Avg latency: 1.5000 ms"
    assert e2e_percentiles_line([3, 1, 2, 4]) == "Percentiles: 50th = 3, 99th = 4, 99.9th = 4"


# -- metrics and configs ------------------------------------------------------------------------


def test_librdkafka_stats_become_kafka_style_metrics() -> None:
    stats = {
        "client_id": "c",
        "txmsgs": 10,
        "type": "producer",
        "brokers": {"b:1/0": {"rtt": {"avg": 120, "p99": 300}, "tx": 5}},
        "topics": {"t": {"batchcnt": {"avg": 3}, "partitions": {"0": {"txmsgs": 10}, "-1": {}}}},
    }
    metrics = flatten_librdkafka_stats(stats)
    assert metrics["librdkafka:txmsgs:{client-id=c}"] == 10
    assert metrics["librdkafka-broker:rtt-p99:{broker=b:1/0, client-id=c}"] == 300
    assert metrics["librdkafka-topic:batchcnt-avg:{client-id=c, topic=t}"] == 3
    assert metrics["librdkafka-partition:txmsgs:{client-id=c, partition=0, topic=t}"] == 10
    assert not any("partition=-1" in name for name in metrics)


def test_format_metrics_is_kafkas_table() -> None:
    lines = format_metrics({"b:long-name:{}": 1.23456, "a:x:{}": 3})
    assert lines == [
        "",
        "Metric Name      Value",
        "a:x:{}         : 3",
        "b:long-name:{} : 1.235",
    ]
    assert format_metrics({}) == []


def test_java_only_client_keys_are_dropped() -> None:
    kept, dropped = split_java_client_config(
        {"acks": "1", "buffer.memory": "1", "key.serializer": "x", "linger.ms": "0"}
    )
    assert kept == {"acks": "1", "linger.ms": "0"}
    assert dropped == ["buffer.memory", "key.serializer"]
