"""One partition replica on this broker (Kafka's ``Partition``).

State (Kafka's names): the assigned ``replicas``, the ``isr``, ``leader_id`` (-1: no leader
known), ``leader_epoch`` (-1 until the first LeaderAndIsr), ``partition_epoch`` (the zk
version of the partition's ``state`` znode), and the high watermark (held by the log). A new
``Partition`` leads nothing: the controller's LeaderAndIsr decides, applied by
``ReplicaManager.become_leader_or_follower`` through ``make_leader`` / ``make_follower``
(Kafka's ``Partition.makeLeader`` / ``makeFollower``). In embedded single-node mode the
broker's own controller (``franz.controller.shell.local``) delivers it in process: ISR =
replicas = [self], leader epoch 0 for a new partition, the stored state when loaded.

Leader: the high watermark is the smallest log end offset of the ISR members
(``maybe_increment_leader_hw``, Kafka's ``maybeIncrementLeaderHW``); with ISR = {self} it
follows the log end offset on every append. Followers' log end offsets arrive with
replication (the next issue); until then an ISR with other members holds the HW where it is,
unless the partition was made with ``followers_fetch=False``: cluster mode has no replica
fetcher yet, so its leaders count the followers as caught up (HW = the leader's LEO, and
acks=all does not wait for them): the data is on the leader only until replication lands.

Leader-epoch fencing (KIP-320) is decided here, once: ``check_current_leader_epoch`` answers
FENCED_LEADER_EPOCH for a request's ``current_leader_epoch`` older than this replica's,
UNKNOWN_LEADER_EPOCH for a newer one, NONE for an equal one or -1 (no epoch given).

Concurrency: owned by the event loop; every method runs on it.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import Final

from franz.errors import ErrorCode, OffsetOutOfRangeError
from franz.storage.files import TopicPartition
from franz.storage.log import FetchDataInfo, Log, LogAppendInfo

__all__ = [
    "INITIAL_LEADER_EPOCH",
    "NO_LEADER",
    "LeaderAndIsrPartitionState",
    "Partition",
    "end_offset_for_epoch",
]

log = logging.getLogger(__name__)

#: Kafka's ``LeaderAndIsr.NoLeader``.
NO_LEADER: Final = -1
#: Kafka's ``LeaderAndIsr.InitialLeaderEpoch``: a new partition's first leader epoch.
INITIAL_LEADER_EPOCH: Final = 0
#: The leader epoch before any LeaderAndIsr (Kafka's ``LeaderAndIsr.InitialLeaderEpoch - 1``).
NO_LEADER_EPOCH: Final = -1
#: A request's "no current leader epoch" (``RecordBatch.NO_PARTITION_LEADER_EPOCH``).
NO_PARTITION_LEADER_EPOCH: Final = -1


@dataclass(frozen=True, slots=True)
class LeaderAndIsrPartitionState:
    """Kafka's ``LeaderAndIsrPartitionState``: one partition of a LeaderAndIsr request.

    ``partition_epoch`` is the zk version of the partition's ``state`` znode; ``is_new``
    says the replica was just created by the controller (its log may be created anywhere).
    """

    topic_name: str
    partition_index: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    partition_epoch: int = 0
    is_new: bool = False
    controller_epoch: int = 0
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic_name, self.partition_index)


class Partition:
    def __init__(
        self,
        tp: TopicPartition,
        topic_id: uuid.UUID,
        log: Log,
        *,
        broker_id: int,
        followers_fetch: bool = True,
    ) -> None:
        #: False: no replica fetcher runs (module docstring), the HW ignores the followers.
        self.followers_fetch = followers_fetch
        self.topic_partition = tp
        self.topic_id = topic_id
        self.log = log
        self.broker_id = broker_id
        self.replicas: list[int] = []
        self.isr: list[int] = []
        self.leader_id = NO_LEADER
        self.leader_epoch = NO_LEADER_EPOCH
        self.partition_epoch = -1

    # -- LeaderAndIsr ----------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.broker_id

    def make_leader(self, state: LeaderAndIsrPartitionState) -> bool:
        """Become (or stay) the leader (Kafka's ``Partition.makeLeader``); True if this
        replica was not the leader before.

        A new leader epoch starts at the log end offset: it goes into the leader-epoch
        checkpoint now (a write and two fsyncs), as Kafka's ``maybeAssignEpochStartOffset``,
        not at the first produce (which made a first write to 1,000 new partitions spend a
        third of its time in fsync). Then the high watermark moves as the ISR allows.
        """
        was_leader = self.is_leader
        if state.leader_epoch > self.leader_epoch:
            self.log.leader_epoch_cache.assign(state.leader_epoch, self.log.log_end_offset)
        elif state.leader_epoch < self.leader_epoch:
            log.warning(
                "%s: LeaderAndIsr with stale leader epoch %d (current %d) applied as leader",
                self.topic_partition,
                state.leader_epoch,
                self.leader_epoch,
            )
        self.replicas = list(state.replicas)
        self.isr = list(state.isr)
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.leader_id = self.broker_id
        self.maybe_increment_leader_hw()
        return not was_leader

    def make_follower(self, state: LeaderAndIsrPartitionState) -> bool:
        """Follow ``state.leader`` (Kafka's ``Partition.makeFollower``); True if the leader
        or the leader epoch changed (the fetcher must then restart from a truncation point).

        A follower keeps no ISR (the leader owns it) and its high watermark: it learns the
        leader's from its fetch responses.
        """
        unchanged = state.leader == self.leader_id and state.leader_epoch == self.leader_epoch
        self.replicas = list(state.replicas)
        self.isr = []
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.leader_id = state.leader
        return not unchanged

    def maybe_increment_leader_hw(self) -> bool:
        """Leader only: move the HW up to the smallest log end offset of the ISR (only this
        broker's is known until replication tracks followers; with ``followers_fetch``
        False, this broker's LEO); True if it moved."""
        if not self.is_leader:
            return False
        if self.followers_fetch and self.isr != [self.broker_id]:
            return False
        before = self.log.high_watermark
        return self.log.update_high_watermark(self.log.log_end_offset) > before

    # -- fencing ---------------------------------------------------------------------------

    def check_current_leader_epoch(self, current_leader_epoch: int) -> ErrorCode:
        """KIP-320 fencing of a request's ``current_leader_epoch`` (Kafka's
        ``Partition.checkCurrentLeaderEpoch``): older than this replica's epoch
        FENCED_LEADER_EPOCH (the client's metadata is stale), newer UNKNOWN_LEADER_EPOCH
        (this broker's is: retry), equal or -1 (none given) NONE."""
        if current_leader_epoch <= NO_PARTITION_LEADER_EPOCH:
            return ErrorCode.NONE
        if current_leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if current_leader_epoch > self.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        return ErrorCode.NONE

    # -- reads and appends -----------------------------------------------------------------

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def append_records_to_leader(
        self, records: bytes | memoryview, *, from_client: bool = True
    ) -> LogAppendInfo:
        """Append as leader and advance the HW as the ISR allows.
        ``from_client=False``: the broker's own records (a coordinator's), Kafka's
        ``AppendOrigin.Coordinator``."""
        info = self.log.append_as_leader(records, self.leader_epoch, from_client=from_client)
        self.maybe_increment_leader_hw()
        return info

    def read(self, offset: int, max_bytes: int, *, min_one_message: bool) -> FetchDataInfo:
        """Committed batches (below the HW) from ``offset``, for a consumer."""
        return self.log.read(
            offset, max_bytes, max_offset=self.log.high_watermark, min_one_message=min_one_message
        )

    # -- follower --------------------------------------------------------------------------

    def append_records_to_follower(self, records: bytes | memoryview) -> LogAppendInfo:
        """Append batches fetched from the leader as they are: offsets, leader epochs and
        bytes kept (``Log.append_as_follower``; Kafka's
        ``appendRecordsToFollowerOrFutureReplica``)."""
        return self.log.append_as_follower(records)

    def update_follower_high_watermark(self, leader_hw: int) -> bool:
        """Follower: HW = min(the leader's HW, this LEO) (Kafka's ``maybeUpdateHighWatermark``,
        which may also move it down after a truncation); True if it changed."""
        before = self.log.high_watermark
        return self.log.update_high_watermark(leader_hw) != before

    def maybe_increment_follower_log_start_offset(self, leader_log_start_offset: int) -> bool:
        """Follower: the log start offset follows the leader's (retention, DeleteRecords),
        never past this replica's HW (Kafka's ``maybeIncrementLogStartOffset`` refuses that)."""
        new_start = min(leader_log_start_offset, self.log.high_watermark)
        return self.log.maybe_increment_log_start_offset(new_start)

    def truncate_to(self, offset: int) -> bool:
        """Follower: drop every batch at or after ``offset`` (the leader's log diverged);
        True if anything was removed."""
        if offset < self.log.high_watermark:
            log.warning(
                "%s: truncating to offset %d, below the high watermark %d",
                self.topic_partition,
                offset,
                self.log.high_watermark,
            )
        return self.log.truncate_to(offset)

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Follower: drop the whole log and restart it empty at ``offset`` (the leader's log
        start offset is above this LEO)."""
        self.log.truncate_fully_and_start_at(offset)

    def end_offset_for_epoch(self, leader_epoch: int) -> tuple[int, int] | None:
        """(epoch, end offset) of the largest epoch <= ``leader_epoch`` in this replica's
        leader-epoch cache, the end offset being where the next epoch starts (the LEO for the
        latest); None when unknown. Kafka's ``UnifiedLog.endOffsetForEpoch`` over
        ``LeaderEpochFileCache.endOffsetFor``."""
        return end_offset_for_epoch(
            [(e.epoch, e.start_offset) for e in self.log.leader_epoch_cache.entries],
            leader_epoch,
            self.log.log_end_offset,
        )

    def diverging_epoch(self, fetch_offset: int, last_fetched_epoch: int) -> tuple[int, int] | None:
        """Leader side of truncation on fetch (KIP-320, Kafka's ``Partition.readRecords``):
        the (epoch, end offset) a fetcher must truncate to when its ``last_fetched_epoch``
        does not end at or after its ``fetch_offset`` here; None when it is consistent.

        ``OffsetOutOfRangeError`` when this replica cannot tell the end of that epoch, or the
        fetch offset is below the log start offset, as Kafka.
        """
        found = self.end_offset_for_epoch(last_fetched_epoch)
        if found is None:
            raise OffsetOutOfRangeError(
                f"could not determine the end offset of the last fetched epoch "
                f"{last_fetched_epoch} of {self.topic_partition}"
            )
        if fetch_offset < self.log.log_start_offset:
            raise OffsetOutOfRangeError(
                f"received request for offset {fetch_offset} for partition "
                f"{self.topic_partition}, but the log start offset is {self.log.log_start_offset}"
            )
        epoch, end_offset = found
        if epoch < last_fetched_epoch or end_offset < fetch_offset:
            return epoch, end_offset
        return None


def end_offset_for_epoch(
    entries: list[tuple[int, int]], requested_epoch: int, log_end_offset: int
) -> tuple[int, int] | None:
    """Kafka's ``LeaderEpochFileCache.endOffsetFor`` on ``(epoch, start offset)`` entries,
    None where Kafka answers UNDEFINED_EPOCH_OFFSET: no entries, an undefined (-1) or a
    newer epoch than any known. A requested epoch below every entry answers itself with the
    first entry's start offset; else the floor entry's epoch and the next entry's start (the
    LEO for the latest)."""
    if not entries or requested_epoch < 0:
        return None
    if entries[-1][0] == requested_epoch:
        return requested_epoch, log_end_offset
    higher = next((i for i, (epoch, _) in enumerate(entries) if epoch > requested_epoch), None)
    if higher is None:
        return None
    if higher == 0:
        return requested_epoch, entries[0][1]
    return entries[higher - 1][0], entries[higher][1]
