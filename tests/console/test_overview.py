"""The overview page in headless Chromium against a real broker: the cluster id, the
controller and the broker row (host, port, version guess, its log dir and disk use) as the
cluster reports them."""

from __future__ import annotations

from typing import Any

import httpx
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from selenium.webdriver.common.by import By

from tests.support.broker import BrokerProcess
from tests.support.console import ConsoleProcess, screenshot


def test_overview_shows_the_cluster(
    broker: BrokerProcess, console: ConsoleProcess, browser: Any
) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(100):
        producer.produce("overview-topic", f"record-{i}".encode() * 10)
    assert producer.flush(30) == 0
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    described = admin.describe_cluster().result(30)

    browser.get(console.url)
    assert browser.find_element(By.ID, "cluster-id").text == described.cluster_id
    assert browser.find_element(By.ID, "controller").text == str(described.controller.id)
    assert browser.find_element(By.ID, "broker-count").text == "1"
    row = browser.find_element(
        By.CSS_SELECTOR, f"#brokers tr[data-broker='{described.controller.id}']"
    )
    cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
    assert cells[1:3] == ["127.0.0.1", str(broker.port)]
    assert cells[4] == "controller"
    assert cells[5] == "3.9"  # Franz answers Kafka 3.9's ApiVersions
    assert str(broker.data_dir / "logs") in cells[6]
    assert cells[7].endswith("KiB")  # 100 records of 90+ bytes, at least
    screenshot(browser, "overview")


def test_unreachable_cluster_is_a_503_banner(tmp_path: Any) -> None:
    """A console whose cluster is gone answers 503 with the reason, not a traceback."""
    with ConsoleProcess("127.0.0.1:1", tmp_path, "--timeout", "2000") as dead:
        response = httpx.get(dead.url, timeout=30)
    assert response.status_code == 503
    assert "The cluster did not answer" in response.text
