"""DescribeConfigs (API 32) with every synonym, for ``franz configs --describe``; and
IncrementalAlterConfigs (API 44) of the cluster-wide broker default, for
``franz configs --entity-type brokers --entity-default --alter``.

Why not confluent-kafka: librdkafka hands synonyms to Python as a dict keyed by config name,
so a broker config whose synonyms share its name (``STATIC_BROKER_CONFIG:log.retention.hours``
then ``DEFAULT_CONFIG:log.retention.hours``) loses all but the last one, and Kafka's
``kafka-configs.sh`` prints them all, in the broker's order. So this module sends
DescribeConfigs itself through ``franz.admin.wire.BrokerConnection`` (version negotiated with
ApiVersions, at most v4: flexible, Kafka 2.6+; ``include_documentation`` needs v3+), once per
resource, to the broker the resource belongs to (a broker id's own address; topics and the
cluster-wide defaults: any broker).

Any listener is spoken here: ``security`` (``franz.admin.wire_security``, from the tool's
``--command-config``) adds TLS and SASL PLAIN/SCRAM to the connection.

librdkafka refuses a BROKER resource named ``""`` ("Invalid ConfigResource"), yet that
name is how Kafka addresses the cluster-wide dynamic defaults; so ``incremental_alter_configs``
sends that request itself too (v0-1, SET and DELETE operations).

Config sources are Kafka's ``DescribeConfigsResponse.ConfigSource`` ids, printed with the
names of the Java client's ``ConfigEntry.ConfigSource`` enum (``CONFIG_SOURCE_NAMES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from franz.admin.options import ToolError
from franz.admin.wire import connect
from franz.admin.wire_security import WireSecurity

__all__ = [
    "CONFIG_SOURCE_NAMES",
    "RESOURCE_BROKER",
    "RESOURCE_TOPIC",
    "ConfigInfo",
    "Synonym",
    "describe_configs",
    "incremental_alter_configs",
]

DESCRIBE_CONFIGS: Final = 32
INCREMENTAL_ALTER_CONFIGS: Final = 44
_OP_SET: Final = 0
_OP_DELETE: Final = 1
_VERSION: Final = 4
#: ``Errors.UNKNOWN_TOPIC_OR_PARTITION``.
_UNKNOWN_TOPIC_OR_PARTITION: Final = 3
RESOURCE_TOPIC: Final = 2
RESOURCE_BROKER: Final = 4

#: wire id -> Java ``ConfigEntry.ConfigSource`` name (what kafka-configs.sh prints)
CONFIG_SOURCE_NAMES: Final[Mapping[int, str]] = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}


@dataclass(frozen=True, slots=True)
class Synonym:
    name: str
    value: str | None
    source: str


@dataclass(frozen=True, slots=True)
class ConfigInfo:
    """One config entry as a tool prints it. ``value`` is None for sensitive entries."""

    name: str
    value: str | None
    source: str
    is_sensitive: bool
    read_only: bool
    synonyms: tuple[Synonym, ...]

    @property
    def is_default(self) -> bool:
        """Kafka's ``ConfigEntry.isDefault()``: the value is the built-in default."""
        return self.source == "DEFAULT_CONFIG"


def describe_configs(
    address: str,
    resource_type: int,
    name: str,
    *,
    timeout_s: float,
    client_id: str = "franz-configs",
    include_synonyms: bool = True,
    security: WireSecurity | None = None,
) -> list[ConfigInfo]:
    """The configs of one resource, in the broker's order, from the broker at ``address``
    (``host:port``). A resource error becomes a ``ToolError`` with the broker's message."""
    request = {
        "resources": [
            {"resource_type": resource_type, "resource_name": name, "configuration_keys": None}
        ],
        "include_synonyms": include_synonyms,
        "include_documentation": False,
    }
    try:
        with connect(address, timeout_s, client_id, security) as conn:
            response = conn.request(DESCRIBE_CONFIGS, request, max_version=_VERSION)
    except OSError as exc:
        raise ToolError(
            f"could not describe configs at {address}: {exc}; check that the broker is running"
        ) from exc
    (result,) = response.results
    if int(result.error_code) == _UNKNOWN_TOPIC_OR_PARTITION and not result.error_message:
        # Kafka's brokers send no message for an unknown topic.
        raise ToolError(f"Topic '{name}' does not exist.")
    if int(result.error_code) != 0:
        message = result.error_message or f"error code {int(result.error_code)}"
        raise ToolError(message)
    return [_entry(c) for c in result.configs]


def incremental_alter_configs(
    address: str,
    resource_type: int,
    name: str,
    to_set: Mapping[str, str],
    to_delete: list[str],
    *,
    timeout_s: float,
    client_id: str = "franz-configs",
    security: WireSecurity | None = None,
) -> None:
    """SET ``to_set`` and DELETE ``to_delete`` on one resource through the broker at
    ``address``; a resource error becomes a ``ToolError`` with the broker's message."""
    configs = [
        {"name": key, "config_operation": _OP_SET, "value": value}
        for key, value in to_set.items()
    ] + [{"name": key, "config_operation": _OP_DELETE, "value": None} for key in to_delete]
    request = {
        "resources": [
            {"resource_type": resource_type, "resource_name": name, "configs": configs}
        ],
        "validate_only": False,
    }
    try:
        with connect(address, timeout_s, client_id, security) as conn:
            response = conn.request(INCREMENTAL_ALTER_CONFIGS, request, max_version=1)
    except OSError as exc:
        raise ToolError(
            f"could not alter configs at {address}: {exc}; check that the broker is running"
        ) from exc
    (result,) = response.responses
    if int(result.error_code) != 0:
        raise ToolError(result.error_message or f"error code {int(result.error_code)}")


def _entry(config: Any) -> ConfigInfo:
    return ConfigInfo(
        name=config.name,
        value=config.value,
        source=CONFIG_SOURCE_NAMES.get(int(config.config_source), "UNKNOWN"),
        is_sensitive=bool(config.is_sensitive),
        read_only=bool(config.read_only),
        synonyms=tuple(
            Synonym(s.name, s.value, CONFIG_SOURCE_NAMES.get(int(s.source), "UNKNOWN"))
            for s in config.synonyms
        ),
    )
