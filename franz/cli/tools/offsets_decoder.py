"""``__consumer_offsets`` records as Kafka 3.9's ``kafka-dump-log.sh --offsets-decoder`` prints
them (``DumpLogSegments.OffsetsMessageParser``). Not a tool: a helper of ``dump_log``.

Since Kafka 3.8 (KAFKA-16470) the decoder prints each key and value as compact JSON built by
the generated ``*JsonConverter`` classes of the coordinator records::

    key:     {"type":"<key version>","data":{...}}
    payload: {"version":"<value version>","data":{...}}   or  <DELETE> for a tombstone

``data`` holds the record's fields in schema order, only those that exist at that version
(the converters omit the others): ``OffsetCommitKey`` (key versions 0 and 1) ``group``,
``topic``, ``partition``; ``GroupMetadataKey`` (key version 2) ``group``;
``OffsetCommitValue`` ``offset``, ``leaderEpoch`` (v3+), ``metadata``, ``commitTimestamp``,
``expireTimestamp`` (v1 only); ``GroupMetadataValue`` ``protocolType``, ``generation``,
``protocol``, ``leader``, ``currentStateTimestamp`` (v2+), ``members`` (``memberId``,
``groupInstanceId`` (v3+), ``clientId``, ``clientHost``, ``rebalanceTimeout`` (v1+),
``sessionTimeout``, ``subscription``, ``assignment``). Bytes are base64 strings, as Jackson
writes a ``BinaryNode``. For ``protocolType`` ``consumer`` the subscription and assignment
are replaced by their decoded ``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment``
JSON when they decode (``topics``, ``userData``, ``ownedPartitions`` (v1+), ``generationId``
(v2+), ``rackId`` (v3+); ``assignedPartitions``, ``userData``), else they stay base64.

Errors are reported in the key, as Kafka does, and the payload is then omitted:
``Unknown record type <n> at offset <o>, skipping.`` for an unknown key version, ``Error at
offset <o>, skipping. <message>`` for a record that does not decode. A record without a key
is an error of the whole dump (Kafka throws: "Failed to decode message at offset <o> using
offset topic decoder (message had a missing key)").

(Before 3.8 the format was ``offset_commit::group=g,partition=t-0`` / ``offset=5``; Franz
follows 3.9.)
"""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

from franz.coordinator.group.consumer_protocol import (
    CONSUMER_PROTOCOL_TYPE,
    HIGHEST_VERSION,
    decode_assignment,
    decode_subscription,
)
from franz.coordinator.group.offsets_schema import (
    GroupMetadataKey,
    OffsetKey,
    UnknownRecordVersionError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
)
from franz.errors import FranzError

__all__ = ["MissingKeyError", "parse_offsets_record"]

_VERSION = struct.Struct(">h")


class MissingKeyError(FranzError):
    """A ``__consumer_offsets`` record without a key (Kafka's decoder throws)."""


def _json(value: Any) -> str:
    # Jackson's ObjectNode.toString: compact, non-ASCII characters written as they are.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _partitions(pairs: tuple[tuple[str, tuple[int, ...]], ...]) -> list[dict[str, Any]]:
    return [{"topic": topic, "partitions": list(parts)} for topic, parts in pairs]


def subscription_json(data: bytes) -> dict[str, Any]:
    """``ConsumerProtocolSubscriptionJsonConverter.write`` at the payload's version."""
    sub = decode_subscription(data)
    version = min(sub.version, HIGHEST_VERSION)
    out: dict[str, Any] = {"topics": list(sub.topics), "userData": _b64(sub.user_data)}
    if version >= 1:
        out["ownedPartitions"] = _partitions(sub.owned_partitions)
    if version >= 2:
        out["generationId"] = sub.generation_id
    if version >= 3:
        out["rackId"] = sub.rack_id
    return out


def assignment_json(data: bytes) -> dict[str, Any]:
    """``ConsumerProtocolAssignmentJsonConverter.write`` (every version has the same fields)."""
    assignment = decode_assignment(data)
    return {
        "assignedPartitions": _partitions(assignment.assigned_partitions),
        "userData": _b64(assignment.user_data),
    }


def _embedded(data: bytes, decode: Any) -> Any:
    try:
        return decode(data)
    except Exception:  # Kafka swallows any failure here and keeps the bytes
        return _b64(data)


def key_json(key: OffsetKey | GroupMetadataKey) -> str:
    if isinstance(key, OffsetKey):
        data: dict[str, Any] = {"group": key.group, "topic": key.topic, "partition": key.partition}
        version = key.version
    else:
        data = {"group": key.group}
        version = 2
    return _json({"type": str(version), "data": data})


def offset_commit_value_json(value: bytes) -> str:
    version = _VERSION.unpack_from(value)[0]
    decoded = decode_offset_commit_value(value)
    data: dict[str, Any] = {"offset": decoded.offset}
    if version >= 3:
        data["leaderEpoch"] = decoded.leader_epoch
    data["metadata"] = decoded.metadata
    data["commitTimestamp"] = decoded.commit_timestamp
    if version == 1:
        data["expireTimestamp"] = decoded.expire_timestamp
    return _json({"version": str(version), "data": data})


def group_metadata_value_json(value: bytes) -> str:
    version = _VERSION.unpack_from(value)[0]
    decoded = decode_group_metadata_value(value)
    consumer = decoded.protocol_type == CONSUMER_PROTOCOL_TYPE
    data: dict[str, Any] = {
        "protocolType": decoded.protocol_type,
        "generation": decoded.generation,
        "protocol": decoded.protocol,
        "leader": decoded.leader,
    }
    if version >= 2:
        data["currentStateTimestamp"] = decoded.current_state_timestamp
    members = []
    for m in decoded.members:
        member: dict[str, Any] = {"memberId": m.member_id}
        if version >= 3:
            member["groupInstanceId"] = m.group_instance_id
        member["clientId"] = m.client_id
        member["clientHost"] = m.client_host
        if version >= 1:
            member["rebalanceTimeout"] = m.rebalance_timeout
        member["sessionTimeout"] = m.session_timeout
        if consumer:
            member["subscription"] = _embedded(m.subscription, subscription_json)
            member["assignment"] = _embedded(m.assignment, assignment_json)
        else:
            member["subscription"] = _b64(m.subscription)
            member["assignment"] = _b64(m.assignment)
        members.append(member)
    data["members"] = members
    return _json({"version": str(version), "data": data})


def parse_offsets_record(
    offset: int, key: bytes | None, value: bytes | None
) -> tuple[str | None, str | None]:
    """(key text, payload text) of one ``__consumer_offsets`` record; None = not printed."""
    if key is None:
        raise MissingKeyError(
            f"Failed to decode message at offset {offset} using offset topic decoder "
            "(message had a missing key)"
        )
    try:
        decoded = decode_key(key)
    except UnknownRecordVersionError:
        version = _VERSION.unpack_from(key)[0]
        return f"Unknown record type {version} at offset {offset}, skipping.", None
    except (FranzError, struct.error, ValueError) as exc:
        return f"Error at offset {offset}, skipping. {exc}", None
    try:
        if value is None:
            return key_json(decoded), "<DELETE>"
        if isinstance(decoded, OffsetKey):
            return key_json(decoded), offset_commit_value_json(value)
        return key_json(decoded), group_metadata_value_json(value)
    except (FranzError, struct.error, ValueError) as exc:
        return f"Error at offset {offset}, skipping. {exc}", None
