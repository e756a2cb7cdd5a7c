"""File I/O of the cleaner thread: reading source segments, writing ``.cleaned`` segments.

The cleaner thread never touches a ``Log`` or ``LogSegment`` (they belong to the event
loop). It works on what the loop handed it in a ``CleaningJob``:

- each source segment as a *duplicate* file descriptor and the size the segment had (a
  non-active segment no longer grows). A ``dup`` stays valid when the loop renames the
  segment ``.deleted`` or closes its own descriptor, so a concurrent retention pass or topic
  deletion can never make the thread read a recycled descriptor;
- the partition directory as a descriptor: ``.cleaned`` files are created relative to it
  (``dir_fd``), so a partition directory renamed ``-delete`` and removed meanwhile makes
  the creation fail (ENOENT) rather than write into a newer directory of the same name.

A cleaned segment is written as Kafka's ``LogSegment.append`` would have written it:
``<base>.log.cleaned``, ``<base>.index.cleaned`` and ``<base>.timeindex.cleaned``, with an
offset/time index entry per batch once more than ``index.interval.bytes`` were written since
the previous entry, a final time-index entry for the largest timestamp (Kafka's
``onBecomeInactiveSegment``), indexes trimmed to their entries, a ``.txnindex`` with the
aborted transactions the segment still holds (if any), everything fsynced, and the
``.log``'s modification time set to the last source segment's (Kafka keeps ``lastModified``
so time-based retention and the legacy delete horizon are unchanged).
"""

from __future__ import annotations

import os
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import suppress

from franz.protocol.records.batch import LOG_OVERHEAD, MIN_BATCH_LENGTH, RecordBatchView
from franz.storage.files import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    file_name_prefix,
)
from franz.storage.index.txn_index import AbortedTxn

__all__ = [
    "CleanedSegmentWriter",
    "SegmentReadError",
    "Throttler",
    "cleaned_file_names",
    "iter_segment_batches",
]

_OFFSET_AND_LENGTH = struct.Struct(">qi")
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class SegmentReadError(Exception):
    """A source segment is shorter than the loop said or holds a torn batch."""


def cleaned_file_names(base_offset: int) -> tuple[str, str, str, str]:
    """The ``.log``, ``.index``, ``.timeindex`` and ``.txnindex`` names of a cleaned segment
    in progress (the ``.txnindex`` exists only if the segment keeps aborted transactions)."""
    prefix = file_name_prefix(base_offset)
    return (
        prefix + LOG_SUFFIX + CLEANED_SUFFIX,
        prefix + INDEX_SUFFIX + CLEANED_SUFFIX,
        prefix + TIME_INDEX_SUFFIX + CLEANED_SUFFIX,
        prefix + TXN_INDEX_SUFFIX + CLEANED_SUFFIX,
    )


class Throttler:
    """``log.cleaner.io.max.bytes.per.second``: sleep when read+write I/O runs ahead of it.

    Kafka's ``Throttler`` checks once per ~300 ms window; so does this one. Real time is
    right here: it paces a background thread against the disk, not domain time.
    """

    _WINDOW_S = 0.3

    def __init__(self, bytes_per_second: float, wake: threading.Event | None = None) -> None:
        self.rate = bytes_per_second
        self._wake = wake or threading.Event()
        self._window_start = time.monotonic()
        self._bytes = 0

    def maybe_throttle(self, observed: int) -> None:
        if self.rate <= 0 or self.rate >= 1e300:
            return
        self._bytes += observed
        elapsed = time.monotonic() - self._window_start
        if elapsed < self._WINDOW_S:
            return
        excess = self._bytes / self.rate - elapsed
        if excess > 0:
            self._wake.wait(min(excess, 5.0))  # an abort cuts the pause short
        self._window_start = time.monotonic()
        self._bytes = 0


def iter_segment_batches(
    fd: int, size: int, buffer_size: int, start_position: int = 0
) -> Iterator[tuple[int, RecordBatchView]]:
    """``(position, batch)`` for every batch of a segment's first ``size`` bytes.

    Reads ``buffer_size`` bytes at a time (more for a larger batch, as Kafka's cleaner grows
    its buffers). Batches are yielded whole; their CRC is checked by the caller.
    """
    position = start_position
    chunk = b""
    chunk_start = position
    while position < size:
        rel = position - chunk_start
        if rel + LOG_OVERHEAD > len(chunk):
            chunk = os.pread(fd, min(buffer_size, size - position), position)
            chunk_start, rel = position, 0
            if len(chunk) < LOG_OVERHEAD:
                raise SegmentReadError(f"segment ends at {position + len(chunk)}, not {size}")
        _, length = _OFFSET_AND_LENGTH.unpack_from(chunk, rel)
        batch_size = LOG_OVERHEAD + length
        if length < MIN_BATCH_LENGTH or position + batch_size > size:
            raise SegmentReadError(f"torn batch of {batch_size} bytes at position {position}")
        if rel + batch_size > len(chunk):
            chunk = os.pread(fd, max(buffer_size, batch_size), position)
            chunk_start, rel = position, 0
            if len(chunk) < batch_size:
                raise SegmentReadError(f"segment ends at {position + len(chunk)}, not {size}")
        yield position, RecordBatchView(memoryview(chunk)[rel : rel + batch_size])
        position += batch_size


class CleanedSegmentWriter:
    """Writes one cleaned segment's three ``.cleaned`` files (see the module docstring)."""

    def __init__(
        self, dir_fd: int, base_offset: int, *, index_interval_bytes: int, buffer_size: int
    ) -> None:
        self.dir_fd = dir_fd
        self.base_offset = base_offset
        self.names = cleaned_file_names(base_offset)
        self.index_interval_bytes = index_interval_bytes
        self.buffer_size = max(buffer_size, 4096)
        for name in self.names:  # a leftover of an aborted round
            with suppress(FileNotFoundError):
                os.unlink(name, dir_fd=dir_fd)
        self._fd = os.open(self.names[0], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=dir_fd)
        self.size = 0
        self._pending = bytearray()
        self._offset_entries = bytearray()
        self._time_entries = bytearray()
        self._last_offset_entry: tuple[int, int] | None = None
        self._last_time_entry: tuple[int, int] | None = None
        self._bytes_since_last_entry = 0
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.last_offset = -1
        self.batches = 0

    def append(self, batch: bytes | bytearray | memoryview, last_offset: int, max_ts: int) -> int:
        """Append one whole batch; returns its size. Indexes as ``LogSegment.append``."""
        position = self.size + len(self._pending)
        if max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
            self.offset_of_max_timestamp = last_offset
        if self._bytes_since_last_entry > self.index_interval_bytes:
            self._add_offset_entry(last_offset, position)
            self._maybe_add_time_entry(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_last_entry = 0
        self._pending += batch
        self._bytes_since_last_entry += len(batch)
        self.last_offset = last_offset
        self.batches += 1
        if len(self._pending) >= self.buffer_size:
            self._flush_pending()
        return len(batch)

    def _add_offset_entry(self, offset: int, position: int) -> None:
        last = self._last_offset_entry
        if last is not None and (offset <= last[0] or position <= last[1]):
            return
        self._offset_entries += _OFFSET_ENTRY.pack(offset - self.base_offset, position)
        self._last_offset_entry = (offset, position)

    def _maybe_add_time_entry(self, timestamp: int, offset: int) -> None:
        last = self._last_time_entry
        if last is not None and timestamp <= last[0]:
            return
        self._time_entries += _TIME_ENTRY.pack(timestamp, offset - self.base_offset)
        self._last_time_entry = (timestamp, offset)

    def _flush_pending(self) -> None:
        position = self.size
        with memoryview(self._pending) as pending:
            done = 0
            while done < len(pending):
                written = os.pwrite(self._fd, pending[done:], position + done)
                if written <= 0:
                    raise OSError(f"pwrite wrote {written} bytes")
                done += written
        self.size = position + done
        self._pending.clear()

    def finish(self, mtime_ns: int, aborted_txns: Sequence[AbortedTxn] = ()) -> int:
        """Write the indexes, fsync the files, close; returns the ``.log`` size.

        ``aborted_txns`` are the cleaned segment's ``.txnindex`` entries (the aborted
        transactions whose ABORT marker it keeps with some of their data, Kafka's
        ``CleanedTransactionMetadata.cleanedIndex``); the file is written only if there are
        some, as Kafka's ``TransactionIndex`` creates its file on the first append.
        """
        self._flush_pending()
        if self.max_timestamp >= 0:
            self._maybe_add_time_entry(self.max_timestamp, self.offset_of_max_timestamp)
        indexes: list[tuple[str, bytes | bytearray]] = [
            (self.names[1], self._offset_entries),
            (self.names[2], self._time_entries),
        ]
        if aborted_txns:
            indexes.append((self.names[3], b"".join(txn.encode() for txn in aborted_txns)))
        for name, data in indexes:
            fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644, dir_fd=self.dir_fd)
            try:
                if data:
                    os.pwrite(fd, data, 0)
                os.fsync(fd)
            finally:
                os.close(fd)
        os.fsync(self._fd)
        os.utime(self._fd, ns=(mtime_ns, mtime_ns))
        os.close(self._fd)
        self._fd = -1
        return self.size

    def abort(self) -> None:
        """Close and remove whatever was written (an aborted or failed round)."""
        if self._fd >= 0:
            with suppress(OSError):
                os.close(self._fd)
            self._fd = -1
        remove_cleaned_files(self.dir_fd, self.base_offset)


def remove_cleaned_files(dir_fd: int, base_offset: int) -> None:
    for name in cleaned_file_names(base_offset):
        with suppress(OSError):
            os.unlink(name, dir_fd=dir_fd)
