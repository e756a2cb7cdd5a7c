"""The pre-0.11 versions of Produce (v0-2), Fetch (v0-3), ListOffsets (v0) and OffsetCommit
(v0-1), OffsetForLeaderEpoch v0-1 (Kafka 1.x) and WriteTxnMarkers v0 (before Kafka 2.8's
flexible v1), by hand.

Why hand-written: kio is generated from Kafka 4's schemas, which dropped these versions
(KIP-896), while Kafka 3.9 still serves them, to clients with ``api.version.request=false``
(librdkafka's ``broker.version.fallback`` 0.8.x/0.9.x: Produce v0/v1, Fetch v0/v1,
ListOffsets v0, Metadata v0) and other pre-0.11 clients. The request classes mirror kio's
attribute names so the handlers read either. All strings are int16-length, arrays
int32-count; nothing here is flexible.

Wire formats (``ProduceRequest.json`` etc. at Kafka 3.9)::

    Produce v0-2 response
      responses [name string, partition_responses [index int32, error_code int16,
                 base_offset int64, log_append_time_ms int64 (v2+)]]
      throttle_time_ms int32                                        v1+

    Fetch v0-3 request
      replica_id int32, max_wait_ms int32, min_bytes int32, max_bytes int32 (v3+)
      topics [topic string, partitions [partition int32, fetch_offset int64,
              partition_max_bytes int32]]
    (Fetch v0-3 responses: ``franz.protocol.fetch``.)

    ListOffsets v0 request
      replica_id int32
      topics [name string, partitions [partition_index int32, timestamp int64,
              max_num_offsets int32]]
    ListOffsets v0 response
      topics [name string, partitions [partition_index int32, error_code int16,
              old_style_offsets [int64]]]

    OffsetCommit v0-1 request
      group_id string
      generation_id int32, member_id string                         v1+
      topics [name string, partitions [partition_index int32, committed_offset int64,
              commit_timestamp int64 (v1 only), committed_metadata nullable string]]
    (OffsetCommit v0-1 responses are v2's: ``franz.protocol.offset_commit``.)

    OffsetForLeaderEpoch v0-1 request (v2 inserts current_leader_epoch before leader_epoch)
      topics [topic string, partitions [partition int32, leader_epoch int32]]
    OffsetForLeaderEpoch v0-1 response (v2 adds a leading throttle_time_ms int32)
      topics [topic string, partitions [error_code int16, partition int32,
              leader_epoch int32 (v1 only), end_offset int64]]

    WriteTxnMarkers v0 request (v1: the same fields, flexible)
      markers [producer_id int64, producer_epoch int16, transaction_result bool,
               topics [name string, partition_indexes [int32]], coordinator_epoch int32]
    WriteTxnMarkers v0 response
      markers [producer_id int64, topics [name string,
               partitions [partition_index int32, error_code int16]]]
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from franz.errors import InvalidRequestError

__all__ = [
    "LEGACY_FETCH_BELOW",
    "LegacyFetchRequest",
    "LegacyListOffsetsRequest",
    "LegacyOffsetCommitRequest",
    "decode_legacy_fetch_request",
    "decode_legacy_offset_commit_request",
    "decode_list_offsets_v0_request",
    "decode_offset_for_leader_epoch_v0_request",
    "decode_write_txn_markers_v0_request",
    "encode_legacy_produce_response",
    "encode_list_offsets_v0_response",
    "encode_offset_for_leader_epoch_v0_response",
    "encode_write_txn_markers_v0_response",
]

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")
_I8: Final = struct.Struct(">b")
#: Fetch versions below this one carry message sets (magic 0/1); kio cannot decode them.
LEGACY_FETCH_BELOW: Final = 4
#: What Kafka uses for Fetch v0-2, which have no request-level max_bytes.
_NO_RESPONSE_LIMIT: Final = 2**31 - 1


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes | bytearray, pos: int) -> None:
        self.buf = buf
        self.pos = pos

    def _take(self, fmt: struct.Struct) -> int:
        if self.pos + fmt.size > len(self.buf):
            raise InvalidRequestError("truncated request")
        (value,) = fmt.unpack_from(self.buf, self.pos)
        self.pos += fmt.size
        return int(value)

    def int16(self) -> int:
        return self._take(_I16)

    def int32(self) -> int:
        return self._take(_I32)

    def int64(self) -> int:
        return self._take(_I64)

    def count(self) -> int:
        n = self.int32()
        if n < 0 or n > len(self.buf) - self.pos:
            raise InvalidRequestError(f"invalid array length {n}")
        return n

    def nullable_string(self) -> str | None:
        if self.pos + 2 <= len(self.buf) and _I16.unpack_from(self.buf, self.pos)[0] == -1:
            self.pos += 2
            return None
        return self.string()

    def string(self) -> str:
        n = self.int16()
        if n < 0 or self.pos + n > len(self.buf):
            raise InvalidRequestError(f"invalid string length {n}")
        text = bytes(self.buf[self.pos : self.pos + n]).decode("utf-8", errors="replace")
        self.pos += n
        return text


def _string(out: bytearray, text: str) -> None:
    data = text.encode()
    out += _I16.pack(len(data))
    out += data


# -- Produce v0-2 -----------------------------------------------------------------------------


def encode_legacy_produce_response(version: int, body: Mapping[str, Any]) -> bytes:
    """A Produce v0-2 response body from the mapping the Produce handler builds."""
    out = bytearray()
    responses: Sequence[Mapping[str, Any]] = body["responses"]
    out += _I32.pack(len(responses))
    for topic in responses:
        _string(out, topic["name"])
        partitions: Sequence[Mapping[str, Any]] = topic["partition_responses"]
        out += _I32.pack(len(partitions))
        for p in partitions:
            out += _I32.pack(p["index"])
            out += _I16.pack(int(p["error_code"]))
            out += _I64.pack(p["base_offset"])
            if version >= 2:
                out += _I64.pack(p["log_append_time"])
    if version >= 1:
        out += _I32.pack(body.get("throttle_time", 0))
    return bytes(out)


# -- Fetch v0-3 -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LegacyFetchPartition:
    partition: int
    fetch_offset: int
    partition_max_bytes: int


@dataclass(frozen=True, slots=True)
class LegacyFetchTopic:
    topic: str
    partitions: list[LegacyFetchPartition]


@dataclass(frozen=True, slots=True)
class LegacyFetchRequest:
    replica_id: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    topics: list[LegacyFetchTopic]

    @property
    def max_wait(self) -> datetime.timedelta:
        return datetime.timedelta(milliseconds=self.max_wait_ms)


def decode_legacy_fetch_request(
    version: int, frame: bytes | bytearray, offset: int
) -> LegacyFetchRequest:
    """Decode a Fetch v0-3 body; ``InvalidRequestError`` if malformed."""
    r = _Reader(frame, offset)
    replica_id = r.int32()
    max_wait_ms = r.int32()
    min_bytes = r.int32()
    max_bytes = r.int32() if version >= 3 else _NO_RESPONSE_LIMIT
    topics = []
    for _ in range(r.count()):
        name = r.string()
        partitions = [
            LegacyFetchPartition(r.int32(), r.int64(), r.int32()) for _ in range(r.count())
        ]
        topics.append(LegacyFetchTopic(name, partitions))
    return LegacyFetchRequest(replica_id, max_wait_ms, min_bytes, max_bytes, topics)


# -- ListOffsets v0 ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LegacyListOffsetsPartition:
    partition_index: int
    timestamp: int
    max_num_offsets: int


@dataclass(frozen=True, slots=True)
class LegacyListOffsetsTopic:
    name: str
    partitions: list[LegacyListOffsetsPartition]


@dataclass(frozen=True, slots=True)
class LegacyListOffsetsRequest:
    replica_id: int
    topics: list[LegacyListOffsetsTopic]


def decode_list_offsets_v0_request(
    frame: bytes | bytearray, offset: int
) -> LegacyListOffsetsRequest:
    """Decode a ListOffsets v0 body; ``InvalidRequestError`` if malformed."""
    r = _Reader(frame, offset)
    replica_id = r.int32()
    topics = []
    for _ in range(r.count()):
        name = r.string()
        partitions = [
            LegacyListOffsetsPartition(r.int32(), r.int64(), r.int32()) for _ in range(r.count())
        ]
        topics.append(LegacyListOffsetsTopic(name, partitions))
    return LegacyListOffsetsRequest(replica_id, topics)


def encode_list_offsets_v0_response(topics: Sequence[Mapping[str, Any]]) -> bytes:
    """``topics``: ``{"name", "partitions": [{"partition_index", "error_code",
    "old_style_offsets"}]}``."""
    out = bytearray(_I32.pack(len(topics)))
    for topic in topics:
        _string(out, topic["name"])
        partitions: Sequence[Mapping[str, Any]] = topic["partitions"]
        out += _I32.pack(len(partitions))
        for p in partitions:
            out += _I32.pack(p["partition_index"])
            out += _I16.pack(int(p["error_code"]))
            offsets: Sequence[int] = p["old_style_offsets"]
            out += _I32.pack(len(offsets))
            for value in offsets:
                out += _I64.pack(value)
    return bytes(out)


# -- OffsetCommit v0-1 ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LegacyOffsetCommitPartition:
    partition_index: int
    committed_offset: int
    commit_timestamp: int
    committed_metadata: str | None


@dataclass(frozen=True, slots=True)
class LegacyOffsetCommitTopic:
    name: str
    partitions: list[LegacyOffsetCommitPartition]


@dataclass(frozen=True, slots=True)
class LegacyOffsetCommitRequest:
    group_id: str
    generation_id_or_member_epoch: int
    member_id: str
    topics: list[LegacyOffsetCommitTopic]


def decode_legacy_offset_commit_request(
    version: int, frame: bytes | bytearray, offset: int
) -> LegacyOffsetCommitRequest:
    """Decode an OffsetCommit v0-1 body; v0 is a standalone commit (generation -1, member
    ""). ``InvalidRequestError`` if malformed."""
    r = _Reader(frame, offset)
    group_id = r.string()
    generation, member_id = (r.int32(), r.string()) if version >= 1 else (-1, "")
    topics = []
    for _ in range(r.count()):
        name = r.string()
        partitions = []
        for _ in range(r.count()):
            index = r.int32()
            committed = r.int64()
            timestamp = r.int64() if version == 1 else -1
            partitions.append(
                LegacyOffsetCommitPartition(index, committed, timestamp, r.nullable_string())
            )
        topics.append(LegacyOffsetCommitTopic(name, partitions))
    return LegacyOffsetCommitRequest(group_id, generation, member_id, topics)


# -- OffsetForLeaderEpoch v0-1 ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LegacyOffsetForLeaderPartition:
    partition: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class LegacyOffsetForLeaderTopic:
    topic: str
    partitions: list[LegacyOffsetForLeaderPartition]


@dataclass(frozen=True, slots=True)
class LegacyOffsetForLeaderEpochRequest:
    topics: list[LegacyOffsetForLeaderTopic]


def decode_offset_for_leader_epoch_v0_request(
    frame: bytes | bytearray, offset: int
) -> LegacyOffsetForLeaderEpochRequest:
    """Decode an OffsetForLeaderEpoch v0-1 body (the same bytes); ``InvalidRequestError`` if
    malformed."""
    r = _Reader(frame, offset)
    topics = []
    for _ in range(r.count()):
        name = r.string()
        partitions = [
            LegacyOffsetForLeaderPartition(r.int32(), r.int32()) for _ in range(r.count())
        ]
        topics.append(LegacyOffsetForLeaderTopic(name, partitions))
    return LegacyOffsetForLeaderEpochRequest(topics)


def encode_offset_for_leader_epoch_v0_response(
    version: int, topics: Sequence[Mapping[str, Any]]
) -> bytes:
    """An OffsetForLeaderEpoch v0 or v1 body; ``topics``: ``{"topic", "partitions":
    [{"error_code", "partition", "leader_epoch", "end_offset"}]}``."""
    out = bytearray(_I32.pack(len(topics)))
    for topic in topics:
        _string(out, topic["topic"])
        partitions: Sequence[Mapping[str, Any]] = topic["partitions"]
        out += _I32.pack(len(partitions))
        for p in partitions:
            out += _I16.pack(int(p["error_code"]))
            out += _I32.pack(p["partition"])
            if version >= 1:
                out += _I32.pack(p["leader_epoch"])
            out += _I64.pack(p["end_offset"])
    return bytes(out)


# -- WriteTxnMarkers v0 -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LegacyWritableTxnMarkerTopic:
    name: str
    partition_indexes: list[int]


@dataclass(frozen=True, slots=True)
class LegacyWritableTxnMarker:
    producer_id: int
    producer_epoch: int
    transaction_result: bool
    topics: list[LegacyWritableTxnMarkerTopic]
    coordinator_epoch: int


@dataclass(frozen=True, slots=True)
class LegacyWriteTxnMarkersRequest:
    markers: list[LegacyWritableTxnMarker]


def decode_write_txn_markers_v0_request(
    frame: bytes | bytearray, offset: int
) -> LegacyWriteTxnMarkersRequest:
    """Decode a WriteTxnMarkers v0 body; ``InvalidRequestError`` if malformed."""
    r = _Reader(frame, offset)
    markers = []
    for _ in range(r.count()):
        producer_id = r.int64()
        producer_epoch = r.int16()
        result = r._take(_I8) != 0
        topics = []
        for _ in range(r.count()):
            name = r.string()
            topics.append(
                LegacyWritableTxnMarkerTopic(name, [r.int32() for _ in range(r.count())])
            )
        markers.append(
            LegacyWritableTxnMarker(producer_id, producer_epoch, result, topics, r.int32())
        )
    return LegacyWriteTxnMarkersRequest(markers)


def encode_write_txn_markers_v0_response(markers: Sequence[Mapping[str, Any]]) -> bytes:
    """A WriteTxnMarkers v0 body; ``markers``: ``{"producer_id", "topics": [{"name",
    "partitions": [{"partition_index", "error_code"}]}]}``."""
    out = bytearray(_I32.pack(len(markers)))
    for marker in markers:
        out += _I64.pack(marker["producer_id"])
        topics: Sequence[Mapping[str, Any]] = marker["topics"]
        out += _I32.pack(len(topics))
        for topic in topics:
            _string(out, topic["name"])
            partitions: Sequence[Mapping[str, Any]] = topic["partitions"]
            out += _I32.pack(len(partitions))
            for p in partitions:
                out += _I32.pack(p["partition_index"])
                out += _I16.pack(int(p["error_code"]))
    return bytes(out)
