"""What the controller reads from and writes to ZooKeeper, as the core's values.

Conversions between ``franz.metadata.znodes`` (the znodes' JSON) and ``franz.controller``'s
values, and the few reads ``KafkaZkClient`` lacks in the shape the controller needs (Kafka's
``getAllBrokerAndEpochsInCluster``: the registration *and* its czxid, the broker epoch of
KIP-380).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable

from franz.controller.context import Broker, EndPoint
from franz.controller.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    ReplicaAssignment,
    TopicPartition,
)
from franz.metadata.kafka_zk_client import KafkaZkClient
from franz.metadata.znodes import (
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerInfo,
    IsrChangeNotificationSequenceZNode,
    IsrChangeNotificationZNode,
    LogDirEventNotificationSequenceZNode,
    LogDirEventNotificationZNode,
    PartitionState,
    TopicAssignment,
    ZNodeDecodeError,
)

__all__ = [
    "SECURITY_PROTOCOL_IDS",
    "broker_from_info",
    "leadership_from_state",
    "read_brokers_and_epochs",
    "read_isr_change_notifications",
    "read_leadership",
    "read_log_dir_event_notifications",
    "replica_assignment",
    "state_from_leadership",
]

log = logging.getLogger(__name__)

#: Kafka's ``SecurityProtocol`` ids, as UpdateMetadata carries them.
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


def broker_from_info(info: BrokerInfo, epoch: int) -> Broker:
    endpoints = []
    for raw in info.endpoints:
        listener = raw.partition("://")[0]
        found = info.endpoint(listener)
        if found is None:
            continue
        protocol = info.security_protocols.get(listener, listener)
        endpoints.append(
            EndPoint(listener, found[0], found[1], SECURITY_PROTOCOL_IDS.get(protocol, 0))
        )
    return Broker(info.broker_id, epoch, tuple(endpoints), info.rack)


async def read_brokers_and_epochs(zk: KafkaZkClient) -> dict[int, Broker]:
    """``getAllBrokerAndEpochsInCluster``: every registration that decodes, with its czxid."""
    out: dict[int, Broker] = {}
    for child in await zk.zk.get_children(BrokerIdsZNode.path):
        try:
            broker_id = int(child)
        except ValueError:
            continue
        found = await zk.zk.get_or_none(BrokerIdZNode.path(broker_id))
        if found is None:
            continue  # gone between the two reads: the next BrokerChange sees it gone
        try:
            info = BrokerIdZNode.decode(broker_id, found[0])
        except ZNodeDecodeError as exc:
            log.error("skipping broker %d: %s", broker_id, exc)
            continue
        out[broker_id] = broker_from_info(info, found[1].czxid)
    return out


def replica_assignment(assignment: TopicAssignment) -> dict[int, ReplicaAssignment]:
    return {
        p: ReplicaAssignment(
            tuple(replicas),
            tuple(assignment.adding_replicas.get(p, ())),
            tuple(assignment.removing_replicas.get(p, ())),
        )
        for p, replicas in assignment.partitions.items()
    }


def with_topic_id(assignment: TopicAssignment, topic_id: uuid.UUID) -> TopicAssignment:
    return TopicAssignment(
        topic_id, assignment.partitions, assignment.adding_replicas, assignment.removing_replicas
    )


def leadership_from_state(state: PartitionState) -> LeaderIsrAndControllerEpoch:
    """The znode's content; its version becomes the partition epoch."""
    return LeaderIsrAndControllerEpoch(
        LeaderAndIsr(
            state.leader,
            tuple(state.isr),
            state.leader_epoch,
            LeaderRecoveryState(state.leader_recovery_state),
            state.zk_version,
        ),
        state.controller_epoch,
    )


def state_from_leadership(info: LeaderIsrAndControllerEpoch, zk_version: int) -> PartitionState:
    """The znode content to write; ``zk_version`` is the version the write expects."""
    lai = info.leader_and_isr
    return PartitionState(
        lai.leader,
        lai.leader_epoch,
        lai.isr,
        info.controller_epoch,
        int(lai.leader_recovery_state),
        zk_version,
    )


async def read_leadership(
    zk: KafkaZkClient, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
    """The partition state znodes that exist (Kafka's ``getTopicPartitionStates``)."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
    for topic, parts in sorted(by_topic.items()):
        for p, state in (await zk.get_partition_states(topic, sorted(parts))).items():
            out[TopicPartition(topic, p)] = leadership_from_state(state)
    return out


async def read_isr_change_notifications(
    zk: KafkaZkClient,
) -> tuple[list[str], set[TopicPartition]]:
    """The children of ``/isr_change_notification`` and the partitions they name (Kafka's
    ``getAllIsrChangeNotifications`` + ``getPartitionsFromIsrChangeNotifications``); an
    undecodable notification is logged and still returned, to be deleted with the others."""
    children = await zk.zk.get_children(IsrChangeNotificationZNode.path)
    partitions: set[TopicPartition] = set()
    for child in children:
        path = f"{IsrChangeNotificationZNode.path}/{child}"
        found = await zk.zk.get_or_none(path)
        if found is None:
            continue
        try:
            decoded = IsrChangeNotificationSequenceZNode.decode(path, found[0])
        except ZNodeDecodeError as exc:
            log.error("%s", exc)
            continue
        partitions.update(TopicPartition(t, p) for t, p in decoded)
    return children, partitions


async def read_log_dir_event_notifications(zk: KafkaZkClient) -> tuple[list[str], list[int]]:
    """The children of ``/log_dir_event_notification`` and the brokers they name, in order and
    without repeats (Kafka's ``getAllLogDirEventNotifications`` +
    ``getBrokerIdFromLogDirEvents``); an undecodable notification is logged and still
    returned, to be deleted with the others."""
    children = await zk.zk.get_children(LogDirEventNotificationZNode.path)
    brokers: list[int] = []
    for child in children:
        path = f"{LogDirEventNotificationZNode.path}/{child}"
        found = await zk.zk.get_or_none(path)
        if found is None:
            continue
        try:
            broker_id = LogDirEventNotificationSequenceZNode.decode(path, found[0])
        except ZNodeDecodeError as exc:
            log.error("%s", exc)
            continue
        if broker_id not in brokers:
            brokers.append(broker_id)
    return children, brokers
