"""Future replicas: the storage half of moving a replica between the log dirs of one broker
(KIP-113), Kafka's ``LogManager`` members for it (``futureLogs``, ``preferredLogDirs``,
``maybeUpdatePreferredLogDir``, ``getOrCreateLog(isFuture = true)``,
``replaceCurrentWithFutureLog``, ``asyncDelete(isFuture = true)``, ``logsToBeDeleted``).

A *future replica* (Kafka's term) is a second log of a partition, in the dir it is moving
to, named ``<topic>-<partition>.<uuid>-future`` (``franz.storage.files.future_dir_name``).
The cluster layer (``franz.cluster.alter_log_dirs``) fills it from the current log; once it
holds the same offsets, ``promote`` makes it the current log, in Kafka's order:

1. the future dir is renamed ``<topic>-<partition>`` (in its own log dir), and takes the
   current log's place in the manager (so its dir's checkpoints list it from now on);
2. the old current dir is renamed ``<topic>-<partition>.<uuid>-delete`` and the checkpoint
   files are rewritten without it; its files stay open for ``file.delete.delay.ms`` (a Fetch
   response being sent may still read them with ``sendfile``), then the dir is removed.

A crash between 1 and 2 leaves two ``<topic>-<partition>`` dirs: the next start refuses
with Kafka's "Duplicate log directories" message (``LogManager``), as Kafka does, rather
than guess which one to keep. A crash before 1 leaves the ``-future`` dir: it is loaded as
the future replica again and the move resumes (``franz.cluster.alter_log_dirs``); one after
2 leaves a ``-delete`` dir, removed at start.

*Preferred log dirs* (Kafka's ``preferredLogDirs``): an AlterReplicaLogDirs for a partition
this broker does not host yet remembers the dir; the partition's log is created there when
a LeaderAndIsr (or CreateTopics in embedded mode) creates it
(``LogManager.get_or_create_log``). A dir already holding the partition's current or future
log is not remembered (``maybe_update_preferred_log_dir``).

Every future log counts where the manager counts logs: checkpoints of its dir, retention,
flushes, producer expiration, the choice of a dir for a new partition, log dir failures (a
failed dir's future logs are dropped from the map, Kafka's ``removeOfflineLogs``), shutdown.

Concurrency: the event loop's, as ``LogManager``. The friend of ``LogManager``: it touches
the manager's map of current logs only in ``promote``.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from franz.errors import KafkaStorageError
from franz.storage.files import TopicPartition, delete_dir_name, future_dir_name
from franz.storage.log import Log

if TYPE_CHECKING:
    from franz.storage.log_manager import LogManager

__all__ = ["FutureLogs"]

log = logging.getLogger(__name__)


class FutureLogs:
    """The future replicas of a ``LogManager`` and the logs they replaced (module docstring)."""

    def __init__(self, manager: LogManager) -> None:
        self._manager = manager
        self._logs: dict[TopicPartition, Log] = {}
        #: Kafka's ``preferredLogDirs``: where a partition not created yet goes.
        self.preferred: dict[TopicPartition, Path] = {}
        #: Logs replaced by their future replica: (due wall ms, log), removed when due.
        self._to_delete: list[tuple[int, Log]] = []

    def get(self, tp: TopicPartition) -> Log | None:
        return self._logs.get(tp)

    def items(self) -> list[tuple[TopicPartition, Log]]:
        return list(self._logs.items())

    def __iter__(self) -> Iterator[Log]:
        return iter(list(self._logs.values()))

    def __len__(self) -> int:
        return len(self._logs)

    def adopt(self, tp: TopicPartition, future: Log) -> None:
        """A ``-future`` dir found at start-up (Kafka's ``loadLog``)."""
        previous = self._logs.get(tp)
        if previous is not None:
            future.close_without_flush()
            raise KafkaStorageError(
                f"Duplicate log directories found: {future.dir}, {previous.dir}"
            )
        self._logs[tp] = future
        log.info("found the future replica of %s in %s: its move will resume", tp, future.dir)

    def maybe_update_preferred_log_dir(self, tp: TopicPartition, directory: Path) -> None:
        """Remember ``directory`` for ``tp`` unless its current or future log is there
        (Kafka's ``maybeUpdatePreferredLogDir``)."""
        current = self._manager.get_log(tp)
        future = self._logs.get(tp)
        if (current is None or current.dir.parent != directory) and (
            future is None or future.dir.parent != directory
        ):
            self.preferred[tp] = directory

    def create(self, tp: TopicPartition, directory: Path, topic_id: uuid.UUID | None) -> Log:
        """The future log of ``tp`` in ``directory`` (Kafka's ``getOrCreateLog`` with
        ``isFuture``): refused with KAFKA_STORAGE_ERROR while any log dir is offline, so
        that no partition gets future logs in two dirs (the offline one may hold one)."""
        manager = self._manager
        existing = self._logs.get(tp)
        if existing is not None:
            return existing
        if manager.offline_dirs:
            raise KafkaStorageError(
                f"Can not create log for {tp} because log directories "
                f"{','.join(str(d) for d in sorted(manager.offline_dirs))} are offline"
            )
        current = manager.get_log(tp)
        if current is not None and current.dir.parent == directory:
            raise ValueError(
                f"Can not create the future log for {tp} in the current log directory of "
                "this partition"
            )
        path = directory / future_dir_name(tp)
        try:
            created = Log(
                path,
                tp,
                manager.config_for(tp.topic),
                manager.clock,
                topic_id=topic_id,
                on_io_error=manager.handle_log_dir_failure,
                producer_id_expiration_ms=manager.producer_id_expiration_ms,
                transaction_verification_enabled=manager.transaction_verification_enabled,
            )
        except OSError as exc:
            shutil.rmtree(path, ignore_errors=True)
            manager.handle_log_dir_failure(directory, exc)
            raise KafkaStorageError(
                f"cannot create the future log of {tp} in {directory}: {exc}"
            ) from exc
        self._logs[tp] = created
        self.preferred.pop(tp, None)
        log.info("Created log for partition %s in %s", tp, path)
        return created

    def promote(self, tp: TopicPartition) -> Log:
        """Make the future log of ``tp`` its current log (module docstring; Kafka's
        ``replaceCurrentWithFutureLog``); returns it. The caller checked that both logs end
        at the same offset. KAFKA_STORAGE_ERROR when either log is offline or a rename
        fails (that dir is then failed)."""
        manager = self._manager
        source = manager.get_log(tp)
        dest = self._logs.get(tp)
        log.info("Attempting to replace current log %r with %r for %s", source, dest, tp)
        if source is None or source.offline:
            raise KafkaStorageError(f"The current replica for {tp} is offline")
        if dest is None or dest.offline:
            raise KafkaStorageError(f"The future replica for {tp} is offline")
        # A leader's epoch that no batch carries yet (assigned at its LEO when it became
        # leader) is in the current log's cache only: the future one takes it over.
        latest = dest.leader_epoch_cache.latest_epoch
        for entry in source.leader_epoch_cache.entries:
            if entry.epoch > latest:
                dest.leader_epoch_cache.assign(entry.epoch, entry.start_offset)
        dest_dir, source_dir = dest.dir.parent, source.dir.parent
        try:
            dest.rename_dir(dest_dir / tp.dir_name)
        except OSError as exc:
            manager.handle_log_dir_failure(dest_dir, exc)
            raise KafkaStorageError(f"could not promote the future replica of {tp}: {exc}") from exc
        dest.update_high_watermark(source.high_watermark)
        del self._logs[tp]
        manager._logs[tp] = dest  # the friend module (module docstring)
        manager.cleaner.alter_checkpoint_dir(tp, source_dir, dest_dir)
        try:
            source.rename_dir(source_dir / delete_dir_name(tp))
        except OSError as exc:
            source.close_without_flush()
            manager.handle_log_dir_failure(source_dir, exc)
            raise KafkaStorageError(f"could not remove the old replica of {tp}: {exc}") from exc
        manager.checkpoint_recovery_points()
        manager.checkpoint_log_start_offsets()
        manager.checkpoint_high_watermarks()
        due = manager.clock.wall_ms() + source.config.file_delete_delay_ms
        self._to_delete.append((due, source))
        log.info("The current replica is successfully replaced with the future replica for %s", tp)
        return dest

    def delete(self, tp: TopicPartition) -> bool:
        """Remove the future log of ``tp`` and its files (a cancelled move, a deleted
        partition); False if there is none. Nothing reads a future log but its copier, which
        runs between awaits: its files go at once."""
        future = self._logs.pop(tp, None)
        if future is None:
            return False
        future.close_without_flush()
        with contextlib.suppress(OSError):
            future.rename_dir(future.dir.parent / delete_dir_name(tp))
        shutil.rmtree(future.dir, ignore_errors=True)
        if not future.offline:
            self._manager.checkpoint_recovery_points()
            self._manager.checkpoint_log_start_offsets()
        log.info("deleted the future replica of %s in %s", tp, future.dir.parent)
        return True

    def fail_dir(self, directory: Path) -> int:
        """``directory`` failed: its future logs go offline and leave the map (Kafka's
        ``removeOfflineLogs``); returns how many. Their dirs are loaded again at the next
        start."""
        failed = [tp for tp, lg in self._logs.items() if lg.dir.parent == directory]
        for tp in failed:
            future = self._logs.pop(tp)
            future.mark_offline()
            future.close_without_flush()
        return len(failed)

    def delete_expired(self, *, force: bool = False) -> None:
        """Remove the replaced logs whose ``file.delete.delay.ms`` has passed."""
        if not self._to_delete:
            return
        now = self._manager.clock.wall_ms()
        keep: list[tuple[int, Log]] = []
        for due, replaced in self._to_delete:
            if force or due <= now:
                replaced.delete()
                log.info("Deleted log for partition %s in %s", replaced.name, replaced.dir)
            else:
                keep.append((due, replaced))
        self._to_delete = keep

    def close(self, *, flush: bool) -> None:
        """Shutdown: close every future log and finish the pending deletions; without
        ``flush`` (a crash, for tests) only release the handles."""
        for future in self._logs.values():
            try:
                if flush:
                    future.close()
                else:
                    future.close_without_flush()
            except (OSError, KafkaStorageError) as exc:
                log.error("error closing the future log %s: %s", future.dir, exc)
                future.mark_offline()
        if flush:
            self.delete_expired(force=True)
        else:
            for _, replaced in self._to_delete:
                replaced.close_without_flush()
            self._to_delete.clear()

    def clear(self) -> None:
        self._logs.clear()
