"""The broker's logs across its log dirs (Kafka's ``LogManager``).

Each log dir holds::

    .lock                              flock'ed while a broker uses the dir
    meta.properties                    version=0, broker.id, cluster.id (Kafka's ZK-era form)
    .kafka_cleanshutdown               present only between a clean shutdown and the next start
    recovery-point-offset-checkpoint   per partition: everything below is fsynced
    log-start-offset-checkpoint        per partition: DeleteRecords / retention progress
    replication-offset-checkpoint      per partition: the high watermark
    cleaner-offset-checkpoint          per compacted partition: the cleaner's first dirty offset
    <topic>-<partition>/               one Log each

Start-up locks every dir (a second broker on the same dir fails fast), checks
``meta.properties`` against the configured broker id, then loads every partition: after a
clean shutdown no log bytes are read; otherwise the unflushed part of each log is recovered
(``franz.storage.log_loader``). The clean-shutdown marker is removed once loading is done,
so a crash from then on is detected at the next start.

New partitions go to the live dir holding the fewest partitions, or to the dir an
AlterReplicaLogDirs asked for before they existed. Future replicas (``<topic>-<partition>
.<uuid>-future`` dirs: a replica moving to another dir, KIP-113) are kept by
``franz.storage.future_logs`` and counted with the others. An I/O error in one dir
takes that dir's logs offline (their requests get KAFKA_STORAGE_ERROR); the other dirs keep
serving (Kafka's ``LogDirFailureChannel``). When the last online dir fails, a broker has
nothing left to serve: the manager logs Kafka's fatal line ("Shutdown broker because all log
dirs in ... have failed") and calls ``on_all_dirs_failed``, with which the broker halts with
exit code 1 (Kafka's ``Exit.halt(1)``) so that clients fail over, instead of living on as a
process that answers metadata and no data. Nothing is flushed or checkpointed then: the next
start recovers those dirs as after a crash, once the disk has room again.

Periodic work is driven by :meth:`tick` with the current time, called by the broker's event
loop: retention every ``log.retention.check.interval.ms``, flushes every
``log.flush.scheduler.interval.ms``, checkpoints on their intervals, idle idempotent
producers removed every ``producer.id.expiration.check.interval.ms`` (those idle for
``producer.id.expiration.ms``; ``franz.storage.producer_state``), and on every tick the log
cleaner (``franz.storage.cleaner``) swaps in finished compaction rounds and starts new ones
on its threads (``log.cleaner.*`` settings as a ``CleanerConfig``). Not thread-safe: the
cleaner's threads never touch a ``Log``.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from franz.clock import Clock
from franz.config.properties import load_properties, write_properties_atomic
from franz.config.topic import LogConfig
from franz.errors import (
    InconsistentBrokerMetadataError,
    KafkaStorageError,
    LogDirLockedError,
    LogDirNotFoundError,
)
from franz.storage.checkpoints import (
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    CheckpointError,
    OffsetCheckpointFile,
)
from franz.storage.cleaner import CleanerConfig, LogCleaner
from franz.storage.files import (
    DELETE_DIR_SUFFIX,
    TopicPartition,
    delete_dir_name,
    parse_future_dir_name,
    parse_partition_dir_name,
)
from franz.storage.future_logs import FutureLogs
from franz.storage.log import Log
from franz.storage.producer_state import (
    DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS,
    DEFAULT_PRODUCER_ID_EXPIRATION_MS,
)

__all__ = ["CLEAN_SHUTDOWN_FILE", "LOCK_FILE", "META_PROPERTIES", "LogManager"]

log = logging.getLogger(__name__)

LOCK_FILE = ".lock"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


class LogManager:
    def __init__(
        self,
        log_dirs: Sequence[Path | str],
        *,
        default_config: LogConfig,
        clock: Clock,
        broker_id: int = 0,
        cluster_id: str | None = None,
        topic_config: Callable[[str], LogConfig] | None = None,
        retention_check_interval_ms: int = 300_000,
        flush_check_interval_ms: int = 2**63 - 1,
        recovery_point_checkpoint_interval_ms: int = 60_000,
        log_start_offset_checkpoint_interval_ms: int = 60_000,
        high_watermark_checkpoint_interval_ms: int = 5_000,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        transaction_verification_enabled: bool = False,
        producer_id_expiration_check_interval_ms: int = (
            DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS
        ),
        cleaner_config: CleanerConfig | None = None,
        recovery_verify_all: bool = False,
        on_all_dirs_failed: Callable[[], None] | None = None,
        on_log_dir_failure: Callable[[Path], None] | None = None,
    ) -> None:
        if not log_dirs:
            raise ValueError("at least one log dir is needed")
        self.log_dirs = [Path(d).resolve() for d in log_dirs]
        if len(set(self.log_dirs)) != len(self.log_dirs):
            raise ValueError(f"duplicate log dirs in {[str(d) for d in log_dirs]}")
        self.default_config = default_config
        self.clock = clock
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self._topic_config = topic_config
        self._on_all_dirs_failed = on_all_dirs_failed
        self._on_log_dir_failure = on_log_dir_failure
        self.producer_id_expiration_ms = producer_id_expiration_ms
        #: ``transaction.partition.verification.enable`` (KIP-890), for every log's producer state.
        self.transaction_verification_enabled = transaction_verification_enabled
        #: ``log.recovery.verify.all``: CRC-check every segment at load (franz.storage.log_loader).
        self.recovery_verify_all = recovery_verify_all
        self._logs: dict[TopicPartition, Log] = {}
        #: Future replicas (log-dir moves) and the logs they replaced.
        self.futures = FutureLogs(self)
        self._locks: dict[Path, int] = {}
        self.offline_dirs: set[Path] = set()
        self.had_clean_shutdown: dict[Path, bool] = {}
        self._intervals = {
            "retention": retention_check_interval_ms,
            "flush": flush_check_interval_ms,
            "recovery": recovery_point_checkpoint_interval_ms,
            "start": log_start_offset_checkpoint_interval_ms,
            "hw": high_watermark_checkpoint_interval_ms,
            "producers": producer_id_expiration_check_interval_ms,
        }
        self._last_run: dict[str, int] = {}
        self._started = False
        self.cleaner = LogCleaner(self.log_dirs, clock, cleaner_config or CleanerConfig())

    # -- start-up ------------------------------------------------------------------------

    def startup(self) -> None:
        """Lock and check every dir, then load (and if needed recover) every partition."""
        started = time.monotonic()
        try:
            for directory in self.log_dirs:
                directory.mkdir(parents=True, exist_ok=True)
                self._lock(directory)
            # Check every dir before writing any, so a refused start stamps nothing.
            missing = [d for d in self.log_dirs if not self._check_meta_properties(d)]
            for directory in missing:
                self._write_meta_properties(directory)
            for directory in self.log_dirs:
                self._load_dir(directory)
        except BaseException:
            self._close_all_handles()
            self._unlock_all()
            raise
        for directory in self.log_dirs:
            (directory / CLEAN_SHUTDOWN_FILE).unlink(missing_ok=True)
        self.cleaner.startup()
        now = self.clock.wall_ms()
        self._last_run = dict.fromkeys(self._intervals, now)
        self._started = True
        log.info(
            "loaded %d partition(s) from %s in %.0f ms (clean shutdown: %s)",
            len(self._logs),
            ", ".join(str(d) for d in self.log_dirs),
            (time.monotonic() - started) * 1000,
            all(self.had_clean_shutdown.values()),
        )

    def _lock(self, directory: Path) -> None:
        fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise LogDirLockedError(
                f"Failed to acquire lock on file {LOCK_FILE} in {directory}. A Kafka instance "
                "in another process or thread is using this directory."
            ) from None
        self._locks[directory] = fd

    def _check_meta_properties(self, directory: Path) -> bool:
        """Check a dir's meta.properties against the config; False if it must be written."""
        path = directory / META_PROPERTIES
        if path.exists():
            props = load_properties(path)
            stored_id = props.get("broker.id")
            if stored_id is not None and int(stored_id) != self.broker_id:
                raise InconsistentBrokerMetadataError(
                    f"Configured broker.id {self.broker_id} doesn't match stored broker.id "
                    f"{stored_id} in {path}. If you moved your data, make sure your configured "
                    "broker.id matches. If you intend to create a new broker, you should "
                    "remove all data in your data directories (log.dirs)."
                )
            stored_cluster = props.get("cluster.id")
            if self.cluster_id is None:
                self.cluster_id = stored_cluster
            elif stored_cluster is not None and stored_cluster != self.cluster_id:
                raise InconsistentBrokerMetadataError(
                    f"The Cluster ID {self.cluster_id} doesn't match stored clusterId "
                    f"{stored_cluster} in {path}. The broker is trying to join the wrong "
                    "cluster. Configured zookeeper.connect may be wrong."
                )
            return stored_cluster is not None or self.cluster_id is None
        return False

    def _write_meta_properties(self, directory: Path) -> None:
        path = directory / META_PROPERTIES
        values = {"version": "0", "broker.id": str(self.broker_id)}
        if self.cluster_id is not None:
            values = {"cluster.id": self.cluster_id, **values}
        write_properties_atomic(path, values, header=f"\n#{time.ctime()}")

    def _load_dir(self, directory: Path) -> None:
        fresh = not any(
            parse_partition_dir_name(child.name) or parse_future_dir_name(child.name)
            for child in directory.iterdir()
            if child.is_dir()
        )
        clean = fresh or (directory / CLEAN_SHUTDOWN_FILE).exists()
        self.had_clean_shutdown[directory] = clean
        if not clean:
            log.warning("%s was not shut down cleanly: recovering unflushed data", directory)
        recovery = self._read_checkpoint(directory, RECOVERY_POINT_CHECKPOINT)
        starts = self._read_checkpoint(directory, LOG_START_OFFSET_CHECKPOINT)
        hws = self._read_checkpoint(directory, HIGH_WATERMARK_CHECKPOINT)
        for child in sorted(directory.iterdir()):
            if not child.is_dir():
                continue
            if child.name.endswith(DELETE_DIR_SUFFIX):
                log.info("finishing the deletion of %s", child)
                shutil.rmtree(child, ignore_errors=True)
                continue
            future_tp = parse_future_dir_name(child.name)
            if future_tp is not None:
                future = self._open_log(child, future_tp, recovery, starts, hws, clean)
                try:
                    self.futures.adopt(future_tp, future)
                except KafkaStorageError as exc:
                    raise InconsistentBrokerMetadataError(str(exc)) from None
                continue
            tp = parse_partition_dir_name(child.name)
            if tp is None:
                continue
            if tp in self._logs:
                raise InconsistentBrokerMetadataError(
                    f"Duplicate log directories for {tp} are found in both "
                    f"{self._logs[tp].dir} and {child}. It is likely because log directory "
                    "failure happened while broker was replacing current replica with future "
                    "replica. Recover broker from this failure by manually deleting one of "
                    "the two directories for this partition."
                )
            self._logs[tp] = self._open_log(child, tp, recovery, starts, hws, clean)

    def _open_log(
        self,
        child: Path,
        tp: TopicPartition,
        recovery: dict[TopicPartition, int],
        starts: dict[TopicPartition, int],
        hws: dict[TopicPartition, int],
        clean: bool,
    ) -> Log:
        return Log(
            child,
            tp,
            self.config_for(tp.topic),
            self.clock,
            recovery_point=recovery.get(tp, 0),
            log_start_offset=starts.get(tp, 0),
            high_watermark=hws.get(tp, 0),
            had_clean_shutdown=clean,
            on_io_error=self.handle_log_dir_failure,
            producer_id_expiration_ms=self.producer_id_expiration_ms,
            transaction_verification_enabled=self.transaction_verification_enabled,
            verify_all=self.recovery_verify_all,
        )

    def _read_checkpoint(self, directory: Path, name: str) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpointFile(directory / name).read()
        except CheckpointError as exc:
            # Kafka treats an unreadable checkpoint as absent: offsets fall back to 0 and
            # recovery re-validates the whole log, which is safe.
            log.warning("ignoring a corrupt checkpoint: %s", exc)
            return {}

    def config_for(self, topic: str) -> LogConfig:
        return self._topic_config(topic) if self._topic_config else self.default_config

    # -- logs ----------------------------------------------------------------------------

    def get_log(self, tp: TopicPartition) -> Log | None:
        return self._logs.get(tp)

    @property
    def logs(self) -> dict[TopicPartition, Log]:
        return dict(self._logs)

    def get_future_log(self, tp: TopicPartition) -> Log | None:
        """The future replica of ``tp`` (a log-dir move in progress), if any."""
        return self.futures.get(tp)

    @property
    def live_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if d not in self.offline_dirs]

    def is_log_dir_online(self, path: str) -> bool:
        """Whether the configured log dir ``path`` (absolute, as DescribeLogDirs names it)
        is online (Kafka's ``isLogDirOnline``); ``LogDirNotFoundError`` for a path that is
        not one of ``log.dirs`` (a relative path never is)."""
        for directory in self.log_dirs:
            if str(directory) == path:
                return directory not in self.offline_dirs
        raise LogDirNotFoundError(f"Log dir {path} is not found in the config.")

    def log_dir(self, path: str) -> Path:
        """The configured log dir named ``path`` (``is_log_dir_online`` accepted it)."""
        return next(d for d in self.log_dirs if str(d) == path)

    def get_or_create_log(
        self,
        tp: TopicPartition,
        *,
        config: LogConfig | None = None,
        topic_id: uuid.UUID | None = None,
    ) -> Log:
        """The partition's log, created in its preferred dir (an AlterReplicaLogDirs that
        came first, ``franz.storage.future_logs``), else in the live dir holding the fewest
        partitions."""
        existing = self._logs.get(tp)
        if existing is not None:
            return existing
        live = self.live_dirs
        if not live:
            raise KafkaStorageError(f"cannot create {tp}: no log dir is online")
        preferred = self.futures.preferred.get(tp)
        if preferred is not None and preferred not in live:
            raise KafkaStorageError(
                f"Can not create log {tp.dir_name} because log directory {preferred} is offline"
            )
        directory = preferred or self._next_log_dir(live)
        try:
            created = Log(
                directory / tp.dir_name,
                tp,
                config or self.config_for(tp.topic),
                self.clock,
                topic_id=topic_id,
                on_io_error=self.handle_log_dir_failure,
                producer_id_expiration_ms=self.producer_id_expiration_ms,
                transaction_verification_enabled=self.transaction_verification_enabled,
            )
        except OSError as exc:
            # A half-made partition dir would be loaded (and adopted) at the next start.
            shutil.rmtree(directory / tp.dir_name, ignore_errors=True)
            self.handle_log_dir_failure(directory, exc)
            raise KafkaStorageError(f"cannot create {tp} in {directory}: {exc}") from exc
        self._logs[tp] = created
        self.futures.preferred.pop(tp, None)
        log.info("created log for %s in %s", tp, directory)
        return created

    def _next_log_dir(self, live: list[Path]) -> Path:
        """Kafka's ``LogManager.nextLogDirs``: the only live dir, else the live dir holding
        the fewest partitions (the first in ``log.dirs`` order on a tie).

        Counting walks every log, so it is done only when there is a choice: with one dir a
        creation costs the same however many partitions the broker already has (a count per
        creation made CreateTopics slow down as partitions accumulated, issue 16). The count
        compares path strings: ``Path.parent`` and ``Path.__hash__`` per log cost more than
        the rest of a creation once there are a few thousand logs.
        """
        if len(live) == 1:
            return live[0]
        counts = dict.fromkeys(map(str, live), 0)
        for existing_log in self._all_logs():
            parent = os.path.dirname(existing_log.dir)
            if parent in counts:
                counts[parent] += 1
        return min(live, key=lambda d: (counts[str(d)], live.index(d)))

    def delete_log(self, tp: TopicPartition) -> bool:
        """Remove a partition, its future replica too: its dir is renamed ``*-delete`` at
        once, then removed."""
        future_removed = self.futures.delete(tp)
        removed = self._logs.pop(tp, None)
        if removed is None:
            return future_removed
        self.cleaner.abort_cleaning(tp, removed.dir.parent)
        removed.close_without_flush()
        with contextlib.suppress(OSError):
            removed.rename_dir(removed.dir.parent / delete_dir_name(tp))
        shutil.rmtree(removed.dir, ignore_errors=True)
        return True

    def update_topic_config(self, topic: str, config: LogConfig) -> None:
        for partition_log in self._all_logs():
            if partition_log.topic_partition.topic == topic:
                partition_log.update_config(config)

    def set_producer_id_expiration_ms(self, expiration_ms: int) -> None:
        """``producer.id.expiration.ms`` changed (a dynamic broker config): every open log's
        producer state and the logs opened later use it (Kafka's
        ``DynamicProducerStateManagerConfig``)."""
        self.producer_id_expiration_ms = expiration_ms
        for partition_log in self._all_logs():
            partition_log.producer_state.producer_id_expiration_ms = expiration_ms

    def set_transaction_verification_enabled(self, enabled: bool) -> None:
        """``transaction.partition.verification.enable`` changed (a dynamic broker config,
        Kafka's ``DynamicProducerStateManagerConfig``): every open log and later ones."""
        self.transaction_verification_enabled = enabled
        for partition_log in self._all_logs():
            partition_log.producer_state.transaction_verification_enabled = enabled

    # -- periodic work -------------------------------------------------------------------

    def tick(self) -> None:
        """Run whatever periodic work is due (the broker calls this about once a second)."""
        now = self.clock.wall_ms()
        if self._due("retention", now):
            self.cleanup_logs()
        if self._due("flush", now):
            self.flush_dirty_logs()
        if self._due("recovery", now):
            self.checkpoint_recovery_points()
        if self._due("start", now):
            self.checkpoint_log_start_offsets()
        if self._due("hw", now):
            self.checkpoint_high_watermarks()
        if self._due("producers", now):
            self.remove_expired_producers()
        self.run_cleaner()
        self._delete_expired_files()
        self.futures.delete_expired()

    def abort_and_pause_cleaning(self, tp: TopicPartition) -> None:
        """A log-dir move starts: no compaction of ``tp`` until ``resume_cleaning``."""
        self.cleaner.abort_and_pause_cleaning(tp)

    def resume_cleaning(self, tp: TopicPartition) -> None:
        self.cleaner.resume_cleaning(tp)

    def run_cleaner(self) -> None:
        """Swap in finished compaction rounds and start new ones (every tick)."""
        logs = {tp: lg for tp, lg in self._logs.items() if not lg.offline}
        try:
            self.cleaner.tick(logs)
        except OSError as exc:
            log.error("log cleaner maintenance failed: %s", exc)

    def _due(self, task: str, now: int) -> bool:
        interval = self._intervals[task]
        if interval <= 0 or now - self._last_run.get(task, now) < interval:
            return False
        self._last_run[task] = now
        return True

    def cleanup_logs(self) -> int:
        """One retention pass over every online log; returns segments deleted."""
        deleted = 0
        for partition_log in self._online_logs():
            with contextlib.suppress(KafkaStorageError):
                deleted += partition_log.delete_old_segments()
        self._delete_expired_files()
        return deleted

    def remove_expired_producers(self) -> int:
        """Drop idle producer ids from every online log; returns how many."""
        return sum(lg.remove_expired_producers() for lg in self._online_logs())

    def _delete_expired_files(self) -> None:
        for partition_log in self._online_logs():
            partition_log.delete_expired_files()

    def flush_dirty_logs(self) -> None:
        for partition_log in self._online_logs():
            with contextlib.suppress(KafkaStorageError):
                partition_log.flush_if_due()

    def checkpoint_recovery_points(self) -> None:
        self._write_checkpoint(RECOVERY_POINT_CHECKPOINT, lambda lg: lg.recovery_point)

    def checkpoint_log_start_offsets(self) -> None:
        self._write_checkpoint(LOG_START_OFFSET_CHECKPOINT, lambda lg: lg.log_start_offset)

    def checkpoint_high_watermarks(self) -> None:
        self._write_checkpoint(HIGH_WATERMARK_CHECKPOINT, lambda lg: lg.high_watermark)

    def _write_checkpoint(self, name: str, value: Callable[[Log], int]) -> None:
        for directory in self.live_dirs:
            offsets = {
                lg.topic_partition: value(lg)
                for lg in self._all_logs()
                if lg.dir.parent == directory and not lg.offline
            }
            try:
                OffsetCheckpointFile(directory / name).write(offsets)
            except OSError as exc:
                self.handle_log_dir_failure(directory, exc)

    def _online_logs(self) -> Iterable[Log]:
        return [lg for lg in self._all_logs() if not lg.offline]

    def _all_logs(self) -> Iterable[Log]:
        """Current and future logs."""
        if not len(self.futures):
            return self._logs.values()
        return [*self._logs.values(), *self.futures]

    # -- failure -------------------------------------------------------------------------

    def handle_log_dir_failure(self, directory: Path, exc: OSError) -> None:
        """Take every log of ``directory`` offline; other dirs keep serving.

        Then ``on_log_dir_failure(directory)`` (the broker republishes the metadata of the
        partitions now offline, as Kafka's ``ReplicaManager.handleLogDirFailure`` tells the
        controller). If no dir is left online, log the fatal line and call
        ``on_all_dirs_failed`` (the broker halts; see the module docstring).
        """
        directory = directory.resolve()
        if directory in self.offline_dirs:
            return
        self.offline_dirs.add(directory)
        affected = [lg for lg in self._logs.values() if lg.dir.parent == directory]
        for partition_log in affected:
            partition_log.mark_offline()
        futures = self.futures.fail_dir(directory)
        log.error(
            "log dir %s failed (%s): %d partition(s) and %d future replica(s) are offline; "
            "%d dir(s) still online",
            directory,
            exc,
            len(affected),
            futures,
            len(self.live_dirs),
        )
        if self._on_log_dir_failure is not None:
            self._on_log_dir_failure(directory)
        if not self.live_dirs:
            log.critical(
                "Shutdown broker because all log dirs in %s have failed",
                ", ".join(str(d) for d in self.log_dirs),
            )
            if self._on_all_dirs_failed is not None:
                self._on_all_dirs_failed()

    # -- shutdown ------------------------------------------------------------------------

    def shutdown(self) -> None:
        """Flush and close every log, checkpoint, mark clean shutdown, release the locks."""
        if not self._started:
            self._unlock_all()
            return
        self.cleaner.shutdown()
        for partition_log in self._logs.values():
            try:
                partition_log.close()
            except (OSError, KafkaStorageError) as exc:
                log.error("error closing %s: %s", partition_log.name, exc)
                partition_log.mark_offline()
                self.offline_dirs.add(partition_log.dir.parent)
        self.futures.close(flush=True)
        self.checkpoint_recovery_points()
        self.checkpoint_log_start_offsets()
        self.checkpoint_high_watermarks()
        for directory in self.live_dirs:
            try:
                (directory / CLEAN_SHUTDOWN_FILE).touch()
            except OSError as exc:
                log.error("could not write the clean shutdown marker in %s: %s", directory, exc)
        self._logs.clear()
        self.futures.clear()
        self._unlock_all()
        self._started = False
        log.info("log manager shut down cleanly")

    def close_without_shutdown(self) -> None:
        """Release every handle as a crash would (no flush, no marker): for tests."""
        self.cleaner.shutdown()
        self._close_all_handles()
        self._logs.clear()
        self.futures.clear()
        self._unlock_all()
        self._started = False

    def _close_all_handles(self) -> None:
        for partition_log in self._logs.values():
            partition_log.close_without_flush()
        self.futures.close(flush=False)

    def _unlock_all(self) -> None:
        for fd in self._locks.values():
            os.close(fd)
        self._locks.clear()
