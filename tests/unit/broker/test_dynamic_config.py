"""``franz.broker.dynamic_config``: dynamic broker configs validated, stored, applied, reloaded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from franz.broker.dynamic_config import DynamicBrokerConfig
from franz.config.broker import BrokerConfig
from franz.errors import InvalidRequestError
from franz.metadata.local import LocalMetadataStore


def make(tmp_path: Path, static: dict[str, str] | None = None, broker_id: int = 0):
    store = LocalMetadataStore(tmp_path)
    store.load()
    applied: list[BrokerConfig] = []
    dynamic = DynamicBrokerConfig(BrokerConfig(static or {}), store, broker_id, applied.append)
    dynamic.load()
    return dynamic, store, applied


def test_default_and_per_broker_configs_apply_with_kafkas_precedence(tmp_path):
    dynamic, store, applied = make(tmp_path, {"message.max.bytes": "5000"})
    assert applied == []  # nothing stored: nothing to apply
    dynamic.alter("", {"message.max.bytes": "3000", "log.retention.ms": "60000"},
                  validate_only=False)
    assert applied[-1].log_config().max_message_bytes == 3000
    assert applied[-1].log_config().retention_ms == 60000
    dynamic.alter("0", {"message.max.bytes": "2000"}, validate_only=False)
    assert applied[-1].log_config().max_message_bytes == 2000
    assert applied[-1].log_config().retention_ms == 60000  # the default still applies
    assert store.broker_configs("<default>") == {
        "message.max.bytes": "3000", "log.retention.ms": "60000"
    }
    assert store.broker_configs("0") == {"message.max.bytes": "2000"}
    dynamic.alter("0", {}, validate_only=False)
    assert applied[-1].log_config().max_message_bytes == 3000
    assert store.broker_configs("0") == {}


def test_stored_configs_are_applied_at_load(tmp_path):
    dynamic, _, _ = make(tmp_path)
    dynamic.alter("", {"log.segment.bytes": "100000"}, validate_only=False)
    again, _, applied = make(tmp_path)
    assert applied[-1].log_config().segment_bytes == 100000
    assert again.entity_configs("") == {"log.segment.bytes": "100000"}
    assert again.entity_configs("0") == {}


def test_validate_only_changes_nothing(tmp_path):
    dynamic, store, applied = make(tmp_path)
    dynamic.alter("0", {"message.max.bytes": "100"}, validate_only=True)
    assert applied == []
    assert store.broker_configs("0") == {}


@pytest.mark.parametrize(
    ("name", "configs", "message"),
    [
        ("0", {"log.retention.hours": "1"},
         "Invalid config value for resource ConfigResource(type=BROKER, name='0'): Cannot "
         "update these configs dynamically: Set(log.retention.hours)"),
        ("", {"listeners": "PLAINTEXT://:1"},
         "Cannot update these configs at default cluster level, broker id must be specified"),
        ("0", {"message.max.bytes": "lots"}, "message.max.bytes"),
        ("0", {"log.segment.bytes": "1"}, "Value must be at least"),
        ("", {"compression.type": "brotli"}, "compression.type"),
        ("7", {"message.max.bytes": "1"}, "Unexpected broker id"),
        ("0", {"leader.replication.throttled.rate": "fast"},
         "Invalid value fast for configuration leader.replication.throttled.rate: Not a "
         "number of type LONG"),
        ("", {"follower.replication.throttled.rate": "-1"},
         "Invalid value -1 for configuration follower.replication.throttled.rate: Value must "
         "be at least 0"),
    ],
)
def test_refused_changes_leave_everything_as_it_was(tmp_path, name, configs, message):
    dynamic, store, applied = make(tmp_path)
    with pytest.raises(InvalidRequestError) as info:
        dynamic.alter(name, configs, validate_only=False)
    assert message in str(info.value)
    assert applied == []
    assert store.broker_configs("0") == store.broker_configs("<default>") == {}


def test_a_codec_is_a_valid_default_compression_type(tmp_path):
    dynamic, _, applied = make(tmp_path)
    dynamic.alter("", {"compression.type": "zstd"}, validate_only=False)
    assert applied[-1].log_config().compression_type == "zstd"


def test_invalid_stored_entries_are_dropped_at_load_not_fatal(tmp_path):
    store = LocalMetadataStore(tmp_path)
    store.load()
    store.set_broker_configs("<default>", {"num.partitions": "3", "message.max.bytes": "x",
                                           "log.retention.ms": "1000"})
    store.set_broker_configs("0", {"listeners": "PLAINTEXT://:1"})
    dynamic, _, applied = make(tmp_path)
    assert dynamic.entity_configs("") == {"log.retention.ms": "1000"}
    assert dynamic.entity_configs("0") == {"listeners": "PLAINTEXT://:1"}
    assert applied[-1].log_config().retention_ms == 1000


def test_store_file_keeps_kafkas_entities(tmp_path):
    dynamic, store, _ = make(tmp_path)
    dynamic.alter("", {"log.retention.ms": "1000"}, validate_only=False)
    dynamic.alter("0", {"max.connections": "10"}, validate_only=False)
    data = json.loads(store.path.read_text())
    assert data["broker_configs"] == {
        "<default>": {"log.retention.ms": "1000"},
        "0": {"max.connections": "10"},
    }


def test_replication_throttle_rates_are_dynamic_at_either_level(tmp_path):
    dynamic, _, applied = make(tmp_path)
    dynamic.alter("", {"follower.replication.throttled.rate": "5000000",
                       "replica.alter.log.dirs.io.max.bytes.per.second": "1000"},
                  validate_only=False)
    dynamic.alter("0", {"leader.replication.throttled.rate": "10000000"}, validate_only=False)
    assert applied[-1].dynamic_default == {
        "follower.replication.throttled.rate": "5000000",
        "replica.alter.log.dirs.io.max.bytes.per.second": "1000",
    }
    assert applied[-1].dynamic_broker == {"leader.replication.throttled.rate": "10000000"}
    _, _, reloaded = make(tmp_path)
    assert reloaded[-1].dynamic_broker == {"leader.replication.throttled.rate": "10000000"}
