"""The offset index: sparse map from offset to byte position in a segment's ``.log``.

File format (Kafka's ``OffsetIndex``), 8-byte big-endian entries::

    relativeOffset int32   offset - segment base offset
    position       int32   byte position in the .log file where a batch starts

An entry is written when more than ``index.interval.bytes`` were appended since the previous
one; its offset is the *last* offset of the batch that starts at ``position``. Entries are
strictly increasing in both fields. ``lookup(t)`` returns the last entry with offset <= t:
every batch before that position ends at or before it, so a reader scans batch headers from
there to find the batch holding ``t``.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from franz.storage.index.base import AbstractIndex, CorruptIndexError

__all__ = ["OffsetIndex", "OffsetPosition"]


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(AbstractIndex):
    entry = struct.Struct(">ii")

    def entry_at(self, n: int) -> OffsetPosition:
        relative, position = self._entry(n)
        return OffsetPosition(self.base_offset + relative, position)

    @property
    def last_entry(self) -> OffsetPosition:
        if self.entries == 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry_at(self.entries - 1)

    @property
    def last_offset(self) -> int:
        return self.last_entry.offset

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The last entry with offset <= ``target_offset``; (base offset, 0) if none."""
        slot = self._bisect_floor(target_offset - self.base_offset, 0)
        if slot < 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry_at(slot)

    def floor_by_position(self, position: int) -> OffsetPosition | None:
        """The last entry whose position is <= ``position`` (entries are position-sorted)."""
        slot = self._bisect_floor(position, 1)
        return None if slot < 0 else self.entry_at(slot)

    def append(self, offset: int, position: int) -> None:
        """Add (offset, position); both must exceed the last entry's (Kafka's rule)."""
        if self.entries > 0:
            last = self.entry_at(self.entries - 1)
            if offset <= last.offset or position <= last.position:
                raise ValueError(
                    f"offset index append ({offset}, {position}) is not after the last entry "
                    f"{tuple(last)} in {self.path}"
                )
        self._write_entry(self.entries, offset - self.base_offset, position)
        self.entries += 1

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        slot = self._bisect_ceiling(offset - self.base_offset, 0)
        if slot >= 0:
            self._truncate_to_entries(slot)

    def sanity_check(self, log_size: int) -> None:
        """Cheap O(1) checks, as Kafka's: whole entries, last entry within the segment."""
        if self.file_length % self.entry_size:
            raise CorruptIndexError(
                f"index file {self.path} has length {self.file_length}, "
                f"not a multiple of {self.entry_size}"
            )
        if self.entries == 0:
            return
        last = self.last_entry
        first = self.entry_at(0)
        if last.offset <= self.base_offset and self.entries > 1:
            raise CorruptIndexError(
                f"corrupt index {self.path}: last offset {last.offset} is no greater than "
                f"the base offset {self.base_offset}"
            )
        if first.offset < self.base_offset or last.offset < first.offset:
            raise CorruptIndexError(f"corrupt index {self.path}: offsets out of order")
        if last.position >= log_size or first.position < 0:
            raise CorruptIndexError(
                f"corrupt index {self.path}: position {last.position} is past the end of "
                f"the {log_size}-byte log"
            )
