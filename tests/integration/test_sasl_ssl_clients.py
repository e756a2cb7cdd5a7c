"""SASL_SSL end to end (issue 20, acceptance): one broker with PLAINTEXT, SSL and SASL_SSL
listeners at once; confluent-kafka, kafka-python, aiokafka and kcat each produce and consume
over SASL_SSL with SCRAM-SHA-512 (confluent-kafka with PLAIN too), and what one wrote over
SASL_SSL is read back over SSL and PLAINTEXT; a wrong password over SASL_SSL gets an
authentication error and nothing else (nothing written). The SCRAM user is created with
``franz configs`` over the SASL_SSL listener itself (admin, PLAIN, ``--command-config``)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.helpers import create_ssl_context
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from tests.integration.sasl_support import PLAIN_JAAS, assert_refused_and_undelivered
from tests.support.broker import BrokerProcess
from tests.support.clients import run_kcat
from tests.support.leaks import KAFKA_PYTHON_SOCKET_FILTERS, release_kafka_python_sockets
from tests.support.tls import Pki, make_pki

pytestmark = [pytest.mark.timeout(180), KAFKA_PYTHON_SOCKET_FILTERS]

PASSWORD = "alice-secret"


@pytest.fixture(autouse=True)
def _release_leaked_sockets() -> Iterator[None]:
    """kafka-python 3 keeps the sockets of its failed logins (``tests.support.leaks``)."""
    yield
    release_kafka_python_sockets()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def broker(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("sasl-ssl")
    proc = BrokerProcess(
        data,
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
            "inter.broker.listener.name": "PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
            **pki.broker_ssl_props(),
        },
    ).start()
    try:
        config = sasl_ssl_command_config(pki, data / "admin.properties", "PLAIN", "admin")
        done = franz_tool(
            "configs", "--bootstrap-server", sasl_ssl(proc), "--command-config", str(config),
            "--entity-type", "users", "--entity-name", "alice", "--alter",
            "--add-config", f"SCRAM-SHA-512=[password={PASSWORD}]",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stdout == "Completed updating config for user alice.\n"
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, proc.output()
    assert PASSWORD not in proc.output()


def sasl_ssl(broker: BrokerProcess) -> str:
    return f"127.0.0.1:{broker.ports['SASL_SSL']}"


def sasl_ssl_command_config(pki: Pki, path: Path, mechanism: str, user: str) -> Path:
    password = {"admin": "admin-secret", "alice": PASSWORD}[user]
    path.write_text(
        "security.protocol=SASL_SSL\n"
        f"ssl.ca.location={pki / 'ca.pem'}\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.username={user}\n"
        f"sasl.password={password}\n"
    )
    return path


def franz_tool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "franz", *args], capture_output=True, text=True, timeout=60
    )


def _topic() -> str:
    return f"sasl-ssl-{uuid.uuid4().hex[:8]}"


def librdkafka(
    broker: BrokerProcess, pki: Pki, mechanism: str = "SCRAM-SHA-512", password: str = PASSWORD
) -> dict[str, Any]:
    return {
        "bootstrap.servers": sasl_ssl(broker),
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(pki / "ca.pem"),
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": password,
    }


def python_kwargs(pki: Pki, password: str = PASSWORD) -> dict[str, Any]:
    """kafka-python's and aiokafka's keyword arguments (aiokafka takes ``ssl_context``)."""
    return {
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "alice",
        "sasl_plain_password": password,
    }


def kcat_args(pki: Pki, password: str = PASSWORD) -> list[str]:
    return [
        "-X", "security.protocol=SASL_SSL", "-X", f"ssl.ca.location={pki / 'ca.pem'}",
        "-X", "sasl.mechanisms=SCRAM-SHA-512", "-X", "sasl.username=alice",
        "-X", f"sasl.password={password}",
    ]  # fmt: skip


def read_back(bootstrap: str, topic: str, count: int, extra: dict[str, Any]) -> list[bytes]:
    """``count`` values of ``topic`` partition 0 from the start, by confluent-kafka."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"rb-{uuid.uuid4().hex[:6]}", **extra}
    )
    got: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 60
        while len(got) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    return got


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-512", "PLAIN"])
def test_confluent_kafka_over_sasl_ssl_read_back_on_every_listener(
    broker: BrokerProcess, pki: Pki, mechanism: str
) -> None:
    topic = _topic()
    conf = librdkafka(broker, pki, mechanism)
    producer = Producer({**conf, "acks": "all"})
    for i in range(10):
        producer.produce(topic, f"c{i}".encode(), partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < 10 and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                got.append(message.value())
    finally:
        consumer.close()
    expected = [f"c{i}".encode() for i in range(10)]
    assert got == expected
    # The same records through the other two listeners of the same broker.
    ssl_conf = {"security.protocol": "SSL", "ssl.ca.location": str(pki / "ca.pem")}
    assert read_back(f"127.0.0.1:{broker.ports['SSL']}", topic, 10, ssl_conf) == expected
    assert read_back(broker.bootstrap, topic, 10, {}) == expected


def test_kafka_python_over_sasl_ssl(broker: BrokerProcess, pki: Pki) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    topic = _topic()
    kwargs = {**python_kwargs(pki), "ssl_cafile": str(pki / "ca.pem")}
    producer = KafkaProducer(bootstrap_servers=sasl_ssl(broker), acks="all", **kwargs)
    for i in range(5):
        producer.send(topic, f"k{i}".encode()).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=sasl_ssl(broker),
        auto_offset_reset="earliest",
        group_id=f"g-{topic}",
        consumer_timeout_ms=20000,
        **kwargs,
    )
    got = []
    for message in consumer:
        got.append(message.value)
        if len(got) == 5:
            break
    consumer.close()
    assert got == [f"k{i}".encode() for i in range(5)]


def test_aiokafka_over_sasl_ssl(broker: BrokerProcess, pki: Pki) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = _topic()

    async def run() -> list[bytes]:
        kwargs = {
            **python_kwargs(pki),
            "ssl_context": create_ssl_context(cafile=str(pki / "ca.pem")),
        }
        producer = AIOKafkaProducer(bootstrap_servers=sasl_ssl(broker), acks="all", **kwargs)
        await producer.start()
        try:
            for i in range(5):
                await producer.send_and_wait(topic, f"a{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=sasl_ssl(broker),
            auto_offset_reset="earliest",
            group_id=f"g-{topic}",
            **kwargs,
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(60):
                async for message in consumer:
                    got.append(message.value)
                    if len(got) == 5:
                        break
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == [f"a{i}".encode() for i in range(5)]


def test_kcat_over_sasl_ssl(broker: BrokerProcess, pki: Pki) -> None:
    topic = _topic()
    produced = run_kcat(
        ["-P", "-b", sasl_ssl(broker), "-t", topic, *kcat_args(pki)], stdin=b"x1\nx2\nx3\n"
    )
    assert produced.returncode == 0, produced.stderr
    consumed = run_kcat(
        ["-C", "-b", sasl_ssl(broker), "-t", topic, "-o", "beginning", "-e", "-c", "3",
         *kcat_args(pki)]
    )  # fmt: skip
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == [b"x1", b"x2", b"x3"]


def _topic_absent(broker: BrokerProcess, topic: str) -> bool:
    """No partition directory of ``topic`` in the broker's log dir."""
    return not any((broker.data_dir / "logs").glob(f"{topic}-*"))


def test_confluent_kafka_wrong_password_over_sasl_ssl(broker: BrokerProcess, pki: Pki) -> None:
    """The broker's SASL_AUTHENTICATION_FAILED (``Authentication failed``) over a TLS
    session that itself succeeded; nothing reaches the topic."""
    topic = _topic()
    errors: list[KafkaError] = []
    reports: list[KafkaError] = []
    producer = Producer({**librdkafka(broker, pki, password="wrong"), "error_cb": errors.append})
    producer.produce(topic, b"never", on_delivery=lambda err, _msg: reports.append(err))
    assert_refused_and_undelivered(producer, errors, reports)
    assert _topic_absent(broker, topic)


def test_kafka_python_wrong_password_over_sasl_ssl(
    broker: BrokerProcess, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    from kafka import KafkaProducer
    from kafka.errors import KafkaError as KafkaPythonError

    with pytest.raises(KafkaPythonError):
        KafkaProducer(
            bootstrap_servers=sasl_ssl(broker),
            max_block_ms=5000,
            bootstrap_timeout_ms=5000,  # its bootstrap retries for 30 s by default
            ssl_cafile=str(pki / "ca.pem"),
            **python_kwargs(pki, "wrong"),
        )
    logged = [r.getMessage() for r in caplog.records]
    assert any("SaslAuthenticationFailedError" in m for m in logged), logged[-5:]
    assert any("Authentication failed" in m for m in logged)


def test_aiokafka_wrong_password_over_sasl_ssl(
    broker: BrokerProcess, pki: Pki, caplog: pytest.LogCaptureFixture
) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError as AioKafkaError

    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=sasl_ssl(broker),
            ssl_context=create_ssl_context(cafile=str(pki / "ca.pem")),
            **python_kwargs(pki, "wrong"),
        )
        try:
            await producer.start()
        finally:
            await producer.stop()
            # aiokafka does not close a failed login's connection itself: it closes on the
            # broker's close, 0.5 s after the error (``franz.broker.sasl_gate.CLOSE_GRACE_S``),
            # which must come while this loop runs, or the transport is left unclosed.
            await asyncio.sleep(1.5)

    with pytest.raises(AioKafkaError):
        asyncio.run(run())
    assert "Authentication failed" in " ".join(r.getMessage() for r in caplog.records)


def test_kcat_wrong_password_over_sasl_ssl(broker: BrokerProcess, pki: Pki) -> None:
    topic = _topic()
    out = run_kcat(["-L", "-b", sasl_ssl(broker), "-t", topic, "-m", "3",
                    *kcat_args(pki, "wrong")])  # fmt: skip
    assert out.returncode != 0
    assert b"Authentication failed" in out.stderr
    assert _topic_absent(broker, topic)


def test_franz_configs_over_sasl_ssl_alters_and_describes_with_every_synonym(
    broker: BrokerProcess, pki: Pki, tmp_path: Path
) -> None:
    """The requests franz configs sends itself (IncrementalAlterConfigs of the cluster-wide
    default, DescribeConfigs with synonyms) go over SASL_SSL as ``--command-config`` says."""
    config = str(sasl_ssl_command_config(pki, tmp_path / "admin.properties", "PLAIN", "admin"))
    common = ("configs", "--bootstrap-server", sasl_ssl(broker), "--command-config", config,
              "--entity-type", "brokers", "--entity-default")  # fmt: skip
    added = franz_tool(*common, "--alter", "--add-config", "log.retention.ms=60000")
    assert (added.returncode, added.stdout) == (
        0, "Completed updating default config for brokers in the cluster.\n"
    ), added.stderr  # fmt: skip
    try:
        described = franz_tool(*common, "--describe")
        assert described.returncode == 0, described.stderr
        assert described.stdout.splitlines() == [
            "Default configs for brokers in the cluster are:",
            "  log.retention.ms=60000 sensitive=false synonyms={"
            "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=60000, "
            "DEFAULT_CONFIG:log.retention.hours=168}",
        ]
        # A quota describe over SASL_SSL too (none set: nothing printed).
        quotas = franz_tool(
            "configs", "--bootstrap-server", sasl_ssl(broker), "--command-config", config,
            "--entity-type", "clients", "--describe",
        )  # fmt: skip
        assert (quotas.returncode, quotas.stdout) == (0, ""), quotas.stderr
    finally:
        deleted = franz_tool(*common, "--alter", "--delete-config", "log.retention.ms")
        assert deleted.returncode == 0, deleted.stderr


def test_the_tools_own_requests_go_over_sasl_ssl(
    broker: BrokerProcess, pki: Pki, tmp_path: Path
) -> None:
    """What ``franz log-dirs``, ``franz transactions``, ``franz reassign-partitions`` and
    ``franz consumer-groups --delete-offsets`` send themselves (``franz.admin.cluster_wire``,
    ``franz.admin.wire``: requests librdkafka lacks) goes over SASL_SSL as
    ``--command-config`` says, with the answers the PLAINTEXT listener gives."""
    config = str(sasl_ssl_command_config(pki, tmp_path / "admin.properties", "PLAIN", "admin"))
    common = ("--bootstrap-server", sasl_ssl(broker), "--command-config", config)
    topic, group = _topic(), f"g-{uuid.uuid4().hex[:6]}"
    producer = Producer(librdkafka(broker, pki))
    producer.produce(topic, b"v", partition=0)
    assert producer.flush(30) == 0
    consumer = Consumer({**librdkafka(broker, pki), "group.id": group})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
    finally:
        consumer.close()

    dirs = franz_tool("log-dirs", *common, "--describe", "--topic-list", topic)
    assert dirs.returncode == 0, dirs.stderr
    assert dirs.stdout.startswith("Querying brokers for log directories information\n")
    assert f'"partition":"{topic}-0"' in dirs.stdout

    listed = franz_tool("transactions", *common, "list")
    assert listed.returncode == 0, listed.stderr
    header = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
    assert listed.stdout.split()[:4] == header

    moves = franz_tool("reassign-partitions", *common, "--list")
    assert moves.returncode == 0, moves.stderr
    assert moves.stdout == "No partition reassignments found.\n"

    deleted = franz_tool(
        "consumer-groups", *common, "--delete-offsets", "--group", group, "--topic", topic
    )
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.splitlines()[0] == "Request succeed for deleting offsets with topic " + (
        f"{topic} group {group}"
    )
    plain = franz_tool(
        "consumer-groups", "--bootstrap-server", f"127.0.0.1:{broker.ports['PLAINTEXT']}",
        "--describe", "--group", group,
    )  # fmt: skip
    assert topic not in plain.stdout, plain.stdout
