"""A 3-broker ZooKeeper cluster whose inter-broker listener is TLS (issue 20, part 1-2).

Each broker has a PLAINTEXT listener for the clients and an ``INTERNAL`` listener mapped to
SSL (``listener.security.protocol.map``) with ``ssl.client.auth=required``, named by
``inter.broker.listener.name``: the controller's channel, the replica fetchers, AlterPartition
and the transaction marker channel find their peers on INTERNAL, which speaks TLS only, so
replication working at all proves they speak TLS (with this broker's certificate as their
client certificate). An idempotent acks=all producer runs while the leader is SIGKILLed:
nothing acknowledged is lost and the replicas end byte-identical.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.clients import run_kcat
from tests.support.cluster import (
    AckedProducer,
    Cluster,
    eventually,
    log_bytes,
    new_chroot,
    partition_state,
    read_numbers,
    restart_after_session_expiry,
    start_cluster,
)
from tests.support.tls import Pki, make_pki
from tests.support.zookeeper import ZooKeeperServer


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory, pki: Pki
) -> Iterator[Cluster]:
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL",
        "inter.broker.listener.name": "INTERNAL",
        **pki.broker_ssl_props("INTERNAL", **{"ssl.client.auth": "required"}),
    }
    base = Path(tmp_path_factory.mktemp("tls-cluster"))
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def test_brokers_register_both_listeners(tls_cluster: Cluster) -> None:
    for broker_id, broker in tls_cluster.brokers.items():
        registration = tls_cluster.json(f"/brokers/ids/{broker_id}")
        assert registration["endpoints"] == [
            f"PLAINTEXT://127.0.0.1:{broker.ports['PLAINTEXT']}",
            f"INTERNAL://127.0.0.1:{broker.ports['INTERNAL']}",
        ]
        assert registration["listener_security_protocol_map"] == {
            "PLAINTEXT": "PLAINTEXT",
            "INTERNAL": "SSL",
        }
        # Pre-0.10 clients' host/port: the first PLAINTEXT endpoint.
        assert registration["port"] == broker.ports["PLAINTEXT"]


def test_metadata_on_each_listener_lists_every_broker_on_that_listener(
    tls_cluster: Cluster, pki: Pki
) -> None:
    broker = tls_cluster.brokers[1]
    plain = tls_cluster.kcat_metadata(broker)
    done = run_kcat(
        ["-J", "-L", "-b", f"127.0.0.1:{broker.ports['INTERNAL']}", "-m", "15",
         "-X", "security.protocol=ssl", "-X", f"ssl.ca.location={pki / 'ca.pem'}",
         "-X", f"ssl.certificate.location={pki / 'client.crt'}",
         "-X", f"ssl.key.location={pki / 'client.key'}"],
        timeout=30,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    internal: dict[str, Any] = json.loads(done.stdout)

    def names(metadata: dict[str, Any]) -> list[str]:
        return sorted(b["name"] for b in metadata["brokers"])

    assert names(plain) == sorted(
        f"127.0.0.1:{b.ports['PLAINTEXT']}" for b in tls_cluster.brokers.values()
    )
    assert names(internal) == sorted(
        f"127.0.0.1:{b.ports['INTERNAL']}" for b in tls_cluster.brokers.values()
    )


def test_replication_over_tls_survives_a_leader_sigkill(tls_cluster: Cluster) -> None:
    controller = tls_cluster.controller_id()
    assert controller is not None
    victim_id = next(b for b in sorted(tls_cluster.brokers) if b != controller)
    others = sorted(b for b in tls_cluster.brokers if b != victim_id)
    topic = f"tls-failover-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": tls_cluster.bootstrap()})
    new = NewTopic(
        topic, 1, replica_assignment=[[victim_id, *others]], config={"min.insync.replicas": "2"}
    )
    admin.create_topics([new], operation_timeout=30)[topic].result(60)

    def isr() -> list[int]:
        state = partition_state(tls_cluster, topic)
        return sorted(state["isr"]) if state else []

    eventually(lambda: isr() == [1, 2, 3], 60, f"{topic}: every replica in the ISR")
    state = partition_state(tls_cluster, topic)
    assert state is not None and state["leader"] == victim_id

    producer = AckedProducer(tls_cluster.bootstrap(), topic, [0], pad=b"x" * 200)
    victim = tls_cluster.brokers[victim_id]
    try:
        eventually(lambda: producer.count() >= 500, 60, "records acknowledged before the kill")
        victim.kill()
        eventually(
            lambda: (partition_state(tls_cluster, topic) or {}).get("leader") in others,
            60,
            "a new leader from the ISR",
        )
        before = producer.count()
        eventually(lambda: producer.count() >= before + 500, 90, "records acknowledged after")
        restart_after_session_expiry(tls_cluster, victim_id)
        eventually(lambda: isr() == [1, 2, 3], 90, "the old leader rejoins the ISR over TLS")
    finally:
        unreported = producer.stop()
        if victim.proc is None:
            victim.start()
    assert unreported == 0
    assert producer.errors == []
    acked = producer.values(0)
    stored = read_numbers(tls_cluster.bootstrap(), topic)
    assert set(acked) <= set(stored), sorted(set(acked) - set(stored))[:10]
    # Idempotence: no record twice, and the acknowledged ones in order.
    assert len(stored) == len(set(stored))
    assert [n for n in stored if n in set(acked)] == sorted(acked)

    def replicas_identical() -> bool:
        copies = [log_bytes(b, topic) for b in tls_cluster.brokers.values()]
        return all(c == copies[0] for c in copies) and len(copies[0]) > 0

    eventually(replicas_identical, 60, "the replicas are byte-identical")


def test_transaction_markers_reach_other_leaders_over_tls(tls_cluster: Cluster) -> None:
    """A transaction over partitions led by every broker: the coordinator sends
    WriteTxnMarkers to the other leaders on INTERNAL; a read_committed consumer sees every
    record only if each partition got its commit marker."""
    topic = f"tls-txn-{uuid.uuid4().hex[:8]}"
    ids = sorted(tls_cluster.brokers)
    admin = AdminClient({"bootstrap.servers": tls_cluster.bootstrap()})
    assignment = [[ids[i], ids[(i + 1) % 3], ids[(i + 2) % 3]] for i in range(3)]
    new = NewTopic(topic, 3, replica_assignment=assignment)
    admin.create_topics([new], operation_timeout=30)[topic].result(60)
    eventually(
        lambda: all(
            (partition_state(tls_cluster, topic, p) or {}).get("leader") == assignment[p][0]
            for p in range(3)
        ),
        60,
        f"{topic}: a leader on every broker",
    )
    producer = Producer(
        {
            "bootstrap.servers": tls_cluster.bootstrap(),
            "transactional.id": f"tx-{topic}",
            "transaction.timeout.ms": 30000,
        }
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    for i in range(30):
        producer.produce(topic, b"%d" % i, partition=i % 3)
    producer.commit_transaction(60)
    consumer = Consumer(
        {
            "bootstrap.servers": tls_cluster.bootstrap(),
            "group.id": f"verify-{topic}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    got: list[int] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
        deadline = time.monotonic() + 60
        while len(got) < 30 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(int(message.value()))
    finally:
        consumer.close()
    assert sorted(got) == list(range(30))
