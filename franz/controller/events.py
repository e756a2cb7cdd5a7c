"""The events the controller's single event queue drains (Kafka 3.9's ``ControllerEvent``
case objects and classes in ``KafkaController.scala``, processed by ``ControllerEventManager``).

Rules:

* Events are frozen values. ZooKeeper watches (kazoo threads) only *post* them to the loop;
  the event names what changed, never the new data: the handler re-reads ZooKeeper, as Kafka's
  ``processBrokerChange`` etc. do, so a burst of watches costs one read.
* Events carrying a request from a broker or an admin client have a ``reply`` slot: an opaque
  handle (a future) owned by the I/O shell, excluded from equality, through which the shell
  answers (Kafka's callbacks). The pure core never calls it.
* Each class docstring names the Kafka event it mirrors; the list is complete for the ZooKeeper
  controller except ``UpdateFeatures`` (Franz has no feature versioning yet), ``MockEvent``
  (tests) and ``ShutdownEventThread`` (the shell stops its task instead).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field

from franz.controller.alter_partition import AlterPartitionRequestData
from franz.controller.model import TopicPartition
from franz.errors import ErrorCode

__all__ = [
    "AllocateProducerIds",
    "AlterPartitionReceived",
    "ApiPartitionReassignment",
    "AutoPreferredReplicaLeaderElection",
    "BrokerChange",
    "BrokerModifications",
    "ControlledShutdown",
    "ControllerChange",
    "ControllerEvent",
    "ElectionTrigger",
    "ElectionType",
    "Expire",
    "IsrChangeNotification",
    "LeaderAndIsrResponseReceived",
    "ListPartitionReassignments",
    "LogDirEventNotification",
    "PartitionModifications",
    "PartitionReassignmentIsrChange",
    "Reelect",
    "RegisterBrokerAndReelect",
    "ReplicaLeaderElection",
    "Startup",
    "TopicChange",
    "TopicDeletion",
    "TopicDeletionStopReplicaResponseReceived",
    "TopicUncleanLeaderElectionEnable",
    "UncleanLeaderElectionEnable",
    "UpdateMetadataResponseReceived",
    "ZkPartitionReassignment",
]


class ElectionType(enum.IntEnum):
    """Kafka's ``ElectionType`` (ElectLeaders' wire values)."""

    PREFERRED = 0
    UNCLEAN = 1


class ElectionTrigger(enum.Enum):
    """Who asked for a leader election (Kafka's ``ElectionTrigger``)."""

    AUTO_TRIGGERED = "AutoTriggered"
    ZK_TRIGGERED = "ZkTriggered"
    ADMIN_CLIENT_TRIGGERED = "AdminClientTriggered"


def _reply() -> object:
    return field(default=None, compare=False, repr=False)


# -- controller lifecycle ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Startup:
    """``Startup``: register the session-expiry handler, watch ``/controller``, elect."""


@dataclass(frozen=True, slots=True)
class ControllerChange:
    """``ControllerChange``: ``/controller`` was created or changed; resign if it is not us."""


@dataclass(frozen=True, slots=True)
class Reelect:
    """``Reelect``: ``/controller`` was deleted; try to become the controller."""


@dataclass(frozen=True, slots=True)
class RegisterBrokerAndReelect:
    """``RegisterBrokerAndReelect``: after a new ZooKeeper session, re-create
    ``/brokers/ids/<id>`` (a new broker epoch) and run for controller again."""


@dataclass(frozen=True, slots=True)
class Expire:
    """``Expire``: the ZooKeeper session expired; resign (``onControllerResignation``)."""


# -- brokers ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BrokerChange:
    """``BrokerChange``: children of ``/brokers/ids`` changed (brokers came, went or bounced)."""


@dataclass(frozen=True, slots=True)
class BrokerModifications:
    """``BrokerModifications``: ``/brokers/ids/<broker_id>`` data changed (endpoints, rack)."""

    broker_id: int


@dataclass(frozen=True, slots=True)
class ControlledShutdown:
    """``ControlledShutdown``: a broker's ControlledShutdown request; the reply is the set of
    partitions it still leads."""

    broker_id: int
    broker_epoch: int
    reply: object = _reply()


@dataclass(frozen=True, slots=True)
class LogDirEventNotification:
    """``LogDirEventNotification``: children of ``/log_dir_event_notification`` (KIP-112)."""


# -- topics and partitions -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicChange:
    """``TopicChange``: children of ``/brokers/topics`` changed (topics created or gone)."""


@dataclass(frozen=True, slots=True)
class PartitionModifications:
    """``PartitionModifications``: ``/brokers/topics/<topic>`` changed (CreatePartitions)."""

    topic: str


@dataclass(frozen=True, slots=True)
class TopicDeletion:
    """``TopicDeletion``: children of ``/admin/delete_topics`` changed."""


@dataclass(frozen=True, slots=True)
class TopicDeletionStopReplicaResponseReceived:
    """``TopicDeletionStopReplicaResponseReceived``: a StopReplica (delete) answer for
    partitions of topics being deleted."""

    replica_id: int
    request_error: ErrorCode
    partition_errors: Mapping[TopicPartition, ErrorCode]


@dataclass(frozen=True, slots=True)
class UncleanLeaderElectionEnable:
    """``UncleanLeaderElectionEnable``: the broker-wide ``unclean.leader.election.enable``
    was turned on dynamically; retry offline partitions."""


@dataclass(frozen=True, slots=True)
class TopicUncleanLeaderElectionEnable:
    """``TopicUncleanLeaderElectionEnable``: a topic's ``unclean.leader.election.enable``
    was turned on; retry its offline partitions."""

    topic: str


# -- leadership and ISR ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IsrChangeNotification:
    """``IsrChangeNotification``: children of ``/isr_change_notification`` (brokers that
    changed an ISR directly in ZooKeeper, before AlterPartition)."""


@dataclass(frozen=True, slots=True)
class AlterPartitionReceived:
    """``AlterPartitionReceived``: a leader's AlterPartition (ISR change) request (KIP-497),
    with its version (topic names or ids); the reply is ``franz.controller.shell.
    alter_partition.AlterPartitionResult``."""

    request: AlterPartitionRequestData
    reply: object = _reply()


@dataclass(frozen=True, slots=True)
class ReplicaLeaderElection:
    """``ReplicaLeaderElection``: elect leaders for ``partitions`` (``None``: those in
    ``/admin/preferred_replica_election``), from ElectLeaders or the ZooKeeper path."""

    partitions: frozenset[TopicPartition] | None
    election_type: ElectionType = ElectionType.PREFERRED
    election_trigger: ElectionTrigger = ElectionTrigger.ZK_TRIGGERED
    reply: object = _reply()


@dataclass(frozen=True, slots=True)
class AutoPreferredReplicaLeaderElection:
    """``AutoPreferredReplicaLeaderElection``: the periodic check of
    ``leader.imbalance.check.interval.seconds`` (``auto.leader.rebalance.enable``)."""


@dataclass(frozen=True, slots=True)
class LeaderAndIsrResponseReceived:
    """``LeaderAndIsrResponseReceived``: per-partition errors (KAFKA_STORAGE_ERROR marks the
    replica offline)."""

    broker_id: int
    error_code: ErrorCode
    partition_errors: Mapping[TopicPartition, ErrorCode]


@dataclass(frozen=True, slots=True)
class UpdateMetadataResponseReceived:
    """``UpdateMetadataResponseReceived``: STALE_BROKER_EPOCH is only logged by Kafka."""

    broker_id: int
    error_code: ErrorCode


# -- reassignment ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ZkPartitionReassignment:
    """``ZkPartitionReassignment``: ``/admin/reassign_partitions`` was created."""


@dataclass(frozen=True, slots=True)
class ApiPartitionReassignment:
    """``ApiPartitionReassignment``: AlterPartitionReassignments (KIP-455); ``None`` cancels."""

    reassignments: Mapping[TopicPartition, tuple[int, ...] | None]
    reply: object = _reply()


@dataclass(frozen=True, slots=True)
class PartitionReassignmentIsrChange:
    """``PartitionReassignmentIsrChange``: the ISR of a partition being reassigned changed;
    check whether the new replicas caught up."""

    partition: TopicPartition


@dataclass(frozen=True, slots=True)
class ListPartitionReassignments:
    """``ListPartitionReassignments``: ``None`` lists every ongoing reassignment."""

    partitions: frozenset[TopicPartition] | None
    reply: object = _reply()


@dataclass(frozen=True, slots=True)
class AllocateProducerIds:
    """``AllocateProducerIds``: a broker asks for a block of producer ids (KIP-730)."""

    broker_id: int
    broker_epoch: int
    reply: object = _reply()


ControllerEvent = (
    Startup
    | ControllerChange
    | Reelect
    | RegisterBrokerAndReelect
    | Expire
    | BrokerChange
    | BrokerModifications
    | ControlledShutdown
    | LogDirEventNotification
    | TopicChange
    | PartitionModifications
    | TopicDeletion
    | TopicDeletionStopReplicaResponseReceived
    | UncleanLeaderElectionEnable
    | TopicUncleanLeaderElectionEnable
    | IsrChangeNotification
    | AlterPartitionReceived
    | ReplicaLeaderElection
    | AutoPreferredReplicaLeaderElection
    | LeaderAndIsrResponseReceived
    | UpdateMetadataResponseReceived
    | ZkPartitionReassignment
    | ApiPartitionReassignment
    | PartitionReassignmentIsrChange
    | ListPartitionReassignments
    | AllocateProducerIds
)
