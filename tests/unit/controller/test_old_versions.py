"""``franz.controller.old_versions``: the older controller requests, read as the newest with
Kafka's defaults, after a trip through the wire (encoded and decoded by the generated
classes of ``franz.protocol.inter_broker``)."""

from __future__ import annotations

import uuid

import pytest

from franz.controller.requests import (
    ZERO_UUID,
    LeaderAndIsrLiveLeader,
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    LeaderAndIsrTopicState,
    StopReplicaPartitionState,
    StopReplicaRequest,
    StopReplicaTopicState,
    UpdateMetadataBroker,
    UpdateMetadataEndpoint,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
    UpdateMetadataTopicState,
)
from franz.controller.wire import from_wire
from franz.protocol.headers import parse_request_header
from franz.protocol.messages import build, decode_request, encode_request, request_type

TOPIC_ID = uuid.UUID("0f3b0a5e-8c1d-4a47-9d2b-7d5f7f1c2a10")


def over_the_wire(api: int, version: int, data: dict[str, object]) -> object:
    payload = encode_request(build(request_type(api, version), data), 7, "controller")
    header = parse_request_header(payload)
    assert (header.api_key, header.api_version) == (api, version)
    return decode_request(api, version, bytearray(payload), header.size)


LAI_PARTITION = {
    "controller_epoch": 3,
    "leader": 2,
    "leader_epoch": 9,
    "isr": [2, 1],
    "partition_epoch": 4,
    "replicas": [2, 1],
    "adding_replicas": [1],
    "removing_replicas": [],
    "is_new": True,
    "leader_recovery_state": 1,
}


def lai_request(version: int) -> dict[str, object]:
    """Partitions a-0, b-0, a-1 (ungrouped: a's two are not adjacent)."""
    ungrouped = [
        {"topic_name": t, "partition_index": p, **LAI_PARTITION}
        for t, p in (("a", 0), ("b", 0), ("a", 1))
    ]
    grouped = [
        {
            "topic_name": "a",
            "topic_id": TOPIC_ID,
            "partition_states": [{"partition_index": p, **LAI_PARTITION} for p in (0, 1)],
        },
        {
            "topic_name": "b",
            "topic_id": TOPIC_ID,
            "partition_states": [{"partition_index": 0, **LAI_PARTITION}],
        },
    ]
    return {
        "controller_id": 1,
        "controller_epoch": 3,
        "broker_epoch": 77,
        "type": 1,
        "ungrouped_partition_states": ungrouped,
        "topic_states": grouped,
        "live_leaders": [{"broker_id": 2, "host_name": "h", "port": 9092}],
    }


@pytest.mark.parametrize("version", range(8))
def test_leader_and_isr_versions_read_as_v7(version: int) -> None:
    def state(index: int) -> LeaderAndIsrPartitionState:
        return LeaderAndIsrPartitionState(
            partition_index=index,
            controller_epoch=3,
            leader=2,
            leader_epoch=9,
            isr=(2, 1),
            partition_epoch=4,
            replicas=(2, 1),
            adding_replicas=(1,) if version >= 3 else (),
            is_new=version >= 1,
            leader_recovery_state=1 if version >= 6 else 0,
        )

    topic_id = TOPIC_ID if version >= 5 else ZERO_UUID
    assert from_wire(over_the_wire(4, version, lai_request(version))) == LeaderAndIsrRequest(
        controller_id=1,
        controller_epoch=3,
        broker_epoch=77 if version >= 2 else -1,
        type=1 if version >= 5 else 0,
        topic_states=(
            LeaderAndIsrTopicState(
                topic_name="a", topic_id=topic_id, partition_states=(state(0), state(1))
            ),
            LeaderAndIsrTopicState(topic_name="b", topic_id=topic_id, partition_states=(state(0),)),
        ),
        live_leaders=(LeaderAndIsrLiveLeader(broker_id=2, host_name="h", port=9092),),
    )


@pytest.mark.parametrize("version", range(9))
def test_update_metadata_versions_read_as_v8(version: int) -> None:
    partition = {
        "partition_index": 0,
        "controller_epoch": 3,
        "leader": 2,
        "leader_epoch": 9,
        "isr": [2],
        "zk_version": 5,
        "replicas": [2, 3],
        "offline_replicas": [3],
    }
    data = {
        "controller_id": 1,
        "controller_epoch": 3,
        "broker_epoch": 77,
        "ungrouped_partition_states": [{"topic_name": "a", **partition}],
        "topic_states": [
            {"topic_name": "a", "topic_id": TOPIC_ID, "partition_states": [partition]}
        ],
        "live_brokers": [
            {
                "id": 2,
                "v0_host": "h",
                "v0_port": 9092,
                "endpoints": [
                    {"port": 9093, "host": "s", "listener": "INTERNAL", "security_protocol": 1}
                ],
                "rack": "r1",
            }
        ],
    }
    if version == 0:
        endpoint = UpdateMetadataEndpoint(
            port=9092, host="h", listener="PLAINTEXT", security_protocol=0
        )
    else:  # v1-2: the listener is named after the security protocol (SSL here)
        listener = "INTERNAL" if version >= 3 else "SSL"
        endpoint = UpdateMetadataEndpoint(
            port=9093, host="s", listener=listener, security_protocol=1
        )
    assert from_wire(over_the_wire(6, version, data)) == UpdateMetadataRequest(
        controller_id=1,
        controller_epoch=3,
        broker_epoch=77 if version >= 5 else -1,
        topic_states=(
            UpdateMetadataTopicState(
                topic_name="a",
                topic_id=TOPIC_ID if version >= 7 else ZERO_UUID,
                partition_states=(
                    UpdateMetadataPartitionState(
                        partition_index=0,
                        controller_epoch=3,
                        leader=2,
                        leader_epoch=9,
                        isr=(2,),
                        zk_version=5,
                        replicas=(2, 3),
                        offline_replicas=(3,) if version >= 4 else (),
                    ),
                ),
            ),
        ),
        live_brokers=(
            UpdateMetadataBroker(id=2, endpoints=(endpoint,), rack="r1" if version >= 2 else None),
        ),
    )


@pytest.mark.parametrize("version", range(5))
def test_stop_replica_versions_read_as_v4(version: int) -> None:
    data = {
        "controller_id": 1,
        "controller_epoch": 3,
        "broker_epoch": 77,
        "delete_partitions": True,
        "ungrouped_partitions": [
            {"topic_name": "a", "partition_index": 0},
            {"topic_name": "b", "partition_index": 2},
            {"topic_name": "a", "partition_index": 1},
        ],
        "topics": [
            {"name": "a", "partition_indexes": [0, 1]},
            {"name": "b", "partition_indexes": [2]},
        ],
        "topic_states": [
            {
                "topic_name": "a",
                "partition_states": [
                    {"partition_index": 0, "leader_epoch": 4, "delete_partition": True},
                    {"partition_index": 1, "leader_epoch": 4, "delete_partition": True},
                ],
            },
            {
                "topic_name": "b",
                "partition_states": [
                    {"partition_index": 2, "leader_epoch": 4, "delete_partition": True}
                ],
            },
        ],
    }
    epoch = 4 if version >= 3 else -1  # below v3 no leader epoch: -1, which always stops

    def states(*indexes: int) -> tuple[StopReplicaPartitionState, ...]:
        return tuple(
            StopReplicaPartitionState(partition_index=i, leader_epoch=epoch, delete_partition=True)
            for i in indexes
        )

    assert from_wire(over_the_wire(5, version, data)) == StopReplicaRequest(
        controller_id=1,
        controller_epoch=3,
        broker_epoch=77 if version >= 1 else -1,
        topic_states=(
            StopReplicaTopicState(topic_name="a", partition_states=states(0, 1)),
            StopReplicaTopicState(topic_name="b", partition_states=states(2)),
        ),
    )
