"""The controller's requests applied to this broker: LeaderAndIsr, UpdateMetadata and
StopReplica (Kafka 3.9's ``ReplicaManager.becomeLeaderOrFollower``,
``ReplicaManager.maybeUpdateMetadataCache`` and ``ReplicaManager.stopReplicas`` as
``KafkaApis`` calls them).

One implementation for both ways a request arrives: the network handlers
(``franz.broker.handlers.leader_and_isr`` / ``update_metadata`` / ``stop_replica``, cluster
mode, after the controller-epoch and broker-epoch checks) and the embedded mode's in-process
delivery (``franz.controller.shell.local.LocalController``, through ``Broker``), which has no
fencing to do: the request comes from this broker's own controller.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from franz.cluster.partition import LeaderAndIsrPartitionState
from franz.controller.old_versions import SECURITY_PROTOCOLS
from franz.controller.requests import (
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from franz.errors import ErrorCode
from franz.metadata.cache import BrokerEndpoint, MetadataBroker, UpdateMetadataPartitionState
from franz.storage.files import TopicPartition

if TYPE_CHECKING:
    from franz.broker.topic_manager import TopicManager
    from franz.cluster.replica_manager import ReplicaManager
    from franz.metadata.cache import MetadataCache

__all__ = [
    "ControlTarget",
    "apply_leader_and_isr",
    "apply_stop_replica",
    "apply_update_metadata",
    "deliver",
]


class ControlTarget(Protocol):
    """What the requests change (``BrokerServices`` has these members)."""

    @property
    def replica_manager(self) -> ReplicaManager: ...

    @property
    def metadata_cache(self) -> MetadataCache: ...

    @property
    def topic_manager(self) -> TopicManager: ...

    def on_topic_deleted(self, topic: str) -> None: ...


def deliver(
    services: ControlTarget,
    request: LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest,
) -> Mapping[TopicPartition, ErrorCode]:
    """The in-process delivery: apply ``request``; its partitions' error codes (LeaderAndIsr:
    the failed ones; StopReplica: all; UpdateMetadata: none)."""
    if isinstance(request, LeaderAndIsrRequest):
        return apply_leader_and_isr(services, request)
    if isinstance(request, StopReplicaRequest):
        return apply_stop_replica(services, request)
    apply_update_metadata(services, request)
    return {}


def apply_leader_and_isr(
    services: ControlTarget, value: LeaderAndIsrRequest
) -> dict[TopicPartition, ErrorCode]:
    """Become leader or follower of the request's partitions; the partitions that failed,
    with their codes (the response's non-NONE partition errors)."""
    states = [
        LeaderAndIsrPartitionState(
            topic.topic_name,
            p.partition_index,
            leader=p.leader,
            leader_epoch=p.leader_epoch,
            isr=tuple(p.isr),
            replicas=tuple(p.replicas),
            partition_epoch=p.partition_epoch,
            is_new=p.is_new,
            controller_epoch=p.controller_epoch,
            adding_replicas=tuple(p.adding_replicas),
            removing_replicas=tuple(p.removing_replicas),
        )
        for topic in value.topic_states
        for p in topic.partition_states
    ]
    topic_ids = {t.topic_name: t.topic_id for t in value.topic_states}
    failed = services.replica_manager.become_leader_or_follower(states, topic_ids)
    return {tp: exc.code for tp, exc in failed.items()}


def apply_update_metadata(services: ControlTarget, value: UpdateMetadataRequest) -> None:
    """Into the metadata cache; a topic whose last partition went (leader -2) is forgotten by
    the topic manager and its groups' offsets are dropped."""
    brokers = [
        MetadataBroker(
            b.id,
            tuple(
                BrokerEndpoint(
                    e.host,
                    e.port,
                    e.listener,
                    SECURITY_PROTOCOLS.get(e.security_protocol, str(e.security_protocol)),
                )
                for e in b.endpoints
            ),
            b.rack,
        )
        for b in value.live_brokers
    ]
    states = [
        UpdateMetadataPartitionState(
            topic.topic_name,
            p.partition_index,
            p.leader,
            p.leader_epoch,
            tuple(p.isr),
            tuple(p.replicas),
            tuple(p.offline_replicas),
            p.zk_version,
            p.controller_epoch,
        )
        for topic in value.topic_states
        for p in topic.partition_states
    ]
    cache = services.metadata_cache
    alive_before = {broker.id for broker in cache.alive_brokers()}
    deleted = cache.update_metadata(
        controller_id=value.controller_id if value.controller_id >= 0 else None,
        live_brokers=brokers,
        partition_states=states,
        topic_ids={t.topic_name: t.topic_id for t in value.topic_states if t.topic_id.int},
    )
    not_alive = alive_before - {broker.id for broker in brokers}
    if not_alive:
        services.replica_manager.on_brokers_not_alive(not_alive)
    gone = sorted({topic for topic, _ in deleted if not cache.contains(topic)})
    if gone:
        services.topic_manager.forget_topics(gone)
        for topic in gone:
            services.on_topic_deleted(topic)


def apply_stop_replica(
    services: ControlTarget, value: StopReplicaRequest
) -> dict[TopicPartition, ErrorCode]:
    """Stop (and with ``delete_partition`` delete) the request's replicas; every partition's
    code."""
    return services.replica_manager.stop_replicas(
        {
            TopicPartition(topic.topic_name, p.partition_index): (
                p.leader_epoch,
                p.delete_partition,
            )
            for topic in value.topic_states
            for p in topic.partition_states
        }
    )
