"""The log cleaner: worker threads plus the loop-side scheduling and swap (Kafka's
``LogCleaner``).

Concurrency, the whole point of this module:

- The event loop (``LogManager.tick`` -> :meth:`LogCleaner.tick`) owns every ``Log``. It
  picks the filthiest log (``LogCleanerManager``), and hands a ``CleaningJob`` to a worker:
  duplicated descriptors of the non-active segments below the first uncleanable offset,
  their sizes, and the settings. Building a job reads no log bytes.
- ``log.cleaner.threads`` worker threads run ``Cleaner.clean`` on jobs: they read the source
  segments through their own descriptors, build the offset map and write ``.cleaned``
  files, and post a ``CleaningResult``. They never touch a ``Log``, so appends and fetches
  on the loop are never blocked by a cleaning (only by the GIL's time slicing).
- The loop applies a result on its next tick, after checking that every source segment is
  still one of the log's non-active segments with the size it had (retention, DeleteRecords,
  truncation or deletion may have changed the log meanwhile). If not, the result is dropped
  and its ``.cleaned`` files removed. Otherwise ``Log.replace_segments`` swaps each cleaned
  segment in (old segments renamed ``.deleted``, removed after ``file.delete.delay.ms``, so
  fetches holding their descriptors finish), then ``cleaner-offset-checkpoint`` records the
  round's end offset as the new first dirty offset, and one INFO line summarises the round.
- Aborts (Kafka's ``abortCleaning`` / ``abortAndPauseCleaning``): an ``Event`` per job that
  the worker checks between batches; the worker then removes its ``.cleaned`` files. Topic
  deletion aborts and forgets the partition; shutdown aborts every job and joins the threads.
- Backoff: when no log is cleanable, the next look is ``log.cleaner.backoff.ms`` later;
  right after a round, the next tick looks again (Kafka's thread loop).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from franz.clock import Clock
from franz.errors import KafkaStorageError
from franz.storage.cleaner.cleaner import (
    Cleaner,
    CleaningJob,
    CleaningResult,
    SourceSegment,
)
from franz.storage.cleaner.manager import (
    CleanerConfig,
    CleanerLogStatus,
    LogCleanerManager,
    LogToClean,
)
from franz.storage.cleaner.offset_map import max_entries_for
from franz.storage.cleaner.segment_io import SegmentReadError, cleaned_file_names
from franz.storage.files import TopicPartition
from franz.storage.log import Log
from franz.storage.segment import LogSegment

__all__ = ["LogCleaner", "build_job"]

log = logging.getLogger(__name__)

_MB = 1024 * 1024


@dataclass(slots=True)
class _InProgress:
    job: CleaningJob
    log: Log
    segments: dict[int, tuple[LogSegment, int]]  # base offset -> (segment, size then)
    dropped: bool = False
    started_ms: int = 0


@dataclass(slots=True)
class _Workers:
    jobs: queue.Queue[CleaningJob | None] = field(default_factory=queue.Queue)
    results: queue.SimpleQueue[CleaningResult] = field(default_factory=queue.SimpleQueue)
    threads: list[threading.Thread] = field(default_factory=list)
    outstanding: int = 0
    idle: threading.Condition = field(default_factory=threading.Condition)


class LogCleaner:
    """Compaction for every log of a ``LogManager``; see the module docstring."""

    def __init__(
        self,
        log_dirs: list[Path],
        clock: Clock,
        config: CleanerConfig,
    ) -> None:
        self.config = config
        self._clock = clock
        self.manager = LogCleanerManager(log_dirs, clock)
        self._in_progress: dict[TopicPartition, _InProgress] = {}
        self._workers = _Workers()
        self._nothing_cleanable_at: int | None = None
        self._running = False
        self._max_map_entries = max_entries_for(
            config.dedupe_buffer_size, config.threads, config.io_buffer_load_factor
        )

    # -- life cycle ----------------------------------------------------------------------

    def startup(self) -> None:
        self.manager.load_checkpoints()
        if not self.config.enabled or self._running:
            return
        self._running = True
        for i in range(self.config.threads):
            thread = threading.Thread(
                target=self._run_worker, name=f"kafka-log-cleaner-thread-{i}", daemon=True
            )
            thread.start()
            self._workers.threads.append(thread)

    def shutdown(self, timeout_s: float = 30.0) -> None:
        """Abort every round and join the threads; ``.cleaned`` leftovers go at next load."""
        for entry in self._in_progress.values():
            entry.dropped = True
            entry.job.abort.set()
        if self._running:
            for _ in self._workers.threads:
                self._workers.jobs.put(None)
            for thread in self._workers.threads:
                thread.join(timeout_s)
            self._workers.threads.clear()
            self._running = False
        while True:
            try:
                result = self._workers.results.get_nowait()
            except queue.Empty:
                break
            result.job.close()
        for entry in self._in_progress.values():
            entry.job.close()
        self._in_progress.clear()

    @property
    def is_running(self) -> bool:
        return self._running

    def _run_worker(self) -> None:
        cleaner = Cleaner(self._max_map_entries)
        workers = self._workers
        while True:
            job = workers.jobs.get()
            if job is None:
                return
            try:
                result = cleaner.clean(job)
            except BaseException as exc:  # never lose a job: the loop must hear back
                result = CleaningResult(job, error=exc)
                job.close()
            workers.results.put(result)
            with workers.idle:
                workers.outstanding -= 1
                workers.idle.notify_all()

    def await_idle(self, timeout_s: float = 30.0) -> bool:
        """Block until no round is running in a worker (tests); True if so in time."""
        workers = self._workers
        with workers.idle:
            return workers.idle.wait_for(lambda: workers.outstanding == 0, timeout_s)

    # -- loop side -----------------------------------------------------------------------

    def tick(self, logs: Mapping[TopicPartition, Log]) -> None:
        """Apply finished rounds, then start new ones on idle threads (loop thread)."""
        applied = self._apply_results(logs)
        if not self._running:
            return
        now = self._clock.wall_ms()
        if applied:
            self._nothing_cleanable_at = None
        while len(self._in_progress) < self.config.threads:
            since = self._nothing_cleanable_at
            if since is not None and now - since < self.config.backoff_ms:
                return
            ltc = self.manager.grab_filthiest(logs, now, self._in_progress)
            if ltc is None:
                self._nothing_cleanable_at = now
                return
            self._nothing_cleanable_at = None
            self._start(ltc, now)

    def _start(self, ltc: LogToClean, now: int) -> None:
        job, segments = build_job(ltc, self.config, self._max_map_entries, now)
        self._in_progress[ltc.topic_partition] = _InProgress(job, ltc.log, segments, started_ms=now)
        with self._workers.idle:
            self._workers.outstanding += 1
        self._workers.jobs.put(job)
        log.debug(
            "cleaning %s: dirty section [%d, %d), cleanable ratio %.2f",
            ltc.log.name,
            ltc.first_dirty_offset,
            ltc.first_uncleanable_offset,
            ltc.cleanable_ratio,
        )

    def _apply_results(self, logs: Mapping[TopicPartition, Log]) -> int:
        applied = 0
        while True:
            try:
                result = self._workers.results.get_nowait()
            except queue.Empty:
                return applied
            tp = result.job.topic_partition
            entry = self._in_progress.get(tp)
            if entry is None or entry.job is not result.job:
                continue
            del self._in_progress[tp]
            if logs.get(tp) is not entry.log:
                continue  # deleted: the directory and whatever the worker wrote are gone
            if entry.dropped:
                self._discard(entry.log, result)  # finished before it saw the abort
                continue
            applied += 1
            try:
                self._apply(entry, result)
            except (OSError, KafkaStorageError) as exc:
                log.error("could not swap in the cleaned segments of %s: %s", entry.log.name, exc)

    def _apply(self, entry: _InProgress, result: CleaningResult) -> None:
        lg = entry.log
        tp = lg.topic_partition
        status = self.manager.status.setdefault(tp, CleanerLogStatus())
        if not result.ok:
            self._discard(lg, result)
            if result.error is not None and not isinstance(result.error, SegmentReadError):
                status.last_error = repr(result.error)
                self.manager.uncleanable.add(tp)
                log.warning(
                    "cleaning %s failed; it stays uncleanable until restart: %r",
                    lg.name,
                    result.error,
                )
            return
        if lg.offline or not self._sources_unchanged(entry, result):
            log.info("dropping the cleaning of %s: its segments changed during the round", lg.name)
            self._discard(lg, result)
            return
        for group in result.groups:
            old = [entry.segments[base][0] for base in group.replaced]
            lg.replace_segments(old, group.base_offset)
        self.manager.update_checkpoint(lg.dir.parent, tp, result.end_offset)
        self.manager.delete_horizons[tp] = result.earliest_delete_horizon_ms
        self._record(entry, result, status)

    def _sources_unchanged(self, entry: _InProgress, result: CleaningResult) -> bool:
        current = entry.log.segments
        live = {id(s) for s in current[:-1]}
        for group in result.groups:
            for base in group.replaced:
                segment, size = entry.segments[base]
                if id(segment) not in live or segment.size != size:
                    return False
        return True

    def _discard(self, lg: Log, result: CleaningResult) -> None:
        for group in result.groups:
            for name in cleaned_file_names(group.base_offset):
                with contextlib.suppress(OSError):
                    (lg.dir / name).unlink(missing_ok=True)

    def _record(self, entry: _InProgress, result: CleaningResult, status: CleanerLogStatus) -> None:
        stats = result.stats
        removed = stats.records_read - stats.records_retained
        status.cleanings += 1
        status.last_cleaned_ms = self._clock.wall_ms()
        status.first_dirty_offset = result.end_offset
        status.last_bytes_read = stats.bytes_read
        status.last_bytes_written = stats.bytes_written
        status.last_records_removed = removed
        status.total_bytes_read += stats.bytes_read
        status.total_bytes_written += stats.bytes_written
        status.total_records_removed += removed
        status.last_error = None
        read_mb = (stats.bytes_read + stats.map_bytes_read) / _MB
        reduction = (
            100.0 * (1 - stats.bytes_written / stats.bytes_read) if stats.bytes_read else 0.0
        )
        log.info(
            "cleaned log %s (dirty section = [%d, %d)): %.1f MB of log processed in %.2f s "
            "(%.1f MB/s); %d of %d records removed (%d without a key, %d tombstones); "
            "%.1f MB -> %.1f MB (%.1f%% size reduction) in %d segment(s); offset map %.1f%% full",
            entry.log.name,
            entry.job.first_dirty_offset,
            result.end_offset,
            read_mb,
            stats.elapsed_s,
            read_mb / stats.elapsed_s,
            removed,
            stats.records_read,
            stats.invalid_records,
            stats.tombstones_removed,
            stats.bytes_read / _MB,
            stats.bytes_written / _MB,
            reduction,
            len(result.groups),
            100.0 * stats.buffer_utilization,
        )

    # -- control -------------------------------------------------------------------------

    def abort_cleaning(self, tp: TopicPartition, directory: Path | None = None) -> None:
        """The partition is being deleted: abort its round, forget it and its checkpoint
        entry (Kafka's ``abortCleaning`` + ``updateCheckpoints(partitionToRemove)``)."""
        entry = self._in_progress.get(tp)
        if entry is not None:
            entry.dropped = True
            entry.job.abort.set()
        self.manager.forget(tp)
        if directory is not None:
            try:
                self.manager.update_checkpoint(directory, tp, None)
            except OSError as exc:
                log.error("could not update the cleaner checkpoint in %s: %s", directory, exc)

    def abort_and_pause_cleaning(self, tp: TopicPartition) -> None:
        """Abort ``tp``'s round, if any, and clean it no more until :meth:`resume_cleaning`."""
        entry = self._in_progress.get(tp)
        if entry is not None:
            entry.dropped = True
            entry.job.abort.set()
        self.manager.pause(tp)

    def resume_cleaning(self, tp: TopicPartition) -> None:
        self.manager.resume(tp)

    def alter_checkpoint_dir(self, tp: TopicPartition, source: Path, dest: Path) -> None:
        """``tp``'s log moved from ``source`` to ``dest`` (a log-dir move): its first dirty
        offset moves from one dir's ``cleaner-offset-checkpoint`` to the other's (Kafka's
        ``alterCheckpointDir``)."""
        offset = self.manager.checkpoint(source, tp)
        try:
            self.manager.update_checkpoint(source, tp, None)
            if offset is not None:
                self.manager.update_checkpoint(dest, tp, offset)
        except OSError as exc:
            log.error("could not move the cleaner checkpoint of %s to %s: %s", tp, dest, exc)

    def is_cleaning(self, tp: TopicPartition) -> bool:
        return tp in self._in_progress

    def status(self) -> dict[TopicPartition, CleanerLogStatus]:
        """Per partition: last cleaned time, bytes read/written, records removed."""
        return dict(self.manager.status)


def build_job(
    ltc: LogToClean, config: CleanerConfig, max_map_entries: int, now: int
) -> tuple[CleaningJob, dict[int, tuple[LogSegment, int]]]:
    """The job for one round of ``ltc`` (loop thread), and its source segments by base
    offset with the size each had, for the check before the swap. Raises ``OSError``.

    The round's upper bound is the base offset of the segment holding the first uncleanable
    offset (Kafka's ``LogToClean.firstUncleanableOffset``): a round never reads a segment
    holding the first unstable offset. The aborted transactions (``.txnindex``) the thread
    needs are collected here, on the loop, as Kafka's cleaner asks its ``UnifiedLog``.
    """
    lg = ltc.log
    cfg = lg.config
    upper = ltc.upper_bound_offset
    all_segments = lg.segments
    segments = [s for s in all_segments[:-1] if s.base_offset < upper]
    sources: list[SourceSegment] = []
    dir_fd = os.open(lg.dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, s in enumerate(segments):
            aborted = lg.collect_aborted_transactions(
                s.base_offset, all_segments[i + 1].base_offset
            )
            fd = os.dup(s.fd)
            sources.append(
                SourceSegment(
                    s.base_offset,
                    fd,
                    s.size,
                    s.offset_index.size_in_bytes,
                    s.time_index.size_in_bytes,
                    os.fstat(fd).st_mtime_ns,
                    tuple(aborted),
                )
            )
    except OSError:
        for source in sources:
            os.close(source.fd)
        os.close(dir_fd)
        raise
    producers = {
        pid: (entry.last_data_offset, entry.producer_epoch)
        for pid, entry in lg.producer_state.producers.items()
    }
    job = CleaningJob(
        topic_partition=ltc.topic_partition,
        dir_fd=dir_fd,
        directory=lg.dir,
        segments=tuple(sources),
        first_dirty_offset=ltc.first_dirty_offset,
        first_uncleanable_offset=upper,
        now_ms=now,
        delete_retention_ms=cfg.delete_retention_ms,
        segment_bytes=cfg.segment_bytes,
        max_index_bytes=cfg.segment_index_bytes,
        index_interval_bytes=cfg.index_interval_bytes,
        active_producers=producers,
        max_map_entries=max_map_entries,
        map_aborted_txns=tuple(lg.collect_aborted_transactions(ltc.first_dirty_offset, upper)),
        io_buffer_size=config.io_buffer_size,
        io_max_bytes_per_second=config.io_max_bytes_per_second,
    )
    return job, {s.base_offset: (s, s.size) for s in segments}
