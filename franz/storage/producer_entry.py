"""A producer's entry in a partition and its snapshot form (Kafka's ``ProducerStateEntry``,
``BatchMetadata`` and ``ProducerStateManager``'s snapshot files).

Per producer id seen in the partition's log, a ``ProducerStateEntry`` keeps the producer
epoch, the metadata of its last ``NUM_BATCHES_TO_RETAIN`` (5) appended batches (first/last
sequence, first/last offset, max timestamp), the timestamp of its last batch, the epoch of
the transaction coordinator that wrote its last marker, and the first offset of its ongoing
transaction (``franz.storage.producer_state`` owns the entries).

Snapshots (``<20-digit offset>.snapshot`` in the partition dir, Kafka's
``LogFileUtils.PRODUCER_SNAPSHOT_FILE_SUFFIX``) hold the state *before* that offset. The
format is Kafka's ``PID_SNAPSHOT_MAP_SCHEMA``, version 1, big-endian, checked against
apache/kafka ``storage/.../log/ProducerStateManager.java`` (``PRODUCER_SNAPSHOT_ENTRY_SCHEMA``,
``readSnapshot``, ``writeSnapshot``) and ``core/.../log/ProducerStateManager.scala``::

    Version        int16    1
    Crc            uint32   CRC-32C of every byte after this field
    ProducerEntries         int32 count, then per producer (46 bytes):
      ProducerId              int64
      ProducerEpoch           int16
      LastSequence            int32   last sequence of the last batch (-1: none)
      LastOffset              int64   last offset of the last batch (-1: none)
      OffsetDelta             int32   LastOffset - first offset of that batch
      Timestamp               int64   max timestamp of the last batch
      CoordinatorEpoch        int32   of the last marker's coordinator (-1: none yet)
      CurrentTxnFirstOffset   int64   -1: no ongoing transaction

A snapshot keeps only the *last* batch of each producer (as Kafka's): after a restart,
retries of older batches are recognised only among batches replayed from the log after the
snapshot's offset. Entries are written in producer-id order (Kafka's order is a HashMap's).
Snapshots are written to ``<name>.tmp``, fsynced and renamed, so a crash leaves a whole
snapshot or none; a snapshot that fails its version or CRC check is deleted with a warning
and the state is rebuilt from an older snapshot or the log.
"""

from __future__ import annotations

import os
import struct
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import crc32c

from franz.protocol.records.batch import NO_PRODUCER_EPOCH, NO_SEQUENCE

__all__ = [
    "NUM_BATCHES_TO_RETAIN",
    "PRODUCER_SNAPSHOT_VERSION",
    "BatchMetadata",
    "CorruptSnapshotError",
    "ProducerStateEntry",
    "decode_snapshot",
    "encode_snapshot",
    "read_snapshot",
    "write_snapshot",
]

#: Batches remembered per producer for duplicate detection (Kafka's
#: ``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``; producers keep at most 5 in flight).
NUM_BATCHES_TO_RETAIN: Final = 5
PRODUCER_SNAPSHOT_VERSION: Final = 1

_SEQUENCE_MODULUS: Final = 2**31
_CRC_OFFSET: Final = 2
_ENTRIES_OFFSET: Final = 6
_HEADER = struct.Struct(">hIi")  # Version, Crc, entry count
_ENTRY = struct.Struct(">qhiqiqiq")


class CorruptSnapshotError(Exception):
    """A snapshot file that fails its version, CRC or schema check (Kafka's
    ``CorruptSnapshotException``). Local: it never reaches a client."""


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """One appended batch of a producer (Kafka's ``BatchMetadata``)."""

    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    timestamp: int

    @property
    def offset_delta(self) -> int:
        return self.last_offset - self.first_offset


@dataclass(slots=True)
class ProducerStateEntry:
    """What a partition knows of one producer id (Kafka's ``ProducerStateEntry``).

    ``batches`` holds the last ``NUM_BATCHES_TO_RETAIN`` batches of the current epoch, the
    oldest first; a new epoch clears it.
    """

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    last_timestamp: int = -1
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            deque(self.batches, maxlen=NUM_BATCHES_TO_RETAIN),
            self.last_timestamp,
            self.coordinator_epoch,
            self.current_txn_first_offset,
        )

    def add_batch(
        self,
        epoch: int,
        first_seq: int,
        last_seq: int,
        first_offset: int,
        last_offset: int,
        timestamp: int,
    ) -> None:
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch
        self.batches.append(
            BatchMetadata(first_seq, last_seq, first_offset, last_offset, timestamp)
        )
        self.last_timestamp = timestamp

    def end_txn(self, epoch: int, coordinator_epoch: int, timestamp: int) -> None:
        """An end-transaction marker was appended (Kafka's ``ProducerStateEntry.update``)."""
        if epoch != self.producer_epoch:
            self.batches.clear()
            self.producer_epoch = epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = timestamp
        self.current_txn_first_offset = -1

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The cached batch with exactly this sequence range in this epoch, if any."""
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


# -- the snapshot format ----------------------------------------------------------------------


def encode_snapshot(entries: Iterable[ProducerStateEntry]) -> bytes:
    """The bytes of a version-1 snapshot holding ``entries`` (sorted by producer id)."""
    ordered = sorted(entries, key=lambda e: e.producer_id)
    out = bytearray(_HEADER.size + _ENTRY.size * len(ordered))
    _HEADER.pack_into(out, 0, PRODUCER_SNAPSHOT_VERSION, 0, len(ordered))
    position = _HEADER.size
    for entry in ordered:
        _ENTRY.pack_into(
            out,
            position,
            entry.producer_id,
            entry.producer_epoch,
            entry.last_seq,
            entry.last_data_offset,
            entry.last_offset_delta,
            entry.last_timestamp,
            entry.coordinator_epoch,
            entry.current_txn_first_offset,
        )
        position += _ENTRY.size
    struct.pack_into(">I", out, _CRC_OFFSET, crc32c.crc32c(memoryview(out)[_ENTRIES_OFFSET:]))
    return bytes(out)


def decode_snapshot(data: bytes) -> list[ProducerStateEntry]:
    """Parse a snapshot; ``CorruptSnapshotError`` on a bad version, CRC or length.

    Like Kafka's ``readSnapshot``, an entry with LastOffset >= 0 restores one batch
    (first offset = LastOffset - OffsetDelta, first sequence = LastSequence - OffsetDelta
    wrapped at 2^31, Kafka's ``decrementSequence``); one with LastOffset -1 restores only
    the epoch and timestamp.
    """
    if len(data) < _HEADER.size:
        raise CorruptSnapshotError(f"snapshot is {len(data)} bytes, shorter than its header")
    version, crc, count = _HEADER.unpack_from(data, 0)
    if version != PRODUCER_SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"snapshot contained an unknown file version {version}")
    computed = crc32c.crc32c(memoryview(data)[_ENTRIES_OFFSET:])
    if crc != computed:
        raise CorruptSnapshotError(
            f"snapshot is corrupt (CRC is no longer valid). Stored crc: {crc}. "
            f"Computed crc: {computed}"
        )
    if count < 0 or len(data) != _HEADER.size + count * _ENTRY.size:
        raise CorruptSnapshotError(
            f"snapshot declares {count} entries but holds {len(data) - _HEADER.size} bytes of them"
        )
    entries = []
    for (
        producer_id,
        epoch,
        last_seq,
        last_offset,
        offset_delta,
        timestamp,
        coordinator_epoch,
        txn_first_offset,
    ) in _ENTRY.iter_unpack(memoryview(data)[_HEADER.size :]):
        entry = ProducerStateEntry(
            producer_id,
            epoch,
            last_timestamp=timestamp,
            coordinator_epoch=coordinator_epoch,
            current_txn_first_offset=txn_first_offset,
        )
        if last_offset >= 0:
            first_seq = (last_seq - offset_delta) % _SEQUENCE_MODULUS
            entry.batches.append(
                BatchMetadata(
                    first_seq, last_seq, last_offset - offset_delta, last_offset, timestamp
                )
            )
        entries.append(entry)
    return entries


def read_snapshot(path: Path) -> list[ProducerStateEntry]:
    return decode_snapshot(path.read_bytes())


def write_snapshot(path: Path, entries: Iterable[ProducerStateEntry]) -> None:
    """Write ``path`` atomically: ``<path>.tmp``, fsync, rename, fsync the directory."""
    data = encode_snapshot(entries)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
