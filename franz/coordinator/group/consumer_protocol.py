"""The consumer protocol's embedded payloads: Subscription and Assignment, v0-v3.

A classic group treats member metadata and assignments as opaque bytes, except where Kafka
looks inside for ``protocol_type == "consumer"``: the subscribed topics (OffsetDelete's
GROUP_SUBSCRIBED_TO_TOPIC, offset expiration) and the DescribeGroups / consumer-groups tooling.
Formats (Kafka's ``ConsumerProtocolSubscription.json`` / ``ConsumerProtocolAssignment.json``,
never flexible, big-endian, each prefixed by its int16 version)::

    Subscription: version int16
                  topics [string]                 int32 count, int16-length strings
                  user_data nullable bytes        int32 length, -1 = null
                  v1+ owned_partitions [topic string, partitions [int32]]
                  v2+ generation_id int32         default -1
                  v3+ rack_id nullable string     int16 length, -1 = null
    Assignment:   version int16
                  assigned_partitions [topic string, partitions [int32]]
                  user_data nullable bytes        (v1-v3 add no field)

A version above 3 is read as v3 and trailing bytes are ignored (Kafka's
``ConsumerProtocol.checkSubscriptionVersion``: newer versions only append fields); a negative
version is an error.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from franz.errors import FranzError

if TYPE_CHECKING:
    from franz.coordinator.group.states import GroupSnapshot

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "HIGHEST_VERSION",
    "Assignment",
    "ConsumerProtocolError",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "subscribed_topics",
    "subscription_topics",
]

CONSUMER_PROTOCOL_TYPE = "consumer"
"""Kafka's ``ConsumerProtocol.PROTOCOL_TYPE``."""

HIGHEST_VERSION = 3

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]
"""(topic, partitions) pairs in wire order."""


class ConsumerProtocolError(FranzError):
    """The bytes are not a consumer-protocol payload (Kafka's ``SchemaException``)."""


@dataclass(frozen=True, slots=True)
class Subscription:
    """A consumer's JoinGroup protocol metadata (``ConsumerProtocolSubscription``)."""

    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: TopicPartitions = ()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = HIGHEST_VERSION


@dataclass(frozen=True, slots=True)
class Assignment:
    """The leader's SyncGroup assignment for one consumer (``ConsumerProtocolAssignment``)."""

    assigned_partitions: TopicPartitions
    user_data: bytes | None = None
    version: int = HIGHEST_VERSION


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ConsumerProtocolError("truncated consumer protocol payload")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return int(value)

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise ConsumerProtocolError("truncated consumer protocol payload")
        value = bytes(self.data[self.pos : self.pos + size])
        self.pos += size
        return value

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise ConsumerProtocolError("null string where a string is required")
        return value

    def nullable_string(self) -> str | None:
        size = self.take(">h")
        if size == -1:
            return None
        try:
            return self.raw(size).decode()
        except UnicodeDecodeError as exc:
            raise ConsumerProtocolError("string is not UTF-8") from exc

    def nullable_bytes(self) -> bytes | None:
        size = self.take(">i")
        return None if size == -1 else self.raw(size)

    def count(self) -> int:
        size = self.take(">i")
        if size < 0 or size > len(self.data) - self.pos:
            raise ConsumerProtocolError(f"bad array length {size}")
        return size

    def topic_partitions(self) -> TopicPartitions:
        out = []
        for _ in range(self.count()):
            topic = self.string()
            out.append((topic, tuple(self.take(">i") for _ in range(self.count()))))
        return tuple(out)

    def version(self) -> int:
        version = self.take(">h")
        if version < 0:
            raise ConsumerProtocolError(f"unsupported consumer protocol version {version}")
        return version


def _string(value: str | None) -> bytes:
    if value is None:
        return struct.pack(">h", -1)
    data = value.encode()
    return struct.pack(">h", len(data)) + data


def _bytes(value: bytes | None) -> bytes:
    return struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value


def _topic_partitions(value: TopicPartitions) -> bytes:
    out = [struct.pack(">i", len(value))]
    for topic, partitions in value:
        out.append(_string(topic))
        out.append(struct.pack(f">i{len(partitions)}i", len(partitions), *partitions))
    return b"".join(out)


def decode_subscription(data: bytes) -> Subscription:
    """Decode a Subscription of any version (fields of versions above 3 are skipped)."""
    reader = _Reader(data)
    version = reader.version()
    topics = tuple(reader.string() for _ in range(reader.count()))
    user_data = reader.nullable_bytes()
    owned: TopicPartitions = reader.topic_partitions() if version >= 1 else ()
    generation = reader.take(">i") if version >= 2 else -1
    rack = reader.nullable_string() if version >= 3 else None
    return Subscription(topics, user_data, owned, generation, rack, version)


def subscription_topics(data: bytes) -> tuple[str, ...]:
    """The topics of a Subscription read with the v0 schema, as Kafka's group coordinator
    does (``deserializeSubscription(buffer, 0)``)."""
    reader = _Reader(data)
    reader.version()
    topics = tuple(reader.string() for _ in range(reader.count()))
    reader.nullable_bytes()
    return topics


def encode_subscription(sub: Subscription) -> bytes:
    """Encode ``sub`` at ``sub.version`` (0-3)."""
    if not 0 <= sub.version <= HIGHEST_VERSION:
        raise ConsumerProtocolError(f"cannot encode Subscription v{sub.version}")
    out = [struct.pack(">hi", sub.version, len(sub.topics))]
    out += [_string(topic) for topic in sub.topics]
    out.append(_bytes(sub.user_data))
    if sub.version >= 1:
        out.append(_topic_partitions(sub.owned_partitions))
    if sub.version >= 2:
        out.append(struct.pack(">i", sub.generation_id))
    if sub.version >= 3:
        out.append(_string(sub.rack_id))
    return b"".join(out)


def decode_assignment(data: bytes) -> Assignment:
    """Decode an Assignment of any version (all share the v0 fields)."""
    reader = _Reader(data)
    version = reader.version()
    partitions = reader.topic_partitions()
    return Assignment(partitions, reader.nullable_bytes(), version)


def encode_assignment(assignment: Assignment) -> bytes:
    """Encode ``assignment`` at ``assignment.version`` (0-3)."""
    if not 0 <= assignment.version <= HIGHEST_VERSION:
        raise ConsumerProtocolError(f"cannot encode Assignment v{assignment.version}")
    return (
        struct.pack(">h", assignment.version)
        + _topic_partitions(assignment.assigned_partitions)
        + _bytes(assignment.user_data)
    )


def subscribed_topics(group: GroupSnapshot) -> frozenset[str] | None:
    """Kafka's ``computeSubscribedTopics``: for a ``consumer`` group, the union of the topics in
    every member's Subscription for the selected protocol (read with the v0 prefix every version
    shares); empty when it has no member; None when the type is not ``consumer``, no protocol is
    selected yet or some metadata does not parse (then every topic counts as subscribed).

    Kafka caches this set at each new generation and at load; here it is computed from the
    snapshot's current members (the same between rebalances)."""
    if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
        return None
    if not group.members:
        return frozenset()
    if group.protocol_name is None:
        return None
    topics: set[str] = set()
    try:
        for member in group.members.values():
            topics.update(subscription_topics(member.metadata(group.protocol_name)))
    except (ConsumerProtocolError, KeyError):
        return None
    return frozenset(topics)
