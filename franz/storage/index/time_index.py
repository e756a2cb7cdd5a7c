"""The time index: sparse map from timestamp to offset (Kafka's ``TimeIndex``).

File format, 12-byte big-endian entries::

    timestamp      int64   the largest timestamp seen in the segment so far
    relativeOffset int32   offset (minus base) of the last record of the batch holding it

Entries are added beside offset-index entries, only when the timestamp grows, so both
columns are non-decreasing. ``lookup(t)`` returns the last entry with timestamp <= t: every
record at or before its offset may be older than ``t``, and a search by timestamp scans the
log from that offset for the first batch whose max timestamp is >= ``t``.

One slot is kept free so a segment that rolls can always record its final maximum
(``maybe_append(..., skip_full_check=True)``), as Kafka does.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from franz.storage.index.base import AbstractIndex, CorruptIndexError

__all__ = ["TimeIndex", "TimestampOffset"]

NO_TIMESTAMP = -1


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(AbstractIndex):
    entry = struct.Struct(">qi")

    def is_full(self) -> bool:
        return self.entries >= self.max_entries - 1

    def entry_at(self, n: int) -> TimestampOffset:
        timestamp, relative = self._entry(n)
        return TimestampOffset(timestamp, self.base_offset + relative)

    @property
    def last_entry(self) -> TimestampOffset:
        if self.entries == 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry_at(self.entries - 1)

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The last entry with timestamp <= target; (-1, base offset) if none."""
        slot = self._bisect_floor(target_timestamp, 0)
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry_at(slot)

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Add (timestamp, offset) if ``timestamp`` exceeds the last entry's."""
        if not skip_full_check and self.is_full():
            raise ValueError(f"time index {self.path} is full")
        if self.entries > 0:
            last = self.last_entry
            if offset < last.offset:
                raise ValueError(
                    f"time index append offset {offset} is before the last entry's "
                    f"{last.offset} in {self.path}"
                )
            if timestamp <= last.timestamp:
                return
        self._write_entry(self.entries, timestamp, offset - self.base_offset)
        self.entries += 1

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        slot = self._bisect_ceiling(offset - self.base_offset, 1)
        if slot >= 0:
            self._truncate_to_entries(slot)

    def sanity_check(self) -> None:
        if self.file_length % self.entry_size:
            raise CorruptIndexError(
                f"time index file {self.path} has length {self.file_length}, "
                f"not a multiple of {self.entry_size}"
            )
        if self.entries == 0:
            return
        first, last = self.entry_at(0), self.last_entry
        if last.timestamp < first.timestamp or last.offset < first.offset:
            raise CorruptIndexError(f"corrupt time index {self.path}: entries out of order")
        if first.offset < self.base_offset:
            raise CorruptIndexError(
                f"corrupt time index {self.path}: offset {first.offset} is before the base "
                f"offset {self.base_offset}"
            )
