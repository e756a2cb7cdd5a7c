"""The partition and replica state machines (franz.controller.states) against Kafka's rules."""

from __future__ import annotations

import itertools

import pytest

from franz.controller.context import Broker, ControllerContext
from franz.controller.election import ElectionStrategy
from franz.controller.model import (
    NO_LEADER,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaAssignment,
    TopicPartition,
)
from franz.controller.states import (
    VALID_PREVIOUS_PARTITION_STATES,
    VALID_PREVIOUS_REPLICA_STATES,
    AddLeaderAndIsr,
    AddStopReplica,
    AddUpdateMetadata,
    CreatePartitionState,
    PartitionState,
    ReplicaState,
    UpdatePartitionState,
    partition_state_changes,
    replica_state_changes,
    trigger_online_partition_state_change,
)

P = PartitionState
R = ReplicaState
T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
CONTROLLER = 9

# Kafka's validPreviousStates (PartitionStateMachine.scala, ReplicaStateMachine.scala), written
# out independently as (from, to) pairs.
KAFKA_PARTITION_EDGES = {
    (P.NON_EXISTENT_PARTITION, P.NEW_PARTITION),
    *((s, P.ONLINE_PARTITION) for s in (P.NEW_PARTITION, P.ONLINE_PARTITION, P.OFFLINE_PARTITION)),
    *((s, P.OFFLINE_PARTITION) for s in (P.NEW_PARTITION, P.ONLINE_PARTITION, P.OFFLINE_PARTITION)),
    (P.OFFLINE_PARTITION, P.NON_EXISTENT_PARTITION),
}
_LIVE = (R.NEW_REPLICA, R.ONLINE_REPLICA, R.OFFLINE_REPLICA, R.REPLICA_DELETION_INELIGIBLE)
KAFKA_REPLICA_EDGES = {
    (R.NON_EXISTENT_REPLICA, R.NEW_REPLICA),
    *((s, R.ONLINE_REPLICA) for s in _LIVE),
    *((s, R.OFFLINE_REPLICA) for s in _LIVE),
    (R.OFFLINE_REPLICA, R.REPLICA_DELETION_STARTED),
    (R.REPLICA_DELETION_STARTED, R.REPLICA_DELETION_SUCCESSFUL),
    (R.OFFLINE_REPLICA, R.REPLICA_DELETION_INELIGIBLE),
    (R.REPLICA_DELETION_STARTED, R.REPLICA_DELETION_INELIGIBLE),
    (R.REPLICA_DELETION_SUCCESSFUL, R.NON_EXISTENT_REPLICA),
}


def test_valid_previous_states_are_kafkas():
    partition_edges = {(a, b) for b, prev in VALID_PREVIOUS_PARTITION_STATES.items() for a in prev}
    assert partition_edges == KAFKA_PARTITION_EDGES
    replica_edges = {(a, b) for b, prev in VALID_PREVIOUS_REPLICA_STATES.items() for a in prev}
    assert replica_edges == KAFKA_REPLICA_EDGES
    assert [s.value for s in R] == [1, 2, 3, 4, 5, 6, 7]  # Kafka's state bytes
    assert [str(s) for s in P] == [
        "NewPartition", "OnlinePartition", "OfflinePartition", "NonExistentPartition",
    ]  # fmt: skip


def cluster(live=(1, 2, 3), partitions=(T0,), replicas=(1, 2, 3)):
    ctx = ControllerContext(epoch=4)
    ctx.add_live_brokers(Broker(b, epoch=10 * b) for b in live)
    for tp in partitions:
        ctx.update_partition_full_replica_assignment(tp, ReplicaAssignment(tuple(replicas)))
    return ctx


def with_leader(ctx, tp, leader, isr, *, leader_epoch=3, zk_version=6, controller_epoch=4):
    lai = LeaderAndIsr(leader, tuple(isr), leader_epoch, partition_epoch=zk_version)
    ctx.partition_leadership_info[tp] = LeaderIsrAndControllerEpoch(lai, controller_epoch)
    ctx.partition_states[tp] = P.ONLINE_PARTITION


def online(ctx, partitions, strategy=None, **kw):
    return partition_state_changes(
        ctx, partitions, P.ONLINE_PARTITION, strategy, controller_id=CONTROLLER, **kw
    )


@pytest.mark.parametrize(("current", "target"), list(itertools.product(P, P)))
def test_partition_transition_allowed_exactly_by_the_table(current, target):
    ctx = cluster()
    with_leader(ctx, T0, 1, (1, 2, 3))
    ctx.partition_states[T0] = current
    change = partition_state_changes(
        ctx, [T0], target, ElectionStrategy.OFFLINE, controller_id=CONTROLLER
    )
    if (current, target) in KAFKA_PARTITION_EDGES:
        assert change.partition_states[T0] is target and not change.failures
    else:
        assert T0 not in change.partition_states
        assert change.failures[T0].startswith("Partition t-0 should be in one of ")


def test_new_partition_goes_online_with_first_live_replica_and_live_isr():
    ctx = cluster(live=(2, 3), replicas=(1, 2, 3))
    new = partition_state_changes(ctx, [T0], P.NEW_PARTITION, controller_id=CONTROLLER)
    assert new.partition_states == {T0: P.NEW_PARTITION} and not new.outputs
    new.apply(ctx)
    change = online(ctx, [T0])
    expected = LeaderIsrAndControllerEpoch(LeaderAndIsr(2, (2, 3)), 4)
    assert change.outputs == (
        CreatePartitionState(T0, expected),
        AddLeaderAndIsr((2, 3), T0, is_new=True),
    )
    change.apply(ctx)
    assert ctx.partition_states[T0] is P.ONLINE_PARTITION
    assert ctx.partition_leadership_info[T0] == expected
    assert (
        expected.leader_and_isr.leader_epoch == 0 and expected.leader_and_isr.partition_epoch == 0
    )


def test_new_partition_without_live_replica_stays_new_with_kafkas_message():
    ctx = cluster(live=(5,), replicas=(1, 2))
    ctx.partition_states[T0] = P.NEW_PARTITION
    change = online(ctx, [T0])
    assert change.failures[T0] == (
        "Controller 9 epoch 4 encountered error during state change of partition t-0 from New "
        "to Online, assigned replicas are [1,2], live brokers are [5]. No assigned replica is "
        "alive."
    )
    assert T0 not in change.partition_states and not change.outputs


def test_offline_partition_election_writes_conditionally_and_informs_live_replicas():
    ctx = cluster(live=(2, 3))
    with_leader(ctx, T0, 1, (1, 2, 3), leader_epoch=3, zk_version=6)
    ctx.partition_states[T0] = P.OFFLINE_PARTITION
    change = online(ctx, [T0], ElectionStrategy.OFFLINE)
    written = LeaderIsrAndControllerEpoch(LeaderAndIsr(2, (2, 3), 4, partition_epoch=7), 4)
    assert change.outputs == (
        UpdatePartitionState(T0, written, expected_zk_version=6),
        AddLeaderAndIsr((2, 3), T0, is_new=False),
    )
    assert change.leadership == {T0: written}


def test_election_aborts_when_a_newer_controller_wrote_the_state():
    ctx = cluster()
    with_leader(ctx, T0, 1, (1, 2), controller_epoch=5)
    change = online(ctx, [T0], ElectionStrategy.PREFERRED_REPLICA)
    assert "already written by another controller" in change.failures[T0]
    assert "elected with epoch 5." in change.failures[T0]
    assert not change.outputs


def test_no_eligible_leader_is_a_failure_naming_kafkas_strategy():
    ctx = cluster(live=(3,))
    with_leader(ctx, T0, 1, (1,))
    change = online(ctx, [T0], ElectionStrategy.OFFLINE)
    assert change.failures[T0] == (
        "Failed to elect leader for partition t-0 under strategy "
        "OfflinePartitionLeaderElectionStrategy"
    )
    unclean = online(ctx, [T0], ElectionStrategy.OFFLINE, unclean_leader_election_enabled=bool)
    assert unclean.unclean == {T0}
    assert unclean.leadership[T0].leader_and_isr.isr == (3,)


def test_trigger_online_skips_topics_queued_for_deletion():
    ctx = cluster(partitions=(T0, TopicPartition("gone", 0)))
    ctx.partition_states[T0] = P.NEW_PARTITION
    ctx.partition_states[TopicPartition("gone", 0)] = P.NEW_PARTITION
    ctx.queue_topic_deletion(["gone"])
    change = trigger_online_partition_state_change(ctx, controller_id=CONTROLLER)
    assert set(change.partition_states) == {T0}


def test_without_drops_a_partition_whose_write_failed():
    ctx = cluster(partitions=(T0, T1))
    ctx.partition_states.update({T0: P.NEW_PARTITION, T1: P.NEW_PARTITION})
    change = online(ctx, [T0, T1]).without([T1])
    assert set(change.partition_states) == {T0} and set(change.leadership) == {T0}
    assert all(T1 not in (getattr(o, "topic_partition", None),) for o in change.outputs)


# -- replicas --------------------------------------------------------------------------------


def replica(broker, tp=T0):
    return PartitionAndReplica(tp, broker)


def test_offline_replica_leaves_isr_loses_leadership_and_gets_stop_replica():
    ctx = cluster()
    with_leader(ctx, T0, 1, (1, 2, 3), leader_epoch=3, zk_version=6)
    ctx.replica_states[replica(1)] = R.ONLINE_REPLICA
    change = replica_state_changes(ctx, [replica(1)], R.OFFLINE_REPLICA)
    written = LeaderIsrAndControllerEpoch(LeaderAndIsr(NO_LEADER, (2, 3), 4, partition_epoch=7), 4)
    assert change.outputs == (
        AddStopReplica((1,), T0, delete_partition=False),
        UpdatePartitionState(T0, written, expected_zk_version=6),
        AddLeaderAndIsr((2, 3), T0, is_new=False),
    )
    change.apply(ctx)
    assert ctx.replica_states[replica(1)] is R.OFFLINE_REPLICA
    assert ctx.partition_leadership_info[T0] == written


def test_offline_replica_keeps_a_single_member_isr():
    ctx = cluster()
    with_leader(ctx, T0, 1, (1,))
    ctx.replica_states[replica(1)] = R.ONLINE_REPLICA
    change = replica_state_changes(ctx, [replica(1)], R.OFFLINE_REPLICA)
    (new,) = change.leadership.values()
    assert (new.leader_and_isr.leader, new.leader_and_isr.isr) == (NO_LEADER, (1,))


def test_offline_replica_of_topic_being_deleted_gets_no_leader_and_isr():
    ctx = cluster()
    with_leader(ctx, T0, 1, (1, 2))
    ctx.replica_states[replica(3)] = R.ONLINE_REPLICA
    ctx.queue_topic_deletion(["t"])
    change = replica_state_changes(ctx, [replica(3)], R.OFFLINE_REPLICA)
    # 3 is not in the ISR: no write; topic being deleted: no LeaderAndIsr.
    assert change.outputs == (AddStopReplica((3,), T0, delete_partition=False),)


def test_offline_replica_without_leadership_sends_update_metadata_to_all():
    ctx = cluster()
    ctx.replica_states[replica(2)] = R.NEW_REPLICA
    change = replica_state_changes(ctx, [replica(2)], R.OFFLINE_REPLICA)
    assert change.outputs[-1] == AddUpdateMetadata((1, 2, 3), frozenset({T0}))


def test_new_replica_refused_when_it_is_the_leader():
    ctx = cluster()
    with_leader(ctx, T0, 1, (1,))
    change = replica_state_changes(ctx, [replica(1), replica(4)], R.NEW_REPLICA)
    assert "cannot be moved to NewReplica state" in change.failures[replica(1)]
    assert change.replica_states[replica(4)] is R.NEW_REPLICA
    assert change.outputs == (AddLeaderAndIsr((4,), T0, is_new=True),)


def test_new_replica_online_joins_the_assignment():
    ctx = cluster(replicas=(1, 2))
    ctx.replica_states[replica(3)] = R.NEW_REPLICA
    change = replica_state_changes(ctx, [replica(3)], R.ONLINE_REPLICA)
    change.apply(ctx)
    assert ctx.partition_replica_assignment(T0) == (1, 2, 3)


def test_deletion_path_ends_with_replica_forgotten():
    ctx = cluster()
    ctx.replica_states[replica(2)] = R.OFFLINE_REPLICA
    started = replica_state_changes(ctx, [replica(2)], R.REPLICA_DELETION_STARTED)
    assert started.outputs == (AddStopReplica((2,), T0, delete_partition=True),)
    started.apply(ctx)
    replica_state_changes(ctx, [replica(2)], R.REPLICA_DELETION_SUCCESSFUL).apply(ctx)
    gone = replica_state_changes(ctx, [replica(2)], R.NON_EXISTENT_REPLICA)
    gone.apply(ctx)
    assert replica(2) not in ctx.replica_states
    assert ctx.partition_replica_assignment(T0) == (1, 3)


@pytest.mark.parametrize(("current", "target"), list(itertools.product(R, R)))
def test_replica_transition_allowed_exactly_by_the_table(current, target):
    ctx = cluster()
    ctx.replica_states[replica(2)] = current
    change = replica_state_changes(ctx, [replica(2)], target)
    if (current, target) in KAFKA_REPLICA_EDGES:
        assert not change.failures
    else:
        assert "states before moving to" in change.failures[replica(2)]
