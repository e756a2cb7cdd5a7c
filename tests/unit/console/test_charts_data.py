"""``franz.console.charts_data``: parsing the BrokerTopicMetrics counters out of a Prometheus
exposition, and rates from counter deltas (sum over endpoints, resets, gaps, top topics)."""

from __future__ import annotations

import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily

from franz.console.charts_data import METRICS, TOTAL, Tick, parse_counters, rates

MSGS = METRICS["messages_in"]


class _Collector:
    def __init__(self, values: dict[str, float]) -> None:
        self.values = values

    def collect(self):  # type: ignore[no-untyped-def]
        family = CounterMetricFamily(MSGS.removesuffix("_total"), "Count", labels=["topic"])
        for topic, value in self.values.items():
            family.add_metric([topic], value)
        yield family
        yield CounterMetricFamily(
            MSGS.removesuffix("_total"), "Count", value=sum(self.values.values())
        )


def _tick(at: float, *endpoints: dict[tuple[str, str], float] | None) -> Tick:
    return Tick(at=at, wall=at, counters=tuple(endpoints))


def test_parse_counters_reads_topics_and_the_total_from_real_exposition() -> None:
    registry = CollectorRegistry()
    registry.register(_Collector({"orders": 10, "audit": 5}))
    text = generate_latest(registry).decode()
    text += "kafka_server_replicamanager_leadercount 3\n# TYPE other_total counter\nother_total 9\n"
    assert parse_counters(text) == {
        ("messages_in", "orders"): 10,
        ("messages_in", "audit"): 5,
        ("messages_in", TOTAL): 15,
    }


def test_parse_counters_sums_samples_of_one_topic_with_other_labels() -> None:
    text = (
        "# TYPE kafka_server_brokertopicmetrics_bytesout_total counter\n"
        'kafka_server_brokertopicmetrics_bytesout_total{topic="t",x="1"} 3\n'
        'kafka_server_brokertopicmetrics_bytesout_total{topic="t",x="2"} 4\n'
    )
    assert parse_counters(text) == {("bytes_out", "t"): 7}


def test_rate_is_the_delta_over_the_time_between_scrapes_summed_over_endpoints() -> None:
    a0 = {("messages_in", TOTAL): 100.0, ("messages_in", "t"): 100.0}
    a1 = {("messages_in", TOTAL): 300.0, ("messages_in", "t"): 300.0}
    b0 = {("messages_in", TOTAL): 0.0}
    b1 = {("messages_in", TOTAL): 50.0}
    result = rates([_tick(10.0, a0, b0), _tick(12.0, a1, b1)])
    assert result.total["messages_in"].points == [(0.0, 125.0)]
    assert result.topics["messages_in"][0].latest == 100.0


def test_an_endpoint_without_a_total_counts_its_topics() -> None:
    result = rates(
        [
            _tick(0.0, {("bytes_in", "a"): 0.0, ("bytes_in", "b"): 0.0}),
            _tick(1.0, {("bytes_in", "a"): 10.0, ("bytes_in", "b"): 30.0}),
        ]
    )
    assert result.total["bytes_in"].latest == 40.0


def test_a_counter_reset_restarts_from_zero_and_a_failed_scrape_is_a_gap() -> None:
    key = ("messages_in", TOTAL)
    ticks = [
        _tick(0.0, {key: 1000.0}),
        _tick(2.0, {key: 20.0}),  # restarted broker: 20 since the restart
        _tick(4.0, None),
        _tick(6.0, {key: 60.0}),
        _tick(8.0, {key: 80.0}),
    ]
    points = rates(ticks).total["messages_in"].points
    assert points == [(6.0, 10.0), (4.0, None), (2.0, None), (0.0, 10.0)]


def test_top_topics_are_the_busiest_by_latest_rate() -> None:
    before = {("messages_in", f"t{i}"): 0.0 for i in range(8)}
    after = {("messages_in", f"t{i}"): float(i) for i in range(8)}
    top = rates([_tick(0.0, before), _tick(1.0, after)], top=5).topics["messages_in"]
    assert [s.label for s in top] == ["t7", "t6", "t5", "t4", "t3"]
    idle = rates([_tick(0.0, before), _tick(1.0, before | {("messages_in", "t1"): 2.0})])
    assert [s.label for s in idle.topics["messages_in"]] == ["t1"]  # idle topics left out


def test_fewer_than_two_ticks_have_no_rates() -> None:
    assert rates([]).total == {}
    assert rates([_tick(0.0, {})]).ticks == 1


def test_endpoints_answering_without_the_counters_are_silent() -> None:
    key = ("messages_in", TOTAL)
    result = rates([_tick(0.0, {key: 0.0}, {}, None), _tick(1.0, {key: 5.0}, {}, None)])
    assert result.silent == [1]  # not 2: that one failed (``failing`` says why)
    assert result.total["messages_in"].latest == 5.0


@pytest.mark.parametrize("metric", sorted(METRICS))
def test_names_are_the_jmx_exporter_counter_names(metric: str) -> None:
    # kafka-2_0_0.yml: kafka.server<type=BrokerTopicMetrics, name=XPerSec><>Count -> ..._x_total
    assert METRICS[metric].startswith("kafka_server_brokertopicmetrics_")
    assert METRICS[metric].endswith("_total")


def test_rates_of_1000_topics_over_a_full_window_stay_well_under_a_refresh() -> None:
    """The fragment is recomputed every 2 s: 1,000 topics x 3 metrics x 151 ticks must not
    make a page slow (13 ms measured; 300 ms leaves a loaded machine room)."""
    ticks = []
    for i in range(151):
        counters = {(m, f"topic-{t:04d}"): float(i * t) for m in METRICS for t in range(1000)}
        counters.update({(m, TOTAL): float(i * 499_500) for m in METRICS})
        ticks.append(_tick(i * 2.0, counters))
    began = time.perf_counter()
    result = rates(ticks)
    took = time.perf_counter() - began
    assert [s.label for s in result.topics["bytes_out"]] == [
        f"topic-{t:04d}" for t in range(999, 994, -1)
    ]
    assert result.total["messages_in"].latest == pytest.approx(499_500 / 2)
    assert took < 0.3, took
