"""``ControllerContext``: what the active controller knows of the cluster (Kafka 3.9's
``kafka.controller.ControllerContext``).

Rules:

* A plain mutable dataclass owned by the controller's single event task: only that task reads
  or writes it, so it needs no lock (Kafka: "accessed only from the controller event thread").
* It is a cache of ZooKeeper (``/brokers/ids``, ``/brokers/topics``, partition ``state``
  znodes, ``/admin/delete_topics``) plus the controller's own state-machine states. Nothing
  here performs I/O; the shell fills it on election and updates it on events.
* "Live" brokers exclude those in controlled shutdown (``liveBrokerIds``);
  ``live_or_shutting_down_broker_ids`` includes them (``liveOrShuttingDownBrokerIds``). A replica
  is online when its broker is live and its partition is not on one of the broker's offline log
  dirs (``isReplicaOnline``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field

from franz.controller.model import (
    EPOCH_DURING_DELETE,
    NO_EPOCH,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaAssignment,
    TopicPartition,
)
from franz.controller.states import PartitionState, ReplicaState

__all__ = ["Broker", "ControllerContext", "EndPoint"]


@dataclass(frozen=True, slots=True)
class EndPoint:
    """One listener of a broker, as in ``/brokers/ids/<id>`` and UpdateMetadata."""

    listener: str
    host: str
    port: int
    security_protocol: int  # Kafka's SecurityProtocol id: PLAINTEXT = 0


@dataclass(frozen=True, slots=True)
class Broker:
    """A registered broker (Kafka's ``kafka.cluster.Broker``) with its broker epoch: the czxid
    of its ephemeral ``/brokers/ids/<id>`` znode (KIP-380)."""

    id: int
    epoch: int
    endpoints: tuple[EndPoint, ...] = ()
    rack: str | None = None


@dataclass(slots=True)
class ControllerContext:
    """Kafka's ``ControllerContext``, field for field where Franz needs it."""

    #: The controller epoch (``/controller_epoch``) and that znode's version.
    epoch: int = 0
    epoch_zk_version: int = 0
    #: broker id -> registered live broker (including those shutting down).
    live_brokers: dict[int, Broker] = field(default_factory=dict)
    shutting_down_broker_ids: set[int] = field(default_factory=set)
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    #: topic -> partition -> assignment (``partitionAssignments``).
    partition_assignments: dict[str, dict[int, ReplicaAssignment]] = field(default_factory=dict)
    partition_leadership_info: dict[TopicPartition, LeaderIsrAndControllerEpoch] = field(
        default_factory=dict
    )
    partitions_being_reassigned: set[TopicPartition] = field(default_factory=set)
    partition_states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    replica_states: dict[PartitionAndReplica, ReplicaState] = field(default_factory=dict)
    #: broker id -> partitions whose log dir failed on that broker (KIP-112).
    replicas_on_offline_dirs: dict[int, set[TopicPartition]] = field(default_factory=dict)
    topics_to_be_deleted: set[str] = field(default_factory=set)
    topics_with_deletion_started: set[str] = field(default_factory=set)
    topics_ineligible_for_deletion: set[str] = field(default_factory=set)

    # -- brokers ---------------------------------------------------------------------------

    @property
    def live_or_shutting_down_broker_ids(self) -> set[int]:
        return set(self.live_brokers)

    @property
    def live_broker_ids(self) -> set[int]:
        return set(self.live_brokers) - self.shutting_down_broker_ids

    def live_broker_epochs(self) -> dict[int, int]:
        """``liveBrokerIdAndEpochs``: broker id -> broker epoch."""
        return {b.id: b.epoch for b in self.live_brokers.values()}

    def add_live_brokers(self, brokers: Iterable[Broker]) -> None:
        for broker in brokers:
            self.live_brokers[broker.id] = broker

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        for broker_id in broker_ids:
            self.live_brokers.pop(broker_id, None)
            self.shutting_down_broker_ids.discard(broker_id)

    def is_replica_online(
        self, broker_id: int, tp: TopicPartition, *, include_shutting_down_brokers: bool = False
    ) -> bool:
        """``isReplicaOnline``: the broker is live (or shutting down, if included) and the
        partition is not on one of its offline log dirs."""
        online = (
            broker_id in self.live_brokers
            if include_shutting_down_brokers
            else broker_id in self.live_brokers and broker_id not in self.shutting_down_broker_ids
        )
        return online and tp not in self.replicas_on_offline_dirs.get(broker_id, set())

    # -- topics and assignments -------------------------------------------------------------

    @property
    def all_topics(self) -> set[str]:
        return set(self.partition_assignments)

    def all_partitions(self) -> set[TopicPartition]:
        return {
            TopicPartition(topic, p)
            for topic, parts in self.partition_assignments.items()
            for p in parts
        }

    def partitions_for_topic(self, topic: str) -> set[TopicPartition]:
        return {TopicPartition(topic, p) for p in self.partition_assignments.get(topic, {})}

    def partition_full_replica_assignment(self, tp: TopicPartition) -> ReplicaAssignment:
        """``partitionFullReplicaAssignment``: empty when the partition is unknown."""
        return self.partition_assignments.get(tp.topic, {}).get(tp.partition, ReplicaAssignment(()))

    def partition_replica_assignment(self, tp: TopicPartition) -> tuple[int, ...]:
        """``partitionReplicaAssignment``: the replicas, preferred leader first."""
        return self.partition_full_replica_assignment(tp).replicas

    def update_partition_full_replica_assignment(
        self, tp: TopicPartition, assignment: ReplicaAssignment
    ) -> None:
        self.partition_assignments.setdefault(tp.topic, {})[tp.partition] = assignment

    def update_partition_replica_assignment(
        self, tp: TopicPartition, replicas: Iterable[int]
    ) -> None:
        """``updatePartitionReplicaAssignment``: replace the replicas, keep the adding and
        removing ones that are still replicas (a replica dropped by NonExistentReplica leaves
        all three lists: ``ReplicaAssignment.removeReplica``)."""
        current = self.partition_full_replica_assignment(tp)
        kept = tuple(replicas)
        self.update_partition_full_replica_assignment(
            tp,
            ReplicaAssignment(
                kept,
                tuple(r for r in current.adding_replicas if r in kept),
                tuple(r for r in current.removing_replicas if r in kept),
            ),
        )

    def add_topic(
        self, topic: str, topic_id: uuid.UUID, assignment: dict[int, ReplicaAssignment]
    ) -> None:
        self.topic_ids[topic] = topic_id
        self.partition_assignments[topic] = dict(assignment)

    def remove_topic(self, topic: str) -> None:
        """``removeTopic`` (after deletion completes): forget the topic, its id, assignment and
        leadership, and its deletion bookkeeping. Partition and replica states are the state
        machines' business (NonExistent* transitions), as in Kafka."""
        self.topics_to_be_deleted.discard(topic)
        self.topics_with_deletion_started.discard(topic)
        self.topics_ineligible_for_deletion.discard(topic)
        self.partitions_being_reassigned = {
            tp for tp in self.partitions_being_reassigned if tp.topic != topic
        }
        self.topic_ids.pop(topic, None)
        for partition in self.partition_assignments.pop(topic, {}):
            self.partition_leadership_info.pop(TopicPartition(topic, partition), None)

    # -- replicas ---------------------------------------------------------------------------

    def partitions_on_broker(self, broker_id: int) -> set[TopicPartition]:
        """``partitionsOnBroker``: partitions with a replica on ``broker_id``."""
        return {
            TopicPartition(topic, p)
            for topic, parts in self.partition_assignments.items()
            for p, a in parts.items()
            if broker_id in a.replicas
        }

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> set[PartitionAndReplica]:
        """``replicasOnBrokers``: every (partition, replica) hosted by one of ``broker_ids``."""
        wanted = set(broker_ids)
        return {
            PartitionAndReplica(TopicPartition(topic, p), r)
            for topic, parts in self.partition_assignments.items()
            for p, a in parts.items()
            for r in a.replicas
            if r in wanted
        }

    def replicas_for_topic(self, topic: str) -> set[PartitionAndReplica]:
        return {
            PartitionAndReplica(TopicPartition(topic, p), r)
            for p, a in self.partition_assignments.get(topic, {}).items()
            for r in a.replicas
        }

    def replicas_for_partitions(
        self, partitions: Iterable[TopicPartition]
    ) -> set[PartitionAndReplica]:
        return {
            PartitionAndReplica(tp, r)
            for tp in partitions
            for r in self.partition_replica_assignment(tp)
        }

    def all_live_replicas(self) -> set[PartitionAndReplica]:
        """``allLiveReplicas``: replicas on live brokers that are online."""
        return {
            r
            for r in self.replicas_on_brokers(self.live_broker_ids)
            if self.is_replica_online(r.replica, r.topic_partition)
        }

    def partition_leaders_on_broker(self, broker_id: int) -> set[TopicPartition]:
        """``partitionLeadersOnBroker``: partitions led by ``broker_id`` that another replica
        could take over (more than one assigned replica), topic not being deleted; what a
        controlled shutdown must move."""
        return {
            tp
            for tp, info in self.partition_leadership_info.items()
            if info.leader_and_isr.leader == broker_id
            and not self.is_topic_queued_up_for_deletion(tp.topic)
            and len(self.partition_replica_assignment(tp)) > 1
        }

    def partitions_with_offline_leader(self) -> set[TopicPartition]:
        """``partitionsWithOfflineLeader``: leader not online, topic not being deleted."""
        return {
            tp
            for tp, info in self.partition_leadership_info.items()
            if not self.is_replica_online(info.leader_and_isr.leader, tp)
            and not self.is_topic_queued_up_for_deletion(tp.topic)
        }

    def leader_epoch(self, tp: TopicPartition) -> int:
        """``leaderEpoch``: -2 for a topic queued for deletion (StopReplica then deletes
        whatever the broker's epoch), -1 when no leader was ever elected."""
        if self.is_topic_queued_up_for_deletion(tp.topic):
            return EPOCH_DURING_DELETE
        info = self.partition_leadership_info.get(tp)
        return NO_EPOCH if info is None else info.leader_and_isr.leader_epoch

    # -- topic deletion ---------------------------------------------------------------------

    def queue_topic_deletion(self, topics: Iterable[str]) -> None:
        self.topics_to_be_deleted.update(topics)

    def begin_topic_deletion(self, topics: Iterable[str]) -> None:
        self.topics_with_deletion_started.update(topics)

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return topic in self.topics_with_deletion_started

    def is_topic_eligible_for_deletion(self, topic: str) -> bool:
        """``TopicDeletionManager.isTopicEligibleForDeletion``: queued, not started, not
        marked ineligible."""
        return (
            topic in self.topics_to_be_deleted
            and topic not in self.topics_with_deletion_started
            and topic not in self.topics_ineligible_for_deletion
        )
