"""The older versions of the controller's requests, read as the newest (``requests.py``).

Kafka 3.9's ZooKeeper-mode broker serves LeaderAndIsr v0-7, UpdateMetadata v0-8 and
StopReplica v0-4: a controller at an older ``inter.broker.protocol.version`` sends the older
ones. Each older version is the newest with fields missing or grouped differently; Kafka's
request classes (``LeaderAndIsrRequest``, ``UpdateMetadataRequest``, ``StopReplicaRequest``)
fill them in as below, and so does ``upgrade`` (from Kafka 3.9's JSON schemas and those
classes):

=====================  =========================================================================
LeaderAndIsr v0-1      ``ungrouped_partition_states``, each naming its topic: grouped by topic,
                       in order of first appearance (``LeaderAndIsrRequest`` groups them so);
                       no broker epoch (-1, never stale, KIP-380's
                       ``AbstractControlRequest.UNKNOWN_BROKER_EPOCH``); v0 no ``is_new``
LeaderAndIsr <3        no ``adding_replicas`` / ``removing_replicas`` (empty)
LeaderAndIsr <5        no ``type`` (0, UNKNOWN) and no topic ids (``Uuid.ZERO_UUID``: the log
                       gets none, as Kafka's ``topicIdFromRequest``)
LeaderAndIsr <6        no ``leader_recovery_state`` (0, RECOVERED)
UpdateMetadata v0      a broker is ``v0_host`` / ``v0_port``: one PLAINTEXT endpoint whose
                       listener is ``PLAINTEXT`` (``ListenerName.forSecurityProtocol``)
UpdateMetadata v1-2    endpoints without a listener name: the security protocol's name
UpdateMetadata <2      no rack (null)
UpdateMetadata <4      no ``offline_replicas`` (empty)
UpdateMetadata <5      ``ungrouped_partition_states`` grouped by topic as above; no broker epoch
UpdateMetadata <7      no topic ids (``Uuid.ZERO_UUID``: none known)
StopReplica v0         ``ungrouped_partitions`` (topic, partition); no broker epoch
StopReplica v1-2       ``topics`` with ``partition_indexes``
StopReplica <3         one ``delete_partitions`` for every partition, and no leader epoch (-1:
                       ``StopReplicaPartitionState``'s default, which always stops)
every API, older       no ``is_k_raft_controller`` (false)
=====================  =========================================================================

The responses need no reading here: the handlers answer a mapping with every version's fields
(LeaderAndIsr v0-4 ``partition_errors`` by topic name, v5+ ``topics`` by topic id), and
``franz.protocol.messages.build`` keeps those of the version asked.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, TypeVar

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

__all__ = ["SECURITY_PROTOCOLS", "upgrade"]

#: Kafka's ``SecurityProtocol`` ids, whose names are the listener names of UpdateMetadata
#: v0-2 (``ListenerName.forSecurityProtocol``).
SECURITY_PROTOCOLS: Final = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
#: ``AbstractControlRequest.UNKNOWN_BROKER_EPOCH``: the versions without a broker epoch.
_NO_BROKER_EPOCH: Final = -1
_PLAINTEXT: Final = 0

ControllerRequest = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest
_T = TypeVar("_T")


def upgrade(entity: Any) -> ControllerRequest:
    """The ``requests.py`` value of a decoded LeaderAndIsr v0-6, UpdateMetadata v0-7 or
    StopReplica v0-3 entity (``franz.protocol.inter_broker``); ``ValueError`` for another."""
    reader = _READERS.get(entity.__api_key__)
    if reader is None:
        raise ValueError(f"no controller value for {type(entity).__name__}")
    return reader(entity, entity.__version__)


def _grouped(items: Iterable[_T], topic: Callable[[_T], str]) -> dict[str, list[_T]]:
    """``items`` by topic name, topics in order of first appearance."""
    groups: dict[str, list[_T]] = {}
    for item in items:
        groups.setdefault(topic(item), []).append(item)
    return groups


def _broker_epoch(entity: Any) -> int:
    return int(getattr(entity, "broker_epoch", _NO_BROKER_EPOCH))


def _leader_and_isr(entity: Any, version: int) -> LeaderAndIsrRequest:
    if version < 2:
        topics = [
            (name, ZERO_UUID, states)
            for name, states in _grouped(
                entity.ungrouped_partition_states, lambda p: str(p.topic_name)
            ).items()
        ]
    else:
        topics = [
            (t.topic_name, getattr(t, "topic_id", None) or ZERO_UUID, t.partition_states)
            for t in entity.topic_states
        ]
    return LeaderAndIsrRequest(
        controller_id=entity.controller_id,
        is_k_raft_controller=bool(getattr(entity, "is_k_raft_controller", False)),
        controller_epoch=entity.controller_epoch,
        broker_epoch=_broker_epoch(entity),
        type=int(getattr(entity, "type", 0)),
        topic_states=tuple(
            LeaderAndIsrTopicState(
                topic_name=name,
                topic_id=topic_id,
                partition_states=tuple(
                    LeaderAndIsrPartitionState(
                        partition_index=p.partition_index,
                        controller_epoch=p.controller_epoch,
                        leader=p.leader,
                        leader_epoch=p.leader_epoch,
                        isr=tuple(p.isr),
                        partition_epoch=p.partition_epoch,
                        replicas=tuple(p.replicas),
                        adding_replicas=tuple(getattr(p, "adding_replicas", ())),
                        removing_replicas=tuple(getattr(p, "removing_replicas", ())),
                        is_new=bool(getattr(p, "is_new", False)),
                        leader_recovery_state=int(getattr(p, "leader_recovery_state", 0)),
                    )
                    for p in states
                ),
            )
            for name, topic_id, states in topics
        ),
        live_leaders=tuple(
            LeaderAndIsrLiveLeader(broker_id=b.broker_id, host_name=b.host_name, port=b.port)
            for b in entity.live_leaders
        ),
    )


def _endpoints(broker: Any, version: int) -> tuple[UpdateMetadataEndpoint, ...]:
    if version == 0:
        return (
            UpdateMetadataEndpoint(
                port=broker.v0_port,
                host=broker.v0_host,
                listener=SECURITY_PROTOCOLS[_PLAINTEXT],
                security_protocol=_PLAINTEXT,
            ),
        )
    return tuple(
        UpdateMetadataEndpoint(
            port=e.port,
            host=e.host,
            listener=e.listener
            if version >= 3
            else SECURITY_PROTOCOLS.get(e.security_protocol, str(e.security_protocol)),
            security_protocol=e.security_protocol,
        )
        for e in broker.endpoints
    )


def _update_metadata(entity: Any, version: int) -> UpdateMetadataRequest:
    if version < 5:
        topics = [
            (name, ZERO_UUID, states)
            for name, states in _grouped(
                entity.ungrouped_partition_states, lambda p: str(p.topic_name)
            ).items()
        ]
    else:
        topics = [
            (t.topic_name, getattr(t, "topic_id", None) or ZERO_UUID, t.partition_states)
            for t in entity.topic_states
        ]
    return UpdateMetadataRequest(
        controller_id=entity.controller_id,
        is_k_raft_controller=bool(getattr(entity, "is_k_raft_controller", False)),
        controller_epoch=entity.controller_epoch,
        broker_epoch=_broker_epoch(entity),
        topic_states=tuple(
            UpdateMetadataTopicState(
                topic_name=name,
                topic_id=topic_id,
                partition_states=tuple(
                    UpdateMetadataPartitionState(
                        partition_index=p.partition_index,
                        controller_epoch=p.controller_epoch,
                        leader=p.leader,
                        leader_epoch=p.leader_epoch,
                        isr=tuple(p.isr),
                        zk_version=p.zk_version,
                        replicas=tuple(p.replicas),
                        offline_replicas=tuple(getattr(p, "offline_replicas", ())),
                    )
                    for p in states
                ),
            )
            for name, topic_id, states in topics
        ),
        live_brokers=tuple(
            UpdateMetadataBroker(
                id=b.id, endpoints=_endpoints(b, version), rack=getattr(b, "rack", None)
            )
            for b in entity.live_brokers
        ),
    )


def _stop_replica(entity: Any, version: int) -> StopReplicaRequest:
    topics: list[tuple[str, tuple[StopReplicaPartitionState, ...]]]
    if version >= 3:
        topics = [
            (
                t.topic_name,
                tuple(
                    StopReplicaPartitionState(
                        partition_index=p.partition_index,
                        leader_epoch=p.leader_epoch,
                        delete_partition=p.delete_partition,
                    )
                    for p in t.partition_states
                ),
            )
            for t in entity.topic_states
        ]
    else:
        delete = bool(entity.delete_partitions)
        if version == 0:
            indexes = {
                name: [p.partition_index for p in partitions]
                for name, partitions in _grouped(
                    entity.ungrouped_partitions, lambda p: str(p.topic_name)
                ).items()
            }
        else:
            indexes = {t.name: list(t.partition_indexes) for t in entity.topics}
        topics = [
            (
                name,
                tuple(
                    StopReplicaPartitionState(partition_index=i, delete_partition=delete)
                    for i in partitions
                ),
            )
            for name, partitions in indexes.items()
        ]
    return StopReplicaRequest(
        controller_id=entity.controller_id,
        is_k_raft_controller=bool(getattr(entity, "is_k_raft_controller", False)),
        controller_epoch=entity.controller_epoch,
        broker_epoch=_broker_epoch(entity),
        topic_states=tuple(
            StopReplicaTopicState(topic_name=name, partition_states=states)
            for name, states in topics
        ),
    )


_READERS: Final[dict[int, Callable[[Any, int], ControllerRequest]]] = {
    LeaderAndIsrRequest.API_KEY: _leader_and_isr,
    UpdateMetadataRequest.API_KEY: _update_metadata,
    StopReplicaRequest.API_KEY: _stop_replica,
}
