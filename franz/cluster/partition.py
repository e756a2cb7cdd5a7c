"""One partition replica on this broker (Kafka's ``Partition``).

State (Kafka's names): the assigned ``replicas``, the ``isr``, ``leader_id`` (-1: no leader
known), ``leader_epoch`` (-1 until the first LeaderAndIsr), ``partition_epoch`` (the zk
version of the partition's ``state`` znode), and the high watermark (held by the log). A new
``Partition`` leads nothing: the controller's LeaderAndIsr decides, applied by
``ReplicaManager.become_leader_or_follower`` through ``make_leader`` / ``make_follower``
(Kafka's ``Partition.makeLeader`` / ``makeFollower``). In embedded single-node mode the
broker's own controller (``franz.controller.shell.local``) delivers it in process: ISR =
replicas = [self], leader epoch 0 for a new partition, the stored state when loaded.

Leader (Kafka 3.9's ``Partition`` leader side): one ``ReplicaState`` per follower
(``franz.cluster.replica``), updated by its fetches (``update_follower_fetch_state``). The
high watermark is the smallest log end offset of the *maximal* ISR (the committed ISR plus a
member whose addition is pending, KIP-497) and of the caught-up, ISR-eligible followers
(``maybe_increment_leader_hw``, Kafka's ``maybeIncrementLeaderHW``); it does not move while
the committed ISR is smaller than the effective ``min.insync.replicas`` (min of the config and
the replication factor). With no followers (the embedded single node) it follows the log end
offset on every append, with no other work.

ISR changes go to the controller through ``AlterPartitionManager.submit``
(``franz.cluster.alter_partition``) with Kafka's pending states: ``PendingExpandIsr`` (a
follower at or past the HW and the leader epoch's start offset, ``maybe_expand_isr``) counts
the new member in the maximal ISR at once; ``PendingShrinkIsr`` (followers not caught up for
``replica.lag.time.max.ms``, ``maybe_shrink_isr``) keeps them until the controller commits.
One change is in flight at a time; the controller's answer commits it
(``handle_alter_partition_result``), an OPERATION_NOT_ATTEMPTED / INELIGIBLE_REPLICA (or a
request that failed) reverts to the last committed state and looks at the HW again (a refused
addition no longer holds it; Kafka waits for the next fetch or append), other errors leave it
pending until the next LeaderAndIsr.
The committed ISR (``isr``) decides ``min.insync.replicas`` (NOT_ENOUGH_REPLICAS before an
acks=all append; ``check_enough_replicas_reach_offset``: NOT_ENOUGH_REPLICAS_AFTER_APPEND).

Glossary: *maximal ISR*: the ISR the HW waits for (committed ISR + a pending addition).

Leader-epoch fencing (KIP-320) is decided here, once: ``check_current_leader_epoch`` answers
FENCED_LEADER_EPOCH for a request's ``current_leader_epoch`` older than this replica's,
UNKNOWN_LEADER_EPOCH for a newer one, NONE for an equal one or -1 (no epoch given).

Concurrency: owned by the event loop; every method runs on it.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final, Protocol

from franz.clock import Clock, SystemClock
from franz.cluster.alter_partition import IsrUpdate, IsrUpdateResult
from franz.cluster.replica import ReplicaState
from franz.errors import ErrorCode, NotEnoughReplicasError, OffsetOutOfRangeError
from franz.storage.files import TopicPartition
from franz.storage.index.txn_index import AbortedTxn
from franz.storage.log import FetchDataInfo, Log, LogAppendInfo
from franz.storage.verification import VerificationGuard

__all__ = [
    "INITIAL_LEADER_EPOCH",
    "NO_LEADER",
    "AlterPartitionListener",
    "AlterPartitionSubmitter",
    "LeaderAndIsrPartitionState",
    "Partition",
    "PendingIsrChange",
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
#: Kafka's ``replica.lag.time.max.ms`` default.
DEFAULT_REPLICA_LAG_TIME_MAX_MS: Final = 30000
#: ``LeaderRecoveryState.RECOVERED``.
LEADER_RECOVERED: Final = 0
#: A v2 batch header up to ``lastOffsetDelta``: baseOffset int64 at 0, lastOffsetDelta int32
#: at 23 (after batchLength, partitionLeaderEpoch, magic, crc and attributes).
_FIRST_BATCH_HEADER: Final = struct.Struct(">q15xi")


class AlterPartitionSubmitter(Protocol):
    """What a leader needs of the ``AlterPartitionManager`` (``franz.cluster.alter_partition``)."""

    def submit(
        self, tp: TopicPartition, topic_id: uuid.UUID, leader_and_isr: IsrUpdate
    ) -> asyncio.Future[IsrUpdateResult]: ...


class AlterPartitionListener(Protocol):
    """Kafka's ``AlterPartitionListener``: the outcomes of this leader's ISR changes, counted
    by the replica manager (its IsrExpandsPerSec, IsrShrinksPerSec, FailedIsrUpdatesPerSec
    meters: ``franz.metrics``)."""

    def mark_isr_expand(self) -> None: ...

    def mark_isr_shrink(self) -> None: ...

    def mark_failed(self) -> None: ...


@dataclass(frozen=True, slots=True)
class PendingIsrChange:
    """An ISR change sent to the controller and not answered yet (Kafka's
    ``PendingExpandIsr`` / ``PendingShrinkIsr``): ``expand`` adds ``replicas`` (one), else
    they are removed; ``sent`` is the proposal, ``last_committed_isr`` what to revert to."""

    expand: bool
    replicas: frozenset[int]
    sent: IsrUpdate
    last_committed_isr: tuple[int, ...]

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The ISR the HW waits for: a pending addition counts, a pending removal not yet."""
        if self.expand:
            return frozenset(self.last_committed_isr) | self.replicas
        return frozenset(self.last_committed_isr)


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
        clock: Clock | None = None,
        replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS,
        alter_partition_manager: AlterPartitionSubmitter | None = None,
        is_replica_isr_eligible: Callable[[int], bool] | None = None,
    ) -> None:
        self.topic_partition = tp
        self.topic_id = topic_id
        self.log = log
        self.broker_id = broker_id
        self.clock: Clock = clock or SystemClock()
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.alter_partition_manager = alter_partition_manager
        #: Kafka's ``isReplicaIsrEligible``: in ZooKeeper mode, a live broker.
        self.is_replica_isr_eligible: Callable[[int], bool] = is_replica_isr_eligible or (
            lambda _broker_id: True
        )
        self.replicas: list[int] = []
        #: During a reassignment (KIP-455), the replicas being added and removed, as the
        #: last LeaderAndIsr said (Kafka's ``OngoingReassignmentState``).
        self.adding_replicas: tuple[int, ...] = ()
        self.removing_replicas: tuple[int, ...] = ()
        #: The committed ISR (the controller's; decides ``min.insync.replicas``).
        self.isr: list[int] = []
        self.pending_isr: PendingIsrChange | None = None
        #: Followers' states while this replica leads (Kafka's ``remoteReplicasMap``).
        self.remote_replicas: dict[int, ReplicaState] = {}
        self.leader_id = NO_LEADER
        self.leader_epoch = NO_LEADER_EPOCH
        #: The log end offset when this leader epoch started (Kafka's
        #: ``leaderEpochStartOffsetOpt``); None while following.
        self.leader_epoch_start_offset: int | None = None
        self.partition_epoch = -1
        #: Called after the HW moved outside an append (a follower's fetch, an ISR change):
        #: the replica manager wakes consumers and delayed produces (set by it).
        self.on_high_watermark_increment: Callable[[Partition], None] | None = None
        #: Counts the outcomes of ISR changes (set by the replica manager).
        self.alter_partition_listener: AlterPartitionListener | None = None

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
        third of its time in fsync). The followers' states are reset (``ReplicaState.reset``)
        and the committed ISR is the request's (a pending change is dropped). Then the high
        watermark moves as the ISR allows.
        """
        was_leader = self.is_leader
        leader_end_offset = self.log.log_end_offset
        if state.leader_epoch > self.leader_epoch:
            self.log.leader_epoch_cache.assign(state.leader_epoch, leader_end_offset)
            self.leader_epoch_start_offset = leader_end_offset
        elif state.leader_epoch < self.leader_epoch:
            log.warning(
                "%s: LeaderAndIsr with stale leader epoch %d (current %d) applied as leader",
                self.topic_partition,
                state.leader_epoch,
                self.leader_epoch,
            )
        if self.leader_epoch_start_offset is None:
            self.leader_epoch_start_offset = leader_end_offset
        self.replicas = list(state.replicas)
        self.adding_replicas = tuple(state.adding_replicas)
        self.removing_replicas = tuple(state.removing_replicas)
        self.isr = list(state.isr)
        self.pending_isr = None
        self._update_remote_replicas()
        now = self.clock.wall_ms()
        for replica in self.remote_replicas.values():
            replica.reset(
                now,
                self.leader_epoch_start_offset,
                new_leader=not was_leader,
                in_sync=replica.broker_id in self.isr,
            )
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
        self.adding_replicas = tuple(state.adding_replicas)
        self.removing_replicas = tuple(state.removing_replicas)
        self.isr = []
        self.pending_isr = None
        self.remote_replicas.clear()
        self.leader_epoch_start_offset = None
        self.leader_epoch = state.leader_epoch
        self.partition_epoch = state.partition_epoch
        self.leader_id = state.leader
        return not unchanged

    def _update_remote_replicas(self) -> None:
        followers = [r for r in self.replicas if r != self.broker_id]
        for broker_id in list(self.remote_replicas):
            if broker_id not in followers:
                del self.remote_replicas[broker_id]
        for broker_id in followers:
            if broker_id not in self.remote_replicas:
                self.remote_replicas[broker_id] = ReplicaState(broker_id)

    # -- ISR and high watermark (leader) ---------------------------------------------------

    @property
    def is_reassigning(self) -> bool:
        """Kafka's ``isReassigning``: replicas are being added or removed."""
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def replication_factor(self) -> int:
        """Kafka's ``AssignmentState.replicationFactor``: during a reassignment, the replicas
        not being added (the original replication factor)."""
        return len([r for r in self.replicas if r not in self.adding_replicas])

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The ISR the HW waits for (module docstring)."""
        if self.pending_isr is not None:
            return self.pending_isr.maximal_isr
        return frozenset(self.isr)

    @property
    def effective_min_isr(self) -> int:
        """Kafka's ``effectiveMinIsr``: ``min.insync.replicas`` capped by the replication
        factor."""
        return min(self.log.config.min_insync_replicas, len(self.remote_replicas) + 1)

    @property
    def is_under_min_isr(self) -> bool:
        return self.is_leader and len(self.isr) < self.effective_min_isr

    def maybe_increment_leader_hw(self, now_ms: int | None = None) -> bool:
        """Leader only: move the HW up to the smallest log end offset of the maximal ISR and
        of the caught-up ISR-eligible followers (Kafka's ``maybeIncrementLeaderHW``); not
        while under the effective min ISR. True if it moved."""
        if not self.is_leader:
            return False
        log_ = self.log
        new_hw = log_.log_end_offset
        if self.remote_replicas:
            if len(self.isr) < self.effective_min_isr:
                return False
            now = self.clock.wall_ms() if now_ms is None else now_ms
            maximal = self.maximal_isr
            leader_end = new_hw
            for replica in self.remote_replicas.values():
                if replica.log_end_offset < new_hw and (
                    replica.broker_id in maximal
                    or (
                        replica.is_caught_up(leader_end, now, self.replica_lag_time_max_ms)
                        and self.is_replica_isr_eligible(replica.broker_id)
                    )
                ):
                    new_hw = replica.log_end_offset
        if new_hw > log_.high_watermark:
            log_.update_high_watermark(new_hw)
            return True
        return False

    def update_follower_fetch_state(
        self,
        replica_id: int,
        fetch_offset: int,
        log_start_offset: int,
        fetch_time_ms: int,
        leader_end_offset: int,
        broker_epoch: int = -1,
    ) -> bool:
        """A follower's fetch at ``fetch_offset`` (Kafka's ``updateFollowerFetchState``):
        record its state, maybe add it to the ISR, maybe advance the HW; True if the HW
        moved (the caller wakes what waits on it). A replica not assigned here is the
        caller's NOT_LEADER_OR_FOLLOWER (``is_follower``)."""
        replica = self.remote_replicas.get(replica_id)
        if replica is None:
            return False
        prev_end = replica.log_end_offset
        high_watermark = self.log.high_watermark
        replica.update_fetch_state(
            fetch_offset, log_start_offset, fetch_time_ms, leader_end_offset, broker_epoch
        )
        self.maybe_expand_isr(replica)
        if prev_end != replica.log_end_offset:
            self.maybe_increment_leader_hw(fetch_time_ms)
        return self.log.high_watermark != high_watermark

    def is_follower(self, replica_id: int) -> bool:
        """Whether ``replica_id`` is a follower of this leader (may fetch as a replica)."""
        return replica_id in self.remote_replicas

    def is_follower_in_sync(self, replica: ReplicaState) -> bool:
        """Kafka's ``isFollowerInSync``: at or past the HW and the current leader epoch's
        start offset."""
        start = self.leader_epoch_start_offset
        return (
            start is not None
            and replica.log_end_offset >= self.log.high_watermark
            and replica.log_end_offset >= start
        )

    def maybe_expand_isr(self, replica: ReplicaState) -> bool:
        """Kafka's ``maybeExpandIsr``: propose adding an in-sync, eligible follower (one
        change in flight at a time); True if an AlterPartition was submitted."""
        if (
            self.pending_isr is not None
            or not self.is_leader
            or replica.broker_id in self.isr
            or not self.is_follower_in_sync(replica)
            or not self.is_replica_isr_eligible(replica.broker_id)
        ):
            return False
        new_isr = (*self.isr, replica.broker_id)
        log.info(
            "%s: expanding ISR from %s to %s",
            self.topic_partition,
            ",".join(map(str, self.isr)),
            ",".join(map(str, new_isr)),
        )
        return self._submit_isr_change(True, frozenset({replica.broker_id}), new_isr)

    def get_out_of_sync_replicas(self, now_ms: int, max_lag_ms: int) -> frozenset[int]:
        """Kafka's ``getOutOfSyncReplicas``: ISR followers not caught up within
        ``max_lag_ms``."""
        leader_end = self.log.log_end_offset
        return frozenset(
            broker_id
            for broker_id in self.isr
            if broker_id != self.broker_id
            and (replica := self.remote_replicas.get(broker_id)) is not None
            and not replica.is_caught_up(leader_end, now_ms, max_lag_ms)
        )

    def maybe_shrink_isr(self, now_ms: int | None = None) -> bool:
        """Kafka's ``maybeShrinkIsr`` (the replica manager runs it every half lag time):
        propose removing the out-of-sync followers; True if an AlterPartition was
        submitted."""
        if not self.is_leader or self.pending_isr is not None:
            return False
        now = self.clock.wall_ms() if now_ms is None else now_ms
        out = self.get_out_of_sync_replicas(now, self.replica_lag_time_max_ms)
        if not out:
            return False
        new_isr = tuple(r for r in self.isr if r not in out)
        log.info(
            "%s: shrinking ISR from %s to %s (out of sync: %s); HW %d, LEO %d",
            self.topic_partition,
            ",".join(map(str, self.isr)),
            ",".join(map(str, new_isr)),
            ",".join(map(str, sorted(out))),
            self.log.high_watermark,
            self.log.log_end_offset,
        )
        return self._submit_isr_change(False, out, new_isr)

    def _submit_isr_change(
        self, expand: bool, replicas: frozenset[int], new_isr: tuple[int, ...]
    ) -> bool:
        manager = self.alter_partition_manager
        if manager is None:
            return False
        update = IsrUpdate(self.leader_epoch, new_isr, LEADER_RECOVERED, self.partition_epoch)
        pending = PendingIsrChange(expand, replicas, update, tuple(self.isr))
        self.pending_isr = pending
        future = manager.submit(self.topic_partition, self.topic_id, update)
        future.add_done_callback(lambda f: self._alter_partition_done(pending, f))
        # The HW is not looked at here (Kafka's prepareIsrExpand): a move found here would
        # be lost to the caller, and the acks=all produces waiting on it with it.
        return True

    def _alter_partition_done(
        self, pending: PendingIsrChange, future: asyncio.Future[IsrUpdateResult]
    ) -> None:
        if future.cancelled():
            return
        exc = future.exception()
        if exc is not None:
            log.warning("%s: AlterPartition failed: %r", self.topic_partition, exc)
            if self.pending_isr is not pending:
                return
            self.pending_isr = None
            self._mark_isr_change(None)
            moved = self.maybe_increment_leader_hw()
        else:
            moved = self.handle_alter_partition_result(pending, future.result())
        if moved:
            callback = self.on_high_watermark_increment
            if callback is not None:
                callback(self)

    def handle_alter_partition_result(
        self, pending: PendingIsrChange, result: IsrUpdateResult
    ) -> bool:
        """The controller's answer to ``pending`` (Kafka's ``handleAlterPartitionUpdate`` /
        ``handleAlterPartitionError``); True if the HW moved."""
        if self.pending_isr is not pending:
            log.debug("%s: ignoring AlterPartition answer for a stale change", self.topic_partition)
            return False
        if result.error == ErrorCode.NONE:
            if result.leader_epoch != self.leader_epoch:
                log.debug(
                    "%s: ignoring AlterPartition answer of another epoch", self.topic_partition
                )
                self._mark_isr_change(None)
                return False
            if result.partition_epoch < self.partition_epoch:
                log.info(
                    "%s: ignoring AlterPartition answer with partition epoch %d < %d",
                    self.topic_partition,
                    result.partition_epoch,
                    self.partition_epoch,
                )
                self._mark_isr_change(None)
                return False
            self.isr = list(result.isr)
            self.partition_epoch = result.partition_epoch
            self.pending_isr = None
            log.info(
                "%s: ISR updated to %s, partition epoch %d",
                self.topic_partition,
                ",".join(map(str, self.isr)),
                self.partition_epoch,
            )
            self._mark_isr_change(pending)
            return self.maybe_increment_leader_hw()
        self._mark_isr_change(None)
        if result.error in (ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.INELIGIBLE_REPLICA):
            # Known not applied: back to the last committed state, to be retried. A refused
            # addition leaves the maximal ISR, so the HW may move now; Kafka's
            # handleAlterPartitionError does not look, and its acks=all produces wait for the
            # next follower fetch or append, which may never come (a producer whose in-flight
            # requests all wait here sends nothing more): they would time out.
            self.pending_isr = None
            log.info(
                "%s: AlterPartition not applied (%s); ISR stays %s",
                self.topic_partition,
                result.error.name,
                self.isr,
            )
            return self.maybe_increment_leader_hw()
        # UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, others:
        # stay pending until a LeaderAndIsr brings the controller's state (Kafka's).
        log.warning(
            "%s: AlterPartition failed with %s; waiting for LeaderAndIsr",
            self.topic_partition,
            result.error.name,
        )
        return False

    def _mark_isr_change(self, committed: PendingIsrChange | None) -> None:
        """Kafka's ``alterPartitionListener`` marks: a committed expansion or shrink, or (None)
        a failed update (an error answer, or one for another leader or an older partition
        epoch)."""
        listener = self.alter_partition_listener
        if listener is None:
            return
        if committed is None:
            listener.mark_failed()
        elif committed.expand:
            listener.mark_isr_expand()
        else:
            listener.mark_isr_shrink()

    def check_enough_replicas_reach_offset(self, required_offset: int) -> tuple[bool, ErrorCode]:
        """Kafka's ``checkEnoughReplicasReachOffset`` for a delayed acks=all produce:
        (done, error). Done when the HW reached ``required_offset`` (the batch's last offset
        + 1): NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the maximal ISR is now below the
        effective min ISR; not leader any more: done with NOT_LEADER_OR_FOLLOWER."""
        if not self.is_leader:
            return True, ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.log.high_watermark >= required_offset:
            if self.effective_min_isr <= len(self.maximal_isr):
                return True, ErrorCode.NONE
            return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return False, ErrorCode.NONE

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

    @property
    def last_stable_offset(self) -> int:
        """The LSO (``Log.last_stable_offset``): READ_COMMITTED fetches and ListOffsets."""
        return self.log.last_stable_offset

    def collect_aborted_transactions(
        self, start_offset: int, upper_bound_offset: int
    ) -> list[AbortedTxn]:
        """The aborted transactions overlapping ``[start_offset, upper_bound_offset)``
        (``Log.collect_aborted_transactions``): a READ_COMMITTED fetch's list."""
        return self.log.collect_aborted_transactions(start_offset, upper_bound_offset)

    def append_records_to_leader(
        self,
        records: bytes | memoryview,
        *,
        from_client: bool = True,
        required_acks: int = 1,
        verification_guard: VerificationGuard | None = None,
    ) -> LogAppendInfo:
        """Append as leader and advance the HW as the ISR allows.
        ``from_client=False``: the broker's own records (a coordinator's), Kafka's
        ``AppendOrigin.Coordinator``. acks=all (``required_acks`` -1) into a committed ISR
        smaller than the effective ``min.insync.replicas``: ``NotEnoughReplicasError``, nothing
        appended (Kafka's ``appendRecordsToLeader``)."""
        if required_acks == -1 and self.remote_replicas:
            min_isr = self.effective_min_isr
            if len(self.isr) < min_isr:
                raise NotEnoughReplicasError(
                    f"The size of the current ISR {self.isr} is insufficient to satisfy the "
                    f"min.isr requirement of {min_isr} for partition {self.topic_partition}"
                )
        info = self.log.append_as_leader(
            records,
            self.leader_epoch,
            from_client=from_client,
            verification_guard=verification_guard,
        )
        self.maybe_increment_leader_hw()
        return info

    def read(
        self, offset: int, max_bytes: int, *, min_one_message: bool, up_to_leo: bool = False
    ) -> FetchDataInfo:
        """Committed batches (below the HW) from ``offset``, for a consumer; with
        ``up_to_leo`` (a follower's fetch, Kafka's ``FetchIsolation.LOG_END``) up to the log
        end offset."""
        return self.log.read(
            offset,
            max_bytes,
            max_offset=None if up_to_leo else self.log.high_watermark,
            min_one_message=min_one_message,
        )

    # -- follower --------------------------------------------------------------------------

    def append_records_to_follower(self, records: bytes | memoryview) -> LogAppendInfo:
        """Append batches fetched from the leader as they are: offsets, leader epochs and
        bytes kept (``Log.append_as_follower``; Kafka's
        ``appendRecordsToFollowerOrFutureReplica``).

        An empty log whose start offset is inside the first batch (the leader's log start
        was moved into a batch by DeleteRecords, and this replica starts there) restarts at
        that batch's base offset first, as Kafka's handling of
        ``UnexpectedAppendOffsetException`` does; the log start offset catches up with the
        leader's on the next fetch response."""
        log_ = self.log
        end = log_.log_end_offset
        if end == log_.log_start_offset and len(records) >= _FIRST_BATCH_HEADER.size:
            base, last_delta = _FIRST_BATCH_HEADER.unpack_from(records)
            if base < end <= base + last_delta:
                log.info(
                    "%s: the leader's batch %d-%d holds this empty replica's start offset %d; "
                    "restarting the log at %d",
                    self.topic_partition,
                    base,
                    base + last_delta,
                    end,
                    base,
                )
                log_.truncate_fully_and_start_at(base)
        return log_.append_as_follower(records)

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
        cache = self.log.leader_epoch_cache
        if leader_epoch >= 0 and leader_epoch == cache.latest_epoch:
            # Every fetch of an in-sync follower asks this (its last fetched epoch is the
            # leader's latest): the answer is the log end, as below, without the list.
            return leader_epoch, self.log.log_end_offset
        return end_offset_for_epoch(
            [(e.epoch, e.start_offset) for e in cache.entries],
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
