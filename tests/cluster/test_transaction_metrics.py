"""The transaction coordinator's ``TransactionMarkerChannelManager`` gauges on three
``franz broker`` processes: a transaction commits while the only replica of a partition it
wrote is down (SIGKILL), so its COMMIT marker has no leader to go to; the coordinator's
``UnknownDestinationQueueSize`` shows the transaction waiting until the broker is back and
the marker written (a read_committed consumer then reads the record), then 0 again."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from franz.coordinator.transaction.log_schema import partition_for
from tests.support.cluster import (
    Cluster,
    eventually,
    new_chroot,
    restart_after_session_expiry,
    start_cluster,
)
from tests.support.metrics import metrics_url, scrape, value
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(240)

TID = "metered-txn"
TOPIC = "txn-out"
TXN_PARTITIONS = 3
QUEUE = "kafka_coordinator_transaction_transactionmarkerchannelmanager_unknowndestinationqueuesize"


@pytest.fixture
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("txn-metrics"))
    props = {
        "metrics.listener": "http://127.0.0.1:0",
        "transaction.state.log.num.partitions": str(TXN_PARTITIONS),
        "replica.lag.time.max.ms": "2000",
    }
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def waiting(cluster: Cluster, broker_id: int) -> float:
    url = metrics_url(cluster.brokers[broker_id])
    assert url is not None
    return value(scrape(url), QUEUE)


def test_a_marker_without_a_leader_waits_in_the_unknown_destination_queue(
    cluster: Cluster,
) -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "transactional.id": TID})
    producer.init_transactions(60)
    state = (
        f"/brokers/topics/__transaction_state/partitions/{partition_for(TID, TXN_PARTITIONS)}/state"
    )
    coordinator = cluster.json(state)["leader"]
    target = next(b for b in (1, 2, 3) if b != coordinator)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    topic = NewTopic(TOPIC, 1, replica_assignment=[[target]])
    admin.create_topics([topic], operation_timeout=30)[TOPIC].result(60)
    assert waiting(cluster, coordinator) == 0

    producer.begin_transaction()
    producer.produce(TOPIC, b"committed while its leader was down", partition=0)
    assert producer.flush(30) == 0
    cluster.brokers[target].kill()
    eventually(
        lambda: cluster.json(f"/brokers/topics/{TOPIC}/partitions/0/state")["leader"] == -1,
        30,
        f"{TOPIC}-0 offline",
    )
    producer.commit_transaction(60)  # PrepareCommit logged; the marker cannot be written
    eventually(lambda: waiting(cluster, coordinator) == 1, 30, "the transaction waits")
    assert all(waiting(cluster, b) == 0 for b in cluster.brokers if b not in (coordinator, target))

    restart_after_session_expiry(cluster, target)
    eventually(lambda: waiting(cluster, coordinator) == 0, 60, "the marker written")
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap(),
            "group.id": "reader",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.subscribe([TOPIC])
        values = []
        for _ in range(120):
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                values.append(message.value())
                break
        assert values == [b"committed while its leader was down"]
    finally:
        consumer.close()
