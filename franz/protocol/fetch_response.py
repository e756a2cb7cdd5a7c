"""Fetch responses decoded by hand, keeping each partition's records as an opaque view.

Why not kio here: a follower's Fetch response is mostly record batches that it appends to its
own log exactly as received (DESIGN.md, "opaque batches on the hot path"). kio copies every
partition's records into a new ``bytes`` and builds frozen dataclasses with converted fields
for every partition; this decoder reads the fixed fields with ``struct`` and returns
``records`` as a ``memoryview`` slice of the received frame: no copy, no record decoding.
The caller must not keep the views past the frame it means to keep alive (``bytes(view)``
copies when it must).

Wire format, versions 4-17 (``FetchResponse.json``; flexible from v12: compact arrays,
strings and bytes are uvarint(length + 1), 0 meaning null, and every struct ends with a
tagged-field section)::

    FetchResponse
      throttle_time_ms int32
      error_code int16                      v7+
      session_id int32                      v7+
      responses [topic]
        topic string                        v0-12
        topic_id uuid                       v13+
        partitions [partition]
          partition_index int32
          error_code int16
          high_watermark int64
          last_stable_offset int64
          log_start_offset int64            v5+
          aborted_transactions nullable [producer_id int64, first_offset int64]
          preferred_read_replica int32      v11+
          records nullable bytes            int32 length; flexible: uvarint(length + 1)
          <tagged> 0: diverging_epoch {epoch int32, end_offset int64}      v12+
                   1: current_leader {leader_id int32, leader_epoch int32}  v12+
                   2: snapshot_id (skipped)
      <tagged> 0: node_endpoints (v16+, skipped)

Null records decode as an empty view (Franz's encoder never sends null; Kafka's may).
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from typing import Final

from franz.errors import FranzError

__all__ = [
    "AbortedTransaction",
    "FetchPartitionData",
    "FetchResponseData",
    "FetchResponseDecodeError",
    "FetchTopicData",
    "decode_fetch_response",
]

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_I64: Final = struct.Struct(">q")
_TOP_V7: Final = struct.Struct(">ihi")  # throttle, error, session
_PARTITION: Final = struct.Struct(">ihqq")  # index, error, HW, LSO
_ABORTED: Final = struct.Struct(">qq")
_EPOCH_END: Final = struct.Struct(">iq")
_LEADER: Final = struct.Struct(">ii")

FIRST_FLEXIBLE: Final = 12
FIRST_TOPIC_ID: Final = 13
MIN_VERSION: Final = 4
MAX_VERSION: Final = 17


class FetchResponseDecodeError(FranzError):
    """The Fetch response does not parse; the connection it came from must be closed."""


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    producer_id: int
    first_offset: int


@dataclass(slots=True)
class FetchPartitionData:
    partition_index: int
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int = -1
    aborted_transactions: list[AbortedTransaction] | None = None
    preferred_read_replica: int = -1
    #: The record batches as received: a view of the response frame, never decoded here.
    records: memoryview = field(default_factory=lambda: memoryview(b""))
    #: KIP-320 divergence: (epoch, end_offset) when the leader says the follower diverged.
    diverging_epoch: tuple[int, int] | None = None
    #: KIP-951 current leader: (leader_id, leader_epoch) when the leader moved.
    current_leader: tuple[int, int] | None = None


@dataclass(slots=True)
class FetchTopicData:
    name: str
    topic_id: uuid.UUID
    partitions: list[FetchPartitionData]


@dataclass(slots=True)
class FetchResponseData:
    throttle_time_ms: int
    error_code: int
    session_id: int
    responses: list[FetchTopicData]


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: memoryview) -> None:
        self.buf = buf
        self.pos = 0

    def need(self, size: int) -> int:
        pos = self.pos
        if pos + size > len(self.buf):
            raise FetchResponseDecodeError(
                f"truncated Fetch response: {size} bytes wanted at {pos} of {len(self.buf)}"
            )
        self.pos = pos + size
        return pos

    def uvarint(self) -> int:
        value = shift = 0
        buf = self.buf
        while True:
            byte = buf[self.need(1)]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise FetchResponseDecodeError("unsigned varint longer than 5 bytes")

    def length(self, flexible: bool) -> int:
        """An array/bytes length: -1 for null."""
        if flexible:
            return self.uvarint() - 1
        return int(_I32.unpack_from(self.buf, self.need(4))[0])

    def string(self, flexible: bool) -> str:
        size = self.uvarint() - 1 if flexible else _I16.unpack_from(self.buf, self.need(2))[0]
        if size < 0:
            return ""
        start = self.need(size)
        return bytes(self.buf[start : start + size]).decode("utf-8", errors="replace")

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.need(self.uvarint())


def decode_fetch_response(version: int, body: bytes | bytearray | memoryview) -> FetchResponseData:
    """Decode a Fetch response body (after the response header) at ``version`` (4-17)."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise FetchResponseDecodeError(f"Fetch v{version} is not decoded (v4-v17 are)")
    view = memoryview(body)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    reader = _Reader(view)
    flexible = version >= FIRST_FLEXIBLE
    try:
        if version >= 7:
            throttle, error_code, session_id = _TOP_V7.unpack_from(view, reader.need(10))
        else:
            (throttle,) = _I32.unpack_from(view, reader.need(4))
            error_code, session_id = 0, 0
        topics: list[FetchTopicData] = []
        for _ in range(max(reader.length(flexible), 0)):
            topics.append(_topic(reader, version, flexible))
        if flexible:
            reader.skip_tags()
    except (struct.error, IndexError) as exc:
        raise FetchResponseDecodeError(f"truncated Fetch response: {exc}") from exc
    if reader.pos != len(view):
        raise FetchResponseDecodeError(
            f"{len(view) - reader.pos} unexpected bytes after a Fetch v{version} response"
        )
    return FetchResponseData(throttle, error_code, session_id, topics)


_NO_TOPIC_ID: Final = uuid.UUID(int=0)


def _topic(reader: _Reader, version: int, flexible: bool) -> FetchTopicData:
    view = reader.buf
    if version >= FIRST_TOPIC_ID:
        start = reader.need(16)
        name, topic_id = "", uuid.UUID(bytes=bytes(view[start : start + 16]))
    else:
        name, topic_id = reader.string(flexible), _NO_TOPIC_ID
    partitions: list[FetchPartitionData] = []
    for _ in range(max(reader.length(flexible), 0)):
        index, error, hw, lso = _PARTITION.unpack_from(view, reader.need(_PARTITION.size))
        p = FetchPartitionData(index, error, hw, lso)
        if version >= 5:
            (p.log_start_offset,) = _I64.unpack_from(view, reader.need(8))
        aborted = reader.length(flexible)
        if aborted >= 0:
            p.aborted_transactions = []
            for _ in range(aborted):
                pid, first = _ABORTED.unpack_from(view, reader.need(16))
                p.aborted_transactions.append(AbortedTransaction(pid, first))
                if flexible:
                    reader.skip_tags()
        if version >= 11:
            (p.preferred_read_replica,) = _I32.unpack_from(view, reader.need(4))
        size = reader.length(flexible)
        if size > 0:
            start = reader.need(size)
            p.records = view[start : start + size]
        if flexible:
            _partition_tags(reader, p)
        partitions.append(p)
    if flexible:
        reader.skip_tags()
    return FetchTopicData(name, topic_id, partitions)


def _partition_tags(reader: _Reader, p: FetchPartitionData) -> None:
    view = reader.buf
    for _ in range(reader.uvarint()):
        tag = reader.uvarint()
        size = reader.uvarint()
        start = reader.need(size)
        if tag == 0 and size >= _EPOCH_END.size:
            epoch, end_offset = _EPOCH_END.unpack_from(view, start)
            p.diverging_epoch = (epoch, end_offset)
        elif tag == 1 and size >= _LEADER.size:
            leader_id, leader_epoch = _LEADER.unpack_from(view, start)
            p.current_leader = (leader_id, leader_epoch)
