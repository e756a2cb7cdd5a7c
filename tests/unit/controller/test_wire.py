"""franz.controller.wire: the controller's request values to the wire classes and back,
through the broker's decode path (request header, length guard, kio's reader)."""

from __future__ import annotations

import uuid

import pytest

from franz.controller.batch import ControllerBrokerRequestBatch
from franz.controller.context import Broker, ControllerContext, EndPoint
from franz.controller.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)
from franz.controller.requests import (
    ZERO_UUID,
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaTopicState,
)
from franz.controller.wire import from_wire, to_wire
from franz.protocol.headers import parse_request_header
from franz.protocol.inter_broker.leader_and_isr import v7 as lai7
from franz.protocol.inter_broker.stop_replica import v4 as sr4
from franz.protocol.messages import decode_request, encode_request

TOPIC_ID = uuid.UUID("4d3c0a4e-8a5b-4f6e-9a41-0f2e3b6c7d8e")
T0 = TopicPartition("t", 0)


def over_the_wire(request):
    payload = encode_request(to_wire(request), correlation_id=1, client_id="controller")
    header = parse_request_header(payload)
    assert (header.api_key, header.api_version) == (request.API_KEY, request.VERSION)
    return decode_request(header.api_key, header.api_version, bytearray(payload), header.size)


def leader_and_isr(topic_id=TOPIC_ID):
    state = LeaderAndIsrPartitionState(
        partition_index=3,
        controller_epoch=4,
        leader=1,
        leader_epoch=7,
        isr=(1, 2),
        partition_epoch=9,
        replicas=(1, 2, 3),
        adding_replicas=(3,),
        is_new=True,
        leader_recovery_state=1,
    )
    return LeaderAndIsrRequest(
        controller_id=9,
        controller_epoch=4,
        broker_epoch=101,
        topic_states=(
            LeaderAndIsrTopicState(topic_name="t", topic_id=topic_id, partition_states=(state,)),
        ),
        live_leaders=(LeaderAndIsrLiveLeader(broker_id=1, host_name="h1", port=9091),),
    )


def test_leader_and_isr_round_trips_through_the_wire_classes():
    request = leader_and_isr()
    wire = to_wire(request)
    assert type(wire) is lai7.LeaderAndIsrRequest
    (topic,) = wire.topic_states
    assert type(topic.partition_states[0]) is lai7.LeaderAndIsrPartitionState
    assert topic.partition_states[0].leader_recovery_state == 1
    decoded = over_the_wire(request)
    assert decoded == wire
    assert from_wire(decoded) == request


def test_zero_topic_id_is_none_on_the_wire_and_zero_again_after():
    request = leader_and_isr(topic_id=ZERO_UUID)
    assert to_wire(request).topic_states[0].topic_id is None
    assert from_wire(over_the_wire(request)) == request


def test_stop_replica_round_trips():
    request = StopReplicaRequest(
        controller_id=9,
        controller_epoch=4,
        broker_epoch=101,
        topic_states=(
            StopReplicaTopicState(
                topic_name="t",
                partition_states=(
                    StopReplicaPartitionState(
                        partition_index=0, leader_epoch=-2, delete_partition=True
                    ),
                ),
            ),
        ),
    )
    assert type(to_wire(request)) is sr4.StopReplicaRequest
    assert from_wire(over_the_wire(request)) == request


def test_the_batchs_requests_round_trip():
    ctx = ControllerContext(epoch=4)
    ctx.add_live_brokers(
        Broker(b, 100 + b, (EndPoint("PLAINTEXT", f"h{b}", 9090 + b, 0),), "r1" if b == 1 else None)
        for b in (1, 2, 3)
    )
    ctx.add_topic("t", TOPIC_ID, {0: ReplicaAssignment((1, 2, 3))})
    info = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, (1, 2, 3), 1, partition_epoch=2), 4)
    ctx.partition_leadership_info[T0] = info
    batch = ControllerBrokerRequestBatch(controller_id=9)
    batch.new_batch(ctx)
    batch.add_leader_and_isr_request_for_brokers(
        [1, 2], T0, info, ctx.partition_full_replica_assignment(T0), is_new=True
    )
    batch.add_stop_replica_request_for_brokers([3], T0, delete_partition=False)
    requests = [r.request for r in batch.send_requests_to_brokers(controller_epoch=4)]
    kinds = {type(r).__name__ for r in requests}
    assert kinds == {"LeaderAndIsrRequest", "UpdateMetadataRequest", "StopReplicaRequest"}
    for request in requests:
        assert from_wire(over_the_wire(request)) == request


def test_from_wire_reads_older_versions_and_refuses_other_apis():
    from franz.protocol.inter_broker.controlled_shutdown import v3 as cs3
    from franz.protocol.inter_broker.leader_and_isr import v6 as lai6

    entity = lai6.LeaderAndIsrRequest(
        controller_id=1,
        controller_epoch=1,
        broker_epoch=9,
        type=0,
        topic_states=(),
        live_leaders=(),
    )
    assert from_wire(entity) == LeaderAndIsrRequest(
        controller_id=1, controller_epoch=1, broker_epoch=9, topic_states=(), live_leaders=()
    )
    shutdown = cs3.ControlledShutdownRequest(broker_id=1, broker_epoch=2)
    with pytest.raises(ValueError, match="no controller value"):
        from_wire(shutdown)
