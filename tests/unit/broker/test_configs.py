"""``franz.broker.configs``: what DescribeConfigs and CreateTopics v5+ say about each config."""

from __future__ import annotations

import pytest

from franz.broker.configs import (
    TOPIC_CONFIG_ORDER,
    ConfigSource,
    ConfigSynonym,
    broker_resource_id,
    config_type_id,
    describe_broker_configs,
    describe_default_broker_configs,
    describe_topic_configs,
    kafka_broker_default,
)
from franz.config.broker import BrokerConfig
from franz.config.defs import ConfigType
from franz.config.topic import TOPIC_CONFIG_KEYS
from franz.errors import InvalidRequestError

STATIC = ConfigSource.STATIC_BROKER_CONFIG
DEFAULT = ConfigSource.DEFAULT_CONFIG
TOPIC = ConfigSource.DYNAMIC_TOPIC_CONFIG
DYN_BROKER = ConfigSource.DYNAMIC_BROKER_CONFIG
DYN_DEFAULT = ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG


def by_name(entries):
    return {entry.name: entry for entry in entries}


def test_topic_configs_list_every_topic_config_in_kafkas_order():
    entries = describe_topic_configs(BrokerConfig(), {})
    assert sorted(TOPIC_CONFIG_ORDER) == sorted(TOPIC_CONFIG_KEYS)
    assert [e.name for e in entries] == list(TOPIC_CONFIG_ORDER)
    assert all(not e.read_only and not e.is_sensitive for e in entries)


def test_topic_configs_named_in_the_request_keep_kafkas_order():
    """Kafka filters its one ordered map by the request's keys (``createResponseConfig``)."""
    entries = describe_topic_configs(
        BrokerConfig(), {}, ["retention.ms", "cleanup.policy", "segment.bytes"]
    )
    assert [e.name for e in entries] == ["cleanup.policy", "segment.bytes", "retention.ms"]


def test_topic_config_without_anything_set_is_the_default():
    entry = by_name(describe_topic_configs(BrokerConfig(), {}))["segment.bytes"]
    assert entry.value == "1073741824"
    assert entry.source == DEFAULT
    assert entry.synonyms == (ConfigSynonym("log.segment.bytes", "1073741824", DEFAULT),)
    assert entry.config_type == 3  # INT
    assert entry.documentation


def test_topic_override_comes_first_then_static_broker_then_default():
    config = BrokerConfig({"log.segment.bytes": "50000"})
    entry = by_name(describe_topic_configs(config, {"segment.bytes": "70000"}))["segment.bytes"]
    assert entry.value == "70000"
    assert entry.source == TOPIC
    assert entry.synonyms == (
        ConfigSynonym("segment.bytes", "70000", TOPIC),
        ConfigSynonym("log.segment.bytes", "50000", STATIC),
        ConfigSynonym("log.segment.bytes", "1073741824", DEFAULT),
    )


def test_retention_ms_names_the_unit_key_that_set_it():
    config = BrokerConfig({"log.retention.hours": "24"})
    entry = by_name(describe_topic_configs(config, {}))["retention.ms"]
    assert entry.value == str(24 * 3_600_000)
    assert entry.source == STATIC
    assert entry.synonyms == (
        ConfigSynonym("log.retention.hours", "24", STATIC),
        ConfigSynonym("log.retention.hours", "168", DEFAULT),
    )


def test_retention_ms_chain_keeps_precedence_order():
    config = BrokerConfig({"log.retention.ms": "1000", "log.retention.minutes": "5"})
    entry = by_name(describe_topic_configs(config, {}))["retention.ms"]
    assert entry.value == "1000"
    assert [(s.name, s.source) for s in entry.synonyms] == [
        ("log.retention.ms", STATIC),
        ("log.retention.minutes", STATIC),
        ("log.retention.hours", DEFAULT),
    ]


def test_topic_values_are_normalized_as_kafka_formats_them():
    entries = by_name(describe_topic_configs(BrokerConfig(), {"cleanup.policy": "compact, delete"}))
    entry = entries["cleanup.policy"]
    assert entry.value == "compact,delete"
    assert entry.synonyms[0] == ConfigSynonym("cleanup.policy", "compact,delete", TOPIC)
    assert entry.config_type == 7  # LIST


def test_configuration_keys_filter_and_empty_means_all():
    config = BrokerConfig()
    assert [e.name for e in describe_topic_configs(config, {}, ["retention.ms", "nope"])] == [
        "retention.ms"
    ]
    assert len(describe_topic_configs(config, {}, [])) == len(TOPIC_CONFIG_KEYS)
    assert len(describe_topic_configs(config, {}, None)) == len(TOPIC_CONFIG_KEYS)


def test_describe_configs_mapping_omits_synonyms_and_docs_unless_asked():
    entry = by_name(describe_topic_configs(BrokerConfig(), {}))["segment.bytes"]
    plain = entry.to_describe_configs(include_synonyms=False, include_documentation=False)
    assert plain["synonyms"] == [] and plain["documentation"] is None
    assert plain["config_source"] == 5 and plain["config_type"] == 3
    full = entry.to_describe_configs(include_synonyms=True, include_documentation=True)
    assert full["synonyms"] == [{"name": "log.segment.bytes", "value": "1073741824", "source": 5}]
    assert full["documentation"] == entry.documentation
    assert set(entry.to_create_topics()) == {
        "name",
        "value",
        "read_only",
        "config_source",
        "is_sensitive",
    }


def test_broker_configs_are_read_only_unless_dynamic_static_when_set_else_default():
    config = BrokerConfig({"num.partitions": "3", "log.segment.bytes": "5000"})
    entries = by_name(describe_broker_configs(config))
    # Kafka's read_only is "not in DynamicBrokerConfig.AllDynamicConfigs"
    assert entries["num.partitions"].read_only
    assert entries["log.retention.hours"].read_only
    assert not entries["log.segment.bytes"].read_only
    assert not entries["message.max.bytes"].read_only
    assert not entries["max.connections"].read_only
    assert entries["num.partitions"].value == "3"
    assert entries["num.partitions"].source == STATIC
    assert entries["num.partitions"].synonyms == (
        ConfigSynonym("num.partitions", "3", STATIC),
        ConfigSynonym("num.partitions", "1", DEFAULT),
    )
    assert entries["default.replication.factor"].source == DEFAULT
    # A topic synonym shows Kafka's default when unset, the static value when set.
    assert entries["log.segment.bytes"].value == "5000"
    assert entries["log.roll.hours"].value == "168"
    assert entries["log.roll.ms"].value is None


def test_broker_unit_chain_head_drops_synonyms_before_itself_as_kafka():
    config = BrokerConfig({"log.retention.minutes": "5"})
    entries = by_name(describe_broker_configs(config))
    assert entries["log.retention.ms"].value is None
    assert entries["log.retention.ms"].synonyms == ()
    assert entries["log.retention.ms"].source == DEFAULT
    assert entries["log.retention.minutes"].source == STATIC
    assert entries["log.retention.minutes"].synonyms == (
        ConfigSynonym("log.retention.minutes", "5", STATIC),
        ConfigSynonym("log.retention.hours", "168", DEFAULT),
    )


def test_unknown_broker_keys_are_listed_sensitive_without_value():
    config = BrokerConfig({"ssl.keystore.password": "secret"})
    entry = by_name(describe_broker_configs(config))["ssl.keystore.password"]
    assert entry.value is None
    assert entry.is_sensitive
    assert entry.config_type == 0
    assert entry.synonyms == (ConfigSynonym("ssl.keystore.password", None, STATIC),)


def test_kafka_broker_defaults():
    assert kafka_broker_default("log.segment.bytes") == 1024**3
    assert kafka_broker_default("log.retention.ms") is None
    assert kafka_broker_default("log.retention.hours") == 168
    assert kafka_broker_default("compression.type") == "producer"
    assert kafka_broker_default("no.such.key") is None


def test_config_type_ids():
    assert config_type_id(ConfigType.BOOLEAN) == 1
    assert config_type_id(ConfigType.STRING) == 2
    assert config_type_id(ConfigType.LONG) == 5
    assert config_type_id(ConfigType.DOUBLE) == 6
    assert config_type_id(ConfigType.PASSWORD) == 9
    assert config_type_id(None) == 0


@pytest.mark.parametrize(("name", "expected"), [("", None), (None, None), ("7", 7), ("+7", 7)])
def test_broker_resource_id(name, expected):
    assert broker_resource_id(name, 7) == expected


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("8", "Unexpected broker id, expected 7 or empty string, but received 8"),
        ("x", "Broker id must be an integer, but it is: x"),
        (" 7", "Broker id must be an integer, but it is:  7"),
    ],
)
def test_broker_resource_id_refused(name, message):
    with pytest.raises(InvalidRequestError, match=message):
        broker_resource_id(name, 7)


def test_dynamic_layers_come_first_in_kafkas_synonym_order():
    config = BrokerConfig({"log.retention.hours": "100", "message.max.bytes": "2000"}).with_dynamic(
        {"log.retention.ms": "60000", "message.max.bytes": "1500"},
        {"message.max.bytes": "1000"},
    )
    entries = by_name(describe_broker_configs(config))
    message = entries["message.max.bytes"]
    assert (message.value, message.source) == ("1000", DYN_BROKER)
    assert message.synonyms == (
        ConfigSynonym("message.max.bytes", "1000", DYN_BROKER),
        ConfigSynonym("message.max.bytes", "1500", DYN_DEFAULT),
        ConfigSynonym("message.max.bytes", "2000", STATIC),
        ConfigSynonym("message.max.bytes", "1048588", DEFAULT),
    )
    retention = entries["log.retention.ms"]
    assert (retention.value, retention.source) == ("60000", DYN_DEFAULT)
    assert retention.synonyms == (
        ConfigSynonym("log.retention.ms", "60000", DYN_DEFAULT),
        ConfigSynonym("log.retention.hours", "100", STATIC),
        ConfigSynonym("log.retention.hours", "168", DEFAULT),
    )
    # the effective topic default follows the highest layer
    topic = by_name(describe_topic_configs(config, {}))
    assert topic["max.message.bytes"].value == "1000"
    assert topic["max.message.bytes"].source == DYN_BROKER
    assert (topic["retention.ms"].value, topic["retention.ms"].source) == ("60000", DYN_DEFAULT)


def test_default_resource_lists_only_the_dynamic_defaults_without_the_broker_layer():
    config = BrokerConfig({"message.max.bytes": "2000"}).with_dynamic(
        {"message.max.bytes": "1500", "max.connections": "7"}, {"message.max.bytes": "1000"}
    )
    entries = by_name(describe_default_broker_configs(config))
    assert sorted(entries) == ["max.connections", "message.max.bytes"]
    message = entries["message.max.bytes"]
    assert (message.value, message.source, message.read_only) == ("1500", DYN_DEFAULT, False)
    assert message.synonyms == (
        ConfigSynonym("message.max.bytes", "1500", DYN_DEFAULT),
        ConfigSynonym("message.max.bytes", "2000", STATIC),
        ConfigSynonym("message.max.bytes", "1048588", DEFAULT),
    )
    assert describe_default_broker_configs(BrokerConfig()) == []
    assert [e.name for e in describe_default_broker_configs(config, ["max.connections"])] == [
        "max.connections"
    ]


def test_replication_throttle_rates_as_kafka_39_describes_them():
    # As a Kafka 3.9.2 broker answered (ZooKeeper mode): LONG, not sensitive, read-only (not
    # in its AllDynamicConfigs), no documentation, listed only when set.
    config = BrokerConfig(
        {},
        dynamic_default={
            "leader.replication.throttled.rate": "3000",
            "follower.replication.throttled.rate": "2000",
        },
        dynamic_broker={"leader.replication.throttled.rate": "1000"},
    )
    entries = by_name(describe_broker_configs(config))
    leader = entries["leader.replication.throttled.rate"]
    assert (leader.value, leader.source, leader.read_only, leader.is_sensitive) == (
        "1000", DYN_BROKER, True, False
    )
    assert leader.config_type == config_type_id(ConfigType.LONG)
    assert leader.documentation is None
    assert leader.synonyms == (
        ConfigSynonym("leader.replication.throttled.rate", "1000", DYN_BROKER),
        ConfigSynonym("leader.replication.throttled.rate", "3000", DYN_DEFAULT),
    )
    assert entries["follower.replication.throttled.rate"].source == DYN_DEFAULT
    assert "replica.alter.log.dirs.io.max.bytes.per.second" not in entries
    defaults = by_name(describe_default_broker_configs(config))
    assert defaults["leader.replication.throttled.rate"].value == "3000"
    assert defaults["leader.replication.throttled.rate"].synonyms == (
        ConfigSynonym("leader.replication.throttled.rate", "3000", DYN_DEFAULT),
    )
    assert "leader.replication.throttled.rate" not in by_name(
        describe_broker_configs(BrokerConfig({}))
    )
