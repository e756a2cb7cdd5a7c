"""Config parsing: .properties files, topic configs and broker synonyms with Kafka's defaults."""

from __future__ import annotations

import pytest

from franz.config.broker import BrokerConfig
from franz.config.properties import parse_properties, write_properties_atomic
from franz.config.topic import LogConfig
from franz.errors import ErrorCode, InvalidConfigurationError


def test_properties_parse_the_forms_kafka_files_use():
    text = (
        "# comment\n! also a comment\n\nbroker.id=1\nlog.dirs : /a,/b\n"
        "listeners PLAINTEXT://127.0.0.1:9092\nmulti=one\\\n  two\nesc=a\\tb\\u0041\n"
    )
    assert parse_properties(text) == {
        "broker.id": "1",
        "log.dirs": "/a,/b",
        "listeners": "PLAINTEXT://127.0.0.1:9092",
        "multi": "onetwo",
        "esc": "a\tbA",
    }


def test_properties_round_trip_through_an_atomic_write(tmp_path):
    path = tmp_path / "meta.properties"
    write_properties_atomic(path, {"version": "0", "cluster.id": "a=b:c"}, header="hi")
    assert parse_properties(path.read_text()) == {"version": "0", "cluster.id": "a=b:c"}


def test_log_config_defaults_are_kafkas():
    config = LogConfig()
    props = config.to_properties()
    assert props["segment.bytes"] == "1073741824"
    assert props["segment.index.bytes"] == "10485760"
    assert props["index.interval.bytes"] == "4096"
    assert props["retention.ms"] == "604800000"
    assert props["retention.bytes"] == "-1"
    assert props["flush.messages"] == props["flush.ms"] == str(2**63 - 1)
    assert props["max.message.bytes"] == "1048588"
    assert props["cleanup.policy"] == "delete"
    assert props["message.timestamp.type"] == "CreateTime"
    assert props["file.delete.delay.ms"] == "60000"


def test_topic_overrides_are_parsed_and_validated():
    config = LogConfig().with_overrides({"cleanup.policy": "compact,delete", "retention.ms": "-1"})
    assert config.compact and config.delete and config.retention_ms == -1
    for bad in (
        {"segment.bytes": "ten"},
        {"segment.bytes": "1"},
        {"no.such.config": "1"},
        {"cleanup.policy": "shred"},
        {"message.timestamp.type": "WallTime"},
    ):
        with pytest.raises(InvalidConfigurationError) as info:
            LogConfig().with_overrides(bad)
        assert info.value.code == ErrorCode.INVALID_CONFIG


def test_broker_synonyms_set_topic_defaults_with_kafkas_precedence():
    assert BrokerConfig({}).log_config().retention_ms == 168 * 3_600_000
    assert BrokerConfig({"log.retention.hours": "1"}).log_config().retention_ms == 3_600_000
    minutes = BrokerConfig({"log.retention.hours": "1", "log.retention.minutes": "2"})
    assert minutes.log_config().retention_ms == 120_000
    ms = BrokerConfig({"log.retention.minutes": "2", "log.retention.ms": "5"})
    assert ms.log_config().retention_ms == 5
    config = BrokerConfig(
        {
            "log.segment.bytes": "2048",
            "message.max.bytes": "999",
            "log.roll.hours": "2",
            "some.unknown.key": "kept",
        }
    )
    log_config = config.log_config()
    assert (log_config.segment_bytes, log_config.max_message_bytes) == (2048, 999)
    assert log_config.segment_ms == 7_200_000
    assert config.get("some.unknown.key") == "kept"


def test_broker_log_dirs_default_and_list():
    assert [str(p) for p in BrokerConfig({}).log_dirs] == ["franz-data"]
    assert [str(p) for p in BrokerConfig({"log.dirs": "/x, /y"}).log_dirs] == ["/x", "/y"]
    assert [str(p) for p in BrokerConfig({"log.dir": "/z"}).log_dirs] == ["/z"]
