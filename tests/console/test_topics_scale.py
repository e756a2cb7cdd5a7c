"""The topic list with 1,000 topics (issue 21: "pages stay fast on a cluster with 1,000
topics", target < 300 ms on this machine): its pages (100 topics each by default, as
kafka-ui and AKHQ page theirs; ``per_page=all`` on one page) list every topic once with its
counts, search still filters on the server, and the page answers in a bounded time. The
bound asserted (3 s) leaves room for a loaded CI machine; the figures measured are printed
(``-s``) and kept in ``test-artifacts/console/topics-1000.txt``. The figures are
``bench.console_bench``'s; this test guards against per-topic round trips, which would
take seconds."""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from selenium.webdriver.common.by import By

from tests.support.broker import BrokerProcess
from tests.support.console import ARTIFACTS, ConsoleProcess, screenshot

TOPICS = 1000
BOUND_S = 3.0


@pytest.fixture(scope="module")
def thousand(broker: BrokerProcess) -> Iterator[None]:
    free = shutil.disk_usage(broker.data_dir).free
    if free < 2 * 1024**3:  # partitions' index files are sparse; keep a margin anyway
        pytest.skip(f"only {free} bytes free under {broker.data_dir}")
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    names = [f"scale-{i:04d}" for i in range(TOPICS)]
    futures = admin.create_topics(
        [NewTopic(n, 1, 1) for n in names], operation_timeout=120, request_timeout=180
    )  # one CreateTopics request
    for future in futures.values():
        future.result(180)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(7):
        producer.produce("scale-0042", f"record-{i}".encode())
    assert producer.flush(30) == 0
    yield


def _timed_get(url: str) -> tuple[float, float, str]:
    """(time to first byte, time to the whole body, body) of one GET."""
    started = time.perf_counter()
    with httpx.stream("GET", url, timeout=60) as response:
        chunks = response.iter_bytes()
        first = next(chunks)
        ttfb = time.perf_counter() - started
        body = first + b"".join(chunks)
        assert response.status_code == 200
    return ttfb, time.perf_counter() - started, body.decode()


def test_thousand_topics_list_fast(console: ConsoleProcess, browser: Any, thousand: None) -> None:
    url = console.url + "topics"
    _timed_get(url)  # the console's first look (librdkafka connects to the broker)
    figures = []
    for query in ("", "?per_page=all"):
        runs = [_timed_get(url + query) for _ in range(5)]
        ttfb = statistics.median(r[0] for r in runs)
        full = statistics.median(r[1] for r in runs)
        figure = f"topic list{query or ' (first page)'}, {TOPICS} topics: median of 5: "
        figure += f"first byte {ttfb * 1000:.0f} ms, whole page {full * 1000:.0f} ms "
        figure += f"(best {min(r[1] for r in runs) * 1000:.0f} ms)"
        print(figure)
        figures.append(figure)
        assert full < BOUND_S, figure
        if query:
            assert runs[-1][2].count('data-topic="scale-') == TOPICS
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "topics-1000.txt").write_text("\n".join(figures) + "\n")

    # Page by page, as a user clicks "next": every topic exactly once, in name order.
    browser.get(url)
    seen: list[str] = []
    for _ in range(TOPICS // 100 + 2):
        seen += browser.execute_script(
            "return Array.from(document.querySelectorAll('#topics tr[data-topic]'))"
            ".map(tr => tr.dataset.topic)"
        )
        following = browser.find_elements(By.CSS_SELECTOR, "#topic-pages a")
        following = [a for a in following if "next" in a.text]
        if not following:
            break
        following[0].click()
    assert [n for n in seen if n.startswith("scale-")] == [f"scale-{i:04d}" for i in range(TOPICS)]
    assert len(seen) == len(set(seen))
    shown = browser.find_element(By.ID, "topic-shown")
    assert shown.get_attribute("data-matched") == shown.get_attribute("data-total")

    browser.get(url + "?page=1")
    row = browser.find_element(By.CSS_SELECTOR, "#topics tr[data-topic='scale-0042']")
    assert row.get_attribute("data-messages") == "7"
    assert row.get_attribute("data-partitions") == "1"
    screenshot(browser, "topics-1000")


def test_thousand_topics_search(console: ConsoleProcess, browser: Any, thousand: None) -> None:
    browser.get(console.url + "topics?q=scale-09")
    names = browser.execute_script(
        "return Array.from(document.querySelectorAll('#topics tr[data-topic]'))"
        ".map(tr => tr.dataset.topic)"
    )
    assert names == [f"scale-{i:04d}" for i in range(900, 1000)]
