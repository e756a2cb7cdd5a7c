"""Idempotent-producer state of one partition (Kafka's ``ProducerStateManager``).

Per producer id seen in the partition's log, a ``ProducerStateEntry`` keeps the producer
epoch, the metadata of its last ``NUM_BATCHES_TO_RETAIN`` (5) appended batches (first/last
sequence, first/last offset, max timestamp) and the timestamp of its last batch. Only batch
headers feed it (producerId, producerEpoch, baseSequence, lastOffsetDelta, maxTimestamp):
records are never decoded.

Appends (``Log.append_as_leader``) check every batch with ``producerId >= 0`` *before*
anything is written, against the state as updated by the earlier batches of the same append
(Kafka's ``ProducerAppendInfo``). Checks by origin (Kafka's ``AppendOrigin``):

- ``CLIENT`` (Produce): duplicate detection, then epoch and sequence:

  * same epoch and (baseSequence, lastSequence) equal to one of the 5 cached batches: a
    *duplicate* (a retried batch). Nothing is appended; the caller acknowledges with the
    cached batch's offsets. When an append mixes duplicates with new batches,
    ``DuplicateSequenceError`` (DUPLICATE_SEQUENCE_NUMBER, 46) refuses all of it. (Kafka
    acknowledges the first duplicate and silently drops the rest; real producers send one
    batch per partition, so neither case arises in practice.)
  * epoch below the entry's: ``InvalidProducerEpochError`` (INVALID_PRODUCER_EPOCH, 47;
    Kafka >= 2.7 answers this rather than PRODUCER_FENCED for data batches).
  * no entry for the producer id and baseSequence != 0: ``UnknownProducerIdError``
    (UNKNOWN_PRODUCER_ID, 59): the producer's state is gone (expired, or its batches were
    deleted). This is the pre-KIP-360 rule; Kafka >= 2.5 accepts any sequence from a
    producer it holds no state for.
  * epoch above the entry's (a bumped epoch): baseSequence must be 0, else
    ``OutOfOrderSequenceError`` (OUT_OF_ORDER_SEQUENCE_NUMBER, 45).
  * same epoch: baseSequence must follow the last sequence, wrapping at Int32.MAX to 0
    (Kafka's ``incrementSequence``), else ``OutOfOrderSequenceError``.
  * baseSequence < 0 with a producer id: ``InvalidRecordError`` (Kafka's ``LogValidator``).

- ``COORDINATOR`` (broker-internal leader appends): the epoch check only.
- ``REPLICATION`` (follower appends, and rebuilding from the log): no checks.

Control batches are skipped, and transactional batches are treated as plain idempotent
ones: transactions are out of scope (``CoordinatorEpoch`` and ``CurrentTxnFirstOffset`` are
carried through snapshots, written as -1 otherwise).

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
      CoordinatorEpoch        int32   -1
      CurrentTxnFirstOffset   int64   -1: no ongoing transaction

A snapshot keeps only the *last* batch of each producer (as Kafka's): after a restart,
retries of older batches are recognised only among batches replayed from the log after the
snapshot's offset. Entries are written in producer-id order (Kafka's order is a HashMap's).
Snapshots are written to ``<name>.tmp``, fsynced and renamed, so a crash leaves a whole
snapshot or none; a snapshot that fails its version or CRC check is deleted with a warning
and the state is rebuilt from an older snapshot or the log.

Expiration: an entry whose last timestamp is ``producer.id.expiration.ms`` (Kafka default
86400000, one day) or more in the past is removed by ``remove_expired_producers`` (called
every ``producer.id.expiration.check.interval.ms``, default 600000) and skipped when a
snapshot is loaded. Entries of producers whose batches were all deleted by retention are
kept until they expire (Kafka >= 2.4, KIP-360).

Not thread-safe: owned by its ``Log``.
"""

from __future__ import annotations

import bisect
import enum
import logging
import os
import struct
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Final

import crc32c

from franz.errors import (
    DuplicateSequenceError,
    InvalidProducerEpochError,
    InvalidRecordError,
    OutOfOrderSequenceError,
    UnknownProducerIdError,
)
from franz.protocol.records.batch import NO_PRODUCER_EPOCH, NO_SEQUENCE, RecordBatchView
from franz.storage.files import SNAPSHOT_SUFFIX, offset_from_file_name, segment_file

__all__ = [
    "DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS",
    "DEFAULT_PRODUCER_ID_EXPIRATION_MS",
    "NUM_BATCHES_TO_RETAIN",
    "PRODUCER_SNAPSHOT_VERSION",
    "AppendOrigin",
    "BatchMetadata",
    "CorruptSnapshotError",
    "ProducerAppendInfo",
    "ProducerStateEntry",
    "ProducerStateManager",
    "decode_snapshot",
    "encode_snapshot",
    "read_snapshot",
    "write_snapshot",
]

log = logging.getLogger(__name__)

#: Batches remembered per producer for duplicate detection (Kafka's
#: ``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``; producers keep at most 5 in flight).
NUM_BATCHES_TO_RETAIN: Final = 5
PRODUCER_SNAPSHOT_VERSION: Final = 1
#: ``producer.id.expiration.ms`` and ``producer.id.expiration.check.interval.ms`` defaults.
DEFAULT_PRODUCER_ID_EXPIRATION_MS: Final = 86_400_000
DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS: Final = 600_000

_INT32_MAX: Final = 2**31 - 1
_SEQUENCE_MODULUS: Final = 2**31
_CRC_OFFSET: Final = 2
_ENTRIES_OFFSET: Final = 6
_HEADER = struct.Struct(">hIi")  # Version, Crc, entry count
_ENTRY = struct.Struct(">qhiqiqiq")


class CorruptSnapshotError(Exception):
    """A snapshot file that fails its version, CRC or schema check (Kafka's
    ``CorruptSnapshotException``). Local: it never reaches a client."""


class AppendOrigin(enum.Enum):
    """Who appends, hence how much is checked (Kafka's ``AppendOrigin``)."""

    CLIENT = "client"
    COORDINATOR = "coordinator"
    REPLICATION = "replication"


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

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        """The cached batch with exactly this sequence range in this epoch, if any."""
        if epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


@dataclass(frozen=True, slots=True)
class ProducerAppendInfo:
    """The outcome of checking one append (Kafka's ``ProducerAppendInfo``).

    ``updated``: the entries as they will be once the append is written (private copies;
    :meth:`ProducerStateManager.update` installs them). ``duplicates``: non-empty when every
    batch of the append was a duplicate; they are the cached batches, in request order.
    """

    updated: dict[int, ProducerStateEntry]
    duplicates: tuple[BatchMetadata, ...] = ()


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


class ProducerStateManager:
    """The producer entries of one partition and its ``.snapshot`` files."""

    def __init__(
        self,
        directory: Path,
        name: str,
        *,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    ) -> None:
        self.dir = directory
        self.name = name
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        self._snapshots: list[int] = self._list_snapshots()

    # -- state ---------------------------------------------------------------------------

    @property
    def producers(self) -> Mapping[int, ProducerStateEntry]:
        """The active producers, by producer id (read-only view)."""
        return MappingProxyType(self._producers)

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    # -- appends -------------------------------------------------------------------------

    def prepare_append(
        self, batches: Sequence[RecordBatchView], origin: AppendOrigin
    ) -> ProducerAppendInfo:
        """Check ``batches`` (offsets already assigned) in order; nothing is changed yet.

        Raises the errors listed in the module docstring. Batches without a producer id and
        control batches pass through.
        """
        updated: dict[int, ProducerStateEntry] = {}
        duplicates: list[BatchMetadata] = []
        fresh = 0
        for batch in batches:
            producer_id = batch.producer_id
            if producer_id < 0 or batch.is_control_batch:
                fresh += 1
                continue
            entry = updated.get(producer_id)
            if entry is None:
                entry = self._producers.get(producer_id)
            epoch = batch.producer_epoch
            first_seq = batch.base_sequence
            if origin is AppendOrigin.CLIENT:
                if first_seq < 0:
                    raise InvalidRecordError(
                        f"invalid sequence number {first_seq} in a record batch with "
                        f"producerId {producer_id} for {self.name}"
                    )
                last_seq = batch.last_sequence
                if entry is not None:
                    duplicate = entry.find_duplicate(epoch, first_seq, last_seq)
                    if duplicate is not None:
                        duplicates.append(duplicate)
                        continue
                self._check_sequence(entry, producer_id, epoch, first_seq, batch.base_offset)
            elif origin is AppendOrigin.COORDINATOR and entry is not None:
                self._check_epoch(entry, epoch, batch.base_offset)
            working = updated.get(producer_id)
            if working is None:
                working = entry.copy() if entry is not None else ProducerStateEntry(producer_id)
                updated[producer_id] = working
            working.add_batch(
                epoch,
                first_seq,
                batch.last_sequence,
                batch.base_offset,
                batch.last_offset,
                batch.max_timestamp,
            )
            fresh += 1
        if duplicates and fresh:
            raise DuplicateSequenceError(
                f"an append to {self.name} mixes {len(duplicates)} duplicate batch(es) with "
                f"{fresh} new one(s); producers send one batch per partition"
            )
        return ProducerAppendInfo(updated, tuple(duplicates))

    def _check_epoch(self, entry: ProducerStateEntry, epoch: int, offset: int) -> None:
        if epoch < entry.producer_epoch:
            raise InvalidProducerEpochError(
                f"epoch of producer {entry.producer_id} at offset {offset} in {self.name} is "
                f"{epoch}, which is smaller than the last seen epoch {entry.producer_epoch}"
            )

    def _check_sequence(
        self,
        entry: ProducerStateEntry | None,
        producer_id: int,
        epoch: int,
        first_seq: int,
        offset: int,
    ) -> None:
        if entry is None:
            if first_seq != 0:
                raise UnknownProducerIdError(
                    f"found no record of producerId {producer_id} on {self.name}: it may have "
                    f"expired or its batches were deleted; first sequence {first_seq} is not 0"
                )
            return
        self._check_epoch(entry, epoch, offset)
        if epoch != entry.producer_epoch:
            if first_seq != 0:
                raise OutOfOrderSequenceError(
                    f"invalid sequence number for new epoch of producer {producer_id} at offset "
                    f"{offset} in {self.name}: {epoch} (request epoch), {first_seq} (seq. "
                    f"number), {entry.producer_epoch} (current producer epoch)"
                )
        elif not _in_sequence(entry.last_seq, first_seq):
            raise OutOfOrderSequenceError(
                f"out of order sequence number for producer {producer_id} at offset {offset} "
                f"in {self.name}: {first_seq} (incoming seq. number), {entry.last_seq} "
                "(current end sequence number)"
            )

    def update(self, info: ProducerAppendInfo) -> None:
        """Install the entries of a checked append once it is written."""
        self._producers.update(info.updated)

    def replay(self, batches: Iterable[RecordBatchView]) -> int:
        """Apply batch headers without checks (replication, rebuilding from the log).

        Returns how many batches carried a producer id.
        """
        producers = self._producers
        applied = 0
        for batch in batches:
            producer_id = batch.producer_id
            if producer_id < 0 or batch.is_control_batch:
                continue
            entry = producers.get(producer_id)
            if entry is None:
                entry = producers[producer_id] = ProducerStateEntry(producer_id)
            entry.add_batch(
                batch.producer_epoch,
                batch.base_sequence,
                batch.last_sequence,
                batch.base_offset,
                batch.last_offset,
                batch.max_timestamp,
            )
            applied += 1
        return applied

    # -- expiration ----------------------------------------------------------------------

    def _is_expired(self, entry: ProducerStateEntry, now_ms: int) -> bool:
        return now_ms - entry.last_timestamp >= self.producer_id_expiration_ms

    def remove_expired_producers(self, now_ms: int) -> int:
        """Drop entries idle for ``producer.id.expiration.ms``; returns how many."""
        expired = [pid for pid, e in self._producers.items() if self._is_expired(e, now_ms)]
        for producer_id in expired:
            del self._producers[producer_id]
        return len(expired)

    # -- snapshots -----------------------------------------------------------------------

    @property
    def snapshot_offsets(self) -> list[int]:
        return list(self._snapshots)

    @property
    def latest_snapshot_offset(self) -> int | None:
        return self._snapshots[-1] if self._snapshots else None

    def snapshot_path(self, offset: int) -> Path:
        return segment_file(self.dir, offset, SNAPSHOT_SUFFIX)

    def take_snapshot(self, offset: int) -> Path | None:
        """Write the current state as ``<offset>.snapshot`` if ``offset`` is past the latest
        snapshot (0 when there is none), as Kafka's ``takeSnapshot`` ("if not a new offset,
        then it is not worth taking another snapshot"): an empty log gets none, so stopping
        a broker with thousands of empty partitions costs no fsync for each.

        ``offset`` must be the log end offset (the state describes everything below it).
        Raises ``OSError``.
        """
        if offset <= (self._snapshots[-1] if self._snapshots else 0):
            return None
        path = self.snapshot_path(offset)
        write_snapshot(path, self._producers.values())
        bisect.insort(self._snapshots, offset)
        log.debug("wrote a producer snapshot of %s at offset %d", self.name, offset)
        return path

    def truncate_and_reload(self, log_start_offset: int, log_end_offset: int, now_ms: int) -> int:
        """Forget the state; delete snapshots above ``log_end_offset``; load the latest.

        Returns the offset from which the log must be replayed: the loaded snapshot's
        offset, or ``log_start_offset`` when no snapshot is usable. Corrupt snapshots are
        deleted (with a warning) and the next older one is tried.
        """
        self._producers.clear()
        for offset in [o for o in self._snapshots if o > log_end_offset]:
            self._delete_snapshot(offset)
        while self._snapshots:
            offset = self._snapshots[-1]
            path = self.snapshot_path(offset)
            try:
                entries = read_snapshot(path)
            except (CorruptSnapshotError, FileNotFoundError) as exc:
                log.warning(
                    "failed to load the producer snapshot %s of %s: %s; deleting it",
                    path,
                    self.name,
                    exc,
                )
                self._delete_snapshot(offset)
                continue
            for entry in entries:
                if not self._is_expired(entry, now_ms):
                    self._producers[entry.producer_id] = entry
            return offset
        return log_start_offset

    def truncate_fully(self) -> None:
        """Forget every producer and delete every snapshot (the log restarts empty)."""
        self._producers.clear()
        for snapshot in list(self._snapshots):
            self._delete_snapshot(snapshot)

    def delete_snapshots_before(self, offset: int) -> int:
        """Delete snapshots below ``offset`` except the latest one; returns how many."""
        doomed = [o for o in self._snapshots[:-1] if o < offset]
        for snapshot in doomed:
            self._delete_snapshot(snapshot)
        return len(doomed)

    def _delete_snapshot(self, offset: int) -> None:
        self.snapshot_path(offset).unlink(missing_ok=True)
        self._snapshots.remove(offset)

    def _list_snapshots(self) -> list[int]:
        offsets = []
        if self.dir.is_dir():
            for path in self.dir.iterdir():
                if path.name.endswith(SNAPSHOT_SUFFIX):
                    try:
                        offsets.append(offset_from_file_name(path.name))
                    except ValueError:
                        continue
        return sorted(offsets)

    def __repr__(self) -> str:
        return (
            f"ProducerStateManager({self.name}, producers={len(self._producers)}, "
            f"snapshots={self._snapshots})"
        )


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
