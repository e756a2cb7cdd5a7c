"""Partition reassignment's pure part (``franz.controller.reassignment`` and
``ReplicaAssignment.reassign_to``): KIP-455's replica sets, Kafka's validation messages, the
plans of the two request paths, completion, the leader-epoch bump and the legacy znode's
bookkeeping. The moves themselves run in ``tests/cluster/test_reassignment*.py``; the
single-broker answers are compared with Kafka's by ``tests/reference/test_differential.py``."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from franz.controller.context import Broker, ControllerContext
from franz.controller.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)
from franz.controller.reassignment import (
    NONE,
    PARTITION_DOES_NOT_EXIST,
    AlterReassignmentsResult,
    ApiError,
    ListReassignmentsResult,
    build_reassignment,
    is_reassignment_complete,
    ongoing_reassignments,
    plan_api_reassignments,
    plan_zk_reassignments,
    remove_from_zk_reassignment,
    scala_buffer,
    scala_set,
    trigger_error,
    update_leader_epoch,
    validate_replicas,
)
from franz.controller.shell.controller import Controller
from franz.controller.states import AddLeaderAndIsr, UpdatePartitionState
from franz.errors import ErrorCode
from franz.metadata.kafka_zk_client import ControllerEpoch, KafkaZkClient

IDLE = TopicPartition("t", 0)
MOVING = TopicPartition("t", 1)
DELETING = TopicPartition("gone", 0)
UNKNOWN = TopicPartition("t", 9)
INVALID = ErrorCode.INVALID_REPLICA_ASSIGNMENT


def context() -> ControllerContext:
    ctx = ControllerContext(epoch=5)
    ctx.add_live_brokers(Broker(b, epoch=100 + b) for b in (1, 2, 3, 4))
    ctx.update_partition_full_replica_assignment(IDLE, ReplicaAssignment((1, 2)))
    # ORS (1, 2) -> TRS (2, 3), in progress.
    ctx.update_partition_full_replica_assignment(MOVING, ReplicaAssignment((2, 3, 1), (3,), (1,)))
    ctx.update_partition_full_replica_assignment(DELETING, ReplicaAssignment((1, 2)))
    ctx.partitions_being_reassigned.add(MOVING)
    ctx.topics_to_be_deleted.add(DELETING.topic)
    return ctx


# -- ReplicaAssignment (KIP-455) ----------------------------------------------------------------


def test_reassign_to_disjoint_target_lists_target_first() -> None:
    # Kafka's example: ORS {1,2,3}, TRS {4,5,6}.
    moved = ReplicaAssignment((1, 2, 3)).reassign_to((4, 5, 6))
    assert moved == ReplicaAssignment((4, 5, 6, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    assert moved.origin_replicas == (1, 2, 3)
    assert moved.target_replicas == (4, 5, 6)


def test_reassign_to_overlapping_target() -> None:
    # Kafka's note: [1,2,3] to [3,4,2] is encoded [3,4,2,1].
    moved = ReplicaAssignment((1, 2, 3)).reassign_to((3, 4, 2))
    assert moved == ReplicaAssignment((3, 4, 2, 1), (4,), (1,))


def test_reassign_to_a_reordering_moves_nothing() -> None:
    moved = ReplicaAssignment((1, 2)).reassign_to((2, 1))
    assert moved == ReplicaAssignment((2, 1))
    assert not moved.is_being_reassigned


def test_a_new_target_replaces_a_move_in_progress_from_the_same_origin() -> None:
    current = ReplicaAssignment((1, 2)).reassign_to((2, 3))
    assert current.reassign_to((4, 1)) == ReplicaAssignment((4, 1, 2), (4,), (2,))
    # Cancelling: back to the origin's replicas, not necessarily in their first order.
    assert current.reassign_to(current.origin_replicas) == ReplicaAssignment((2, 1))


def test_remove_replica_leaves_all_three_lists() -> None:
    moving = ReplicaAssignment((2, 3, 1), (3,), (1,))
    assert moving.remove_replica(3) == ReplicaAssignment((2, 1), (), (1,))
    assert moving.remove_replica(1) == ReplicaAssignment((2, 3), (3,), ())


def test_context_keeps_adding_and_removing_replicas_that_are_still_replicas() -> None:
    ctx = context()
    ctx.update_partition_replica_assignment(MOVING, (2, 3))  # NonExistentReplica of 1
    assert ctx.partition_full_replica_assignment(MOVING) == ReplicaAssignment((2, 3), (3,), ())


# -- validation (validateReplicas) --------------------------------------------------------------


@pytest.mark.parametrize(
    ("replicas", "message"),
    [
        ((), "Empty replica list specified in partition reassignment."),
        (
            (2, 2),
            "Duplicate replica ids in partition reassignment replica list: ArrayBuffer(2, 2)",
        ),
        ((1, -1), "Invalid broker id in replica list: ArrayBuffer(1, -1)"),
        (
            (2, 7, 9),
            "Replica assignment has brokers that are not alive. Replica list: "
            "ArrayBuffer(7, 9), live broker list: Set(1, 2, 3, 4)",
        ),
    ],
)
def test_invalid_targets_get_kafkas_messages(replicas: tuple[int, ...], message: str) -> None:
    assert validate_replicas(context(), IDLE, replicas) == ApiError(INVALID, message)


def test_only_added_replicas_must_be_live() -> None:
    ctx = context()
    ctx.remove_live_brokers([1])
    assert validate_replicas(ctx, IDLE, (1, 2)) is None  # 1 is already a replica
    assert validate_replicas(ctx, IDLE, (3, 4)) is None


def test_brokers_shutting_down_are_not_live() -> None:
    ctx = context()
    ctx.shutting_down_broker_ids.add(4)
    error = validate_replicas(ctx, IDLE, (4,))
    assert error is not None and error.message is not None
    assert error.message.endswith("live broker list: Set(1, 2, 3)")


def test_scala_collections_print_as_kafka_logs_them() -> None:
    assert scala_buffer([3, 1]) == "ArrayBuffer(3, 1)"
    assert scala_set([2, 1]) == "Set(1, 2)"
    assert scala_set([5, 1, 3, 2, 4]) == "HashSet(1, 2, 3, 4, 5)"


# -- the plans ----------------------------------------------------------------------------------


def test_cancelling_an_idle_or_unknown_partition_is_no_reassignment_in_progress() -> None:
    ctx = context()
    assert build_reassignment(ctx, IDLE, None) is None
    assert build_reassignment(ctx, UNKNOWN, None) is None
    plan = plan_api_reassignments(ctx, {IDLE: None, UNKNOWN: None})
    no_reassignment = ApiError(
        ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "No partition reassignment is in progress."
    )
    assert plan.errors == {IDLE: no_reassignment, UNKNOWN: no_reassignment}
    assert plan.to_reassign == {}


def test_cancelling_a_move_targets_its_origin() -> None:
    plan = plan_api_reassignments(context(), {MOVING: None})
    assert plan.errors == {}
    assert plan.to_reassign == {MOVING: ReplicaAssignment((2, 1))}


def test_api_plan_validates_before_anything_else() -> None:
    plan = plan_api_reassignments(context(), {IDLE: (2, 3), UNKNOWN: (9,), DELETING: (3,)})
    assert plan.to_reassign == {
        IDLE: ReplicaAssignment((2, 3, 1), (3,), (1,)),
        DELETING: ReplicaAssignment((3, 1, 2), (3,), (1, 2)),
    }
    assert plan.errors[UNKNOWN].code == INVALID  # validated: 9 is not a live broker


def test_zk_plan_takes_targets_unvalidated() -> None:
    plan = plan_zk_reassignments(context(), {IDLE: [9, 1]})
    assert plan.errors == {}
    assert plan.to_reassign == {IDLE: ReplicaAssignment((9, 1, 2), (9,), (2,))}


def test_unknown_partitions_and_topics_being_deleted_do_not_exist() -> None:
    ctx = context()
    assert trigger_error(ctx, IDLE) is None
    assert trigger_error(ctx, UNKNOWN) == PARTITION_DOES_NOT_EXIST
    assert trigger_error(ctx, DELETING) == PARTITION_DOES_NOT_EXIST
    assert PARTITION_DOES_NOT_EXIST.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert ApiError.of(ErrorCode.NONE) == NONE


# -- progress -----------------------------------------------------------------------------------


def test_complete_when_every_target_replica_is_in_the_isr() -> None:
    moving = ReplicaAssignment((2, 3, 1), (3,), (1,))
    assert not is_reassignment_complete(moving, (1, 2))
    assert is_reassignment_complete(moving, (1, 2, 3))
    assert is_reassignment_complete(moving, (3, 2))
    assert not is_reassignment_complete(moving, None)  # no state znode
    assert is_reassignment_complete(ReplicaAssignment((1, 2)), None)  # nothing moving


def test_leader_epoch_bump_keeps_leader_and_isr_and_tells_every_replica() -> None:
    ctx = context()
    current = LeaderIsrAndControllerEpoch(
        LeaderAndIsr(1, (1, 2), leader_epoch=4, partition_epoch=7), 3
    )
    moving = ctx.partition_full_replica_assignment(MOVING)
    change = update_leader_epoch(ctx, MOVING, current, moving, controller_id=1)
    written = LeaderIsrAndControllerEpoch(
        LeaderAndIsr(1, (1, 2), leader_epoch=5, partition_epoch=8), 5
    )
    assert change.failures == {}
    assert change.leadership == {MOVING: written}
    assert change.outputs == (
        UpdatePartitionState(MOVING, written, 7),
        AddLeaderAndIsr((2, 1), MOVING, is_new=False),  # the origin replicas
        AddLeaderAndIsr((3,), MOVING, is_new=True),  # the adding ones
    )


def test_leader_epoch_bump_fails_without_state_or_under_a_newer_controller() -> None:
    ctx = context()
    moving = ctx.partition_full_replica_assignment(MOVING)
    missing = update_leader_epoch(ctx, MOVING, None, moving, controller_id=1)
    assert "leaderAndIsr path is empty" in missing.failures[MOVING]
    newer = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, (1, 2)), 6)
    fenced = update_leader_epoch(ctx, MOVING, newer, moving, controller_id=1)
    assert "written by another controller" in fenced.failures[MOVING]
    assert fenced.outputs == ()


def test_ongoing_reassignments_lists_only_what_moves() -> None:
    ctx = context()
    moving = ReplicaAssignment((2, 3, 1), (3,), (1,))
    assert ongoing_reassignments(ctx, None) == {MOVING: moving}
    assert ongoing_reassignments(ctx, [IDLE, UNKNOWN, MOVING]) == {MOVING: moving}
    assert ongoing_reassignments(ctx, []) == {}


def test_remove_from_zk_reassignment_splits_the_znode() -> None:
    current = {IDLE: [2, 3], MOVING: [2, 3]}
    removed, kept = remove_from_zk_reassignment(
        current, lambda tp, replicas: tp == MOVING and list(replicas) == [2, 3]
    )
    assert (removed, kept) == ({MOVING: [2, 3]}, {IDLE: [2, 3]})


# -- the shell's answers when it is not (or no longer) the controller --------------------------


def test_not_controller_at_once_and_on_resignation() -> None:
    """Kafka's ``processApiPartitionReassignment`` / ``processListPartitionReassignments``
    answer NOT_CONTROLLER (top level, Kafka's message) when not active, and the events'
    ``preempt`` does when the controller resigns with them queued."""
    not_controller = ApiError(
        ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this cluster."
    )

    async def main() -> list[object]:
        # No ZooKeeper is touched on these paths: the event task is never started.
        controller = Controller(cast(KafkaZkClient, None), 1)
        answers: list[asyncio.Future[Any]] = [
            controller.alter_partition_reassignments({IDLE: (2, 3)}),
            controller.list_partition_reassignments(None),
        ]
        controller._epoch = ControllerEpoch(5, 4)  # as if elected, the events still queued
        queued: list[asyncio.Future[Any]] = [
            controller.alter_partition_reassignments({IDLE: None}),
            controller.list_partition_reassignments(frozenset({IDLE})),
        ]
        assert not any(f.done() for f in queued)
        controller.resign()
        return [f.result() for f in (*answers, *queued)]

    alter, listed, queued_alter, queued_list = asyncio.run(main())
    assert alter == queued_alter == AlterReassignmentsResult(not_controller)
    assert listed == queued_list == ListReassignmentsResult(not_controller)
