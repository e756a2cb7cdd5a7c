"""OffsetCommit responses, hand-written: a consumer commits every partition it owns, often
every few seconds, and kio's generic writer spends about 0.3 ms encoding a 100-partition
answer (measured), as much as the coordinator's whole work for the commit.

Wire format, versions 0-9 (``OffsetCommitResponse.json``; v0-1 are v2's; flexible from v8:
compact arrays and strings are uvarint(length + 1), every struct ends with tagged fields, left
empty)::

    OffsetCommitResponse
      throttle_time_ms int32            v3+
      topics [topic]
        name string
        partitions [partition]
          partition_index int32
          error_code int16

Byte-identical with kio's encoding at every version (tests/unit/protocol/test_offset_commit.py).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Final

from franz.protocol.records.varint import encode_unsigned_varint

__all__ = ["FIRST_FLEXIBLE_VERSION", "encode_offset_commit_response"]

FIRST_FLEXIBLE_VERSION: Final = 8

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_PARTITION = struct.Struct(">ih")

TopicResults = Sequence[tuple[str, Sequence[tuple[int, int]]]]
"""(topic name, [(partition index, error code), ...]) in request order."""


def encode_offset_commit_response(
    version: int, topics: TopicResults, throttle_time_ms: int = 0
) -> bytes:
    """The response body (no header) for ``version`` (0-9)."""
    if not 0 <= version <= 9:
        raise ValueError(f"OffsetCommit v{version} is not encoded here")
    flexible = version >= FIRST_FLEXIBLE_VERSION
    out = bytearray()
    if version >= 3:
        out += _INT32.pack(throttle_time_ms)
    if flexible:
        out += encode_unsigned_varint(len(topics) + 1)
    else:
        out += _INT32.pack(len(topics))
    for name, partitions in topics:
        data = name.encode("utf-8")
        if flexible:
            out += encode_unsigned_varint(len(data) + 1)
            out += data
            out += encode_unsigned_varint(len(partitions) + 1)
            for index, error in partitions:
                out += _PARTITION.pack(index, error)
                out += b"\x00"
            out += b"\x00"
        else:
            out += _INT16.pack(len(data))
            out += data
            out += _INT32.pack(len(partitions))
            for index, error in partitions:
                out += _PARTITION.pack(index, error)
    if flexible:
        out += b"\x00"
    return bytes(out)
