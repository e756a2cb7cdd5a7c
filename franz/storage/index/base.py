"""Fixed-width, memory-mapped, preallocated index files (Kafka's ``AbstractIndex``).

An index is a file of equal-sized big-endian entries, sorted by key. A writable index is
preallocated to ``max_index_size`` (rounded down to whole entries) and memory-mapped, so an
append is a store into the map; the number of valid entries is kept in memory. On roll and
on clean close the file is trimmed to the valid entries, so a trimmed index file's length is
exactly ``entries * entry_size``.

Preallocation is sparse, as Kafka's ``RandomAccessFile.setLength``: ``ftruncate`` sets the
length and no block is allocated, so an empty partition's two 10 MiB indexes
(``segment.index.bytes``) cost no disk (20 MiB together with ``posix_fallocate``: 2,500
empty partitions filled an 80 GB disk). A store into a hole of a full file system raises
SIGBUS, which kills a Python process (the JVM turns it into an exception), so space is
reserved just ahead of the stores instead: before an entry is stored past the reserved
bytes, zeros are written (``pwrite``) from that entry to the end of its ``RESERVE_BYTES``
chunk. A buffered write reserves the space or fails with ENOSPC, an ``OSError`` the log maps
to KAFKA_STORAGE_ERROR, and it leaves the page in the page cache, so the store into the map
is then a minor fault. (Stores into ``posix_fallocate``'d pages are major faults that convert
unwritten extents: 1,000 new indexes took 3.3-15 s for their first stores that way, 26-50 ms
with ``pwrite``, on this machine's ext4.) Zeros are never written below the next entry's
slot, so valid entries are never touched. An index holds at most one chunk more than its
entries.

An index that was not trimmed (a crash) is detected by
:meth:`sanity_check` and rebuilt from the log: indexes carry no checksum, they can always be
rebuilt, as in Kafka.

Not thread-safe: one writer (the partition's log), readers on the same thread.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path
from typing import Final

__all__ = ["RESERVE_BYTES", "AbstractIndex", "CorruptIndexError", "IndexFullError"]

#: Space is reserved (zeros written) up to the end of a chunk of this many bytes, a page: one
#: ``open``/``pwrite``/``close`` per 512 offset-index entries (about 2 MiB of log at the
#: default ``index.interval.bytes``), and at most 4 KiB of unused blocks per index.
RESERVE_BYTES: Final = 4096


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
        #: Bytes from the file's start known to be backed (``_reserve_for``); 0 when unknown.
        self._reserved = 0
        entry_size = self.entry.size
        # An existing empty file is a trimmed index without entries, not a new one: it stays
        # empty (the loader preallocates only the active segment's indexes).
        new = not path.exists()
        flags = os.O_RDWR | os.O_CREAT if writable else os.O_RDONLY
        fd = os.open(path, flags, 0o644)
        try:
            if new and writable:
                self._length = self._round_down(max_index_size)
                os.ftruncate(fd, self._length)  # sparse: blocks come with the entries
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
        active (``max_index_size``, sparse) and to trim (``size_in_bytes``).
        """
        length = max(self._round_down(new_size), self.size_in_bytes)
        if length == self._length:
            return False
        self._unmap()
        fd = os.open(self.path, os.O_RDWR)
        try:
            os.ftruncate(fd, length)
            self._reserved = min(self._reserved, length)
            self._length = length
            self.max_entries = length // self.entry.size
            self._map(fd)
        finally:
            os.close(fd)
        return True

    def _reserve_for(self, n: int) -> None:
        """Back the bytes from slot ``n`` to the end of its ``RESERVE_BYTES`` chunk (never past
        the file's length) by writing zeros there, before a store into slot ``n``; raises
        ``OSError`` (ENOSPC) on a full disk. Slot ``n`` is the next entry's: every byte below
        it is a valid entry, which this never overwrites."""
        start = max(n * self.entry.size, self._reserved)
        end = (n + 1) * self.entry.size
        target = min(self._length, -(-end // RESERVE_BYTES) * RESERVE_BYTES)
        fd = os.open(self.path, os.O_RDWR)
        try:
            written = os.pwrite(fd, bytes(target - start), start)
        finally:
            os.close(fd)
        if written != target - start:
            raise OSError(f"pwrite wrote {written} of {target - start} bytes to {self.path}")
        self._reserved = target

    def trim_to_valid_size(self) -> None:
        self.resize(self.size_in_bytes)

    def _entry(self, n: int) -> tuple[int, ...]:
        assert self._mmap is not None
        return self.entry.unpack_from(self._mmap, n * self.entry.size)

    def _write_entry(self, n: int, *values: int) -> None:
        if self._mmap is None or n >= self.max_entries:
            raise IndexFullError(f"index {self.path} is full ({self.entries} entries)")
        if (n + 1) * self.entry.size > self._reserved:
            self._reserve_for(n)
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
        self._reserved = 0  # a crashed, untrimmed file may have holes anywhere

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
