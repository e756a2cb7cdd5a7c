"""The controller's replica leader elections (Kafka 3.9's ``KafkaController.electLeaders``,
``processReplicaLeaderElection``, ``onReplicaElection`` and
``removePartitionsFromPreferredReplicaElection``, ZooKeeper mode), whoever triggered them:

* AdminClientTriggered: the ElectLeaders handler calls ``Controller.elect_leaders``, which
  queues a ``ReplicaLeaderElection`` event whose ``reply`` future the handler awaits.
* ZkTriggered: ``/admin/preferred_replica_election`` (``{"version":1,"partitions":[{"topic":
  "t","partition":0}]}``, written by the old ``kafka-preferred-replica-election.sh
  --zookeeper``) was created: the watch queues a ``ReplicaLeaderElection`` with no partitions,
  and processing reads them from the znode (nothing to do when it is gone). A new controller
  resumes the elections the znode still names (``resume_preferred_replica_elections``, Kafka's
  ``fetchPendingPreferredReplicaElections`` in ``onControllerFailover``).
* AutoTriggered: the leader imbalance check (``auto_rebalance.py``) calls
  ``on_replica_election`` directly.

Processing a ``ReplicaLeaderElection``, in Kafka's order:

1. Partitions the controller does not know: UNKNOWN_TOPIC_OR_PARTITION ("The partition does
   not exist."). Partitions of a topic queued for deletion: INVALID_TOPIC_EXCEPTION ("The
   topic is being deleted").
2. Of the others, those that already have a valid leader answer ELECTION_NOT_NEEDED: for
   PREFERRED, the first assigned replica leads; for UNCLEAN, the leader is a live broker.
3. The rest go to OnlinePartition (``partition_state_changes``): PREFERRED under the
   preferred-replica election (the first assigned replica, if live and in the ISR; ISR
   unchanged), UNCLEAN under the offline election with unclean election allowed
   (``OfflinePartitionLeaderElectionStrategy(allowUnclean = true)``: the first live ISR
   member, failing that the first live assigned replica, which then is the whole ISR and
   RECOVERING). A partition for which no leader qualifies answers
   PREFERRED_LEADER_NOT_AVAILABLE (PREFERRED) or ELIGIBLE_LEADERS_NOT_AVAILABLE (UNCLEAN),
   with Kafka's message; an elected one writes its state znode, sends LeaderAndIsr and
   UpdateMetadata, and answers its new leader (the handler answers NONE once its own
   metadata cache shows it, as Kafka's ``DelayedElectLeader``).

After an election not asked by an admin client, every partition is logged as completed (its
preferred replica leads) or failed; a ZkTriggered one then deletes the znode (fenced by the
controller epoch), even when the election failed, so the path can be used again.

A controller that is not active answers NOT_CONTROLLER for every partition named (Kafka's
``processReplicaLeaderElection`` with ``isActive`` false); so does a request queued or being
processed when the controller resigns. Any other failure is UNKNOWN_SERVER_ERROR.

Differences from Kafka:

* A partition whose conditional state write lost a race is elected again (at most
  ``MAX_ATTEMPTS`` times) as Kafka's ``electLeaderForPartitions`` retry loop does, then
  answered UNKNOWN_SERVER_ERROR rather than retried forever.
* A ``/admin/preferred_replica_election`` that is not the JSON above is logged (ERROR) and
  deleted. Kafka reads bytes that do not parse as JSON as no partitions (silently: the znode is
  deleted too), but JSON of another shape makes its event fail and the znode stays until
  deleted by hand, blocking the path; Franz treats both alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from franz.controller.context import ControllerContext
from franz.controller.election import ElectionStrategy
from franz.controller.events import ElectionTrigger, ElectionType, ReplicaLeaderElection
from franz.controller.leader_imbalance import pending_preferred_replica_elections
from franz.controller.model import NO_LEADER, TopicPartition
from franz.controller.states import PartitionState, partition_state_changes
from franz.errors import ErrorCode
from franz.metadata.znodes import PreferredReplicaElectionZNode, ZNodeDecodeError
from franz.metadata.zookeeper import DeleteOp, NoNodeZkError

if TYPE_CHECKING:
    from franz.controller.shell.controller import Controller

__all__ = [
    "MAX_ATTEMPTS",
    "ElectionOutcome",
    "ReplicaElectionPlan",
    "answer",
    "answer_all",
    "on_replica_election",
    "plan_replica_election",
    "process_replica_election",
    "read_preferred_replica_election",
    "resume_preferred_replica_elections",
    "watch_preferred_replica_election",
]

log = logging.getLogger("franz.controller.shell.controller")

#: Elections of one partition per request whose state write lost a race (module docstring).
MAX_ATTEMPTS: Final = 5


@dataclass(frozen=True, slots=True)
class ElectionOutcome:
    """One partition's answer: an error (NONE with the new ``leader`` when elected)."""

    error_code: ErrorCode
    message: str | None = None
    leader: int | None = None


@dataclass(frozen=True, slots=True)
class ReplicaElectionPlan:
    """``processReplicaLeaderElection``'s split of the partitions asked for."""

    unknown: frozenset[TopicPartition]
    being_deleted: frozenset[TopicPartition]
    already_valid: frozenset[TopicPartition]
    electable: frozenset[TopicPartition]


def plan_replica_election(
    ctx: ControllerContext, partitions: Iterable[TopicPartition], election_type: ElectionType
) -> ReplicaElectionPlan:
    """Split ``partitions`` (steps 1 and 2 of the module docstring); pure."""
    known = ctx.all_partitions()
    unknown: set[TopicPartition] = set()
    deleting: set[TopicPartition] = set()
    valid: set[TopicPartition] = set()
    electable: set[TopicPartition] = set()
    for tp in partitions:
        if tp not in known:
            unknown.add(tp)
        elif ctx.is_topic_queued_up_for_deletion(tp.topic):
            deleting.add(tp)
        else:
            info = ctx.partition_leadership_info.get(tp)
            leader = NO_LEADER if info is None else info.leader_and_isr.leader
            if election_type is ElectionType.PREFERRED:
                needed = leader != ctx.partition_replica_assignment(tp)[0]
            else:
                needed = leader == NO_LEADER or leader not in ctx.live_broker_ids
            (electable if needed else valid).add(tp)
    return ReplicaElectionPlan(
        frozenset(unknown), frozenset(deleting), frozenset(valid), frozenset(electable)
    )


def answer(event: ReplicaLeaderElection, result: Mapping[TopicPartition, ElectionOutcome]) -> None:
    """Resolve the event's reply future (once; a caller that gave up is ignored)."""
    reply = event.reply
    if isinstance(reply, asyncio.Future) and not reply.done():
        reply.set_result(dict(result))


def answer_all(event: ReplicaLeaderElection, code: ErrorCode) -> None:
    """Every partition named gets ``code`` (NOT_CONTROLLER, UNKNOWN_SERVER_ERROR)."""
    answer(event, {tp: ElectionOutcome(code) for tp in event.partitions or ()})


async def process_replica_election(
    controller: Controller, event: ReplicaLeaderElection
) -> dict[TopicPartition, ElectionOutcome]:
    """``processReplicaLeaderElection`` + ``onReplicaElection`` (module docstring)."""
    ctx = controller.ctx
    election_type = event.election_type
    trigger = event.election_trigger
    if event.partitions is not None:
        partitions = event.partitions
    else:
        found = await read_preferred_replica_election(controller)
        if found is None:
            return {}  # no znode: a deletion (ours) or a duplicate watch event
        partitions = found
    plan = plan_replica_election(ctx, partitions, election_type)
    results: dict[TopicPartition, ElectionOutcome] = {}
    for tp in plan.unknown:
        log.info(
            "Skipping replica leader election (%s) for partition %s by %s since it doesn't exist.",
            election_type.name,
            tp,
            trigger.value,
        )
        results[tp] = ElectionOutcome(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
        )
    if plan.being_deleted:
        log.warning(
            "Skipping replica leader election (%s) for partitions %s by %s since the "
            "respective topics are being deleted",
            election_type.name,
            ",".join(str(tp) for tp in sorted(plan.being_deleted)),
            trigger.value,
        )
    for tp in plan.being_deleted:
        results[tp] = ElectionOutcome(
            ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted"
        )
    for tp in plan.already_valid:
        results[tp] = ElectionOutcome(ErrorCode.ELECTION_NOT_NEEDED)
    if plan.electable or trigger is not ElectionTrigger.ADMIN_CLIENT_TRIGGERED:
        results.update(
            await on_replica_election(controller, plan.electable, election_type, trigger)
        )
    return results


def watch_preferred_replica_election(controller: Controller) -> None:
    """``PreferredReplicaElectionHandler.handleCreation``: a ZkTriggered election whenever
    the znode exists (kazoo re-arms the watch; a duplicate finds the znode gone)."""
    controller.zk.zk.watch_data(
        PreferredReplicaElectionZNode.path,
        lambda _, stat: controller.post(ReplicaLeaderElection(None)) if stat else None,
    )


async def read_preferred_replica_election(
    controller: Controller,
) -> frozenset[TopicPartition] | None:
    """The partitions ``/admin/preferred_replica_election`` names (``getPreferredReplicaElection``);
    ``None`` when it does not exist, none (logged) when it is malformed (module docstring)."""
    found = await controller.zk.zk.get_or_none(PreferredReplicaElectionZNode.path)
    if found is None:
        return None
    try:
        return frozenset(
            TopicPartition(t, p) for t, p in PreferredReplicaElectionZNode.decode(found[0])
        )
    except ZNodeDecodeError as exc:
        log.error("%s; no partition elected, the znode is deleted", exc)
        return frozenset()


async def resume_preferred_replica_elections(controller: Controller) -> None:
    """``onControllerFailover``'s ``fetchPendingPreferredReplicaElections`` and
    ``onReplicaElection(pending, PREFERRED, ZkTriggered)``: a znode left by the previous
    controller is acted on (and deleted) now."""
    found = await read_preferred_replica_election(controller)
    if found is None:
        return
    split = pending_preferred_replica_elections(controller.ctx, found)

    def names(partitions: frozenset[TopicPartition]) -> str:
        return ",".join(str(tp) for tp in sorted(partitions))

    log.info("Partitions undergoing preferred replica election: %s", names(found))
    log.info("Partitions that completed preferred replica election: %s", names(split.completed))
    log.info(
        "Skipping preferred replica election for partitions due to topic deletion: %s",
        names(split.skipped_for_deletion),
    )
    log.info("Resuming preferred replica election for partitions: %s", names(split.pending))
    await on_replica_election(
        controller, split.pending, ElectionType.PREFERRED, ElectionTrigger.ZK_TRIGGERED
    )


async def on_replica_election(
    controller: Controller,
    partitions: frozenset[TopicPartition],
    election_type: ElectionType,
    trigger: ElectionTrigger,
) -> dict[TopicPartition, ElectionOutcome]:
    """``onReplicaElection``: elect, then (not AdminClientTriggered) log the outcome per
    partition and (ZkTriggered) delete ``/admin/preferred_replica_election``."""
    log.info(
        "Starting replica leader election (%s) for partitions %s triggered by %s",
        election_type.name,
        ",".join(str(tp) for tp in sorted(partitions)),
        trigger.value,
    )
    try:
        if not partitions:
            return {}
        return await _elect(controller, partitions, election_type, trigger)
    finally:
        if trigger is not ElectionTrigger.ADMIN_CLIENT_TRIGGERED and controller.is_active:
            await _remove_partitions_from_preferred_replica_election(
                controller, partitions, delete_znode=trigger is ElectionTrigger.ZK_TRIGGERED
            )


async def _remove_partitions_from_preferred_replica_election(
    controller: Controller, partitions: frozenset[TopicPartition], *, delete_znode: bool
) -> None:
    """``removePartitionsFromPreferredReplicaElection``."""
    ctx = controller.ctx
    for tp in sorted(partitions):
        info = ctx.partition_leadership_info.get(tp)
        leader = NO_LEADER if info is None else info.leader_and_isr.leader
        assignment = ctx.partition_replica_assignment(tp)
        preferred = assignment[0] if assignment else NO_LEADER
        if leader == preferred:
            log.info(
                "Partition %s completed preferred replica leader election. New leader is %d",
                tp,
                preferred,
            )
        else:
            log.warning(
                "Partition %s failed to complete preferred replica leader election to %d. "
                "Leader is still %d",
                tp,
                preferred,
                leader,
            )
    if delete_znode:
        epoch = controller.epoch
        assert epoch is not None
        with contextlib.suppress(NoNodeZkError):  # deleted by hand meanwhile
            await controller.zk.fenced_multi(epoch, [DeleteOp(PreferredReplicaElectionZNode.path)])


async def _elect(
    controller: Controller,
    partitions: frozenset[TopicPartition],
    election_type: ElectionType,
    trigger: ElectionTrigger,
) -> dict[TopicPartition, ElectionOutcome]:
    """The state changes of ``onReplicaElection``: the strategy by election type; unclean
    only when an admin client asked (Kafka's ``allowUnclean = electionTrigger ==
    AdminClientTriggered``)."""
    ctx = controller.ctx
    if election_type is ElectionType.PREFERRED:
        strategy = ElectionStrategy.PREFERRED_REPLICA
        no_leader = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    else:
        strategy = ElectionStrategy.OFFLINE
        no_leader = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    allow_unclean = trigger is ElectionTrigger.ADMIN_CLIENT_TRIGGERED
    results: dict[TopicPartition, ElectionOutcome] = {}
    pending = sorted(partitions)
    for _ in range(MAX_ATTEMPTS):
        if not pending:
            break
        await controller.refresh_leadership(pending)
        change = await controller.handle(
            partition_state_changes(
                ctx,
                pending,
                PartitionState.ONLINE_PARTITION,
                strategy,
                controller_id=controller.controller_id,
                unclean_leader_election_enabled=lambda topic: allow_unclean,
            )
        )
        lost: list[TopicPartition] = []
        for tp in pending:
            if tp in change.leadership:
                leader = change.leadership[tp].leader_and_isr.leader
                results[tp] = ElectionOutcome(ErrorCode.NONE, leader=leader)
            elif tp in change.failures:
                message = change.failures[tp]
                log.error(
                    "Error completing replica leader election (%s) for partition %s: %s",
                    election_type.name,
                    tp,
                    message,
                )
                results[tp] = ElectionOutcome(no_leader, message)
            else:
                lost.append(tp)
        pending = lost
    for tp in pending:
        results[tp] = ElectionOutcome(
            ErrorCode.UNKNOWN_SERVER_ERROR, "The partition state kept changing under the election."
        )
    return results
