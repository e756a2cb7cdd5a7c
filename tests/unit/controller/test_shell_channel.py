"""``franz.controller.shell.channel``: the controller's requests over real loopback TCP to a
protocol peer that decodes them with ``franz.protocol``, and the events the answers become."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from franz.controller.batch import ControlRequest
from franz.controller.context import Broker, EndPoint
from franz.controller.events import (
    ControllerEvent,
    LeaderAndIsrResponseReceived,
    TopicDeletionStopReplicaResponseReceived,
    UpdateMetadataResponseReceived,
)
from franz.controller.model import TopicPartition
from franz.controller.requests import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaTopicState,
    UpdateMetadataRequest,
)
from franz.controller.shell.channel import ControllerChannelManager, decode_control_response
from franz.errors import ErrorCode
from franz.network.sender import SenderConfig
from franz.protocol.messages import build_response
from tests.support.control_peer import ControlPeer

TOPIC_ID = uuid.UUID("6f1f8a4e-0d52-4c47-9d8a-2b1f0c3e4d5a")


def leader_and_isr(broker_epoch: int = 42) -> LeaderAndIsrRequest:
    return LeaderAndIsrRequest(
        controller_id=0,
        controller_epoch=3,
        broker_epoch=broker_epoch,
        topic_states=(
            LeaderAndIsrTopicState(
                topic_name="t",
                topic_id=TOPIC_ID,
                partition_states=(
                    LeaderAndIsrPartitionState(
                        partition_index=0,
                        controller_epoch=3,
                        leader=1,
                        leader_epoch=4,
                        isr=(1, 2),
                        partition_epoch=5,
                        replicas=(1, 2),
                        is_new=True,
                    ),
                ),
            ),
        ),
        live_leaders=(),
    )


def stop_replica() -> StopReplicaRequest:
    return StopReplicaRequest(
        controller_id=0,
        controller_epoch=3,
        broker_epoch=42,
        topic_states=(
            StopReplicaTopicState(
                topic_name="t",
                partition_states=(
                    StopReplicaPartitionState(
                        partition_index=0, leader_epoch=-2, delete_partition=True
                    ),
                    StopReplicaPartitionState(partition_index=1, delete_partition=False),
                ),
            ),
        ),
    )


def test_leader_and_isr_errors_are_mapped_back_from_topic_ids_to_names() -> None:
    response: Any = build_response(
        4,
        7,
        {
            "error_code": 0,
            "topics": [
                {
                    "topic_id": TOPIC_ID,
                    "partition_errors": [{"partition_index": 0, "error_code": 56}],
                }
            ],
        },
    )
    event = decode_control_response(ControlRequest(1, leader_and_isr()), response)
    assert event == LeaderAndIsrResponseReceived(
        1, ErrorCode.NONE, {TopicPartition("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}
    )


def test_stop_replica_answers_report_only_the_partitions_asked_to_be_deleted() -> None:
    response: Any = build_response(
        5,
        4,
        {
            "error_code": 0,
            "partition_errors": [
                {"topic_name": "t", "partition_index": 0, "error_code": 0},
                {"topic_name": "t", "partition_index": 1, "error_code": 0},
            ],
        },
    )
    event = decode_control_response(ControlRequest(2, stop_replica()), response)
    assert event == TopicDeletionStopReplicaResponseReceived(
        2, ErrorCode.NONE, {TopicPartition("t", 0): ErrorCode.NONE}
    )


def test_requests_reach_the_broker_in_order_at_kafka_39_versions_and_answers_become_events() -> (
    None
):
    async def main() -> None:
        peer = await ControlPeer(1, "").serve()
        events: list[ControllerEvent] = []
        channel = ControllerChannelManager(events.append, SenderConfig(request_timeout=5.0))
        try:
            endpoint = EndPoint("PLAINTEXT", "127.0.0.1", peer.port, 0)
            channel.add_broker(Broker(1, 42, (endpoint,)))
            channel.add_broker(Broker(9, 1, (EndPoint("SSL", "127.0.0.1", 1, 1),)))
            assert channel.broker_ids == [1]  # no inter-broker listener: not reachable
            update = UpdateMetadataRequest(
                controller_id=0,
                controller_epoch=3,
                broker_epoch=42,
                topic_states=(),
                live_brokers=(),
            )
            channel.send(
                [
                    ControlRequest(1, leader_and_isr()),
                    ControlRequest(1, update),
                    ControlRequest(1, stop_replica()),
                    ControlRequest(9, update),  # not in the channel: dropped, logged
                ]
            )
            async with asyncio.timeout(10):
                while len(events) < 3:
                    await asyncio.sleep(0.01)
            assert [(r.api_key, r.api_version) for r in peer.received] == [(4, 7), (6, 8), (5, 4)]
            assert [r.request for r in peer.received] == [leader_and_isr(), update, stop_replica()]
            assert events == [
                LeaderAndIsrResponseReceived(
                    1, ErrorCode.NONE, {TopicPartition("t", 0): ErrorCode.NONE}
                ),
                UpdateMetadataResponseReceived(1, ErrorCode.NONE),
                TopicDeletionStopReplicaResponseReceived(
                    1, ErrorCode.NONE, {TopicPartition("t", 0): ErrorCode.NONE}
                ),
            ]
            await channel.remove_broker(1)
            assert channel.broker_ids == []
        finally:
            await channel.close()
            await peer.stop()

    asyncio.run(main())
