"""Fetch responses, hand-written so record data can be sent with ``sendfile``.

Why not kio here: a Fetch response is mostly record batches that already sit in segment files
in their wire format. kio would need them as ``bytes`` (a read and a copy per partition, and a
second copy into the response); instead this encoder emits the response as a list of chunks,
``bytes`` for the framing and ``FileRegion`` for each partition's records, which the network
layer writes with ``sendfile`` straight from the page cache (Kafka's ``FileRecords``).

Wire format, versions 0-17 (``FetchResponse.json``; flexible from v12: compact arrays and
strings are uvarint(length + 1), every struct ends with tagged fields, which Franz leaves
empty but for the current-leader hints)::

    FetchResponse
      throttle_time_ms int32                v1+
      error_code int16                      v7+
      session_id int32                      v7+
      responses [topic]
        topic string                        v0-12
        topic_id uuid                       v13+
        partitions [partition]
          partition_index int32
          error_code int16
          high_watermark int64
          last_stable_offset int64          v4+
          log_start_offset int64            v5+
          aborted_transactions [producer_id int64, first_offset int64]  nullable, v4+
          preferred_read_replica int32      v11+
          records nullable bytes            int32 length; flexible: uvarint(length + 1)
          <tagged> 1: current_leader {leader_id int32, leader_epoch int32}  v12+
      <tagged> 0: node_endpoints [node_id int32, host string, port int32,
                  rack nullable string]                                     v16+

Fetch v0-3 carry message sets of magic 0 (v0-1) or 1 (v2-3): the handler down-converts
(``franz.protocol.records.legacy``) and passes ``bytes``, never file regions.

The aborted-transactions array is as Kafka sends it: null for a partition read at
READ_UNCOMMITTED (Kafka only looks transactions up for READ_COMMITTED), the aborted
transactions overlapping the records sent (possibly none) for READ_COMMITTED, and empty for
partitions refused before the read (unknown topic or partition: Kafka's
``FetchResponse.partitionResponse`` default). Franz always sends an empty (not
null) record set when there is no data: librdkafka and franz-go's kfake treat null and empty
differently in places (twmb/franz-go#1227).
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field
from typing import Final

__all__ = [
    "FetchPartitionResult",
    "FetchTopicResult",
    "FileRegion",
    "NodeEndpoint",
    "encode_fetch_response",
]

_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_PARTITION_V4: Final = struct.Struct(">ihqq")  # index, error, HW, LSO
_PARTITION_V0: Final = struct.Struct(">ihq")  # index, error, HW
_I64: Final = struct.Struct(">q")

FIRST_FLEXIBLE: Final = 12
FIRST_TOPIC_ID: Final = 13
FIRST_NODE_ENDPOINTS: Final = 16
_LEADER: Final = struct.Struct(">ii")
_EPOCH_END: Final = struct.Struct(">iq")
_ABORTED: Final = struct.Struct(">qq")  # producer_id, first_offset


@dataclass(frozen=True, slots=True)
class FileRegion:
    """``size`` bytes of the open file ``fd`` at ``position``, sent as they are."""

    fd: int
    position: int
    size: int


@dataclass(slots=True)
class FetchPartitionResult:
    partition_index: int
    error_code: int = 0
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    preferred_read_replica: int = -1
    #: The record batches: file ranges (zero-copy) or bytes; empty when there is no data.
    records: list[FileRegion | bytes] = field(default_factory=list)
    #: v12+ tagged field 1 (KIP-951): (leader id, leader epoch) when the client should go
    #: to another broker; None sends no tag.
    current_leader: tuple[int, int] | None = None
    #: v12+ tagged field 0 (KIP-320): (epoch, end offset) where a follower's log diverged
    #: from this leader's; None sends no tag.
    diverging_epoch: tuple[int, int] | None = None
    #: Null (not empty) aborted transactions: what Kafka sends for a partition it read (or
    #: failed to read) at READ_UNCOMMITTED.
    aborted_transactions_null: bool = False
    #: READ_COMMITTED (v4+): the aborted transactions overlapping the records sent, as
    #: (producer id, first offset) pairs (KIP-98); ignored when ``aborted_transactions_null``.
    aborted_transactions: list[tuple[int, int]] = field(default_factory=list)

    @property
    def records_size(self) -> int:
        return sum(r.size if isinstance(r, FileRegion) else len(r) for r in self.records)


@dataclass(slots=True)
class FetchTopicResult:
    name: str
    topic_id: uuid.UUID
    partitions: list[FetchPartitionResult]


@dataclass(frozen=True, slots=True)
class NodeEndpoint:
    """A broker named by a current-leader hint (``NodeEndpoint``, v16+)."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


def _compact_string(value: str | None) -> bytes:
    if value is None:
        return b"\x00"
    data = value.encode()
    return _uvarint(len(data) + 1) + data


def _encode_node_endpoints(nodes: list[NodeEndpoint]) -> bytes:
    out = bytearray(_uvarint(len(nodes) + 1))
    for node in nodes:
        out += _I32.pack(node.node_id)
        out += _compact_string(node.host)
        out += _I32.pack(node.port)
        out += _compact_string(node.rack)
        out += b"\x00"
    return bytes(out)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_fetch_response(
    version: int,
    topics: list[FetchTopicResult],
    *,
    throttle_time_ms: int = 0,
    error_code: int = 0,
    session_id: int = 0,
    node_endpoints: list[NodeEndpoint] | None = None,
) -> list[bytes | FileRegion]:
    """The response body (no frame size, no response header) as chunks, in order.

    Adjacent byte strings are joined, so the chunks alternate between bytes and regions.
    """
    flexible = version >= FIRST_FLEXIBLE
    chunks: list[bytes | FileRegion] = []
    out = bytearray(_I32.pack(throttle_time_ms) if version >= 1 else b"")
    if version >= 7:
        out += _I16.pack(error_code)
        out += _I32.pack(session_id)
    out += _uvarint(len(topics) + 1) if flexible else _I32.pack(len(topics))
    for topic in topics:
        if version >= FIRST_TOPIC_ID:
            out += topic.topic_id.bytes
        else:
            name = topic.name.encode()
            out += _uvarint(len(name) + 1) if flexible else _I16.pack(len(name))
            out += name
        partitions = topic.partitions
        out += _uvarint(len(partitions) + 1) if flexible else _I32.pack(len(partitions))
        for p in partitions:
            if version >= 4:
                out += _PARTITION_V4.pack(
                    p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset
                )
                if version >= 5:
                    out += _I64.pack(p.log_start_offset)
                if p.aborted_transactions_null:
                    out += b"\x00" if flexible else b"\xff\xff\xff\xff"
                else:
                    aborted = p.aborted_transactions
                    out += _uvarint(len(aborted) + 1) if flexible else _I32.pack(len(aborted))
                    for producer_id, first_offset in aborted:
                        out += _ABORTED.pack(producer_id, first_offset)
                        if flexible:
                            out += b"\x00"  # AbortedTransaction tagged fields
            else:
                out += _PARTITION_V0.pack(p.partition_index, p.error_code, p.high_watermark)
            if version >= 11:
                out += _I32.pack(p.preferred_read_replica)
            size = p.records_size
            out += _uvarint(size + 1) if flexible else _I32.pack(size)
            for region in p.records:
                if isinstance(region, FileRegion):
                    if region.size:
                        chunks.append(bytes(out))
                        out = bytearray()
                        chunks.append(region)
                else:
                    out += region
            if flexible:
                tags = (p.diverging_epoch is not None) + (p.current_leader is not None)
                out += _uvarint(tags)  # partition tagged fields, in tag order
                if p.diverging_epoch is not None:
                    # tag 0 (diverging_epoch): EpochEndOffset + its empty tags, 13 bytes
                    out += b"\x00\x0d" + _EPOCH_END.pack(*p.diverging_epoch) + b"\x00"
                if p.current_leader is not None:
                    # tag 1 (current_leader): LeaderIdAndEpoch + its empty tags, 9 bytes
                    out += b"\x01\x09" + _LEADER.pack(*p.current_leader) + b"\x00"
        if flexible:
            out += b"\x00"  # topic tagged fields
    if flexible:
        if version >= FIRST_NODE_ENDPOINTS and node_endpoints:
            field_bytes = _encode_node_endpoints(node_endpoints)
            out += b"\x01\x00" + _uvarint(len(field_bytes)) + field_bytes
        else:
            out += b"\x00"  # response tagged fields
    chunks.append(bytes(out))
    return chunks
