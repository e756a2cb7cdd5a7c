"""A log segment: one ``.log`` file of record batches and its indexes (Kafka's ``LogSegment``).

Files, named after the segment's base offset (``franz.storage.files``)::

    <base>.log        v2 record batches, exactly as appended (franz.protocol.records.batch)
    <base>.index      OffsetIndex: (relative offset int32, position int32), sparse
    <base>.timeindex  TimeIndex: (timestamp int64, relative offset int32), sparse
    <base>.txnindex   TransactionIndex: the transactions aborted by markers in this segment;
                      created by the first abort only (Kafka opens it lazily too), renamed,
                      truncated, flushed and deleted with the segment

Invariants:
- Batches are appended whole, in offset order; ``size`` is the byte length of the ``.log``
  and every batch boundary below it is a valid batch (recovery restores this after a crash).
- Index entries are added per batch, once more than ``index.interval.bytes`` were appended
  since the previous entry (Kafka >= 3.6 indexes per batch, not per append).
- ``max_timestamp_so_far`` and its offset track the largest batch ``maxTimestamp``; the time
  index gets an entry when that grows at an index point, and a final one when the segment
  rolls or closes.

Reads never decode records: :meth:`read` returns a byte range that starts at the batch
holding the requested offset and ends at a batch boundary, for ``sendfile``.

Not thread-safe: owned by its ``Log``, whose single writer appends, and whose readers run on
the same thread (the broker's event loop).
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from franz.clock import Clock
from franz.protocol.records.batch import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    RecordBatchView,
)
from franz.storage.batch_check import BatchCheck, check_batches
from franz.storage.files import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    segment_file,
)
from franz.storage.index.base import CorruptIndexError
from franz.storage.index.offset_index import OffsetIndex
from franz.storage.index.time_index import TimeIndex
from franz.storage.index.txn_index import TransactionIndex

if TYPE_CHECKING:
    from franz.storage.transactions import CompletedTxn

__all__ = ["BatchLocation", "LogSegment", "SegmentReadResult"]

log = logging.getLogger(__name__)

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
# baseTimestamp, maxTimestamp: the header prefix needed to walk a log (43 bytes).
_WALK = struct.Struct(">qiibIhiqq")
_WALK_READ = 4096
_MAGIC_POSITION = 16
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, slots=True)
class BatchLocation:
    """Where one batch lies in a segment (Kafka's ``LogOffsetPosition`` plus timestamps)."""

    base_offset: int
    last_offset: int
    position: int
    size: int
    max_timestamp: int
    leader_epoch: int

    @property
    def end(self) -> int:
        return self.position + self.size


@dataclass(frozen=True, slots=True)
class SegmentReadResult:
    """A byte range of a segment's ``.log``: whole batches, the first holding the offset."""

    first_batch: BatchLocation
    position: int
    size: int


class LogSegment:
    """A ``.log`` file with its offset and time indexes."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_size: int,
        clock: Clock,
        roll_jitter_ms: int = 0,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.max_index_size = max_index_size
        self.roll_jitter_ms = roll_jitter_ms
        self._clock = clock
        self.log_path = segment_file(directory, base_offset, LOG_SUFFIX)
        self.fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self.fd).st_size
        self.offset_index = OffsetIndex(
            segment_file(directory, base_offset, INDEX_SUFFIX), base_offset, max_index_size
        )
        self.time_index = TimeIndex(
            segment_file(directory, base_offset, TIME_INDEX_SUFFIX), base_offset, max_index_size
        )
        self.txn_index = TransactionIndex(
            base_offset, segment_file(directory, base_offset, TXN_INDEX_SUFFIX)
        )
        #: Control batches (transaction markers) the last :meth:`recover` found: the loader
        #: rebuilds the ``.txnindex`` only of recovered segments holding some.
        self.recovered_control_batches = 0
        self.created_ms = clock.wall_ms()
        self.bytes_since_last_index_entry = 0
        self._rolling_based_timestamp: int | None = None
        last = self.time_index.last_entry if self.time_index.entries else None
        self.max_timestamp_so_far = last.timestamp if last else -1
        self.offset_of_max_timestamp_so_far = last.offset if last else -1

    # -- writing -------------------------------------------------------------------------

    def append(self, buffer: memoryview, batches: Sequence[RecordBatchView]) -> None:
        """Append ``buffer`` (the given whole batches, already offset-assigned) at the end.

        Raises ``OSError`` if the write fails, or if an index page cannot be reserved (ENOSPC,
        ``franz.storage.index.base``); the file is then cut back to its previous size and the
        indexes to their previous entries, so no part of the append remains (if even that
        fails, recovery cuts it on the next start).
        """
        if not batches:
            return
        last_offset = batches[-1].last_offset
        if last_offset - self.base_offset > _INT32_MAX:
            raise ValueError(
                f"offset {last_offset} does not fit segment {self.base_offset}'s relative offsets"
            )
        start = self.size
        try:
            _pwrite_all(self.fd, buffer, start)
        except OSError:
            self._cut_back(start)
            raise
        before = (
            self.max_timestamp_so_far,
            self.offset_of_max_timestamp_so_far,
            self.bytes_since_last_index_entry,
        )
        position = start
        try:
            for batch in batches:
                if batch.max_timestamp > self.max_timestamp_so_far:
                    self.max_timestamp_so_far = batch.max_timestamp
                    self.offset_of_max_timestamp_so_far = batch.last_offset
                if self.bytes_since_last_index_entry > self.index_interval_bytes:
                    self.offset_index.append(batch.last_offset, position)
                    self.time_index.maybe_append(
                        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far
                    )
                    self.bytes_since_last_index_entry = 0
                size = batch.size_in_bytes
                position += size
                self.bytes_since_last_index_entry += size
        except OSError:
            self.offset_index.truncate_to(batches[0].base_offset)
            self.time_index.truncate_to(batches[0].base_offset)
            (
                self.max_timestamp_so_far,
                self.offset_of_max_timestamp_so_far,
                self.bytes_since_last_index_entry,
            ) = before
            self._cut_back(start)
            raise
        if self._rolling_based_timestamp is None and start == 0:
            self._rolling_based_timestamp = batches[0].max_timestamp
        self.size = position

    def update_txn_index(self, completed: CompletedTxn, last_stable_offset: int) -> None:
        """Index ``completed`` if it was aborted (Kafka's ``LogSegment.updateTxnIndex``); its
        marker is in this segment. Raises ``OSError``."""
        if completed.is_aborted:
            self.txn_index.append(completed.aborted_txn(last_stable_offset))

    def _cut_back(self, size: int) -> None:
        """Cut the log file back to ``size`` after a failed append."""
        try:
            os.ftruncate(self.fd, size)
        except OSError:
            log.exception("could not cut %s back to %d after a failed write", self.log_path, size)

    # -- reading -------------------------------------------------------------------------

    def read_bytes(self, position: int, size: int) -> bytes:
        return os.pread(self.fd, size, position)

    def iter_locations(
        self, start_position: int = 0, end_position: int | None = None
    ) -> Iterator[BatchLocation]:
        """Walk batch headers from ``start_position`` (a batch boundary), reading few bytes.

        Trusts the log (recovery has validated it); stops at ``end_position``/``size`` or at a
        header that does not fit.
        """
        end = self.size if end_position is None else min(end_position, self.size)
        position = start_position
        chunk = b""
        chunk_start = position
        while position + LOG_OVERHEAD <= end:
            rel = position - chunk_start
            if rel < 0 or rel + _WALK.size > len(chunk):
                chunk = os.pread(self.fd, _WALK_READ, position)
                chunk_start, rel = position, 0
                if len(chunk) < _WALK.size:
                    return
            base, length, epoch, _, _, _, delta, _, max_ts = _WALK.unpack_from(chunk, rel)
            size = LOG_OVERHEAD + length
            if length < MIN_BATCH_LENGTH or position + size > end:
                return
            yield BatchLocation(base, base + delta, position, size, max_ts, epoch)
            position += size

    def iter_batch_headers(self, start_position: int = 0) -> Iterator[RecordBatchView]:
        """Walk whole 61-byte batch headers from ``start_position`` (a batch boundary).

        For rebuilding producer state (producerId, producerEpoch, baseSequence): the views
        hold the header only, so their ``raw``/``records_payload``/CRC methods do not apply
        and their ``position`` is within a read buffer, not the file. Control batches are
        read whole (a transaction marker's record is needed). Trusts the log like
        :meth:`iter_locations`; stops at a header that does not fit or is not magic 2.
        """
        end = self.size
        position = start_position
        chunk = b""
        chunk_start = position
        while position + BATCH_HEADER_SIZE <= end:
            rel = position - chunk_start
            if rel < 0 or rel + BATCH_HEADER_SIZE > len(chunk):
                chunk = os.pread(self.fd, _WALK_READ, position)
                chunk_start, rel = position, 0
                if len(chunk) < BATCH_HEADER_SIZE:
                    return
            if chunk[rel + _MAGIC_POSITION] != MAGIC_V2:
                return
            view = RecordBatchView(chunk, rel)
            size = view.size_in_bytes
            if view.batch_length < MIN_BATCH_LENGTH or position + size > end:
                return
            if view.is_control_batch:
                # A transaction marker's record is read (producer state); markers are small.
                view = RecordBatchView(os.pread(self.fd, size, position))
            yield view
            position += size

    def translate_offset(self, offset: int, starting_position: int = 0) -> BatchLocation | None:
        """The first batch whose last offset is >= ``offset``, or None (Kafka's translateOffset)."""
        hint = self.offset_index.lookup(offset).position
        for location in self.iter_locations(max(hint, starting_position)):
            if location.last_offset >= offset:
                return location
        return None

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_message: bool = True,
        starting_position: int = 0,
    ) -> SegmentReadResult | None:
        """Whole batches from the one holding ``start_offset``, at most ``max_size`` bytes.

        ``max_position`` bounds the range (the high watermark's position). With
        ``min_one_message`` the first batch is returned even when it exceeds ``max_size``, so a
        consumer always makes progress (KIP-74). None when no batch holds the offset.
        ``starting_position``: a batch boundary known to be at or before that batch (the walk
        over batch headers starts there when it is past the index's hint).
        """
        first = self.translate_offset(start_offset, starting_position)
        if first is None:
            return None
        limit = self.size if max_position is None else min(max_position, self.size)
        if first.position >= limit:
            return SegmentReadResult(first, first.position, 0)
        target = min(limit, first.position + max_size)
        scan_from = first.position
        entry = self.offset_index.floor_by_position(target)
        if entry is not None and entry.position > scan_from:
            scan_from = entry.position  # every batch before an index entry's batch is whole
        end = scan_from
        for location in self.iter_locations(scan_from, target):
            end = location.end
        if end == first.position and min_one_message:
            end = first.end
        return SegmentReadResult(first, first.position, end - first.position)

    def find_batch_by_timestamp(self, timestamp: int, starting_offset: int) -> BatchLocation | None:
        """The first batch at/after ``starting_offset`` with max timestamp >= ``timestamp``."""
        hint = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(hint.offset, starting_offset)).position
        for location in self.iter_locations(position):
            if location.last_offset >= starting_offset and location.max_timestamp >= timestamp:
                return location
        return None

    def read_next_offset(self) -> int:
        """The offset after this segment's last batch (its base offset if empty)."""
        last = self.offset_index.last_entry
        start = last.position if self.offset_index.entries else 0
        next_offset = self.base_offset
        for location in self.iter_locations(start):
            next_offset = location.last_offset + 1
        return next_offset

    def first_batch(self) -> BatchLocation | None:
        return next(self.iter_locations(0), None)

    # -- time ----------------------------------------------------------------------------

    @property
    def largest_timestamp(self) -> int:
        """The largest record timestamp, or the file's mtime if unknown (Kafka's rule)."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return int(os.fstat(self.fd).st_mtime * 1000)

    def _rolling_timestamp(self) -> int | None:
        if self._rolling_based_timestamp is None and self.size > 0:
            first = self.first_batch()
            self._rolling_based_timestamp = first.max_timestamp if first else None
        return self._rolling_based_timestamp

    def should_roll(
        self,
        *,
        messages_size: int,
        max_timestamp_in_messages: int,
        max_offset_in_messages: int,
        segment_bytes: int,
        segment_ms: int,
        now_ms: int,
    ) -> bool:
        """Kafka's ``shouldRoll``: full by size or index, too old, or offsets out of reach."""
        if self.size > segment_bytes - messages_size:
            return True
        if self.offset_index.is_full() or self.time_index.is_full():
            return True
        if max_offset_in_messages - self.base_offset > _INT32_MAX:
            return True
        if self.size > 0:
            rolling = self._rolling_timestamp()
            if rolling is not None and rolling >= 0:
                waited = max_timestamp_in_messages - rolling
            else:
                waited = now_ms - self.created_ms
            if waited > segment_ms - self.roll_jitter_ms:
                return True
        return False

    # -- recovery and truncation ---------------------------------------------------------

    def sanity_check(self) -> None:
        """O(1) checks of the index files; raises ``CorruptIndexError``."""
        self.offset_index.sanity_check(self.size)
        self.time_index.sanity_check()
        self.txn_index.sanity_check()
        if self.time_index.entries and self.time_index.last_entry.offset < self.base_offset:
            raise CorruptIndexError(f"time index of {self.log_path} points before the segment")

    def recover(self, max_batch_size: int | None = None) -> int:
        """Validate every batch, rebuild both indexes, cut a torn or corrupt tail.

        The ``.txnindex`` is emptied: the loader rebuilds it from the producer state
        (``franz.storage.log_loader``), as Kafka's ``recover`` does with its
        ``ProducerStateManager``.

        Returns the number of bytes cut. The indexes are left preallocated, as for an active
        segment; the loader calls :meth:`on_become_inactive` on older ones. A batch is valid
        when its length is sane (at least the header, within the file, at most
        ``max_batch_size`` if given), its magic is 2, its CRC-32C matches, and its base offset
        follows the previous batch's last offset.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        self.resize_indexes(self.max_index_size)
        self.max_timestamp_so_far = -1
        self.offset_of_max_timestamp_so_far = -1
        self.bytes_since_last_index_entry = 0
        self._rolling_based_timestamp = None
        self.recovered_control_batches = 0
        file_size = os.fstat(self.fd).st_size
        valid = 0
        if file_size:
            with mmap.mmap(self.fd, file_size, access=mmap.ACCESS_READ) as mm:
                valid = self._recover_batches(mm, file_size, max_batch_size)
        truncated = file_size - valid
        if truncated:
            os.ftruncate(self.fd, valid)
        self.size = valid
        return truncated

    def _recover_batches(self, mm: mmap.mmap, file_size: int, max_batch_size: int | None) -> int:
        position = 0
        with memoryview(mm) as view:
            for check in check_batches(view, 0, file_size, max_batch_size=max_batch_size):
                if check.error is not None:
                    log.warning(
                        "found invalid batch at position %d of %s (%s); truncating",
                        check.position,
                        self.log_path,
                        check.error,
                    )
                    return check.position
                if check.max_timestamp > self.max_timestamp_so_far:
                    self.max_timestamp_so_far = check.max_timestamp
                    self.offset_of_max_timestamp_so_far = check.last_offset
                self.recovered_control_batches += check.is_control
                # A rebuilt index can need more entries than the appends made (their byte
                # count restarts at 0 when a segment is reopened), so a small
                # segment.index.bytes may fill up here: the rest of the segment then goes
                # unindexed (lookups walk from the last entry) rather than failing the load.
                if (
                    self.bytes_since_last_index_entry > self.index_interval_bytes
                    and not self.offset_index.is_full()
                    and not self.time_index.is_full()
                ):
                    self.offset_index.append(check.last_offset, check.position)
                    self.time_index.maybe_append(
                        self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far
                    )
                    self.bytes_since_last_index_entry = 0
                self.bytes_since_last_index_entry += check.size
                if self._rolling_based_timestamp is None:
                    self._rolling_based_timestamp = check.max_timestamp
                position = check.end
        return position

    def check_tail(self) -> BatchCheck | None:
        """Validate from the last offset-index entry's batch to the end of the file.

        That range holds the last batch and anything written after it, and it is small (about
        ``index.interval.bytes`` plus a batch), so every start can afford it: a clean shutdown
        proves the broker stopped cleanly, not that nobody appended to the file since. Returns
        the first invalid batch (or unwalkable bytes), or None when the tail is whole. Kafka
        re-reads this range too (``readNextOffset``) but without checking CRCs.
        """
        start = self.offset_index.last_entry.position if self.offset_index.entries else 0
        file_size = os.fstat(self.fd).st_size
        if file_size <= start:
            return None
        with (
            mmap.mmap(self.fd, file_size, access=mmap.ACCESS_READ) as mm,
            memoryview(mm) as view,
        ):
            return next((c for c in check_batches(view, start, file_size) if c.error), None)

    def cut_tail_at(self, position: int) -> int:
        """Cut the file at ``position`` (a batch boundary at or after the last index entry's
        batch); index entries at or past it go too. Returns the number of bytes cut."""
        if self.offset_index.entries and self.offset_index.last_entry.position >= position:
            last_offset = self.offset_index.last_entry.offset
            self.offset_index.truncate_to(last_offset)
            self.time_index.truncate_to(last_offset)
        cut = os.fstat(self.fd).st_size - position
        os.ftruncate(self.fd, position)
        self.size = position
        self.bytes_since_last_index_entry = 0
        self._reload_max_timestamp()
        self.txn_index.truncate_to(self.read_next_offset())
        return cut

    def find_invalid_batches(self) -> list[BatchCheck]:
        """Check every batch (CRC included) without changing anything; the invalid ones.

        Walks past batches whose length can be trusted (CRC or offset-order failures), so one
        flipped byte is reported as one batch and the later good batches are still checked.
        Reads the whole file: for ``log.recovery.verify.all``, never on the fetch path.
        """
        if self.size == 0:
            return []
        with (
            mmap.mmap(self.fd, self.size, access=mmap.ACCESS_READ) as mm,
            memoryview(mm) as view,
        ):
            return [c for c in check_batches(view, 0, self.size) if c.error is not None]

    def truncate_to(self, offset: int) -> int:
        """Remove every batch whose last offset is >= ``offset``; returns bytes removed."""
        location = self.translate_offset(offset)
        if location is None:
            return 0
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        removed = self.size - location.position
        os.ftruncate(self.fd, location.position)
        self.size = location.position
        self.bytes_since_last_index_entry = 0
        if self.size == 0:
            self.created_ms = self._clock.wall_ms()
            self._rolling_based_timestamp = None
        self._reload_max_timestamp()
        return removed

    def _reload_max_timestamp(self) -> None:
        last = self.time_index.last_entry if self.time_index.entries else None
        self.max_timestamp_so_far = last.timestamp if last else -1
        self.offset_of_max_timestamp_so_far = last.offset if last else -1
        start = self.offset_index.lookup(last.offset).position if last else 0
        for location in self.iter_locations(start):
            if location.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = location.max_timestamp
                self.offset_of_max_timestamp_so_far = location.last_offset

    # -- life cycle ----------------------------------------------------------------------

    def resize_indexes(self, max_index_size: int) -> None:
        self.offset_index.resize(max_index_size)
        self.time_index.resize(max_index_size)

    def on_become_inactive(self) -> None:
        """On roll: record the final max timestamp and trim the indexes (Kafka does so)."""
        self._append_final_time_entry()
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    def _append_final_time_entry(self) -> None:
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, skip_full_check=True
            )

    def flush(self) -> None:
        os.fsync(self.fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Clean close: final time-index entry, trimmed indexes, file closed."""
        self._append_final_time_entry()
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()
        os.close(self.fd)
        self.fd = -1

    def close_handlers(self) -> None:
        """Release file handles without touching the files (crash-like, or after rename)."""
        self.offset_index.close_handler()
        self.time_index.close_handler()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def change_file_suffixes(self, old: str, new: str) -> None:
        """Rename the files, e.g. ``""`` -> ``".deleted"`` before an async delete (the
        ``.txnindex`` only if it exists)."""
        self.log_path = _rename(self.log_path, old, new)
        self.offset_index.rename_to(_renamed(self.offset_index.path, old, new))
        self.time_index.rename_to(_renamed(self.time_index.path, old, new))
        self.txn_index.rename_to(_renamed(self.txn_index.path, old, new))

    def update_parent_dir(self, directory: Path) -> None:
        """The partition dir was renamed (Kafka's ``LogSegment.updateParentDir``): the open
        handles stay valid, the paths follow the new dir."""
        self.directory = directory
        self.log_path = directory / self.log_path.name
        self.offset_index.path = directory / self.offset_index.path.name
        self.time_index.path = directory / self.time_index.path.name
        self.txn_index.path = directory / self.txn_index.path.name

    def delete_files(self) -> None:
        self.close_handlers()
        for path in (self.log_path, self.offset_index.path, self.time_index.path):
            path.unlink(missing_ok=True)
        self.txn_index.delete()

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, path={self.log_path})"


def _renamed(path: Path, old: str, new: str) -> Path:
    name = path.name
    if old and not name.endswith(old):
        raise ValueError(f"{path} does not end with {old!r}")
    return path.with_name((name[: -len(old)] if old else name) + new)


def _rename(path: Path, old: str, new: str) -> Path:
    target = _renamed(path, old, new)
    os.replace(path, target)
    return target


def _pwrite_all(fd: int, data: memoryview, position: int) -> None:
    view = data
    while view:
        written = os.pwrite(fd, view, position)
        if written <= 0:
            raise OSError(f"pwrite wrote {written} bytes")
        view = view[written:]
        position += written
