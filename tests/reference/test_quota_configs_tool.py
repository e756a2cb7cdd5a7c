"""``franz configs --entity-type users|clients`` against Kafka 3.9's own ``kafka-configs``
(``kafka.admin.ConfigCommand``): the same commands, Kafka's tool on the Kafka broker and
Franz's on Franz, print the same lines (client quotas, franz.cli.tools.quota_configs).

The Kafka broker is the session's: only entities named for this test are touched (no
default client or user quota that would throttle other tests), and removed at the end."""

from __future__ import annotations

import uuid

from tests.support.broker import BrokerProcess
from tests.support.kafka_ref import KafkaBroker, run_franz_tool, run_kafka_tool

CONFIG_COMMAND = "kafka.admin.ConfigCommand"


def _both(kafka: KafkaBroker, franz: BrokerProcess, *args: str) -> tuple[str, str]:
    """(Kafka's output, Franz's output) of ``configs args``; each tool must agree on
    success, and a failure's message is compared as its first line mentioning it."""
    theirs = run_kafka_tool(CONFIG_COMMAND, "--bootstrap-server", kafka.bootstrap, *args)
    ours = run_franz_tool("configs", "--bootstrap-server", franz.bootstrap, *args)
    assert (theirs.returncode == 0) == (ours.returncode == 0), (args, theirs, ours)
    if theirs.returncode != 0:
        return theirs.stdout + theirs.stderr, ours.stdout + ours.stderr
    return theirs.stdout, ours.stdout


def test_quota_configs_as_kafka_configs(kafka: KafkaBroker, franz: BrokerProcess) -> None:
    tag = uuid.uuid4().hex[:8]
    client, user = f"qc-{tag}", f"qu-{tag}"
    steps: list[tuple[str, ...]] = [
        ("--entity-type", "clients", "--entity-name", client, "--alter", "--add-config",
         "producer_byte_rate=1048576,consumer_byte_rate=2097152"),
        ("--entity-type", "clients", "--entity-name", client, "--describe"),
        ("--entity-type", "users", "--entity-name", user, "--entity-type", "clients",
         "--entity-default", "--alter", "--add-config", "request_percentage=50"),
        ("--entity-type", "users", "--entity-name", user, "--entity-type", "clients",
         "--entity-name", client, "--alter", "--add-config", "producer_byte_rate=5000"),
        ("--entity-type", "users", "--entity-name", user, "--entity-type", "clients",
         "--describe"),
        ("--entity-type", "clients", "--entity-name", client, "--alter", "--delete-config",
         "consumer_byte_rate"),
        ("--entity-type", "clients", "--entity-name", client, "--describe"),
    ]
    try:
        for step in steps:
            theirs, ours = _both(kafka, franz, *step)
            assert sorted(ours.splitlines()) == sorted(theirs.splitlines()), step
        # Deleting a key that is not set: both refuse with "Invalid config(s): <key>".
        theirs, ours = _both(
            kafka, franz, "--entity-type", "clients", "--entity-name", client, "--alter",
            "--delete-config", "consumer_byte_rate",
        )
        assert "Invalid config(s): consumer_byte_rate" in theirs
        assert "Invalid config(s): consumer_byte_rate" in ours
    finally:
        for step in [
            ("--entity-type", "clients", "--entity-name", client, "--alter",
             "--delete-config", "producer_byte_rate"),
            ("--entity-type", "users", "--entity-name", user, "--entity-type", "clients",
             "--entity-default", "--alter", "--delete-config", "request_percentage"),
            ("--entity-type", "users", "--entity-name", user, "--entity-type", "clients",
             "--entity-name", client, "--alter", "--delete-config", "producer_byte_rate"),
        ]:
            run_kafka_tool(CONFIG_COMMAND, "--bootstrap-server", kafka.bootstrap, *step)
