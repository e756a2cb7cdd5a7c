"""A 3-broker ZooKeeper cluster whose inter-broker listener is SASL_SSL, with the authorizer
on (issue 20, acceptance).

Each broker has a PLAINTEXT listener for the test's clients and an ``INTERNAL`` listener
mapped to SASL_SSL, named by ``inter.broker.listener.name``: TLS, then SASL PLAIN as ``admin``
(``sasl.mechanism.inter.broker.protocol``, the JAAS config's ``username``/``password``).
``authorizer.class.name`` is Kafka's AclAuthorizer and ``super.users=User:admin``, so the
controller's LeaderAndIsr/UpdateMetadata/StopReplica, the replica fetchers' Fetch,
AlterPartition and controlled shutdown (all CLUSTER_ACTION in ``KafkaApis``) pass only
because the brokers authenticate as ``admin`` over SASL_SSL. The clients (``User:ANONYMOUS``)
get ALL on every topic and group from ``franz acls`` sent as ``admin`` over SASL_SSL, and
nothing on the cluster. An idempotent acks=all producer runs while the leader is SIGKILLed:
nothing acknowledged is lost and the replicas end byte-identical.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.sasl_support import PLAIN_JAAS
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

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def admin_command_config(pki: Pki) -> Path:
    path = pki / "admin.properties"
    path.write_text(
        "security.protocol=SASL_SSL\n"
        f"ssl.ca.location={pki / 'ca.pem'}\n"
        "sasl.mechanism=PLAIN\nsasl.username=admin\nsasl.password=admin-secret\n"
    )
    return path


def franz_acls(cluster: Cluster, pki: Pki, *args: str) -> str:
    internal = f"127.0.0.1:{cluster.brokers[1].ports['INTERNAL']}"
    done = subprocess.run(
        [sys.executable, "-m", "franz", "acls", "--bootstrap-server", internal,
         "--command-config", str(admin_command_config(pki)), *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


@pytest.fixture(scope="module")
def sasl_ssl_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory, pki: Pki
) -> Iterator[Cluster]:
    props = {
        "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
        "inter.broker.listener.name": "INTERNAL",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS,
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:admin",
        **pki.broker_ssl_props("INTERNAL"),
    }
    base = Path(tmp_path_factory.mktemp("sasl-ssl-cluster"))
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        for resource in (["--topic", "*"], ["--group", "*"]):
            franz_acls(c, pki, "--add", "--allow-principal", "User:ANONYMOUS", *resource)
        yield c


def test_brokers_register_the_sasl_ssl_listener_and_acls_apply_to_clients(
    sasl_ssl_cluster: Cluster, pki: Pki
) -> None:
    for broker_id in sasl_ssl_cluster.brokers:
        registration = sasl_ssl_cluster.json(f"/brokers/ids/{broker_id}")
        assert registration["listener_security_protocol_map"] == {
            "PLAINTEXT": "PLAINTEXT",
            "INTERNAL": "SASL_SSL",
        }
    listed = franz_acls(sasl_ssl_cluster, pki, "--list", "--topic", "*")
    assert "(principal=User:ANONYMOUS, host=*, operation=ALL, permissionType=ALLOW)" in listed
    # ANONYMOUS has nothing on the cluster: listing ACLs over PLAINTEXT is refused.
    done = subprocess.run(
        [sys.executable, "-m", "franz", "acls", "--bootstrap-server",
         sasl_ssl_cluster.bootstrap(), "--list"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "ClusterAuthorizationException" in done.stdout, done


def test_replication_over_sasl_ssl_survives_a_leader_sigkill(sasl_ssl_cluster: Cluster) -> None:
    cluster = sasl_ssl_cluster
    controller = cluster.controller_id()
    assert controller is not None
    victim_id = next(b for b in sorted(cluster.brokers) if b != controller)
    others = sorted(b for b in cluster.brokers if b != victim_id)
    topic = f"sasl-ssl-failover-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    new = NewTopic(
        topic, 1, replica_assignment=[[victim_id, *others]], config={"min.insync.replicas": "2"}
    )
    admin.create_topics([new], operation_timeout=30)[topic].result(60)

    def isr() -> list[int]:
        state = partition_state(cluster, topic)
        return sorted(state["isr"]) if state else []

    eventually(lambda: isr() == [1, 2, 3], 60, f"{topic}: every replica in the ISR")
    state = partition_state(cluster, topic)
    assert state is not None and state["leader"] == victim_id

    producer = AckedProducer(cluster.bootstrap(), topic, [0], pad=b"x" * 200)
    victim = cluster.brokers[victim_id]
    try:
        eventually(lambda: producer.count() >= 500, 60, "records acknowledged before the kill")
        victim.kill()
        eventually(
            lambda: (partition_state(cluster, topic) or {}).get("leader") in others,
            60,
            "a new leader from the ISR",
        )
        before = producer.count()
        eventually(lambda: producer.count() >= before + 500, 90, "records acknowledged after")
        restart_after_session_expiry(cluster, victim_id)
        eventually(lambda: isr() == [1, 2, 3], 90, "the old leader rejoins the ISR over SASL_SSL")
    finally:
        unreported = producer.stop()
        if victim.proc is None:
            victim.start()
    assert unreported == 0
    assert producer.errors == []
    acked = producer.values(0)
    stored = read_numbers(cluster.bootstrap(), topic)
    assert set(acked) <= set(stored), sorted(set(acked) - set(stored))[:10]
    assert len(stored) == len(set(stored))
    assert [n for n in stored if n in set(acked)] == sorted(acked)

    def replicas_identical() -> bool:
        copies = [log_bytes(b, topic) for b in cluster.brokers.values()]
        return all(c == copies[0] for c in copies) and len(copies[0]) > 0

    eventually(replicas_identical, 60, "the replicas are byte-identical")
