"""Consumer groups in headless Chromium against a real broker: the list and a group's page
show what ``franz consumer-groups --describe`` prints (per partition CURRENT-OFFSET,
LOG-END-OFFSET, LAG, CONSUMER-ID, HOST, CLIENT-ID); resetting offsets from the page (to the
earliest, an offset, a timestamp; confirmed) changes what the tool then shows; an active
group refuses reset and delete with Kafka's messages; deleting an empty group removes it."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select

from tests.support.broker import BrokerProcess
from tests.support.console import ConsoleProcess, screenshot, wait_until

TOPIC = "orders"
PER_PARTITION = 50
BASE_TS = 1_700_000_000_000  # record at offset o has timestamp BASE_TS + o s


def describe(bootstrap: str, group: str) -> list[list[str]]:
    """``franz consumer-groups --describe --group g``'s rows, each without its GROUP
    column: TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "franz",
            "consumer-groups",
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--group",
            group,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = [line.split() for line in done.stdout.splitlines() if line.strip()]
    assert lines[0][:3] == ["GROUP", "TOPIC", "PARTITION"], done.stdout
    return [line[1:] for line in lines[1:]]


def _consume(bootstrap: str, group: str, count: int) -> Consumer:
    """A subscribed consumer of ``group`` that consumed ``count`` records and committed
    what it consumed in each partition of ``orders`` (0 where it consumed nothing, so both
    partitions have a committed offset); the caller closes it (or keeps it as a member)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "client.id": f"{group}-client",
        }
    )
    consumer.subscribe([TOPIC])
    seen = 0
    positions = {0: 0, 1: 0}
    deadline = time.monotonic() + 60
    while seen < count and time.monotonic() < deadline:
        for message in consumer.consume(min(10, count - seen), 1.0):
            if message.error() is None:
                seen += 1
                positions[message.partition()] = message.offset() + 1
    assert seen == count
    consumer.commit(
        offsets=[TopicPartition(TOPIC, p, o) for p, o in positions.items()], asynchronous=False
    )
    return consumer


@pytest.fixture(scope="module")
def groups(broker: BrokerProcess) -> Iterator[tuple[str, Consumer]]:
    """``orders`` (2 partitions, 50 records each, timestamps BASE_TS + offset s); group
    ``partial`` consumed 30 records and left (Empty); ``active`` consumed 20 and stays."""
    bootstrap = broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition in (0, 1):
        for offset in range(PER_PARTITION):
            producer.produce(
                TOPIC, b"order-%d" % offset, partition=partition, timestamp=BASE_TS + offset * 1000
            )
    assert producer.flush(30) == 0
    _consume(bootstrap, "partial", 30).close()
    active = _consume(bootstrap, "active", 20)
    try:
        yield bootstrap, active
    finally:
        active.close()


def _table(browser: Any) -> list[list[str]]:
    rows = browser.find_elements(By.CSS_SELECTOR, "#offsets tbody tr[data-topic]")
    return [[td.text for td in row.find_elements(By.TAG_NAME, "td")] for row in rows]


def test_group_list_and_detail_match_the_tool(
    groups: tuple[str, Consumer], console: ConsoleProcess, browser: Any
) -> None:
    bootstrap, active = groups
    browser.get(f"{console.url}groups")
    rows = {
        r.get_attribute("data-group"): r
        for r in browser.find_elements(By.CSS_SELECTOR, "#groups tbody tr[data-group]")
    }
    assert set(rows) == {"partial", "active"}
    for group, state, members in (("partial", "Empty", "0"), ("active", "Stable", "1")):
        cells = [td.text for td in rows[group].find_elements(By.TAG_NAME, "td")]
        tool_lag = sum(int(r[4]) for r in describe(bootstrap, group))
        assert cells[1] == state
        assert cells[2] == "consumer"
        assert cells[3] == members
        assert rows[group].get_attribute("data-lag") == str(tool_lag)
        assert cells[5] == f"{tool_lag:,}"
    screenshot(browser, "groups")

    for group in ("partial", "active"):
        browser.get(f"{console.url}groups/{group}")
        assert _table(browser) == describe(bootstrap, group)
    # the active group: its member, its assignment, the coordinator
    assert browser.find_element(By.ID, "state").text == "Stable"
    assert browser.find_element(By.ID, "member-count").text == "1"
    [member] = browser.find_elements(By.CSS_SELECTOR, "#members tbody tr[data-member]")
    assert member.get_attribute("data-member") == active.memberid()
    cells = [td.text for td in member.find_elements(By.TAG_NAME, "td")]
    assert cells[2] == "active-client"
    assert cells[4] == f"{TOPIC}-0, {TOPIC}-1"
    assert browser.find_element(By.ID, "coordinator").get_attribute("data-broker") == "0"
    table = _table(browser)
    assert all(row[5] == active.memberid() and row[7] == "active-client" for row in table)

    browser.get(f"{console.url}groups/partial")
    assert browser.find_element(By.ID, "state").text == "Empty"
    lag = sum(int(r[4]) for r in describe(bootstrap, "partial"))
    assert browser.find_element(By.ID, "total-lag").text == f"{lag:,}"
    assert lag == 2 * PER_PARTITION - 30
    screenshot(browser, "group-detail")

    # the table refreshes itself (every 5 s): new records raise the lag without a reload
    producer = Producer({"bootstrap.servers": bootstrap})
    for _ in range(5):
        producer.produce(TOPIC, b"late", partition=1)
    assert producer.flush(30) == 0
    wait_until(lambda: browser.find_element(By.ID, "total-lag").text == f"{lag + 5:,}", 30)
    assert _table(browser) == describe(bootstrap, "partial")

    browser.get(f"{console.url}groups/no-such-group")
    assert (
        "Consumer group 'no-such-group' does not exist."
        in browser.find_element(By.CSS_SELECTOR, ".banner.error").text
    )


def _reset(browser: Any, console: ConsoleProcess, group: str, target: str, **fields: str) -> None:
    browser.get(f"{console.url}groups/{group}")
    Select(browser.find_element(By.ID, "reset-target")).select_by_value(target)
    Select(browser.find_element(By.ID, "reset-topic")).select_by_value(fields.get("topic", ""))
    for name in ("timestamp", "offset"):
        if name in fields:
            browser.find_element(By.ID, f"reset-{name}").send_keys(fields[name])
    browser.find_element(By.ID, "reset-submit").click()
    alert = wait_until(lambda: _alert(browser))
    assert f"group '{group}'" in alert.text
    alert.accept()
    wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, ".banner"))


def _alert(browser: Any) -> Any:
    try:
        return browser.switch_to.alert
    except Exception:  # NoAlertPresentException until the dialog is up
        return None


def test_reset_offsets_from_the_page(
    groups: tuple[str, Consumer], console: ConsoleProcess, browser: Any
) -> None:
    bootstrap, _ = groups
    _reset(browser, console, "partial", "earliest")
    assert (
        "Reset the committed offsets of 2 partition(s)." in browser.find_element(By.ID, "done").text
    )
    rows = describe(bootstrap, "partial")
    assert [(r[0], r[1], r[2], r[4]) for r in sorted(rows)] == [
        (TOPIC, "0", "0", str(PER_PARTITION)),
        (TOPIC, "1", "0", str(PER_PARTITION + 5)),
    ]
    assert _table(browser) == rows

    _reset(browser, console, "partial", "offset", topic=TOPIC, offset="10")
    assert {(r[1], r[2]) for r in describe(bootstrap, "partial")} == {("0", "10"), ("1", "10")}
    # an offset past the log end is brought to it (Kafka's checkOffsetsRange)
    _reset(browser, console, "partial", "offset", offset="999")
    warnings = [w.text for w in browser.find_elements(By.CSS_SELECTOR, "#done .warning")]
    assert warnings == [
        f"WARN: New offset (999) is higher than latest offset for topic partition {TOPIC}-0. "
        f"Value will be set to {PER_PARTITION}",
        f"WARN: New offset (999) is higher than latest offset for topic partition {TOPIC}-1. "
        f"Value will be set to {PER_PARTITION + 5}",
    ]
    ends = {("0", str(PER_PARTITION)), ("1", str(PER_PARTITION + 5))}
    assert {(r[1], r[2]) for r in describe(bootstrap, "partial")} == ends

    # a timestamp: the first record at or after it, as ISO-8601 or milliseconds
    _reset(browser, console, "partial", "timestamp", timestamp=str(BASE_TS + 20_000))
    assert {(r[1], r[2]) for r in describe(bootstrap, "partial")} == {("0", "20"), ("1", "20")}
    _reset(browser, console, "partial", "timestamp", timestamp="2023-11-14T22:13:50.500Z")
    assert {r[2] for r in describe(bootstrap, "partial")} == {"31"}  # BASE_TS is 22:13:20Z
    _reset(browser, console, "partial", "latest")
    assert {(r[1], r[2]) for r in describe(bootstrap, "partial")} == ends

    # an active group refuses, with Kafka's message; nothing changes
    before = describe(bootstrap, "active")
    _reset(browser, console, "active", "earliest")
    assert browser.find_element(By.CSS_SELECTOR, ".banner.error").text == (
        "Assignments can only be reset if the group 'active' is inactive, but the current "
        "state is Stable."
    )
    assert describe(bootstrap, "active") == before


def test_delete_group(groups: tuple[str, Consumer], console: ConsoleProcess, browser: Any) -> None:
    bootstrap, _ = groups
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def listed() -> set[str]:
        return {g.group_id for g in admin.list_consumer_groups().result(30).valid}

    for group, refused in (("active", True), ("partial", False)):
        browser.get(f"{console.url}groups/{group}")
        browser.find_element(By.ID, "delete-submit").click()
        alert = wait_until(lambda: _alert(browser))
        assert f"Delete consumer group '{group}'" in alert.text
        alert.accept()
        banner = wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, ".banner"))[0]
        if refused:
            assert banner.text == "NON_EMPTY_GROUP: The group is not empty."
            assert "active" in listed()
        else:
            assert banner.text == "Deleted consumer group 'partial'."
            assert browser.current_url.startswith(f"{console.url}groups?")
            assert "partial" not in listed()
            rows = browser.find_elements(By.CSS_SELECTOR, "#groups tr[data-group]")
            assert [r.get_attribute("data-group") for r in rows] == ["active"]
