"""The topic pages on a replicated cluster (2 brokers in ZooKeeper mode): the size counts
each partition once (its leader replica, not every replica), and a stopped broker shows up
as under-replicated partitions in the list and marked rows in the topic's partitions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from selenium.webdriver.common.by import By

from franz.admin.cluster_wire import ClusterClient
from tests.support.cluster import Cluster, new_chroot, start_cluster
from tests.support.console import ConsoleProcess, screenshot, wait_until
from tests.support.console_pages import rows
from tests.support.zookeeper import ZooKeeperServer


@pytest.fixture(scope="module")
def two_brokers(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("console-cluster"))
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, ids=(1, 2)) as c:
        yield c


def test_replicated_sizes_and_under_replicated_partitions(
    two_brokers: Cluster, browser: Any, tmp_path: Path
) -> None:
    bootstrap = two_brokers.brokers[1].bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("replicated", 2, 2)], operation_timeout=30)["replicated"].result(
        60
    )
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(40):
        producer.produce("replicated", f"value-{i}".encode() * 8, partition=i % 2)
    assert producer.flush(30) == 0

    def in_sync() -> bool:
        topic = admin.list_topics("replicated", timeout=30).topics["replicated"]
        return all(len(p.isrs) == 2 for p in topic.partitions.values())

    wait_until(in_sync)
    topic = admin.list_topics("replicated", timeout=30).topics["replicated"]
    leaders = {p.id: p.leader for p in topic.partitions.values()}
    wire = ClusterClient(bootstrap, timeout_ms=30_000, client_id="console-test")
    replica_sizes: dict[tuple[int, int], int] = {}  # (broker, partition) -> bytes
    for broker in (1, 2):
        for log_dir in wire.describe_log_dirs(broker, {"replicated": [0, 1]}).values():
            for (_, partition), info in log_dir.replicas:
                replica_sizes[(broker, partition)] = info.size
    leader_size = sum(replica_sizes[(leaders[p], p)] for p in (0, 1))

    with ConsoleProcess(bootstrap, tmp_path / "console") as console:
        browser.get(console.url + "topics")
        row = rows(browser, "topics", "topic")["replicated"]
        assert (row["partitions"], row["rf"], row["urp"]) == ("2", "2", "0")
        assert int(row["messages"]) == 40
        assert int(row["size"]) == leader_size  # each partition once, not once per replica
        assert leader_size < sum(replica_sizes.values())

        two_brokers.brokers[2].stop()

        def under_replicated() -> bool:
            browser.get(console.url + "topics")
            return rows(browser, "topics", "topic")["replicated"]["urp"] == "2"

        wait_until(under_replicated, timeout=60, every=1)
        browser.get(console.url + "topics/replicated")
        marked = browser.find_elements(By.CSS_SELECTOR, "#partitions tr.under-replicated")
        assert len(marked) == 2
        assert browser.find_element(By.ID, "under-replicated").text == "2"
        for partition in rows(browser, "partitions", "partition").values():
            assert partition["leader"] == "1"
        cells = marked[0].find_elements(By.TAG_NAME, "td")
        assert cells[2].text == ", ".join(
            str(r) for r in admin.list_topics("replicated", timeout=30)
            .topics["replicated"].partitions[int(cells[0].text)].replicas
        )  # fmt: skip
        assert cells[3].text.startswith("1 ")  # ISR: broker 1 only, then the badge
        screenshot(browser, "topic-under-replicated")
