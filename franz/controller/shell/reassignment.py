"""Partition reassignment, run by the controller's event task (Kafka 3.9's
``KafkaController.onPartitionReassignment`` and its helpers, ZooKeeper mode, KIP-455; the
decisions are ``franz.controller.reassignment``'s).

Triggers (each ends in ``on_partition_reassignment``):

1. AlterPartitionReassignments: the handler calls ``Controller.alter_partition_reassignments``,
   which queues an ``ApiPartitionReassignment`` whose ``reply`` the handler awaits. The
   partitions it names are first removed from ``/admin/reassign_partitions`` (the latest
   request wins).
2. ``/admin/reassign_partitions`` created (the legacy znode of ``kafka-reassign-partitions
   --zookeeper``): ``ZkPartitionReassignment``. Partitions that fail to start are removed from
   it; each one is removed when its move completes, and the znode is deleted when none is
   left (fenced writes).
3. An ISR change of a reassigning partition (``PartitionReassignmentIsrChange``: a leader's
   AlterPartition accepted, or an ISR change notification).
4. A broker holding a target replica starts (``maybe_resume_reassignments``).
5. Failover (``initialize_partition_reassignments``): the znode's reassignments first, then
   every partition whose topic znode still lists adding or removing replicas.

``on_partition_reassignment(tp, RS)``, Kafka's phases (``franz.controller.reassignment``
names ORS, TRS, RS):

* U: the topic becomes ineligible for deletion; the new RS (with adding and removing
  replicas) is written to ``/brokers/topics/<t>`` (fenced by the controller epoch; the only
  persistent record of ORS, written before memory), then put in the context; replicas of
  the previous RS no longer in it (a replaced or cancelled move's added replicas) go through
  ``stop_removed_replicas``.
* A (some target replica is not in the ISR read from ZooKeeper): the leader epoch is bumped
  (same leader and ISR, a conditional write of the state znode) and LeaderAndIsr goes to the
  origin replicas and, with ``isNew``, to the adding ones, which then go NewReplica: they
  create their log and follow the leader; the leader adds each to the ISR once caught up
  (AlterPartition), which is trigger 3.
* B (every target replica in the ISR): adding replicas OnlineReplica; RS = TRS in memory; a
  leader not in TRS or not alive is replaced by the first live ISR member of TRS (the
  reassign election), else its epoch is bumped, LeaderAndIsr to TRS; removing replicas
  OfflineReplica (StopReplica, out of the ISR), ReplicaDeletionStarted (StopReplica with
  delete: the broker removes the log dir), ReplicaDeletionSuccessful, NonExistentReplica
  without waiting for the answers (Kafka's "TODO ... retries if deletion failed"); RS = TRS
  written to the topic znode; the partition leaves the reassigning set and the legacy znode;
  UpdateMetadata to every broker; a topic deletion waiting for the move resumes.

A cancellation (a null target) is a reassignment to the origin replicas: the added replicas
are stopped and deleted in U and the move completes at once.

Answers as Kafka's: an inactive controller (or one that resigns before answering) answers
NOT_CONTROLLER at top level; a partition whose move failed on the way UNKNOWN_SERVER_ERROR.

Differences from Kafka:

* A conditional state write that keeps losing to leaders' ISR changes is retried
  ``MAX_ATTEMPTS`` times (Kafka retries without bound), then the step fails.
* On failover, a partition whose resumption fails is logged and left for its next trigger;
  Kafka's failover would fail (and the controller move).
* A ``/admin/reassign_partitions`` that does not decode is logged and deleted: Kafka ignores
  it (logged), and it stays until removed by hand, blocking the path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Final

from franz.controller.election import ElectionStrategy
from franz.controller.events import (
    ApiPartitionReassignment,
    ListPartitionReassignments,
    ZkPartitionReassignment,
)
from franz.controller.model import (
    NO_LEADER,
    PartitionAndReplica,
    ReplicaAssignment,
    TopicPartition,
)
from franz.controller.reassignment import (
    NONE,
    AlterReassignmentsResult,
    ApiError,
    ListReassignmentsResult,
    is_reassignment_complete,
    ongoing_reassignments,
    plan_api_reassignments,
    plan_zk_reassignments,
    remove_from_zk_reassignment,
    trigger_error,
    update_leader_epoch,
)
from franz.controller.shell.zk_reads import read_leadership
from franz.controller.states import (
    PartitionState,
    ReplicaState,
    partition_state_changes,
    replica_state_changes,
)
from franz.errors import ErrorCode
from franz.metadata.kafka_zk_client import ControllerMovedError
from franz.metadata.znodes import (
    ReassignPartitionsZNode,
    TopicAssignment,
    TopicZNode,
    ZNodeDecodeError,
)
from franz.metadata.zookeeper import CreateOp, DeleteOp, NoNodeZkError, SetDataOp, Stat

if TYPE_CHECKING:
    from franz.controller.shell.controller import Controller

__all__ = [
    "MAX_ATTEMPTS",
    "ReassignmentFailedError",
    "answer_alter",
    "answer_list",
    "initialize_partition_reassignments",
    "maybe_complete_reassignment",
    "maybe_resume_reassignments",
    "on_partition_reassignment",
    "process_api_partition_reassignment",
    "process_list_partition_reassignments",
    "process_zk_partition_reassignment",
    "refuse_alter",
    "refuse_list",
    "stop_removed_replicas",
    "watch_reassign_partitions",
]

log = logging.getLogger("franz.controller.shell.controller")

#: Conditional state writes per step that may lose to ISR changes (module docstring).
MAX_ATTEMPTS: Final = 5

R = ReplicaState


class ReassignmentFailedError(Exception):
    """A step of a move failed (Kafka's ``IllegalStateException`` /
    ``StateChangeFailedException`` out of ``onPartitionReassignment``)."""


def _resolve(reply: object, result: object) -> None:
    if isinstance(reply, asyncio.Future) and not reply.done():
        reply.set_result(result)


def answer_alter(event: ApiPartitionReassignment, result: AlterReassignmentsResult) -> None:
    _resolve(event.reply, result)


def answer_list(event: ListPartitionReassignments, result: ListReassignmentsResult) -> None:
    _resolve(event.reply, result)


def refuse_alter(event: ApiPartitionReassignment, code: ErrorCode) -> None:
    answer_alter(event, AlterReassignmentsResult(ApiError.of(code)))


def refuse_list(event: ListPartitionReassignments, code: ErrorCode) -> None:
    answer_list(event, ListReassignmentsResult(ApiError.of(code)))


# -- triggers --------------------------------------------------------------------------------


async def process_api_partition_reassignment(
    controller: Controller, event: ApiPartitionReassignment
) -> AlterReassignmentsResult:
    """``processApiPartitionReassignment`` (trigger 1)."""
    plan = plan_api_reassignments(controller.ctx, event.reassignments)
    results = dict(plan.errors)
    await _maybe_remove_from_zk_reassignment(controller, lambda tp, _: tp in plan.to_reassign)
    results.update(await _maybe_trigger_partition_reassignment(controller, plan.to_reassign))
    return AlterReassignmentsResult(NONE, results)


def process_list_partition_reassignments(
    controller: Controller, event: ListPartitionReassignments
) -> ListReassignmentsResult:
    """``processListPartitionReassignments``."""
    return ListReassignmentsResult(NONE, ongoing_reassignments(controller.ctx, event.partitions))


async def process_zk_partition_reassignment(controller: Controller) -> set[TopicPartition]:
    """``processZkPartitionReassignment`` (trigger 2); the partitions started."""
    found = await _read_zk_reassignment(controller)
    if found is None:
        return set()
    plan = plan_zk_reassignments(controller.ctx, found)
    results = dict(plan.errors)
    results.update(await _maybe_trigger_partition_reassignment(controller, plan.to_reassign))
    failed = {tp: e for tp, e in results.items() if e.code != ErrorCode.NONE}
    if failed:
        log.warning(
            "Failed reassignment through zk with the following errors: %s",
            {str(tp): e.code.name for tp, e in sorted(failed.items())},
        )
        await _maybe_remove_from_zk_reassignment(controller, lambda tp, _: tp in failed)
    return {tp for tp, e in results.items() if e.code == ErrorCode.NONE}


async def maybe_complete_reassignment(controller: Controller, tp: TopicPartition) -> None:
    """``processPartitionReassignmentIsrChange`` / ``maybeCompleteReassignment`` (trigger 3):
    a reassigning partition whose ISR now holds every target replica completes."""
    ctx = controller.ctx
    if tp not in ctx.partitions_being_reassigned:
        return
    reassignment = ctx.partition_full_replica_assignment(tp)
    if await _is_reassignment_complete(controller, tp, reassignment):
        log.info(
            "Target replicas %s have all caught up with the leader for reassigning partition %s",
            list(reassignment.target_replicas),
            tp,
        )
        await on_partition_reassignment(controller, tp, reassignment)


async def maybe_resume_reassignments(
    controller: Controller, should_resume: Callable[[TopicPartition, ReplicaAssignment], bool]
) -> None:
    """``maybeResumeReassignments`` (triggers 4 and 5)."""
    ctx = controller.ctx
    for tp in sorted(ctx.partitions_being_reassigned):
        if tp not in ctx.partitions_being_reassigned:
            continue  # completed (or its topic went) while an earlier one was handled
        assignment = ctx.partition_full_replica_assignment(tp)
        if not should_resume(tp, assignment):
            continue
        try:
            await on_partition_reassignment(controller, tp, assignment)
        except (ControllerMovedError, asyncio.CancelledError):
            raise
        except Exception:
            log.exception("Error resuming reassignment of partition %s", tp)


async def initialize_partition_reassignments(controller: Controller) -> None:
    """``initializePartitionReassignments`` (trigger 5): the znode's moves supplant the
    ones the topic znodes record for the same partitions."""
    resumed = await process_zk_partition_reassignment(controller)
    await maybe_resume_reassignments(controller, lambda tp, _: tp not in resumed)


def watch_reassign_partitions(controller: Controller) -> None:
    """``PartitionReassignmentHandler.handleCreation``: a ``ZkPartitionReassignment`` when
    the znode is *created* (a new czxid), not when the controller rewrites it; the first
    report (at registration, during a failover that reads the znode anyway) is not one."""
    seen: list[int | None] = []

    def on_data(_data: bytes | None, stat: Stat | None) -> None:
        czxid = None if stat is None else stat.czxid
        if seen and czxid is not None and czxid != seen[0]:
            controller.post(ZkPartitionReassignment())
        seen[:] = [czxid]

    controller.zk.zk.watch_data(ReassignPartitionsZNode.path, on_data)


async def _maybe_trigger_partition_reassignment(
    controller: Controller, reassignments: Mapping[TopicPartition, ReplicaAssignment]
) -> dict[TopicPartition, ApiError]:
    """``maybeTriggerPartitionReassignment``."""
    ctx = controller.ctx
    results: dict[TopicPartition, ApiError] = {}
    for tp, reassignment in reassignments.items():
        error = trigger_error(ctx, tp)
        if error is not None:
            if ctx.is_topic_queued_up_for_deletion(tp.topic):
                log.info(
                    "Skipping reassignment of %s since the topic is currently being deleted", tp
                )
            results[tp] = error
            continue
        try:
            await on_partition_reassignment(controller, tp, reassignment)
            results[tp] = NONE
        except ControllerMovedError:
            log.info(
                "Failed completing reassignment of partition %s because controller has moved "
                "to another broker",
                tp,
            )
            raise
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("Error completing reassignment of partition %s", tp)
            results[tp] = ApiError.of(ErrorCode.UNKNOWN_SERVER_ERROR)
    return results


# -- the move --------------------------------------------------------------------------------


async def on_partition_reassignment(
    controller: Controller, tp: TopicPartition, reassignment: ReplicaAssignment
) -> None:
    """``onPartitionReassignment`` (module docstring's phases)."""
    ctx = controller.ctx
    controller.deletion.mark_topic_ineligible_for_deletion(
        {tp.topic}, "topic reassignment in progress"
    )
    await _update_current_reassignment(controller, tp, reassignment)
    adding = [PartitionAndReplica(tp, r) for r in reassignment.adding_replicas]
    if not await _is_reassignment_complete(controller, tp, reassignment):
        await _update_leader_epoch_and_send_request(controller, tp, reassignment)  # A1
        await controller.handle(replica_state_changes(ctx, adding, R.NEW_REPLICA))  # A2
        log.info(
            "Waiting for new replicas %s for partition %s being reassigned to catch up with "
            "the leader",
            list(reassignment.adding_replicas),
            tp,
        )
        return
    await controller.handle(replica_state_changes(ctx, adding, R.ONLINE_REPLICA))  # B1
    completed = ReplicaAssignment(reassignment.target_replicas)
    ctx.update_partition_full_replica_assignment(tp, completed)  # B2
    await _move_reassigned_partition_leader_if_required(controller, tp, completed)  # B3
    await stop_removed_replicas(controller, tp, reassignment.removing_replicas)  # B4, B5
    await _write_topic_assignment(controller, tp.topic)  # B6
    await _remove_partition_from_reassigning_partitions(controller, tp, completed)  # B7
    controller.send_update_metadata(ctx.live_or_shutting_down_broker_ids, {tp})  # B8
    log.info("Completed reassignment of partition %s to replicas %s", tp, list(completed.replicas))
    await controller.deletion.resume_deletion_for_topics({tp.topic})


async def _update_current_reassignment(
    controller: Controller, tp: TopicPartition, reassignment: ReplicaAssignment
) -> None:
    """``updateCurrentReassignment`` (phase U)."""
    ctx = controller.ctx
    current = ctx.partition_full_replica_assignment(tp)
    if current != reassignment:
        log.info("Updating assignment of partition %s from %s to %s", tp, current, reassignment)
        await _write_topic_assignment(controller, tp.topic, {tp.partition: reassignment})  # U1
        ctx.update_partition_full_replica_assignment(tp, reassignment)  # U2
        unneeded = [r for r in current.replicas if r not in reassignment.replicas]
        if unneeded:  # U3
            await stop_removed_replicas(controller, tp, unneeded)
    ctx.partitions_being_reassigned.add(tp)


async def _is_reassignment_complete(
    controller: Controller, tp: TopicPartition, assignment: ReplicaAssignment
) -> bool:
    """``isReassignmentComplete``: with the ISR read from the state znode."""
    if not assignment.is_being_reassigned:
        return True
    found = (await read_leadership(controller.zk, [tp])).get(tp)
    isr = None if found is None else found.leader_and_isr.isr
    return is_reassignment_complete(assignment, isr)


async def _update_leader_epoch_and_send_request(
    controller: Controller, tp: TopicPartition, assignment: ReplicaAssignment
) -> None:
    """``updateLeaderEpochAndSendRequest``: read, bump the leader epoch, write (retried when
    an ISR change wins the race), LeaderAndIsr to RS."""
    ctx = controller.ctx
    for _ in range(MAX_ATTEMPTS):
        current = (await read_leadership(controller.zk, [tp])).get(tp)
        change = update_leader_epoch(
            ctx, tp, current, assignment, controller_id=controller.controller_id
        )
        if change.failures:
            raise ReassignmentFailedError(change.failures[tp])
        done = await controller.handle(change)
        if tp in done.leadership:
            log.info(
                "Sent LeaderAndIsr request %s with new replica assignment %s to leader %d for "
                "partition being reassigned %s",
                done.leadership[tp],
                assignment,
                done.leadership[tp].leader_and_isr.leader,
                tp,
            )
            return
    raise ReassignmentFailedError(
        f"Failed to send LeaderAndIsr request with new replica assignment {assignment} to "
        f"leader for partition being reassigned {tp}"
    )


async def _move_reassigned_partition_leader_if_required(
    controller: Controller, tp: TopicPartition, completed: ReplicaAssignment
) -> None:
    """``moveReassignedPartitionLeaderIfRequired`` (B3)."""
    ctx = controller.ctx
    info = ctx.partition_leadership_info.get(tp)
    leader = NO_LEADER if info is None else info.leader_and_isr.leader
    replicas = list(completed.replicas)
    if leader in replicas and ctx.is_replica_online(leader, tp):
        log.info(
            "Leader %d for partition %s being reassigned, is already in the new list of "
            "replicas %s and is alive",
            leader,
            tp,
            replicas,
        )
        await _update_leader_epoch_and_send_request(controller, tp, completed)
        return
    log.info(
        "Leader %d for partition %s being reassigned, %s. Re-electing leader",
        leader,
        tp,
        f"is not in the new list of replicas {replicas}"
        if leader not in replicas
        else f"is already in the new list of replicas {replicas} but is dead",
    )
    for _ in range(MAX_ATTEMPTS):
        await controller.refresh_leadership([tp])
        change = await controller.handle(
            partition_state_changes(
                ctx,
                [tp],
                PartitionState.ONLINE_PARTITION,
                ElectionStrategy.REASSIGN,
                controller_id=controller.controller_id,
            )
        )
        if tp in change.leadership or tp in change.failures:
            return  # elected, or no eligible leader (logged by handle), as Kafka goes on


async def stop_removed_replicas(
    controller: Controller, tp: TopicPartition, removed: Sequence[int]
) -> None:
    """``stopRemovedReplicasOfReassignedPartition``: OfflineReplica (out of the ISR: a
    conditional write, retried as ``removeReplicasFromIsr``), ReplicaDeletionStarted
    (StopReplica with delete), ReplicaDeletionSuccessful, NonExistentReplica."""
    ctx = controller.ctx
    replicas = [PartitionAndReplica(tp, r) for r in removed]
    if not replicas:
        return
    pending = list(replicas)
    for _ in range(MAX_ATTEMPTS):
        await controller.refresh_leadership([tp])
        change = await controller.handle(replica_state_changes(ctx, pending, R.OFFLINE_REPLICA))
        pending = [
            r for r in pending if r not in change.replica_states and r not in change.failures
        ]
        if not pending:
            break
    for target in (
        R.REPLICA_DELETION_STARTED,
        R.REPLICA_DELETION_SUCCESSFUL,
        R.NON_EXISTENT_REPLICA,
    ):
        await controller.handle(replica_state_changes(ctx, replicas, target))


async def _write_topic_assignment(
    controller: Controller,
    topic: str,
    overrides: Mapping[int, ReplicaAssignment] | None = None,
) -> None:
    """``updateReplicaAssignmentForPartition``: ``/brokers/topics/<topic>`` from the
    context (``overrides`` replacing some partitions), fenced by the controller epoch, any
    znode version (Kafka's ``setTopicAssignmentRaw``)."""
    ctx = controller.ctx
    epoch = controller.epoch
    assert epoch is not None
    assignments = {**ctx.partition_assignments.get(topic, {}), **(overrides or {})}
    content = TopicAssignment(
        ctx.topic_ids.get(topic),
        {p: list(a.replicas) for p, a in sorted(assignments.items())},
        {p: list(a.adding_replicas) for p, a in sorted(assignments.items())},
        {p: list(a.removing_replicas) for p, a in sorted(assignments.items())},
    )
    try:
        await controller.zk.fenced_multi(
            epoch, [SetDataOp(TopicZNode.path(topic), TopicZNode.encode(content))]
        )
    except NoNodeZkError:
        raise ReassignmentFailedError(
            f"Failed to update assignment for {topic} since the topic has no current assignment"
        ) from None


async def _remove_partition_from_reassigning_partitions(
    controller: Controller, tp: TopicPartition, completed: ReplicaAssignment
) -> None:
    """``removePartitionFromReassigningPartitions`` (B7)."""
    ctx = controller.ctx
    if tp not in ctx.partitions_being_reassigned:
        raise ReassignmentFailedError(
            "Cannot remove a reassigning partition because it is not present in memory"
        )
    await _maybe_remove_from_zk_reassignment(
        controller, lambda t, replicas: t == tp and tuple(replicas) == completed.replicas
    )
    ctx.partitions_being_reassigned.discard(tp)


# -- /admin/reassign_partitions ----------------------------------------------------------------


async def _read_zk_reassignment(
    controller: Controller,
) -> dict[TopicPartition, list[int]] | None:
    """The znode's reassignments (``getPartitionReassignment``); None when it does not
    exist; one that does not decode is logged and deleted (module docstring)."""
    found = await controller.zk.zk.get_or_none(ReassignPartitionsZNode.path)
    if found is None:
        return None
    try:
        decoded = ReassignPartitionsZNode.decode(found[0])
    except ZNodeDecodeError as exc:
        log.error("%s; no partition reassigned, the znode is deleted", exc)
        await _delete_zk_reassignment(controller)
        return None
    return {TopicPartition(t, p): replicas for (t, p), replicas in decoded.items()}


async def _maybe_remove_from_zk_reassignment(
    controller: Controller, should_remove: Callable[[TopicPartition, Sequence[int]], bool]
) -> None:
    """``maybeRemoveFromZkReassignment``: rewrite the znode without the partitions
    ``should_remove`` picks, or delete it when none is left (fenced writes)."""
    found = await controller.zk.zk.get_or_none(ReassignPartitionsZNode.path)
    if found is None:
        return
    try:
        decoded = ReassignPartitionsZNode.decode(found[0])
        current = {TopicPartition(t, p): r for (t, p), r in decoded.items()}
    except ZNodeDecodeError as exc:
        log.warning("Ignoring partition reassignment due to invalid json: %s", exc)
        current = {}
    removed, kept = remove_from_zk_reassignment(current, should_remove)
    if not removed and kept:
        return
    log.info(
        "Removing partitions %s from the list of reassigned partitions in zookeeper",
        ",".join(str(tp) for tp in removed),
    )
    if not kept:
        log.info(
            "No more partitions need to be reassigned. Deleting zk path %s",
            ReassignPartitionsZNode.path,
        )
        await _delete_zk_reassignment(controller)
        return
    epoch = controller.epoch
    assert epoch is not None
    data = ReassignPartitionsZNode.encode({(tp.topic, tp.partition): r for tp, r in kept.items()})
    try:
        await controller.zk.fenced_multi(epoch, [SetDataOp(ReassignPartitionsZNode.path, data)])
    except NoNodeZkError:  # deleted meanwhile: setOrCreatePartitionReassignment creates it
        await controller.zk.fenced_multi(epoch, [CreateOp(ReassignPartitionsZNode.path, data)])


async def _delete_zk_reassignment(controller: Controller) -> None:
    """``deletePartitionReassignment``, fenced by the controller epoch."""
    epoch = controller.epoch
    assert epoch is not None
    with contextlib.suppress(NoNodeZkError):
        await controller.zk.fenced_multi(epoch, [DeleteOp(ReassignPartitionsZNode.path)])
