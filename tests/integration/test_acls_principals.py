"""ACLs with real principals (issue 20, acceptance): an embedded broker with a
``SASL_PLAINTEXT`` listener (PLAIN for ``admin`` from the JAAS config, SCRAM-SHA-256 for
``alice`` and ``bob``) and an SSL listener requiring client certificates whose subjects
``ssl.principal.mapping.rules`` maps to a user name; ``authorizer.class.name`` set,
``super.users=User:admin``. ``admin`` adds the ACLs with ``franz acls --command-config`` over
SASL (and lists them the same way); then ``alice`` may write ``orders`` and read it as group
``billing``, exactly that, in confluent-kafka and in kafka-python; ``bob`` writes under a
prefixed ACL except where a deny rule says no; the client certificate ``CN=alice,...`` is
authorized as ``User:alice``.

What Kafka 3.9 answers (``KafkaApis``): a refused Produce is TOPIC_AUTHORIZATION_FAILED, a
refused group (FindCoordinator, JoinGroup, OffsetFetch) GROUP_AUTHORIZATION_FAILED,
InitProducerId with a transactional id TRANSACTIONAL_ID_AUTHORIZATION_FAILED, the ACL APIs
without ALTER/DESCRIBE on the cluster CLUSTER_AUTHORIZATION_FAILED; CreateTopics without
CREATE on the cluster or the topic answers TOPIC_AUTHORIZATION_FAILED for that topic (not
CLUSTER_AUTHORIZATION_FAILED: ``handleCreateTopicsRequest`` falls back to the topic
resource), and Metadata leaves out the topics the principal may not describe.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from tests.integration.sasl_support import PLAIN_JAAS
from tests.support.broker import BrokerProcess
from tests.support.leaks import KAFKA_PYTHON_SOCKET_FILTERS, release_kafka_python_sockets
from tests.support.tls import Pki, make_pki

pytestmark = [pytest.mark.timeout(180), KAFKA_PYTHON_SOCKET_FILTERS]

PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
TOPICS = ("orders", "other", "pay-1", "pay-secret")
TOPIC_DENIED = KafkaError.TOPIC_AUTHORIZATION_FAILED  # 29
GROUP_DENIED = KafkaError.GROUP_AUTHORIZATION_FAILED  # 30
CLUSTER_DENIED = KafkaError.CLUSTER_AUTHORIZATION_FAILED  # 31
TXN_DENIED = KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED  # 53
#: ``CN=alice,OU=clients,O=Franz,C=DE`` -> ``alice`` (Kafka's SslPrincipalMapper rules).
MAPPING_RULES = "RULE:^CN=([^,]*),OU=clients,.*$/$1/,DEFAULT"


@pytest.fixture(autouse=True)
def _release_leaked_sockets() -> Iterator[None]:
    yield
    release_kafka_python_sockets()


def franz(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "franz", *args], capture_output=True, text=True, timeout=60
    )


def command_config(directory: Path, user: str) -> Path:
    mechanism = "PLAIN" if user == "admin" else "SCRAM-SHA-256"
    path = directory / f"{user}.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.username={user}\n"
        f"sasl.password={PASSWORDS[user]}\n"
    )
    return path


class Secured:
    """The broker and how to reach it as each principal."""

    def __init__(self, broker: BrokerProcess, pki: Pki, directory: Path) -> None:
        self.broker = broker
        self.pki = pki
        self.directory = directory

    @property
    def sasl(self) -> str:
        return f"127.0.0.1:{self.broker.ports['SASL_PLAINTEXT']}"

    @property
    def ssl(self) -> str:
        return f"127.0.0.1:{self.broker.ports['SSL']}"

    def librdkafka(self, user: str) -> dict[str, Any]:
        return {
            "bootstrap.servers": self.sasl,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN" if user == "admin" else "SCRAM-SHA-256",
            "sasl.username": user,
            "sasl.password": PASSWORDS[user],
        }

    def kafka_python(self, user: str) -> dict[str, Any]:
        return {
            "bootstrap_servers": self.sasl,
            "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "SCRAM-SHA-256",
            "sasl_plain_username": user,
            "sasl_plain_password": PASSWORDS[user],
        }

    def acls(self, *args: str, user: str = "admin") -> subprocess.CompletedProcess[str]:
        config = command_config(self.directory, user)
        return franz(
            "acls", "--bootstrap-server", self.sasl, "--command-config", str(config), *args
        )


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    pki = make_pki(tmp_path_factory.mktemp("pki"))
    data = tmp_path_factory.mktemp("acl-principals")
    broker = BrokerProcess(
        data,
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:admin",
            **pki.broker_ssl_props(
                "SSL",
                **{"ssl.client.auth": "required", "ssl.principal.mapping.rules": MAPPING_RULES},
            ),
        },
    ).start()
    try:
        s = Secured(broker, pki, data)
        admin_config = str(command_config(data, "admin"))
        for user in ("alice", "bob"):
            done = franz(
                "configs", "--bootstrap-server", s.sasl, "--command-config", admin_config,
                "--entity-type", "users", "--entity-name", user, "--alter",
                "--add-config", f"SCRAM-SHA-256=[password={PASSWORDS[user]}]",
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
        admin = AdminClient(s.librdkafka("admin"))
        for future in admin.create_topics([NewTopic(t, 1, 1) for t in TOPICS]).values():
            future.result(30)
        for args in (
            ["--allow-principal", "User:alice", "--operation", "Write", "--topic", "orders"],
            ["--allow-principal", "User:alice", "--consumer", "--topic", "orders",
             "--group", "billing"],
            ["--allow-principal", "User:bob", "--operation", "Write", "--topic", "pay",
             "--resource-pattern-type", "prefixed"],
            ["--deny-principal", "User:bob", "--operation", "Write", "--topic", "pay-secret"],
        ):  # fmt: skip
            added = s.acls("--add", *args)
            assert added.returncode == 0, added.stderr + added.stdout
        yield s
    finally:
        code = broker.stop()
    assert code == 0, broker.output()


def _produce_error(config: dict[str, Any], topic: str) -> KafkaError | None:
    errors: list[KafkaError | None] = []
    producer = Producer({**config, "message.timeout.ms": 20000})
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(30)
    assert len(errors) == 1
    return errors[0]


def _consume(config: dict[str, Any], topic: str, group: str) -> tuple[list[bytes], list[Any]]:
    consumer = Consumer(
        {**config, "group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}
    )
    values: list[bytes] = []
    errors: list[KafkaError] = []
    try:
        consumer.subscribe([topic])
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                errors.append(msg.error())
                break
            values.append(msg.value())
            break
    finally:
        consumer.close()
    return values, errors


def test_acls_list_over_sasl_shows_what_add_set(secured: Secured) -> None:
    listed = secured.acls("--list", "--topic", "orders", "--group", "billing")
    assert listed.returncode == 0, listed.stderr + listed.stdout
    assert listed.stdout == (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, "
        "patternType=LITERAL)`: \n"
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)\n"
        "\t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW) \n"
        "\n"
        "Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=billing, "
        "patternType=LITERAL)`: \n"
        " \t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n"
        "\n"
    )
    bob = secured.acls("--list", "--principal", "User:bob")
    assert bob.returncode == 0, bob.stderr
    assert "name=pay, patternType=PREFIXED" in bob.stdout
    assert "operation=WRITE, permissionType=DENY" in bob.stdout
    assert "User:alice" not in bob.stdout
    # alice is no super user: listing ACLs needs DESCRIBE on the cluster.
    denied = secured.acls("--list", user="alice")
    assert "ClusterAuthorizationException" in denied.stdout, denied


def test_confluent_kafka_alice_may_do_exactly_what_the_acls_say(secured: Secured) -> None:
    alice = secured.librdkafka("alice")
    assert _produce_error(alice, "orders") is None
    err = _produce_error(alice, "other")
    assert err is not None and err.code() == TOPIC_DENIED
    values, errors = _consume(alice, "orders", "billing")
    assert errors == [] and values and values[0] == b"v"
    _, errors = _consume(alice, "orders", "not-billing")
    assert errors and errors[0].code() == GROUP_DENIED, errors
    # Metadata leaves out what alice may not describe.
    assert sorted(AdminClient(alice).list_topics(timeout=10).topics) == ["orders"]
    admin = AdminClient(alice)
    created = admin.create_topics([NewTopic(f"new-{uuid.uuid4().hex[:6]}", 1, 1)])
    with pytest.raises(KafkaException) as refused:
        next(iter(created.values())).result(30)
    assert refused.value.args[0].code() == TOPIC_DENIED
    binding = AclBinding(
        ResourceType.TOPIC, "other", ResourcePatternType.LITERAL, "User:alice", "*",
        AclOperation.ALL, AclPermissionType.ALLOW,
    )  # fmt: skip
    with pytest.raises(KafkaException) as refused:
        next(iter(admin.create_acls([binding]).values())).result(30)
    assert refused.value.args[0].code() == CLUSTER_DENIED
    producer = Producer({**alice, "transactional.id": "alice-tx"})
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(30)
    assert refused.value.args[0].code() == TXN_DENIED


def test_kafka_python_alice_may_do_exactly_what_the_acls_say(secured: Secured) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewTopic as KpNewTopic
    from kafka.errors import (
        GroupAuthorizationFailedError,
        TopicAuthorizationFailedError,
        TransactionalIdAuthorizationFailedError,
    )

    alice = secured.kafka_python("alice")
    # Idempotent by default: InitProducerId needs WRITE on some topic (KIP-679), which alice has.
    producer = KafkaProducer(**alice, max_block_ms=20000)
    try:
        producer.send("orders", b"kp").get(timeout=30)
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send("other", b"no").get(timeout=30)
    finally:
        producer.close(timeout=5)
    consumer = KafkaConsumer(
        "orders", group_id="billing", auto_offset_reset="earliest", consumer_timeout_ms=20000,
        **alice,
    )  # fmt: skip
    try:
        got = next(iter(consumer)).value
    finally:
        consumer.close()
    assert got == b"v" or got == b"kp"
    consumer = KafkaConsumer("orders", group_id="not-billing", **alice)
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            consumer.poll(timeout_ms=20000)
    finally:
        consumer.close()
    admin = KafkaAdminClient(**alice)
    try:
        assert sorted(admin.list_topics()) == ["orders"]
        with pytest.raises(TopicAuthorizationFailedError):
            admin.create_topics([KpNewTopic("kp-new", 1, 1)])
    finally:
        admin.close()
    transactional = KafkaProducer(**alice, transactional_id="alice-kp-tx", max_block_ms=20000)
    try:
        with pytest.raises(TransactionalIdAuthorizationFailedError):
            transactional.init_transactions()
    finally:
        transactional.close(timeout=5)


def test_prefixed_allow_and_deny_for_bob(secured: Secured) -> None:
    bob = secured.librdkafka("bob")
    assert _produce_error(bob, "pay-1") is None
    err = _produce_error(bob, "pay-secret")
    assert err is not None and err.code() == TOPIC_DENIED
    err = _produce_error(bob, "orders")
    assert err is not None and err.code() == TOPIC_DENIED
    # WRITE (allowed by the prefix) implies DESCRIBE; the deny is on WRITE only.
    assert sorted(AdminClient(bob).list_topics(timeout=10).topics) == ["pay-1", "pay-secret"]
    values, errors = _consume(bob, "pay-1", "billing")
    assert values == [] and errors, "bob was never allowed to read"


def test_a_client_certificate_is_authorized_by_its_mapped_name(secured: Secured) -> None:
    pki = secured.pki
    tls = {
        "bootstrap.servers": secured.ssl,
        "security.protocol": "SSL",
        "ssl.ca.location": str(pki / "ca.pem"),
        "ssl.certificate.location": str(pki / "client.crt"),
        "ssl.key.location": str(pki / "client.key"),
    }
    # CN=alice,OU=clients,O=Franz,C=DE is User:alice: orders yes, other no, billing yes.
    assert _produce_error(tls, "orders") is None
    err = _produce_error(tls, "other")
    assert err is not None and err.code() == TOPIC_DENIED
    values, errors = _consume(tls, "orders", "billing")
    assert errors == [] and values
    assert sorted(AdminClient(tls).list_topics(timeout=10).topics) == ["orders"]
    # franz acls speaks TLS with the client certificate too: the broker answers DescribeAcls
    # (as to User:alice, no super user: CLUSTER_AUTHORIZATION_FAILED), not a TLS error.
    config = secured.directory / "alice-tls.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in tls.items() if k != "bootstrap.servers"))
    listed = franz(
        "acls", "--bootstrap-server", secured.ssl, "--command-config", str(config), "--list"
    )
    assert listed.returncode == 1, listed
    assert listed.stdout == (
        "Error while executing ACL command: org.apache.kafka.common.errors."
        "ClusterAuthorizationException: Cluster authorization failed.\n"
    ), listed
