"""Fixed-width, memory-mapped, preallocated index files (Kafka's ``AbstractIndex``).

An index is a file of equal-sized big-endian entries, sorted by key. A writable index is
preallocated to ``max_index_size`` (rounded down to whole entries, blocks reserved with
``posix_fallocate`` so a full disk cannot SIGBUS the map) and memory-mapped, so an append is
a store into the map; the number of valid entries is kept in memory. On roll and
on clean close the file is trimmed to the valid entries, so a trimmed index file's length is
exactly ``entries * entry_size``. An index that was not trimmed (a crash) is detected by
:meth:`sanity_check` and rebuilt from the log: indexes carry no checksum, they can always be
rebuilt, as in Kafka.

Not thread-safe: one writer (the partition's log), readers on the same thread.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

__all__ = ["AbstractIndex", "CorruptIndexError", "IndexFullError"]


class CorruptIndexError(Exception):
    """The index file does not pass the sanity check (Kafka's ``CorruptIndexException``)."""


class IndexFullError(Exception):
    """Append to a full index; the segment must roll first."""


class AbstractIndex:
    """Common machinery: open/preallocate/mmap, resize, trim, truncate, bisect."""

    entry: struct.Struct  # set by subclasses

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int, *, writable: bool = True
    ) -> None:
        self.path = path
        self.base_offset = base_offset
        self.writable = writable
        self._mmap: mmap.mmap | None = None
        self._length = 0
        entry_size = self.entry.size
        # An existing empty file is a trimmed index without entries, not a new one: it stays
        # empty (the loader preallocates only the active segment's indexes).
        new = not path.exists()
        flags = os.O_RDWR | os.O_CREAT if writable else os.O_RDONLY
        fd = os.open(path, flags, 0o644)
        try:
            if new and writable:
                self._length = self._round_down(max_index_size)
                _reserve(fd, self._length)
                self.entries = 0
            else:
                self._length = os.fstat(fd).st_size
                self.entries = self._length // entry_size
            self.max_entries = self._length // entry_size
            self._map(fd)
        finally:
            os.close(fd)

    # -- geometry ------------------------------------------------------------------------

    @property
    def entry_size(self) -> int:
        return self.entry.size

    @property
    def size_in_bytes(self) -> int:
        """Bytes of valid entries (not the preallocated length)."""
        return self.entries * self.entry.size

    @property
    def file_length(self) -> int:
        return self._length

    def is_full(self) -> bool:
        return self.entries >= self.max_entries

    def _round_down(self, size: int) -> int:
        return max(0, size - size % self.entry.size)

    def _map(self, fd: int) -> None:
        if self._length == 0:
            self._mmap = None
            return
        access = mmap.ACCESS_WRITE if self.writable else mmap.ACCESS_READ
        self._mmap = mmap.mmap(fd, self._length, access=access)

    def _unmap(self) -> None:
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None

    def resize(self, new_size: int) -> bool:
        """Set the file length to ``new_size`` rounded down (never below the valid entries).

        Returns whether the length changed. Used to preallocate again when a segment becomes
        active (``max_index_size``) and to trim (``size_in_bytes``).
        """
        length = max(self._round_down(new_size), self.size_in_bytes)
        if length == self._length:
            return False
        self._unmap()
        fd = os.open(self.path, os.O_RDWR)
        try:
            if length > self._length:
                _reserve(fd, length)
            else:
                os.ftruncate(fd, length)
            self._length = length
            self.max_entries = length // self.entry.size
            self._map(fd)
        finally:
            os.close(fd)
        return True

    def trim_to_valid_size(self) -> None:
        self.resize(self.size_in_bytes)

    def _entry(self, n: int) -> tuple[int, ...]:
        assert self._mmap is not None
        return self.entry.unpack_from(self._mmap, n * self.entry.size)

    def _write_entry(self, n: int, *values: int) -> None:
        if self._mmap is None or n >= self.max_entries:
            raise IndexFullError(f"index {self.path} is full ({self.entries} entries)")
        self.entry.pack_into(self._mmap, n * self.entry.size, *values)

    def _bisect_floor(self, key: int, field: int) -> int:
        """The slot of the last entry whose ``field`` is <= ``key``; -1 if none."""
        lo, hi = 0, self.entries - 1
        if hi < 0 or self._entry(0)[field] > key:
            return -1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._entry(mid)[field] <= key:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _bisect_ceiling(self, key: int, field: int) -> int:
        """The slot of the first entry whose ``field`` is >= ``key``; -1 if none."""
        lo, hi = 0, self.entries - 1
        if hi < 0 or self._entry(hi)[field] < key:
            return -1
        while lo < hi:
            mid = (lo + hi) // 2
            if self._entry(mid)[field] >= key:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _truncate_to_entries(self, entries: int) -> None:
        self.entries = max(0, min(entries, self.entries))

    # -- life cycle ----------------------------------------------------------------------

    def reset(self) -> None:
        """Drop every entry (recovery rebuilds from the log)."""
        self.entries = 0

    def flush(self) -> None:
        if self._mmap is not None:
            self._mmap.flush()

    def close(self) -> None:
        """Trim to the valid entries and unmap, as Kafka does on a clean close."""
        if self.writable:
            self.trim_to_valid_size()
        self._unmap()

    def close_handler(self) -> None:
        """Unmap without trimming (the file is going away or is handled elsewhere)."""
        self._unmap()

    def rename_to(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = path

    def delete(self) -> None:
        self._unmap()
        self.path.unlink(missing_ok=True)


def _reserve(fd: int, length: int) -> None:
    """Set the file's length with its blocks allocated now.

    A sparse file (``ftruncate``) written through a memory map gets SIGBUS, which kills the
    process, when the disk fills; ``posix_fallocate`` turns that into ENOSPC here, an
    ``OSError`` the log maps to KAFKA_STORAGE_ERROR.
    """
    os.ftruncate(fd, length)
    if length:
        os.posix_fallocate(fd, 0, length)
