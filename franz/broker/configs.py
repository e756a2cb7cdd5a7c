"""Configs as DescribeConfigs and CreateTopics (v5+) show them: value, source, synonyms,
type, documentation (Kafka's ``ConfigHelper.createTopicConfigEntry`` /
``createBrokerConfigEntry``).

Config sources (``DescribeConfigsResponse.ConfigSource``, wire ``int8``)::

    1 DYNAMIC_TOPIC_CONFIG           a topic override (/config/topics/<t>)
    2 DYNAMIC_BROKER_CONFIG          a dynamic per-broker value      (/config/brokers/<id>)
    3 DYNAMIC_DEFAULT_BROKER_CONFIG  a dynamic cluster-wide default  (/config/brokers/<default>)
    4 STATIC_BROKER_CONFIG           set in server.properties or by --override
    5 DEFAULT_CONFIG                 the built-in default

Config types (``DescribeConfigsResponse.ConfigType``, v3+): BOOLEAN=1, STRING=2, INT=3,
SHORT=4, LONG=5, DOUBLE=6, LIST=7, CLASS=8, PASSWORD=9, UNKNOWN=0.

**Topic configs.** Every key of ``TOPIC_CONFIG_KEYS`` is listed (Kafka lists every
``LogConfig`` key), with its effective value. Synonyms, highest precedence first: the topic
override, then each set broker-level synonym (``log.retention.ms``, ``.minutes``,
``.hours``, ...) per layer: dynamic per-broker, dynamic default, static, then the built-in
defaults of those broker keys
that have one, as DEFAULT_CONFIG. The entry's source is its first synonym's. Kafka builds
the same chain but then drops the entries before the primary broker synonym
(``dropWhile(name != primary)``), which hides ``log.retention.hours=24`` behind a
``retention.ms`` reported as DEFAULT_CONFIG; Franz keeps them, so the source names what
actually set the value. Topic configs are never read-only or sensitive.

Kafka lists a topic's configs in one fixed order, its Scala ``HashMap`` order of the
``LogConfig`` names (``ConfigHelper.allConfigs``); ``TOPIC_CONFIG_ORDER`` is that order, as
Kafka 3.9.2 answers. It shows: kafka-topics ``--describe`` prints a topic's overrides in
the ``java.util.HashMap`` order of ``Config.entries()``, where names sharing a bucket
(``segment.bytes``, ``retention.ms``) keep the broker's order.

**Broker configs.** A named broker (resource ``"<id>"``) lists every key with its effective
value (``BrokerConfig``: per-broker dynamic > dynamic default > static > built-in default);
its source is the highest layer that sets it. Keys Kafka can change at runtime
(``franz.config.dynamic.is_dynamic``) are not read-only; the others are. Synonyms are
Kafka's (``configSynonyms``: each layer in turn for the key's unit chain starting at the
described name). The value is the key's own (null when neither set nor defaulted, like
Kafka's ``log.retention.ms``). The cluster-wide default (resource ``""``) lists only the
dynamic defaults, with synonyms from the default layer down. Keys Franz does not know but
found in ``server.properties`` or a dynamic layer are listed as Kafka lists them: type
UNKNOWN, sensitive (Kafka's ``maybeSensitive``: an unknown type may hold a password),
value null. The replication throttle rates (``franz.config.quota``), when set, are listed
with their value and type LONG, read-only (Kafka 3.9's ``AllDynamicConfigs`` lacks them).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from franz.config.broker import BROKER_CONFIG_KEYS, BrokerConfig
from franz.config.defs import ConfigKey, ConfigType
from franz.config.dynamic import is_dynamic
from franz.config.quota import BROKER_QUOTA_CONFIG_KEYS
from franz.config.topic import TOPIC_CONFIG_KEYS
from franz.errors import InvalidRequestError

__all__ = [
    "TOPIC_CONFIG_ORDER",
    "ConfigEntry",
    "ConfigSource",
    "ConfigSynonym",
    "ResourceType",
    "broker_resource_id",
    "config_type_id",
    "describe_broker_configs",
    "describe_default_broker_configs",
    "describe_topic_configs",
    "kafka_broker_default",
    "resource_repr",
    "resource_type_name",
]


class ConfigSource(enum.IntEnum):
    """Kafka's ``DescribeConfigsResponse.ConfigSource`` ids."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


#: Kafka's ``DescribeConfigsResponse.ConfigType`` ids by Franz config type (0 = UNKNOWN).
_CONFIG_TYPE_IDS: Final[Mapping[ConfigType, int]] = {
    ConfigType.BOOLEAN: 1,
    ConfigType.STRING: 2,
    ConfigType.INT: 3,
    ConfigType.LONG: 5,
    ConfigType.DOUBLE: 6,
    ConfigType.LIST: 7,
    ConfigType.PASSWORD: 9,
}
UNKNOWN_CONFIG_TYPE: Final = 0
_INTEGER: Final = re.compile(r"[+-]?[0-9]+")

#: Broker keys that set one topic default in precedence order (Kafka's
#: ``DynamicBrokerConfig.brokerConfigSynonyms``): the first one set wins. The first key of each
#: chain has no default of its own in Kafka; the later ones do.
_SYNONYM_CHAINS: Final[Mapping[str, tuple[str, ...]]] = {
    "log.retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
    "log.roll.ms": ("log.roll.ms", "log.roll.hours"),
    "log.roll.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "log.flush.interval.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
}
_CHAIN_OF: Final[Mapping[str, tuple[str, ...]]] = {
    name: chain for chain in _SYNONYM_CHAINS.values() for name in chain
}
#: Broker key -> the topic key it is the (primary) synonym of.
_TOPIC_KEY_OF: Final[Mapping[str, ConfigKey]] = {
    key.broker_synonym: key for key in TOPIC_CONFIG_KEYS.values() if key.broker_synonym
}


def config_type_id(kind: ConfigType | None) -> int:
    """Kafka's ConfigType id for ``kind`` (UNKNOWN for None)."""
    return UNKNOWN_CONFIG_TYPE if kind is None else _CONFIG_TYPE_IDS.get(kind, UNKNOWN_CONFIG_TYPE)


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "source": int(self.source)}


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One described config; ``synonyms`` always computed, sent only when asked for."""

    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    is_sensitive: bool
    synonyms: tuple[ConfigSynonym, ...]
    config_type: int
    documentation: str | None

    def to_describe_configs(
        self, *, include_synonyms: bool, include_documentation: bool
    ) -> dict[str, Any]:
        """A ``DescribeConfigsResourceResult`` mapping (v1+ field names)."""
        return {
            "name": self.name,
            "value": self.value,
            "read_only": self.read_only,
            "config_source": int(self.source),
            "is_sensitive": self.is_sensitive,
            "synonyms": [s.to_wire() for s in self.synonyms] if include_synonyms else [],
            "config_type": self.config_type,
            "documentation": self.documentation if include_documentation else None,
        }

    def to_create_topics(self) -> dict[str, Any]:
        """A ``CreatableTopicConfigs`` mapping (CreateTopics v5+)."""
        return {
            "name": self.name,
            "value": self.value,
            "read_only": self.read_only,
            "config_source": int(self.source),
            "is_sensitive": self.is_sensitive,
        }


def kafka_broker_default(name: str) -> Any:
    """The built-in default of broker key ``name`` as Kafka's ``KafkaConfig`` has it.

    Franz's derived broker synonyms (``log.segment.bytes``) carry no default of their own
    (so that ``BrokerConfig`` can tell set from unset); Kafka's default is the topic key's.
    The heads of the unit chains (``log.retention.ms``, ``log.roll.ms``, ...) have none, in
    Kafka as here: the later unit keys carry the default.
    """
    key = BROKER_CONFIG_KEYS.get(name)
    if key is None:
        return None
    if key.default is not None:
        return key.default
    chain = _CHAIN_OF.get(name)
    if chain is not None and chain[0] == name:
        return None
    topic_key = _TOPIC_KEY_OF.get(name)
    return None if topic_key is None else topic_key.default


def _format(key: ConfigKey, value: Any) -> str | None:
    if isinstance(value, tuple):
        value = list(value)
    return key.format(value)


def _layers(config: BrokerConfig) -> tuple[tuple[Mapping[str, Any], ConfigSource], ...]:
    """The broker config layers, highest precedence first, with the source each stands for."""
    return (
        (config.dynamic_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
        (config.dynamic_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
        (config.static, ConfigSource.STATIC_BROKER_CONFIG),
    )


def _layer_value(name: str, value: Any) -> str | None:
    """A layer's value as DescribeConfigs shows it (stored strings are parsed first, so a
    dynamic ``cleanup.policy= compact`` shows as the static one would)."""
    key = BROKER_CONFIG_KEYS.get(name)
    if key is None:
        return None if value is None else str(value)
    return _format(key, key.parse(value) if isinstance(value, str) else value)


def _broker_synonyms(config: BrokerConfig, names: Iterable[str]) -> list[ConfigSynonym]:
    """Kafka's ``configSynonyms`` for broker keys ``names`` (precedence order): every
    per-broker dynamic value, every dynamic default, every static value, then every built-in
    default."""
    names = list(names)
    out: list[ConfigSynonym] = []
    for layer, source in _layers(config):
        for name in names:
            if layer.get(name) is not None:
                out.append(ConfigSynonym(name, _layer_value(name, layer[name]), source))
    for name in names:
        default = kafka_broker_default(name)
        if default is not None:
            key = BROKER_CONFIG_KEYS[name]
            out.append(ConfigSynonym(name, _format(key, default), ConfigSource.DEFAULT_CONFIG))
    return out


#: The order Kafka 3.9's broker lists a topic's configs in (see the module docstring);
#: read from a Kafka 3.9.2 broker's DescribeConfigs response, the same with and without
#: overrides.
TOPIC_CONFIG_ORDER: Final = (
    "compression.type", "remote.log.delete.on.disable", "leader.replication.throttled.replicas",
    "remote.storage.enable", "message.downconversion.enable", "min.insync.replicas",
    "segment.jitter.ms", "remote.log.copy.disable", "local.retention.ms", "cleanup.policy",
    "flush.ms", "follower.replication.throttled.replicas", "compression.lz4.level",
    "segment.bytes", "retention.ms", "compression.gzip.level", "flush.messages",
    "compression.zstd.level", "message.format.version", "max.compaction.lag.ms",
    "file.delete.delay.ms", "max.message.bytes", "min.compaction.lag.ms",
    "message.timestamp.type", "local.retention.bytes", "preallocate",
    "min.cleanable.dirty.ratio", "index.interval.bytes", "unclean.leader.election.enable",
    "retention.bytes", "delete.retention.ms", "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms", "segment.ms", "message.timestamp.difference.max.ms",
    "segment.index.bytes",
)  # fmt: skip
_TOPIC_RANK: Final = {name: i for i, name in enumerate(TOPIC_CONFIG_ORDER)}


def _wanted(names: Iterable[str], keys: Collection[str] | None) -> list[str]:
    """``names`` filtered by a request's ``configuration_keys`` (null or empty: all)."""
    if not keys:
        return sorted(names)
    wanted = set(keys)
    return sorted(name for name in names if name in wanted)


def describe_topic_configs(
    config: BrokerConfig,
    overrides: Mapping[str, str],
    keys: Collection[str] | None = None,
) -> list[ConfigEntry]:
    """Every topic config (or those named in ``keys``) of a topic with ``overrides``.

    ``overrides`` must be valid (``TopicManager.validate_configs``): values are the effective
    ones, ``LogConfig`` formatted (``cleanup.policy=compact, delete`` shows
    ``compact,delete``).
    """
    effective = config.log_config().with_overrides(overrides).to_properties()
    entries = []
    names = _wanted(TOPIC_CONFIG_KEYS, keys)
    names.sort(key=lambda name: _TOPIC_RANK.get(name, len(_TOPIC_RANK)))  # stable: then by name
    for name in names:
        key = TOPIC_CONFIG_KEYS[name]
        value: str | None = effective[name]
        synonyms: list[ConfigSynonym] = []
        if name in overrides:
            synonyms.append(ConfigSynonym(name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG))
        if key.broker_synonym is not None:
            chain = _SYNONYM_CHAINS.get(key.broker_synonym, (key.broker_synonym,))
            synonyms.extend(_broker_synonyms(config, chain))
        entries.append(
            ConfigEntry(
                name=name,
                value=value,
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                read_only=False,
                is_sensitive=key.type is ConfigType.PASSWORD,
                synonyms=tuple(synonyms),
                config_type=config_type_id(key.type),
                documentation=key.doc or None,
            )
        )
    return entries


def describe_broker_configs(
    config: BrokerConfig, keys: Collection[str] | None = None
) -> list[ConfigEntry]:
    """The broker's own configs (a named BROKER resource): every known key with its
    effective value, and the unknown keys of ``server.properties`` and of the dynamic
    layers (see the module docstring)."""
    unknown = {
        name
        for layer in (config.original, config.dynamic_default, config.dynamic_broker)
        for name in layer
        if name not in BROKER_CONFIG_KEYS
    }
    return [
        _broker_entry(config, name, per_broker=True)
        for name in _wanted([*BROKER_CONFIG_KEYS, *unknown], keys)
    ]


def describe_default_broker_configs(
    config: BrokerConfig, keys: Collection[str] | None = None
) -> list[ConfigEntry]:
    """The cluster-wide dynamic defaults (the BROKER resource ``""``): only the keys set
    there, valued as set, synonyms without the per-broker layer (Kafka's
    ``createBrokerConfigEntry(perBrokerConfig = false)``)."""
    return [
        _broker_entry(config, name, per_broker=False)
        for name in _wanted(config.dynamic_default, keys)
    ]


def _broker_entry(config: BrokerConfig, name: str, *, per_broker: bool) -> ConfigEntry:
    read_only = not is_dynamic(name)
    key = BROKER_CONFIG_KEYS.get(name)
    if key is None and name in BROKER_QUOTA_CONFIG_KEYS:
        # Kafka 3.9 knows the throttle rates' type (DynamicConfig.Broker) but not their
        # documentation, and lists them read-only (not in AllDynamicConfigs).
        synonyms = [
            ConfigSynonym(name, str(layer[name]), source)
            for layer, source in _layers(config)
            if name in layer and (per_broker or source != ConfigSource.DYNAMIC_BROKER_CONFIG)
        ]
        return ConfigEntry(
            name=name,
            value=synonyms[0].value if synonyms else None,
            source=synonyms[0].source if synonyms else ConfigSource.STATIC_BROKER_CONFIG,
            read_only=read_only,
            is_sensitive=False,
            synonyms=tuple(synonyms),
            config_type=config_type_id(ConfigType.LONG),
            documentation=None,
        )
    if key is None:
        synonyms = [
            ConfigSynonym(name, None, source)
            for layer, source in _layers(config)
            if name in layer and (per_broker or source != ConfigSource.DYNAMIC_BROKER_CONFIG)
        ]
        return ConfigEntry(
            name=name,
            value=None,
            source=synonyms[0].source if synonyms else ConfigSource.STATIC_BROKER_CONFIG,
            read_only=read_only,
            is_sensitive=True,
            synonyms=tuple(synonyms),
            config_type=UNKNOWN_CONFIG_TYPE,
            documentation=None,
        )
    sensitive = key.type is ConfigType.PASSWORD
    chain = _CHAIN_OF.get(name, (name,))
    synonyms = _broker_synonyms(config, chain[chain.index(name) :])
    if not per_broker:
        synonyms = [s for s in synonyms if s.source != ConfigSource.DYNAMIC_BROKER_CONFIG]
    # Kafka's dropWhile: the described key's own entries come first.
    while synonyms and synonyms[0].name != name:
        synonyms.pop(0)
    if per_broker:
        raw = config.get(name) if config.is_set(name) else kafka_broker_default(name)
        value = _format(key, raw)
    else:
        value = _layer_value(name, config.dynamic_default[name])
    if sensitive:
        value = None
        synonyms = [ConfigSynonym(s.name, None, s.source) for s in synonyms]
    return ConfigEntry(
        name=name,
        value=value,
        source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
        read_only=read_only,
        is_sensitive=sensitive,
        synonyms=tuple(synonyms),
        config_type=config_type_id(key.type),
        documentation=key.doc or None,
    )


class ResourceType(enum.IntEnum):
    """Kafka's ``ConfigResource.Type`` ids (DescribeConfigs, AlterConfigs, ...)."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


def resource_type_name(value: int) -> str:
    try:
        return ResourceType(value).name
    except ValueError:
        return ResourceType.UNKNOWN.name


def broker_resource_id(name: str | None, broker_id: int, *, altering: bool = False) -> int | None:
    """The broker id a BROKER resource names: None for ``""`` (the cluster-wide default),
    else this broker's id. ``InvalidRequestError`` with Kafka's messages otherwise: a
    describe's (``ZkAdminManager.describeConfigs``, "expected 0 or empty string") or, with
    ``altering``, an alter's (``ZkAdminManager.getBrokerId`` and
    ``ConfigAdminManager.validateResourceNameIsCurrentNodeId``, "expected 0, but received
    3"). A per-broker change is made on the broker it names: the admin clients send it
    there, so another id is refused rather than forwarded, as in Kafka."""
    if not name:
        return None
    if not _INTEGER.fullmatch(name):
        raise InvalidRequestError(f"Broker id must be an integer, but it is: {name}")
    requested = int(name)
    if requested != broker_id:
        expected = f"{broker_id}" if altering else f"{broker_id} or empty string"
        raise InvalidRequestError(f"Unexpected broker id, expected {expected}, but received {name}")
    return requested


def resource_repr(resource_type: int, name: str | None) -> str:
    """Kafka's ``ConfigResource.toString``, used in its error messages."""
    return f"ConfigResource(type={resource_type_name(resource_type)}, name='{name}')"
