"""What ``franz topics`` and ``franz configs`` share beyond ``franz.admin.client``: configs
(over the wire or through the admin client), Kafka's topic filter, Kafka 3.9's output lines
and config parsing.

Output formats (Kafka 3.9 ``TopicCommand`` with a broker that has no DescribeTopicPartitions
API, as a ZooKeeper-mode broker and Franz: partitions come from Metadata, so ELR is unknown)::

    Topic: t<T>TopicId: <base64><T>PartitionCount: 3<T>ReplicationFactor: 1<T>Configs: k=v,k2=v
    <T>Topic: t<T>Partition: 0<T>Leader: 0<T>Replicas: 0<T>Isr: 0<T>Elr: N/A<T>LastKnownElr: N/A

(``<T>`` is a tab.)

``TopicId`` is Kafka's ``Uuid.toString()``, URL-safe base64 (``-`` and ``_``; librdkafka's
``Uuid`` text is standard base64 with ``+`` and ``/``, hence ``topic_id_text``), left out
for the zero UUID; ``Configs`` lists the entries whose source is not
DEFAULT_CONFIG (Java's ``ConfigEntry.isDefault()``); a partition without a leader prints
``Leader: none``.

``kafka-configs.sh --describe`` (Kafka 3.9 ``ConfigCommand``)::

    Dynamic configs for topic t are:            (``All configs for ...`` with --all)
      k=v sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:k=v, DEFAULT_CONFIG:log.k=v0}
    Default configs for brokers in the cluster are:

Internal topics are ``client.INTERNAL_TOPICS`` (Kafka's ``Topic.isInternal``).
"""

from __future__ import annotations

import argparse
import re
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, Final

from confluent_kafka.admin import AdminClient

from franz.admin.client import INTERNAL_TOPICS, result
from franz.admin.configs_wire import (
    CONFIG_SOURCE_NAMES,
    ConfigInfo,
    Synonym,
    describe_configs,
)
from franz.admin.options import ToolError, client_config
from franz.admin.wire_security import WireSecurity
from franz.protocol.kafka_uuid import uuid_to_str

__all__ = [
    "TopicFilter",
    "config_line",
    "configs_header",
    "describe_resource_configs",
    "has_collision_chars",
    "kafka_describe_order",
    "parse_add_config",
    "partition_line",
    "select_topics",
    "topic_id_text",
    "topic_line",
]

ZERO_TOPIC_ID: Final = "AAAAAAAAAAAAAAAAAAAAAA"
_UINT64: Final = (1 << 64) - 1


def _java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units), as an unsigned 32-bit int."""
    data = text.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h


def kafka_describe_order(names: Sequence[str]) -> list[str]:
    """The order in which Kafka 3.9's ``TopicCommand --describe`` prints topics ``names``.

    It prints ``describeTopics(sorted names).allTopicNames().values()``: a
    ``java.util.HashMap`` built with ``new HashMap<>(n)`` from another one built alike in
    sorted order. Its iteration order is bucket order, ``(h ^ (h >>> 16)) & (capacity - 1)``
    of ``String.hashCode``, then insertion (sorted) order within a bucket; the capacity is
    the smallest power of two >= n, doubled while n exceeds 3/4 of it (HashMap's resize
    at the load factor 0.75).
    """
    ordered = sorted(names)
    capacity = 1
    while capacity < len(ordered):
        capacity <<= 1
    while len(ordered) > capacity * 3 // 4:
        capacity <<= 1

    def bucket(name: str) -> int:
        h = _java_string_hash(name)
        return (h ^ (h >> 16)) & (capacity - 1)

    return sorted(ordered, key=bucket)


def topic_id_text(topic_id: Any) -> str:
    """Kafka's text form of a librdkafka ``Uuid`` (its own ``str()`` is standard base64)."""
    if topic_id is None:
        return ZERO_TOPIC_ID
    msb = topic_id.get_most_significant_bits() & _UINT64
    lsb = topic_id.get_least_significant_bits() & _UINT64
    return uuid_to_str(uuid.UUID(int=(msb << 64) | lsb))


def describe_resource_configs(
    admin: AdminClient,
    args: argparse.Namespace,
    metadata: Any,
    resource_type: int,
    name: str,
    *,
    include_synonyms: bool = True,
) -> list[ConfigInfo]:
    """The configs of one topic (``resource_type`` 2) or broker (4; ``name`` "" for the
    cluster-wide defaults), in the broker's order.

    DescribeConfigs goes on the wire (``franz.admin.configs_wire``: every synonym survives;
    TLS and SASL as ``--command-config`` says), to broker ``name``'s own address for a broker
    id, else to the first broker in ``metadata``; with no broker in ``metadata``,
    confluent-kafka's ``describe_configs``.
    """
    config = client_config(args)
    if metadata.brokers:
        brokers = metadata.brokers
        broker = brokers.get(int(name)) if resource_type == 4 and name.isdigit() else None
        if broker is None:
            broker = brokers[min(brokers)]
        return describe_configs(
            f"{broker.host}:{broker.port}",
            resource_type,
            name,
            timeout_s=args.timeout_ms / 1000,
            client_id=str(config.get("client.id", "franz-admin")),
            include_synonyms=include_synonyms,
            security=WireSecurity.from_config(config),
        )
    from confluent_kafka.admin._config import ConfigResource

    resource = ConfigResource(resource_type, name)
    (future,) = admin.describe_configs([resource]).values()
    entries = result(future, args)
    return [_from_confluent(e) for e in entries.values()]


def _from_confluent(entry: Any) -> ConfigInfo:
    def source(value: Any) -> str:
        return CONFIG_SOURCE_NAMES.get(int(getattr(value, "value", value)), "UNKNOWN")

    return ConfigInfo(
        name=entry.name,
        value=entry.value,
        source=source(entry.source),
        is_sensitive=entry.is_sensitive,
        read_only=entry.is_read_only,
        synonyms=tuple(
            Synonym(s.name, s.value, source(s.source)) for s in entry.synonyms.values()
        ),
    )


# -- topic selection ---------------------------------------------------------------------------


class TopicFilter:
    """Kafka's ``TopicFilter.IncludeList``: ``--topic`` as a Java regex over whole names;
    commas mean "or", spaces and surrounding quotes are dropped."""

    def __init__(self, raw: str) -> None:
        regex = raw.strip().replace(",", "|").replace(" ", "")
        regex = re.sub(r"""^["']+""", "", regex)
        regex = re.sub(r"""["']+$""", "", regex)
        try:
            self.pattern = re.compile(regex)
        except re.error as exc:
            raise ToolError(f"{raw} is an invalid regex: {exc}") from exc

    def allows(self, topic: str, exclude_internal: bool) -> bool:
        if exclude_internal and topic in INTERNAL_TOPICS:
            return False
        return self.pattern.fullmatch(topic) is not None


def select_topics(
    names: Iterable[str], include: str | None, exclude_internal: bool
) -> list[str]:
    """Kafka's ``TopicCommand.getTopics``: sorted names, filtered by ``--topic`` if given."""
    ordered = sorted(names)
    if include is None:
        return [t for t in ordered if not (exclude_internal and t in INTERNAL_TOPICS)]
    keep = TopicFilter(include)
    return [t for t in ordered if keep.allows(t, exclude_internal)]


def has_collision_chars(topic: str) -> bool:
    """Kafka's ``Topic.hasCollisionChars``: '.' and '_' map to the same metric name."""
    return "." in topic or "_" in topic


# -- output lines ------------------------------------------------------------------------------


def topic_line(
    topic: str,
    topic_id: str,
    partition_count: int,
    replication_factor: int,
    configs: Sequence[ConfigInfo],
) -> str:
    overrides = ",".join(f"{c.name}={_java_str(c.value)}" for c in configs if not c.is_default)
    parts = [f"Topic: {topic}"]
    if topic_id and topic_id != ZERO_TOPIC_ID:
        parts.append(f"TopicId: {topic_id}")
    parts += [
        f"PartitionCount: {partition_count}",
        f"ReplicationFactor: {replication_factor}",
        f"Configs: {overrides}",
    ]
    return "\t".join(parts)


def partition_line(
    topic: str, partition: int, leader: int | None, replicas: Sequence[int], isr: Sequence[int]
) -> str:
    return "\t" + "\t".join(
        [
            f"Topic: {topic}",
            f"Partition: {partition}",
            f"Leader: {'none' if leader is None else leader}",
            f"Replicas: {','.join(map(str, replicas))}",
            f"Isr: {','.join(map(str, isr))}",
            "Elr: N/A",
            "LastKnownElr: N/A",
        ]
    )


def configs_header(entity_type: str, name: str, describe_all: bool) -> str:
    """``entity_type`` is the plural (``topics``, ``brokers``); ``name`` "" is the default."""
    if name == "":
        return f"Default configs for {entity_type} in the cluster are:"
    kind = "All" if describe_all else "Dynamic"
    return f"{kind} configs for {entity_type[:-1]} {name} are:"


def config_line(entry: ConfigInfo) -> str:
    synonyms = ", ".join(f"{s.source}:{s.name}={_java_str(s.value)}" for s in entry.synonyms)
    return (
        f"  {entry.name}={_java_str(entry.value)} "
        f"sensitive={str(entry.is_sensitive).lower()} synonyms={{{synonyms}}}"
    )


def _java_str(value: str | None) -> str:
    return "null" if value is None else value


# -- config arguments --------------------------------------------------------------------------

# A separator outside square brackets: Kafka's lookahead "(?=[^\]]*(?:\[|$))".
_OUTSIDE_BRACKETS: Final = r"(?=[^\]]*(?:\[|$))"


def parse_add_config(text: str) -> dict[str, str]:
    """Kafka's ``--add-config``: ``k1=v1,k2=[v1,v2],k3=v3``; square brackets group a value
    that holds commas and are dropped; a value may be empty (``k=``)."""
    out: dict[str, str] = {}
    for item in re.split("," + _OUTSIDE_BRACKETS, text):
        pair = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, item)
        if len(pair) != 2:
            raise ToolError(
                'Invalid entity config: all configs to be added must be in the format "key=val".'
            )
        out[pair[0].strip()] = re.sub(r"\[?\]?", "", pair[1]).strip()
    return out
