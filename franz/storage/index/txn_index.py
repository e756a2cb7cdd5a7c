"""The transaction index: a segment's aborted transactions (Kafka's ``TransactionIndex``).

One ``<baseOffset>.txnindex`` file per segment, next to its ``.log``. An entry is appended
when an ABORT marker is written into the segment; the entries are the transactions *whose
markers* lie in this segment (a transaction may start in an earlier one). A READ_COMMITTED
fetch reads them to tell the consumer which producers' records to drop (the Fetch response's
``AbortedTransactions``, KIP-98). Commits are not indexed.

File format (Kafka's ``AbortedTxn``), 34-byte big-endian entries, no header, no checksum::

    offset  size  field
         0     2  version           int16, 0
         2     8  producerId        int64
        10     8  firstOffset       int64  the transaction's first offset in the partition
        18     8  lastOffset        int64  the offset of its ABORT marker
        26     8  lastStableOffset  int64  the partition's LSO once the marker was written

Entries are in append order, ``lastOffset`` strictly increasing. Unlike the offset and time
indexes, the file is neither preallocated nor memory-mapped: it is created by the first
append, grows by one entry per abort, and is read with plain file I/O. Like Kafka, reads
ignore a trailing partial entry; :meth:`TransactionIndex.sanity_check` reports it. The index
can always be rebuilt from the log (Kafka's log recovery re-collects aborted transactions).

Not thread-safe: one writer (the partition's log), readers on the same thread. The entries
are cached in memory once read (a segment holds few aborts); every change goes through this
object, which keeps the cache and the file in step.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Final, NamedTuple

from franz.storage.index.base import CorruptIndexError

__all__ = [
    "ABORTED_TXN_SIZE",
    "ABORTED_TXN_VERSION",
    "AbortedTxn",
    "TransactionIndex",
    "TxnIndexSearchResult",
]

#: ``AbortedTxn.TOTAL_SIZE``.
ABORTED_TXN_SIZE: Final = 34
#: ``AbortedTxn.CURRENT_VERSION``.
ABORTED_TXN_VERSION: Final = 0

_ENTRY = struct.Struct(">hqqqq")


class AbortedTxn(NamedTuple):
    """One ``.txnindex`` entry (Kafka's ``AbortedTxn``)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int
    version: int = ABORTED_TXN_VERSION

    def encode(self) -> bytes:
        """The 34-byte entry."""
        return _ENTRY.pack(
            self.version,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )

    @classmethod
    def decode(cls, buffer: bytes | bytearray | memoryview, position: int = 0) -> AbortedTxn:
        version, producer_id, first, last, lso = _ENTRY.unpack_from(buffer, position)
        return cls(producer_id, first, last, lso, version)

    def as_aborted_transaction(self) -> tuple[int, int]:
        """``(producerId, firstOffset)``: the Fetch response's ``AbortedTransaction``."""
        return self.producer_id, self.first_offset


class TxnIndexSearchResult(NamedTuple):
    """``TxnIndexSearchResult``: what one segment's index contributes to a fetch.

    ``is_complete`` is true when an entry's ``lastStableOffset`` reaches the fetch's upper
    bound: every transaction that could overlap the range had ended by then, so later
    segments cannot add any and the search stops (``UnifiedLog.collectAbortedTransactions``).
    """

    aborted_transactions: list[AbortedTxn]
    is_complete: bool


class TransactionIndex:
    """A segment's ``.txnindex`` (Kafka's ``TransactionIndex``).

    ``start_offset`` is the segment's base offset (used only by :meth:`sanity_check`). The
    file need not exist: it is created by the first :meth:`append`.

    One deliberate difference from Kafka: Kafka starts with no "last offset" even when the
    file holds entries, so its monotonicity check in ``append`` only covers entries appended
    since the index was opened. Here the check also covers the entries already in the file
    (stricter: it refuses only appends that would make the file unordered).
    """

    __slots__ = ("_entries", "_last_offset", "path", "start_offset")

    def __init__(self, start_offset: int, path: Path) -> None:
        self.start_offset = start_offset
        self.path = path
        self._entries: list[AbortedTxn] | None = None
        self._last_offset: int | None = None

    # -- reading ---------------------------------------------------------------------------

    def _load(self) -> list[AbortedTxn]:
        """The entries, read once from the file (Kafka's ``iterable``).

        Raises ``CorruptIndexError`` for an entry whose version is above 0 (Kafka's
        ``KafkaException``, "Unexpected aborted transaction version"). A trailing partial
        entry is ignored, as Kafka's iterator ignores it. (Kafka's ``AbortedTxn.version()``
        reads only the int16's first byte; here the whole int16 is read. Both see 0 in every
        file either writes.)
        """
        if self._entries is not None:
            return self._entries
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        entries = []
        for position in range(0, len(data) - ABORTED_TXN_SIZE + 1, ABORTED_TXN_SIZE):
            txn = AbortedTxn.decode(data, position)
            if txn.version > ABORTED_TXN_VERSION:
                raise CorruptIndexError(
                    f"unexpected aborted transaction version {txn.version} in transaction "
                    f"index {self.path.absolute()}, current version is {ABORTED_TXN_VERSION}"
                )
            entries.append(txn)
        self._entries = entries
        if self._last_offset is None and entries:
            self._last_offset = entries[-1].last_offset
        return entries

    def __iter__(self) -> Iterator[AbortedTxn]:
        return iter(list(self._load()))

    def __len__(self) -> int:
        return len(self._load())

    def is_empty(self) -> bool:
        """Whether the index holds no entry, a missing file included (``isEmpty``)."""
        return not self._load()

    def all_aborted_txns(self) -> list[AbortedTxn]:
        """Every entry, in file order (``allAbortedTxns``)."""
        return list(self._load())

    @property
    def size_in_bytes(self) -> int:
        """The file's length (0 when it does not exist)."""
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def collect_aborted_txns(
        self, fetch_offset: int, upper_bound_offset: int
    ) -> TxnIndexSearchResult:
        """The aborted transactions overlapping ``[fetch_offset, upper_bound_offset)``.

        Kafka's ``collectAbortedTxns``: an entry overlaps when ``lastOffset >= fetch_offset``
        and ``firstOffset < upper_bound_offset``. Entries are read in file order; at the first
        entry whose ``lastStableOffset >= upper_bound_offset`` (that entry included if it
        overlaps) the search stops with ``is_complete`` true. Otherwise every entry is read
        and ``is_complete`` is false: the caller goes on to the next segment.
        """
        aborted: list[AbortedTxn] = []
        for txn in self._load():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                aborted.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(aborted, True)
        return TxnIndexSearchResult(aborted, False)

    # -- writing ---------------------------------------------------------------------------

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry at the end of the file, creating it if needed (``append``).

        Raises ``ValueError`` (Kafka's ``IllegalArgumentException``) unless ``lastOffset`` is
        greater than the last entry's. The write is not fsynced; see :meth:`flush`. Like
        Kafka's, it lands at the end of the file, after a torn entry if there is one (which
        :meth:`sanity_check` reports; the loader then rebuilds the index).
        """
        self._load()
        if self._last_offset is not None and self._last_offset >= txn.last_offset:
            raise ValueError(
                "the last offset of appended transactions must increase sequentially, but "
                f"{txn.last_offset} is not greater than current last offset "
                f"{self._last_offset} of index {self.path.absolute()}"
            )
        data = txn.encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            written = os.write(fd, data)
        finally:
            os.close(fd)
        if written != len(data):
            raise OSError(f"wrote {written} of {len(data)} bytes to {self.path}")
        assert self._entries is not None
        self._entries.append(txn)
        self._last_offset = txn.last_offset

    def truncate_to(self, offset: int) -> None:
        """Remove the entries whose ``lastOffset >= offset`` and every entry after the first
        of them (``truncateTo``; entries are in ``lastOffset`` order, so the same thing in a
        well-formed file). Nothing changes if no entry reaches ``offset``."""
        entries = self._load()
        for slot, txn in enumerate(entries):
            if txn.last_offset >= offset:
                os.truncate(self.path, slot * ABORTED_TXN_SIZE)
                del entries[slot:]
                self._last_offset = entries[-1].last_offset if entries else None
                return

    def reset(self) -> None:
        """Remove every entry (``reset``): the file, if it exists, is truncated to 0 bytes."""
        if self.path.exists():
            os.truncate(self.path, 0)
        self._entries = []
        self._last_offset = None

    def flush(self) -> None:
        """fsync the file if it exists (Kafka's ``flush``: ``FileChannel.force(true)``)."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Nothing is held open between calls; drops the cache."""
        self._entries = None

    def delete(self) -> bool:
        """Delete the file; whether it existed (Kafka's ``deleteIfExists``)."""
        self._entries = []
        self._last_offset = None
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True

    def rename_to(self, path: Path) -> None:
        """Rename the file if it exists, and use ``path`` from now on (``renameTo``)."""
        try:
            if self.path.exists():
                os.replace(self.path, path)
        finally:
            self.path = path

    # -- checks ----------------------------------------------------------------------------

    def sanity_check(self) -> None:
        """Raise ``CorruptIndexError`` for an index the loader must rebuild.

        Kafka's ``sanityCheck`` (an entry whose ``lastOffset`` is below the segment's base
        offset), plus a check Kafka leaves to its iterator: the file length is a whole number
        of 34-byte entries (a torn append). Also raises for an entry with an unknown version.
        """
        size = self.size_in_bytes
        if size % ABORTED_TXN_SIZE:
            raise CorruptIndexError(
                f"transaction index {self.path.absolute()} has length {size}, "
                f"not a multiple of {ABORTED_TXN_SIZE}"
            )
        for txn in self._load():
            if txn.last_offset < self.start_offset:
                raise CorruptIndexError(
                    f"last offset of aborted transaction {txn} in index "
                    f"{self.path.absolute()} is less than start offset {self.start_offset}"
                )

    def __repr__(self) -> str:
        return f"TransactionIndex(path={str(self.path)!r}, start_offset={self.start_offset})"
