"""ElectLeaders' controller side without ZooKeeper: ``plan_replica_election`` (which partitions
need an election, Kafka's ``processReplicaLeaderElection``) and the state change that
``onReplicaElection`` asks for. The successful PREFERRED election (preferred replica live and
in the ISR but not leading) is only reachable here until replication lets a replica rejoin an
ISR; the process tests are ``tests/cluster/test_elect_leaders.py``."""

from __future__ import annotations

from franz.controller.context import Broker, ControllerContext
from franz.controller.election import ElectionStrategy
from franz.controller.events import ElectionType
from franz.controller.model import (
    NO_LEADER,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicPartition,
)
from franz.controller.shell.replica_election import ReplicaElectionPlan, plan_replica_election
from franz.controller.states import (
    AddLeaderAndIsr,
    PartitionState,
    UpdatePartitionState,
    partition_state_changes,
)

CONTROLLER = 3
#: Led by 2 though 1 is preferred, both live and in the ISR.
MOVED = TopicPartition("t", 0)
#: Led by its preferred replica 1.
AT_HOME = TopicPartition("t", 1)
#: Leaderless (its only ISR member 4 is dead); 2 is live but not in the ISR.
LEADERLESS = TopicPartition("t", 2)
#: Led by 1, preferred replica 4 is dead.
PREFERRED_DEAD = TopicPartition("t", 3)
DELETING = TopicPartition("gone", 0)
UNKNOWN = TopicPartition("t", 9)


def context() -> ControllerContext:
    ctx = ControllerContext(epoch=5)
    ctx.add_live_brokers(Broker(b, epoch=100 + b) for b in (1, 2, 3))
    partitions = {
        MOVED: ((1, 2), LeaderAndIsr(2, (2, 1), leader_epoch=3)),
        AT_HOME: ((1, 2), LeaderAndIsr(1, (1, 2))),
        LEADERLESS: ((4, 2), LeaderAndIsr(NO_LEADER, (4,), leader_epoch=7)),
        PREFERRED_DEAD: ((4, 1), LeaderAndIsr(1, (1,))),
        DELETING: ((1, 2), LeaderAndIsr(2, (2, 1))),
    }
    for tp, (assignment, leader_and_isr) in partitions.items():
        ctx.update_partition_replica_assignment(tp, assignment)
        ctx.partition_leadership_info[tp] = LeaderIsrAndControllerEpoch(leader_and_isr, 4)
        online = leader_and_isr.leader != NO_LEADER
        ctx.partition_states[tp] = (
            PartitionState.ONLINE_PARTITION if online else PartitionState.OFFLINE_PARTITION
        )
    ctx.topics_to_be_deleted.add(DELETING.topic)
    return ctx


ALL = frozenset({MOVED, AT_HOME, LEADERLESS, PREFERRED_DEAD, DELETING, UNKNOWN})


def test_preferred_plan_elects_where_the_preferred_replica_does_not_lead() -> None:
    assert plan_replica_election(context(), ALL, ElectionType.PREFERRED) == ReplicaElectionPlan(
        unknown=frozenset({UNKNOWN}),
        being_deleted=frozenset({DELETING}),
        already_valid=frozenset({AT_HOME}),
        electable=frozenset({MOVED, LEADERLESS, PREFERRED_DEAD}),
    )


def test_unclean_plan_elects_where_there_is_no_live_leader() -> None:
    assert plan_replica_election(context(), ALL, ElectionType.UNCLEAN) == ReplicaElectionPlan(
        unknown=frozenset({UNKNOWN}),
        being_deleted=frozenset({DELETING}),
        already_valid=frozenset({MOVED, AT_HOME, PREFERRED_DEAD}),
        electable=frozenset({LEADERLESS}),
    )


def test_preferred_election_moves_leadership_home_and_keeps_the_isr() -> None:
    ctx = context()
    electable = plan_replica_election(ctx, ALL, ElectionType.PREFERRED).electable
    change = partition_state_changes(
        ctx,
        sorted(electable),
        PartitionState.ONLINE_PARTITION,
        ElectionStrategy.PREFERRED_REPLICA,
        controller_id=CONTROLLER,
        unclean_leader_election_enabled=lambda topic: True,  # ignored by this strategy
    )
    # Elected: the preferred replica leads, the ISR is unchanged, the leader epoch moves on.
    new = change.leadership[MOVED].leader_and_isr
    assert (new.leader, new.isr, new.leader_epoch) == (1, (2, 1), 4)
    assert UpdatePartitionState(MOVED, change.leadership[MOVED], 0) in change.outputs
    assert AddLeaderAndIsr((1, 2), MOVED, is_new=False) in change.outputs
    # The preferred replica is dead: PREFERRED_LEADER_NOT_AVAILABLE for these two.
    assert set(change.failures) == {LEADERLESS, PREFERRED_DEAD}
    assert change.failures[PREFERRED_DEAD] == (
        f"Failed to elect leader for partition {PREFERRED_DEAD} under strategy "
        "PreferredReplicaPartitionLeaderElectionStrategy"
    )


def test_unclean_election_takes_a_live_replica_outside_the_isr() -> None:
    ctx = context()
    change = partition_state_changes(
        ctx,
        [LEADERLESS],
        PartitionState.ONLINE_PARTITION,
        ElectionStrategy.OFFLINE,
        controller_id=CONTROLLER,
        unclean_leader_election_enabled=lambda topic: True,
    )
    new = change.leadership[LEADERLESS].leader_and_isr
    assert (new.leader, new.isr, new.leader_epoch) == (2, (2,), 8)
    assert change.unclean == frozenset({LEADERLESS})
    assert change.partition_states == {LEADERLESS: PartitionState.ONLINE_PARTITION}
