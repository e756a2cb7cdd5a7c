"""The replication metrics, computed from the broker's state as Kafka computes them (pure
functions over the objects the event loop owns; ``franz.metrics.collectors`` calls them at
scrape time, never on the produce or fetch path).

Broker side (Kafka 3.9's ``ReplicaManager`` gauges, over its ``allPartitions``):

* ``LeaderCount``: online partitions this broker leads (``leaderPartitionsIterator``);
  ``PartitionCount``: every hosted replica, offline ones included (``allPartitions.size``);
  ``OfflineReplicaCount``: replicas whose log dir failed (``HostedPartition.Offline``).
* ``UnderReplicatedPartitions``: led partitions whose committed ISR is smaller than the
  replica set (``Partition.isUnderReplicated``: ``replicationFactor - isr.size > 0``, the
  replication factor of a partition being reassigned leaving out the replicas being added);
  a partition whose follower is down counts on its leader only, so the cluster's total is
  the number of under-replicated partitions.
* ``ReassigningPartitions``: led partitions being reassigned (KIP-455: the last LeaderAndIsr
  listed replicas being added or removed; ``reassigningPartitionsCount``).
* ``UnderMinIsrPartitionCount`` / ``AtMinIsrPartitionCount``: led partitions whose committed
  ISR is below / equal to the effective ``min.insync.replicas`` (the config capped by the
  replication factor, ``effectiveMinIsr``).

Controller side (Kafka 3.9's ``KafkaController.updateMetrics``: every gauge is 0 on a broker
that is not the active controller):

* ``ActiveControllerCount``: 1 on the active controller (the cluster's sum is 1);
* ``OfflinePartitionsCount``: partitions in the ``OfflinePartition`` state, topics whose
  deletion started left out (``ControllerContext.offlinePartitionCount``, kept by
  ``updatePartitionStateMetrics``);
* ``PreferredReplicaImbalanceCount``: partitions with a leader whose leader is not their
  preferred (first) replica, topics queued for deletion left out; a partition being
  reassigned whose preferred replica is being added counts only while that replica is out of
  the ISR (``hasPreferredLeader``);
* ``GlobalTopicCount``: the topics (``allTopics``); ``GlobalPartitionCount``: the partitions
  with a leadership record (``partitionWithLeadersCount``, deleted topics' included until
  removed, as Kafka).

Follower side (``AbstractFetcherThread``'s ``FetcherLagStats``): a followed partition's lag
is the leader's high watermark in the last fetch response it appended from, minus its next
fetch offset (never below 0), labelled with the fetcher's ``clientId``
(``ReplicaFetcherThread-<fetcher id>-<leader id>``); ``MaxLag`` (``clientId=Replica``) is the
largest over every fetcher, 0 with none. A partition has no lag until its first response.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from franz.controller.context import ControllerContext
from franz.controller.model import LeaderIsrAndControllerEpoch, ReplicaAssignment
from franz.controller.states import PartitionState
from franz.storage.files import TopicPartition

__all__ = [
    "ControllerGauges",
    "FollowerLag",
    "ReplicaManagerGauges",
    "controller_gauges",
    "follower_lags",
    "has_preferred_leader",
    "is_under_replicated",
    "replica_manager_gauges",
]


class _Log(Protocol):
    @property
    def offline(self) -> bool: ...


class PartitionView(Protocol):
    """What the gauges read of a ``franz.cluster.partition.Partition``."""

    @property
    def is_leader(self) -> bool: ...
    @property
    def replicas(self) -> list[int]: ...
    @property
    def isr(self) -> list[int]: ...
    @property
    def effective_min_isr(self) -> int: ...
    @property
    def replication_factor(self) -> int: ...
    @property
    def is_reassigning(self) -> bool: ...
    @property
    def log(self) -> _Log: ...


class FetchStateView(Protocol):
    @property
    def fetch_offset(self) -> int: ...
    @property
    def leader_high_watermark(self) -> int: ...


class FetcherView(Protocol):
    """What the lag reads of a ``franz.cluster.fetcher_thread.ReplicaFetcher``."""

    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Mapping[TopicPartition, FetchStateView]: ...


@dataclass(frozen=True, slots=True)
class ReplicaManagerGauges:
    leader_count: int = 0
    partition_count: int = 0
    offline_replica_count: int = 0
    under_replicated_partitions: int = 0
    under_min_isr_partition_count: int = 0
    at_min_isr_partition_count: int = 0
    reassigning_partitions: int = 0


@dataclass(frozen=True, slots=True)
class ControllerGauges:
    active_controller_count: int = 0
    offline_partitions_count: int = 0
    preferred_replica_imbalance_count: int = 0
    global_topic_count: int = 0
    global_partition_count: int = 0


@dataclass(frozen=True, slots=True)
class FollowerLag:
    client_id: str
    topic: str
    partition: int
    lag: int


def is_under_replicated(partition: PartitionView) -> bool:
    """Kafka's ``Partition.isUnderReplicated`` for an online replica."""
    return (
        partition.is_leader
        and not partition.log.offline
        and len(partition.isr) < partition.replication_factor
    )


def replica_manager_gauges(partitions: Iterable[PartitionView]) -> ReplicaManagerGauges:
    """The ``ReplicaManager`` gauges over this broker's hosted partitions."""
    total = offline = leaders = under = under_min = at_min = reassigning = 0
    for partition in partitions:
        total += 1
        if partition.log.offline:
            offline += 1
            continue
        if not partition.is_leader:
            continue
        leaders += 1
        isr = len(partition.isr)
        if isr < partition.replication_factor:
            under += 1
        if partition.is_reassigning:
            reassigning += 1
        min_isr = partition.effective_min_isr
        if isr < min_isr:
            under_min += 1
        elif isr == min_isr:
            at_min += 1
    return ReplicaManagerGauges(leaders, total, offline, under, under_min, at_min, reassigning)


def has_preferred_leader(
    assignment: ReplicaAssignment, leadership: LeaderIsrAndControllerEpoch
) -> bool:
    """Kafka's ``ControllerContext.hasPreferredLeader``."""
    preferred = assignment.replicas[0]
    if assignment.is_being_reassigned and preferred in assignment.adding_replicas:
        # Not imbalanced until the new preferred replica joins the ISR (the reassignment ends).
        return preferred not in leadership.leader_and_isr.isr
    return leadership.leader_and_isr.leader == preferred


def controller_gauges(ctx: ControllerContext | None) -> ControllerGauges:
    """The ``KafkaController`` gauges; ``ctx`` is None on a broker that is not the active
    controller (all 0, as ``updateMetrics``)."""
    if ctx is None:
        return ControllerGauges()
    offline = sum(
        1
        for tp, state in ctx.partition_states.items()
        if state is PartitionState.OFFLINE_PARTITION
        and tp.topic not in ctx.topics_with_deletion_started
    )
    imbalance = 0
    for tp, leadership in ctx.partition_leadership_info.items():
        if ctx.is_topic_queued_up_for_deletion(tp.topic):
            continue
        assignment = ctx.partition_full_replica_assignment(tp)
        if assignment.replicas and not has_preferred_leader(assignment, leadership):
            imbalance += 1
    return ControllerGauges(
        active_controller_count=1,
        offline_partitions_count=offline,
        preferred_replica_imbalance_count=imbalance,
        global_topic_count=len(ctx.all_topics),
        global_partition_count=len(ctx.partition_leadership_info),
    )


def follower_lags(fetchers: Iterable[FetcherView]) -> list[FollowerLag]:
    """Every followed partition's lag (module docstring), fetcher by fetcher."""
    return [
        FollowerLag(
            fetcher.name,
            tp.topic,
            tp.partition,
            max(0, state.leader_high_watermark - state.fetch_offset),
        )
        for fetcher in fetchers
        for tp, state in fetcher.partitions.items()
        if state.leader_high_watermark >= 0
    ]
