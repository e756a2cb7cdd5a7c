"""The controller-to-broker requests as plain values: LeaderAndIsr v7, UpdateMetadata v8,
StopReplica v4 (the versions Kafka 3.9's ZooKeeper controller sends at metadata version
>= 3.4-IV0, ``AbstractControllerBrokerRequestBatch``).

Field names and order are those of Kafka's JSON schemas (``LeaderAndIsrRequest.json``,
``UpdateMetadataRequest.json``, ``StopReplicaRequest.json``) in snake_case, as kio generates
them. kio 0.6 ships no classes for these inter-broker APIs, hence these dataclasses; a codec
for them belongs in ``franz.protocol`` when the broker side lands.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import ClassVar, Final

__all__ = [
    "ZERO_UUID",
    "LeaderAndIsrLiveLeader",
    "LeaderAndIsrPartitionState",
    "LeaderAndIsrRequest",
    "LeaderAndIsrTopicState",
    "StopReplicaPartitionState",
    "StopReplicaRequest",
    "StopReplicaTopicState",
    "UpdateMetadataBroker",
    "UpdateMetadataEndpoint",
    "UpdateMetadataPartitionState",
    "UpdateMetadataRequest",
    "UpdateMetadataTopicState",
]

#: Kafka's ``Uuid.ZERO_UUID``: the topic id of a topic that has none.
ZERO_UUID: Final = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrPartitionState:
    partition_index: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    #: The partition's ``state`` znode version (zkVersion).
    partition_epoch: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    is_new: bool = False
    #: 1 if recovering from an unclean leader election (KIP-704).
    leader_recovery_state: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrTopicState:
    topic_name: str
    topic_id: uuid.UUID
    partition_states: tuple[LeaderAndIsrPartitionState, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrLiveLeader:
    broker_id: int
    host_name: str
    port: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderAndIsrRequest:
    API_KEY: ClassVar[int] = 4
    VERSION: ClassVar[int] = 7

    controller_id: int
    is_k_raft_controller: bool = False
    controller_epoch: int
    broker_epoch: int
    #: KIP-866's request type; the ZooKeeper controller sends UNKNOWN (0).
    type: int = 0
    topic_states: tuple[LeaderAndIsrTopicState, ...]
    live_leaders: tuple[LeaderAndIsrLiveLeader, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataPartitionState:
    partition_index: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataTopicState:
    topic_name: str
    topic_id: uuid.UUID
    partition_states: tuple[UpdateMetadataPartitionState, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataEndpoint:
    port: int
    host: str
    listener: str
    security_protocol: int


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataBroker:
    id: int
    endpoints: tuple[UpdateMetadataEndpoint, ...]
    rack: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class UpdateMetadataRequest:
    API_KEY: ClassVar[int] = 6
    VERSION: ClassVar[int] = 8

    controller_id: int
    is_k_raft_controller: bool = False
    controller_epoch: int
    broker_epoch: int
    topic_states: tuple[UpdateMetadataTopicState, ...]
    live_brokers: tuple[UpdateMetadataBroker, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaPartitionState:
    partition_index: int
    #: -2 (EpochDuringDelete) for a topic being deleted, -1 when unknown.
    leader_epoch: int = -1
    delete_partition: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaTopicState:
    topic_name: str
    partition_states: tuple[StopReplicaPartitionState, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StopReplicaRequest:
    API_KEY: ClassVar[int] = 5
    VERSION: ClassVar[int] = 4

    controller_id: int
    is_k_raft_controller: bool = False
    controller_epoch: int
    broker_epoch: int
    topic_states: tuple[StopReplicaTopicState, ...]
