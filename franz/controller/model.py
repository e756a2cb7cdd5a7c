"""The controller's values: partitions, replicas, leader/ISR state (Kafka 3.9 names).

Rules:

* Every value is frozen; "changing" one makes a new one (Kafka's ``LeaderAndIsr.newLeader``
  etc. are copy-constructors too).
* ``TopicPartition`` is a plain ``(topic, partition)`` tuple, equal to and hashed like
  ``franz.storage.files.TopicPartition`` (also a tuple), which the controller may not import.
* ``LeaderAndIsr.partition_epoch`` is the ZooKeeper version of the partition's ``state`` znode
  (Kafka's ``zkVersion``, sent as ``PartitionEpoch`` in LeaderAndIsr and ``ZkVersion`` in
  UpdateMetadata). Creating the znode gives version 0; each ``setData`` adds one.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, NamedTuple

__all__ = [
    "EPOCH_DURING_DELETE",
    "INITIAL_LEADER_EPOCH",
    "INITIAL_PARTITION_EPOCH",
    "LEADER_DURING_DELETE",
    "NO_EPOCH",
    "NO_LEADER",
    "LeaderAndIsr",
    "LeaderIsrAndControllerEpoch",
    "LeaderRecoveryState",
    "PartitionAndReplica",
    "ReplicaAssignment",
    "TopicPartition",
]

#: Kafka's ``LeaderAndIsr`` constants.
NO_LEADER: Final = -1
NO_EPOCH: Final = -1
LEADER_DURING_DELETE: Final = -2
EPOCH_DURING_DELETE: Final = -2
INITIAL_LEADER_EPOCH: Final = 0
INITIAL_PARTITION_EPOCH: Final = 0


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class PartitionAndReplica(NamedTuple):
    """Kafka's ``PartitionAndReplica``: one replica (broker) of one partition."""

    topic_partition: TopicPartition
    replica: int


class LeaderRecoveryState(enum.IntEnum):
    """Kafka's ``LeaderRecoveryState`` (KIP-704): RECOVERING after an unclean election until
    the new leader has recovered; sent in LeaderAndIsr v6+."""

    RECOVERED = 0
    RECOVERING = 1


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """Kafka's ``LeaderAndIsr`` (``org.apache.kafka.metadata.LeaderAndIsr`` in 3.9): the
    content of ``/brokers/topics/<t>/partitions/<p>/state`` plus its znode version."""

    leader: int
    isr: tuple[int, ...]
    leader_epoch: int = INITIAL_LEADER_EPOCH
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    partition_epoch: int = INITIAL_PARTITION_EPOCH

    def new_leader(self, leader: int) -> LeaderAndIsr:
        """Same ISR, new leader, leader epoch + 1 (``newLeader``)."""
        return replace(self, leader=leader, leader_epoch=self.leader_epoch + 1)

    def new_leader_and_isr(self, leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
        """``newLeaderAndIsr``: leader epoch + 1, recovery state kept."""
        return replace(self, leader=leader, isr=isr, leader_epoch=self.leader_epoch + 1)

    def new_recovering_leader_and_isr(self, leader: int, isr: tuple[int, ...]) -> LeaderAndIsr:
        """``newRecoveringLeaderAndIsr``: as ``new_leader_and_isr``, marked RECOVERING."""
        return replace(
            self,
            leader=leader,
            isr=isr,
            leader_epoch=self.leader_epoch + 1,
            leader_recovery_state=LeaderRecoveryState.RECOVERING,
        )

    def new_epoch(self) -> LeaderAndIsr:
        """``newEpoch``: leader epoch + 1, nothing else."""
        return replace(self, leader_epoch=self.leader_epoch + 1)

    def with_partition_epoch(self, partition_epoch: int) -> LeaderAndIsr:
        return replace(self, partition_epoch=partition_epoch)

    @staticmethod
    def during_delete(isr: tuple[int, ...]) -> LeaderAndIsr:
        """``LeaderAndIsr.duringDelete``: leader -2, what UpdateMetadata says for a partition
        of a topic queued for deletion."""
        return LeaderAndIsr(LEADER_DURING_DELETE, isr)


@dataclass(frozen=True, slots=True)
class LeaderIsrAndControllerEpoch:
    """Kafka's ``LeaderIsrAndControllerEpoch``: the leader/ISR and the epoch of the controller
    that wrote it."""

    leader_and_isr: LeaderAndIsr
    controller_epoch: int


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """Kafka's ``ReplicaAssignment``: the replicas of a partition, and during a reassignment
    (KIP-455) the ones being added and removed. ``replicas`` is the full set (origin + target)
    while reassigning."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """``reassignTo`` (KIP-455): RS = TRS + ORS (target first, duplicates dropped),
        adding = RS - ORS, removing = RS - TRS. A reassignment replacing one in progress
        starts from the same origin, so cancelling (target = ORS) gives back ORS's replicas,
        though not necessarily in their first order."""
        origin = self.origin_replicas
        full = tuple(dict.fromkeys((*target, *origin)))
        return ReplicaAssignment(
            full,
            tuple(r for r in full if r not in origin),
            tuple(r for r in full if r not in target),
        )

    def remove_replica(self, replica: int) -> ReplicaAssignment:
        """``removeReplica``: ``replica`` out of the replicas, adding and removing lists."""
        return ReplicaAssignment(
            tuple(r for r in self.replicas if r != replica),
            tuple(r for r in self.adding_replicas if r != replica),
            tuple(r for r in self.removing_replicas if r != replica),
        )
