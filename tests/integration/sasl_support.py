"""Shared set-up of the SASL integration tests: a broker with one ``SASL_PLAINTEXT``
listener serving PLAIN (users from its JAAS config) and SCRAM-SHA-256/512, and the client
configs of each client library for a mechanism and credentials."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support.broker import BrokerProcess

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" '
    'user_alice="alice-secret";'
)
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: user -> password: alice is a PLAIN user (JAAS) and a SCRAM user (created by the tests).
PASSWORDS = {"admin": "admin-secret", "alice": "alice-secret"}


def sasl_overrides(**extra: str) -> dict[str, str]:
    return {
        "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
        **extra,
    }


def sasl_broker(data_dir: Path, **extra: str) -> BrokerProcess:
    return BrokerProcess(data_dir, sasl_overrides(**extra))


def librdkafka_config(bootstrap: str, mechanism: str, user: str, password: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": password,
    }


def python_client_config(mechanism: str, user: str, password: str) -> dict[str, Any]:
    """kafka-python's and aiokafka's keyword arguments."""
    return {
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": password,
    }


def command_config(path: Path, mechanism: str = "PLAIN", user: str = "admin") -> Path:
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.username={user}\n"
        f"sasl.password={PASSWORDS[user]}\n"
    )
    return path


def franz_configs(bootstrap: str, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "franz",
            "configs",
            "--bootstrap-server",
            bootstrap,
            "--command-config",
            str(config),
            "--entity-type",
            "users",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )



def assert_refused_and_undelivered(producer: Any, errors: list[Any], reports: list[Any]) -> None:
    """For a confluent-kafka producer whose login the broker refuses: wait for its first error
    (``error_cb`` appends to ``errors``), then purge its queue and check that the one message
    produced comes back purged, never sent (``on_delivery`` appends its errors to
    ``reports``). ``len(producer)`` is no measure of this: it also counts error events not yet
    served."""
    import time

    from confluent_kafka import KafkaError

    deadline = time.monotonic() + 30
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors, "no error reported"
    assert errors[0].code() == KafkaError._AUTHENTICATION, errors
    assert "Authentication failed" in errors[0].str()
    producer.purge()
    assert producer.flush(5) == 0
    assert [r.code() for r in reports] == [KafkaError._PURGE_QUEUE], reports
