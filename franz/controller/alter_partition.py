"""The controller's validation of AlterPartition (Kafka 3.9's ``KafkaController.
processAlterPartition``, ZooKeeper mode, KIP-497, KIP-704, KIP-841): pure functions over the
``ControllerContext``.

A partition leader asks the controller to change its partition's ISR. The request carries,
per partition, the leader epoch and partition epoch (the ``state`` znode's version) the
leader last saw, the ISR it wants and its leader recovery state. In Kafka's order:

1. The whole request: the sender must be a registered broker whose broker epoch (the czxid of
   ``/brokers/ids/<id>``) is exactly the one it sends, else STALE_BROKER_EPOCH for the whole
   request (top-level, no partitions). (A controller that is not active answers NOT_CONTROLLER
   before this: the shell's business.)
2. Topics: v2+ name them by topic id; an id the controller does not know gets
   UNKNOWN_TOPIC_ID for each of its partitions. v0-v1 name them; an unknown name falls to 3.
3. Each partition, against the controller's cached leader/ISR (its last ``state`` write):

   ==========================================================  ============================
   the partition has no cached state (unknown)                 UNKNOWN_TOPIC_OR_PARTITION
   its leader epoch or partition epoch is *above* the cached   NOT_CONTROLLER (this
   one                                                          controller is likely stale)
   its leader epoch is below the cached one                     FENCED_LEADER_EPOCH
   leader, leader epoch, ISR and recovery state equal the       no write: the cached state
   cached ones (partition epoch not newer)                      is the answer (idempotence)
   its partition epoch is below the cached one                  INVALID_UPDATE_VERSION
   RECOVERING with an ISR of more than one replica (KIP-704)    INVALID_REQUEST
   RECOVERED -> RECOVERING (KIP-704)                            INVALID_REQUEST
   an ISR member that is not a live broker (not registered,     INELIGIBLE_REPLICA (v2+),
   or in controlled shutdown; KIP-841)                          OPERATION_NOT_ATTEMPTED
                                                                (v0-v1)
   otherwise                                                    accepted: written
   ==========================================================  ============================

   The new state names the *sender* as leader, with the request's leader epoch, ISR and
   recovery state (Kafka's ``new LeaderAndIsr(alterPartitionRequest.brokerId, ...)``); its
   write is conditional on the partition epoch sent, which equals the cached one here.

What the shell then does (``franz.controller.shell.alter_partition``): the conditional writes,
the context, UpdateMetadata to every broker, the answer.

Difference from Kafka: a leader recovery state other than 0 or 1 is answered INVALID_REQUEST
for that partition; Kafka's ``LeaderRecoveryState.of`` throws and the whole event fails
unanswered (the broker's request then times out).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from franz.controller.context import ControllerContext
from franz.controller.model import LeaderAndIsr, LeaderRecoveryState, TopicPartition
from franz.errors import ErrorCode

__all__ = [
    "TOPIC_ID_VERSION",
    "AlterPartitionData",
    "AlterPartitionPlan",
    "AlterPartitionRequestData",
    "AlterPartitionTopicData",
    "PartitionOutcome",
    "check_broker_epoch",
    "equals_allow_stale_partition_epoch",
    "plan_alter_partition",
    "validate_partition",
]

#: First AlterPartition version naming topics by id and answering INELIGIBLE_REPLICA (KIP-841).
TOPIC_ID_VERSION = 2


@dataclass(frozen=True, slots=True)
class AlterPartitionData:
    """One partition of the request (``PartitionData``; v3's ``NewIsrWithEpochs`` reduced to
    the broker ids, as Kafka's ZooKeeper controller does)."""

    partition_index: int
    leader_epoch: int
    new_isr: tuple[int, ...]
    leader_recovery_state: int
    partition_epoch: int


@dataclass(frozen=True, slots=True)
class AlterPartitionTopicData:
    """One topic of the request: named (v0-v1) or by id (v2+)."""

    topic_name: str | None
    topic_id: uuid.UUID | None
    partitions: tuple[AlterPartitionData, ...]


@dataclass(frozen=True, slots=True)
class AlterPartitionRequestData:
    """The request as the controller needs it, with its version."""

    version: int
    broker_id: int
    broker_epoch: int
    topics: tuple[AlterPartitionTopicData, ...]


@dataclass(frozen=True, slots=True)
class PartitionOutcome:
    """One partition's answer: an error, or NONE with the partition's state."""

    error: ErrorCode
    leader_and_isr: LeaderAndIsr | None = None


@dataclass(frozen=True, slots=True)
class AlterPartitionPlan:
    """What to do with a request: a top-level error, or per partition an answer already
    known (``outcomes``) or a state to write (``to_write``, keyed by partition, the expected
    zk version being its ``partition_epoch``). ``unknown_topic_ids`` answer
    UNKNOWN_TOPIC_ID for every partition listed; ``topic_keys`` maps every known partition
    back to how the request named its topic (id or name)."""

    error: ErrorCode = ErrorCode.NONE
    outcomes: dict[TopicPartition, PartitionOutcome] = field(default_factory=dict)
    to_write: dict[TopicPartition, LeaderAndIsr] = field(default_factory=dict)
    unknown_topic_ids: dict[uuid.UUID | None, tuple[int, ...]] = field(default_factory=dict)

    @property
    def partitions(self) -> set[TopicPartition]:
        """Every known partition asked about (what UpdateMetadata is sent for)."""
        return set(self.outcomes) | set(self.to_write)


def equals_allow_stale_partition_epoch(new: LeaderAndIsr, current: LeaderAndIsr) -> bool:
    """Kafka's ``LeaderAndIsr.equalsAllowStalePartitionEpoch``: the same leader, leader epoch,
    ISR (in order) and recovery state, and a partition epoch not newer than the current."""
    return (
        new.leader == current.leader
        and new.leader_epoch == current.leader_epoch
        and new.isr == current.isr
        and new.leader_recovery_state == current.leader_recovery_state
        and new.partition_epoch <= current.partition_epoch
    )


def validate_partition(
    ctx: ControllerContext, tp: TopicPartition, new: LeaderAndIsr, version: int
) -> PartitionOutcome | None:
    """Step 3 of the module docstring for one partition: its answer, or ``None`` when the
    state ``new`` is to be written."""
    info = ctx.partition_leadership_info.get(tp)
    if info is None:
        return PartitionOutcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    current = info.leader_and_isr
    if new.partition_epoch > current.partition_epoch or new.leader_epoch > current.leader_epoch:
        return PartitionOutcome(ErrorCode.NOT_CONTROLLER)
    if new.leader_epoch < current.leader_epoch:
        return PartitionOutcome(ErrorCode.FENCED_LEADER_EPOCH)
    if equals_allow_stale_partition_epoch(new, current):
        return PartitionOutcome(ErrorCode.NONE, current)
    if new.partition_epoch < current.partition_epoch:
        return PartitionOutcome(ErrorCode.INVALID_UPDATE_VERSION)
    if new.leader_recovery_state == LeaderRecoveryState.RECOVERING and len(new.isr) > 1:
        return PartitionOutcome(ErrorCode.INVALID_REQUEST)
    if (
        current.leader_recovery_state == LeaderRecoveryState.RECOVERED
        and new.leader_recovery_state == LeaderRecoveryState.RECOVERING
    ):
        return PartitionOutcome(ErrorCode.INVALID_REQUEST)
    if set(new.isr) - ctx.live_broker_ids:
        if version >= TOPIC_ID_VERSION:
            return PartitionOutcome(ErrorCode.INELIGIBLE_REPLICA)
        return PartitionOutcome(ErrorCode.OPERATION_NOT_ATTEMPTED)
    return None


def check_broker_epoch(ctx: ControllerContext, broker_id: int, broker_epoch: int) -> ErrorCode:
    """Step 1: STALE_BROKER_EPOCH unless ``broker_id`` is registered with exactly
    ``broker_epoch`` (an unknown broker is "stale" too, as Kafka answers)."""
    registered = ctx.live_broker_epochs().get(broker_id)
    if registered is None or registered != broker_epoch:
        return ErrorCode.STALE_BROKER_EPOCH
    return ErrorCode.NONE


def plan_alter_partition(
    ctx: ControllerContext, request: AlterPartitionRequestData
) -> AlterPartitionPlan:
    """Steps 1-3 of the module docstring; pure."""
    error = check_broker_epoch(ctx, request.broker_id, request.broker_epoch)
    if error != ErrorCode.NONE:
        return AlterPartitionPlan(error)
    plan = AlterPartitionPlan()
    names_by_id: Mapping[uuid.UUID, str] = {v: k for k, v in ctx.topic_ids.items()}
    for topic in request.topics:
        if request.version >= TOPIC_ID_VERSION:
            name = None if topic.topic_id is None else names_by_id.get(topic.topic_id)
            if name is None:
                known = plan.unknown_topic_ids.get(topic.topic_id, ())
                plan.unknown_topic_ids[topic.topic_id] = known + tuple(
                    p.partition_index for p in topic.partitions
                )
                continue
        else:
            name = topic.topic_name or ""
        for p in topic.partitions:
            tp = TopicPartition(name, p.partition_index)
            try:
                recovery = LeaderRecoveryState(p.leader_recovery_state)
            except ValueError:
                plan.outcomes[tp] = PartitionOutcome(ErrorCode.INVALID_REQUEST)
                continue
            new = LeaderAndIsr(
                request.broker_id, p.new_isr, p.leader_epoch, recovery, p.partition_epoch
            )
            outcome = validate_partition(ctx, tp, new, request.version)
            if outcome is None:
                plan.to_write[tp] = new
            else:
                plan.outcomes[tp] = outcome
    return plan
