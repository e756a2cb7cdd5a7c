"""The message browser and produce in headless Chromium against a real broker: records
produced by kcat (text with keys and headers, JSON, binary) shown as the cluster holds them
(compared with what confluent-kafka consumes), seeking by offset, timestamp and the newest,
per partition and across all; a record produced from the page is consumed with
confluent-kafka with its key, headers and partition; a 100-record page's render time."""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from selenium.webdriver.common.by import By

from franz.console.messages_format import hex_dump, iso_time
from tests.support.broker import BrokerProcess
from tests.support.clients import run_kcat
from tests.support.console import ConsoleProcess, screenshot, wait_until

TOPIC = "browse"
TEXTS = [("k0", "hello world"), ("k1", "second line"), ("k2", "héllo ünïcode"), ("k3", "four")]
JSONS = [{"id": i, "name": f"item-{i}", "tags": ["a", "b"]} for i in range(3)]
BINARY = b"\x00\x01\xff\xfe\x7fbinary\x10"
BASE_TS = 1_700_000_000_000  # the "timed" topic's record i has timestamp BASE_TS + i s


def _consume_all(bootstrap: str, topic: str, partitions: list[int]) -> list[Any]:
    """Every record of ``partitions`` (confluent-kafka, assign, no group commits)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "test-reader",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    out: list[Any] = []
    open_partitions = set(partitions)
    deadline = time.monotonic() + 30
    while open_partitions and time.monotonic() < deadline:
        for m in consumer.consume(100, 0.5):
            if m.error() is None:
                out.append(m)
            elif m.error().code() == -191:  # _PARTITION_EOF
                open_partitions.discard(m.partition())
    consumer.close()
    assert not open_partitions, f"partitions {open_partitions} not read to their end"
    return out


@pytest.fixture(scope="module")
def data(broker: BrokerProcess) -> Iterator[str]:
    """``browse`` (3 partitions): kcat text records with keys and headers in partition 0,
    JSON in 1, one binary value in 2; ``timed`` (1 partition) with known timestamps;
    ``hundred`` (1 partition, 150 JSON records) for the timing."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics(
        [NewTopic(TOPIC, 3, 1), NewTopic("timed", 1, 1), NewTopic("hundred", 1, 1)]
    )
    for future in futures.values():
        future.result(30)
    bootstrap = broker.bootstrap
    text_input = "".join(f"{k}:{v}\n" for k, v in TEXTS).encode()
    done = run_kcat(
        [
            "-P",
            "-b",
            bootstrap,
            "-t",
            TOPIC,
            "-p",
            "0",
            "-K",
            ":",
            "-H",
            "trace=abc",
            "-H",
            "origin=kcat",
        ],
        stdin=text_input,
    )
    assert done.returncode == 0, done.stderr
    json_input = "".join(json.dumps(j, separators=(",", ":")) + "\n" for j in JSONS).encode()
    done = run_kcat(["-P", "-b", bootstrap, "-t", TOPIC, "-p", "1"], stdin=json_input)
    assert done.returncode == 0, done.stderr
    done = run_kcat(
        ["-P", "-b", bootstrap, "-t", TOPIC, "-p", "2", "-D", "\\x1e"], stdin=BINARY + b"\x1e"
    )
    assert done.returncode == 0, done.stderr
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(10):
        producer.produce("timed", f"t{i}".encode(), timestamp=BASE_TS + i * 1000)
    for i in range(150):
        producer.produce("hundred", json.dumps({"n": i, "pad": "x" * 100}).encode(), key=b"%d" % i)
    assert producer.flush(30) == 0
    yield bootstrap


def _rows(browser: Any) -> list[Any]:
    return browser.find_elements(By.CSS_SELECTOR, "#records tbody tr[data-offset]")


def _cell(row: Any, css: str) -> str:
    return str(row.find_element(By.CSS_SELECTOR, css).get_attribute("textContent"))


def test_browser_shows_kcat_records_as_the_cluster_holds_them(
    data: str, console: ConsoleProcess, browser: Any
) -> None:
    held = {(m.partition(), m.offset()): m for m in _consume_all(data, TOPIC, [0, 1, 2])}
    assert len(held) == len(TEXTS) + len(JSONS) + 1

    browser.get(f"{console.url}topics/{TOPIC}/messages?partition=0")
    rows = _rows(browser)
    assert [int(r.get_attribute("data-offset")) for r in rows] == [0, 1, 2, 3]
    for row, (key, value) in zip(rows, TEXTS, strict=True):
        message = held[(0, int(row.get_attribute("data-offset")))]
        kind, timestamp = message.timestamp()
        assert row.get_attribute("data-partition") == "0"
        assert _cell(row, "td.key pre") == key
        assert (
            row.find_element(By.CSS_SELECTOR, "td.value pre").get_attribute("data-kind") == "text"
        )
        assert _cell(row, "td.value pre") == value
        assert row.get_attribute("data-timestamp") == str(timestamp)
        assert row.get_attribute("data-timestamp-type") == "CreateTime" and kind == 1
        assert _cell(row, "td.ts .iso") == iso_time(timestamp)
        headers = row.find_elements(By.CSS_SELECTOR, "td.headers .header")
        shown = [(h.get_attribute("data-key"), _cell(h, "pre")) for h in headers]
        assert shown == [(k, v.decode()) for k, v in message.headers()]
        assert shown == [("trace", "abc"), ("origin", "kcat")]

    browser.get(f"{console.url}topics/{TOPIC}/messages?partition=1")
    rows = _rows(browser)
    assert len(rows) == len(JSONS)
    for row, value in zip(rows, JSONS, strict=True):
        pre = row.find_element(By.CSS_SELECTOR, "td.value pre")
        assert pre.get_attribute("data-kind") == "json"
        assert pre.get_attribute("textContent") == json.dumps(value, indent=2)
        assert row.find_element(By.CSS_SELECTOR, "td.key .null").text == "null"

    browser.get(f"{console.url}topics/{TOPIC}/messages?partition=2")
    [row] = _rows(browser)
    pre = row.find_element(By.CSS_SELECTOR, "td.value pre")
    assert pre.get_attribute("data-kind") == "hex"
    assert held[(2, 0)].value() == BINARY
    assert pre.get_attribute("textContent") == hex_dump(BINARY)
    assert "00 01 ff fe 7f 62 69 6e" in pre.get_attribute("textContent")

    # the user switches the format: partition 0's text as hex, partition 1's JSON as text
    browser.get(f"{console.url}topics/{TOPIC}/messages?partition=0&format=hex")
    first = _rows(browser)[0].find_element(By.CSS_SELECTOR, "td.value pre")
    assert first.get_attribute("data-kind") == "hex"
    assert first.get_attribute("textContent") == hex_dump(b"hello world")
    browser.get(f"{console.url}topics/{TOPIC}/messages?partition=1&format=text")
    first = _rows(browser)[0].find_element(By.CSS_SELECTOR, "td.value pre")
    assert first.get_attribute("textContent") == json.dumps(JSONS[0], separators=(",", ":"))

    # all partitions, from the beginning: every record, each once
    browser.get(f"{console.url}topics/{TOPIC}/messages")
    seen = {
        (int(r.get_attribute("data-partition")), int(r.get_attribute("data-offset")))
        for r in _rows(browser)
    }
    assert seen == set(held)
    assert browser.find_element(By.ID, "record-count").text == str(len(held))
    screenshot(browser, "messages")


def test_seek_by_offset_newest_and_timestamp(
    data: str, console: ConsoleProcess, browser: Any
) -> None:
    def offsets(query: str, topic: str = TOPIC) -> list[tuple[int, int]]:
        browser.get(f"{console.url}topics/{topic}/messages?{query}")
        return [
            (int(r.get_attribute("data-partition")), int(r.get_attribute("data-offset")))
            for r in _rows(browser)
        ]

    assert offsets("partition=0&from=offset&offset=2") == [(0, 2), (0, 3)]
    assert offsets("partition=0&from=offset&offset=1&limit=2") == [(0, 1), (0, 2)]
    assert offsets("partition=0&from=latest&limit=2") == [(0, 2), (0, 3)]
    assert offsets("partition=0&from=offset&offset=99") == []  # past the end: nothing, no wait
    # the newest across partitions: the last `limit` by timestamp
    newest = offsets("from=latest&limit=100")
    assert sorted(newest) == sorted(
        [(0, o) for o in range(4)] + [(1, o) for o in range(3)] + [(2, 0)]
    )
    # offset 1 in every partition that has it
    assert sorted(offsets("from=offset&offset=1")) == [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2)]

    # by timestamp: the first record at or after it (ms or ISO), as ListOffsets answers
    at = BASE_TS + 5000
    assert offsets(f"from=timestamp&timestamp={at}", "timed") == [(0, o) for o in range(5, 10)]
    assert offsets(f"from=timestamp&timestamp={at - 1}&limit=2", "timed") == [(0, 5), (0, 6)]
    iso = iso_time(BASE_TS + 7000)
    assert offsets(f"from=timestamp&timestamp={iso}&partition=0", "timed") == [
        (0, 7),
        (0, 8),
        (0, 9),
    ]
    assert offsets(f"from=timestamp&timestamp={BASE_TS + 60_000}", "timed") == []
    rows = _rows(browser)
    assert rows == []
    browser.get(f"{console.url}topics/timed/messages?from=timestamp&timestamp={at}")
    assert _rows(browser)[0].get_attribute("data-timestamp") == str(at)

    # the form drives the same query
    browser.get(f"{console.url}topics/{TOPIC}/messages")
    from selenium.webdriver.support.select import Select

    Select(browser.find_element(By.ID, "partition")).select_by_value("0")
    Select(browser.find_element(By.ID, "from")).select_by_value("offset")
    browser.find_element(By.ID, "offset").clear()
    browser.find_element(By.ID, "offset").send_keys("3")
    browser.find_element(By.CSS_SELECTOR, "#browse button[type=submit]").click()
    wait_until(lambda: "offset=3" in browser.current_url)
    assert [int(r.get_attribute("data-offset")) for r in _rows(browser)] == [3]

    # a bad query is a banner, not a traceback
    response = httpx.get(f"{console.url}topics/{TOPIC}/messages?from=offset", timeout=30)
    assert response.status_code == 400
    assert "from=offset needs an offset" in response.text
    response = httpx.get(f"{console.url}topics/no-such-topic/messages", timeout=30)
    assert response.status_code == 404
    assert "UNKNOWN_TOPIC_OR_PART" in response.text
    # ... and looking did not create the topic
    metadata = AdminClient({"bootstrap.servers": data}).list_topics(timeout=30)
    assert "no-such-topic" not in metadata.topics


def test_big_values_are_cut_with_a_show_all_link(
    data: str, console: ConsoleProcess, browser: Any
) -> None:
    big = ("0123456789abcdef" * 1500).encode()  # 24,000 bytes
    producer = Producer({"bootstrap.servers": data})
    producer.produce("bigvalues", big, partition=0)
    assert producer.flush(30) == 0
    browser.get(f"{console.url}topics/bigvalues/messages?partition=0")
    [row] = _rows(browser)
    assert len(_cell(row, "td.value pre")) == 10 * 1024
    assert "23.4 KiB" in _cell(row, "td.value .size-note")
    row.find_element(By.CSS_SELECTOR, "td.value a.show-all").click()
    wait_until(lambda: "full=1" in browser.current_url)
    [row] = _rows(browser)
    assert _cell(row, "td.value pre") == big.decode()


def test_produce_from_the_page_then_consume_it(
    data: str, console: ConsoleProcess, browser: Any
) -> None:
    browser.get(f"{console.url}topics/{TOPIC}/messages")
    browser.find_element(By.ID, "produce-key").send_keys("ui-key")
    browser.find_element(By.ID, "produce-value").send_keys('{"from": "the console"}')
    browser.find_element(By.ID, "produce-headers").send_keys("h1=v1\nh2=two=2")
    browser.find_element(By.ID, "produce-partition").send_keys("2")
    browser.find_element(By.ID, "produce-submit").click()
    banner = wait_until(lambda: browser.find_elements(By.ID, "produced"))[0]
    assert banner.get_attribute("data-partition") == "2"
    offset = int(banner.get_attribute("data-offset"))
    assert offset == 1  # after the binary record at offset 0
    # the page now shows the record it produced
    [row] = _rows(browser)[:1]
    assert (row.get_attribute("data-partition"), row.get_attribute("data-offset")) == ("2", "1")

    [message] = [m for m in _consume_all(data, TOPIC, [2]) if m.offset() == offset]
    assert message.key() == b"ui-key"
    assert message.value() == b'{"from": "the console"}'
    assert message.headers() == [("h1", b"v1"), ("h2", b"two=2")]

    # the partitioner's choice, no key, no headers
    response = httpx.post(f"{console.url}topics/timed/produce", data={"value": "plain"}, timeout=30)
    assert response.status_code == 303
    assert "done=produced" in response.headers["location"]
    [last] = [m for m in _consume_all(data, "timed", [0]) if m.offset() == 10]
    assert (last.key(), last.value(), last.headers()) == (None, b"plain", None)

    # a produce Kafka refuses shows its error name and message, and keeps the form
    browser.get(f"{console.url}topics/{TOPIC}/messages")
    browser.find_element(By.ID, "produce-value").send_keys("lost")
    browser.find_element(By.ID, "produce-partition").send_keys("9")
    browser.find_element(By.ID, "produce-submit").click()
    error = wait_until(lambda: browser.find_elements(By.CSS_SELECTOR, ".banner.error"))[0]
    assert "_UNKNOWN_PARTITION" in error.text
    assert browser.find_element(By.ID, "produce-value").get_attribute("value") == "lost"
    # a topic that does not exist is not created by producing to it
    response = httpx.post(f"{console.url}topics/not-there/produce", data={"value": "v"}, timeout=30)
    assert response.status_code == 404
    assert "UNKNOWN_TOPIC_OR_PART" in response.text
    metadata = AdminClient({"bootstrap.servers": data}).list_topics(timeout=30)
    assert "not-there" not in metadata.topics
    # bad form input too
    response = httpx.post(
        f"{console.url}topics/{TOPIC}/produce",
        data={"value": "v", "headers": "no-equals"},
        timeout=30,
    )
    assert response.status_code == 400
    assert "expected key=value" in response.text


def test_a_range_ending_in_a_transaction_marker_ends_at_the_log_end(
    data: str, console: ConsoleProcess
) -> None:
    """The high watermark counts the commit marker, which no consumer receives: the page
    stops at the end of the log (``enable.partition.eof``) instead of waiting for an offset
    that never comes."""
    producer = Producer({"bootstrap.servers": data, "transactional.id": "browse-txn"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce("transactional", f"txn-{i}".encode(), partition=0)
    producer.commit_transaction(30)
    started = time.perf_counter()
    response = httpx.get(f"{console.url}topics/transactional/messages?partition=0", timeout=30)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200
    assert response.text.count('<tr data-partition="0" data-offset="') == 3
    assert 'data-high="4"' in response.text  # three records and the marker
    assert "Not every partition was read" not in response.text
    assert elapsed < 5, elapsed  # the budget is 10 s


def test_a_100_record_page_renders_under_300_ms(
    data: str, console: ConsoleProcess, browser: Any
) -> None:
    """The issue's figure: a 100-message browser page. Over HTTP, the time to the whole body
    (median of 7 after a warm-up); in Chromium, time to first byte and to the load event
    (Navigation Timing, median of 5). Asserted with room for a loaded machine (3x)."""
    url = f"{console.url}topics/hundred/messages?partition=0"
    with httpx.Client(timeout=30) as client:
        assert client.get(url).status_code == 200
        times = []
        for _ in range(7):
            started = time.perf_counter()
            response = client.get(url)
            times.append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200
            assert response.text.count('<tr data-partition="0"') == 100
        newest = client.get(url + "&from=latest")
        assert newest.text.count('<tr data-partition="0" data-offset="') == 100
        assert 'data-offset="149"' in newest.text and 'data-offset="49"' not in newest.text
    ttfb, loaded = [], []
    for _ in range(5):
        browser.get(url)
        timing = browser.execute_script(
            "const t = performance.getEntriesByType('navigation')[0];"
            "return [t.responseStart - t.requestStart, t.loadEventEnd - t.startTime];"
        )
        ttfb.append(float(timing[0]))
        loaded.append(float(timing[1]))
        assert len(_rows(browser)) == 100
    median = statistics.median(times)
    print(
        f"100-record browser page: HTTP body median {median:.0f} ms (max {max(times):.0f}); "
        f"Chromium TTFB median {statistics.median(ttfb):.0f} ms, "
        f"load event median {statistics.median(loaded):.0f} ms"
    )
    assert median < 900, times
    assert statistics.median(loaded) < 900, loaded
