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
from dataclasses import dataclass
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
_PARTITION_V5: Final = struct.Struct(">ihqqq")  # + log start offset
_EMPTY: Final = memoryview(b"")
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
    records: memoryview = _EMPTY
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


def _uvarint(buf: memoryview, pos: int) -> tuple[int, int]:
    """(value, position after it); IndexError past the end."""
    value = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise FetchResponseDecodeError("unsigned varint longer than 5 bytes")


def _skip_tags(buf: memoryview, pos: int) -> int:
    count, pos = _uvarint(buf, pos)
    for _ in range(count):
        _, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        pos += size
    if pos > len(buf):
        raise IndexError("tagged field past the end")
    return pos


def decode_fetch_response(version: int, body: bytes | bytearray | memoryview) -> FetchResponseData:
    """Decode a Fetch response body (after the response header) at ``version`` (4-17).

    Written for few Python-level operations per partition (one ``struct`` call for the fixed
    fields, one-byte varints read inline): a follower's responses carry few partitions with
    large record sets, where this is about twice as fast as kio and copies nothing; with
    hundreds of tiny partitions kio's native decoder is faster (bench/fetch_decode_bench.py).
    """
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise FetchResponseDecodeError(f"Fetch v{version} is not decoded (v4-v17 are)")
    buf = memoryview(body)
    if buf.format != "B" or buf.ndim != 1:
        buf = buf.cast("B")
    try:
        response, pos = _decode(version, buf)
    except (struct.error, IndexError) as exc:
        raise FetchResponseDecodeError(f"truncated Fetch v{version} response: {exc}") from exc
    if pos != len(buf):
        raise FetchResponseDecodeError(
            f"{len(buf) - pos} unexpected bytes after a Fetch v{version} response"
        )
    return response


_NO_TOPIC_ID: Final = uuid.UUID(int=0)


def _decode(version: int, buf: memoryview) -> tuple[FetchResponseData, int]:
    flexible = version >= FIRST_FLEXIBLE
    end = len(buf)
    if version >= 7:
        throttle, error_code, session_id = _TOP_V7.unpack_from(buf, 0)
        pos = 10
    else:
        (throttle,) = _I32.unpack_from(buf, 0)
        error_code, session_id, pos = 0, 0, 4
    topics: list[FetchTopicData] = []
    response = FetchResponseData(throttle, error_code, session_id, topics)
    if flexible:
        count, pos = _uvarint(buf, pos)
        count -= 1
    else:
        (count,) = _I32.unpack_from(buf, pos)
        pos += 4
    for _ in range(count):
        if version >= FIRST_TOPIC_ID:
            if pos + 16 > end:
                raise IndexError("topic id past the end")
            name, topic_id = "", uuid.UUID(bytes=bytes(buf[pos : pos + 16]))
            pos += 16
        else:
            if flexible:
                size, pos = _uvarint(buf, pos)
                size -= 1
            else:
                (size,) = _I16.unpack_from(buf, pos)
                pos += 2
            if pos + max(size, 0) > end:
                raise IndexError("topic name past the end")
            name = bytes(buf[pos : pos + size]).decode("utf-8", "replace") if size > 0 else ""
            pos += max(size, 0)
            topic_id = _NO_TOPIC_ID
        partitions: list[FetchPartitionData] = []
        topics.append(FetchTopicData(name, topic_id, partitions))
        if flexible:
            n, pos = _uvarint(buf, pos)
            n -= 1
        else:
            (n,) = _I32.unpack_from(buf, pos)
            pos += 4
        for _ in range(n):
            pos = _partition(version, flexible, buf, pos, end, partitions)
        if flexible:
            pos = _skip_tags(buf, pos)
    if flexible:
        pos = _skip_tags(buf, pos)
    return response, pos


def _partition(
    version: int,
    flexible: bool,
    buf: memoryview,
    pos: int,
    end: int,
    out: list[FetchPartitionData],
) -> int:
    if version >= 5:
        index, error, hw, lso, log_start = _PARTITION_V5.unpack_from(buf, pos)
        pos += _PARTITION_V5.size
    else:
        index, error, hw, lso = _PARTITION.unpack_from(buf, pos)
        log_start = -1
        pos += _PARTITION.size
    p = FetchPartitionData(index, error, hw, lso, log_start, None, -1, _EMPTY)
    out.append(p)
    if flexible:
        aborted = buf[pos]
        if aborted < 0x80:
            pos += 1
        else:
            aborted, pos = _uvarint(buf, pos)
        aborted -= 1
    else:
        (aborted,) = _I32.unpack_from(buf, pos)
        pos += 4
    if aborted >= 0:
        transactions = p.aborted_transactions = []
        for _ in range(aborted):
            producer_id, first_offset = _ABORTED.unpack_from(buf, pos)
            pos += 16
            transactions.append(AbortedTransaction(producer_id, first_offset))
            if flexible:
                pos = _skip_tags(buf, pos)
    if version >= 11:
        (p.preferred_read_replica,) = _I32.unpack_from(buf, pos)
        pos += 4
    if flexible:
        size, pos = _uvarint(buf, pos)
        size -= 1
    else:
        (size,) = _I32.unpack_from(buf, pos)
        pos += 4
    if size > 0:
        if pos + size > end:
            raise IndexError(f"records of {size} bytes past the end")
        p.records = buf[pos : pos + size]
        pos += size
    if flexible:
        if buf[pos] == 0:
            pos += 1
        else:
            pos = _partition_tags(buf, pos, p)
    return pos


def _partition_tags(buf: memoryview, pos: int, p: FetchPartitionData) -> int:
    count, pos = _uvarint(buf, pos)
    for _ in range(count):
        tag, pos = _uvarint(buf, pos)
        size, pos = _uvarint(buf, pos)
        if pos + size > len(buf):
            raise IndexError("tagged field past the end")
        if tag == 0 and size >= _EPOCH_END.size:
            epoch, end_offset = _EPOCH_END.unpack_from(buf, pos)
            p.diverging_epoch = (epoch, end_offset)
        elif tag == 1 and size >= _LEADER.size:
            leader_id, leader_epoch = _LEADER.unpack_from(buf, pos)
            p.current_leader = (leader_id, leader_epoch)
        pos += size
    return pos
