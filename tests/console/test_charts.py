"""Live charts (``/charts`` and the overview's strip) in headless Chromium.

The rates are checked against real Prometheus endpoints: two ``prometheus_client`` HTTP
servers exporting the BrokerTopicMetrics counters under the JMX exporter's names, which a
thread increments at known rates (the console scrapes them as it would two brokers), and a
Franz broker's own ``metrics.listener`` while a paced producer runs (skipped while the broker
does not export ``BrokerTopicMetrics`` yet: i-mtraffic adds it; it enables itself then)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from prometheus_client import CollectorRegistry, Counter, start_http_server
from prometheus_client.core import CounterMetricFamily
from selenium.webdriver.common.by import By

from franz.console.charts_data import METRICS
from tests.support.broker import BrokerProcess
from tests.support.console import ConsoleProcess, screenshot, wait_until
from tests.support.metrics import metrics_url, scrape

#: The console's refresh is 2 s and rates need two scrapes: leave a loaded machine room.
SETTLE_S = 60.0
TOLERANCE = 0.20


class _TrafficCounters:
    """BrokerTopicMetrics counters (per topic and the all-topics total) that a thread
    increments every 20 ms at ``rates`` (topic -> messages/s); bytes in are 100 per message,
    bytes out 200."""

    def __init__(self, rates: dict[str, float]) -> None:
        self.rates = rates
        self.messages = dict.fromkeys(rates, 0.0)
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        last = time.monotonic()
        while not self.stopped.wait(0.02):
            now = time.monotonic()
            with self.lock:
                for topic, rate in self.rates.items():
                    self.messages[topic] += rate * (now - last)
            last = now

    def collect(self) -> Iterator[CounterMetricFamily]:
        with self.lock:
            counts = dict(self.messages)
        for key, per_message in (("messages_in", 1), ("bytes_in", 100), ("bytes_out", 200)):
            name = METRICS[key].removesuffix("_total")
            family = CounterMetricFamily(name, "BrokerTopicMetrics Count", labels=["topic"])
            for topic, count in counts.items():
                family.add_metric([topic], int(count) * per_message)
            yield family
            yield CounterMetricFamily(
                name, "all topics", value=sum(int(c) for c in counts.values()) * per_message
            )


class _Endpoint:
    def __init__(self, rates: dict[str, float]) -> None:
        self.counters = _TrafficCounters(rates)
        registry = CollectorRegistry()
        registry.register(self.counters)
        self.server, self.thread = start_http_server(0, addr="127.0.0.1", registry=registry)
        self.url = f"http://127.0.0.1:{self.server.server_port}/metrics"
        self.counters.thread.start()

    def close(self) -> None:
        self.counters.stopped.set()
        self.server.shutdown()
        self.server.server_close()


def _latest(browser: Any, css: str) -> float | None:
    try:
        text = browser.find_element(By.CSS_SELECTOR, css).get_attribute("data-latest")
    except Exception:  # the fragment is being replaced
        return None
    return float(text) if text else None


def _near(value: float | None, expected: float) -> bool:
    return value is not None and abs(value - expected) <= TOLERANCE * expected


def test_without_a_metrics_url_the_pages_say_how_to_enable_charts(
    console: ConsoleProcess, browser: Any
) -> None:
    browser.get(console.url + "charts")
    text = browser.find_element(By.ID, "charts-disabled").text
    assert "--metrics-url" in text and "metrics.listener" in text and "JMX exporter" in text
    browser.get(console.url)
    assert "--metrics-url" in browser.find_element(By.ID, "chart-strip-disabled").text


def test_charts_show_the_rates_of_the_endpoints(
    broker: BrokerProcess, browser: Any, tmp_path: Path
) -> None:
    first = _Endpoint({"orders": 400.0, "audit": 100.0})
    second = _Endpoint({"orders": 200.0})
    # An endpoint that answers without BrokerTopicMetrics (say, a JMX exporter without
    # Kafka's rules): it adds nothing and the page says what it lacks.
    other = CollectorRegistry()
    Counter("jvm_gc_collections", "not Kafka's", registry=other).inc()
    silent, _ = start_http_server(0, addr="127.0.0.1", registry=other)
    silent_url = f"http://127.0.0.1:{silent.server_port}/metrics"
    urls = ["--metrics-url", first.url, "--metrics-url", second.url, "--metrics-url", silent_url]
    try:
        with ConsoleProcess(broker.bootstrap, tmp_path, *urls) as console:
            browser.get(console.url + "charts")
            assert first.url in browser.find_element(By.ID, "charts-sources").text
            # Both endpoints' totals, summed: 700 messages/s, 70,000 B/s in, 140,000 B/s out.
            wait_until(lambda: _near(_latest(browser, "#latest-messages_in"), 700), SETTLE_S)
            wait_until(lambda: _near(_latest(browser, "#latest-bytes_in"), 70_000), SETTLE_S)
            wait_until(lambda: _near(_latest(browser, "#latest-bytes_out"), 140_000), SETTLE_S)
            banner = browser.find_element(By.CSS_SELECTOR, f"[data-silent='{silent_url}']")
            assert "kafka_server_brokertopicmetrics_" in banner.text
            legend = "#legend-messages_in tr[data-topic='{}']"
            assert wait_until(lambda: _near(_latest(browser, legend.format("orders")), 600))
            assert _near(_latest(browser, legend.format("audit")), 100)
            rows = browser.find_elements(By.CSS_SELECTOR, "#legend-messages_in tr[data-topic]")
            assert [r.get_attribute("data-topic") for r in rows] == ["orders", "audit"]
            line = "#chart-messages_in-total g.series polyline"
            wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, line), SETTLE_S)
            svg = browser.find_element(By.ID, "chart-messages_in-total")
            screenshot(browser, "charts")

            # The fragment is replaced in place (data-refresh), without reloading the page.
            marker = browser.execute_script("window.franzMarker = 1; return 1")
            wait_until(lambda: not _is_attached(browser, svg), 30)
            assert browser.execute_script("return window.franzMarker") == marker

            # An endpoint that stops answering: a banner naming it, the rest still charted.
            second.close()
            failing = f".banner.error[data-failing='{second.url}']"
            wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, failing), SETTLE_S)
            wait_until(lambda: _near(_latest(browser, "#latest-messages_in"), 500), SETTLE_S)

            browser.get(console.url)
            strip = "#chart-strip [data-chart='messages_in'] .chart-latest"
            wait_until(lambda: _near(_latest(browser, strip), 500), SETTLE_S)
            screenshot(browser, "overview-strip")
    finally:
        first.close()
        second.close()
        silent.shutdown()
        silent.server_close()


def _is_attached(browser: Any, element: Any) -> bool:
    try:
        element.get_attribute("id")
    except Exception:  # StaleElementReferenceException: the fragment was replaced
        return False
    return True


def test_charts_follow_a_franz_brokers_metrics_listener(browser: Any, tmp_path: Path) -> None:
    """A producer paced at ~1,000 messages/s: the chart's latest messages-in rate is within
    20 % of the rate the producer measured (its delivery reports over the same seconds)."""
    with BrokerProcess(
        tmp_path / "b", {"metrics.listener": "http://127.0.0.1:0", "num.partitions": "1"}
    ) as broker:
        url = metrics_url(broker)
        assert url is not None
        if METRICS["messages_in"] not in scrape(url):
            pytest.skip("this broker does not export BrokerTopicMetrics yet (i-mtraffic)")
        delivered: list[float] = []
        stop = threading.Event()

        def report(err: Any, _msg: Any) -> None:
            if err is None:
                delivered.append(time.monotonic())

        def produce() -> None:
            producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
            while not stop.is_set():
                began = time.monotonic()
                for _ in range(100):
                    producer.produce("charted", b"x" * 100, on_delivery=report)
                producer.poll(0)
                stop.wait(max(0.0, 0.1 - (time.monotonic() - began)))
            producer.flush(30)

        thread = threading.Thread(target=produce, daemon=True)
        thread.start()
        try:
            with ConsoleProcess(broker.bootstrap, tmp_path / "c", "--metrics-url", url) as console:
                browser.get(console.url + "charts")

                def matches() -> bool:
                    chart = _latest(browser, "#latest-messages_in")
                    now = time.monotonic()
                    recent = [t for t in delivered[-20000:] if now - t <= 6.0]
                    measured = len(recent) / 6.0
                    return chart is not None and measured > 0 and _near(chart, measured)

                wait_until(matches, SETTLE_S, every=0.5)
                screenshot(browser, "charts-franz")
        finally:
            stop.set()
            thread.join(60)
