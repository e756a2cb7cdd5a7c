"""Leader election (franz.controller.election) against Kafka's rules and its test vectors."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from franz.controller.context import Broker, ControllerContext
from franz.controller.election import (
    ElectionStrategy,
    controlled_shutdown_partition_leader_election,
    elect,
    leader_for_controlled_shutdown,
    leader_for_offline,
    leader_for_preferred_replica,
    leader_for_reassign,
    offline_partition_leader_election,
    preferred_replica_partition_leader_election,
    reassign_partition_leader_election,
)
from franz.controller.model import (
    LeaderAndIsr,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicPartition,
)

TP = TopicPartition("t", 0)


def context(live, assignment, *, shutting_down=(), adding=(), removing=()):
    ctx = ControllerContext(epoch=5)
    ctx.add_live_brokers(Broker(b, epoch=100 + b) for b in live)
    ctx.shutting_down_broker_ids.update(shutting_down)
    ctx.update_partition_full_replica_assignment(
        TP, ReplicaAssignment(tuple(assignment), tuple(adding), tuple(removing))
    )
    return ctx


# -- PartitionLeaderElectionAlgorithmsTest, case for case ------------------------------------


def test_offline_partition_leader_election():
    assert offline_partition_leader_election([2, 4], [2, 4], {4}, False) == 4


def test_offline_last_isr_offline_unclean_disabled():
    assert offline_partition_leader_election([2, 4], [2], {4}, False) is None


def test_offline_last_isr_offline_unclean_enabled():
    assert offline_partition_leader_election([2, 4], [2], {4}, True) == 4


def test_reassign_partition_leader_election():
    assert reassign_partition_leader_election([2, 4], [2, 4], {4}) == 4


def test_reassign_with_no_live_isr():
    assert reassign_partition_leader_election([2, 4], [2], set()) is None


def test_reassign_with_empty_isr():
    assert reassign_partition_leader_election([2, 4], [], {2}) is None


def test_preferred_replica_partition_leader_election():
    assert preferred_replica_partition_leader_election([2, 4], [2, 4], {2, 4}) == 2


def test_preferred_replica_in_isr_not_live():
    assert preferred_replica_partition_leader_election([2, 4], [2], set()) is None


def test_preferred_replica_not_in_isr_live():
    assert preferred_replica_partition_leader_election([2, 4], [4], {2, 4}) is None


def test_preferred_replica_not_in_isr_not_live():
    assert preferred_replica_partition_leader_election([2, 4], [], set()) is None


def test_controlled_shutdown_partition_leader_election():
    assert controlled_shutdown_partition_leader_election([2, 4], [2, 4], {2, 4}, {2}) == 4


def test_controlled_shutdown_last_isr_shutting_down():
    assert controlled_shutdown_partition_leader_election([2, 4], [2], {2, 4}, {2}) is None


def test_controlled_shutdown_all_isr_simultaneously_shutdown():
    assert controlled_shutdown_partition_leader_election([2, 4], [2, 4], {2, 4}, {2, 4}) is None


def test_offline_prefers_assignment_order_not_isr_order():
    assert offline_partition_leader_election([3, 1, 2], [2, 1, 3], {1, 2}, False) == 1


# -- Election: the new LeaderAndIsr ----------------------------------------------------------


def test_offline_clean_election_keeps_online_isr_and_bumps_epoch_only():
    ctx = context(live=[2, 3], assignment=[1, 2, 3])
    old = LeaderAndIsr(1, (1, 2, 3), leader_epoch=7, partition_epoch=11)
    result = leader_for_offline(ctx, TP, old, False)
    assert result.leader_and_isr == LeaderAndIsr(2, (2, 3), leader_epoch=8, partition_epoch=11)
    assert result.live_replicas == (2, 3)
    assert not result.unclean


def test_offline_unclean_election_isr_is_leader_alone_and_recovering():
    ctx = context(live=[3], assignment=[1, 2, 3])
    old = LeaderAndIsr(1, (1,), leader_epoch=7, partition_epoch=11)
    assert leader_for_offline(ctx, TP, old, False).leader_and_isr is None
    result = leader_for_offline(ctx, TP, old, True)
    assert result.leader_and_isr == LeaderAndIsr(
        3, (3,), 8, LeaderRecoveryState.RECOVERING, partition_epoch=11
    )
    assert result.unclean
    old_ibp = leader_for_offline(ctx, TP, old, True, is_leader_recovery_supported=False)
    assert old_ibp.leader_and_isr is not None
    assert old_ibp.leader_and_isr.leader_recovery_state is LeaderRecoveryState.RECOVERED


def test_offline_without_state_elects_nothing():
    ctx = context(live=[1], assignment=[1])
    assert leader_for_offline(ctx, TP, None, True).leader_and_isr is None


def test_offline_replica_on_offline_log_dir_is_not_online():
    ctx = context(live=[1, 2], assignment=[1, 2])
    ctx.replicas_on_offline_dirs[1] = {TP}
    result = leader_for_offline(ctx, TP, LeaderAndIsr(1, (1, 2)), False)
    assert result.leader_and_isr is not None
    assert (result.leader_and_isr.leader, result.leader_and_isr.isr) == (2, (2,))


def test_reassign_elects_among_target_replicas_keeps_isr():
    # Replicas [1, 2, 3, 4] while moving from [1, 2] to [3, 4].
    ctx = context(live=[1, 2, 3, 4], assignment=[1, 2, 3, 4], adding=[3, 4], removing=[1, 2])
    old = LeaderAndIsr(1, (1, 2, 4), leader_epoch=3)
    result = leader_for_reassign(ctx, TP, old)
    assert result.leader_and_isr == LeaderAndIsr(4, (1, 2, 4), leader_epoch=4)
    assert result.live_replicas == (3, 4)


def test_preferred_replica_keeps_isr_and_tells_all_assigned():
    ctx = context(live=[1, 2], assignment=[1, 2, 3])
    old = LeaderAndIsr(2, (2, 1), leader_epoch=3)
    result = leader_for_preferred_replica(ctx, TP, old)
    assert result.leader_and_isr == LeaderAndIsr(1, (2, 1), leader_epoch=4)
    assert result.live_replicas == (1, 2, 3)


def test_controlled_shutdown_drops_shutting_down_from_isr():
    ctx = context(live=[1, 2, 3], assignment=[1, 2, 3], shutting_down=[1])
    old = LeaderAndIsr(1, (1, 2, 3), leader_epoch=3)
    result = leader_for_controlled_shutdown(ctx, TP, old)
    assert result.leader_and_isr == LeaderAndIsr(2, (2, 3), leader_epoch=4)
    assert result.live_replicas == (1, 2, 3)  # shutting-down brokers still hear about it


def test_elect_dispatches_on_strategy():
    ctx = context(live=[1, 2], assignment=[1, 2], shutting_down=[2])
    old = LeaderAndIsr(2, (1, 2))
    assert elect(ctx, ElectionStrategy.PREFERRED_REPLICA, TP, old).leader_and_isr is not None
    shutdown = elect(ctx, ElectionStrategy.CONTROLLED_SHUTDOWN, TP, old).leader_and_isr
    assert shutdown is not None and shutdown.isr == (1,)


@settings(max_examples=300, deadline=None)
@given(
    assignment=st.lists(st.integers(0, 7), min_size=1, max_size=5, unique=True),
    data=st.data(),
)
def test_elected_leader_is_live_and_in_isr_unless_unclean(assignment, data):
    isr = data.draw(st.lists(st.sampled_from(assignment), unique=True))
    live = data.draw(st.sets(st.integers(0, 7)))
    unclean_allowed = data.draw(st.booleans())
    ctx = context(live=sorted(live), assignment=assignment)
    old = LeaderAndIsr(assignment[0], tuple(isr), leader_epoch=4, partition_epoch=9)
    for strategy in ElectionStrategy:
        result = elect(ctx, strategy, TP, old, unclean_leader_election_enabled=unclean_allowed)
        new = result.leader_and_isr
        if new is None:
            continue
        assert new.leader in live
        assert new.leader_epoch == 5 and new.partition_epoch == 9
        if result.unclean:
            assert strategy is ElectionStrategy.OFFLINE and unclean_allowed
            assert new.isr == (new.leader,)
        else:
            assert new.leader in isr
            assert new.leader in new.isr
