"""confluent-kafka, kafka-python, aiokafka and kcat over a ``SASL_PLAINTEXT`` listener with
PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (issue 20, part 3): each produces and consumes; with a
wrong password each gets an authentication error and nothing else. The SCRAM user is created
with ``franz configs --entity-type users --alter`` over the SASL listener itself (as admin,
PLAIN), as with Kafka's ``kafka-configs.sh``."""

from __future__ import annotations

import asyncio
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from tests.integration.sasl_support import (
    MECHANISMS,
    assert_refused_and_undelivered,
    command_config,
    franz_configs,
    librdkafka_config,
    python_client_config,
    sasl_broker,
)
from tests.support.broker import BrokerProcess
from tests.support.leaks import KAFKA_PYTHON_SOCKET_FILTERS, release_kafka_python_sockets

pytestmark = [pytest.mark.timeout(180), KAFKA_PYTHON_SOCKET_FILTERS]


@pytest.fixture(autouse=True)
def _release_leaked_sockets() -> Iterator[None]:
    """kafka-python 3 keeps the sockets of its failed logins (``tests.support.leaks``)."""
    yield
    release_kafka_python_sockets()


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("sasl-clients")
    proc = sasl_broker(data).start()
    try:
        config = command_config(data / "admin.properties")
        done = franz_configs(
            proc.bootstrap,
            config,
            "--entity-name",
            "alice",
            "--alter",
            "--add-config",
            "SCRAM-SHA-256=[iterations=8192,password=alice-secret],"
            "SCRAM-SHA-512=[password=alice-secret]",
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == "Completed updating config for user alice.\n"
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, proc.output()


def _topic() -> str:
    return f"sasl-{uuid.uuid4().hex[:8]}"


def test_configs_describe_shows_the_scram_user_as_kafka(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    config = command_config(tmp_path / "admin.properties")
    out = franz_configs(broker.bootstrap, config, "--describe", "--entity-name", "alice")
    assert out.returncode == 0, out.stderr
    assert out.stdout == (
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"
    )
    # No password or key material anywhere in the broker's log.
    assert "alice-secret" not in broker.output()


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_produces_and_consumes(broker: BrokerProcess, mechanism: str) -> None:
    topic = _topic()
    conf = librdkafka_config(broker.bootstrap, mechanism, "alice", "alice-secret")
    producer = Producer(conf)
    for i in range(10):
        producer.produce(topic, f"m{i}".encode())
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
    assert got == [f"m{i}".encode() for i in range(10)]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_wrong_password_gets_an_authentication_error(
    broker: BrokerProcess, mechanism: str
) -> None:
    errors: list[KafkaError] = []
    reports: list[KafkaError] = []
    conf = librdkafka_config(broker.bootstrap, mechanism, "alice", "wrong")
    producer = Producer({**conf, "error_cb": errors.append})
    topic = _topic()
    producer.produce(topic, b"never", on_delivery=lambda err, _msg: reports.append(err))
    # Nothing was written: the message was still queued when purged.
    assert_refused_and_undelivered(producer, errors, reports)
    assert not any((broker.data_dir / "logs").glob(f"{topic}-*"))


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_produces_and_consumes(broker: BrokerProcess, mechanism: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    topic = _topic()
    kwargs = python_client_config(mechanism, "alice", "alice-secret")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, **kwargs)
    for i in range(5):
        producer.send(topic, f"k{i}".encode()).get(timeout=30)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=broker.bootstrap,
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


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_wrong_password_gets_an_authentication_error(
    broker: BrokerProcess, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    """kafka-python 3 retries the bootstrap and then raises a timeout; the error it got
    from the broker each time (and logged) is SASL_AUTHENTICATION_FAILED (58)."""
    from kafka import KafkaProducer
    from kafka.errors import KafkaError as KafkaPythonError

    kwargs = python_client_config(mechanism, "alice", "wrong")
    with pytest.raises(KafkaPythonError):
        KafkaProducer(bootstrap_servers=broker.bootstrap, max_block_ms=5000, **kwargs)
    logged = [r.getMessage() for r in caplog.records]
    assert any("SaslAuthenticationFailedError" in m for m in logged), logged[-5:]
    assert any("Authentication failed" in m for m in logged)


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_produces_and_consumes(broker: BrokerProcess, mechanism: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = _topic()
    kwargs = python_client_config(mechanism, "alice", "alice-secret")

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, **kwargs)
        await producer.start()
        try:
            for i in range(5):
                await producer.send_and_wait(topic, f"a{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=broker.bootstrap,
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


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka_wrong_password_gets_an_authentication_error(
    broker: BrokerProcess, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    """aiokafka's bootstrap fails with KafkaConnectionError; the cause it logs is the
    broker's SASL_AUTHENTICATION_FAILED with Kafka's message."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaError as AioKafkaError

    kwargs = python_client_config(mechanism, "alice", "wrong")

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap, **kwargs)
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(AioKafkaError):
        asyncio.run(run())
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "Authentication failed" in logged, logged[-500:]


def _kcat(
    broker: BrokerProcess, mechanism: str, password: str, *args: str, **kw: object
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [
            "kcat",
            "-b",
            broker.bootstrap,
            "-X",
            "security.protocol=SASL_PLAINTEXT",
            "-X",
            f"sasl.mechanisms={mechanism}",
            "-X",
            "sasl.username=alice",
            "-X",
            f"sasl.password={password}",
            *args,
        ],
        capture_output=True,
        timeout=60,
        **kw,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kcat_produces_and_consumes(broker: BrokerProcess, mechanism: str) -> None:
    topic = _topic()
    produced = _kcat(broker, mechanism, "alice-secret", "-P", "-t", topic, input=b"x1\nx2\nx3\n")
    assert produced.returncode == 0, produced.stderr
    consumed = _kcat(
        broker, mechanism, "alice-secret", "-C", "-t", topic, "-o", "beginning", "-e", "-c", "3"
    )
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.split() == [b"x1", b"x2", b"x3"]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kcat_wrong_password_gets_an_authentication_error(
    broker: BrokerProcess, mechanism: str
) -> None:
    out = _kcat(broker, mechanism, "wrong", "-L", "-m", "10")
    assert out.returncode != 0
    assert b"Authentication failed" in out.stderr


def test_configs_refuses_too_few_iterations_and_deletes(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    config = command_config(tmp_path / "admin.properties")
    bad = franz_configs(
        broker.bootstrap,
        config,
        "--entity-name",
        "bob",
        "--alter",
        "--add-config",
        "SCRAM-SHA-256=[iterations=100,password=bob-secret]",
    )
    assert bad.returncode == 1
    assert "Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256" in bad.stderr
    assert "bob-secret" not in bad.stderr
    made = franz_configs(
        broker.bootstrap,
        config,
        "--entity-name",
        "bob",
        "--alter",
        "--add-config",
        "SCRAM-SHA-512=[password=bob-secret]",
    )
    assert made.returncode == 0, made.stderr
    gone = franz_configs(
        broker.bootstrap,
        config,
        "--entity-name",
        "bob",
        "--alter",
        "--delete-config",
        "SCRAM-SHA-512",
    )
    assert gone.stdout == "Completed updating config for user bob.\n", gone.stderr
    described = franz_configs(broker.bootstrap, config, "--describe", "--entity-name", "bob")
    assert described.returncode == 0 and described.stdout == ""
    # Deleting it again: RESOURCE_NOT_FOUND from the broker, reported as an error.
    again = franz_configs(
        broker.bootstrap,
        config,
        "--entity-name",
        "bob",
        "--alter",
        "--delete-config",
        "SCRAM-SHA-512",
    )
    assert again.returncode == 1
    assert "Attempt to delete a user credential that does not exist" in again.stderr
