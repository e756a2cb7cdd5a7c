"""A partition's log: its segments and offsets (Kafka's ``UnifiedLog`` + ``LocalLog``).

Directory ``<log.dir>/<topic>-<partition>/`` holds the segments (``franz.storage.segment``),
``leader-epoch-checkpoint`` and ``partition.metadata`` (the topic id).

Offsets (Kafka's names)::

    log start offset  <=  high watermark (HW)  <=  log end offset (LEO)

- *log start offset*: the first offset a consumer can read; moved by retention and
  DeleteRecords. Segments wholly below it are deleted by the next retention pass.
- *HW*: the last committed offset + 1; consumers read below it. Set by the partition layer
  (with one replica, HW = LEO after every append).
- *LEO*: the offset the next appended record gets.
- *recovery point*: everything below it has been fsynced; an unclean restart re-validates
  only from the segment holding it.

Appends take whole, already framed v2 batches. ``append_as_leader`` validates their headers
and CRCs (nothing is written if any batch is bad), assigns offsets by patching
``baseOffset`` in place, stamps ``partitionLeaderEpoch`` (and LogAppendTime if configured),
and writes the bytes as they are. Records are decoded only for batches that need it
(``franz.storage.log_validator``: a ``compression.type`` codec other than the batch's, which
rebuilds the batch; a compacted topic's key check; timestamps out of range, to name the bad
records).

Idempotent producers (batches with ``producerId >= 0``) are checked against the partition's
``ProducerStateManager`` (``franz.storage.producer_state``) before anything is written: a
retried batch is acknowledged with its original offsets (``LogAppendInfo.duplicate``) and
not stored twice; epoch and sequence errors refuse the append. Batches without a producer id
cost one integer comparison each. The producer state is snapshotted (``<offset>.snapshot``)
at every roll and at a clean close, and rebuilt from the latest snapshot plus batch headers
on load and after truncation (``franz.storage.log_loader.rebuild_producer_state``).
Transactions (KIP-98, ``franz.storage.transactions``): markers end them, aborts go to the
marker segment's ``.txnindex``; ``last_stable_offset`` and ``collect_aborted_transactions``
serve READ_COMMITTED fetches.

Not thread-safe: one owner (the partition, on the broker's event loop) calls every method.
An I/O error takes the log offline: every later call raises ``KafkaStorageError``.
"""

from __future__ import annotations

import bisect
import logging
import os
import random
import shutil
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from franz.clock import Clock
from franz.config.topic import LogConfig
from franz.errors import (
    InvalidRecordError,
    InvalidTimestampError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
)
from franz.metrics.traffic import LOG_FLUSH_STATS
from franz.protocol.records.batch import RecordBatchView, TimestampType, iter_batches
from franz.protocol.records.inflated import iter_records
from franz.storage.batch_check import BatchCheck
from franz.storage.checkpoints import CheckpointError
from franz.storage.files import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    TopicPartition,
    segment_file,
)
from franz.storage.index.txn_index import AbortedTxn
from franz.storage.leader_epoch import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache
from franz.storage.log_loader import load_segments, rebuild_producer_state
from franz.storage.log_validator import (
    check_records,
    compression_level,
    needs_rebuild,
    recompress_batch,
    screen_timestamps,
    target_compression,
    timestamp_bounds,
)
from franz.storage.partition_metadata import read_partition_metadata, write_partition_metadata
from franz.storage.producer_state import (
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    AppendOrigin,
    ProducerAppendInfo,
    ProducerStateManager,
)
from franz.storage.segment import LogSegment
from franz.storage.transactions import collect_aborted_transactions, complete_transactions
from franz.storage.verification import SENTINEL, VerificationGuard

__all__ = ["FetchDataInfo", "Log", "LogAppendInfo", "TimestampAndOffset"]

log = logging.getLogger(__name__)

#: ListOffsets special timestamps (Kafka's ``ListOffsetsRequest``).
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
MAX_TIMESTAMP = -3


@dataclass(frozen=True, slots=True)
class LogAppendInfo:
    """What an append did (Kafka's ``LogAppendInfo``); offsets are -1 for an empty append.

    ``duplicate``: every batch was a retry of a batch already in the log (same producer id,
    epoch and sequence range as one of the producer's last 5). Nothing was written
    (``valid_bytes`` and ``batch_count`` are 0); the offsets and max timestamp are those of
    the original batches, which the Produce response acknowledges as Kafka does.
    ``log_append_time`` is -1 under CreateTime, except for a duplicate: the original max
    timestamp, as Kafka reports it for either timestamp type.
    """

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    log_start_offset: int
    valid_bytes: int
    batch_count: int
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """A byte range of one segment file to send as it is (``sendfile``), whole batches.

    ``fd`` stays valid while the segment exists: deleted segments keep their files open for
    ``file.delete.delay.ms`` so in-flight sends finish (Kafka's rule).
    """

    fetch_offset: int
    fd: int
    position: int
    size: int

    def read_bytes(self) -> bytes:
        """The range's bytes (tests, tools; the broker uses ``sendfile`` instead)."""
        return os.pread(self.fd, self.size, self.position) if self.size else b""


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    timestamp: int
    offset: int
    leader_epoch: int


#: Batch boundaries a log remembers the positions of (``Log._remember_boundary``): enough for
#: a high watermark some appends behind the log end, ~1.5 KiB per partition.
_BOUNDARIES_KEPT = 16


class Log:
    """One partition's segments, offsets, leader epochs and retention."""

    def __init__(
        self,
        directory: Path,
        topic_partition: TopicPartition,
        config: LogConfig,
        clock: Clock,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        high_watermark: int = 0,
        had_clean_shutdown: bool = True,
        topic_id: uuid.UUID | None = None,
        on_io_error: Callable[[Path, OSError], None] | None = None,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        transaction_verification_enabled: bool = False,
        verify_all: bool = False,
    ) -> None:
        self.dir = directory
        self.topic_partition = topic_partition
        self.config = config
        self._clock = clock
        self._on_io_error = on_io_error
        self.offline = False
        self._segments: list[LogSegment] = []
        self._bases: list[int] = []
        #: The byte positions of the latest appends' end offsets (``_remember_boundary``).
        self._boundaries: dict[int, tuple[LogSegment, int]] = {}
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self.recovery_point = recovery_point
        self.high_watermark = 0  # set from the checkpoint once the segments are loaded
        self.last_flush_ms = clock.wall_ms()
        directory.mkdir(parents=True, exist_ok=True)
        self.topic_id = self._load_topic_id(topic_id)
        #: (segment base offset, check) of every corrupt batch kept (log.recovery.verify.all).
        self.corrupt_batches: list[tuple[int, BatchCheck]] = []
        load_segments(
            self,
            had_clean_shutdown=had_clean_shutdown,
            initial_offset=log_start_offset,
            verify_all=verify_all,
            producer_id_expiration_ms=producer_id_expiration_ms,
        )
        self.producer_state = ProducerStateManager(
            directory,
            self.name,
            producer_id_expiration_ms=producer_id_expiration_ms,
            transaction_verification_enabled=transaction_verification_enabled,
        )
        self.leader_epoch_cache = self._load_leader_epoch_cache()
        self.log_end_offset = self.active_segment.read_next_offset()
        if self.log_end_offset < log_start_offset:
            # Recovery cut the log below the checkpointed start: restart it there, as Kafka's
            # LogLoader does, so offsets never go backwards for consumers.
            log.warning(
                "%s: log end offset %d is below the log start offset %d after recovery; "
                "restarting the log at %d",
                self.name,
                self.log_end_offset,
                log_start_offset,
                log_start_offset,
            )
            self.truncate_fully_and_start_at(log_start_offset)
        self.log_start_offset = max(log_start_offset, self._segments[0].base_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self.high_watermark = min(max(high_watermark, self.log_start_offset), self.log_end_offset)
        self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
        self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
        rebuild_producer_state(self)
        self.producer_state.transactions.on_high_watermark_updated(self.high_watermark)

    # -- segments ------------------------------------------------------------------------

    @property
    def segments(self) -> Sequence[LogSegment]:
        return tuple(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    def new_segment(self, base_offset: int) -> LogSegment:
        """A fresh, empty segment at ``base_offset`` (stale files of that name removed)."""
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            path = self.dir / f"{base_offset:020d}{suffix}"
            if path.exists() and base_offset not in self._bases:
                path.unlink()  # a stale file from a segment deleted before a crash
        return self.open_segment(base_offset)

    def open_segment(self, base_offset: int) -> LogSegment:
        """The segment whose files are named after ``base_offset``, as they are on disk."""
        jitter = self.config.segment_jitter_ms
        return LogSegment(
            self.dir,
            base_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            max_index_size=self.config.segment_index_bytes,
            clock=self._clock,
            # Kafka draws a per-segment jitter so that many partitions do not roll at once.
            roll_jitter_ms=random.randrange(jitter) if jitter > 0 else 0,
        )

    def _add_segment(self, segment: LogSegment) -> None:
        i = bisect.bisect_left(self._bases, segment.base_offset)
        if i < len(self._bases) and self._bases[i] == segment.base_offset:
            raise ValueError(f"duplicate segment {segment.base_offset} in {self.dir}")
        self._bases.insert(i, segment.base_offset)
        self._segments.insert(i, segment)

    def _segment_index_for(self, offset: int) -> int:
        """Index of the segment whose base offset is the floor of ``offset`` (0 if below)."""
        return max(0, bisect.bisect_right(self._bases, offset) - 1)

    @property
    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    @property
    def name(self) -> str:
        return str(self.topic_partition)

    # -- appends -------------------------------------------------------------------------

    def append_as_leader(
        self,
        records: bytes | bytearray | memoryview,
        leader_epoch: int,
        *,
        from_client: bool = True,
        verification_guard: VerificationGuard | None = None,
    ) -> LogAppendInfo:
        """Validate, assign offsets and append ``records`` (one or more whole v2 batches).

        Raises, before writing anything: ``CorruptRecordError`` (bad length or CRC),
        ``InvalidRecordError`` (bad header, client batch with baseOffset != 0, control batch
        from a client; a keyless record on a compacted topic, with ``record_errors``),
        ``RecordTooLargeError`` (a batch over ``max.message.bytes``, also once recompressed
        to the topic's ``compression.type``), ``RecordBatchTooLargeError`` (more than a
        segment), ``InvalidTimestampError`` (with ``record_errors``); for batches with a
        producer id (``franz.storage.producer_state``):
        ``InvalidProducerEpochError``, ``OutOfOrderSequenceError``, ``UnknownProducerIdError``,
        ``DuplicateSequenceError`` (duplicates mixed with new batches), ``InvalidTxnStateError``
        (a plain batch during the producer's transaction, or, with KIP-890 verification on, a
        transactional batch starting a transaction without the producer's current
        ``verification_guard``), ``TransactionCoordinatorFencedError``
        (a marker from an older coordinator epoch). A retried batch is
        not written: the result has ``duplicate=True`` and the original offsets.
        ``from_client=False`` (broker-internal appends) checks producer epochs only.
        ``KafkaStorageError`` if the write fails.
        """
        self._check_online()
        buffer = records if isinstance(records, bytearray | memoryview) else bytearray(records)
        views = self._validate(buffer, from_client=from_client)
        if not views:
            return self._empty_append_info()
        now = self._clock.wall_ms()
        rebuilt = self._validate_records(views, now, from_client=from_client)
        if rebuilt is not None:
            buffer = rebuilt
            views = self._validate(buffer, from_client=False)  # sizes may have changed
        append_time = now if self.config.log_append_time else -1
        next_offset = self.log_end_offset
        idempotent = False
        for view in views:
            view.set_base_offset(next_offset)
            if leader_epoch >= 0:
                view.set_partition_leader_epoch(leader_epoch)
            if append_time >= 0:
                view.set_log_append_time(append_time)
            if view.producer_id >= 0:
                idempotent = True
            next_offset = view.next_offset
        if not idempotent:
            return self._append(buffer, views, append_time)
        origin = AppendOrigin.CLIENT if from_client else AppendOrigin.COORDINATOR
        producers = self.producer_state.prepare_append(views, origin, verification_guard)
        if producers.duplicates:
            return self._duplicate_append_info(producers)
        info = self._append(buffer, views, append_time)
        self._update_producers(producers)
        return info

    def maybe_start_transaction_verification(
        self, producer_id: int, sequence: int, epoch: int
    ) -> VerificationGuard:
        """KIP-890 (Kafka's ``UnifiedLog.maybeStartTransactionVerification``): ``SENTINEL``
        when the producer's transaction is already ongoing here (nothing to verify), else
        the guard of its verification entry (created if needed) for the append to carry."""
        state = self.producer_state
        if state.has_ongoing_transaction(producer_id):
            return SENTINEL
        return state.verification_states.maybe_create(
            producer_id, sequence, epoch, self._clock.wall_ms()
        ).guard

    def _update_producers(self, producers: ProducerAppendInfo) -> None:
        """After an append: install the producer entries, then index and complete the
        transactions its markers ended (``franz.storage.transactions``)."""
        self.producer_state.update(producers)
        if producers.completed:
            try:
                complete_transactions(self, self.active_segment, producers.completed)
            except OSError as exc:
                self._fail(exc)

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Append batches whose offsets the leader assigned (replication, recovery tools).

        Transactions are tracked and aborts indexed as on the leader; ``InvalidTxnStateError``
        refuses a plain batch during the producer's transaction (Kafka checks it for every
        origin)."""
        self._check_online()
        buffer = records if isinstance(records, bytearray | memoryview) else bytearray(records)
        views = self._validate(buffer, from_client=False)
        if not views:
            return self._empty_append_info()
        expected = self.log_end_offset
        idempotent = False
        for view in views:
            if view.base_offset < expected:
                raise InvalidRecordError(
                    f"out of order offsets: batch at {view.base_offset} appended to "
                    f"{self.name} whose log end offset is {expected}"
                )
            if view.producer_id >= 0:
                idempotent = True
            expected = view.next_offset
        if not idempotent:
            return self._append(buffer, views, -1)
        # The leader checked epochs and sequences; the transaction rules apply (Kafka's
        # AppendOrigin.REPLICATION).
        producers = self.producer_state.prepare_append(views, AppendOrigin.REPLICATION)
        info = self._append(buffer, views, -1)
        self._update_producers(producers)
        return info

    def _validate(
        self, buffer: bytearray | memoryview, *, from_client: bool
    ) -> list[RecordBatchView]:
        views = list(iter_batches(buffer))
        total = sum(view.size_in_bytes for view in views)
        if total > self.config.segment_bytes:
            raise RecordBatchTooLargeError(
                f"record set of {total} bytes exceeds segment.bytes "
                f"{self.config.segment_bytes} for {self.name}"
            )
        for view in views:
            if view.size_in_bytes > self.config.max_message_bytes:
                raise RecordTooLargeError(
                    f"record batch of {view.size_in_bytes} bytes exceeds max.message.bytes "
                    f"{self.config.max_message_bytes} for {self.name}"
                )
            if from_client:
                if view.base_offset != 0:
                    raise InvalidRecordError(
                        f"the baseOffset of a record batch appended to {self.name} should be 0, "
                        f"but it is {view.base_offset}"
                    )
                if view.records_count != view.last_offset_delta + 1:
                    raise InvalidRecordError(
                        f"inconsistent batch offset range and record count "
                        f"({view.last_offset_delta + 1} vs {view.records_count})"
                    )
                if view.is_control_batch:
                    raise InvalidRecordError("clients are not allowed to write control records")
        return views

    def _validate_records(
        self, views: list[RecordBatchView], now: int, *, from_client: bool
    ) -> bytearray | None:
        """Record-level checks and recompression (``franz.storage.log_validator``), for the
        batches that need them; the new record set if a batch was rebuilt, else None.

        Raises ``InvalidRecordError`` / ``InvalidTimestampError`` carrying the record errors
        (KIP-467), ``CorruptRecordError`` if a batch does not decompress.
        """
        config = self.config
        target = target_compression(config)
        compact = from_client and config.compact
        log_append_time = config.log_append_time
        before, after = timestamp_bounds(config)
        rebuilt: dict[int, bytearray] = {}
        for index, view in enumerate(views):
            screened = screen_timestamps(view, now, log_append_time, before, after)
            if compact or not screened:
                check_records(
                    view,
                    list(iter_records(view)),
                    partition=self.name,
                    now=now,
                    compact=compact,
                    log_append_time=log_append_time,
                    before=before,
                    after=after,
                )
                if not screened and view.timestamp_type == TimestampType.CREATE_TIME:
                    # The header's timestamps are out of range but no record's is: the header
                    # contradicts its records, and the time index would get its maxTimestamp.
                    raise InvalidTimestampError(
                        f"timestamps {view.base_timestamp}..{view.max_timestamp} of a batch "
                        f"for {self.name} are out of range [now - {before}, now + {after}] "
                        f"(now = {now})"
                    )
            if target is not None and view.records_count and needs_rebuild(view, target):
                rebuilt[index] = recompress_batch(view, target, compression_level(config, target))
        if not rebuilt:
            return None
        return bytearray().join(rebuilt.get(i, view.raw()) for i, view in enumerate(views))

    def _append(
        self, buffer: bytearray | memoryview, views: list[RecordBatchView], append_time: int
    ) -> LogAppendInfo:
        first, last = views[0], views[-1]
        max_ts, offset_of_max = -1, -1
        for view in views:
            if view.max_timestamp > max_ts:
                max_ts, offset_of_max = view.max_timestamp, view.last_offset
        size = sum(view.size_in_bytes for view in views)
        try:
            segment = self._maybe_roll(size, max_ts, last.last_offset)
            segment.append(
                memoryview(buffer)[first.position : last.position + last.size_in_bytes], views
            )
        except OSError as exc:
            self._fail(exc)
        self.log_end_offset = last.next_offset
        self._remember_boundary(last.next_offset, segment, segment.size)
        for view in views:
            if view.partition_leader_epoch >= 0:
                self.leader_epoch_cache.assign(view.partition_leader_epoch, view.base_offset)
        if self.log_end_offset - self.recovery_point >= self.config.flush_messages:
            self.flush()
        return LogAppendInfo(
            first_offset=first.base_offset,
            last_offset=last.last_offset,
            max_timestamp=max_ts,
            offset_of_max_timestamp=offset_of_max,
            log_append_time=append_time,
            log_start_offset=self.log_start_offset,
            valid_bytes=size,
            batch_count=len(views),
        )

    def _empty_append_info(self) -> LogAppendInfo:
        return LogAppendInfo(-1, -1, -1, -1, -1, self.log_start_offset, 0, 0)

    def _duplicate_append_info(self, producers: ProducerAppendInfo) -> LogAppendInfo:
        first, last = producers.duplicates[0], producers.duplicates[-1]
        newest = max(producers.duplicates, key=lambda batch: batch.timestamp)
        log.debug(
            "%s: acknowledging a duplicate of offsets %d..%d without appending",
            self.name,
            first.first_offset,
            last.last_offset,
        )
        return LogAppendInfo(
            first_offset=first.first_offset,
            last_offset=last.last_offset,
            max_timestamp=newest.timestamp,
            offset_of_max_timestamp=newest.last_offset,
            # Kafka's UnifiedLog.append sets the duplicate's max timestamp as logAppendTime
            # whatever the timestamp type, and the Produce response carries it.
            log_append_time=newest.timestamp,
            log_start_offset=self.log_start_offset,
            valid_bytes=0,
            batch_count=0,
            duplicate=True,
        )

    def _maybe_roll(self, messages_size: int, max_timestamp: int, max_offset: int) -> LogSegment:
        segment = self.active_segment
        if segment.should_roll(
            messages_size=messages_size,
            max_timestamp_in_messages=max_timestamp,
            max_offset_in_messages=max_offset,
            segment_bytes=self.config.segment_bytes,
            segment_ms=self.config.segment_ms,
            now_ms=self._clock.wall_ms(),
        ):
            segment = self.roll()
        return segment

    def roll(self) -> LogSegment:
        """Start a new active segment at the LEO (no-op if the active one is empty there).

        The producer state is snapshotted at the new segment's base offset, as Kafka does.
        """
        self._check_online()
        active = self.active_segment
        if active.size == 0 and active.base_offset == self.log_end_offset:
            return active
        try:
            active.on_become_inactive()
            segment = self.new_segment(self.log_end_offset)
            self._add_segment(segment)
            self.producer_state.take_snapshot(self.log_end_offset)
        except OSError as exc:
            self._fail(exc)
        log.debug("rolled %s to a new segment at offset %d", self.name, segment.base_offset)
        return segment

    # -- reads ---------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_message: bool = True,
    ) -> FetchDataInfo:
        """Whole batches from the one holding ``offset``, up to ``max_bytes``.

        ``max_offset`` (exclusive) bounds the read: the HW for consumers, None (the LEO) for
        followers. ``OffsetOutOfRangeError`` if ``offset`` is below the log start offset or
        above the LEO; an empty result at the LEO or at/after ``max_offset``.
        """
        self._check_online()
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise OffsetOutOfRangeError(
                f"received request for offset {offset} for partition {self.name}, but we only "
                f"have log segments in the range {self.log_start_offset} to {self.log_end_offset}"
            )
        limit = self.log_end_offset if max_offset is None else min(max_offset, self.log_end_offset)
        if offset >= limit:
            return FetchDataInfo(offset, self.active_segment.fd, self.active_segment.size, 0)
        limit_base, limit_position = self._position_of(limit)
        i = self._segment_index_for(offset)
        known = self._boundaries.get(offset)
        while i < len(self._segments):
            segment = self._segments[i]
            if segment.base_offset > limit_base:
                break
            max_position = limit_position if segment.base_offset == limit_base else None
            start = known[1] if known is not None and known[0] is segment else 0
            try:
                result = segment.read(offset, max_bytes, max_position, min_one_message, start)
            except OSError as exc:
                self._fail(exc)
            if result is not None:
                return FetchDataInfo(offset, segment.fd, result.position, result.size)
            i += 1
        return FetchDataInfo(offset, self.active_segment.fd, self.active_segment.size, 0)

    def _remember_boundary(self, offset: int, segment: LogSegment, position: int) -> None:
        """Remember that the batch at ``offset`` starts at ``position`` of ``segment`` (where
        an append ended). The high watermark, followers' and consumers' fetch offsets are such
        offsets a few appends back: reads find them without an index lookup and a walk over
        batch headers (Kafka keeps ``LogOffsetMetadata`` with positions for the same reason).
        The newest ``_BOUNDARIES_KEPT`` only; forgotten whenever segments are cut, deleted or
        replaced (``_forget_boundaries``)."""
        boundaries = self._boundaries
        boundaries[offset] = (segment, position)
        if len(boundaries) > _BOUNDARIES_KEPT:
            del boundaries[next(iter(boundaries))]

    def _forget_boundaries(self) -> None:
        self._boundaries.clear()

    def _position_of(self, offset: int) -> tuple[int, int]:
        """(segment base offset, byte position) where data at ``offset`` starts."""
        if offset >= self.log_end_offset:
            return self.active_segment.base_offset, self.active_segment.size
        known = self._boundaries.get(offset)
        if known is not None:
            return known[0].base_offset, known[1]
        i = self._segment_index_for(offset)
        while i < len(self._segments):
            location = self._segments[i].translate_offset(offset)
            if location is not None:
                return self._segments[i].base_offset, location.position
            i += 1
        return self.active_segment.base_offset, self.active_segment.size

    def read_batch(self, segment: LogSegment, position: int, size: int) -> RecordBatchView:
        return RecordBatchView(segment.read_bytes(position, size))

    def fetch_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: the first record with timestamp >= ``timestamp`` (or -1/-2/-3).

        Only this lookup decodes records: the time index and batch headers find the batch,
        then its records are read to find the exact one, as Kafka does.
        """
        self._check_online()
        from franz.protocol.records.inflated import iter_records

        epoch = self.leader_epoch_cache.latest_epoch
        if timestamp == EARLIEST_TIMESTAMP:
            epoch_at = self._epoch_for_offset(self.log_start_offset)
            return TimestampAndOffset(-1, self.log_start_offset, epoch_at)
        if timestamp == LATEST_TIMESTAMP:
            return TimestampAndOffset(-1, self.log_end_offset, epoch)
        if timestamp == MAX_TIMESTAMP:
            return self._max_timestamp_offset()
        for segment in self._segments[self._segment_index_for(self.log_start_offset) :]:
            if segment.largest_timestamp < timestamp:
                continue
            location = segment.find_batch_by_timestamp(timestamp, self.log_start_offset)
            if location is None:
                continue
            batch = self.read_batch(segment, location.position, location.size)
            for record in iter_records(batch):
                if record.timestamp >= timestamp and record.offset >= self.log_start_offset:
                    return TimestampAndOffset(
                        record.timestamp, record.offset, batch.partition_leader_epoch
                    )
        return None

    def _max_timestamp_offset(self) -> TimestampAndOffset | None:
        from franz.protocol.records.inflated import iter_records

        best: LogSegment | None = None
        for segment in self._segments:
            if segment.max_timestamp_so_far >= 0 and (
                best is None or segment.max_timestamp_so_far > best.max_timestamp_so_far
            ):
                best = segment
        if best is None:
            return None
        location = best.translate_offset(best.offset_of_max_timestamp_so_far)
        if location is None:
            return None
        batch = self.read_batch(best, location.position, location.size)
        for record in iter_records(batch):
            if record.timestamp == best.max_timestamp_so_far:
                return TimestampAndOffset(
                    record.timestamp, record.offset, batch.partition_leader_epoch
                )
        return TimestampAndOffset(
            batch.max_timestamp, batch.last_offset, batch.partition_leader_epoch
        )

    def _epoch_for_offset(self, offset: int) -> int:
        epoch = -1
        for entry in self.leader_epoch_cache.entries:
            if entry.start_offset <= offset:
                epoch = entry.epoch
        return epoch

    # -- offsets -------------------------------------------------------------------------

    def update_high_watermark(self, offset: int) -> int:
        """Set the HW, clamped to [log start offset, LEO]; returns the value set. Completed
        transactions whose markers it passes become stable (``onHighWatermarkUpdated``)."""
        self.high_watermark = min(max(offset, self.log_start_offset), self.log_end_offset)
        self.producer_state.transactions.on_high_watermark_updated(self.high_watermark)
        return self.high_watermark

    @property
    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest transaction that is ongoing, or completed with
        its marker at or above the HW, raised to the log start offset; None if there is
        none (Kafka's ``UnifiedLog.firstUnstableOffset``)."""
        offset = self.producer_state.transactions.first_unstable_offset()
        return None if offset is None else max(offset, self.log_start_offset)

    @property
    def last_stable_offset(self) -> int:
        """The LSO: ``min(first unstable offset, HW)`` (Kafka's ``lastStableOffset``);
        READ_COMMITTED consumers read below it."""
        first_unstable = self.first_unstable_offset
        if first_unstable is not None and first_unstable < self.high_watermark:
            return first_unstable
        return self.high_watermark

    def collect_aborted_transactions(
        self, start_offset: int, upper_bound_offset: int
    ) -> list[AbortedTxn]:
        """The aborted transactions overlapping ``[start_offset, upper_bound_offset)``
        (Kafka's ``UnifiedLog.collectAbortedTransactions``; ``franz.storage.transactions``)."""
        return collect_aborted_transactions(self, start_offset, upper_bound_offset)

    def maybe_increment_log_start_offset(self, new_start: int) -> bool:
        """DeleteRecords: move the log start offset forward (never past the HW)."""
        self._check_online()
        if new_start > self.high_watermark:
            raise OffsetOutOfRangeError(
                f"cannot increment the log start offset to {new_start} of partition {self.name} "
                f"since it is larger than the high watermark {self.high_watermark}"
            )
        if new_start <= self.log_start_offset:
            return False
        self.log_start_offset = new_start
        self.leader_epoch_cache.truncate_from_start(new_start)
        return True

    def truncate_to(self, offset: int) -> bool:
        """Remove every batch at or after ``offset`` (a follower diverged from its leader)."""
        self._check_online()
        if offset >= self.log_end_offset:
            # As Kafka's UnifiedLog.truncateTo: the epoch cache is truncated all the same. A
            # broker that became leader assigned its epoch at its log end offset, and may
            # have lost leadership before appending anything in it; a follower keeping that
            # entry would ask its new leader about an epoch it never wrote, forever.
            self.leader_epoch_cache.truncate_from_end(self.log_end_offset)
            return False
        if offset < self._segments[0].base_offset:
            self.truncate_fully_and_start_at(offset)
            return True
        self._forget_boundaries()
        try:
            while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
                segment = self._segments.pop()
                self._bases.pop()
                segment.delete_files()
            self.active_segment.truncate_to(offset)
            self.active_segment.resize_indexes(self.config.segment_index_bytes)
            self.log_end_offset = self.active_segment.read_next_offset()
            self._after_truncation()
            rebuild_producer_state(self)
            self.producer_state.transactions.on_high_watermark_updated(self.high_watermark)
        except OSError as exc:
            self._fail(exc)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and restart the log empty at ``offset``."""
        self._check_online()
        self._forget_boundaries()
        try:
            for segment in self._segments:
                segment.delete_files()
            self._segments.clear()
            self._bases.clear()
            self._add_segment(self.new_segment(offset))
            self.producer_state.truncate_fully()
        except OSError as exc:
            self._fail(exc)
        self.log_end_offset = offset
        self.log_start_offset = offset
        self.leader_epoch_cache.clear()
        self._after_truncation()

    def _after_truncation(self) -> None:
        self.high_watermark = min(self.high_watermark, self.log_end_offset)
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self.log_start_offset = min(self.log_start_offset, self.log_end_offset)
        self.leader_epoch_cache.truncate_from_end(self.log_end_offset)

    # -- retention -----------------------------------------------------------------------

    def delete_old_segments(self) -> int:
        """One retention pass; returns how many segments were scheduled for deletion.

        With ``cleanup.policy`` containing ``delete``: segments whose largest timestamp is
        older than ``retention.ms``, then the oldest segments beyond ``retention.bytes``.
        Always: segments wholly below the log start offset (DeleteRecords). Only segments
        wholly below the HW go; when every segment would go, the log rolls first so an empty
        active segment remains (Kafka's behaviour).
        """
        self._check_online()
        now = self._clock.wall_ms()
        deleted = 0
        if self.config.delete:
            if self.config.retention_ms >= 0:
                retention_ms = self.config.retention_ms
                deleted += self._delete_oldest(
                    lambda seg, _: now - seg.largest_timestamp > retention_ms, "retention.ms"
                )
            if self.config.retention_bytes >= 0:
                excess = [self.size_in_bytes - self.config.retention_bytes]

                def over_size(seg: LogSegment, _: LogSegment | None) -> bool:
                    if excess[0] - seg.size >= 0:
                        excess[0] -= seg.size
                        return True
                    return False

                deleted += self._delete_oldest(over_size, "retention.bytes")
        start = self.log_start_offset
        deleted += self._delete_oldest(
            lambda _, nxt: nxt is not None and nxt.base_offset <= start, "log start offset"
        )
        return deleted

    def _delete_oldest(
        self, predicate: Callable[[LogSegment, LogSegment | None], bool], reason: str
    ) -> int:
        deletable: list[LogSegment] = []
        for i, segment in enumerate(self._segments):
            nxt = self._segments[i + 1] if i + 1 < len(self._segments) else None
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if nxt is None and segment.size == 0:
                break
            if upper > self.high_watermark or not predicate(segment, nxt):
                break
            deletable.append(segment)
        if not deletable:
            return 0
        if len(deletable) == len(self._segments):
            self.roll()
        self._forget_boundaries()
        try:
            for segment in deletable:
                self._segments.remove(segment)
                self._bases.remove(segment.base_offset)
                segment.change_file_suffixes("", DELETED_SUFFIX)
                self._pending_deletes.append(
                    (self._clock.wall_ms() + self.config.file_delete_delay_ms, segment)
                )
        except OSError as exc:
            self._fail(exc)
        self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
        self.leader_epoch_cache.truncate_from_start(self.log_start_offset)
        try:
            self.producer_state.delete_snapshots_before(self.log_start_offset)
        except OSError as exc:
            self._fail(exc)
        log.info(
            "deleted %d segment(s) of %s (%s breached); log start offset is now %d",
            len(deletable),
            self.name,
            reason,
            self.log_start_offset,
        )
        return len(deletable)

    def replace_segments(self, old: Sequence[LogSegment], cleaned_base: int) -> LogSegment:
        """Swap ``<cleaned_base>.{log,index,timeindex}.cleaned`` (and ``.txnindex.cleaned``
        if the cleaner wrote one) in for ``old`` (Kafka's ``replaceSegments``); the cleaner
        calls this once ``old`` are checked to be this log's. The old segments' ``.txnindex``
        files go with them (``.deleted``).

        Crash-safe in Kafka's order: rename ``.cleaned`` -> ``.swap`` and fsync the directory
        (the commit point: the loader completes a swap, ``franz.storage.log_loader``), rename
        each old segment ``.deleted`` (removed after ``file.delete.delay.ms``, so fetches in
        flight keep their file), rename ``.swap`` -> final, fsync the directory.
        """
        self._check_online()
        names = [
            segment_file(self.dir, cleaned_base, suffix)
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)
        ]
        txn_index = segment_file(self.dir, cleaned_base, TXN_INDEX_SUFFIX)
        if Path(f"{txn_index}{CLEANED_SUFFIX}").exists():
            names.append(txn_index)  # the aborted transactions the cleaned segment keeps
        self._forget_boundaries()
        try:
            for path in names:
                os.replace(f"{path}{CLEANED_SUFFIX}", f"{path}{SWAP_SUFFIX}")
            _fsync_dir(self.dir)
            due = self._clock.wall_ms() + self.config.file_delete_delay_ms
            for segment in old:
                i = self._segments.index(segment)
                del self._segments[i]
                del self._bases[i]
                segment.change_file_suffixes("", DELETED_SUFFIX)
                self._pending_deletes.append((due, segment))
            for path in names:
                os.replace(f"{path}{SWAP_SUFFIX}", path)
            segment = self.open_segment(cleaned_base)
            self._add_segment(segment)
            _fsync_dir(self.dir)
        except OSError as exc:
            self._fail(exc)
        return segment

    def delete_expired_files(self, *, force: bool = False) -> int:
        """Unlink ``.deleted`` segments whose ``file.delete.delay.ms`` has passed."""
        now = self._clock.wall_ms()
        keep: list[tuple[int, LogSegment]] = []
        removed = 0
        for due, segment in self._pending_deletes:
            if force or due <= now:
                segment.delete_files()
                removed += 1
            else:
                keep.append((due, segment))
        self._pending_deletes = keep
        return removed

    # -- flush and life cycle ------------------------------------------------------------

    def flush(self, offset: int | None = None) -> None:
        """fsync everything below ``offset`` (default: the LEO); moves the recovery point."""
        self._check_online()
        target = self.log_end_offset if offset is None else min(offset, self.log_end_offset)
        if target <= self.recovery_point:
            return
        started = time.perf_counter_ns()
        try:
            for segment in self._segments[self._segment_index_for(self.recovery_point) :]:
                if segment.base_offset >= target:
                    break
                segment.flush()
        except OSError as exc:
            self._fail(exc)
        LOG_FLUSH_STATS.flushed(time.perf_counter_ns() - started)  # LogFlushRateAndTimeMs
        self.recovery_point = target
        self.last_flush_ms = self._clock.wall_ms()

    def flush_if_due(self) -> bool:
        """Flush by ``flush.ms``, or flush rolled segments; returns whether it flushed."""
        now = self._clock.wall_ms()
        if self.recovery_point >= self.log_end_offset:
            return False
        if now - self.last_flush_ms >= self.config.flush_ms:
            self.flush()
            return True
        if self.recovery_point < self.active_segment.base_offset:
            self.flush(self.active_segment.base_offset)  # Kafka flushes a rolled segment
            return True
        return False

    def update_config(self, config: LogConfig) -> None:
        """Apply new topic configs; they take effect from the next append / retention pass."""
        self.config = config

    def close(self) -> None:
        """Clean close: flush, producer snapshot at the LEO, final index entries, trimmed
        indexes, pending deletes done."""
        if self.offline:
            self._close_handlers()
            return
        self.flush()
        try:
            self.producer_state.take_snapshot(self.log_end_offset)
        except OSError as exc:
            self._fail(exc)
        self.delete_expired_files(force=True)
        for segment in self._segments:
            segment.close()

    def _close_handlers(self) -> None:
        for segment in self._segments:
            segment.close_handlers()
        for _, segment in self._pending_deletes:
            segment.close_handlers()

    def close_without_flush(self) -> None:
        """Release handles as a crash would leave things (tests simulate crashes with it)."""
        self._close_handlers()

    def delete(self) -> None:
        """Delete the whole partition directory (the topic is gone)."""
        self._close_handlers()
        shutil.rmtree(self.dir, ignore_errors=True)

    def rename_dir(self, new_dir: Path) -> None:
        """Rename the partition dir (a deletion's ``-delete``, a future replica's promotion):
        open handles stay valid, every path follows (Kafka's ``renameDir`` with
        ``shouldReinitialize``). Raises ``OSError``; the caller decides what failed."""
        os.replace(self.dir, new_dir)
        self.dir = new_dir
        self.producer_state.dir = new_dir
        self.leader_epoch_cache.path = new_dir / self.leader_epoch_cache.path.name
        for segment in (*self._segments, *(pending for _, pending in self._pending_deletes)):
            segment.update_parent_dir(new_dir)

    def remove_expired_producers(self) -> int:
        """Drop producers idle for ``producer.id.expiration.ms``; returns how many."""
        return self.producer_state.remove_expired_producers(self._clock.wall_ms())

    # -- failure -------------------------------------------------------------------------

    def _check_online(self) -> None:
        if self.offline:
            raise KafkaStorageError(f"the log dir of {self.name} ({self.dir.parent}) is offline")

    def _fail(self, exc: OSError) -> NoReturn:
        """An I/O error: the log goes offline and the caller gets KAFKA_STORAGE_ERROR."""
        self.offline = True
        log.error("I/O error on %s: %s; taking it offline", self.dir, exc)
        if self._on_io_error is not None:
            self._on_io_error(self.dir.parent, exc)
        raise KafkaStorageError(f"I/O error on {self.name}: {exc}") from exc

    def mark_offline(self) -> None:
        self.offline = True

    def _load_leader_epoch_cache(self) -> LeaderEpochFileCache:
        try:
            return LeaderEpochFileCache(self.dir)
        except CheckpointError as exc:
            # The epochs are in every batch header: rebuild rather than refuse to start.
            log.warning("%s; rebuilding it from the batch headers", exc)
            (self.dir / LEADER_EPOCH_CHECKPOINT).unlink()
            cache = LeaderEpochFileCache(self.dir)
            for segment in self._segments:
                for location in segment.iter_locations():
                    cache.assign(location.leader_epoch, location.base_offset)
            return cache

    def _load_topic_id(self, topic_id: uuid.UUID | None) -> uuid.UUID | None:
        try:
            stored = read_partition_metadata(self.dir)
        except ValueError as exc:
            # Rewritten below when the topic id is known.
            log.warning("ignoring a corrupt partition.metadata in %s: %s", self.dir, exc)
            stored = None
        if topic_id is None:
            return stored
        if stored is not None and stored != topic_id:
            raise InvalidRecordError(
                f"partition directory {self.dir} belongs to topic id {stored}, not {topic_id}"
            )
        if stored is None:
            write_partition_metadata(self.dir, topic_id)
        return topic_id

    def __repr__(self) -> str:
        return (
            f"Log({self.name}, start={self.log_start_offset}, hw={self.high_watermark}, "
            f"leo={self.log_end_offset}, segments={len(self._segments)})"
        )


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
