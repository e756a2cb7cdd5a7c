"""The embedded single-node mode's controller: the same pure core as cluster mode's
``Controller`` (``franz.controller.states``, ``election``, ``batch``), driven synchronously
over the local metadata store, its requests delivered in process.

What it does, in Kafka 3.9's ``KafkaController`` order (with ``controller.py`` and
``deletion.py`` the cluster-mode counterparts):

* ``startup``: ``onControllerFailover`` with this broker the only live one: one more controller
  epoch (recorded with the store's next write), the context from the store (topics,
  assignments, the partition states), UpdateMetadata with the live brokers, the replica state
  machine's startup (OnlineReplica: LeaderAndIsr with the stored state), the partition state
  machine's (New for a partition with no stored state, Online when its leader is live, else
  Offline) and ``triggerOnlinePartitionStateChange``. A partition whose sole live replica is
  its leader stays Online and keeps its leader epoch (Kafka bumps it only on an election), so a
  restart keeps leader epoch 0; a data dir written before partition states were stored has New
  partitions, elected with Kafka's initial leader and ISR (epoch 0).
* ``create_topic`` / ``create_partitions``: ``onNewPartitionCreation`` (New, NewReplica,
  Online with the first live replica as leader and the live replicas as ISR, OnlineReplica).
* ``delete_topic``: ``TopicDeletionManager`` (partitions Offline then NonExistent,
  UpdateMetadata with leader -2, replicas OfflineReplica then ReplicaDeletionStarted:
  StopReplica with delete, ReplicaDeletionSuccessful, NonExistentReplica), to completion
  before it returns: the topic's files are gone when DeleteTopics answers, as before.
* ``replicas_offline`` (a log dir failed, KIP-112): ``onReplicasBecomeOffline``; the
  partitions lose their leader (-1, leader epoch + 1) and list this broker as offline.
* ``broker_listening``: this broker's endpoint (known once it listens) to every broker's
  metadata, as ``onBrokerStartup``'s UpdateMetadata.
* ``alter_partition_reassignments`` / ``list_partition_reassignments``: KIP-455 with one live
  broker (``franz.controller.reassignment``'s checks): an added replica must be a live broker,
  so an accepted target is the partition's replica set and the move is complete at once, as
  Kafka's phase B: the leader epoch + 1 (the stored state), LeaderAndIsr, UpdateMetadata.
  Nothing is ever listed as moving.
* ``alter_partition``: ``processAlterPartition`` in process, for the broker's own
  ``AlterPartitionManager`` (the same validation as cluster mode's,
  ``franz.controller.alter_partition``; the broker epoch is -1 here): accepted states are
  stored with partition epoch + 1 and sent in an UpdateMetadata. The ISR of a single node is
  itself, so it is rarely asked anything.

Partition-state writes (the ``CreatePartitionState`` / ``UpdatePartitionState`` outputs,
Kafka's znode writes) go to the store in one durable write per state change; a write that
fails (the store's disk failed) is logged and the controller goes on from its context, as the
broker keeps serving. Requests go to ``deliver`` (the broker's
``franz.broker.control_requests``, the code the network handlers run in cluster mode), which
answers each with its partition errors: KAFKA_STORAGE_ERROR in a LeaderAndIsr answer marks the
replica offline (``processLeaderAndIsrResponseReceived``).

Concurrency: everything runs on the broker's loop, synchronously, one operation at a time;
an event that arrives during an operation (a log dir failing while a LeaderAndIsr creates a
log) is queued and handled when the operation ends, as the cluster controller's event queue
does.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol

from franz.controller.alter_partition import (
    AlterPartitionRequestData,
    PartitionOutcome,
    plan_alter_partition,
)
from franz.controller.batch import ControllerBrokerRequestBatch, ControlRequest
from franz.controller.context import Broker, ControllerContext, EndPoint
from franz.controller.election import ElectionStrategy
from franz.controller.model import (
    NO_LEADER,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaAssignment,
    TopicPartition,
)
from franz.controller.reassignment import (
    NONE,
    AlterReassignmentsResult,
    ApiError,
    ListReassignmentsResult,
    ongoing_reassignments,
    plan_api_reassignments,
    trigger_error,
    update_leader_epoch,
)
from franz.controller.requests import LeaderAndIsrRequest, StopReplicaRequest
from franz.controller.shell.alter_partition import AlterPartitionResult, group_outcomes
from franz.controller.shell.zk_reads import leadership_from_state, state_from_leadership
from franz.controller.states import (
    PartitionState,
    ReplicaState,
    StateChange,
    partition_state_changes,
    replica_state_changes,
    trigger_online_partition_state_change,
)
from franz.errors import ErrorCode
from franz.metadata.store import TopicRecord
from franz.metadata.znodes import PartitionState as StoredPartitionState

__all__ = ["ControllerStore", "Deliver", "LocalController"]

log = logging.getLogger(__name__)

P = PartitionState
R = ReplicaState

#: Delivers one request to this broker; answers its partitions' error codes (non-NONE ones
#: at least; UpdateMetadata: none).
Deliver = Callable[[ControlRequest], Mapping[tuple[str, int], ErrorCode]]


class ControllerStore(Protocol):
    """What the embedded controller reads and writes (``LocalMetadataStore``)."""

    def topics(self) -> dict[str, TopicRecord]: ...

    def increment_controller_epoch(self) -> int: ...

    def partition_states(self) -> dict[tuple[str, int], StoredPartitionState]: ...

    def set_partition_states(
        self, states: Mapping[tuple[str, int], StoredPartitionState | None]
    ) -> None: ...


class LocalController:
    """The embedded mode's controller (module docstring)."""

    def __init__(
        self,
        store: ControllerStore,
        broker_id: int,
        deliver: Deliver,
        *,
        rack: str | None = None,
        listener: str = "PLAINTEXT",
    ) -> None:
        self.store = store
        self.controller_id = broker_id
        self.deliver = deliver
        self.rack = rack
        self.batch = ControllerBrokerRequestBatch(broker_id, inter_broker_listener=listener)
        self._ctx: ControllerContext | None = None
        self._busy = False
        self._queued: list[Callable[[], None]] = []
        #: Partitions a LeaderAndIsr answered KAFKA_STORAGE_ERROR for, during the current
        #: operation (``create_topic`` and ``create_partitions`` report them).
        self._storage_errors: set[TopicPartition] = set()

    @property
    def ctx(self) -> ControllerContext:
        if self._ctx is None:
            raise RuntimeError("the embedded controller has not started")
        return self._ctx

    @property
    def is_active(self) -> bool:
        return self._ctx is not None

    # -- operations -----------------------------------------------------------------------

    def _run(self, operation: Callable[[], None]) -> None:
        """Run ``operation``, then whatever was queued meanwhile (module docstring)."""
        if self._busy:
            self._queued.append(operation)
            return
        self._busy = True
        try:
            operation()
            while self._queued:
                self._queued.pop(0)()
        finally:
            self._busy = False
            self._queued.clear()

    def startup(self) -> None:
        """``onControllerFailover`` (module docstring)."""
        self._run(self._startup)

    def alter_partition(self, request: AlterPartitionRequestData) -> AlterPartitionResult:
        """``processAlterPartition`` (module docstring); NOT_CONTROLLER before ``startup``
        or when called from inside an operation (the caller retries)."""
        results: list[AlterPartitionResult] = []

        def run() -> None:
            ctx = self.ctx
            plan = plan_alter_partition(ctx, request)
            if plan.error != ErrorCode.NONE:
                results.append(AlterPartitionResult(plan.error))
                return
            outcomes = dict(plan.outcomes)
            written: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
            for tp, new in plan.to_write.items():
                updated = new.with_partition_epoch(new.partition_epoch + 1)
                written[tp] = LeaderIsrAndControllerEpoch(updated, ctx.epoch)
                outcomes[tp] = PartitionOutcome(ErrorCode.NONE, updated)
            self._write_states(dict(written))
            ctx.partition_leadership_info.update(written)
            if plan.partitions:
                self._send_update_metadata(ctx.live_or_shutting_down_broker_ids, plan.partitions)
            results.append(group_outcomes(request.version, plan, outcomes, ctx.topic_ids))

        if self._ctx is None or self._busy:
            return AlterPartitionResult(ErrorCode.NOT_CONTROLLER)
        self._run(run)
        return results[0] if results else AlterPartitionResult(ErrorCode.NOT_CONTROLLER)

    def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, Sequence[int] | None]
    ) -> AlterReassignmentsResult:
        """``processApiPartitionReassignment`` in process (module docstring)."""
        results: dict[TopicPartition, ApiError] = {}

        def run() -> None:
            ctx = self.ctx
            plan = plan_api_reassignments(ctx, reassignments)
            results.update(plan.errors)
            for tp, reassignment in plan.to_reassign.items():
                results[tp] = trigger_error(ctx, tp) or self._complete_reassignment(
                    tp, reassignment
                )

        if self._ctx is None or self._busy:
            return AlterReassignmentsResult(ApiError.of(ErrorCode.NOT_CONTROLLER))
        self._run(run)
        return AlterReassignmentsResult(NONE, results)

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartition] | None
    ) -> ListReassignmentsResult:
        """``processListPartitionReassignments``: nothing ever moves on one broker."""
        if self._ctx is None:
            return ListReassignmentsResult(ApiError.of(ErrorCode.NOT_CONTROLLER))
        return ListReassignmentsResult(NONE, ongoing_reassignments(self.ctx, partitions))

    def broker_listening(self, endpoints: Sequence[EndPoint]) -> None:
        """This broker listens: its endpoints (one per advertised listener, with the bound
        ports) to the metadata of every broker."""

        def run() -> None:
            ctx = self.ctx
            ctx.add_live_brokers([Broker(self.controller_id, -1, tuple(endpoints), self.rack)])
            self._send_update_metadata(ctx.live_or_shutting_down_broker_ids)

        self._run(run)

    def create_topic(self, record: TopicRecord) -> set[TopicPartition]:
        """A topic was added to the store: create its partitions; the partitions whose
        replica on this broker could not be created (KAFKA_STORAGE_ERROR)."""

        def run() -> None:
            self.ctx.add_topic(
                record.name,
                record.topic_id,
                {p: ReplicaAssignment(tuple(r)) for p, r in record.assignment.items()},
            )
            self._on_new_partition_creation(sorted(self.ctx.partitions_for_topic(record.name)))

        return self._collecting_storage_errors(run)

    def create_partitions(
        self, topic: str, assignment: Mapping[int, Iterable[int]]
    ) -> set[TopicPartition]:
        """Partitions added to ``topic`` (``processPartitionModifications``); the ones that
        failed as ``create_topic``."""

        def run() -> None:
            ctx = self.ctx
            added = sorted(TopicPartition(topic, p) for p in assignment)
            for tp in added:
                replicas = tuple(assignment[tp.partition])
                ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment(replicas))
            self._on_new_partition_creation(added)

        return self._collecting_storage_errors(run)

    def remove_partitions(self, topic: str, partitions: Iterable[int]) -> None:
        """Undo ``create_partitions`` whose partitions could not all be created or recorded
        (no Kafka counterpart: its controller never rolls back): StopReplica with delete,
        and UpdateMetadata with leader -2 for them, then they are forgotten."""
        tps = sorted(TopicPartition(topic, p) for p in partitions)

        def run() -> None:
            ctx = self.ctx
            queued = ctx.is_topic_queued_up_for_deletion(topic)
            ctx.queue_topic_deletion([topic])  # announced with leader and epoch -2
            self.batch.new_batch(ctx)
            try:
                self.batch.add_update_metadata_request_for_brokers(
                    sorted(ctx.live_or_shutting_down_broker_ids), tps
                )
                for tp in tps:
                    self.batch.add_stop_replica_request_for_brokers(
                        ctx.partition_replica_assignment(tp), tp, delete_partition=True
                    )
                requests = self.batch.send_requests_to_brokers(ctx.epoch)
            finally:
                self.batch.clear()
                if not queued:
                    ctx.topics_to_be_deleted.discard(topic)
            self._deliver(requests)
            for tp in tps:
                self._forget_partition(tp)
            self._write_states({tp: None for tp in tps})

        self._run(run)

    def delete_topic(self, topic: str) -> None:
        """``TopicDeletionManager`` to completion (module docstring)."""
        self._run(lambda: self._delete_topic(topic))

    def replicas_offline(self, partitions: Iterable[TopicPartition]) -> None:
        """This broker's replicas of ``partitions`` are on a failed log dir."""
        tps = set(partitions)
        self._run(lambda: self._replicas_offline(tps))

    def _complete_reassignment(
        self, tp: TopicPartition, reassignment: ReplicaAssignment
    ) -> ApiError:
        """``onPartitionReassignment`` of a move that is complete at once: the only live
        broker hosts every partition, so an accepted target is the replica set. As Kafka's
        phase B: the leader, live and a target replica, gets a new leader epoch (else the
        reassign election), LeaderAndIsr, UpdateMetadata to every broker."""
        ctx = self.ctx
        if reassignment.is_being_reassigned or reassignment.replicas != (
            ctx.partition_replica_assignment(tp)
        ):
            log.error("cannot move %s to %s: one broker", tp, list(reassignment.target_replicas))
            return ApiError.of(ErrorCode.UNKNOWN_SERVER_ERROR)
        info = ctx.partition_leadership_info.get(tp)
        leader = NO_LEADER if info is None else info.leader_and_isr.leader
        if leader in reassignment.replicas and ctx.is_replica_online(leader, tp):
            cid = self.controller_id
            self._handle(update_leader_epoch(ctx, tp, info, reassignment, controller_id=cid))
        else:
            self._handle(
                partition_state_changes(
                    ctx,
                    [tp],
                    P.ONLINE_PARTITION,
                    ElectionStrategy.REASSIGN,
                    controller_id=self.controller_id,
                )
            )
        self._send_update_metadata(ctx.live_or_shutting_down_broker_ids, {tp})
        return NONE

    # -- failover ---------------------------------------------------------------------------

    def _startup(self) -> None:
        epoch = self.store.increment_controller_epoch()
        ctx = self._ctx = ControllerContext(epoch=epoch)
        ctx.add_live_brokers([Broker(self.controller_id, -1, (), self.rack)])
        for record in self.store.topics().values():
            ctx.add_topic(
                record.name,
                record.topic_id,
                {p: ReplicaAssignment(tuple(r)) for p, r in record.assignment.items()},
            )
        known = ctx.all_partitions()
        for (topic, p), state in self.store.partition_states().items():
            tp = TopicPartition(topic, p)
            if tp in known:
                ctx.partition_leadership_info[tp] = leadership_from_state(state)
        self._send_update_metadata(ctx.live_or_shutting_down_broker_ids)
        # replicaStateMachine.startup
        online: list[PartitionAndReplica] = []
        offline: list[PartitionAndReplica] = []
        for tp in sorted(known):
            for r in ctx.partition_replica_assignment(tp):
                replica = PartitionAndReplica(tp, r)
                if ctx.is_replica_online(r, tp):
                    ctx.replica_states[replica] = R.ONLINE_REPLICA
                    online.append(replica)
                else:
                    ctx.replica_states[replica] = R.REPLICA_DELETION_INELIGIBLE
                    offline.append(replica)
        self._handle(replica_state_changes(ctx, online, R.ONLINE_REPLICA))
        self._handle(replica_state_changes(ctx, offline, R.OFFLINE_REPLICA))
        # partitionStateMachine.startup
        for tp in known:
            info = ctx.partition_leadership_info.get(tp)
            if info is None:
                ctx.partition_states[tp] = P.NEW_PARTITION
            elif ctx.is_replica_online(info.leader_and_isr.leader, tp):
                ctx.partition_states[tp] = P.ONLINE_PARTITION
            else:
                ctx.partition_states[tp] = P.OFFLINE_PARTITION
        self._handle(trigger_online_partition_state_change(ctx, controller_id=self.controller_id))
        log.info(
            "embedded controller %d is active, epoch %d, %d partition(s)",
            self.controller_id,
            epoch,
            len(known),
        )

    # -- partitions -------------------------------------------------------------------------

    def _on_new_partition_creation(self, partitions: list[TopicPartition]) -> None:
        """``onNewPartitionCreation``."""
        ctx = self.ctx
        cid = self.controller_id
        self._handle(partition_state_changes(ctx, partitions, P.NEW_PARTITION, controller_id=cid))
        replicas = ctx.replicas_for_partitions(partitions)
        self._handle(replica_state_changes(ctx, replicas, R.NEW_REPLICA))
        self._handle(
            partition_state_changes(
                ctx, partitions, P.ONLINE_PARTITION, ElectionStrategy.OFFLINE, controller_id=cid
            )
        )
        self._handle(replica_state_changes(ctx, replicas, R.ONLINE_REPLICA))

    def _replicas_offline(self, tps: set[TopicPartition]) -> None:
        """``processLeaderAndIsrResponseReceived`` / ``onBrokerLogDirFailure`` for this
        broker's replicas, then ``onReplicasBecomeOffline``."""
        ctx = self.ctx
        tps = {tp for tp in tps if tp.topic in ctx.partition_assignments}
        known = ctx.replicas_on_offline_dirs.setdefault(self.controller_id, set())
        fresh = tps - known
        known.update(fresh)
        if not fresh:
            return
        replicas = {PartitionAndReplica(tp, self.controller_id) for tp in fresh}
        offline_leader = sorted(ctx.partitions_with_offline_leader())
        self._handle(
            partition_state_changes(
                ctx, offline_leader, P.OFFLINE_PARTITION, controller_id=self.controller_id
            )
        )
        self._handle(trigger_online_partition_state_change(ctx, controller_id=self.controller_id))
        self._handle(replica_state_changes(ctx, replicas, R.OFFLINE_REPLICA))

    def _forget_partition(self, tp: TopicPartition) -> None:
        ctx = self.ctx
        ctx.partition_states.pop(tp, None)
        ctx.partition_leadership_info.pop(tp, None)
        for r in ctx.partition_replica_assignment(tp):
            ctx.replica_states.pop(PartitionAndReplica(tp, r), None)
        ctx.partition_assignments.get(tp.topic, {}).pop(tp.partition, None)
        for offline in ctx.replicas_on_offline_dirs.values():
            offline.discard(tp)

    # -- topic deletion ---------------------------------------------------------------------

    def _delete_topic(self, topic: str) -> None:
        """``TopicDeletionManager``: ``onTopicDeletion``, ``onPartitionDeletion``, the
        StopReplica answers, ``completeDeleteTopic``. This broker is live, so every replica
        is asked to delete (a replica on a failed log dir too: its StopReplica answers
        KAFKA_STORAGE_ERROR, logged; Kafka would keep the topic queued until the dir comes
        back, while the store has already forgotten it here)."""
        ctx = self.ctx
        if topic not in ctx.partition_assignments:
            return
        ctx.queue_topic_deletion([topic])
        partitions = sorted(ctx.partitions_for_topic(topic))
        cid = self.controller_id
        for target in (P.OFFLINE_PARTITION, P.NON_EXISTENT_PARTITION):
            self._handle(partition_state_changes(ctx, partitions, target, controller_id=cid))
        ctx.begin_topic_deletion([topic])
        self._send_update_metadata(ctx.live_or_shutting_down_broker_ids, partitions)
        replicas = ctx.replicas_for_topic(topic)
        self._handle(replica_state_changes(ctx, replicas, R.OFFLINE_REPLICA))
        errors = self._handle(replica_state_changes(ctx, replicas, R.REPLICA_DELETION_STARTED))
        failed = {r for r in replicas if errors.get(r.topic_partition, ErrorCode.NONE)}
        if failed:
            log.error(
                "could not delete the logs of %s: %s",
                topic,
                sorted(str(r.topic_partition) for r in failed),
            )
        self._handle(replica_state_changes(ctx, replicas, R.REPLICA_DELETION_SUCCESSFUL))
        self._handle(replica_state_changes(ctx, replicas, R.NON_EXISTENT_REPLICA))
        for tp in partitions:
            for offline in ctx.replicas_on_offline_dirs.values():
                offline.discard(tp)
        self._write_states(dict.fromkeys(partitions, None))
        ctx.remove_topic(topic)
        log.info("deletion of topic %s successfully completed", topic)

    # -- applying the core's outputs --------------------------------------------------------

    def _collecting_storage_errors(self, operation: Callable[[], None]) -> set[TopicPartition]:
        self._storage_errors = set()
        try:
            self._run(operation)
            return self._storage_errors
        finally:
            self._storage_errors = set()

    def _handle(self, change: StateChange) -> dict[TopicPartition, ErrorCode]:
        """Write, apply, batch and deliver one ``StateChange`` (as ``Controller.handle``,
        without races: nothing else writes the store); the StopReplica answers."""
        ctx = self.ctx
        for item, message in change.failures.items():
            log.error("controller %d: %s (%s)", self.controller_id, message, item)
        self._write_states(
            {w.topic_partition: w.leader_isr_and_controller_epoch for w in change.writes()}
        )
        change.apply(ctx)
        self.batch.new_batch(ctx)
        try:
            self.batch.add(change.requests())
            requests = self.batch.send_requests_to_brokers(ctx.epoch)
        finally:
            self.batch.clear()
        return self._deliver(requests)

    def _send_update_metadata(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] = ()
    ) -> None:
        """``sendUpdateMetadataRequest``."""
        ctx = self.ctx
        self.batch.new_batch(ctx)
        try:
            self.batch.add_update_metadata_request_for_brokers(sorted(broker_ids), partitions)
            requests = self.batch.send_requests_to_brokers(ctx.epoch)
        finally:
            self.batch.clear()
        self._deliver(requests)

    def _write_states(
        self, states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch | None]
    ) -> None:
        """The partition-state "znode" writes of one change, in one store write (None:
        removed)."""
        if not states:
            return
        encoded: dict[tuple[str, int], StoredPartitionState | None] = {
            (tp.topic, tp.partition): None
            if info is None
            else state_from_leadership(info, info.leader_and_isr.partition_epoch)
            for tp, info in states.items()
        }
        try:
            self.store.set_partition_states(encoded)
        except OSError as exc:
            log.error("could not record the state of %d partition(s): %s", len(encoded), exc)

    def _deliver(self, requests: list[ControlRequest]) -> dict[TopicPartition, ErrorCode]:
        """Deliver in Kafka's order; LeaderAndIsr storage errors mark replicas offline (after
        the current operation); the StopReplica answers are returned."""
        stop_answers: dict[TopicPartition, ErrorCode] = {}
        for request in requests:
            errors = self.deliver(request)
            if isinstance(request.request, LeaderAndIsrRequest):
                offline = {
                    TopicPartition(*tp)
                    for tp, code in errors.items()
                    if code == ErrorCode.KAFKA_STORAGE_ERROR
                }
                if offline:
                    self._storage_errors |= offline
                    self._queued.append(functools.partial(self._replicas_offline, offline))
            elif isinstance(request.request, StopReplicaRequest):
                stop_answers.update((TopicPartition(*tp), c) for tp, c in errors.items())
        return stop_answers
