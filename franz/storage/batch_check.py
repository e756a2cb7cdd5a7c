"""Checking stored record batches: the one definition of a valid batch on disk (sans-IO).

Used by recovery (``LogSegment.recover``), the active segment's tail check on every start,
``log.recovery.verify.all`` and ``franz dump-log-segments --verify``. A stored batch is
valid when (Kafka's ``LogSegment.recover`` with ``RecordBatch.ensureValid``):

- its ``batchLength`` is sane: at least the 49 bytes after the length field of a v2 header,
  the batch ends within the checked range, and it is at most ``max_batch_size`` if given;
- its magic is 2;
- its CRC-32C over bytes ``[21, end)`` matches the stored ``crc``;
- its ``lastOffsetDelta`` is not negative and its base offset is not below the offset after
  the previous valid batch.

Glossary: a *walkable* failure (CRC, offset order) leaves the length field trusted, so the
walk can go on to the next batch and find later good ones; an unwalkable one (length, magic,
a partial header) leaves no way to find the next batch boundary, so the walk ends there.
``baseOffset`` and ``partitionLeaderEpoch`` lie before the CRC'd range: a damaged
``baseOffset`` is only caught when it goes backwards.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import crc32c

from franz.protocol.records.batch import BATCH_HEADER_SIZE, LOG_OVERHEAD, MAGIC_V2, MIN_BATCH_LENGTH

__all__ = ["BatchCheck", "check_batches"]

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp
_HEADER = struct.Struct(">qiibIhiqq")
_CRC_START = 21


@dataclass(frozen=True, slots=True)
class BatchCheck:
    """One batch (or the unwalkable bytes at ``position``) and why it is invalid, if it is.

    For an unwalkable failure ``size`` is the byte count from ``position`` to the end of the
    checked range and the offsets are -1 when no header could be read.
    """

    position: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    leader_epoch: int
    error: str | None = None
    walkable: bool = True
    #: attributes bit 5 (isControlBatch): a transaction marker.
    is_control: bool = False

    @property
    def end(self) -> int:
        return self.position + self.size


def check_batches(
    data: memoryview | bytes,
    start: int = 0,
    end: int | None = None,
    *,
    expected_offset: int | None = None,
    max_batch_size: int | None = None,
) -> Iterator[BatchCheck]:
    """Check the batches of ``data[start:end]``, one :class:`BatchCheck` each, in order.

    ``start`` must be a batch boundary. The walk continues past a walkable failure and ends
    after an unwalkable one (yielded with ``walkable=False``, covering the rest of the range).
    ``expected_offset`` is the offset after the batch before ``start``, if known.
    """
    limit = len(data) if end is None else min(end, len(data))
    position = start
    while position < limit:
        if position + BATCH_HEADER_SIZE > limit:
            yield BatchCheck(
                position, limit - position, -1, -1, -1, -1, "a partial batch header", False
            )
            return
        base, length, epoch, magic, crc, attrs, delta, _, max_ts = _HEADER.unpack_from(
            data, position
        )
        size = LOG_OVERHEAD + length
        error = None
        if length < MIN_BATCH_LENGTH or position + size > limit:
            error = f"batch length {length} runs past the end ({limit} bytes)"
        elif max_batch_size is not None and size > max_batch_size:
            error = f"batch size {size} exceeds the limit {max_batch_size}"
        elif magic != MAGIC_V2:
            error = f"magic {magic}"
        if error is not None:
            yield BatchCheck(position, limit - position, base, -1, -1, epoch, error, False)
            return
        computed = crc32c.crc32c(memoryview(data)[position + _CRC_START : position + size])
        if computed != crc:
            error = f"CRC mismatch (stored {crc}, computed {computed})"
        elif delta < 0 or (expected_offset is not None and base < expected_offset):
            error = f"offset {base} does not follow {expected_offset}"
        else:
            expected_offset = base + delta + 1
        yield BatchCheck(
            position, size, base, base + delta, max_ts, epoch, error, is_control=bool(attrs & 0x20)
        )
        position += size
