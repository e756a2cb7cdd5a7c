"""``franz.config.dynamic``: which broker configs Kafka lets change at runtime, and where."""

from __future__ import annotations

import pytest

from franz.config.dynamic import DYNAMIC_BROKER_CONFIGS, dynamic_config_errors, is_dynamic


@pytest.mark.parametrize(
    "name",
    [
        "log.retention.ms", "log.segment.bytes", "message.max.bytes", "log.cleanup.policy",
        "log.roll.ms", "compression.type", "min.insync.replicas", "log.cleaner.threads",
        "num.io.threads", "max.connections", "max.connections.per.ip",
        "producer.id.expiration.ms", "metric.reporters",
        "listener.name.plaintext.ssl.keystore.location",
        "listener.name.sasl_ssl.plain.sasl.jaas.config",
    ],
)
def test_kafkas_dynamic_configs(name):
    assert is_dynamic(name)


@pytest.mark.parametrize(
    "name",
    [
        "log.retention.hours", "log.retention.minutes", "log.roll.hours", "num.partitions",
        "broker.id", "log.dirs", "zookeeper.connect", "auto.create.topics.enable",
        "no.such.config", "listener.name.plaintext.log.retention.hours",
    ],
)
def test_static_configs(name):
    assert not is_dynamic(name)


def test_no_static_unit_variant_sneaks_in():
    assert not {n for n in DYNAMIC_BROKER_CONFIGS if n.endswith((".hours", ".minutes"))}


def test_messages_in_kafkas_check_order():
    assert dynamic_config_errors([], per_broker=False) is None
    assert dynamic_config_errors(["log.retention.ms", "max.connections"], per_broker=False) is None
    assert dynamic_config_errors(
        ["num.partitions", "log.retention.ms", "log.retention.hours"], per_broker=True
    ) == "Cannot update these configs dynamically: Set(log.retention.hours, num.partitions)"
    assert dynamic_config_errors(["ssl.keystore.location"], per_broker=True) == (
        "These security configs can be dynamically updated only per-listener using the "
        "listener prefix: Set(ssl.keystore.location)"
    )
    prefixed = "listener.name.plaintext.ssl.keystore.location"
    assert dynamic_config_errors([prefixed], per_broker=True) is None
    assert dynamic_config_errors([prefixed, "ssl.protocol"], per_broker=False) == (
        "Cannot update these configs at default cluster level, broker id must be specified: "
        f"Set({prefixed}, ssl.protocol)"
    )
    # cluster-level listener configs may be defaults, with or without a prefix
    assert dynamic_config_errors(
        ["listener.name.plaintext.max.connections", "num.network.threads"], per_broker=False
    ) is None
