"""Group coordinator metrics and consumer lag on three ``franz broker`` processes: only the
group's coordinator reports the group; it gives the committed offset of every partition,
and the lag only of the partition it leads (a topic of three single-replica partitions, one
per broker): the others' high watermarks are not known there, so those lag samples (and the
topic's ``lag_sum``) are left out. The lag it gives equals ``consumer-groups --describe``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.clients import consumer_groups_describe
from tests.support.cluster import Cluster, eventually, new_chroot, produce_all, start_cluster
from tests.support.metrics import Samples, metrics_url, scrape, value
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(240)

TOPIC = "spread"
GROUP = "spread-group"
PER_PARTITION = 30
GMM = "kafka_coordinator_group_groupmetadatamanager_"


@pytest.fixture
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("group-metrics"))
    props = {"metrics.listener": "http://127.0.0.1:0", "group.initial.rebalance.delay.ms": "0"}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def scrape_all(cluster: Cluster) -> dict[int, Samples]:
    scraped = {}
    for broker_id, broker in cluster.brokers.items():
        url = metrics_url(broker)
        assert url is not None
        scraped[broker_id] = scrape(url)
    return scraped


def per_partition(samples: Samples, name: str) -> dict[int, float]:
    return {
        int(dict(labels)["partition"]): v
        for labels, v in samples.get(name, {}).items()
        if dict(labels)["consumergroup"] == GROUP and dict(labels)["topic"] == TOPIC
    }


def describe(bootstrap: str) -> dict[int, tuple[int, int]]:
    """partition -> (CURRENT-OFFSET, LAG) of ``franz consumer-groups --describe``."""
    return {
        int(r["PARTITION"]): (int(r["CURRENT-OFFSET"]), int(r["LAG"]))
        for r in consumer_groups_describe(bootstrap, GROUP)
        if r["TOPIC"] == TOPIC and r["CURRENT-OFFSET"] != "-"
    }


def test_the_coordinator_reports_the_group_and_the_lag_it_knows(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    topic = NewTopic(TOPIC, 3, replica_assignment=[[1], [2], [3]])
    admin.create_topics([topic], operation_timeout=30)[TOPIC].result(60)
    produce_all(
        cluster.bootstrap(),
        [(TOPIC, p, f"{p}-{i}".encode()) for p in range(3) for i in range(PER_PARTITION)],
    )
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([TOPIC])
        taken: dict[int, int] = {}
        for _ in range(600):
            if len(taken) == 3 and all(n >= 5 for n in taken.values()):
                break
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            partition = message.partition()
            assert partition is not None
            if taken.get(partition, 0) >= 10:
                continue  # part of each partition only
            taken[partition] = taken.get(partition, 0) + 1
            consumer.commit(message=message, asynchronous=False)
        assert len(taken) == 3, taken
    finally:
        consumer.close()

    described = describe(cluster.bootstrap())
    assert set(described) == {0, 1, 2}
    scraped = scrape_all(cluster)
    groups = {b: value(s, GMM + "numgroups") for b, s in scraped.items()}
    assert sorted(groups.values()) == [0, 0, 1], groups
    coordinator = next(b for b, n in groups.items() if n == 1)
    samples = scraped[coordinator]
    assert value(samples, GMM + "numgroupsempty") == 1
    assert value(samples, GMM + "numoffsets") == 3
    assert value(samples, "kafka_consumergroup_members", {"consumergroup": GROUP}) == 0
    current = per_partition(samples, "kafka_consumergroup_current_offset")
    assert current == {p: offset for p, (offset, _) in described.items()}
    # Partition p lives on broker p + 1 only: the coordinator knows the HW of its own.
    led = coordinator - 1
    assert per_partition(samples, "kafka_consumergroup_lag") == {led: described[led][1]}
    assert described[led][1] == PER_PARTITION - described[led][0] > 0
    assert "kafka_consumergroup_lag_sum" not in samples
    assert value(
        samples,
        "kafka_consumergroup_current_offset_sum",
        {"consumergroup": GROUP, "topic": TOPIC},
    ) == sum(current.values())
    for broker_id, other in scraped.items():
        if broker_id != coordinator:
            assert "kafka_consumergroup_current_offset" not in other
            assert "kafka_consumergroup_members" not in other
    # The samples stay put while nothing changes.
    eventually(
        lambda: (
            per_partition(scrape_all(cluster)[coordinator], "kafka_consumergroup_lag")
            == {led: described[led][1]}
        ),
        10,
        "the same lag on a second scrape",
    )
