"""Replication throttle configs (KIP-73): Kafka 3.9's ``QuotaConfigs`` broker quota keys and
the throttled-replica lists of ``ThrottledReplicaListValidator``.

Broker keys (Kafka's ``DynamicConfig.Broker``, ``QuotaConfigs.brokerQuotaConfigs``): LONG,
at least 0, default ``Long.MAX_VALUE`` (unbounded), set **only** as dynamic broker configs
(``/config/brokers/<id>`` or ``<default>``)::

    leader.replication.throttled.rate               bytes/s a leader serves to the followers
                                                    of its throttled replicas
    follower.replication.throttled.rate             bytes/s a follower fetches for its
                                                    throttled replicas
    replica.alter.log.dirs.io.max.bytes.per.second  bytes/s future replicas copy (moves
                                                    between the log dirs of a broker)

Kafka's ``BrokerConfigHandler`` takes a rate from the broker's own dynamic configs, else the
cluster-wide dynamic default, else ``Long.MAX_VALUE``: a value in ``server.properties`` is
not a quota ("This property can be only set dynamically"), and is ignored here too.

Topic keys ``leader.replication.throttled.replicas`` / ``follower.replication.throttled.replicas``
(``LogConfig``, no broker synonym): ``*`` (every replica of the topic) or a list
``partitionId:brokerId,...``; a broker throttles the partitions listed with its own id
(Kafka's ``TopicConfigHandler.parseThrottledPartitions``). ``reassign-partitions --throttle``
sets both lists and both rates; ``--verify`` removes them once the reassignment is done.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from franz.config.defs import LONG_MAX, ConfigKey, ConfigType, at_least
from franz.errors import InvalidConfigurationError

__all__ = [
    "ALL_REPLICAS",
    "BROKER_QUOTA_CONFIG_KEYS",
    "FOLLOWER_REPLICATION_THROTTLED_RATE",
    "LEADER_REPLICATION_THROTTLED_RATE",
    "REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND",
    "AllReplicas",
    "replication_quota_bound",
    "throttled_partitions",
    "validate_throttled_replicas",
]

LEADER_REPLICATION_THROTTLED_RATE: Final = "leader.replication.throttled.rate"
FOLLOWER_REPLICATION_THROTTLED_RATE: Final = "follower.replication.throttled.rate"
REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND: Final = (
    "replica.alter.log.dirs.io.max.bytes.per.second"
)
_DOC_TAIL: Final = (
    " This property can be only set dynamically. It is suggested that the limit be kept above "
    "1MB/s for accurate behaviour."
)

#: Kafka's ``QuotaConfigs.brokerQuotaConfigs`` (``DynamicConfig.Broker``), by name.
BROKER_QUOTA_CONFIG_KEYS: Final[Mapping[str, ConfigKey]] = {
    key.name: key
    for key in (
        ConfigKey(
            LEADER_REPLICATION_THROTTLED_RATE,
            ConfigType.LONG,
            LONG_MAX,
            "A long representing the upper bound (bytes/sec) on replication traffic for "
            "leaders enumerated in the property leader.replication.throttled.replicas (for "
            "each topic)." + _DOC_TAIL,
            at_least(0),
        ),
        ConfigKey(
            FOLLOWER_REPLICATION_THROTTLED_RATE,
            ConfigType.LONG,
            LONG_MAX,
            "A long representing the upper bound (bytes/sec) on replication traffic for "
            "followers enumerated in the property follower.replication.throttled.replicas "
            "(for each topic)." + _DOC_TAIL,
            at_least(0),
        ),
        ConfigKey(
            REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND,
            ConfigType.LONG,
            LONG_MAX,
            "A long representing the upper bound (bytes/sec) on disk IO used for moving "
            "replica between log directories on the same broker." + _DOC_TAIL,
            at_least(0),
        ),
    )
}


def replication_quota_bound(
    name: str, dynamic_broker: Mapping[str, Any], dynamic_default: Mapping[str, Any]
) -> int:
    """The bound (bytes/s) of rate ``name``: this broker's dynamic value, else the dynamic
    default's, else ``Long.MAX_VALUE`` (Kafka's ``BrokerConfigHandler.getOrDefault``). The
    stored values were validated when set (``DynamicBrokerConfig``)."""
    for layer in (dynamic_broker, dynamic_default):
        value = layer.get(name)
        if value is not None:
            parsed: int = BROKER_QUOTA_CONFIG_KEYS[name].parse(value)
            return parsed
    return LONG_MAX


class AllReplicas:
    """The ``*`` of a throttled-replica list: every partition of the topic (Kafka's
    ``Constants.AllReplicas``)."""

    __slots__ = ()

    def __contains__(self, partition: object) -> bool:
        return True

    def __repr__(self) -> str:
        return "ALL_REPLICAS"


ALL_REPLICAS: Final = AllReplicas()

_REPLICA: Final = re.compile(r"([0-9]+:[0-9]+)?")


def validate_throttled_replicas(name: str, value: Any) -> None:
    """Kafka's ``ThrottledReplicaListValidator``: each element ``partitionId:brokerId`` (or
    empty), or the elements together exactly ``*``."""
    proposed = [str(element).strip() for element in value]
    if all(_REPLICA.fullmatch(s) for s in proposed) or "".join(proposed) == "*":
        return
    raise InvalidConfigurationError(
        f"Invalid value [{', '.join(str(element) for element in value)}] for configuration "
        f"{name}: {name} must be the literal '*' or a list of replicas in the following "
        "format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )


def throttled_partitions(
    replicas: Sequence[str], broker_id: int
) -> frozenset[int] | AllReplicas:
    """The partitions a throttled-replica list (validated) throttles on broker
    ``broker_id``: ``ALL_REPLICAS`` for ``*``, else those listed with ``broker_id`` (Kafka's
    ``TopicConfigHandler.parseThrottledPartitions``)."""
    if "".join(replicas).strip() == "*":
        return ALL_REPLICAS
    partitions: set[int] = set()
    for element in replicas:
        partition, sep, broker = element.strip().partition(":")
        if sep and int(broker) == broker_id:
            partitions.add(int(partition))
    return frozenset(partitions)
