"""The record formats of ``__consumer_offsets``, byte for byte as Kafka 3.9 writes them.

Kafka's names: ``GroupMetadataManager`` (the Scala coordinator up to 3.x) and the
``group-coordinator`` module's generated messages ``OffsetCommitKey``, ``GroupMetadataKey``,
``OffsetCommitValue`` and ``GroupMetadataValue``. Checked against (Kafka sources, apache/kafka):
``group-coordinator/src/main/resources/common/message/{OffsetCommitKey,GroupMetadataKey,
OffsetCommitValue,GroupMetadataValue}.json`` (3.x layout: ``"type": "data"``, key versions
``0-1`` and ``2``), ``MetadataVersion.offsetCommitValueVersion`` /
``groupMetadataValueVersion`` (which versions are written), ``GroupMetadataManager.scala``
(``CURRENT_OFFSET_KEY_SCHEMA_VERSION = 1``, ``CURRENT_GROUP_KEY_SCHEMA_VERSION = 2``,
``readMessageKey``: key versions 0 and 1 are offset keys, 2 is a group key; ``partitionFor``)
and ``Utils.abs``.

Every key and value is a big-endian int16 *version* followed by the struct of that version::

    key   v0, v1  OffsetCommitKey     group string, topic string, partition int32
    key   v2      GroupMetadataKey    group string
    value         OffsetCommitValue   v0-v4 (below), under an offset key
    value         GroupMetadataValue  v0-v4 (below), under a group key
    value None    tombstone: the offset / group was deleted (handled by callers)

    OffsetCommitValue    offset int64, leaderEpoch int32 (v3+), metadata string,
                         commitTimestamp int64, expireTimestamp int64 (v1 only)
    GroupMetadataValue   protocolType string, generation int32, protocol string?,
                         leader string?, currentStateTimestamp int64 (v2+),
                         members [MemberMetadata]
    MemberMetadata       memberId string, groupInstanceId string? (v3+), clientId string,
                         clientHost string, rebalanceTimeout int32 (v1+),
                         sessionTimeout int32, subscription bytes, assignment bytes

Types (``?`` = nullable). Versions 0-3 use the classic encodings: string = int16 length + UTF-8
(-1 = null), bytes = int32 length + data, array = int32 count. Version 4 of both values is
*flexible* (KIP-482): compact string = unsigned varint (length + 1, 0 = null), compact bytes
and arrays likewise (n + 1), and every struct (the value and each member) ends with a tagged
field section (unsigned varint count, then tag / size / data each). No tagged fields are
defined, so franz writes an empty section and skips unknown tags when reading (Kafka keeps
them to re-serialize; nothing in franz rewrites a value it did not build).

Fields a version lacks are all ``ignorable`` in Kafka's schemas, so encoding drops them
silently, as Kafka's generated writers do (``leaderEpoch`` below v3, ``expireTimestamp``
outside v1, ``currentStateTimestamp`` below v2, ``rebalanceTimeout`` at v0,
``groupInstanceId`` below v3); decoding fills them with their defaults (-1, -1, -1, -1,
None). The v0 ``rebalanceTimeout`` default -1 is franz's choice: Kafka's loader falls back to
the session timeout, which callers may do.

Versions Kafka 3.9 writes (``MetadataVersion`` at any 3.x level >= 2.3): ``OffsetCommitValue``
v1 when the commit carries an expire timestamp (OffsetCommit v1 commit timestamps, v2-v4
retention times), else v3; ``GroupMetadataValue`` v3. Version 4 (flexible, KIP-915) is read
by 3.9 but not written: ``MetadataVersion`` keeps "the highest supported non-flexible version
until a tagged field is introduced". Offset keys are written at v1; v0 (same layout) is only
read.

Decoding is strict: a truncated record, a negative length for a non-nullable field, invalid
UTF-8, an unknown version or bytes left over raise ``CoordinatorRecordError`` (unknown versions
raise its subclass ``UnknownRecordVersionError``, which a loader may choose to skip).

``partition_for`` maps a group to its ``__consumer_offsets`` partition exactly as Kafka does:
``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``, with Java's
``String.hashCode`` over UTF-16 code units and Kafka's ``Utils.abs`` (``Integer.MIN_VALUE`` ->
0, else ``Math.abs``; *not* ``Utils.toPositive``'s ``n & 0x7fffffff``, which the default
producer partitioner uses).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from franz.errors import FranzError, InvalidRecordError
from franz.protocol.records.varint import decode_unsigned_varint, encode_unsigned_varint

__all__ = [
    "GROUP_METADATA_KEY_VERSION",
    "GROUP_METADATA_VALUE_VERSION",
    "OFFSET_COMMIT_KEY_VERSION",
    "CoordinatorRecordError",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "OffsetCommitValue",
    "OffsetKey",
    "UnknownRecordVersionError",
    "decode_group_metadata_value",
    "decode_key",
    "decode_offset_commit_value",
    "encode_group_metadata_key",
    "encode_group_metadata_value",
    "encode_offset_commit_key",
    "encode_offset_commit_value",
    "java_string_hash_code",
    "offset_commit_value_version",
    "partition_for",
]

OFFSET_COMMIT_KEY_VERSION: Final = 1
"""Kafka's ``CURRENT_OFFSET_KEY_SCHEMA_VERSION``: the offset key version written."""
GROUP_METADATA_KEY_VERSION: Final = 2
"""Kafka's ``CURRENT_GROUP_KEY_SCHEMA_VERSION``: the only group key version."""
GROUP_METADATA_VALUE_VERSION: Final = 3
"""``MetadataVersion.groupMetadataValueVersion()`` for 2.3+: the group value version written."""

_OFFSET_KEY_VERSIONS: Final = (0, 1)
_VALUE_VERSIONS: Final = range(0, 5)
_FIRST_FLEXIBLE_VERSION: Final = 4
_NO_TIMESTAMP: Final = -1

_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
_INT64: Final = struct.Struct(">q")
_INT16_MAX: Final = (1 << 15) - 1
_INT32_MIN: Final = -(1 << 31)
_INT32_MAX: Final = (1 << 31) - 1
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1


class CoordinatorRecordError(FranzError):
    """A ``__consumer_offsets`` key or value cannot be decoded (truncated, malformed).

    Local error: raised while loading the offsets topic, never sent to clients.
    """


class UnknownRecordVersionError(CoordinatorRecordError):
    """A key or value carries a version this module does not know (Kafka: "Unknown ... version")."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    """Key of a committed offset (``OffsetCommitKey``, key version 0 or 1)."""

    group: str
    topic: str
    partition: int
    version: int = OFFSET_COMMIT_KEY_VERSION


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """Key of a group's metadata (``GroupMetadataKey``, key version 2)."""

    group: str


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    """A committed offset. ``-1`` means "none" for ``leader_epoch`` and ``expire_timestamp``."""

    offset: int
    metadata: str = ""
    commit_timestamp: int = _NO_TIMESTAMP
    leader_epoch: int = -1
    expire_timestamp: int = _NO_TIMESTAMP


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    """One member of a classic group (``GroupMetadataValue.MemberMetadata``).

    ``subscription`` and ``assignment`` are the opaque protocol metadata (for consumers, the
    ``ConsumerProtocol`` subscription and assignment), stored as the client sent them.
    """

    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    rebalance_timeout: int = -1
    group_instance_id: str | None = None
    subscription: bytes = b""
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    """A classic group's state as stored: protocol, generation, leader and members."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = _NO_TIMESTAMP
    members: tuple[MemberMetadata, ...] = ()


# --- writing -------------------------------------------------------------------------------


class _Writer:
    """Accumulates one record; ``flexible`` selects KIP-482 compact encodings."""

    __slots__ = ("flexible", "parts")

    def __init__(self, version: int, flexible: bool = False) -> None:
        self.parts: list[bytes] = []
        self.flexible = flexible
        self.int16(version)

    def int16(self, value: int) -> None:
        self.parts.append(_INT16.pack(value))

    def int32(self, value: int) -> None:
        if not _INT32_MIN <= value <= _INT32_MAX:
            raise ValueError(f"{value} does not fit in an int32")
        self.parts.append(_INT32.pack(value))

    def int64(self, value: int) -> None:
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise ValueError(f"{value} does not fit in an int64")
        self.parts.append(_INT64.pack(value))

    def string(self, value: str | None) -> None:
        if value is None:
            self.parts.append(b"\x00" if self.flexible else _INT16.pack(-1))
            return
        data = value.encode("utf-8")
        if len(data) > _INT16_MAX:
            raise ValueError(f"string of {len(data)} UTF-8 bytes is longer than {_INT16_MAX}")
        self._length(len(data), _INT16)
        self.parts.append(data)

    def bytes_(self, value: bytes) -> None:
        self._length(len(value), _INT32)
        self.parts.append(bytes(value))

    def array_length(self, n: int) -> None:
        self._length(n, _INT32)

    def tagged_fields(self) -> None:
        if self.flexible:
            self.parts.append(b"\x00")  # no tagged fields are defined

    def _length(self, n: int, fixed: struct.Struct) -> None:
        self.parts.append(encode_unsigned_varint(n + 1) if self.flexible else fixed.pack(n))

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


def _check_value_version(version: int, kind: str) -> None:
    if version not in _VALUE_VERSIONS:
        raise ValueError(f"{kind} version {version} is not one of 0-4")


def encode_offset_commit_key(key: OffsetKey) -> bytes:
    """Encode an offset key at ``key.version`` (0 or 1; Kafka writes 1)."""
    if key.version not in _OFFSET_KEY_VERSIONS:
        raise ValueError(f"offset key version {key.version} is not 0 or 1")
    w = _Writer(key.version)
    w.string(key.group)
    w.string(key.topic)
    w.int32(key.partition)
    return w.getvalue()


def encode_group_metadata_key(key: GroupMetadataKey) -> bytes:
    """Encode a group key (always version 2)."""
    w = _Writer(GROUP_METADATA_KEY_VERSION)
    w.string(key.group)
    return w.getvalue()


def offset_commit_value_version(value: OffsetCommitValue) -> int:
    """The version Kafka 3.9 writes ``value`` at: 1 with an expire timestamp, else 3."""
    return 1 if value.expire_timestamp != _NO_TIMESTAMP else 3


def encode_offset_commit_value(value: OffsetCommitValue, version: int | None = None) -> bytes:
    """Encode a committed offset; ``version`` defaults to ``offset_commit_value_version``."""
    if version is None:
        version = offset_commit_value_version(value)
    _check_value_version(version, "OffsetCommitValue")
    w = _Writer(version, flexible=version >= _FIRST_FLEXIBLE_VERSION)
    w.int64(value.offset)
    if version >= 3:
        w.int32(value.leader_epoch)
    w.string(value.metadata)
    w.int64(value.commit_timestamp)
    if version == 1:
        w.int64(value.expire_timestamp)
    w.tagged_fields()
    return w.getvalue()


def encode_group_metadata_value(
    value: GroupMetadataValue, version: int = GROUP_METADATA_VALUE_VERSION
) -> bytes:
    """Encode a group's metadata; Kafka 3.9 writes version 3 (the default)."""
    _check_value_version(version, "GroupMetadataValue")
    w = _Writer(version, flexible=version >= _FIRST_FLEXIBLE_VERSION)
    w.string(value.protocol_type)
    w.int32(value.generation)
    w.string(value.protocol)
    w.string(value.leader)
    if version >= 2:
        w.int64(value.current_state_timestamp)
    w.array_length(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        if version >= 3:
            w.string(m.group_instance_id)
        w.string(m.client_id)
        w.string(m.client_host)
        if version >= 1:
            w.int32(m.rebalance_timeout)
        w.int32(m.session_timeout)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)
        w.tagged_fields()
    w.tagged_fields()
    return w.getvalue()


# --- reading -------------------------------------------------------------------------------


class RecordReader:
    """A cursor over one coordinator record (``__consumer_offsets``, ``__transaction_state``);
    every read checks the bytes are there and fails with ``error``."""

    __slots__ = ("buf", "flexible", "pos", "what")

    #: The exception every failed read raises (a subclass narrows it per topic).
    error: type[CoordinatorRecordError] = CoordinatorRecordError

    def __init__(self, buf: bytes, what: str) -> None:
        self.buf = bytes(buf)
        self.pos = 0
        self.what = what
        self.flexible = False

    def _take(self, n: int, field: str) -> bytes:
        end = self.pos + n
        if end > len(self.buf):
            raise self.error(
                f"{self.what} is truncated: {field} needs {n} bytes at position {self.pos},"
                f" only {len(self.buf) - self.pos} left"
            )
        data = self.buf[self.pos : end]
        self.pos = end
        return data

    def fixed(self, s: struct.Struct, field: str) -> int:
        """One fixed-size integer read with ``s``."""
        value: int = s.unpack(self._take(s.size, field))[0]
        return value

    def int16(self, field: str) -> int:
        value: int = _INT16.unpack(self._take(2, field))[0]
        return value

    def int32(self, field: str) -> int:
        value: int = _INT32.unpack(self._take(4, field))[0]
        return value

    def int64(self, field: str) -> int:
        value: int = _INT64.unpack(self._take(8, field))[0]
        return value

    def uvarint(self, field: str) -> int:
        try:
            value, self.pos = decode_unsigned_varint(self.buf, self.pos)
        except InvalidRecordError as e:
            raise self.error(f"{self.what}: {field}: {e}") from None
        return value

    def _length(self, fixed: struct.Struct, field: str) -> int:
        """A length; -1 means null (a compact length stores n + 1, so 0 means null)."""
        if self.flexible:
            return self.uvarint(field) - 1
        n: int = fixed.unpack(self._take(fixed.size, field))[0]
        return n

    def nullable_string(self, field: str) -> str | None:
        n = self._length(_INT16, field)
        if n < -1:
            raise self.error(f"{self.what}: {field} has length {n}")
        if n == -1:
            return None
        data = self._take(n, field)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.error(f"{self.what}: {field} is not UTF-8: {e}") from None

    def string(self, field: str) -> str:
        value = self.nullable_string(field)
        if value is None:
            raise self.error(f"{self.what}: non-nullable {field} is null")
        return value

    def bytes_(self, field: str) -> bytes:
        n = self._length(_INT32, field)
        if n < 0:
            raise self.error(f"{self.what}: non-nullable {field} has length {n}")
        return self._take(n, field)

    def nullable_array_length(self, field: str) -> int | None:
        """An array's length; None for a null array."""
        n = self._length(_INT32, field)
        return None if n == -1 else self._count(n, field)

    def array_length(self, field: str) -> int:
        return self._count(self._length(_INT32, field), field)

    def _count(self, n: int, field: str) -> int:
        if n < 0:
            raise self.error(f"{self.what}: non-nullable {field} has length {n}")
        # Each element takes at least one byte: refuse counts the buffer cannot hold.
        if n > len(self.buf) - self.pos:
            raise self.error(
                f"{self.what} is truncated: {field} claims {n} elements,"
                f" only {len(self.buf) - self.pos} bytes left"
            )
        return n

    def skip_tagged_fields(self) -> None:
        if not self.flexible:
            return
        for _ in range(self.uvarint("tagged field count")):
            tag = self.uvarint("tag")
            self._take(self.uvarint(f"tagged field {tag} size"), f"tagged field {tag}")

    def end(self) -> None:
        left = len(self.buf) - self.pos
        if left:
            raise self.error(f"{self.what} has {left} unexpected trailing bytes")


def decode_key(data: bytes) -> OffsetKey | GroupMetadataKey:
    """Decode a ``__consumer_offsets`` key: versions 0/1 are offset keys, 2 a group key."""
    r = RecordReader(data, "__consumer_offsets key")
    version = r.int16("version")
    key: OffsetKey | GroupMetadataKey
    if version in _OFFSET_KEY_VERSIONS:
        key = OffsetKey(r.string("group"), r.string("topic"), r.int32("partition"), version)
    elif version == GROUP_METADATA_KEY_VERSION:
        key = GroupMetadataKey(r.string("group"))
    else:
        raise UnknownRecordVersionError(f"unknown __consumer_offsets key version {version}")
    r.end()
    return key


def _value_reader(data: bytes, kind: str) -> tuple[RecordReader, int]:
    r = RecordReader(data, kind)
    version = r.int16("version")
    if version not in _VALUE_VERSIONS:
        raise UnknownRecordVersionError(f"unknown {kind} version {version}")
    r.flexible = version >= _FIRST_FLEXIBLE_VERSION
    return r, version


def decode_offset_commit_value(data: bytes) -> OffsetCommitValue:
    """Decode an ``OffsetCommitValue`` of any version 0-4 (not a tombstone)."""
    r, version = _value_reader(data, "OffsetCommitValue")
    offset = r.int64("offset")
    leader_epoch = r.int32("leaderEpoch") if version >= 3 else -1
    metadata = r.string("metadata")
    commit_timestamp = r.int64("commitTimestamp")
    expire_timestamp = r.int64("expireTimestamp") if version == 1 else _NO_TIMESTAMP
    r.skip_tagged_fields()
    r.end()
    return OffsetCommitValue(offset, metadata, commit_timestamp, leader_epoch, expire_timestamp)


def decode_group_metadata_value(data: bytes) -> GroupMetadataValue:
    """Decode a ``GroupMetadataValue`` of any version 0-4 (not a tombstone)."""
    r, version = _value_reader(data, "GroupMetadataValue")
    protocol_type = r.string("protocolType")
    generation = r.int32("generation")
    protocol = r.nullable_string("protocol")
    leader = r.nullable_string("leader")
    current_state_timestamp = r.int64("currentStateTimestamp") if version >= 2 else -1
    members = []
    for _ in range(r.array_length("members")):
        member_id = r.string("memberId")
        group_instance_id = r.nullable_string("groupInstanceId") if version >= 3 else None
        client_id = r.string("clientId")
        client_host = r.string("clientHost")
        rebalance_timeout = r.int32("rebalanceTimeout") if version >= 1 else -1
        session_timeout = r.int32("sessionTimeout")
        subscription = r.bytes_("subscription")
        assignment = r.bytes_("assignment")
        r.skip_tagged_fields()
        members.append(
            MemberMetadata(
                member_id=member_id,
                client_id=client_id,
                client_host=client_host,
                session_timeout=session_timeout,
                rebalance_timeout=rebalance_timeout,
                group_instance_id=group_instance_id,
                subscription=subscription,
                assignment=assignment,
            )
        )
    r.skip_tagged_fields()
    r.end()
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, current_state_timestamp, tuple(members)
    )


# --- group -> partition --------------------------------------------------------------------


def java_string_hash_code(s: str) -> int:
    """Java's ``String.hashCode``: ``h = 31 * h + c`` over UTF-16 code units, as an int32."""
    units = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h > _INT32_MAX else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (Kafka's ``partitionFor``)."""
    if num_partitions <= 0:
        raise ValueError(f"num_partitions must be positive, not {num_partitions}")
    h = java_string_hash_code(group_id)
    kafka_abs = 0 if h == _INT32_MIN else abs(h)  # Utils.abs
    return kafka_abs % num_partitions
