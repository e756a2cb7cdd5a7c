"""A broker's page (``/brokers/{id}``, linked from the overview) in headless Chromium: its
configs equal DescribeConfigs(BROKER) through confluent-kafka, non-default ones first."""

from __future__ import annotations

from typing import Any

from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource, ConfigSource
from confluent_kafka.admin._resource import ResourceType
from selenium.webdriver.common.by import By

from tests.support.broker import BrokerProcess
from tests.support.console import ConsoleProcess, screenshot
from tests.support.console_pages import rows


def test_broker_configs_match_describe_configs(
    broker: BrokerProcess, console: ConsoleProcess, browser: Any
) -> None:
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    broker_id = admin.describe_cluster().result(30).controller.id
    resource = ConfigResource(ResourceType.BROKER, str(broker_id))
    described = admin.describe_configs([resource])[resource].result(30)

    browser.get(console.url)
    browser.find_element(By.CSS_SELECTOR, f"#brokers tr[data-broker='{broker_id}'] a").click()
    assert browser.current_url.endswith(f"/brokers/{broker_id}")
    assert browser.find_element(By.ID, "broker-address").text == f"127.0.0.1:{broker.port}"
    shown = rows(browser, "broker-configs", "config")
    assert set(shown) == set(described)
    for name, entry in described.items():
        assert shown[name]["source"] == ConfigSource(entry.source).name, name
    # The fixture's num.partitions=1 is a server.properties setting, listed first.
    assert shown["num.partitions"]["source"] == "STATIC_BROKER_CONFIG"
    values = browser.execute_script(
        "return Array.from(document.querySelectorAll('#broker-configs tbody tr'))"
        ".map(tr => [tr.dataset.config, tr.querySelector('.value').textContent])"
    )
    assert dict(values)["num.partitions"] == "1"
    sources = [shown[name]["source"] for name, _ in values]
    first_default = sources.index("DEFAULT_CONFIG")
    assert "DEFAULT_CONFIG" not in sources[:first_default]
    assert all(s == "DEFAULT_CONFIG" for s in sources[first_default:])
    for name, value in values:
        entry = described[name]
        if not entry.is_sensitive:
            assert value == (entry.value if entry.value is not None else "null"), name
    screenshot(browser, "broker")


def test_unknown_broker_is_a_404(console: ConsoleProcess, browser: Any) -> None:
    browser.get(console.url + "brokers/77")
    assert "no live broker 77" in browser.find_element(By.ID, "error").text
