"""The per-broker request batch (franz.controller.batch) against Kafka's
AbstractControllerBrokerRequestBatch rules."""

from __future__ import annotations

import uuid

import pytest

from franz.controller.batch import ControllerBrokerRequestBatch
from franz.controller.context import Broker, ControllerContext, EndPoint
from franz.controller.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    PartitionAndReplica,
    ReplicaAssignment,
    TopicPartition,
)
from franz.controller.requests import (
    ZERO_UUID,
    LeaderAndIsrLiveLeader,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from franz.controller.states import (
    PartitionState,
    ReplicaState,
    partition_state_changes,
    replica_state_changes,
)

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
TOPIC_ID = uuid.UUID("4d3c0a4e-8a5b-4f6e-9a41-0f2e3b6c7d8e")


def broker(b, rack=None):
    return Broker(b, 100 + b, (EndPoint("PLAINTEXT", f"h{b}", 9090 + b, 0),), rack)


def cluster(live=(1, 2, 3)):
    ctx = ControllerContext(epoch=4)
    ctx.add_live_brokers(broker(b) for b in live)
    ctx.add_topic("t", TOPIC_ID, {0: ReplicaAssignment((1, 2, 3)), 1: ReplicaAssignment((2, 3, 1))})
    return ctx


def lead(ctx, tp, leader, isr, epoch=1, zk=2):
    info = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr, epoch, partition_epoch=zk), 4)
    ctx.partition_leadership_info[tp] = info
    return info


def by_kind(requests, kind):
    return {r.broker_id: r.request for r in requests if isinstance(r.request, kind)}


def test_leader_and_isr_also_sends_update_metadata_to_every_live_broker():
    ctx = cluster()
    info = lead(ctx, T0, 1, (1, 2, 3))
    batch = ControllerBrokerRequestBatch(controller_id=9)
    batch.new_batch(ctx)
    batch.add_leader_and_isr_request_for_brokers(
        [1, 2, -1], T0, info, ctx.partition_full_replica_assignment(T0), is_new=True
    )
    requests = batch.send_requests_to_brokers(controller_epoch=4)
    lai = by_kind(requests, LeaderAndIsrRequest)
    assert set(lai) == {1, 2}
    req = lai[2]
    assert (req.controller_id, req.controller_epoch, req.broker_epoch, req.type) == (9, 4, 102, 0)
    (topic,) = req.topic_states
    assert (topic.topic_name, topic.topic_id) == ("t", TOPIC_ID)
    (state,) = topic.partition_states
    assert (state.leader, state.leader_epoch, state.isr, state.partition_epoch) == (
        1,
        1,
        (1, 2, 3),
        2,
    )
    assert state.is_new and state.replicas == (1, 2, 3)
    assert req.live_leaders == (LeaderAndIsrLiveLeader(broker_id=1, host_name="h1", port=9091),)
    um = by_kind(requests, UpdateMetadataRequest)
    assert set(um) == {1, 2, 3}
    assert um[3].broker_epoch == 103 and len(um[3].live_brokers) == 3
    (um_state,) = um[3].topic_states[0].partition_states
    assert (um_state.leader, um_state.zk_version, um_state.offline_replicas) == (1, 2, ())
    # Kafka's order: LeaderAndIsr, UpdateMetadata, StopReplica.
    kinds = [type(r.request).__name__ for r in requests]
    assert kinds == sorted(kinds, key=["LeaderAndIsrRequest", "UpdateMetadataRequest"].index)
    assert not batch.leader_and_isr_request_map and not batch.update_metadata_request_broker_set


def test_is_new_and_delete_partition_stick_once_set():
    ctx = cluster()
    info = lead(ctx, T0, 1, (1, 2, 3))
    batch = ControllerBrokerRequestBatch(controller_id=9)
    batch.new_batch(ctx)
    assignment = ctx.partition_full_replica_assignment(T0)
    batch.add_leader_and_isr_request_for_brokers([2], T0, info, assignment, is_new=True)
    batch.add_leader_and_isr_request_for_brokers([2], T0, info, assignment, is_new=False)
    batch.add_stop_replica_request_for_brokers([3], T0, delete_partition=True)
    batch.add_stop_replica_request_for_brokers([3], T0, delete_partition=False)
    assert batch.leader_and_isr_request_map[2][T0].is_new
    assert batch.stop_replica_request_map[3][T0].delete_partition


def test_new_batch_refuses_while_previous_is_unsent():
    ctx = cluster()
    batch = ControllerBrokerRequestBatch(controller_id=9)
    batch.new_batch(ctx)
    batch.add_stop_replica_request_for_brokers([1], T0, delete_partition=False)
    with pytest.raises(RuntimeError, match="batch is not empty while creating a new one"):
        batch.new_batch(ctx)


def test_topic_being_deleted_announced_with_leader_minus_two_and_epoch_minus_two():
    ctx = cluster()
    lead(ctx, T0, 1, (1, 2))
    ctx.queue_topic_deletion(["t"])
    batch = ControllerBrokerRequestBatch(controller_id=9)
    batch.new_batch(ctx)
    batch.add_update_metadata_request_for_brokers([1], {T0, T1})  # T1 has no leader: skipped
    batch.add_stop_replica_request_for_brokers([2], T0, delete_partition=True)
    requests = batch.send_requests_to_brokers(4)
    (um_state,) = by_kind(requests, UpdateMetadataRequest)[1].topic_states[0].partition_states
    assert (um_state.leader, um_state.isr) == (-2, (1, 2))
    stop = by_kind(requests, StopReplicaRequest)[2]
    (sr_state,) = stop.topic_states[0].partition_states
    assert (sr_state.leader_epoch, sr_state.delete_partition) == (-2, True)


def test_dead_brokers_get_nothing_and_offline_replicas_are_listed():
    ctx = cluster(live=(1, 2))
    info = lead(ctx, T0, 1, (1, 2))
    batch = ControllerBrokerRequestBatch(controller_id=9)
    batch.new_batch(ctx)
    batch.add_leader_and_isr_request_for_brokers(
        [1, 2, 3], T0, info, ctx.partition_full_replica_assignment(T0), is_new=False
    )
    batch.add_stop_replica_request_for_brokers([3], T0, delete_partition=False)
    requests = batch.send_requests_to_brokers(4)
    assert {r.broker_id for r in requests} == {1, 2}
    (um_state,) = by_kind(requests, UpdateMetadataRequest)[1].topic_states[0].partition_states
    assert um_state.offline_replicas == (3,)


def test_state_change_outputs_feed_the_batch_end_to_end():
    # A new topic goes online: LeaderAndIsr (isNew) to its ISR, UpdateMetadata to all; the
    # unknown topic id is sent as the zero uuid.
    ctx = cluster()
    ctx.topic_ids.clear()
    ctx.partition_states.update({T0: PartitionState.NEW_PARTITION})
    change = partition_state_changes(ctx, [T0], PartitionState.ONLINE_PARTITION, controller_id=9)
    change.apply(ctx)
    batch = ControllerBrokerRequestBatch(controller_id=9)
    batch.new_batch(ctx)
    batch.add(change.requests())
    requests = batch.send_requests_to_brokers(ctx.epoch)
    lai = by_kind(requests, LeaderAndIsrRequest)
    assert set(lai) == {1, 2, 3}
    assert lai[1].topic_states[0].topic_id == ZERO_UUID
    assert lai[1].topic_states[0].partition_states[0].leader_recovery_state == int(
        LeaderRecoveryState.RECOVERED
    )
    assert set(by_kind(requests, UpdateMetadataRequest)) == {1, 2, 3}


def test_offline_replica_end_to_end_stop_replica_and_shrunk_isr():
    ctx = cluster()
    lead(ctx, T0, 1, (1, 2, 3))
    ctx.replica_states[PartitionAndReplica(T0, 3)] = ReplicaState.ONLINE_REPLICA
    change = replica_state_changes(ctx, [PartitionAndReplica(T0, 3)], ReplicaState.OFFLINE_REPLICA)
    change.apply(ctx)
    batch = ControllerBrokerRequestBatch(controller_id=9)
    batch.new_batch(ctx)
    batch.add(change.requests())
    requests = batch.send_requests_to_brokers(ctx.epoch)
    stop = by_kind(requests, StopReplicaRequest)
    assert set(stop) == {3} and not stop[3].topic_states[0].partition_states[0].delete_partition
    lai = by_kind(requests, LeaderAndIsrRequest)
    assert set(lai) == {1, 2}
    state = lai[1].topic_states[0].partition_states[0]
    assert (state.leader, state.isr, state.leader_epoch, state.partition_epoch) == (1, (1, 2), 2, 3)


def test_new_topic_requests_carry_only_the_new_partitions():
    # Kafka's onNewPartitionCreation: LeaderAndIsr and UpdateMetadata name the new topic's
    # partitions only, however many partitions the cluster already has (each broker's
    # metadata cache merges them into what it knows).
    ctx = cluster()
    for tp in (T0, T1):
        lead(ctx, tp, tp.partition + 1, (1, 2, 3))
        ctx.partition_states[tp] = PartitionState.ONLINE_PARTITION
    new_id = uuid.UUID(int=7)
    ctx.add_topic("new", new_id, {0: ReplicaAssignment((3, 1, 2)), 1: ReplicaAssignment((1, 2, 3))})
    new = sorted(ctx.partitions_for_topic("new"))
    replicas = ctx.replicas_for_partitions(new)
    steps = (
        lambda: partition_state_changes(ctx, new, PartitionState.NEW_PARTITION, controller_id=9),
        lambda: replica_state_changes(ctx, replicas, ReplicaState.NEW_REPLICA),
        lambda: partition_state_changes(ctx, new, PartitionState.ONLINE_PARTITION, controller_id=9),
        lambda: replica_state_changes(ctx, replicas, ReplicaState.ONLINE_REPLICA),
    )
    requests = []
    for step in steps:
        change = step()
        assert not change.failures
        change.apply(ctx)
        batch = ControllerBrokerRequestBatch(controller_id=9)
        batch.new_batch(ctx)
        batch.add(change.requests())
        requests += batch.send_requests_to_brokers(ctx.epoch)
    update_metadata = [r for r in requests if isinstance(r.request, UpdateMetadataRequest)]
    assert sorted(r.broker_id for r in update_metadata) == [1, 2, 3]
    for r in requests:
        assert isinstance(r.request, (LeaderAndIsrRequest, UpdateMetadataRequest))
        assert [
            (t.topic_name, t.topic_id, sorted(p.partition_index for p in t.partition_states))
            for t in r.request.topic_states
        ] == [("new", new_id, [0, 1])]
