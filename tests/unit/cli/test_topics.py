"""Pure parts of ``franz topics`` / ``franz configs``: Kafka 3.9's output lines, the topic
filter and ``--add-config`` parsing (``franz.admin.topics``)."""

from __future__ import annotations

import pytest
from confluent_kafka import Uuid

from franz.admin.configs_wire import ConfigInfo, Synonym
from franz.admin.options import ToolError
from franz.admin.topics import (
    TopicFilter,
    config_line,
    configs_header,
    kafka_describe_order,
    parse_add_config,
    partition_line,
    select_topics,
    topic_id_text,
    topic_line,
)


def _config(name: str, value: str | None, source: str, *synonyms: Synonym) -> ConfigInfo:
    return ConfigInfo(name, value, source, False, False, tuple(synonyms))


def test_topic_line_lists_only_non_default_configs_in_order():
    configs = [
        _config("cleanup.policy", "delete", "DEFAULT_CONFIG"),
        _config("retention.ms", "1000", "DYNAMIC_TOPIC_CONFIG"),
        _config("segment.bytes", "1024", "STATIC_BROKER_CONFIG"),
    ]
    assert topic_line("t", "s3WkUgRMSgWQVxFX3FzJKg", 3, 1, configs) == (
        "Topic: t\tTopicId: s3WkUgRMSgWQVxFX3FzJKg\tPartitionCount: 3\tReplicationFactor: 1"
        "\tConfigs: retention.ms=1000,segment.bytes=1024"
    )


def test_topic_line_drops_zero_topic_id_and_keeps_empty_configs():
    line = topic_line("t", "AAAAAAAAAAAAAAAAAAAAAA", 1, 1, [])
    assert line == "Topic: t\tPartitionCount: 1\tReplicationFactor: 1\tConfigs: "


def test_partition_line():
    assert partition_line("t", 2, 1, [1, 0], [1]) == (
        "\tTopic: t\tPartition: 2\tLeader: 1\tReplicas: 1,0\tIsr: 1\tElr: N/A\tLastKnownElr: N/A"
    )
    assert partition_line("t", 0, None, [3], []).split("\t")[3:6] == [
        "Leader: none", "Replicas: 3", "Isr: "]


def test_configs_header():
    assert configs_header("topics", "t", False) == "Dynamic configs for topic t are:"
    assert configs_header("brokers", "0", True) == "All configs for broker 0 are:"
    assert configs_header("brokers", "", False) == (
        "Default configs for brokers in the cluster are:")


def test_config_line_prints_synonyms_and_null():
    entry = _config(
        "retention.ms", "1000", "DYNAMIC_TOPIC_CONFIG",
        Synonym("retention.ms", "1000", "DYNAMIC_TOPIC_CONFIG"),
        Synonym("log.retention.hours", "168", "DEFAULT_CONFIG"),
    )
    assert config_line(entry) == (
        "  retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, "
        "DEFAULT_CONFIG:log.retention.hours=168}"
    )
    secret = ConfigInfo("ssl.key.password", None, "STATIC_BROKER_CONFIG", True, True, ())
    assert config_line(secret) == "  ssl.key.password=null sensitive=true synonyms={}"


@pytest.mark.parametrize(
    ("raw", "topic", "allowed"),
    [
        ("orders", "orders", True),
        ("orders", "orders-2", False),  # whole-name match
        ("ord.*", "orders-2", True),
        ("a,b", "b", True),  # commas mean "or"
        ('"test\\.topic"', "test.topic", True),  # quotes dropped
        ('"test\\.topic"', "testXtopic", False),
        (" a , b ", "a", True),  # spaces dropped
    ],
)
def test_topic_filter_is_kafkas_include_list(raw, topic, allowed):
    assert TopicFilter(raw).allows(topic, exclude_internal=False) is allowed


def test_select_topics_sorts_and_excludes_internal():
    names = ["b", "__consumer_offsets", "a", "__transaction_state"]
    assert select_topics(names, None, False) == [
        "__consumer_offsets", "__transaction_state", "a", "b"]
    assert select_topics(names, None, True) == ["a", "b"]
    assert select_topics(names, "__.*", True) == []
    assert select_topics(names, "__c.*", False) == ["__consumer_offsets"]


def test_bad_regex_is_a_tool_error():
    with pytest.raises(ToolError, match="invalid regex"):
        TopicFilter("(")


def test_parse_add_config_brackets_and_empty_values():
    assert parse_add_config("k1=v1,k2=[a,b,c],k3=v3") == {"k1": "v1", "k2": "a,b,c", "k3": "v3"}
    assert parse_add_config("ssl.endpoint.identification.algorithm=") == {
        "ssl.endpoint.identification.algorithm": ""}
    assert parse_add_config(" a = 1 ") == {"a": "1"}


@pytest.mark.parametrize("bad", ["novalue", "a=b=c", "a=1,,b=2"])
def test_parse_add_config_rejects_non_pairs(bad):
    with pytest.raises(ToolError, match='format "key=val"'):
        parse_add_config(bad)


def test_topic_id_text_is_kafkas_url_safe_base64_not_librdkafkas_standard_base64() -> None:
    """Found against Kafka 3.9's TopicCommand: librdkafka prints ``jarOj+rgTlm8qujjB/tDGA``
    for the id Kafka prints as ``jarOj-rgTlm8qujjB_tDGA``."""
    topic_id = Uuid(-8238545450804687271, -4851809586749160680)
    assert str(topic_id) == "jarOj+rgTlm8qujjB/tDGA"
    assert topic_id_text(topic_id) == "jarOj-rgTlm8qujjB_tDGA"
    assert topic_id_text(None) == "AAAAAAAAAAAAAAAAAAAAAA"


def test_kafka_describe_order_is_java_hashmap_order() -> None:
    """Kafka 3.9's TopicCommand printed rt-kafka-made before rt-franz-made (buckets 2 and 3
    of a 4-slot HashMap); one topic or none is trivial; 3 names keep a 4-slot table."""
    assert kafka_describe_order(["rt-franz-made", "rt-kafka-made"]) == [
        "rt-kafka-made",
        "rt-franz-made",
    ]
    assert kafka_describe_order([]) == []
    assert kafka_describe_order(["t"]) == ["t"]
    assert sorted(kafka_describe_order(["a", "b", "c", "d", "e"])) == ["a", "b", "c", "d", "e"]
