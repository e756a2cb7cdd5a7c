"""Partition leader election as pure functions (Kafka 3.9's ``PartitionLeaderElectionAlgorithms``
in ``PartitionStateMachine.scala`` and ``kafka.controller.Election``).

Rules (each function names the Kafka method it mirrors):

* The algorithms pick the first replica, in assignment order, that qualifies:

  - offline: live and in the ISR; failing that, if unclean leader election is enabled for the
    topic, the first live replica (an *unclean* election);
  - reassignment: live and in the ISR, among the reassignment's target replicas;
  - preferred replica: only the first assigned replica, if it is live and in the ISR;
  - controlled shutdown: live (shutting-down brokers count as live) and in the ISR and not
    shutting down.

* The new ``LeaderAndIsr`` always has leader epoch + 1 and keeps the partition epoch (the znode
  version, which the conditional write then bumps). Offline: the new ISR is the old ISR's
  online members when the leader was in it, else ``[leader]``, and a leader from outside the
  ISR marks the partition RECOVERING (KIP-704, Kafka >= 3.2). Reassignment and preferred: the
  ISR is unchanged (``newLeader``). Controlled shutdown: the ISR loses the shutting-down
  brokers.
* ``ElectionResult.live_replicas`` is who gets the LeaderAndIsr request: the live assigned
  replicas (offline), the target replicas (reassignment), all assigned replicas (preferred),
  the live-or-shutting-down assigned replicas (controlled shutdown), exactly as Kafka.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence, Set
from dataclasses import dataclass

from franz.controller.context import ControllerContext
from franz.controller.model import LeaderAndIsr, TopicPartition

__all__ = [
    "ElectionResult",
    "ElectionStrategy",
    "controlled_shutdown_partition_leader_election",
    "elect",
    "leader_for_controlled_shutdown",
    "leader_for_offline",
    "leader_for_preferred_replica",
    "leader_for_reassign",
    "offline_partition_leader_election",
    "preferred_replica_partition_leader_election",
    "reassign_partition_leader_election",
]


class ElectionStrategy(enum.Enum):
    """Kafka's ``PartitionLeaderElectionStrategy`` case objects."""

    OFFLINE = "OfflinePartitionLeaderElectionStrategy"
    REASSIGN = "ReassignPartitionLeaderElectionStrategy"
    PREFERRED_REPLICA = "PreferredReplicaPartitionLeaderElectionStrategy"
    CONTROLLED_SHUTDOWN = "ControlledShutdownPartitionLeaderElectionStrategy"


@dataclass(frozen=True, slots=True)
class ElectionResult:
    """Kafka's ``ElectionResult``: the new leader/ISR (``None``: no eligible leader) and the
    replicas to send LeaderAndIsr to. ``unclean`` is what Kafka counts in
    ``UncleanLeaderElectionsPerSec``."""

    topic_partition: TopicPartition
    leader_and_isr: LeaderAndIsr | None
    live_replicas: tuple[int, ...]
    unclean: bool = False


# -- the algorithms (PartitionLeaderElectionAlgorithms) -------------------------------------


def offline_partition_leader_election(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_replicas: Set[int],
    unclean_leader_election_enabled: bool,
) -> int | None:
    """``offlinePartitionLeaderElection``."""
    for replica in assignment:
        if replica in live_replicas and replica in isr:
            return replica
    if unclean_leader_election_enabled:
        return next((r for r in assignment if r in live_replicas), None)
    return None


def reassign_partition_leader_election(
    reassignment: Sequence[int], isr: Sequence[int], live_replicas: Set[int]
) -> int | None:
    """``reassignPartitionLeaderElection``."""
    return next((r for r in reassignment if r in live_replicas and r in isr), None)


def preferred_replica_partition_leader_election(
    assignment: Sequence[int], isr: Sequence[int], live_replicas: Set[int]
) -> int | None:
    """``preferredReplicaPartitionLeaderElection``: the head of the assignment or nothing."""
    if assignment and assignment[0] in live_replicas and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_partition_leader_election(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_replicas: Set[int],
    shutting_down_brokers: Set[int],
) -> int | None:
    """``controlledShutdownPartitionLeaderElection``."""
    return next(
        (
            r
            for r in assignment
            if r in live_replicas and r in isr and r not in shutting_down_brokers
        ),
        None,
    )


# -- one partition against the context (Election) -------------------------------------------


def leader_for_offline(
    ctx: ControllerContext,
    tp: TopicPartition,
    leader_and_isr: LeaderAndIsr | None,
    unclean_leader_election_enabled: bool,
    *,
    is_leader_recovery_supported: bool = True,
) -> ElectionResult:
    """``Election.leaderForOffline``. ``leader_and_isr`` ``None``: the state znode could not
    be read, no election. ``is_leader_recovery_supported``: metadata version >= 3.2-IV0."""
    assignment = ctx.partition_replica_assignment(tp)
    live = tuple(r for r in assignment if ctx.is_replica_online(r, tp))
    if leader_and_isr is None:
        return ElectionResult(tp, None, live)
    isr = leader_and_isr.isr
    leader = offline_partition_leader_election(
        assignment, isr, set(live), unclean_leader_election_enabled
    )
    if leader is None:
        return ElectionResult(tp, None, live)
    if leader in isr:
        new_isr = tuple(r for r in isr if ctx.is_replica_online(r, tp))
        return ElectionResult(tp, leader_and_isr.new_leader_and_isr(leader, new_isr), live)
    if is_leader_recovery_supported:
        new = leader_and_isr.new_recovering_leader_and_isr(leader, (leader,))
    else:
        new = leader_and_isr.new_leader_and_isr(leader, (leader,))
    return ElectionResult(tp, new, live, unclean=True)


def leader_for_reassign(
    ctx: ControllerContext, tp: TopicPartition, leader_and_isr: LeaderAndIsr
) -> ElectionResult:
    """``Election.leaderForReassign``: among the target replicas; ISR unchanged."""
    target = ctx.partition_full_replica_assignment(tp).target_replicas
    live = {r for r in target if ctx.is_replica_online(r, tp)}
    leader = reassign_partition_leader_election(target, leader_and_isr.isr, live)
    new = None if leader is None else leader_and_isr.new_leader(leader)
    return ElectionResult(tp, new, target)


def leader_for_preferred_replica(
    ctx: ControllerContext, tp: TopicPartition, leader_and_isr: LeaderAndIsr
) -> ElectionResult:
    """``Election.leaderForPreferredReplica``: ISR unchanged; all assigned replicas told."""
    assignment = ctx.partition_replica_assignment(tp)
    live = {r for r in assignment if ctx.is_replica_online(r, tp)}
    leader = preferred_replica_partition_leader_election(assignment, leader_and_isr.isr, live)
    new = None if leader is None else leader_and_isr.new_leader(leader)
    return ElectionResult(tp, new, assignment)


def leader_for_controlled_shutdown(
    ctx: ControllerContext, tp: TopicPartition, leader_and_isr: LeaderAndIsr
) -> ElectionResult:
    """``Election.leaderForControlledShutdown``: the ISR drops every shutting-down broker."""
    shutting_down = ctx.shutting_down_broker_ids
    assignment = ctx.partition_replica_assignment(tp)
    live_or_shutting_down = tuple(
        r for r in assignment if ctx.is_replica_online(r, tp, include_shutting_down_brokers=True)
    )
    isr = leader_and_isr.isr
    leader = controlled_shutdown_partition_leader_election(
        assignment, isr, set(live_or_shutting_down), shutting_down
    )
    new_isr = tuple(r for r in isr if r not in shutting_down)
    new = None if leader is None else leader_and_isr.new_leader_and_isr(leader, new_isr)
    return ElectionResult(tp, new, live_or_shutting_down)


def elect(
    ctx: ControllerContext,
    strategy: ElectionStrategy,
    tp: TopicPartition,
    leader_and_isr: LeaderAndIsr,
    *,
    unclean_leader_election_enabled: bool = False,
) -> ElectionResult:
    """One partition under ``strategy`` (the dispatch in ``doElectLeaderForPartitions``).
    ``unclean_leader_election_enabled`` is the topic's ``unclean.leader.election.enable``;
    Kafka only reads it (and only uses it) for the offline strategy."""
    if strategy is ElectionStrategy.OFFLINE:
        return leader_for_offline(ctx, tp, leader_and_isr, unclean_leader_election_enabled)
    if strategy is ElectionStrategy.REASSIGN:
        return leader_for_reassign(ctx, tp, leader_and_isr)
    if strategy is ElectionStrategy.PREFERRED_REPLICA:
        return leader_for_preferred_replica(ctx, tp, leader_and_isr)
    return leader_for_controlled_shutdown(ctx, tp, leader_and_isr)
