"""ControllerContext (franz.controller.context): Kafka's helper queries."""

from __future__ import annotations

import uuid

from franz.controller.context import Broker, ControllerContext
from franz.controller.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaAssignment,
    TopicPartition,
)

A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)


def cluster():
    ctx = ControllerContext(epoch=3)
    ctx.add_live_brokers(Broker(b, epoch=b * 10) for b in (1, 2, 3))
    ctx.add_topic("a", uuid.uuid4(), {0: ReplicaAssignment((1, 2)), 1: ReplicaAssignment((2, 3))})
    ctx.add_topic("b", uuid.uuid4(), {0: ReplicaAssignment((3,))})
    return ctx


def lead(ctx, tp, leader, epoch=5):
    ctx.partition_leadership_info[tp] = LeaderIsrAndControllerEpoch(
        LeaderAndIsr(leader, (leader,), epoch), 3
    )


def test_live_brokers_exclude_shutting_down_unless_asked():
    ctx = cluster()
    ctx.shutting_down_broker_ids.add(2)
    assert ctx.live_broker_ids == {1, 3}
    assert ctx.live_or_shutting_down_broker_ids == {1, 2, 3}
    assert not ctx.is_replica_online(2, A0)
    assert ctx.is_replica_online(2, A0, include_shutting_down_brokers=True)
    assert ctx.live_broker_epochs() == {1: 10, 2: 20, 3: 30}
    ctx.remove_live_brokers([2])
    assert 2 not in ctx.shutting_down_broker_ids and 2 not in ctx.live_brokers


def test_replica_on_offline_log_dir_is_offline():
    ctx = cluster()
    ctx.replicas_on_offline_dirs[1] = {A0}
    assert not ctx.is_replica_online(1, A0)
    assert ctx.is_replica_online(1, A1)
    assert PartitionAndReplica(A0, 1) not in ctx.all_live_replicas()


def test_partitions_and_replicas_on_brokers():
    ctx = cluster()
    assert ctx.partitions_on_broker(3) == {A1, B0}
    assert ctx.replicas_on_brokers([1, 3]) == {
        PartitionAndReplica(A0, 1), PartitionAndReplica(A1, 3), PartitionAndReplica(B0, 3),
    }  # fmt: skip
    assert ctx.replicas_for_topic("b") == {PartitionAndReplica(B0, 3)}
    assert ctx.all_partitions() == {A0, A1, B0}
    assert ctx.partition_replica_assignment(TopicPartition("nope", 0)) == ()


def test_partition_leaders_on_broker_skip_single_replica_and_deleted_topics():
    ctx = cluster()
    lead(ctx, A1, 3)
    lead(ctx, B0, 3)  # one replica: nothing to move on controlled shutdown
    assert ctx.partition_leaders_on_broker(3) == {A1}
    ctx.queue_topic_deletion(["a"])
    assert ctx.partition_leaders_on_broker(3) == set()


def test_partitions_with_offline_leader():
    ctx = cluster()
    lead(ctx, A0, 1)
    lead(ctx, A1, 9)
    assert ctx.partitions_with_offline_leader() == {A1}


def test_leader_epoch_minus_two_during_delete_minus_one_when_unknown():
    ctx = cluster()
    lead(ctx, A0, 1, epoch=7)
    assert ctx.leader_epoch(A0) == 7
    assert ctx.leader_epoch(A1) == -1
    ctx.queue_topic_deletion(["a"])
    assert ctx.leader_epoch(A0) == -2


def test_deletion_eligibility_and_remove_topic():
    ctx = cluster()
    lead(ctx, A0, 1)
    ctx.queue_topic_deletion(["a"])
    assert ctx.is_topic_eligible_for_deletion("a")
    ctx.begin_topic_deletion(["a"])
    assert ctx.is_topic_deletion_in_progress("a") and not ctx.is_topic_eligible_for_deletion("a")
    ctx.remove_topic("a")
    assert ctx.all_topics == {"b"} and A0 not in ctx.partition_leadership_info
    assert not ctx.is_topic_queued_up_for_deletion("a") and "a" not in ctx.topic_ids


def test_update_replica_assignment_keeps_reassignment_fields():
    ctx = cluster()
    ctx.update_partition_full_replica_assignment(A0, ReplicaAssignment((1, 2, 3), (3,), (1,)))
    ctx.update_partition_replica_assignment(A0, (1, 2, 3, 4))
    full = ctx.partition_full_replica_assignment(A0)
    assert full == ReplicaAssignment((1, 2, 3, 4), (3,), (1,))
    assert full.target_replicas == (2, 3, 4) and full.origin_replicas == (1, 2, 4)
