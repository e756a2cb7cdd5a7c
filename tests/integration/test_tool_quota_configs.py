"""``franz configs --entity-type users|clients`` (client quotas) as a subprocess against a
real broker: Kafka 3.9's kafka-configs lines (compared with Kafka's own tool in
``tests/reference/test_quota_configs_tool.py``), defaults, (user, client-id) entities and
the refusals."""

from __future__ import annotations

import subprocess
import sys

from tests.support.broker import BrokerProcess


def configs(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "franz", "configs", "--bootstrap-server", bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_quota_configs_alter_and_describe(broker: BrokerProcess) -> None:
    b = broker.bootstrap
    added = configs(
        b,
        "--entity-type",
        "clients",
        "--entity-name",
        "x",
        "--alter",
        "--add-config",
        "producer_byte_rate=1048576,consumer_byte_rate=2097152",
    )
    assert added.returncode == 0, added.stderr
    assert added.stdout == "Completed updating config for client x.\n"
    described = configs(b, "--entity-type", "clients", "--entity-name", "x", "--describe")
    assert described.stdout == (
        "Quota configs for client-id 'x' are consumer_byte_rate=2097152.0, "
        "producer_byte_rate=1048576.0\n"
    )
    both = configs(
        b,
        "--entity-type",
        "users",
        "--entity-name",
        "u",
        "--entity-type",
        "clients",
        "--entity-default",
        "--alter",
        "--add-config",
        "request_percentage=50",
    )
    assert both.stdout == "Completed updating config for user u.\n", both.stderr
    default = configs(
        b,
        "--entity-type",
        "users",
        "--entity-default",
        "--alter",
        "--add-config",
        "producer_byte_rate=1000",
    )
    assert default.stdout == "Completed updating default config for users in the cluster.\n"
    users = configs(b, "--entity-type", "users", "--describe")
    assert (
        users.stdout
        == "Quota configs for the default user-principal are producer_byte_rate=1000.0\n"
    )
    pairs = configs(b, "--entity-type", "users", "--entity-type", "clients", "--describe")
    assert pairs.stdout == (
        "Quota configs for user-principal 'u', the default client-id are request_percentage=50.0\n"
    )
    deleted = configs(
        b,
        "--entity-type",
        "clients",
        "--entity-name",
        "x",
        "--alter",
        "--delete-config",
        "consumer_byte_rate",
    )
    assert deleted.returncode == 0, deleted.stderr
    again = configs(
        b,
        "--entity-type",
        "clients",
        "--entity-name",
        "x",
        "--alter",
        "--delete-config",
        "consumer_byte_rate",
    )
    assert again.returncode != 0
    assert "Invalid config(s): consumer_byte_rate" in again.stderr
    other = configs(
        b,
        "--entity-type",
        "clients",
        "--entity-name",
        "x",
        "--alter",
        "--add-config",
        "retention.ms=5",
    )
    assert other.returncode != 0
    assert (
        "Only quota configs can be added for 'client' using --bootstrap-server. "
        "Unexpected config names: Set(retention.ms)"
    ) in other.stderr
    assert configs(b, "--entity-type", "clients", "--entity-name", "x", "--describe").stdout == (
        "Quota configs for client-id 'x' are producer_byte_rate=1048576.0\n"
    )


def test_quota_configs_bad_flags_exit_2(broker: BrokerProcess) -> None:
    b = broker.bootstrap
    for args in (
        ["--entity-type", "clients", "--entity-type", "topics", "--describe"],
        ["--entity-type", "clients", "--entity-type", "clients", "--describe"],
        ["--entity-type", "clients", "--alter", "--add-config", "producer_byte_rate=1"],
        ["--entity-type", "clients", "--entity-name", "x", "--alter"],
        ["--entity-type", "clients", "--entity-name", "a", "--entity-name", "b", "--describe"],
    ):
        result = configs(b, *args)
        assert result.returncode == 2, (args, result.stdout, result.stderr)
