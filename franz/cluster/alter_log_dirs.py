"""Moving a replica between the log dirs of this broker (KIP-113): Kafka 3.9's
``ReplicaManager.alterReplicaLogDirs`` and ``maybeAddLogDirFetchers``, its
``ReplicaAlterLogDirsManager`` and ``ReplicaAlterLogDirsThread``, and the future-replica
side of ``Partition`` (``maybeCreateFutureReplica``, ``futureReplicaDirChanged``,
``removeFutureLocalReplica``, ``maybeReplaceCurrentWithFutureReplica``).

AlterReplicaLogDirs (``alter_replica_log_dirs``), per partition, in Kafka's order:

1. a topic whose future dir name (``<topic>-<p>.<uuid>-future``) is over 255 characters:
   INVALID_TOPIC_EXCEPTION ("The topic name is too long.", KAFKA-4893);
2. a path that is not one of ``log.dirs`` (absolute, as DescribeLogDirs names it):
   LOG_DIR_NOT_FOUND; an offline one: KAFKA_STORAGE_ERROR;
3. a hosted partition whose log dir failed: KAFKA_STORAGE_ERROR; one moving to another dir:
   that move is cancelled (its future replica deleted) before this one starts;
4. the dir is remembered as the partition's preferred dir unless its current or future log
   is there (``franz.storage.future_logs``): a partition not hosted yet is created there
   later; it is answered REPLICA_NOT_AVAILABLE when the metadata knows it (a reassignment
   still bringing it; Kafka's NotLeaderOrFollower, kept as REPLICA_NOT_AVAILABLE "for
   compatibility"), else UNKNOWN_TOPIC_OR_PARTITION;
5. a replica already in that dir, or already moving there: NONE, nothing else (a request
   naming the current dir thus only cancels a move); else its future replica is created
   there (KAFKA_STORAGE_ERROR while any log dir is offline), compaction of the partition is
   aborted and paused, and a copier takes it: NONE.

The copiers (Kafka's ``ReplicaAlterLogDirsThread``s, asyncio tasks on the broker's loop):
``num.replica.alter.log.dirs.threads`` of them (default: one per log dir), a partition going
to copier ``abs(31 * topic.hashCode + partition) % n`` (Kafka's ``getFetcherId``). A copier
copies one partition at a time, the one it started, else the smallest (topic, partition)
(``selectPartitionToFetch``: a move finishes as soon as it can). One step, with no await
inside, so that nothing else touches either log meanwhile (each log keeps one writer: the
partition's appends or fetcher for the current log, the copier for the future one):

* the future log is checked against the current one as a follower against its leader
  (KIP-320, ``future_truncation_offset``): truncated where it diverges (the current log was
  truncated by its follower fetcher), restarted empty at the current log start offset when
  it ends below it (retention, DeleteRecords; at the start of the batch holding it when
  that offset is inside a batch, as Kafka's follower append does);
* up to ``replica.fetch.max.bytes`` of whole batches from the future log's end offset are
  read from the current log up to its end offset (Kafka's ``FetchIsolation.LOG_END``) and
  appended byte for byte (``Log.append_as_follower``: offsets, leader epochs, producer
  state as a follower's); the bytes count against the throttle;
* the future high watermark follows the current one, its log start offset too;
* once both logs end at the same offset the future log becomes the current one
  (``FutureLogs.promote``: renames, checkpoints; ``Partition.log`` points to it), the
  partition is resumed for compaction, and the copier moves to its next partition.

It follows new appends until caught up: a leader taking produce keeps appending to the
current log, and the copier's steps read them until one step ends level.

Throttle: while ``replica.alter.log.dirs.io.max.bytes.per.second`` (a dynamic broker config,
``ReplicationQuotas.alter_log_dirs``) is exceeded no copier reads; it looks again every
``THROTTLE_POLL_S`` (Kafka's thread backs off ``replica.fetch.backoff.ms``, 1 s: a finer
look keeps the rate closer to the bound, the rule is the same).

Restarts: a ``-future`` dir found at start-up is the partition's future replica again; the
first LeaderAndIsr that hosts the partition resumes the copy (``maybe_add_log_dir_fetchers``,
leader or follower alike), from the future log's end offset once the check above agreed
with it. StopReplica without deletion stops copying (the future replica stays, to resume at
the next LeaderAndIsr); a deleted partition takes its future replica with it.

Differences from Kafka: the copy reads the current log directly rather than through a Fetch
to the local replica manager (same bytes, same rules); the future replica's leader epoch
cache takes the current one's epochs that no batch carries yet when it is promoted; an
AlterReplicaLogDirs naming the dir a stopped copy (StopReplica) was moving to resumes it
(Kafka waits for the next LeaderAndIsr).

Concurrency: the broker's event loop; a copier's step runs between awaits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from franz.cluster.fetch_state import fetcher_id_for
from franz.cluster.partition import end_offset_for_epoch
from franz.cluster.replication_quota import ReplicationQuota
from franz.errors import (
    ApiError,
    ErrorCode,
    InvalidTopicError,
    KafkaStorageError,
    ReplicaNotAvailableError,
    UnknownTopicOrPartitionError,
)
from franz.storage.files import TopicPartition, future_dir_name

if TYPE_CHECKING:
    from franz.cluster.partition import Partition
    from franz.cluster.replica_manager import ReplicaManager
    from franz.storage.log import Log

__all__ = [
    "AlterLogDirsConfig",
    "ReplicaAlterLogDirsManager",
    "future_truncation_offset",
]

log = logging.getLogger(__name__)

#: How often a throttled copier looks at the rate again (module docstring).
THROTTLE_POLL_S: Final = 0.05
#: Kafka's limit on a log dir entry's name (KAFKA-4893).
MAX_DIR_NAME: Final = 255
#: Truncations a step may do before it gives up (each lowers the future log's end offset).
_MAX_TRUNCATIONS: Final = 1000


@dataclass(frozen=True, slots=True)
class AlterLogDirsConfig:
    """The copiers' settings: ``num.replica.alter.log.dirs.threads`` (``num_copiers``),
    ``replica.fetch.max.bytes`` (``fetch_max_bytes``, one step's read)."""

    num_copiers: int = 1
    fetch_max_bytes: int = 1048576

    @classmethod
    def from_broker_config(cls, get: Callable[[str], Any], num_log_dirs: int) -> AlterLogDirsConfig:
        return cls(
            num_copiers=get("num.replica.alter.log.dirs.threads") or num_log_dirs,
            fetch_max_bytes=get("replica.fetch.max.bytes"),
        )


def future_truncation_offset(
    current_epochs: Sequence[tuple[int, int]],
    current_end: int,
    future_epochs: Sequence[tuple[int, int]],
    future_end: int,
) -> int | None:
    """Where the future log must be truncated to be a prefix of the current one, or None
    when it is; logs given as ``(epoch, start offset)`` entries and end offsets. The rule is
    a follower's against its leader (KIP-320, ``getOffsetTruncationState``): the end of the
    future's latest epoch in the current log; when the current log does not have that epoch,
    the end of the future's largest epoch at or below the one the current log answers with.
    Without epochs, the end offsets alone. The answer is always below ``future_end``."""
    if not future_epochs:
        return current_end if future_end > current_end else None
    latest, latest_start = future_epochs[-1]
    found = end_offset_for_epoch(list(current_epochs), latest, current_end)
    if found is None:
        # Every epoch of the current log is older (or it has none): the future's latest
        # epoch is not in it, from that epoch's start on nothing is common.
        offset = min(latest_start, current_end)
    else:
        epoch, end = found
        if epoch == latest and end >= future_end:
            return None
        mine = end_offset_for_epoch(list(future_epochs), epoch, future_end)
        if mine is None:
            offset = min(end, future_end)
        elif mine[0] != epoch:
            offset = min(mine[1], future_end)
        else:
            offset = min(mine[1], end, future_end)
    if offset < future_end:
        return offset
    # Not reached with epochs that all start below the end (a future log's come from its
    # batches); kept so that a step always makes progress.
    if latest_start < future_end:
        return latest_start
    return current_end if future_end > current_end else None


class ReplicaAlterLogDirsManager:
    """This broker's log-dir moves: the request's logic and the copiers (module docstring)."""

    def __init__(
        self,
        replica_manager: ReplicaManager,
        quota: ReplicationQuota,
        config: AlterLogDirsConfig | None = None,
        *,
        is_known: Callable[[TopicPartition], bool] | None = None,
    ) -> None:
        self.replica_manager = replica_manager
        self.log_manager = replica_manager.log_manager
        self.quota = quota
        self.config = config or AlterLogDirsConfig()
        #: Kafka's ``metadataCache.contains``: whether the cluster has the partition.
        self._is_known: Callable[[TopicPartition], bool] = is_known or (lambda _tp: False)
        #: Partitions whose future replica is attached (compaction paused): Kafka's
        #: ``Partition.futureLog`` being set.
        self._attached: set[TopicPartition] = set()
        #: The partitions being copied, each with its copier's id.
        self._copying: dict[TopicPartition, int] = {}
        self._in_progress: dict[int, TopicPartition] = {}
        self._copiers: dict[int, asyncio.Task[None]] = {}
        self._closed = False

    # -- AlterReplicaLogDirs ---------------------------------------------------------------

    def alter_replica_log_dirs(
        self, partition_dirs: Mapping[TopicPartition, str]
    ) -> dict[TopicPartition, ErrorCode]:
        """Move each partition's replica to the log dir given (module docstring); the error
        code of each partition."""
        results: dict[TopicPartition, ErrorCode] = {}
        for tp, path in partition_dirs.items():
            try:
                self._alter(tp, path)
                results[tp] = ErrorCode.NONE
            except UnknownTopicOrPartitionError as exc:
                log.error("Error while changing replica dir for partition %s: %s", tp, exc)
                results[tp] = exc.code
            except ApiError as exc:
                log.warning("Unable to alter log dirs for %s: %s", tp, exc)
                results[tp] = exc.code
            except (OSError, ValueError) as exc:
                log.exception("Error while changing replica dir for partition %s", tp)
                results[tp] = (
                    ErrorCode.KAFKA_STORAGE_ERROR
                    if isinstance(exc, OSError)
                    else ErrorCode.UNKNOWN_SERVER_ERROR
                )
        return results

    def _alter(self, tp: TopicPartition, path: str) -> None:
        if len(future_dir_name(tp)) > MAX_DIR_NAME:
            raise InvalidTopicError("The topic name is too long.")
        if not self.log_manager.is_log_dir_online(path):
            raise KafkaStorageError(f"Log directory {path} is offline")
        directory = self.log_manager.log_dir(path)
        partition = self.replica_manager.partitions.get(tp)
        if partition is not None:
            if partition.log.offline:
                raise KafkaStorageError(f"Partition {tp} is offline")
            future = self.log_manager.get_future_log(tp)
            if future is not None and future.dir.parent != directory:
                log.info(
                    "%s: moving to %s instead of %s: the move in progress stops",
                    tp,
                    directory,
                    future.dir.parent,
                )
                self.remove_future_replica(tp)
        self.log_manager.futures.maybe_update_preferred_log_dir(tp, directory)
        if partition is None:
            if self._is_known(tp):
                raise ReplicaNotAvailableError(
                    f"Error while fetching partition state for {tp}: this broker does not "
                    "host it (yet); its log will be created in the requested dir"
                )
            raise UnknownTopicOrPartitionError(
                f"Error while fetching partition state for {tp}: This server does not host "
                "this topic-partition."
            )
        if partition.log.dir.parent == directory:
            log.info(
                "%s: current log directory %s is same as requested log dir %s. Skipping "
                "future replica creation.",
                tp,
                directory,
                path,
            )
            return
        if self.log_manager.get_future_log(tp) is not None:
            self._start(tp)  # already moving there: make sure it is copied
            return
        self.log_manager.futures.create(tp, directory, partition.log.topic_id)
        self._start(tp)

    # -- the replica manager's hooks -------------------------------------------------------

    def maybe_add_log_dir_fetchers(self, partitions: Iterable[Partition]) -> None:
        """After a LeaderAndIsr: copy the partitions that have a future replica (one found
        at start-up, or one whose copy a StopReplica stopped); Kafka's
        ``maybeAddLogDirFetchers``."""
        for partition in partitions:
            tp = partition.topic_partition
            future = self.log_manager.get_future_log(tp)
            if future is None or partition.log.offline or tp in self._copying:
                continue
            self._start(tp)

    def remove_fetcher_for_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """Stop copying ``tps`` (StopReplica without deletion); their future replicas stay."""
        for tp in tps:
            if self._copying.pop(tp, None) is not None:
                log.info("stopped copying %s to its future replica", tp)

    def remove_future_replica(self, tp: TopicPartition) -> None:
        """Cancel the move of ``tp``: stop copying, delete its future replica, compaction
        resumes (Kafka's ``removeFutureLocalReplica`` then ``resumeCleaning``)."""
        self._copying.pop(tp, None)
        self.log_manager.futures.delete(tp)
        self._detach(tp)

    def forget(self, tp: TopicPartition) -> None:
        """``tp`` is no longer hosted here (its logs are deleted by the caller)."""
        self._copying.pop(tp, None)
        self._detach(tp)

    def is_copying(self, tp: TopicPartition) -> bool:
        return tp in self._copying

    async def shutdown(self) -> None:
        """Stop every copier (the future replicas stay on disk and resume at the next
        start)."""
        self._closed = True
        copiers = list(self._copiers.values())
        for task in copiers:
            task.cancel()
        for task in copiers:
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception:
                log.exception("a log dir copier failed")
        self._copiers.clear()

    # -- copiers ---------------------------------------------------------------------------

    def _start(self, tp: TopicPartition) -> None:
        if tp not in self._attached:
            self._attached.add(tp)
            self.log_manager.abort_and_pause_cleaning(tp)
        if tp in self._copying:
            return
        copier = fetcher_id_for(tp, max(self.config.num_copiers, 1))
        self._copying[tp] = copier
        if self._closed:
            return
        task = self._copiers.get(copier)
        if task is None or task.done():
            self._copiers[copier] = asyncio.get_running_loop().create_task(
                self._run(copier), name=f"ReplicaAlterLogDirsThread-{copier}"
            )

    def _detach(self, tp: TopicPartition) -> None:
        if tp in self._attached:
            self._attached.discard(tp)
            self.log_manager.resume_cleaning(tp)

    def _select(self, copier: int) -> TopicPartition | None:
        """Kafka's ``selectPartitionToFetch``: the partition in progress, else the smallest."""
        current = self._in_progress.get(copier)
        if current is not None and self._copying.get(current) == copier:
            return current
        mine = [tp for tp, c in self._copying.items() if c == copier]
        if not mine:
            self._in_progress.pop(copier, None)
            return None
        chosen = min(mine, key=lambda tp: (tp.topic, tp.partition))
        self._in_progress[copier] = chosen
        future = self.log_manager.get_future_log(chosen)
        log.info(
            "[ReplicaAlterLogDirsThread-%d]: Beginning/resuming copy of partition %s from "
            "offset %d. Including this partition, there are %d remaining partitions to copy "
            "by this thread.",
            copier,
            chosen,
            future.log_end_offset if future is not None else -1,
            len(mine),
        )
        return chosen

    async def _run(self, copier: int) -> None:
        """One copier until it has nothing left to copy (it is started again when needed)."""
        try:
            while not self._closed:
                tp = self._select(copier)
                if tp is None:
                    return
                if self.quota.is_quota_exceeded():
                    await asyncio.sleep(THROTTLE_POLL_S)
                    continue
                try:
                    self._step(tp)
                except Exception:
                    # Kafka's markPartitionFailed: this partition is copied no more (until a
                    # LeaderAndIsr or a restart adds it again); the others go on. A future
                    # replica lost with its dir no longer holds compaction back.
                    log.exception("copying %s to its future replica failed", tp)
                    self._copying.pop(tp, None)
                    if self.log_manager.get_future_log(tp) is None:
                        self._detach(tp)
                await asyncio.sleep(0)
        finally:
            if self._copiers.get(copier) is asyncio.current_task():
                del self._copiers[copier]

    def _step(self, tp: TopicPartition) -> None:
        """One copy step of ``tp`` (module docstring); no await inside."""
        partition = self.replica_manager.partitions.get(tp)
        future = self.log_manager.get_future_log(tp)
        if partition is None or future is None:
            self.forget(tp)
            return
        current = partition.log
        if current.offline or future.offline:
            log.warning(
                "%s: stopped copying to its future replica: the %s log's dir is offline",
                tp,
                "current" if current.offline else "future",
            )
            self._copying.pop(tp, None)
            return
        self._align(current, future)
        limit = max(min(self.config.fetch_max_bytes, future.config.segment_bytes), 1)
        data = current.read(future.log_end_offset, limit, min_one_message=True).read_bytes()
        if data:
            first = int.from_bytes(data[:8], "big", signed=True)  # the batch's baseOffset
            if first < future.log_end_offset == future.log_start_offset:
                # The current log starts inside a batch (DeleteRecords): the empty future
                # log starts at that batch, as Kafka's UnexpectedAppendOffsetException case.
                future.truncate_fully_and_start_at(first)
            future.append_as_follower(data)
        self.quota.record(len(data))
        self._follow_offsets(current, future)
        if future.log_end_offset == current.log_end_offset:
            self._promote(tp, partition)

    def _align(self, current: Log, future: Log) -> None:
        """Truncate the future log where it diverges from the current one; restart it at
        the current log start offset when it ends below it."""
        for _ in range(_MAX_TRUNCATIONS):
            if future.log_end_offset < current.log_start_offset:
                future.truncate_fully_and_start_at(current.log_start_offset)
                return
            offset = future_truncation_offset(
                [(e.epoch, e.start_offset) for e in current.leader_epoch_cache.entries],
                current.log_end_offset,
                [(e.epoch, e.start_offset) for e in future.leader_epoch_cache.entries],
                future.log_end_offset,
            )
            if offset is None:
                return
            log.info(
                "%s: truncating the future replica to %d (the current log diverges there)",
                future.name,
                offset,
            )
            future.truncate_to(offset)
        raise KafkaStorageError(f"could not align the future replica of {future.name}")

    @staticmethod
    def _follow_offsets(current: Log, future: Log) -> None:
        future.update_high_watermark(current.high_watermark)
        start = min(current.log_start_offset, future.high_watermark)
        if start > future.log_start_offset:
            future.maybe_increment_log_start_offset(start)

    def _promote(self, tp: TopicPartition, partition: Partition) -> None:
        """Kafka's ``maybeReplaceCurrentWithFutureReplica``: both logs end level."""
        partition.log = self.log_manager.futures.promote(tp)
        self._copying.pop(tp, None)
        self._detach(tp)
