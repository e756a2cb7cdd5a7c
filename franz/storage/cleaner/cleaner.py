"""One cleaning round of one partition (Kafka's ``Cleaner.doClean``), run by a cleaner thread.

Input: a :class:`CleaningJob` built on the event loop (the non-active segments below the
first uncleanable offset, as duplicate descriptors with their sizes, and the settings).
Output: a :class:`CleaningResult` naming the ``.cleaned`` segments written; the loop swaps
them in (``LogCleaner``, ``Log.replace_segments``). Nothing here touches a ``Log``.

The round, as Kafka's:

1. **Offset map** over the dirty section ``[firstDirtyOffset, firstUncleanableOffset)``
   (the upper bound is the base offset of the segment holding the first uncleanable offset,
   Kafka's ``LogToClean.firstUncleanableOffset``): key -> last offset (``OffsetMap``);
   control batches, batches of aborted transactions (``collectAbortedTransactions``,
   ``CleanedTransactionMetadata``) and keyless records are not mapped. If the map fills, the
   round stops at the last whole batch mapped: ``endOffset = map.latestOffset + 1`` and the
   rest stays dirty for the next round.
2. **Groups**: the segments from the log start up to ``endOffset`` are grouped so that each
   group's logs fit ``segment.bytes`` and its indexes ``segment.index.bytes`` and its offsets
   an int32 from the group's base (``groupSegmentsBySize``).
3. **Recopy** each group into one ``<first base>.log.cleaned``. Per batch
   (``MemoryRecords.filterTo`` with the cleaner's ``RecordFilter``, ``Cleaner.cleanInto``):

   - **transactions** (``franz.storage.cleaner.txn_metadata``, one state per round carried
     across groups): a data batch of an aborted transaction loses all its records; a
     control batch keeps its record, unless it is *discardable* (its transaction has no
     record left: an ABORT with no batch of its transaction seen, a COMMIT with no
     transactional batch of its producer since the previous marker) **and** its delete
     horizon has passed. A discardable marker without a horizon gets one, as a tombstone
     does (below). An ABORT marker kept because some of its data is kept goes into the
     cleaned segment's ``.txnindex``;
   - a record is kept iff its offset is past the map, or it has a key whose mapped offset is
     not above its own; a tombstone (null value) additionally only while its batch has no
     delete horizon or ``now < horizon``; a record without a key is dropped (Kafka counts it
     as invalid: compacted topics should refuse them at produce);
   - a batch whose records are all kept and that needs no new delete horizon is copied
     byte for byte;
   - otherwise it is rebuilt with the kept records: same base offset, same
     ``lastOffsetDelta`` (the batch's last offset, hence the producer's last sequence, is
     preserved), same codec, producer id/epoch/base sequence, leader epoch, timestamp type
     and transactional flag, fresh CRC;
   - **delete horizon (KIP-534, Kafka >= 3.1)**: a rebuilt or copied batch that keeps a
     tombstone and has no horizon yet gets ``deleteHorizonMs = now + delete.retention.ms``:
     attributes bit 6 set and ``baseTimestamp`` = the horizon (record timestamps stay
     right, their deltas are rewritten). A later round drops those tombstones once the
     horizon has passed;
   - a batch left with no records is kept as an empty batch (Kafka's ``writeEmptyHeader``:
     header only, ``recordsCount`` 0, last offset and max timestamp kept) when it holds the
     last record of a producer the partition still tracks (``isBatchLastRecordOfProducer``:
     the batch ending at the producer's last data offset, or, for a producer with no data
     batch, a marker of its current epoch), so a restart rebuilds that producer's sequence
     and epoch, or when it is the last batch of the round (``nextOffset ==
     upperBoundOffsetOfCleaningRound``, so the round's last offset is not lost); otherwise
     it is dropped.

Offsets are preserved: a cleaned log has gaps, never renumbered records.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from franz.errors import CorruptRecordError
from franz.protocol.records.batch import RecordBatchView, TimestampType
from franz.protocol.records.inflated import Record, RecordBatchBuilder, iter_records
from franz.storage.cleaner.offset_map import OffsetMap
from franz.storage.cleaner.segment_io import (
    CleanedSegmentWriter,
    SegmentReadError,
    Throttler,
    iter_segment_batches,
    remove_cleaned_files,
)
from franz.storage.cleaner.txn_metadata import CleanedTransactionMetadata
from franz.storage.files import TopicPartition
from franz.storage.index.txn_index import AbortedTxn

__all__ = [
    "CleanedGroup",
    "Cleaner",
    "CleanerStats",
    "CleaningAbortedError",
    "CleaningJob",
    "CleaningResult",
    "SegmentReadError",
    "SourceSegment",
    "group_segments_by_size",
]

log = logging.getLogger(__name__)

_INT32_MAX = 2**31 - 1


class CleaningAbortedError(Exception):
    """The loop aborted this round (topic deleted, shutdown; Kafka's
    ``LogCleaningAbortedException``)."""


@dataclass(frozen=True, slots=True)
class SourceSegment:
    """A non-active segment as the loop saw it when the round began."""

    base_offset: int
    fd: int  # a dup owned by the job
    size: int
    offset_index_bytes: int
    time_index_bytes: int
    mtime_ns: int
    #: The aborted transactions overlapping the segment's whole range (Kafka's
    #: ``collectAbortedTransactions(base, next segment's base)`` in ``cleanSegments``).
    aborted_txns: tuple[AbortedTxn, ...] = ()


@dataclass(slots=True)
class CleaningJob:
    """Everything a cleaner thread needs for one round; owns its descriptors."""

    topic_partition: TopicPartition
    dir_fd: int
    directory: Path
    segments: tuple[SourceSegment, ...]
    first_dirty_offset: int
    #: The round's upper bound: the base offset of the segment holding the first uncleanable
    #: offset (Kafka's ``LogToClean.firstUncleanableOffset``, ``upperBoundOffsetOfCleaningRound``).
    first_uncleanable_offset: int
    now_ms: int
    delete_retention_ms: int
    segment_bytes: int
    max_index_bytes: int
    index_interval_bytes: int
    #: Kafka's ``lastRecordsOfActiveProducers``: producer id -> (last data offset or -1,
    #: producer epoch).
    active_producers: Mapping[int, tuple[int, int]]
    max_map_entries: int
    #: The aborted transactions of the dirty section (for the offset map).
    map_aborted_txns: tuple[AbortedTxn, ...] = ()
    io_buffer_size: int = 512 * 1024
    io_max_bytes_per_second: float = float("inf")
    abort: threading.Event = field(default_factory=threading.Event)
    _closed: bool = False

    def check_aborted(self) -> None:
        if self.abort.is_set():
            raise CleaningAbortedError(f"cleaning of {self.topic_partition} was aborted")

    def close(self) -> None:
        """Close the duplicated descriptors (idempotent)."""
        if self._closed:
            return
        self._closed = True
        for segment in self.segments:
            os.close(segment.fd)
        os.close(self.dir_fd)


@dataclass(slots=True)
class CleanerStats:
    """Kafka's ``CleanerStats`` figures for one round."""

    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_records_read: int = 0
    records_read: int = 0
    records_retained: int = 0
    invalid_records: int = 0
    tombstones_removed: int = 0
    buffer_utilization: float = 0.0
    start_s: float = field(default_factory=time.monotonic)
    map_done_s: float = 0.0
    end_s: float = 0.0

    @property
    def elapsed_s(self) -> float:
        return max(self.end_s - self.start_s, 1e-9)


@dataclass(frozen=True, slots=True)
class CleanedGroup:
    """One ``<base_offset>.*.cleaned`` segment replacing the segments ``replaced``."""

    base_offset: int
    replaced: tuple[int, ...]  # base offsets of the source segments, in order
    size: int


@dataclass(slots=True)
class CleaningResult:
    job: CleaningJob
    end_offset: int = -1
    groups: list[CleanedGroup] = field(default_factory=list)
    stats: CleanerStats = field(default_factory=CleanerStats)
    #: The earliest delete horizon of a batch kept with tombstones (-1: none).
    earliest_delete_horizon_ms: int = -1
    aborted: bool = False
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return not self.aborted and self.error is None


def group_segments_by_size(
    segments: Sequence[SourceSegment],
    max_size: int,
    max_index_size: int,
    first_uncleanable_offset: int,
) -> list[list[SourceSegment]]:
    """Kafka's ``groupSegmentsBySize``: consecutive segments whose logs fit ``segment.bytes``,
    whose indexes fit ``segment.index.bytes`` and whose offsets fit an int32 from the group's
    base (an empty segment skips the offset check)."""
    groups: list[list[SourceSegment]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        log_size = segments[i].size
        index_size = segments[i].offset_index_bytes
        time_index_size = segments[i].time_index_bytes
        i += 1
        while i < len(segments):
            seg = segments[i]
            last_offset = (
                segments[i + 1].base_offset - 1
                if i + 1 < len(segments)
                else first_uncleanable_offset - 1
            )
            if not (
                log_size + seg.size <= max_size
                and index_size + seg.offset_index_bytes <= max_index_size
                and time_index_size + seg.time_index_bytes <= max_index_size
                and (seg.size == 0 or last_offset - group[0].base_offset <= _INT32_MAX)
            ):
                break
            group.append(seg)
            log_size += seg.size
            index_size += seg.offset_index_bytes
            time_index_size += seg.time_index_bytes
            i += 1
        groups.append(group)
    return groups


class Cleaner:
    """Runs :class:`CleaningJob` s with one offset map (one per cleaner thread)."""

    def __init__(self, max_map_entries: int) -> None:
        self.offset_map = OffsetMap(max_map_entries)

    def clean(self, job: CleaningJob) -> CleaningResult:
        """Run one round; never raises (the result carries an abort or an error).

        The job's descriptors are closed on return. On abort or error every ``.cleaned``
        file written is removed.
        """
        result = CleaningResult(job)
        throttler = Throttler(job.io_max_bytes_per_second, job.abort)
        try:
            if self.offset_map.max_entries != job.max_map_entries:
                self.offset_map = OffsetMap(job.max_map_entries)
            self._build_offset_map(job, result.stats, throttler)
            result.end_offset = self.offset_map.latest_offset + 1
            result.stats.map_done_s = time.monotonic()
            cleanable = [s for s in job.segments if s.base_offset < result.end_offset]
            groups = group_segments_by_size(
                cleanable, job.segment_bytes, job.max_index_bytes, job.first_uncleanable_offset
            )
            txn = CleanedTransactionMetadata()  # one per round, across its groups
            for group in groups:
                result.groups.append(self._clean_group(job, group, result, throttler, txn))
            result.stats.buffer_utilization = self.offset_map.utilization
        except CleaningAbortedError:
            result.aborted = True
        except Exception as exc:  # reported to the loop, which logs it
            result.error = exc
        finally:
            result.stats.end_s = time.monotonic()
            if not result.ok:
                for cleaned in result.groups:
                    remove_cleaned_files(job.dir_fd, cleaned.base_offset)
                result.groups.clear()
            job.close()
        return result

    # -- step 1: the offset map ----------------------------------------------------------------

    def _build_offset_map(
        self, job: CleaningJob, stats: CleanerStats, throttler: Throttler
    ) -> None:
        omap = self.offset_map
        omap.clear()
        start, end = job.first_dirty_offset, job.first_uncleanable_offset
        omap.latest_offset = start - 1
        txn = CleanedTransactionMetadata(job.map_aborted_txns)
        dirty = [
            (seg, nxt)
            for seg, nxt in zip(job.segments, [*job.segments[1:], None], strict=True)
            if seg.base_offset < end and (nxt is None or nxt.base_offset > start)
        ]
        for segment, _ in dirty:
            for _, batch in iter_segment_batches(segment.fd, segment.size, job.io_buffer_size):
                job.check_aborted()
                if batch.last_offset < start:
                    continue
                if batch.base_offset >= end:
                    return
                _check_crc(batch, segment)
                stats.map_bytes_read += batch.size_in_bytes
                throttler.maybe_throttle(batch.size_in_bytes)
                if batch.is_control_batch:
                    txn.on_control_batch_read(batch)
                    stats.map_records_read += 1
                elif txn.on_batch_read(batch):  # aborted: nothing of it to map
                    stats.map_records_read += batch.records_count
                else:
                    for record in iter_records(batch):
                        if record.offset >= end:
                            break
                        stats.map_records_read += 1
                        if record.key is None or record.offset < start:
                            continue
                        if omap.is_full and omap.get(record.key) < 0:
                            return  # full: this batch stays dirty
                        omap.put(record.key, record.offset)
                omap.update_latest_offset(min(batch.last_offset, end - 1))

    # -- steps 2-3: recopy ---------------------------------------------------------------------

    def _clean_group(
        self,
        job: CleaningJob,
        group: list[SourceSegment],
        result: CleaningResult,
        throttler: Throttler,
        txn: CleanedTransactionMetadata,
    ) -> CleanedGroup:
        stats = result.stats
        txn.cleaned_index = []
        writer = CleanedSegmentWriter(
            job.dir_fd,
            group[0].base_offset,
            index_interval_bytes=job.index_interval_bytes,
            buffer_size=job.io_buffer_size,
        )
        try:
            for segment in group:
                txn.add_aborted_transactions(segment.aborted_txns)
                for _, batch in iter_segment_batches(segment.fd, segment.size, job.io_buffer_size):
                    job.check_aborted()
                    _check_crc(batch, segment)
                    stats.bytes_read += batch.size_in_bytes
                    throttler.maybe_throttle(batch.size_in_bytes)
                    out = self._filter_batch(job, batch, result, txn)
                    if out is not None:
                        data, max_ts = out
                        stats.bytes_written += writer.append(data, batch.last_offset, max_ts)
                        throttler.maybe_throttle(len(data))
            size = writer.finish(group[-1].mtime_ns, txn.cleaned_index)
        except BaseException:
            writer.abort()
            raise
        return CleanedGroup(group[0].base_offset, tuple(s.base_offset for s in group), size)

    def _filter_batch(
        self,
        job: CleaningJob,
        batch: RecordBatchView,
        result: CleaningResult,
        txn: CleanedTransactionMetadata,
    ) -> tuple[bytes | bytearray | memoryview, int] | None:
        """The batch to write (bytes, max timestamp), or None to drop it (Kafka's
        ``checkBatchRetention`` + ``shouldRetainRecord`` + ``filterTo``)."""
        stats = result.stats
        now = job.now_ms
        control = batch.is_control_batch
        can_discard = txn.on_control_batch_read(batch) if control else txn.on_batch_read(batch)
        horizon = batch.base_timestamp if batch.has_delete_horizon else None
        discard_records = can_discard and (not control or (horizon is not None and horizon <= now))
        retain_empty = (
            batch.producer_id >= 0 and _is_last_record_of_producer(job, batch)
        ) or batch.next_offset == job.first_uncleanable_offset
        kept: list[Record] = []
        all_kept = True
        tombstones = False
        if discard_records:
            stats.records_read += batch.records_count
            all_kept = batch.records_count == 0
        else:
            omap = self.offset_map
            retain_deletes = horizon is None or now < horizon
            for record in iter_records(batch):
                stats.records_read += 1
                keep: bool
                if control or record.offset > omap.latest_offset:
                    keep = True
                elif record.key is None:
                    stats.invalid_records += 1
                    keep = False
                elif record.offset < omap.get(record.key):
                    keep = False
                elif record.value is None and not retain_deletes:
                    stats.tombstones_removed += 1
                    keep = False
                else:
                    keep = True
                if keep:
                    kept.append(record)
                    tombstones = tombstones or record.value is None
                else:
                    all_kept = False
        stats.records_retained += len(kept)
        if kept:
            # A tombstone, or a marker whose transaction has no record left, is deleted
            # delete.retention.ms after the round that first finds it deletable (KIP-534).
            needs_horizon = tombstones or (control and can_discard)
            new_horizon = horizon
            if needs_horizon and horizon is None:
                new_horizon = now + job.delete_retention_ms
            if needs_horizon and new_horizon is not None:
                earliest = result.earliest_delete_horizon_ms
                if earliest < 0 or new_horizon < earliest:
                    result.earliest_delete_horizon_ms = new_horizon
            if all_kept and new_horizon == horizon:
                return batch.raw(), batch.max_timestamp
            data = _rebuild(batch, kept, new_horizon)
            return data, batch.max_timestamp if _is_log_append_time(batch) else max(
                r.timestamp for r in kept
            )
        if retain_empty:
            return _rebuild(batch, [], None), batch.max_timestamp
        return None


def _is_last_record_of_producer(job: CleaningJob, batch: RecordBatchView) -> bool:
    """Kafka's ``isBatchLastRecordOfProducer``: the batch ending at the producer's last data
    offset, or, for a producer that wrote no data batch, a marker of its current epoch (it
    carries the epoch that fences zombies)."""
    last = job.active_producers.get(batch.producer_id)
    if last is None:
        return False
    last_data_offset, epoch = last
    if last_data_offset >= 0:
        return batch.last_offset == last_data_offset
    return batch.is_control_batch and batch.producer_epoch == epoch


def _is_log_append_time(batch: RecordBatchView) -> bool:
    return batch.timestamp_type == TimestampType.LOG_APPEND_TIME


def _rebuild(
    batch: RecordBatchView, kept: list[Record], delete_horizon_ms: int | None
) -> bytearray:
    """The batch with only ``kept`` (Kafka's ``buildRetainedRecordsInto`` /
    ``writeEmptyHeader``): base offset and last offset delta preserved."""
    builder = RecordBatchBuilder(
        compression=batch.compression_type,
        base_offset=batch.base_offset,
        partition_leader_epoch=batch.partition_leader_epoch,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        is_control_batch=batch.is_control_batch,
        timestamp_type=batch.timestamp_type,
        delete_horizon_ms=delete_horizon_ms if kept else None,
    )
    for record in kept:
        builder.append(
            record.timestamp,
            record.key,
            record.value,
            record.headers,
            offset_delta=record.offset - batch.base_offset,
        )
    log_append_time = _is_log_append_time(batch)
    return builder.build(
        last_offset_delta=batch.last_offset_delta,
        max_timestamp=batch.max_timestamp if (log_append_time or not kept) else None,
    )


def _check_crc(batch: RecordBatchView, segment: SourceSegment) -> None:
    if not batch.is_valid():
        raise CorruptRecordError(
            f"corrupt batch at offset {batch.base_offset} in segment {segment.base_offset}"
        )
