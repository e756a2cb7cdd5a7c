"""``franz configs`` (kafka-configs.sh) as a subprocess against a real broker.

Describe output is checked line by line (Kafka 3.9's ``ConfigCommand`` format, synonyms in
the broker's order); alterations are checked by reading the topic's configs back with
confluent-kafka's AdminClient. One broker (with a static ``log.retention.hours`` so that
synonyms of every source show up) serves the module.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource, ConfigSource, ResourceType

from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    proc = BrokerProcess(
        tmp_path_factory.mktemp("configs-broker"), {"log.retention.hours": "100"}
    ).start()
    try:
        yield proc.bootstrap
    finally:
        code = proc.stop()
    assert code == 0, proc.output()


def configs(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "franz", "configs", "--bootstrap-server", bootstrap, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def overrides(bootstrap: str, topic: str) -> dict[str, str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    (future,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    return {
        name: entry.value
        for name, entry in future.result(10).items()
        if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    }


def test_describe_topic_dynamic_configs_with_synonyms(bootstrap):
    create_topic(bootstrap, "described", config={"retention.ms": "1000",
                                                 "cleanup.policy": "compact"})
    result = configs(bootstrap, "--entity-type", "topics", "--entity-name", "described",
                     "--describe")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "Dynamic configs for topic described are:",
        "  cleanup.policy=compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "cleanup.policy=compact, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "STATIC_BROKER_CONFIG:log.retention.hours=100, DEFAULT_CONFIG:log.retention.hours=168}",
    ]


def test_describe_all_lists_every_config_sorted(bootstrap):
    create_topic(bootstrap, "everything", config={"retention.ms": "1000"})
    lines = configs(bootstrap, "--entity-type", "topics", "--entity-name", "everything",
                    "--describe", "--all").stdout.splitlines()
    assert lines[0] == "All configs for topic everything are:"
    names = [line.strip().split("=", 1)[0] for line in lines[1:]]
    assert names == sorted(names)
    assert {"retention.ms", "segment.bytes", "min.insync.replicas"} <= set(names)
    segment = next(line for line in lines if line.startswith("  segment.bytes="))
    assert segment == ("  segment.bytes=1073741824 sensitive=false "
                       "synonyms={DEFAULT_CONFIG:log.segment.bytes=1073741824}")


def test_describe_without_name_covers_every_topic(bootstrap):
    create_topic(bootstrap, "all-a")
    create_topic(bootstrap, "all-b")
    lines = configs(bootstrap, "--entity-type", "topics", "--describe").stdout.splitlines()
    headers = [line for line in lines if line.endswith(" are:")]
    assert "Dynamic configs for topic all-a are:" in headers
    assert "Dynamic configs for topic all-b are:" in headers
    assert headers == sorted(headers)


def test_describe_brokers(bootstrap):
    result = configs(bootstrap, "--entity-type", "brokers", "--describe")
    assert result.returncode == 0, result.stderr
    # Franz has no dynamic broker configs: only the headers
    assert result.stdout.splitlines() == [
        "Dynamic configs for broker 0 are:",
        "Default configs for brokers in the cluster are:",
    ]
    default = configs(bootstrap, "--entity-type", "brokers", "--entity-default", "--describe")
    assert default.stdout == "Default configs for brokers in the cluster are:\n"
    every = configs(bootstrap, "--entity-type", "brokers", "--entity-name", "0", "--describe",
                    "--all").stdout.splitlines()
    assert every[0] == "All configs for broker 0 are:"
    retention = next(line for line in every if line.startswith("  log.retention.hours="))
    # both synonyms share the name: kept apart, in the broker's order
    assert retention == ("  log.retention.hours=100 sensitive=false synonyms={"
                         "STATIC_BROKER_CONFIG:log.retention.hours=100, "
                         "DEFAULT_CONFIG:log.retention.hours=168}")


def test_alter_adds_and_deletes(bootstrap):
    create_topic(bootstrap, "altered")
    added = configs(bootstrap, "--entity-type", "topics", "--entity-name", "altered", "--alter",
                    "--add-config", "retention.ms=5000,cleanup.policy=[compact,delete]")
    assert (added.returncode, added.stdout) == (0, "Completed updating config for topic altered.\n")
    assert overrides(bootstrap, "altered") == {"retention.ms": "5000",
                                               "cleanup.policy": "compact,delete"}
    deleted = configs(bootstrap, "--entity-type", "topics", "--entity-name", "altered",
                      "--alter", "--delete-config", "retention.ms")
    assert deleted.stdout == "Completed updating config for topic altered.\n"
    assert overrides(bootstrap, "altered") == {"cleanup.policy": "compact,delete"}


def test_alter_from_file_and_delete_unset_config(bootstrap, tmp_path: Path):
    create_topic(bootstrap, "from-file")
    props = tmp_path / "topic.properties"
    props.write_text("segment.ms=60000\nmax.message.bytes=2000\n")
    result = configs(bootstrap, "--entity-type", "topics", "--entity-name", "from-file",
                     "--alter", "--add-config-file", str(props))
    assert result.returncode == 0, result.stderr
    assert overrides(bootstrap, "from-file") == {"segment.ms": "60000",
                                                 "max.message.bytes": "2000"}
    unset = configs(bootstrap, "--entity-type", "topics", "--entity-name", "from-file",
                    "--alter", "--delete-config", "segment.ms,retention.ms")
    assert unset.returncode == 1
    assert unset.stderr == "franz configs: error: Invalid config(s): retention.ms\n"
    assert overrides(bootstrap, "from-file")["segment.ms"] == "60000"  # nothing changed


def test_alter_refused_by_the_broker_is_one_line(bootstrap):
    create_topic(bootstrap, "strict")
    result = configs(bootstrap, "--entity-type", "topics", "--entity-name", "strict",
                     "--alter", "--add-config", "retention.ms=soon")
    assert result.returncode == 1
    assert result.stderr.startswith("franz configs: error: ")
    assert result.stderr.count("\n") == 1
    assert overrides(bootstrap, "strict") == {}


def test_unknown_topic(bootstrap):
    result = configs(bootstrap, "--entity-type", "topics", "--entity-name", "ghost",
                     "--describe")
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == "franz configs: error: Topic 'ghost' does not exist.\n"
    alter = configs(bootstrap, "--entity-type", "topics", "--entity-name", "ghost", "--alter",
                    "--add-config", "retention.ms=1")
    assert alter.returncode == 1
    assert alter.stderr == "franz configs: error: Topic 'ghost' does not exist.\n"


def test_command_config(bootstrap, tmp_path: Path):
    create_topic(bootstrap, "cc", config={"retention.ms": "7"})
    props = tmp_path / "client.properties"
    props.write_text("client.id=ops-tool\n")
    result = configs(bootstrap, "--command-config", str(props), "--entity-type", "topics",
                     "--entity-name", "cc", "--describe")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1].startswith("  retention.ms=7 ")


@pytest.mark.parametrize(
    "args",
    [
        ["--entity-type", "topics", "--entity-name", "t"],
        ["--entity-type", "topics", "--entity-name", "t", "--describe", "--alter"],
        ["--entity-type", "nonsense", "--describe"],
        ["--entity-type", "users", "--alter", "--add-config", "SCRAM-SHA-256=[password=x]"],
        ["--entity-type", "users", "--entity-name", "u", "--describe", "--add-config", "a=b"],
        ["--entity-type", "topics", "--entity-default", "--describe"],
        ["--entity-type", "brokers", "--entity-name", "x", "--describe"],
        ["--entity-type", "topics", "--entity-name", "t", "--describe", "--add-config", "a=b"],
        ["--entity-type", "topics", "--entity-name", "t", "--alter"],
        ["--entity-type", "topics", "--alter", "--add-config", "a=b"],
        ["--entity-type", "topics", "--entity-name", "t", "--alter", "--all",
         "--add-config", "a=b"],
        ["--entity-type", "topics", "--entity-name", "t", "--alter", "--add-config", "a=b",
         "--add-config-file", "f"],
    ],
)
def test_bad_flag_combinations_exit_2(bootstrap, args):
    result = configs(bootstrap, *args)
    assert result.returncode == 2, result.stderr
    assert "franz configs: error:" in result.stderr


def test_unreachable_broker_is_one_line_error():
    result = configs("127.0.0.1:1", "--entity-type", "topics", "--describe",
                     "--timeout", "1000")
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "127.0.0.1:1" in lines[0] and "running" in lines[0]
