"""``franz console``'s topic pages against Apache Kafka 3.9.2 (the console is a Kafka
client: it must work on any Kafka-compatible cluster): the list and a topic's partitions
equal what Kafka's AdminClient answers, and creating a topic, a config change, deleting
records and deleting the topic from the UI change Kafka as they say, or show Kafka's own
error (TOPIC_ALREADY_EXISTS, INVALID_CONFIG)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.admin._resource import ResourceType
from confluent_kafka.cimpl import NewTopic

from franz.admin.cluster_wire import ClusterClient
from tests.support.console import ConsoleProcess, chromium, screenshot, wait_until
from tests.support.console_pages import banner, fill, rows, submit, watermarks
from tests.support.kafka_ref import KafkaBroker


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


def test_console_topic_pages_on_apache_kafka(
    kafka: KafkaBroker, browser: Any, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, made = f"console-{suffix}", f"console-made-{suffix}"
    admin = AdminClient({"bootstrap.servers": kafka.bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)], operation_timeout=30)[topic].result(60)
    producer = Producer({"bootstrap.servers": kafka.bootstrap})
    for i in range(30):
        producer.produce(topic, f"record-{i}".encode() * 5, partition=i % 3)
    assert producer.flush(30) == 0
    wire = ClusterClient(kafka.bootstrap, timeout_ms=30_000, client_id="console-ref-test")
    sizes = {
        tp[1]: info.size
        for d in wire.describe_log_dirs(0, {topic: [0, 1, 2]}).values()
        for tp, info in d.replicas
    }

    with ConsoleProcess(kafka.bootstrap, tmp_path / "console") as console:
        browser.get(console.url + f"topics?q={suffix}")
        row = rows(browser, "topics", "topic")[topic]
        assert (row["partitions"], row["rf"], row["urp"], row["messages"]) == ("3", "1", "0", "30")
        assert int(row["size"]) == sum(sizes.values()) > 0

        browser.get(console.url + f"topics/{topic}")
        shown = rows(browser, "partitions", "partition")
        marks = watermarks(admin, topic, 3)
        for p in range(3):
            assert (int(shown[str(p)]["low"]), int(shown[str(p)]["high"])) == marks[p] == (0, 10)
            assert int(shown[str(p)]["size"]) == sizes[p]
        assert rows(browser, "configs", "config")["cleanup.policy"]["source"] == "DEFAULT_CONFIG"
        screenshot(browser, "topic-detail-kafka")

        fill(browser, "config-form", key="retention.ms", value="oops")
        submit(browser, "#config-form button[value='set']")
        assert banner(browser, "error").startswith("INVALID_CONFIG")
        fill(browser, "config-form", key="retention.ms", value="7200000")
        submit(browser, "#config-form button[value='set']")
        assert banner(browser, "done") == f"Set retention.ms=7200000 on {topic}"
        resource = ConfigResource(ResourceType.TOPIC, topic)
        assert admin.describe_configs([resource])[resource].result(30)["retention.ms"].value == (
            "7200000"
        )

        fill(browser, "delete-records", partition="2", offset="4")
        submit(browser, "#delete-records button", confirm=True)
        assert banner(browser, "done") == f"Deleted records of {topic}; low watermark now 2: 4"
        assert watermarks(admin, topic, 3)[2] == (4, 10)

        browser.get(console.url + "topics")
        fill(browser, "create-topic", name=made, partitions="2", replication_factor="1")
        submit(browser, "#create-topic button[type='submit']")
        assert banner(browser, "done").startswith(f"Created topic {made} with 2 partition(s)")
        assert len(admin.list_topics(made, timeout=30).topics[made].partitions) == 2
        browser.get(console.url + "topics")
        fill(browser, "create-topic", name=made, partitions="2", replication_factor="1")
        submit(browser, "#create-topic button[type='submit']")
        assert banner(browser, "error").startswith("TOPIC_ALREADY_EXISTS")

        for name in (topic, made):
            browser.get(console.url + f"topics/{name}")
            submit(browser, "#delete-topic button", confirm=True)
            assert banner(browser, "done") == f"Deleted topic {name}"
        wait_until(lambda: not {topic, made} & set(admin.list_topics(timeout=30).topics))
