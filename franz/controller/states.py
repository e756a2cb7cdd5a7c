"""The partition and replica state machines as data, with pure transitions (Kafka 3.9's
``ZkPartitionStateMachine`` and ``ZkReplicaStateMachine``).

Rules:

* ``VALID_PREVIOUS_PARTITION_STATES`` / ``VALID_PREVIOUS_REPLICA_STATES`` are Kafka's
  ``validPreviousStates``. A partition or replica the controller has never seen is in
  ``NON_EXISTENT_*`` (Kafka's ``getOrElseUpdate(..., NonExistent...)``). An invalid transition
  is not an exception: it is reported in ``StateChange.failures`` with Kafka's message and
  the item is left alone, as Kafka logs it and moves on.
* ``partition_state_changes`` / ``replica_state_changes`` never mutate the context: they return
  a ``StateChange`` (new states, new leader/ISR, assignment edits) and its *outputs*: znode
  writes (``CreatePartitionState``, ``UpdatePartitionState``) and broker-request additions
  (``AddLeaderAndIsr``, ``AddStopReplica``, ``AddUpdateMetadata``, the calls Kafka makes on its
  ``ControllerBrokerRequestBatch``), all values.
* Optimistic writes: a change is computed as if every znode write succeeds; ZooKeeper bumps a
  znode's version by one per ``setData`` (a create gives 0), so the new partition epoch is
  known in advance. The driver performs the writes in order; for the partitions whose
  conditional write failed (BADVERSION: someone else changed the state) it calls
  ``change.without(failed)``, re-reads them and re-runs the transition (Kafka's retry loop in
  ``electLeaderForPartitions`` / ``removeReplicasFromIsr``). Then ``change.apply(ctx)`` and
  only then hand ``change.outputs`` to the request batch (which reads the updated context, as
  Kafka's batch reads ``controllerContext`` after the update).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from franz.controller.model import (
    NO_LEADER,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    TopicPartition,
)

if TYPE_CHECKING:
    from franz.controller.context import ControllerContext
    from franz.controller.election import ElectionStrategy

__all__ = [
    "VALID_PREVIOUS_PARTITION_STATES",
    "VALID_PREVIOUS_REPLICA_STATES",
    "AddLeaderAndIsr",
    "AddStopReplica",
    "AddUpdateMetadata",
    "CreatePartitionState",
    "Output",
    "PartitionState",
    "ReplicaState",
    "StateChange",
    "UpdatePartitionState",
    "partition_state_changes",
    "replica_state_changes",
    "trigger_online_partition_state_change",
]


class PartitionState(enum.Enum):
    """Kafka's ``PartitionState``; values are Kafka's ``state`` bytes, ``str()`` its name."""

    NEW_PARTITION = 0
    ONLINE_PARTITION = 1
    OFFLINE_PARTITION = 2
    NON_EXISTENT_PARTITION = 3

    def __str__(self) -> str:
        return "".join(w.capitalize() for w in self.name.split("_"))


class ReplicaState(enum.Enum):
    """Kafka's ``ReplicaState``; values are Kafka's ``state`` bytes."""

    NEW_REPLICA = 1
    ONLINE_REPLICA = 2
    OFFLINE_REPLICA = 3
    REPLICA_DELETION_STARTED = 4
    REPLICA_DELETION_SUCCESSFUL = 5
    REPLICA_DELETION_INELIGIBLE = 6
    NON_EXISTENT_REPLICA = 7

    def __str__(self) -> str:
        return "".join(w.capitalize() for w in self.name.split("_"))


P = PartitionState
R = ReplicaState

VALID_PREVIOUS_PARTITION_STATES: Final[Mapping[PartitionState, frozenset[PartitionState]]] = {
    P.NEW_PARTITION: frozenset({P.NON_EXISTENT_PARTITION}),
    P.ONLINE_PARTITION: frozenset({P.NEW_PARTITION, P.ONLINE_PARTITION, P.OFFLINE_PARTITION}),
    P.OFFLINE_PARTITION: frozenset({P.NEW_PARTITION, P.ONLINE_PARTITION, P.OFFLINE_PARTITION}),
    P.NON_EXISTENT_PARTITION: frozenset({P.OFFLINE_PARTITION}),
}

_LIVE_OR_INELIGIBLE = frozenset(
    {R.NEW_REPLICA, R.ONLINE_REPLICA, R.OFFLINE_REPLICA, R.REPLICA_DELETION_INELIGIBLE}
)
VALID_PREVIOUS_REPLICA_STATES: Final[Mapping[ReplicaState, frozenset[ReplicaState]]] = {
    R.NEW_REPLICA: frozenset({R.NON_EXISTENT_REPLICA}),
    R.ONLINE_REPLICA: _LIVE_OR_INELIGIBLE,
    R.OFFLINE_REPLICA: _LIVE_OR_INELIGIBLE,
    R.REPLICA_DELETION_STARTED: frozenset({R.OFFLINE_REPLICA}),
    R.REPLICA_DELETION_SUCCESSFUL: frozenset({R.REPLICA_DELETION_STARTED}),
    R.REPLICA_DELETION_INELIGIBLE: frozenset({R.OFFLINE_REPLICA, R.REPLICA_DELETION_STARTED}),
    R.NON_EXISTENT_REPLICA: frozenset({R.REPLICA_DELETION_SUCCESSFUL}),
}


# -- outputs ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CreatePartitionState:
    """Create ``/brokers/topics/<t>/partitions/<p>/state`` (``createTopicPartitionStatesRaw``);
    fails if it exists."""

    topic_partition: TopicPartition
    leader_isr_and_controller_epoch: LeaderIsrAndControllerEpoch


@dataclass(frozen=True, slots=True)
class UpdatePartitionState:
    """``setData`` of the partition's ``state`` znode if its version is still
    ``expected_zk_version`` (``updateLeaderAndIsr``); the written value's
    ``partition_epoch`` is ``expected_zk_version + 1``."""

    topic_partition: TopicPartition
    leader_isr_and_controller_epoch: LeaderIsrAndControllerEpoch
    expected_zk_version: int


@dataclass(frozen=True, slots=True)
class AddLeaderAndIsr:
    """``addLeaderAndIsrRequestForBrokers(broker_ids, tp, leaderIsr, assignment, isNew)``; the
    batch reads the leader/ISR from the context when it is applied."""

    broker_ids: tuple[int, ...]
    topic_partition: TopicPartition
    is_new: bool


@dataclass(frozen=True, slots=True)
class AddStopReplica:
    """``addStopReplicaRequestForBrokers(broker_ids, tp, deletePartition)``."""

    broker_ids: tuple[int, ...]
    topic_partition: TopicPartition
    delete_partition: bool


@dataclass(frozen=True, slots=True)
class AddUpdateMetadata:
    """``addUpdateMetadataRequestForBrokers(broker_ids, partitions)``."""

    broker_ids: tuple[int, ...]
    partitions: frozenset[TopicPartition]


Output = (
    CreatePartitionState
    | UpdatePartitionState
    | AddLeaderAndIsr
    | AddStopReplica
    | AddUpdateMetadata
)


def _output_partitions(output: Output) -> frozenset[TopicPartition]:
    if isinstance(output, AddUpdateMetadata):
        return output.partitions
    return frozenset({output.topic_partition})


@dataclass(frozen=True, slots=True)
class StateChange:
    """The result of a transition, to apply to the ``ControllerContext`` that produced it.

    ``replica_states`` maps to ``None`` for a replica removed from the state machine
    (NonExistentReplica). ``failures`` maps a partition or replica to Kafka's log message.
    ``unclean`` lists partitions that got an unclean leader (Kafka's unclean-election meter).
    """

    partition_states: Mapping[TopicPartition, PartitionState] = field(default_factory=dict)
    replica_states: Mapping[PartitionAndReplica, ReplicaState | None] = field(default_factory=dict)
    leadership: Mapping[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    assignments: Mapping[TopicPartition, tuple[int, ...]] = field(default_factory=dict)
    outputs: tuple[Output, ...] = ()
    failures: Mapping[TopicPartition | PartitionAndReplica, str] = field(default_factory=dict)
    unclean: frozenset[TopicPartition] = frozenset()

    def without(self, partitions: Iterable[TopicPartition]) -> StateChange:
        """This change minus everything about ``partitions`` (their writes failed)."""
        gone = frozenset(partitions)
        outputs: list[Output] = []
        for out in self.outputs:
            if isinstance(out, AddUpdateMetadata):
                kept = out.partitions - gone
                if kept or not out.partitions:
                    outputs.append(AddUpdateMetadata(out.broker_ids, kept))
            elif out.topic_partition not in gone:
                outputs.append(out)
        return StateChange(
            {tp: s for tp, s in self.partition_states.items() if tp not in gone},
            {r: s for r, s in self.replica_states.items() if r.topic_partition not in gone},
            {tp: v for tp, v in self.leadership.items() if tp not in gone},
            {tp: v for tp, v in self.assignments.items() if tp not in gone},
            tuple(outputs),
            self.failures,
            self.unclean - gone,
        )

    def writes(self) -> tuple[CreatePartitionState | UpdatePartitionState, ...]:
        return tuple(
            o for o in self.outputs if isinstance(o, CreatePartitionState | UpdatePartitionState)
        )

    def requests(self) -> tuple[AddLeaderAndIsr | AddStopReplica | AddUpdateMetadata, ...]:
        return tuple(
            o
            for o in self.outputs
            if isinstance(o, AddLeaderAndIsr | AddStopReplica | AddUpdateMetadata)
        )

    def apply(self, ctx: ControllerContext) -> None:
        """Record this change in ``ctx`` (the owner's single mutation point)."""
        ctx.partition_states.update(self.partition_states)
        for replica, state in self.replica_states.items():
            if state is None:
                ctx.replica_states.pop(replica, None)
            else:
                ctx.replica_states[replica] = state
        ctx.partition_leadership_info.update(self.leadership)
        for tp, replicas in self.assignments.items():
            ctx.update_partition_replica_assignment(tp, replicas)


# -- the partition state machine -------------------------------------------------------------


def _invalid_partition_transition(
    tp: TopicPartition, current: PartitionState, target: PartitionState
) -> str:
    valid = ",".join(sorted(str(s) for s in VALID_PREVIOUS_PARTITION_STATES[target]))
    return (
        f"Partition {tp} should be in one of {valid} states before moving to {target} state. "
        f"Instead it is in {current} state"
    )


def partition_state_changes(
    ctx: ControllerContext,
    partitions: Iterable[TopicPartition],
    target: PartitionState,
    strategy: ElectionStrategy | None = None,
    *,
    controller_id: int,
    current: Mapping[TopicPartition, LeaderIsrAndControllerEpoch] | None = None,
    unclean_leader_election_enabled: Callable[[str], bool] = lambda topic: False,
) -> StateChange:
    """Kafka's ``ZkPartitionStateMachine.doHandleStateChanges``.

    NonExistent -> New: mark only. New -> Online: leader = first live assigned replica, ISR =
    all live assigned replicas, epoch 0, created znode; LeaderAndIsr (``isNew``) to the ISR.
    Online/Offline -> Online: elect with ``strategy`` from the current leader/ISR (``current``,
    as freshly read from ZooKeeper; the context's cache when not given); a state written by a
    newer controller aborts. -> Offline, Offline -> NonExistent: mark only.
    ``unclean_leader_election_enabled(topic)``: the topic's ``unclean.leader.election.enable``
    (or ElectLeaders' UNCLEAN type: ``OfflinePartitionLeaderElectionStrategy(allowUnclean)``).
    """
    from franz.controller.election import elect

    states: dict[TopicPartition, PartitionState] = {}
    leadership: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
    outputs: list[Output] = []
    failures: dict[TopicPartition | PartitionAndReplica, str] = {}
    unclean: set[TopicPartition] = set()
    valid_previous = VALID_PREVIOUS_PARTITION_STATES[target]
    fresh = ctx.partition_leadership_info if current is None else current
    for tp in dict.fromkeys(partitions):
        state = ctx.partition_states.get(tp, P.NON_EXISTENT_PARTITION)
        if tp not in ctx.partition_states:
            states[tp] = state
        if state not in valid_previous:
            failures[tp] = _invalid_partition_transition(tp, state, target)
            continue
        if target is not P.ONLINE_PARTITION:
            states[tp] = target
            continue
        full = ctx.partition_full_replica_assignment(tp)
        if state is P.NEW_PARTITION:
            live = tuple(r for r in full.replicas if ctx.is_replica_online(r, tp))
            if not live:
                failures[tp] = (
                    f"Controller {controller_id} epoch {ctx.epoch} encountered error during "
                    f"state change of partition {tp} from New to Online, assigned replicas are "
                    f"[{','.join(map(str, full.replicas))}], live brokers are "
                    f"[{','.join(map(str, sorted(ctx.live_broker_ids)))}]. No assigned replica "
                    "is alive."
                )
                continue
            info = LeaderIsrAndControllerEpoch(LeaderAndIsr(live[0], live), ctx.epoch)
            outputs.append(CreatePartitionState(tp, info))
            outputs.append(AddLeaderAndIsr(live, tp, is_new=True))
        else:
            existing = fresh.get(tp)
            if existing is None:
                failures[tp] = (
                    f"LeaderAndIsr information doesn't exist for partition {tp} in {state} state"
                )
                continue
            if existing.controller_epoch > ctx.epoch:
                failures[tp] = (
                    f"aborted leader election for partition {tp} since the LeaderAndIsr path "
                    f"was already written by another controller. This probably means that the "
                    f"current controller {controller_id} went through a soft failure and "
                    f"another controller was elected with epoch {existing.controller_epoch}."
                )
                continue
            assert strategy is not None, "Online -> Online needs an election strategy"
            old = existing.leader_and_isr
            result = elect(
                ctx,
                strategy,
                tp,
                old,
                unclean_leader_election_enabled=unclean_leader_election_enabled(tp.topic),
            )
            if result.leader_and_isr is None:
                failures[tp] = (
                    f"Failed to elect leader for partition {tp} under strategy {strategy.value}"
                )
                continue
            written = result.leader_and_isr.with_partition_epoch(old.partition_epoch + 1)
            info = LeaderIsrAndControllerEpoch(written, ctx.epoch)
            outputs.append(UpdatePartitionState(tp, info, old.partition_epoch))
            outputs.append(AddLeaderAndIsr(result.live_replicas, tp, is_new=False))
            if result.unclean:
                unclean.add(tp)
        leadership[tp] = info
        states[tp] = P.ONLINE_PARTITION
    return StateChange(
        partition_states=states,
        leadership=leadership,
        outputs=tuple(outputs),
        failures=failures,
        unclean=frozenset(unclean),
    )


def trigger_online_partition_state_change(
    ctx: ControllerContext,
    *,
    controller_id: int,
    topic: str | None = None,
    unclean_leader_election_enabled: Callable[[str], bool] = lambda topic: False,
) -> StateChange:
    """``triggerOnlinePartitionStateChange``: every New or Offline partition (of ``topic``,
    if given) not queued for deletion -> Online, offline election."""
    from franz.controller.election import ElectionStrategy

    wanted = {P.NEW_PARTITION, P.OFFLINE_PARTITION}
    partitions = [
        tp
        for tp, state in ctx.partition_states.items()
        if state in wanted
        and (topic is None or tp.topic == topic)
        and not ctx.is_topic_queued_up_for_deletion(tp.topic)
    ]
    return partition_state_changes(
        ctx,
        partitions,
        P.ONLINE_PARTITION,
        ElectionStrategy.OFFLINE,
        controller_id=controller_id,
        unclean_leader_election_enabled=unclean_leader_election_enabled,
    )


# -- the replica state machine ---------------------------------------------------------------


def replica_state_changes(
    ctx: ControllerContext,
    replicas: Iterable[PartitionAndReplica],
    target: ReplicaState,
) -> StateChange:
    """Kafka's ``ZkReplicaStateMachine.doHandleStateChanges`` (replicas grouped by broker).

    -> New: LeaderAndIsr (``isNew``) to the replica, unless it is the leader (refused).
    New -> Online: add it to the assignment if missing. Online/Offline/Ineligible -> Online:
    LeaderAndIsr to it. -> Offline: StopReplica (no delete) to it; remove it from the ISR
    (leader -> -1 if it led; an ISR of one member is kept as it is, as Kafka 3.9 does), write,
    LeaderAndIsr to the other replicas unless the topic is being deleted; with no leader/ISR
    yet, UpdateMetadata to every broker. Offline -> DeletionStarted: StopReplica with delete.
    -> Successful/Ineligible: mark. Successful -> NonExistent: drop it from the assignment and
    the state machine.
    """
    replica_states: dict[PartitionAndReplica, ReplicaState | None] = {}
    leadership: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
    assignments: dict[TopicPartition, tuple[int, ...]] = {}
    outputs: list[Output] = []
    failures: dict[TopicPartition | PartitionAndReplica, str] = {}
    valid_previous = VALID_PREVIOUS_REPLICA_STATES[target]
    ordered = sorted(dict.fromkeys(replicas), key=lambda r: r.replica)  # Kafka's groupBy
    for replica in ordered:
        tp, broker = replica.topic_partition, replica.replica
        state = ctx.replica_states.get(replica, R.NON_EXISTENT_REPLICA)
        if replica not in ctx.replica_states:
            replica_states[replica] = state
        if state not in valid_previous:
            valid = ",".join(sorted(str(s) for s in valid_previous))
            failures[replica] = (
                f"Replica {broker} for partition {tp} should be in the {valid} states before "
                f"moving to {target} state. Instead it is in {state} state"
            )
            continue
        info = leadership.get(tp) or ctx.partition_leadership_info.get(tp)
        assigned = assignments.get(tp, ctx.partition_replica_assignment(tp))
        if target is R.NEW_REPLICA:
            if info is not None and info.leader_and_isr.leader == broker:
                failures[replica] = (
                    f"Replica {broker} for partition {tp} cannot be moved to NewReplica state "
                    "as it is being requested to become leader"
                )
                continue
            if info is not None:
                outputs.append(AddLeaderAndIsr((broker,), tp, is_new=True))
        elif target is R.ONLINE_REPLICA:
            if state is R.NEW_REPLICA:
                if broker not in assigned:
                    assignments[tp] = (*assigned, broker)
            elif info is not None:
                outputs.append(AddLeaderAndIsr((broker,), tp, is_new=False))
        elif target is R.OFFLINE_REPLICA:
            outputs.append(AddStopReplica((broker,), tp, delete_partition=False))
            if info is None:
                outputs.append(
                    AddUpdateMetadata(
                        tuple(sorted(ctx.live_or_shutting_down_broker_ids)), frozenset({tp})
                    )
                )
            else:
                old = info.leader_and_isr
                if broker in old.isr:
                    new_leader = NO_LEADER if broker == old.leader else old.leader
                    isr = old.isr if len(old.isr) == 1 else tuple(r for r in old.isr if r != broker)
                    written = old.new_leader_and_isr(new_leader, isr).with_partition_epoch(
                        old.partition_epoch + 1
                    )
                    info = LeaderIsrAndControllerEpoch(written, ctx.epoch)
                    outputs.append(UpdatePartitionState(tp, info, old.partition_epoch))
                    leadership[tp] = info
                if not ctx.is_topic_queued_up_for_deletion(tp.topic):
                    recipients = tuple(r for r in assigned if r != broker)
                    outputs.append(AddLeaderAndIsr(recipients, tp, is_new=False))
        elif target is R.REPLICA_DELETION_STARTED:
            outputs.append(AddStopReplica((broker,), tp, delete_partition=True))
        elif target is R.NON_EXISTENT_REPLICA:
            assignments[tp] = tuple(r for r in assigned if r != broker)
            replica_states[replica] = None
            continue
        replica_states[replica] = target
    return StateChange(
        replica_states=replica_states,
        leadership=leadership,
        assignments=assignments,
        outputs=tuple(outputs),
        failures=failures,
    )
