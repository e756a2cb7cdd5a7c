"""``franz.controller.leader_imbalance``: Kafka 3.9's leader imbalance per preferred broker,
the auto rebalance's choice of partitions, and the failover's split of
``/admin/preferred_replica_election``, over hand-built controller contexts."""

from __future__ import annotations

from franz.controller.context import Broker, ControllerContext
from franz.controller.leader_imbalance import (
    BrokerLeaderImbalance,
    PendingPreferredElections,
    auto_rebalance_candidates,
    can_preferred_replica_be_leader,
    leader_imbalance,
    pending_preferred_replica_elections,
)
from franz.controller.model import (
    NO_LEADER,
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    TopicPartition,
)


def tp(partition: int, topic: str = "t") -> TopicPartition:
    return TopicPartition(topic, partition)


def context(
    partitions: dict[TopicPartition, tuple[tuple[int, ...], int, tuple[int, ...]] | None],
    live: tuple[int, ...] = (1, 2, 3),
) -> ControllerContext:
    """``partitions``: tp -> (assignment, leader, isr), or None for a partition whose state was
    never read (no leadership info)."""
    ctx = ControllerContext(epoch=2)
    ctx.add_live_brokers(Broker(b, epoch=10 + b) for b in live)
    for partition, spec in partitions.items():
        if spec is None:
            ctx.update_partition_replica_assignment(partition, (1, 2))
            continue
        assignment, leader, isr = spec
        ctx.update_partition_replica_assignment(partition, assignment)
        ctx.partition_leadership_info[partition] = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(leader, isr, leader_epoch=1), 1
        )
    return ctx


def test_imbalance_is_the_share_of_a_brokers_preferred_partitions_it_does_not_lead() -> None:
    ctx = context(
        {
            tp(0): ((1, 2), 1, (1, 2)),
            tp(1): ((1, 2), 2, (1, 2)),  # moved away from 1
            tp(2): ((1, 3), NO_LEADER, (1,)),  # offline: counts as not led by 1
            tp(3): None,  # never read: does not count as not led
            tp(4): ((2, 1), 2, (2, 1)),
        }
    )
    assert leader_imbalance(ctx) == {
        1: BrokerLeaderImbalance(
            1, frozenset({tp(0), tp(1), tp(2), tp(3)}), frozenset({tp(1), tp(2)})
        ),
        2: BrokerLeaderImbalance(2, frozenset({tp(4)}), frozenset()),
    }
    assert leader_imbalance(ctx)[1].ratio == 0.5
    assert leader_imbalance(ctx)[2].ratio == 0.0


def test_topics_queued_for_deletion_do_not_count() -> None:
    ctx = context({tp(0): ((1, 2), 2, (1, 2)), tp(0, "gone"): ((1, 2), 2, (1, 2))})
    ctx.topics_to_be_deleted.add("gone")
    assert leader_imbalance(ctx)[1].preferred == frozenset({tp(0)})


def test_the_threshold_is_strictly_above_the_percentage() -> None:
    ten = BrokerLeaderImbalance(1, frozenset(tp(p) for p in range(10)), frozenset({tp(0)}))
    assert ten.ratio == 0.1
    assert not ten.above(10)
    assert ten.above(9)
    assert BrokerLeaderImbalance(1, frozenset(), frozenset()).ratio == 0.0


def test_nothing_is_elected_when_balanced_or_within_the_allowed_imbalance() -> None:
    balanced = context(
        {tp(p): ((1 + p % 3, 1 + (p + 1) % 3), 1 + p % 3, (1, 2, 3)) for p in range(6)}
    )
    assert auto_rebalance_candidates(balanced, 10) == {}
    # One of ten partitions preferring broker 1 moved: 10 % is allowed, 9 % is not.
    parts = {tp(p): ((1, 2), 1, (1, 2)) for p in range(9)}
    parts[tp(9)] = ((1, 2), 2, (1, 2))
    assert auto_rebalance_candidates(context(parts), 10) == {}
    assert auto_rebalance_candidates(context(parts), 9) == {1: frozenset({tp(9)})}


def test_candidates_are_those_whose_preferred_replica_can_lead() -> None:
    ctx = context(
        {
            tp(0): ((1, 2), 2, (2, 1)),  # electable
            tp(1): ((1, 2), 2, (2,)),  # 1 not in the ISR
            tp(2): ((1, 3), NO_LEADER, (1,)),  # leaderless, 1 in the ISR and live: electable
            tp(3): ((4, 1), 1, (1, 4)),  # preferred replica 4 is dead
            tp(4): ((3, 1), 1, (1, 3)),  # 3 is shutting down
            tp(5): ((3, 2), 2, (2, 3)),  # 3 is shutting down
        }
    )
    ctx.shutting_down_broker_ids.add(3)
    assert can_preferred_replica_be_leader(ctx, tp(0))
    assert not can_preferred_replica_be_leader(ctx, tp(1))
    assert not can_preferred_replica_be_leader(ctx, tp(3))
    assert not can_preferred_replica_be_leader(ctx, tp(4))
    assert auto_rebalance_candidates(ctx, 10) == {
        1: frozenset({tp(0), tp(2)}),
        # above the threshold but nothing electable: an empty election, as Kafka's
        3: frozenset(),
        4: frozenset(),
    }


def test_a_replica_on_a_failed_log_dir_cannot_lead() -> None:
    ctx = context({tp(0): ((1, 2), 2, (2, 1))})
    ctx.replicas_on_offline_dirs[1] = {tp(0)}
    assert auto_rebalance_candidates(ctx, 10) == {1: frozenset()}


def test_partitions_being_reassigned_are_not_skipped_as_in_kafka_3() -> None:
    ctx = context({tp(0): ((1, 2), 2, (2, 1))})
    ctx.partitions_being_reassigned.add(tp(0))
    assert auto_rebalance_candidates(ctx, 10) == {1: frozenset({tp(0)})}


def test_failover_resumes_only_pending_preferred_elections() -> None:
    ctx = context(
        {
            tp(0): ((1, 2), 1, (1, 2)),  # completed: 1 leads
            tp(1): ((1, 2), 2, (1, 2)),  # pending
            tp(0, "gone"): ((1, 2), 2, (1, 2)),  # being deleted
        }
    )
    ctx.topics_to_be_deleted.add("gone")
    named = [tp(0), tp(1), tp(0, "gone"), tp(0, "unknown")]
    assert pending_preferred_replica_elections(ctx, named) == PendingPreferredElections(
        completed=frozenset({tp(0), tp(0, "unknown")}),
        skipped_for_deletion=frozenset({tp(0, "gone")}),
        pending=frozenset({tp(1)}),
    )
