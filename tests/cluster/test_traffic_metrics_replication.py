"""Kafka's split of traffic between clients and replication (``BrokerTopicStats``), scraped
from three ``franz broker`` processes with ``metrics.listener`` set: ``MessagesInPerSec`` and
``BytesInPerSec`` count leader appends only (a follower's appends are
``ReplicationBytesInPerSec``), and the bytes followers fetch are ``ReplicationBytesOutPerSec``
on the leader, not ``BytesOutPerSec``; their Fetch requests are timed as ``FetchFollower``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.cluster import Cluster, eventually, new_chroot, produce_all, start_cluster
from tests.support.metrics import Samples, metrics_url, scrape, value
from tests.support.zookeeper import ZooKeeperServer

TOPIC = "replicated-traffic"
PARTITIONS = 3
RECORDS = 300
BTM = "kafka_server_brokertopicmetrics_"


@pytest.fixture
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("traffic-replication"))
    props = {"metrics.listener": "127.0.0.1:0"}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def _scrape_all(cluster: Cluster) -> dict[int, Samples]:
    scraped = {}
    for broker_id, broker in cluster.brokers.items():
        url = metrics_url(broker)
        assert url is not None, broker.output()
        scraped[broker_id] = scrape(url)
    return scraped


def _topic(samples: Samples, name: str) -> float:
    return samples.get(BTM + name, {}).get((("topic", TOPIC),), 0.0)


def test_follower_traffic_is_replication_traffic(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, replication_factor=3)])[TOPIC].result(60)

    def complete() -> bool:
        states = [cluster.json(f"/brokers/topics/{TOPIC}/partitions/{p}/state") for p in range(3)]
        return all(len(s["isr"]) == 3 for s in states)

    eventually(complete, 60, "every ISR complete")
    before = _scrape_all(cluster)
    produce_all(cluster.bootstrap(), [(TOPIC, i % PARTITIONS, b"r" * 500) for i in range(RECORDS)])

    def replicated() -> bool:
        after = _scrape_all(cluster)
        bytes_in = sum(_topic(s, "bytesin_total") for s in after.values())
        replicated_in = sum(
            value(s, BTM + "replicationbytesin_total")
            - value(before[b], BTM + "replicationbytesin_total")
            for b, s in after.items()
        )
        # RF=3: every byte a leader appended is appended by its two followers.
        return bytes_in > 0 and replicated_in == 2 * bytes_in

    eventually(lambda: _safe(replicated), 60, "followers caught up")
    after = _scrape_all(cluster)
    # Leader appends only: the cluster's MessagesIn for the topic is the records produced once.
    assert sum(_topic(s, "messagesin_total") for s in after.values()) == RECORDS
    bytes_in = sum(_topic(s, "bytesin_total") for s in after.values())
    assert bytes_in > RECORDS * 500
    replicated_out = sum(
        value(s, BTM + "replicationbytesout_total")
        - value(before[b], BTM + "replicationbytesout_total")
        for b, s in after.items()
    )
    assert replicated_out == 2 * bytes_in  # each leader sent its appends to two followers
    # No consumer: no BytesOut, however much the followers fetched.
    assert sum(_topic(s, "bytesout_total") for s in after.values()) == 0
    followers = sum(
        value(s, "kafka_network_requestmetrics_totaltimems_count", {"request": "FetchFollower"})
        for s in after.values()
    )
    assert followers > 0
    consumer_fetches = [
        s.get("kafka_network_requestmetrics_totaltimems_count", {}).get(
            (("request", "FetchConsumer"),)
        )
        for s in after.values()
    ]
    assert consumer_fetches == [None, None, None]


def _safe(check: Callable[[], bool]) -> bool:
    """A scrape may fail while a broker is busy: try again."""
    try:
        return check()
    except (OSError, KeyError):
        return False
