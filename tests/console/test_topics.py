"""The topic pages in headless Chromium against a real broker with real data: the list and
a topic's partitions, configs and consumer groups equal what the cluster says (``franz
topics --describe``, ``franz log-dirs``, ``franz consumer-groups --describe`` and
confluent-kafka's AdminClient), and every action (create, configs, add partitions, delete
records, delete topic) changes the cluster as it says, or shows Kafka's error."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource, ConfigSource
from confluent_kafka.admin._resource import ResourceType
from confluent_kafka.cimpl import NewTopic
from selenium.webdriver.common.by import By

from tests.support.broker import BrokerProcess
from tests.support.console import ConsoleProcess, screenshot, wait_until
from tests.support.console_pages import alert, banner, fill, rows, submit, watermarks

#: Records produced to each partition of ``orders`` and to ``events``.
ORDERS = {0: 30, 1: 20, 2: 10}
EVENTS = 45


@pytest.fixture(scope="module")
def admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap})


@pytest.fixture(scope="module")
def data(broker: BrokerProcess, admin: AdminClient) -> None:
    """``orders`` (3 partitions), ``events`` (1) with records, and group ``g`` that read
    part of ``orders`` (so ``__consumer_offsets`` exists too)."""
    futures = admin.create_topics(
        [NewTopic("orders", 3, 1), NewTopic("events", 1, 1)], operation_timeout=30
    )
    for f in futures.values():
        f.result(60)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for partition, count in ORDERS.items():
        for i in range(count):
            producer.produce("orders", f"order-{partition}-{i}".encode() * 4, partition=partition)
    for i in range(EVENTS):
        producer.produce("events", json.dumps({"n": i}).encode())
    assert producer.flush(30) == 0
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "g", "enable.auto.commit": False}
    )
    # The group has read 12, 5 and 0 records of orders' partitions: lag 18 + 15 + 10.
    consumer.commit(
        offsets=[TopicPartition("orders", 0, 12), TopicPartition("orders", 1, 5)],
        asynchronous=False,
    )
    consumer.close()


def franz(broker: BrokerProcess, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "franz", *args, "--bootstrap-server", broker.bootstrap],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return done.stdout


# -- the list --------------------------------------------------------------------------------


def test_topic_list_matches_the_cluster(
    broker: BrokerProcess, console: ConsoleProcess, browser: Any, admin: AdminClient, data: None
) -> None:
    browser.get(console.url + "topics")
    shown = rows(browser, "topics", "topic")
    assert {"orders", "events"} <= set(shown)
    assert "__consumer_offsets" not in shown  # internal topics hidden by default
    for topic, count in (("orders", sum(ORDERS.values())), ("events", EVENTS)):
        described = franz(broker, "topics", "--describe", "--topic", topic)
        partitions = re.search(r"PartitionCount: (\d+)", described)
        replication = re.search(r"ReplicationFactor: (\d+)", described)
        assert partitions and replication, described
        row = shown[topic]
        assert row["partitions"] == partitions.group(1)
        assert row["rf"] == replication.group(1)
        assert row["urp"] == "0"
        marks = watermarks(admin, topic, int(partitions.group(1)))
        assert int(row["messages"]) == sum(h - lo for lo, h in marks.values()) == count
        # Size: the leader replicas' bytes as `franz log-dirs --describe` reports them.
        out = franz(broker, "log-dirs", "--describe", "--topic-list", topic)
        report = json.loads(out.strip().splitlines()[-1])
        size = sum(
            p["size"] for b in report["brokers"] for d in b["logDirs"] for p in d["partitions"]
        )
        assert int(row["size"]) == size > count * 10
    screenshot(browser, "topics")

    browser.get(console.url + "topics?internal=1")
    assert "__consumer_offsets" in rows(browser, "topics", "topic")


def test_search_filters_on_the_server(console: ConsoleProcess, browser: Any, data: None) -> None:
    browser.get(console.url + "topics")
    fill(browser, "topic-search", q="ORD")
    submit(browser, "#topic-search button[type='submit']")
    assert "q=ORD" in browser.current_url
    assert set(rows(browser, "topics", "topic")) == {"orders"}
    assert browser.find_element(By.ID, "topic-shown").text.startswith("1 of ")


# -- a topic ---------------------------------------------------------------------------------


def test_detail_partitions_match_the_cluster(
    console: ConsoleProcess, browser: Any, admin: AdminClient, data: None
) -> None:
    browser.get(console.url + "topics/orders")
    shown = rows(browser, "partitions", "partition")
    marks = watermarks(admin, "orders", 3)
    described = admin.describe_topics(TopicCollection(["orders"]))["orders"].result(30)
    assert sorted(shown) == ["0", "1", "2"]
    for p in described.partitions:
        row = shown[str(p.id)]
        assert int(row["leader"]) == p.leader.id
        assert (int(row["low"]), int(row["high"])) == marks[p.id] == (0, ORDERS[p.id])
        assert int(row["size"]) > 0
        cells = browser.find_elements(
            By.CSS_SELECTOR, f"#partitions tr[data-partition='{p.id}'] td"
        )
        assert cells[2].text == ", ".join(str(n.id) for n in p.replicas)
        assert cells[3].text == ", ".join(str(n.id) for n in p.isr)
        assert cells[6].text == str(ORDERS[p.id])
    assert browser.find_element(By.ID, "message-count").text == str(sum(ORDERS.values()))
    link = browser.find_element(By.ID, "browse").get_attribute("href")
    assert link.endswith("/topics/orders/messages")
    screenshot(browser, "topic-detail")


def test_group_lag_equals_consumer_groups_describe(
    broker: BrokerProcess, console: ConsoleProcess, browser: Any, data: None
) -> None:
    out = franz(broker, "consumer-groups", "--describe", "--group", "g")
    lines = [line.split() for line in out.splitlines() if line.startswith("g ")]
    cli = {int(c[2]): c[5] for c in lines if c[1] == "orders"}
    assert cli == {0: "18", 1: "15"}, out  # partition 2 never committed: not in the group
    browser.get(console.url + "topics/orders")
    shown = rows(browser, "groups", "group")
    assert int(shown["g"]["lag"]) == sum(int(v) for v in cli.values())
    per_partition = browser.execute_script(
        "return Array.from(document.querySelectorAll('#groups tr[data-group=\"g\"] span'))"
        ".map(s => [Number(s.dataset.partition), s.dataset.lag])"
    )
    assert dict(per_partition) == {p: lag for p, lag in cli.items()}
    link = browser.find_element(By.CSS_SELECTOR, "#groups tr[data-group='g'] a")
    assert link.get_attribute("href").endswith("/groups/g")


def test_unknown_topic_is_a_404(console: ConsoleProcess, browser: Any, data: None) -> None:
    browser.get(console.url + "topics/no-such-topic")
    assert "UNKNOWN_TOPIC_OR_PART" in banner(browser, "error")


def test_config_edit_changes_the_topic(
    console: ConsoleProcess, browser: Any, admin: AdminClient, data: None
) -> None:
    def configs() -> dict[str, Any]:
        resource = ConfigResource(ResourceType.TOPIC, "events")
        return dict(admin.describe_configs([resource])[resource].result(30))

    browser.get(console.url + "topics/events")
    before = rows(browser, "configs", "config")
    assert set(before) == set(configs())  # every config the cluster describes
    assert before["retention.ms"]["source"] == "DEFAULT_CONFIG"

    fill(browser, "config-form", key="retention.ms", value="3600000")
    submit(browser, "#config-form button[value='set']")
    assert banner(browser, "done") == "Set retention.ms=3600000 on events"
    assert configs()["retention.ms"].value == "3600000"
    after = rows(browser, "configs", "config")
    assert after["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    first = browser.find_element(By.CSS_SELECTOR, "#configs tbody tr")
    assert first.get_attribute("data-config") == "retention.ms"  # overrides come first

    fill(browser, "config-form", key="retention.ms", value="not-a-number")
    submit(browser, "#config-form button[value='set']")
    assert banner(browser, "error").startswith("INVALID_CONFIG")
    assert configs()["retention.ms"].value == "3600000"

    fill(browser, "config-form", key="retention.ms")
    submit(browser, "#config-form button[value='delete']")
    assert "Removed retention.ms" in banner(browser, "done")
    # Each row's own form: open it, change the value, set; then reset it from its row.
    row = "#configs tr[data-config='segment.ms']"
    browser.find_element(By.CSS_SELECTOR, f"{row} summary").click()
    value = browser.find_element(By.CSS_SELECTOR, f"{row} input[name='value']")
    assert value.get_attribute("value") == configs()["segment.ms"].value
    value.clear()
    value.send_keys("86400000")
    submit(browser, f"{row} button[value='set']")
    assert banner(browser, "done") == "Set segment.ms=86400000 on events"
    assert configs()["segment.ms"].value == "86400000"
    browser.find_element(By.CSS_SELECTOR, f"{row} summary").click()
    submit(browser, f"{row} button[value='delete']")
    assert banner(browser, "done").startswith("Removed segment.ms")
    assert ConfigSource(configs()["segment.ms"].source).name == "DEFAULT_CONFIG"

    reset = configs()["retention.ms"]
    assert ConfigSource(reset.source).name == "DEFAULT_CONFIG"
    assert reset.value == "604800000"  # log.retention.hours=168


# -- actions ---------------------------------------------------------------------------------


def test_create_topic_from_the_ui(
    console: ConsoleProcess, browser: Any, admin: AdminClient, data: None
) -> None:
    browser.get(console.url + "topics")
    fill(
        browser,
        "create-topic",
        name="made-in-ui",
        partitions="4",
        replication_factor="1",
        configs="cleanup.policy=compact\nsegment.bytes=1048576",
    )
    submit(browser, "#create-topic button[type='submit']")
    assert banner(browser, "done").startswith("Created topic made-in-ui with 4 partition(s)")
    assert browser.current_url.split("?")[0].endswith("/topics/made-in-ui")
    metadata = admin.list_topics(timeout=30)
    assert len(metadata.topics["made-in-ui"].partitions) == 4
    resource = ConfigResource(ResourceType.TOPIC, "made-in-ui")
    created = admin.describe_configs([resource])[resource].result(30)
    assert created["cleanup.policy"].value == "compact"
    assert created["segment.bytes"].value == "1048576"

    browser.get(console.url + "topics")
    fill(browser, "create-topic", name="made-in-ui", partitions="1", replication_factor="1")
    submit(browser, "#create-topic button[type='submit']")
    assert banner(browser, "error").startswith("TOPIC_ALREADY_EXISTS")

    fill(browser, "create-topic", name="too-replicated", partitions="1", replication_factor="3")
    submit(browser, "#create-topic button[type='submit']")
    assert banner(browser, "error").startswith("INVALID_REPLICATION_FACTOR")
    assert "too-replicated" not in admin.list_topics(timeout=30).topics


def test_add_partitions(
    console: ConsoleProcess, browser: Any, admin: AdminClient, data: None
) -> None:
    admin.create_topics([NewTopic("growing", 1, 1)])["growing"].result(30)
    browser.get(console.url + "topics/growing")
    fill(browser, "add-partitions", total="3")
    submit(browser, "#add-partitions button")
    assert banner(browser, "done") == "Topic growing now has 3 partitions (was 1)"
    assert len(admin.list_topics("growing", timeout=30).topics["growing"].partitions) == 3
    assert sorted(rows(browser, "partitions", "partition")) == ["0", "1", "2"]

    fill(browser, "add-partitions", total="2")
    submit(browser, "#add-partitions button")
    assert banner(browser, "error").startswith("INVALID_PARTITIONS")


def test_delete_records(
    broker: BrokerProcess, console: ConsoleProcess, browser: Any, admin: AdminClient, data: None
) -> None:
    admin.create_topics([NewTopic("purged", 3, 1)])["purged"].result(30)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for partition, count in ORDERS.items():
        for i in range(count):
            producer.produce("purged", f"record-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0

    browser.get(console.url + "topics/purged")
    fill(browser, "delete-records", partition="0", offset="5")
    submit(browser, "#delete-records button", confirm=True)
    assert banner(browser, "done") == "Deleted records of purged; low watermark now 0: 5"
    assert watermarks(admin, "purged", 3)[0] == (5, ORDERS[0])
    assert rows(browser, "partitions", "partition")["0"]["low"] == "5"

    fill(browser, "delete-records", partition="all", offset="")
    submit(browser, "#delete-records button", confirm=True)
    assert banner(browser, "done") == (
        f"Deleted records of purged; low watermark now 0: {ORDERS[0]}, 1: {ORDERS[1]}, "
        f"2: {ORDERS[2]}"
    )
    marks = watermarks(admin, "purged", 3)
    assert all(low == high == ORDERS[p] for p, (low, high) in marks.items())
    assert browser.find_element(By.ID, "message-count").text == "0"

    fill(browser, "delete-records", partition="1", offset="999")
    submit(browser, "#delete-records button", confirm=True)
    assert banner(browser, "error").startswith("OFFSET_OUT_OF_RANGE")


def test_delete_topic_asks_first(
    console: ConsoleProcess, browser: Any, admin: AdminClient, data: None
) -> None:
    admin.create_topics([NewTopic("doomed", 2, 1)])["doomed"].result(30)
    browser.get(console.url + "topics/doomed")
    # Dismissing the dialog keeps the topic.
    browser.find_element(By.CSS_SELECTOR, "#delete-topic button").click()
    wait_until(lambda: alert(browser), timeout=10).dismiss()
    assert "doomed" in admin.list_topics(timeout=30).topics
    submit(browser, "#delete-topic button", confirm=True)
    assert banner(browser, "done") == "Deleted topic doomed"
    assert browser.current_url.split("?")[0].endswith("/topics")
    assert "doomed" not in admin.list_topics(timeout=30).topics
    assert "doomed" not in rows(browser, "topics", "topic")


def test_long_actions_show_progress(console: ConsoleProcess, browser: Any, data: None) -> None:
    """A form with ``data-busy`` says what it waits for once it submits; a dismissed
    confirm shows nothing. (A window listener, run after the form's own, keeps the page
    from leaving so the status can be read.)"""
    browser.get(console.url + "topics/events")
    browser.execute_script("window.addEventListener('submit', (e) => e.preventDefault())")
    browser.find_element(By.CSS_SELECTOR, "#delete-topic button").click()
    wait_until(lambda: alert(browser), timeout=10).dismiss()
    assert browser.find_elements(By.CSS_SELECTOR, "#delete-topic .progress") == []
    browser.find_element(By.CSS_SELECTOR, "#add-partitions button").click()
    status = browser.find_element(By.CSS_SELECTOR, "#add-partitions .progress")
    assert status.text == "Adding partitions, waiting for their leaders…"
    assert status.get_attribute("role") == "status"
