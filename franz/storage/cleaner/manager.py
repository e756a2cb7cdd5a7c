"""Which log to clean next, and the cleaner's checkpoints (Kafka's ``LogCleanerManager``).

Runs on the broker's event loop only (``LogCleaner.tick``), so it reads ``Log`` state
freely. Terms (Kafka's):

- *first dirty offset*: where the last round stopped, from ``cleaner-offset-checkpoint``
  in the log's dir (Kafka's format, ``franz.storage.checkpoints``); the log start offset
  if absent, below the log start offset, or above the LEO (the checkpoint is then rewritten).
- *first uncleanable offset*: min(the last stable offset (the HW, or the first offset of
  the earliest transaction that is ongoing or whose marker is not yet replicated), the
  active segment's base offset, the base offset of the first dirty non-active segment whose
  largest timestamp is newer than ``now - min.compaction.lag.ms``) (Kafka's
  ``cutOffsetsForCompaction``). A round cleans only the segments below the one holding it
  (``upper_bound_offset``), so it never touches an unstable transaction.
- *clean bytes*: the segments below the first dirty offset; *cleanable bytes*: the segments
  from the first dirty offset to the segment holding the first uncleanable offset.
  ``cleanable ratio = cleanable / (clean + cleanable)``.
- A compacted log is *cleanable* when its ratio exceeds ``min.cleanable.dirty.ratio``, or
  when ``max.compaction.lag.ms`` has passed since the first batch of its oldest dirty segment
  (and there are cleanable bytes). Of the cleanable logs, the one with the largest ratio
  goes first (Kafka's ``grabFilthiestCompactedLog``).
- Franz extension: a log whose last round kept tombstones is also cleanable once the
  earliest of their delete horizons (KIP-534) has passed, so tombstones go about
  ``delete.retention.ms`` after their first cleaning even when no new data arrives; Kafka
  removes them at its next ratio-triggered round. This is in memory only.

Logs being cleaned, paused (``abort_and_pause``) or marked uncleanable (a round failed on
bad data) are skipped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from franz.clock import Clock
from franz.storage.checkpoints import (
    CLEANER_OFFSET_CHECKPOINT,
    CheckpointError,
    OffsetCheckpointFile,
)
from franz.storage.files import TopicPartition
from franz.storage.log import Log
from franz.storage.segment import LogSegment

__all__ = ["CleanerConfig", "CleanerLogStatus", "LogCleanerManager", "LogToClean"]

log = logging.getLogger(__name__)

LONG_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """The broker's ``log.cleaner.*`` settings, with Kafka's defaults."""

    enable: bool = True  # log.cleaner.enable
    threads: int = 1  # log.cleaner.threads
    backoff_ms: int = 15_000  # log.cleaner.backoff.ms
    dedupe_buffer_size: int = 134_217_728  # log.cleaner.dedupe.buffer.size
    io_buffer_size: int = 524_288  # log.cleaner.io.buffer.size
    io_buffer_load_factor: float = 0.9  # log.cleaner.io.buffer.load.factor
    io_max_bytes_per_second: float = 1.7976931348623157e308  # log.cleaner.io.max.bytes...

    @property
    def enabled(self) -> bool:
        return self.enable and self.threads > 0

    @classmethod
    def from_broker_config(cls, get: Callable[[str], Any]) -> CleanerConfig:
        """From a broker config's getter (``BrokerConfig.get``), by Kafka key."""
        return cls(
            enable=bool(get("log.cleaner.enable")),
            threads=int(get("log.cleaner.threads")),
            backoff_ms=int(get("log.cleaner.backoff.ms")),
            dedupe_buffer_size=int(get("log.cleaner.dedupe.buffer.size")),
            io_buffer_size=int(get("log.cleaner.io.buffer.size")),
            io_buffer_load_factor=float(get("log.cleaner.io.buffer.load.factor")),
            io_max_bytes_per_second=float(get("log.cleaner.io.max.bytes.per.second")),
        )


@dataclass(frozen=True, slots=True)
class LogToClean:
    """A compacted log with its cleanable range (Kafka's ``LogToClean``)."""

    topic_partition: TopicPartition
    log: Log
    first_dirty_offset: int
    first_uncleanable_offset: int
    #: The base offset of the segment holding ``first_uncleanable_offset`` (the active
    #: segment's if none): the round's upper bound (Kafka's ``LogToClean.firstUncleanableOffset``,
    #: ``upperBoundOffsetOfCleaningRound``).
    upper_bound_offset: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool
    horizon_passed: bool

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


@dataclass(slots=True)
class CleanerLogStatus:
    """What ops can ask about one partition's cleaning (``LogCleaner.status``)."""

    cleanings: int = 0
    last_cleaned_ms: int = -1
    first_dirty_offset: int = -1
    last_bytes_read: int = 0
    last_bytes_written: int = 0
    last_records_removed: int = 0
    total_bytes_read: int = 0
    total_bytes_written: int = 0
    total_records_removed: int = 0
    last_error: str | None = None


class LogCleanerManager:
    """Selection, checkpoints and pause/uncleanable states; loop thread only."""

    def __init__(self, log_dirs: Iterable[Path], clock: Clock) -> None:
        self.log_dirs = list(log_dirs)
        self._clock = clock
        self._checkpoints: dict[Path, dict[TopicPartition, int]] = {}
        self.paused: dict[TopicPartition, int] = {}
        self.uncleanable: set[TopicPartition] = set()
        self.delete_horizons: dict[TopicPartition, int] = {}
        self.status: dict[TopicPartition, CleanerLogStatus] = {}

    # -- checkpoints ---------------------------------------------------------------------

    def load_checkpoints(self) -> None:
        for directory in self.log_dirs:
            try:
                offsets = OffsetCheckpointFile(directory / CLEANER_OFFSET_CHECKPOINT).read()
            except (CheckpointError, OSError) as exc:
                log.warning("ignoring a corrupt cleaner checkpoint: %s", exc)
                offsets = {}
            self._checkpoints[directory] = offsets

    def checkpoint(self, directory: Path, tp: TopicPartition) -> int | None:
        return self._checkpoints.get(directory, {}).get(tp)

    def all_checkpoints(self) -> dict[Path, dict[TopicPartition, int]]:
        return {d: dict(offsets) for d, offsets in self._checkpoints.items()}

    def update_checkpoint(self, directory: Path, tp: TopicPartition, offset: int | None) -> None:
        """Set (or with None remove) ``tp``'s first dirty offset and rewrite the dir's file.

        Raises ``OSError``; the caller reports the dir as failed.
        """
        offsets = self._checkpoints.setdefault(directory, {})
        if offset is None:
            if offsets.pop(tp, None) is None:
                return
        else:
            offsets[tp] = offset
        OffsetCheckpointFile(directory / CLEANER_OFFSET_CHECKPOINT).write(offsets)

    def forget(self, tp: TopicPartition) -> None:
        """The partition is gone: drop its in-memory state (not its checkpoint entry)."""
        self.paused.pop(tp, None)
        self.uncleanable.discard(tp)
        self.delete_horizons.pop(tp, None)
        self.status.pop(tp, None)

    # -- pausing -------------------------------------------------------------------------

    def pause(self, tp: TopicPartition) -> None:
        self.paused[tp] = self.paused.get(tp, 0) + 1

    def resume(self, tp: TopicPartition) -> None:
        count = self.paused.get(tp, 0) - 1
        if count <= 0:
            self.paused.pop(tp, None)
        else:
            self.paused[tp] = count

    # -- selection -----------------------------------------------------------------------

    def cleanable_offsets(self, lg: Log, now: int) -> tuple[int, int, bool]:
        """(first dirty offset, first uncleanable offset, checkpoint must be rewritten)."""
        start = lg.log_start_offset
        checkpoint = self.checkpoint(lg.dir.parent, lg.topic_partition)
        first_dirty = start if checkpoint is None else checkpoint
        force = False
        if first_dirty < start:
            if not lg.config.delete:
                log.warning(
                    "resetting the first dirty offset of %s to the log start offset %d since "
                    "the checkpointed offset %d is invalid",
                    lg.name,
                    start,
                    first_dirty,
                )
            first_dirty, force = start, True
        elif first_dirty > lg.log_end_offset:
            log.warning(
                "the checkpointed first dirty offset %d of %s is past its log end offset %d; "
                "resetting it to the log start offset %d",
                first_dirty,
                lg.name,
                lg.log_end_offset,
                start,
            )
            first_dirty, force = start, True
        active = lg.active_segment
        uncleanable = min(lg.last_stable_offset, active.base_offset)
        lag = max(lg.config.min_compaction_lag_ms, 0)
        if lag > 0:
            for segment in _non_active_from(lg, first_dirty):
                if segment.largest_timestamp > now - lag:
                    uncleanable = min(uncleanable, segment.base_offset)
                    break
        return first_dirty, max(first_dirty, uncleanable), force

    def max_compaction_delay(self, lg: Log, first_dirty: int, now: int) -> int:
        """How far past ``max.compaction.lag.ms`` the oldest dirty segment is (0: not)."""
        max_lag = max(lg.config.max_compaction_lag_ms, 0)
        if max_lag >= LONG_MAX:
            return 0
        stamps = []
        for segment in _non_active_from(lg, first_dirty):
            first = segment.first_batch()
            if first is not None and first.max_timestamp > 0:
                stamps.append(first.max_timestamp)
        clean_until = now - max_lag
        earliest = min(stamps, default=LONG_MAX)
        return clean_until - earliest if earliest < clean_until else 0

    def log_to_clean(self, lg: Log, now: int) -> LogToClean:
        tp = lg.topic_partition
        first_dirty, uncleanable, force = self.cleanable_offsets(lg, now)
        if force:
            self.update_checkpoint(lg.dir.parent, tp, first_dirty)
        segments = lg.segments
        # The segment holding the first uncleanable offset (or the active one) bounds
        # the cleanable bytes (Kafka's calculateCleanableBytes).
        bound = segments[-1].base_offset
        for segment in _non_active_from(lg, uncleanable):
            bound = segment.base_offset
            break
        clean = sum(s.size for s in _overlapping(lg, -1, first_dirty))
        cleanable = sum(s.size for s in _overlapping(lg, min(first_dirty, bound), bound))
        horizon = self.delete_horizons.get(tp, -1)
        return LogToClean(
            tp,
            lg,
            first_dirty,
            uncleanable,
            bound,
            clean,
            cleanable,
            need_compaction_now=self.max_compaction_delay(lg, first_dirty, now) > 0,
            horizon_passed=0 <= horizon <= now,
        )

    def grab_filthiest(
        self, logs: Mapping[TopicPartition, Log], now: int, busy: Iterable[TopicPartition]
    ) -> LogToClean | None:
        """The cleanable compacted log with the largest dirty ratio, if any."""
        skip = set(busy) | set(self.paused) | self.uncleanable
        candidates: list[LogToClean] = []
        for tp, lg in logs.items():
            if tp in skip or lg.offline or not lg.config.compact:
                continue
            try:
                ltc = self.log_to_clean(lg, now)
            except OSError as exc:
                log.warning("cannot compute the cleanable range of %s: %s", lg.name, exc)
                continue
            if ltc.total_bytes <= 0:
                continue
            if (
                (ltc.need_compaction_now and ltc.cleanable_bytes > 0)
                or ltc.cleanable_ratio > lg.config.min_cleanable_dirty_ratio
                or ltc.horizon_passed
            ):
                candidates.append(ltc)
        if not candidates:
            return None
        return max(candidates, key=lambda c: c.cleanable_ratio)


def _overlapping(lg: Log, start: int, end: int) -> list[LogSegment]:
    """Segments holding offsets in [start, end) (Kafka's ``logSegments(from, to)``)."""
    segments = lg.segments
    out: list[LogSegment] = []
    for i, segment in enumerate(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else LONG_MAX
        if segment.base_offset < end and upper > start:
            out.append(segment)
    return out


def _non_active_from(lg: Log, offset: int) -> list[LogSegment]:
    """Kafka's ``nonActiveLogSegmentsFrom``: non-active segments from the one holding it."""
    active = lg.active_segment
    if offset > active.base_offset:
        return []
    return [s for s in _overlapping(lg, offset, active.base_offset) if s is not active]
