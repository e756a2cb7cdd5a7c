"""Preferred-leader bookkeeping as pure functions over the ``ControllerContext`` (Kafka 3.9's
``KafkaController.checkAndTriggerAutoLeaderRebalance``, ``canPreferredReplicaBeLeader`` and
``fetchPendingPreferredReplicaElections``, ZooKeeper mode).

Glossary:

* *preferred replica* of a partition: the first replica of its assignment.
* *leader imbalance* of a broker (``auto.leader.rebalance.enable``): of the partitions whose
  preferred replica it is (topics queued for deletion left out), the share led by another
  broker: ``not led by it / preferred on it``. A partition with no leader (-1) counts as not
  led by its preferred replica; one whose state was never read does not (Kafka's
  ``leadershipInfo.exists(_.leaderAndIsr.leader != leaderBroker)``).

Rules (Kafka's):

* A broker whose imbalance is above ``leader.imbalance.per.broker.percentage`` / 100 (strictly)
  gets a preferred election (trigger AutoTriggered) for its partitions that are not led by it,
  whose topic is known and not queued for deletion, and whose preferred replica could lead:
  online (live, not shutting down, not on a failed log dir) and in the ISR.
* Kafka 3.9 no longer skips the check while partitions are being reassigned (Kafka 2.x's
  ``partitionsBeingReassigned.isEmpty`` guard is gone), and neither does Franz.
* At failover, the partitions named in ``/admin/preferred_replica_election`` whose preferred
  replica already leads, or whose topic is gone, are *completed*; those of topics queued for
  deletion are *skipped*; the rest are *pending* and elected again.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from franz.controller.context import ControllerContext
from franz.controller.election import preferred_replica_partition_leader_election
from franz.controller.model import TopicPartition

__all__ = [
    "BrokerLeaderImbalance",
    "PendingPreferredElections",
    "auto_rebalance_candidates",
    "can_preferred_replica_be_leader",
    "leader_imbalance",
    "pending_preferred_replica_elections",
]


@dataclass(frozen=True, slots=True)
class BrokerLeaderImbalance:
    """One preferred broker's partitions and those of them it does not lead."""

    broker_id: int
    preferred: frozenset[TopicPartition]
    not_led: frozenset[TopicPartition]

    @property
    def ratio(self) -> float:
        """``imbalanceRatio``: not led / preferred (0.0 with no partition)."""
        return len(self.not_led) / len(self.preferred) if self.preferred else 0.0

    def above(self, percentage: int) -> bool:
        """Above ``leader.imbalance.per.broker.percentage`` (strictly, as Kafka)."""
        return self.ratio > percentage / 100


def leader_imbalance(ctx: ControllerContext) -> dict[int, BrokerLeaderImbalance]:
    """Preferred broker id -> its imbalance (``preferredReplicasForTopicsByBrokers``)."""
    by_broker: dict[int, set[TopicPartition]] = {}
    for tp in ctx.all_partitions():
        if ctx.is_topic_queued_up_for_deletion(tp.topic):
            continue
        assignment = ctx.partition_replica_assignment(tp)
        if assignment:
            by_broker.setdefault(assignment[0], set()).add(tp)
    out: dict[int, BrokerLeaderImbalance] = {}
    for broker_id, partitions in by_broker.items():
        not_led = set()
        for tp in partitions:
            info = ctx.partition_leadership_info.get(tp)
            if info is not None and info.leader_and_isr.leader != broker_id:
                not_led.add(tp)
        out[broker_id] = BrokerLeaderImbalance(broker_id, frozenset(partitions), frozenset(not_led))
    return out


def can_preferred_replica_be_leader(ctx: ControllerContext, tp: TopicPartition) -> bool:
    """``canPreferredReplicaBeLeader``: the preferred replica is online and in the ISR."""
    info = ctx.partition_leadership_info.get(tp)
    if info is None:
        return False
    assignment = ctx.partition_replica_assignment(tp)
    live = {r for r in assignment if ctx.is_replica_online(r, tp)}
    leader = preferred_replica_partition_leader_election(assignment, info.leader_and_isr.isr, live)
    return leader is not None


def auto_rebalance_candidates(
    ctx: ControllerContext, imbalance_percentage: int
) -> dict[int, frozenset[TopicPartition]]:
    """Preferred broker id -> the partitions to elect, for every broker above the percentage
    (module docstring); a broker above it with no electable partition maps to an empty set,
    as Kafka then still runs (and logs) an empty election."""
    out: dict[int, frozenset[TopicPartition]] = {}
    for broker_id, imbalance in sorted(leader_imbalance(ctx).items()):
        if not imbalance.above(imbalance_percentage):
            continue
        out[broker_id] = frozenset(
            tp
            for tp in imbalance.not_led
            if not ctx.is_topic_queued_up_for_deletion(tp.topic)
            and tp.topic in ctx.all_topics
            and can_preferred_replica_be_leader(ctx, tp)
        )
    return out


@dataclass(frozen=True, slots=True)
class PendingPreferredElections:
    """``fetchPendingPreferredReplicaElections``' split of the znode's partitions."""

    completed: frozenset[TopicPartition]
    skipped_for_deletion: frozenset[TopicPartition]
    pending: frozenset[TopicPartition]


def pending_preferred_replica_elections(
    ctx: ControllerContext, partitions: Iterable[TopicPartition]
) -> PendingPreferredElections:
    """Split the partitions of ``/admin/preferred_replica_election`` found at failover."""
    completed: set[TopicPartition] = set()
    skipped: set[TopicPartition] = set()
    pending: set[TopicPartition] = set()
    for tp in partitions:
        replicas = ctx.partition_replica_assignment(tp)
        info = ctx.partition_leadership_info.get(tp)
        if not replicas or (info is not None and info.leader_and_isr.leader == replicas[0]):
            completed.add(tp)
        elif ctx.is_topic_queued_up_for_deletion(tp.topic):
            skipped.add(tp)
        else:
            pending.add(tp)
    return PendingPreferredElections(frozenset(completed), frozenset(skipped), frozenset(pending))
