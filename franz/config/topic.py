"""Topic-level log configs: Kafka's ``LogConfig`` keys, defaults and broker synonyms.

Each topic config has a broker-level synonym (``segment.bytes`` <- ``log.segment.bytes``)
whose value is the default for topics without an override; the built-in default applies when
neither is set. Units and defaults are Kafka 3.x's (``TopicConfig`` / ``LogConfig``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from franz.config.defs import (
    INT_MAX,
    LONG_MAX,
    ConfigKey,
    ConfigType,
    Validator,
    at_least,
    between,
    one_of,
)
from franz.config.quota import validate_throttled_replicas
from franz.errors import InvalidConfigurationError

__all__ = ["TOPIC_CONFIG_KEYS", "LogConfig"]

_B, _I, _L, _D, _S, _LIST = (
    ConfigType.BOOLEAN,
    ConfigType.INT,
    ConfigType.LONG,
    ConfigType.DOUBLE,
    ConfigType.STRING,
    ConfigType.LIST,
)

_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "segment.bytes",
        _I,
        1024**3,
        "Segment file size before a roll.",
        at_least(14),
        "log.segment.bytes",
    ),
    ConfigKey(
        "segment.ms",
        _L,
        7 * 24 * 3600 * 1000,
        "Roll a segment after this time.",
        at_least(1),
        "log.roll.ms",
    ),
    ConfigKey(
        "segment.jitter.ms",
        _L,
        0,
        "Random jitter subtracted from segment.ms.",
        at_least(0),
        "log.roll.jitter.ms",
    ),
    ConfigKey(
        "segment.index.bytes",
        _I,
        10 * 1024 * 1024,
        "Size of the offset/time indexes.",
        at_least(4),
        "log.index.size.max.bytes",
    ),
    ConfigKey(
        "index.interval.bytes",
        _I,
        4096,
        "Bytes between offset index entries.",
        at_least(0),
        "log.index.interval.bytes",
    ),
    ConfigKey(
        "retention.ms",
        _L,
        7 * 24 * 3600 * 1000,
        "Delete segments older than this (-1: no time limit).",
        at_least(-1),
        "log.retention.ms",
    ),
    ConfigKey(
        "retention.bytes",
        _L,
        -1,
        "Delete old segments beyond this size (-1: none).",
        None,
        "log.retention.bytes",
    ),
    ConfigKey(
        "flush.messages",
        _L,
        LONG_MAX,
        "fsync after this many messages.",
        at_least(1),
        "log.flush.interval.messages",
    ),
    ConfigKey(
        "flush.ms",
        _L,
        LONG_MAX,
        "fsync after this much time.",
        at_least(0),
        "log.flush.interval.ms",
    ),
    ConfigKey(
        "file.delete.delay.ms",
        _L,
        60000,
        "Delay before a deleted segment's files go.",
        at_least(0),
        "log.segment.delete.delay.ms",
    ),
    ConfigKey(
        "max.message.bytes",
        _I,
        1048588,
        "Largest record batch size allowed.",
        at_least(0),
        "message.max.bytes",
    ),
    ConfigKey(
        "message.timestamp.type",
        _S,
        "CreateTime",
        "CreateTime or LogAppendTime.",
        one_of("CreateTime", "LogAppendTime"),
        "log.message.timestamp.type",
    ),
    ConfigKey(
        "message.timestamp.difference.max.ms",
        _L,
        LONG_MAX,
        "Deprecated: max difference between a record timestamp and broker time.",
        at_least(0),
        "log.message.timestamp.difference.max.ms",
    ),
    ConfigKey(
        "message.timestamp.before.max.ms",
        _L,
        LONG_MAX,
        "How far in the past a CreateTime timestamp may be.",
        at_least(0),
        "log.message.timestamp.before.max.ms",
    ),
    ConfigKey(
        "message.timestamp.after.max.ms",
        _L,
        LONG_MAX,
        "How far in the future a CreateTime timestamp may be.",
        at_least(0),
        "log.message.timestamp.after.max.ms",
    ),
    ConfigKey(
        "cleanup.policy",
        _LIST,
        ["delete"],
        "delete, compact or both.",
        one_of("compact", "delete", multi=True),  # Kafka's order, which its message shows
        "log.cleanup.policy",
    ),
    ConfigKey(
        "delete.retention.ms",
        _L,
        24 * 3600 * 1000,
        "How long tombstones are kept.",
        at_least(0),
        "log.cleaner.delete.retention.ms",
    ),
    ConfigKey(
        "min.cleanable.dirty.ratio",
        _D,
        0.5,
        "Dirty ratio before compaction.",
        between(0, 1),
        "log.cleaner.min.cleanable.ratio",
    ),
    ConfigKey(
        "min.compaction.lag.ms",
        _L,
        0,
        "Minimum time a record stays uncompacted.",
        at_least(0),
        "log.cleaner.min.compaction.lag.ms",
    ),
    ConfigKey(
        "max.compaction.lag.ms",
        _L,
        LONG_MAX,
        "Maximum time a record stays uncompacted.",
        at_least(1),
        "log.cleaner.max.compaction.lag.ms",
    ),
    ConfigKey(
        "compression.type",
        _S,
        "producer",
        "Final codec: producer keeps the producer's.",
        one_of("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
        "compression.type",
    ),
    ConfigKey(
        "min.insync.replicas",
        _I,
        1,
        "Replicas that must acknowledge acks=all.",
        at_least(1),
        "min.insync.replicas",
    ),
    ConfigKey(
        "unclean.leader.election.enable",
        _B,
        False,
        "Allow out-of-sync replicas to become leader.",
        None,
        "unclean.leader.election.enable",
    ),
    ConfigKey("preallocate", _B, False, "Preallocate segment files.", None, "log.preallocate"),
    ConfigKey(
        "message.downconversion.enable",
        _B,
        True,
        "Down-convert for old consumers.",
        None,
        "log.message.downconversion.enable",
    ),
    ConfigKey(
        "follower.replication.throttled.replicas",
        _LIST,
        [],
        "A list of replicas for which log replication should be throttled on the follower "
        "side. The list should describe a set of replicas in the form "
        "[PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard "
        "'*' can be used to throttle all replicas for this topic.",
        validate_throttled_replicas,
        None,  # no broker-level synonym in Kafka (ServerTopicConfigSynonyms)
    ),
    ConfigKey(
        "leader.replication.throttled.replicas",
        _LIST,
        [],
        "A list of replicas for which log replication should be throttled on the leader "
        "side. The list should describe a set of replicas in the form "
        "[PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard "
        "'*' can be used to throttle all replicas for this topic.",
        validate_throttled_replicas,
        None,  # no broker-level synonym in Kafka (ServerTopicConfigSynonyms)
    ),
)

def _only(value: Any, why: str) -> Validator:
    """Accept only ``value``: a Kafka config Franz lists but whose feature it lacks."""

    def check(name: str, got: Any) -> None:
        if got != value:
            raise InvalidConfigurationError(
                f"Invalid value {got} for configuration {name}: {why}"
            )

    return check


def _gzip_level(name: str, value: Any) -> None:
    if value != -1 and not 1 <= value <= 9:
        raise InvalidConfigurationError(
            f"Invalid value {value} for configuration {name}: Value must be -1 or in [1, 9]"
        )


#: Kafka 3.9 topic configs: the KIP-390 compression levels, used when the broker recompresses
#: to the topic's ``compression.type`` (``franz.storage.log_validator``), and configs whose
#: features Franz does not have (tiered storage, message format down-conversion), listed with
#: Kafka's defaults so DescribeConfigs shows what Kafka shows; the tiered-storage switches
#: accept only "off".
_KEYS = (
    *_KEYS,
    ConfigKey(
        "compression.gzip.level",
        _I,
        -1,
        "gzip level used when the broker compresses (KIP-390).",
        _gzip_level,
        "compression.gzip.level",
    ),
    ConfigKey(
        "compression.lz4.level",
        _I,
        9,
        "lz4 level used when the broker compresses (KIP-390).",
        between(1, 17),
        "compression.lz4.level",
    ),
    ConfigKey(
        "compression.zstd.level",
        _I,
        3,
        "zstd level used when the broker compresses (KIP-390).",
        between(-131072, 22),
        "compression.zstd.level",
    ),
    ConfigKey(
        "local.retention.bytes",
        _L,
        -2,
        "Local retention with tiered storage (-2: retention.bytes).",
        at_least(-2),
        "log.local.retention.bytes",
    ),
    ConfigKey(
        "local.retention.ms",
        _L,
        -2,
        "Local retention with tiered storage (-2: retention.ms).",
        at_least(-2),
        "log.local.retention.ms",
    ),
    ConfigKey(
        "message.format.version",
        _S,
        "3.0-IV1",
        "Deprecated since Kafka 3.0: message format v2 is always used.",
        None,
        "log.message.format.version",
    ),
    ConfigKey(
        "remote.storage.enable",
        _B,
        False,
        "Tiered storage for this topic (not supported by Franz).",
        _only(False, "tiered storage is not supported"),
        None,  # no broker-level synonym in Kafka (ServerTopicConfigSynonyms)
    ),
    ConfigKey(
        "remote.log.copy.disable",
        _B,
        False,
        "Stop copying segments to tiered storage (not supported by Franz).",
        None,
        None,  # no broker-level synonym in Kafka (ServerTopicConfigSynonyms)
    ),
    ConfigKey(
        "remote.log.delete.on.disable",
        _B,
        False,
        "Delete tiered data when tiered storage is disabled (not supported by Franz).",
        None,
        None,  # no broker-level synonym in Kafka (ServerTopicConfigSynonyms)
    ),
)

#: Topic config name -> definition.
TOPIC_CONFIG_KEYS: Mapping[str, ConfigKey] = {key.name: key for key in _KEYS}


@dataclass(frozen=True, slots=True)
class LogConfig:
    """The effective configuration of one partition log (Kafka's ``LogConfig``)."""

    segment_bytes: int = 1024**3
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60000
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    message_timestamp_difference_max_ms: int = LONG_MAX
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_after_max_ms: int = LONG_MAX
    cleanup_policy: tuple[str, ...] = ("delete",)
    delete_retention_ms: int = 24 * 3600 * 1000
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    compression_type: str = "producer"
    min_insync_replicas: int = 1
    unclean_leader_election_enable: bool = False
    preallocate: bool = False
    message_downconversion_enable: bool = True
    follower_replication_throttled_replicas: tuple[str, ...] = ()
    leader_replication_throttled_replicas: tuple[str, ...] = ()
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    local_retention_bytes: int = -2
    local_retention_ms: int = -2
    message_format_version: str = "3.0-IV1"
    remote_storage_enable: bool = False
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    def with_overrides(self, overrides: Mapping[str, Any]) -> LogConfig:
        """A copy with topic-level overrides (Kafka names, strings or values) applied.

        Raises ``InvalidConfigurationError`` for an unknown key or a bad value.
        """
        changes: dict[str, Any] = {}
        for name, raw in overrides.items():
            key = TOPIC_CONFIG_KEYS.get(name)
            if key is None:
                from franz.errors import InvalidConfigurationError

                raise InvalidConfigurationError(f"Unknown topic config name: {name}")
            value = key.parse(raw)
            if isinstance(value, list):
                value = tuple(value)
            changes[_attr(name)] = value
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update(changes)
        return LogConfig(**values)

    def to_properties(self) -> dict[str, str]:
        """Every topic config as Kafka would list it, by Kafka name."""
        out: dict[str, str] = {}
        for name, key in TOPIC_CONFIG_KEYS.items():
            value = getattr(self, _attr(name))
            formatted = key.format(list(value) if isinstance(value, tuple) else value)
            out[name] = "" if formatted is None else formatted
        return out

    def effective_max_message_bytes(self) -> int:
        return min(self.max_message_bytes, INT_MAX)


def _attr(name: str) -> str:
    return name.replace(".", "_")
