"""SASL on a 3-broker ZooKeeper cluster whose one listener (clients and inter-broker) is
``SASL_PLAINTEXT``: the brokers authenticate to each other (PLAIN,
``sasl.mechanism.inter.broker.protocol``), SCRAM credentials created on one broker
(``franz configs``, AlterUserScramCredentials to the controller) land in
``/config/users/<user>`` as Kafka writes them, keep the quota keys already there, and
authenticate on the other brokers through the ``/config/changes`` notification; a deleted
credential stops authenticating everywhere; an RF=3 topic replicates under acks=all."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kazoo.client import KazooClient

from franz.errors import ErrorCode
from franz.security.scram import ScramMechanism, client_final_message
from tests.integration.sasl_support import (
    command_config,
    franz_configs,
    librdkafka_config,
    sasl_overrides,
)
from tests.support.broker import BrokerProcess
from tests.support.cluster import BROKER_IDS, broker_props, eventually, new_chroot
from tests.support.wire import WireClient, metadata_request
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def sasl_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[dict[int, BrokerProcess], KazooClient]]:
    base = Path(tmp_path_factory.mktemp("sasl-cluster"))
    zk_connect = new_chroot(zookeeper_server.connect_string)
    brokers: dict[int, BrokerProcess] = {}
    hosts, _, chroot = zk_connect.partition("/")
    kazoo = KazooClient(hosts=f"{hosts}/{chroot}")
    try:
        for broker_id in BROKER_IDS:
            props = {
                **broker_props(broker_id, zk_connect),
                **sasl_overrides(**{"sasl.mechanism.inter.broker.protocol": "PLAIN"}),
            }
            brokers[broker_id] = BrokerProcess(base / f"broker-{broker_id}", props).start()
        admin = AdminClient(
            librdkafka_config(brokers[1].bootstrap, "PLAIN", "admin", "admin-secret")
        )
        eventually(
            lambda: len(admin.list_topics(timeout=10).brokers) == 3, 60, "broker 1 sees 3 brokers"
        )
        kazoo.start(timeout=15)
        yield brokers, kazoo
    finally:
        kazoo.stop()
        kazoo.close()
        for process in brokers.values():
            process.stop()


def _scram_login(bootstrap: str, user: str, password: str) -> int:
    from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
    from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

    with WireClient.connect(bootstrap) as client:
        assert client.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-256")).error_code == 0
        bare = f"n={user},r=clusternonce"
        first = client.request(SaslAuthenticateRequest(auth_bytes=f"n,,{bare}".encode()))
        if first.error_code:
            return int(first.error_code)
        final, _ = client_final_message(
            ScramMechanism.SCRAM_SHA_256, password, bare, bytes(first.auth_bytes).decode()
        )
        response = client.request(SaslAuthenticateRequest(auth_bytes=final.encode()))
        if response.error_code == 0:
            assert len(client.request(metadata_request(None)).brokers) == 3
        return int(response.error_code)


def test_scram_credentials_made_on_one_broker_authenticate_on_the_others(
    sasl_cluster: tuple[dict[int, BrokerProcess], KazooClient], tmp_path: Path
) -> None:
    brokers, kazoo = sasl_cluster
    # A quota key the i-quotas side owns is already in the user's znode: it must survive.
    kazoo.create(
        "/config/users/carol",
        json.dumps({"version": 1, "config": {"producer_byte_rate": "1024"}}).encode(),
        makepath=True,
    )
    config = command_config(tmp_path / "admin.properties")
    for user in ("alice", "carol"):
        done = franz_configs(
            brokers[1].bootstrap,
            config,
            "--entity-name",
            user,
            "--alter",
            "--add-config",
            f"SCRAM-SHA-256=[iterations=8192,password={user}-secret]",
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == f"Completed updating config for user {user}.\n"
    data, _ = kazoo.get("/config/users/alice")
    znode = json.loads(data)
    assert znode["version"] == 1 and list(znode["config"]) == ["SCRAM-SHA-256"]
    value = znode["config"]["SCRAM-SHA-256"]
    assert value.startswith("salt=") and ",stored_key=" in value and ",server_key=" in value
    assert value.endswith(",iterations=8192") and "alice-secret" not in data.decode()
    carol = json.loads(kazoo.get("/config/users/carol")[0])["config"]
    assert carol["producer_byte_rate"] == "1024" and "SCRAM-SHA-256" in carol
    changes = [
        json.loads(kazoo.get(f"/config/changes/{name}")[0])
        for name in kazoo.get_children("/config/changes")
    ]
    assert {"version": 2, "entity_path": "users/alice"} in changes
    for broker_id in BROKER_IDS:
        bootstrap = brokers[broker_id].bootstrap
        eventually(
            lambda b=bootstrap: _scram_login(b, "alice", "alice-secret") == 0,
            30,
            f"alice authenticates on broker {broker_id}",
        )
        assert _scram_login(bootstrap, "carol", "carol-secret") == 0
        assert _scram_login(bootstrap, "alice", "wrong") == ErrorCode.SASL_AUTHENTICATION_FAILED
    # Every broker answers the describe from ZooKeeper.
    for broker_id in BROKER_IDS:
        out = franz_configs(
            brokers[broker_id].bootstrap, config, "--describe", "--entity-name", "alice"
        )
        assert out.stdout == (
            "SCRAM credential configs for user-principal 'alice' are "
            "SCRAM-SHA-256=iterations=8192\n"
        ), out.stderr
    done = franz_configs(
        brokers[2].bootstrap,
        config,
        "--entity-name",
        "carol",
        "--alter",
        "--delete-config",
        "SCRAM-SHA-256",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(kazoo.get("/config/users/carol")[0])["config"] == {
        "producer_byte_rate": "1024"
    }
    for broker_id in BROKER_IDS:
        eventually(
            lambda b=brokers[broker_id].bootstrap: (
                _scram_login(b, "carol", "carol-secret") == ErrorCode.SASL_AUTHENTICATION_FAILED
            ),
            30,
            f"carol refused on broker {broker_id}",
        )


def test_replicated_topic_over_sasl_between_brokers(
    sasl_cluster: tuple[dict[int, BrokerProcess], KazooClient], tmp_path: Path
) -> None:
    brokers, _ = sasl_cluster
    bootstrap = ",".join(b.bootstrap for b in brokers.values())
    conf = librdkafka_config(bootstrap, "PLAIN", "alice", "alice-secret")
    topic = f"sasl-rf3-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(conf)
    admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3)])[topic].result(60)
    producer = Producer({**conf, "acks": "all", "enable.idempotence": True})
    for i in range(300):
        producer.produce(topic, str(i).encode())
    assert producer.flush(60) == 0

    # Every replica caught up: followers fetched from the leaders over SASL.
    def in_sync() -> bool:
        meta = admin.list_topics(topic, timeout=10).topics[topic]
        return all(len(p.isrs) == 3 for p in meta.partitions.values())

    eventually(in_sync, 60, "every partition's ISR holds 3 replicas")
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while len(seen) < 300 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                seen.add(int(message.value()))
    finally:
        consumer.close()
    assert seen == set(range(300))
    for broker in brokers.values():
        assert "SASL authentication with" not in broker.output()


def test_user_names_are_sanitized_in_zookeeper_as_kafka(
    sasl_cluster: tuple[dict[int, BrokerProcess], KazooClient], tmp_path: Path
) -> None:
    """Kafka's ``Sanitizer``: ``/config/users/<URL-encoded name>``; describe and login use
    the real name."""
    brokers, kazoo = sasl_cluster
    config = command_config(tmp_path / "admin.properties")
    user = "dev ops@example.com"
    done = franz_configs(
        brokers[3].bootstrap,
        config,
        "--entity-name",
        user,
        "--alter",
        "--add-config",
        "SCRAM-SHA-256=[password=dev-secret]",
    )
    assert done.returncode == 0, done.stderr
    assert "dev%20ops%40example.com" in kazoo.get_children("/config/users")
    eventually(
        lambda: _scram_login(brokers[1].bootstrap, "dev ops@example.com", "dev-secret") == 0,
        30,
        "the sanitized user authenticates on broker 1",
    )
    listed = franz_configs(brokers[2].bootstrap, config, "--describe")
    assert (
        f"SCRAM credential configs for user-principal '{user}' are "
        "SCRAM-SHA-256=iterations=4096"
    ) in listed.stdout.splitlines(), listed.stdout
