"""Partition reassignment's decisions, as pure functions over the ``ControllerContext``
(Kafka 3.9's ``KafkaController`` in ZooKeeper mode, KIP-455: ``validateReplicas``,
``maybeBuildReassignment``, the checks of ``maybeTriggerPartitionReassignment``,
``isReassignmentComplete``, ``updateLeaderEpoch``, ``processListPartitionReassignments``,
``maybeRemoveFromZkReassignment``).

Vocabulary (Kafka's): ORS the origin replicas, TRS the target replicas, RS the replica set
while moving, RS = TRS + ORS (``ReplicaAssignment.reassign_to``), adding = TRS - ORS,
removing = ORS - TRS. The topic znode (``/brokers/topics/<t>``) keeps RS with
``adding_replicas`` and ``removing_replicas`` until the move completes: the only persistent
record of ORS, from which a new controller resumes.

Requests come two ways, answered per partition with Kafka's ``ApiError`` (code and message):

* AlterPartitionReassignments (``plan_api_reassignments``): a target is validated first
  (``validate_replicas``: not empty, no duplicate, no negative id, every *added* replica a
  live broker: INVALID_REPLICA_ASSIGNMENT with Kafka's message); ``None`` cancels, which is
  NO_REASSIGNMENT_IN_PROGRESS for a partition not being reassigned (an unknown one included);
* ``/admin/reassign_partitions`` (``plan_zk_reassignments``): no validation at all, as Kafka.

Then, for both (``trigger_error``): a topic queued for deletion or a partition with no
replicas is UNKNOWN_TOPIC_OR_PARTITION ("The partition does not exist."); the others start.
A reassignment is complete when its partition is not being reassigned, or when every target
replica is in the ISR read from ZooKeeper (``is_reassignment_complete``).

Scala's ``toString`` of the collections in Kafka's messages is reproduced
(``scala_buffer``, ``scala_set``): the request's replica list is an ``ArrayBuffer``, the live
brokers a ``Set`` (``HashSet`` beyond four members, then in Scala's hash order for small
ints, which is ascending).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from franz.controller.context import ControllerContext
from franz.controller.model import (
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaAssignment,
    TopicPartition,
)
from franz.controller.states import (
    AddLeaderAndIsr,
    Output,
    StateChange,
    UpdatePartitionState,
)
from franz.errors import ErrorCode

__all__ = [
    "NONE",
    "PARTITION_DOES_NOT_EXIST",
    "AlterReassignmentsResult",
    "ApiError",
    "ListReassignmentsResult",
    "ReassignmentPlan",
    "build_reassignment",
    "is_reassignment_complete",
    "ongoing_reassignments",
    "plan_api_reassignments",
    "plan_zk_reassignments",
    "remove_from_zk_reassignment",
    "removed_replicas",
    "scala_buffer",
    "scala_set",
    "trigger_error",
    "update_leader_epoch",
    "validate_replicas",
]


@dataclass(frozen=True, slots=True)
class ApiError:
    """Kafka's ``ApiError``: a code and its message (``None`` for NONE)."""

    code: ErrorCode
    message: str | None = None

    @staticmethod
    def of(code: ErrorCode) -> ApiError:
        """``new ApiError(Errors.X)``: the error's default message."""
        return ApiError(code, None if code == ErrorCode.NONE else code.message)


#: ``ApiError.NONE``.
NONE = ApiError(ErrorCode.NONE)
#: What Kafka answers for a partition it does not have or a topic being deleted.
PARTITION_DOES_NOT_EXIST = ApiError(
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
)


def scala_buffer(values: Iterable[int]) -> str:
    """An ``ArrayBuffer``'s ``toString``."""
    return f"ArrayBuffer({', '.join(map(str, values))})"


def scala_set(values: Iterable[int]) -> str:
    """A Scala ``Set[Int]``'s ``toString``: ``Set(...)`` up to four members, ``HashSet(...)``
    beyond (small non-negative ints hash to themselves: ascending order)."""
    members = sorted(values)
    prefix = "Set" if len(members) <= 4 else "HashSet"
    return f"{prefix}({', '.join(map(str, members))})"


@dataclass(frozen=True, slots=True)
class AlterReassignmentsResult:
    """AlterPartitionReassignments' answer: a top-level error, or one per partition."""

    error: ApiError = NONE
    partitions: dict[TopicPartition, ApiError] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ListReassignmentsResult:
    """ListPartitionReassignments' answer: a top-level error, or the ongoing moves."""

    error: ApiError = NONE
    reassignments: dict[TopicPartition, ReplicaAssignment] = field(default_factory=dict)


# -- requests --------------------------------------------------------------------------------


def validate_replicas(
    ctx: ControllerContext, tp: TopicPartition, replicas: Sequence[int]
) -> ApiError | None:
    """``validateReplicas``: a target's INVALID_REPLICA_ASSIGNMENT, or None when acceptable."""
    if not replicas:
        return ApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Empty replica list specified in partition reassignment.",
        )
    if len(set(replicas)) != len(replicas):
        return ApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Duplicate replica ids in partition reassignment replica list: "
            + scala_buffer(replicas),
        )
    if any(r < 0 for r in replicas):
        return ApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Invalid broker id in replica list: {scala_buffer(replicas)}",
        )
    adding = ctx.partition_full_replica_assignment(tp).reassign_to(replicas).adding_replicas
    live = ctx.live_broker_ids
    if not set(adding) <= live:
        return ApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Replica assignment has brokers that are not alive. Replica list: "
            f"{scala_buffer(adding)}, live broker list: {scala_set(live)}",
        )
    return None


def build_reassignment(
    ctx: ControllerContext, tp: TopicPartition, target: Sequence[int] | None
) -> ReplicaAssignment | None:
    """``maybeBuildReassignment``: the new assignment; a cancellation (``None``) targets the
    origin replicas, and is None (NO_REASSIGNMENT_IN_PROGRESS) when nothing is moving."""
    current = ctx.partition_full_replica_assignment(tp)
    if current.is_being_reassigned:
        return current.reassign_to(current.origin_replicas if target is None else target)
    return None if target is None else current.reassign_to(target)


def trigger_error(ctx: ControllerContext, tp: TopicPartition) -> ApiError | None:
    """``maybeTriggerPartitionReassignment``'s refusals before ``onPartitionReassignment``."""
    if ctx.is_topic_queued_up_for_deletion(tp.topic):
        return PARTITION_DOES_NOT_EXIST
    if not ctx.partition_replica_assignment(tp):
        return PARTITION_DOES_NOT_EXIST
    return None


@dataclass(frozen=True, slots=True)
class ReassignmentPlan:
    """The partitions answered at once (``errors``) and those to reassign, in request order."""

    errors: dict[TopicPartition, ApiError] = field(default_factory=dict)
    to_reassign: dict[TopicPartition, ReplicaAssignment] = field(default_factory=dict)


def plan_api_reassignments(
    ctx: ControllerContext, reassignments: Mapping[TopicPartition, Sequence[int] | None]
) -> ReassignmentPlan:
    """``processApiPartitionReassignment``'s validation (``trigger_error`` comes later, per
    partition, as Kafka runs each reassignment)."""
    plan = ReassignmentPlan()
    for tp, target in reassignments.items():
        error = None if target is None else validate_replicas(ctx, tp, target)
        if error is not None:
            plan.errors[tp] = error
            continue
        built = build_reassignment(ctx, tp, target)
        if built is None:
            plan.errors[tp] = ApiError.of(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
        else:
            plan.to_reassign[tp] = built
    return plan


def plan_zk_reassignments(
    ctx: ControllerContext, reassignments: Mapping[TopicPartition, Sequence[int]]
) -> ReassignmentPlan:
    """``processZkPartitionReassignment``: the znode's targets, unvalidated (Kafka's)."""
    plan = ReassignmentPlan()
    for tp, target in reassignments.items():
        built = build_reassignment(ctx, tp, target)
        if built is None:  # not reachable with a target; kept as Kafka's match
            plan.errors[tp] = ApiError.of(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
        else:
            plan.to_reassign[tp] = built
    return plan


# -- progress --------------------------------------------------------------------------------


def is_reassignment_complete(assignment: ReplicaAssignment, isr: Iterable[int] | None) -> bool:
    """``isReassignmentComplete``: nothing moving, or every target replica in the ISR
    (``isr`` freshly read from the state znode; None: the znode is missing)."""
    if not assignment.is_being_reassigned:
        return True
    return isr is not None and set(assignment.target_replicas) <= set(isr)


def update_leader_epoch(
    ctx: ControllerContext,
    tp: TopicPartition,
    current: LeaderIsrAndControllerEpoch | None,
    assignment: ReplicaAssignment,
    *,
    controller_id: int,
) -> StateChange:
    """``updateLeaderEpochAndSendRequest``: the same leader and ISR with leader epoch + 1,
    written over ``current`` (the state znode as just read), then LeaderAndIsr to the origin
    replicas (``isNew`` false) and to the adding ones (``isNew`` true: their log may go to
    any good log dir). ``assignment`` must already be the context's (the batch reads it).
    A missing znode or one written by a newer controller is a failure (Kafka's
    ``IllegalStateException`` / ``StateChangeFailedException``)."""
    if current is None:
        return StateChange(
            failures={
                tp: f"Cannot update leader epoch for partition {tp} as leaderAndIsr path is "
                "empty. This could mean we somehow tried to reassign a partition that doesn't "
                "exist"
            }
        )
    if current.controller_epoch > ctx.epoch:
        return StateChange(
            failures={
                tp: "Leader and isr path written by another controller. This probably means "
                f"the current controller {controller_id} with epoch {ctx.epoch} went through a "
                "soft failure and another controller was elected with epoch "
                f"{current.controller_epoch}. Aborting state change by this controller"
            }
        )
    old = current.leader_and_isr
    written = old.new_epoch().with_partition_epoch(old.partition_epoch + 1)
    info = LeaderIsrAndControllerEpoch(written, ctx.epoch)
    outputs: list[Output] = [UpdatePartitionState(tp, info, old.partition_epoch)]
    if assignment.origin_replicas:
        outputs.append(AddLeaderAndIsr(assignment.origin_replicas, tp, is_new=False))
    if assignment.adding_replicas:
        outputs.append(AddLeaderAndIsr(assignment.adding_replicas, tp, is_new=True))
    return StateChange(leadership={tp: info}, outputs=tuple(outputs))


def ongoing_reassignments(
    ctx: ControllerContext, partitions: Iterable[TopicPartition] | None
) -> dict[TopicPartition, ReplicaAssignment]:
    """``processListPartitionReassignments``: of ``partitions`` (None: every partition being
    reassigned), those whose assignment has adding or removing replicas; unknown ones are
    left out without an error, as Kafka."""
    wanted = ctx.partitions_being_reassigned if partitions is None else partitions
    out: dict[TopicPartition, ReplicaAssignment] = {}
    for tp in sorted(set(wanted)):
        assignment = ctx.partition_full_replica_assignment(tp)
        if assignment.is_being_reassigned:
            out[tp] = assignment
    return out


def removed_replicas(
    tp: TopicPartition, current: ReplicaAssignment, new: ReplicaAssignment
) -> list[PartitionAndReplica]:
    """``updateCurrentReassignment``'s unneeded replicas: in RS before, not any more (the
    adding replicas of a reassignment that was replaced or cancelled)."""
    return [PartitionAndReplica(tp, r) for r in current.replicas if r not in new.replicas]


def remove_from_zk_reassignment(
    current: Mapping[TopicPartition, Sequence[int]],
    should_remove: Callable[[TopicPartition, Sequence[int]], bool],
) -> tuple[dict[TopicPartition, list[int]], dict[TopicPartition, list[int]]]:
    """``maybeRemoveFromZkReassignment``'s split of ``/admin/reassign_partitions``: (removed,
    kept). The znode is then rewritten with the kept ones, or deleted when none are left."""
    removed: dict[TopicPartition, list[int]] = {}
    kept: dict[TopicPartition, list[int]] = {}
    for tp, replicas in current.items():
        (removed if should_remove(tp, replicas) else kept)[tp] = list(replicas)
    return removed, kept
