"""The controller's side of ElectLeaders (Kafka 3.9's ``KafkaController.electLeaders``,
``processReplicaLeaderElection`` and ``onReplicaElection``, ZooKeeper mode).

The ElectLeaders handler calls ``Controller.elect_leaders``, which queues a
``ReplicaLeaderElection`` event (trigger AdminClientTriggered) whose ``reply`` future the
handler awaits. Processing it, in Kafka's order:

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

A controller that is not active answers NOT_CONTROLLER for every partition named (Kafka's
``processReplicaLeaderElection`` with ``isActive`` false); so does a request queued or being
processed when the controller resigns. Any other failure is UNKNOWN_SERVER_ERROR.

Difference from Kafka: a partition whose conditional state write lost a race is elected again
(at most ``MAX_ATTEMPTS`` times) as Kafka's ``electLeaderForPartitions`` retry loop does, then
answered UNKNOWN_SERVER_ERROR rather than retried forever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from franz.controller.context import ControllerContext
from franz.controller.election import ElectionStrategy
from franz.controller.events import ElectionType, ReplicaLeaderElection
from franz.controller.model import NO_LEADER, TopicPartition
from franz.controller.states import PartitionState, partition_state_changes
from franz.errors import ErrorCode

if TYPE_CHECKING:
    from franz.controller.shell.controller import Controller

__all__ = [
    "MAX_ATTEMPTS",
    "ElectionOutcome",
    "ReplicaElectionPlan",
    "answer",
    "answer_all",
    "plan_replica_election",
    "process_replica_election",
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
    partitions = event.partitions if event.partitions is not None else frozenset()
    plan = plan_replica_election(ctx, partitions, election_type)
    results: dict[TopicPartition, ElectionOutcome] = {}
    for tp in plan.unknown:
        log.info(
            "Skipping replica leader election (%s) for partition %s by %s since it doesn't exist.",
            election_type.name,
            tp,
            event.election_trigger.value,
        )
        results[tp] = ElectionOutcome(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."
        )
    for tp in plan.being_deleted:
        results[tp] = ElectionOutcome(
            ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted"
        )
    for tp in plan.already_valid:
        results[tp] = ElectionOutcome(ErrorCode.ELECTION_NOT_NEEDED)
    if plan.electable:
        log.info(
            "Starting replica leader election (%s) for partitions %s triggered by %s",
            election_type.name,
            ",".join(str(tp) for tp in sorted(plan.electable)),
            event.election_trigger.value,
        )
        results.update(await _on_replica_election(controller, plan.electable, election_type))
    return results


async def _on_replica_election(
    controller: Controller, partitions: frozenset[TopicPartition], election_type: ElectionType
) -> dict[TopicPartition, ElectionOutcome]:
    """``onReplicaElection`` with the AdminClientTriggered strategy choice."""
    ctx = controller.ctx
    if election_type is ElectionType.PREFERRED:
        strategy = ElectionStrategy.PREFERRED_REPLICA
        no_leader = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
    else:
        strategy = ElectionStrategy.OFFLINE
        no_leader = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
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
                unclean_leader_election_enabled=lambda topic: True,
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
