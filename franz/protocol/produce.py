"""Produce requests, decoded by hand so record sets stay in the request's own buffer.

Why not kio here: kio returns each partition's records as a new ``bytes`` (a copy), and the
log then needs a writable copy to patch ``baseOffset`` and ``partitionLeaderEpoch`` in place.
This decoder returns ``memoryview`` slices of the (writable) request frame instead, so a
batch is copied once from the socket into the frame and once into the page cache. py-spy
on ``kcat -P`` showed the copies and kio's decode among the top costs after ``pwrite``.

The classes mirror kio's attribute names (``transactional_id``, ``acks``, ``timeout``,
``topic_data[].name``, ``.partition_data[].index``, ``.records``) so the handler reads either.

Wire format, versions 0-11 (``ProduceRequest.json``; flexible from v9: compact strings,
arrays and bytes are uvarint(length + 1), and structs end with tagged fields)::

    transactional_id nullable string        v3+
    acks int16
    timeout_ms int32
    topic_data [name string, partition_data [index int32, records nullable bytes]]

v0-2 carry message sets of magic 0/1 in ``records`` (``franz.protocol.records.legacy``).
"""

from __future__ import annotations

import datetime
import struct
from dataclasses import dataclass
from typing import Final

from franz.errors import InvalidRequestError
from franz.protocol.headers import read_uvarint, skip_tagged_fields

__all__ = ["PartitionProduceData", "ProduceRequest", "TopicProduceData", "decode_produce_request"]

FIRST_FLEXIBLE: Final = 9
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")
_ACKS_TIMEOUT: Final = struct.Struct(">hi")


@dataclass(frozen=True, slots=True)
class PartitionProduceData:
    index: int
    records: memoryview | None


@dataclass(frozen=True, slots=True)
class TopicProduceData:
    name: str
    partition_data: list[PartitionProduceData]


@dataclass(frozen=True, slots=True)
class ProduceRequest:
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topic_data: list[TopicProduceData]

    @property
    def timeout(self) -> datetime.timedelta:
        return datetime.timedelta(milliseconds=self.timeout_ms)


class _Reader:
    __slots__ = ("buf", "flexible", "pos", "view")

    def __init__(self, buf: bytes | bytearray, pos: int, flexible: bool) -> None:
        self.buf = buf
        self.view = memoryview(buf)
        self.pos = pos
        self.flexible = flexible

    def need(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.buf):
            raise InvalidRequestError("truncated Produce request")

    def int16(self) -> int:
        self.need(2)
        (value,) = _I16.unpack_from(self.buf, self.pos)
        self.pos += 2
        return int(value)

    def int32(self) -> int:
        self.need(4)
        (value,) = _I32.unpack_from(self.buf, self.pos)
        self.pos += 4
        return int(value)

    def length(self) -> int:
        """A (nullable) length prefix: -1 for null."""
        if self.flexible:
            value, self.pos = read_uvarint(self.buf, self.pos)
            return value - 1
        return self.int32()

    def string(self) -> str | None:
        if self.flexible:
            value, self.pos = read_uvarint(self.buf, self.pos)
            n = value - 1
        else:
            n = self.int16()
        if n < 0:
            return None
        self.need(n)
        text = bytes(self.view[self.pos : self.pos + n]).decode("utf-8", errors="replace")
        self.pos += n
        return text

    def bytes_view(self) -> memoryview | None:
        n = self.length()
        if n < 0:
            return None
        self.need(n)
        out = self.view[self.pos : self.pos + n]
        self.pos += n
        return out

    def array_length(self, name: str) -> int:
        """An array's count; these arrays are not nullable, so a null one fails the parse
        (Kafka: "non-nullable field ... was serialized as null", connection closed)."""
        n = self.length()
        if n < 0:
            raise InvalidRequestError(f"non-nullable field {name} was serialized as null")
        return n

    def tags(self) -> None:
        if self.flexible:
            self.pos = skip_tagged_fields(self.buf, self.pos)


def decode_produce_request(version: int, frame: bytes | bytearray, offset: int) -> ProduceRequest:
    """Decode a Produce v0-11 body at ``offset``; ``InvalidRequestError`` if malformed."""
    r = _Reader(frame, offset, version >= FIRST_FLEXIBLE)
    transactional_id = r.string() if version >= 3 else None
    r.need(_ACKS_TIMEOUT.size)
    acks, timeout_ms = _ACKS_TIMEOUT.unpack_from(frame, r.pos)
    r.pos += _ACKS_TIMEOUT.size
    topic_count = r.array_length("topic_data")
    topics: list[TopicProduceData] = []
    for _ in range(topic_count):
        name = r.string()
        if name is None:
            raise InvalidRequestError("null topic name in a Produce request")
        partition_count = r.array_length("partition_data")
        partitions = []
        for _ in range(partition_count):
            index = r.int32()
            partitions.append(PartitionProduceData(index, r.bytes_view()))
            r.tags()
        r.tags()
        topics.append(TopicProduceData(name, partitions))
    r.tags()
    return ProduceRequest(transactional_id, acks, timeout_ms, topics)
