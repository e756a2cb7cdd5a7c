"""The replication gauges as Kafka 3.9 computes them: ``ReplicaManager``'s over hosted
partitions (fakes of ``Partition``'s state), ``KafkaController``'s over a real
``ControllerContext``, and the followers' lag over fakes of the fetchers."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from franz.controller.context import ControllerContext
from franz.controller.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    ReplicaAssignment,
    TopicPartition,
)
from franz.controller.states import PartitionState
from franz.metrics.replication import (
    ControllerGauges,
    FollowerLag,
    ReplicaManagerGauges,
    controller_gauges,
    follower_lags,
    has_preferred_leader,
    is_under_replicated,
    replica_manager_gauges,
)
from franz.storage.files import TopicPartition as LogTopicPartition


@dataclass
class FakeLog:
    offline: bool = False


@dataclass
class FakePartition:
    is_leader: bool
    replicas: list[int]
    isr: list[int]
    effective_min_isr: int = 1
    log: FakeLog = field(default_factory=FakeLog)
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @property
    def is_reassigning(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def replication_factor(self) -> int:
        return len([r for r in self.replicas if r not in self.adding_replicas])


def test_replica_manager_gauges_count_as_kafka() -> None:
    partitions = [
        FakePartition(True, [1, 2, 3], [1, 2, 3], 2),  # led, full ISR
        FakePartition(True, [1, 2, 3], [1, 2], 2),  # led, under-replicated, at min ISR
        FakePartition(True, [1, 2, 3], [1], 2),  # led, under min ISR
        FakePartition(False, [2, 1, 3], [2, 1], 2),  # followed: never counted as URP
        FakePartition(True, [1], [1], 1),  # RF=1: at min ISR, not under-replicated
        FakePartition(True, [1, 2], [1], 2, FakeLog(offline=True)),  # offline replica
    ]
    assert replica_manager_gauges(partitions) == ReplicaManagerGauges(
        leader_count=4,
        partition_count=6,
        offline_replica_count=1,
        under_replicated_partitions=2,
        under_min_isr_partition_count=1,
        at_min_isr_partition_count=2,
    )
    assert [is_under_replicated(p) for p in partitions] == [
        False,
        True,
        True,
        False,
        False,
        False,
    ]


def test_partitions_being_reassigned_keep_their_original_replication_factor() -> None:
    """Kafka's ``OngoingReassignmentState``: a replica being added does not make its
    partition under-replicated until it is in the ISR; the leader counts the partition as
    reassigning (``ReassigningPartitions``)."""
    adding = FakePartition(True, [2, 3, 1], [2, 1], 1, adding_replicas=(3,), removing_replicas=(1,))
    caught_up = FakePartition(True, [2, 3, 1], [2, 1, 3], 1, adding_replicas=(3,))
    shrunk = FakePartition(True, [2, 3, 1], [2], 1, adding_replicas=(3,), removing_replicas=(1,))
    followed = FakePartition(False, [2, 3, 1], [], 1, adding_replicas=(3,))
    gauges = replica_manager_gauges([adding, caught_up, shrunk, followed])
    assert gauges.under_replicated_partitions == 1  # only the ISR of one below RF 2
    assert gauges.reassigning_partitions == 3  # led ones only
    assert [is_under_replicated(p) for p in (adding, caught_up, shrunk)] == [False, False, True]


def test_no_partitions_no_counts() -> None:
    assert replica_manager_gauges([]) == ReplicaManagerGauges()


def _leadership(leader: int, isr: tuple[int, ...]) -> LeaderIsrAndControllerEpoch:
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, isr), 1)


def _context() -> ControllerContext:
    ctx = ControllerContext(epoch=3)
    ctx.add_topic(
        "orders",
        uuid.uuid4(),
        {
            0: ReplicaAssignment((1, 2, 3)),
            1: ReplicaAssignment((2, 3, 1)),
            2: ReplicaAssignment((3, 1, 2)),
        },
    )
    ctx.add_topic("gone", uuid.uuid4(), {0: ReplicaAssignment((1, 2))})
    tp = [TopicPartition("orders", p) for p in range(3)]
    gone = TopicPartition("gone", 0)
    ctx.partition_leadership_info.update(
        {
            tp[0]: _leadership(1, (1, 2, 3)),  # preferred
            tp[1]: _leadership(3, (3, 1)),  # not preferred: imbalanced
            tp[2]: _leadership(-1, (3,)),  # no leader: imbalanced, offline
            gone: _leadership(2, (2,)),
        }
    )
    ctx.partition_states.update(
        {
            tp[0]: PartitionState.ONLINE_PARTITION,
            tp[1]: PartitionState.ONLINE_PARTITION,
            tp[2]: PartitionState.OFFLINE_PARTITION,
            gone: PartitionState.OFFLINE_PARTITION,
        }
    )
    return ctx


def test_controller_gauges_count_as_kafka() -> None:
    ctx = _context()
    assert controller_gauges(ctx) == ControllerGauges(
        active_controller_count=1,
        offline_partitions_count=2,
        preferred_replica_imbalance_count=3,
        global_topic_count=2,
        global_partition_count=4,
    )
    # Queued for deletion: out of the imbalance; deletion started: out of the offline count.
    ctx.queue_topic_deletion(["gone"])
    assert controller_gauges(ctx).preferred_replica_imbalance_count == 2
    assert controller_gauges(ctx).offline_partitions_count == 2
    ctx.begin_topic_deletion(["gone"])
    assert controller_gauges(ctx).offline_partitions_count == 1
    assert controller_gauges(ctx).global_partition_count == 4  # until removed, as Kafka


def test_a_broker_that_is_not_the_controller_reports_zeros() -> None:
    assert controller_gauges(None) == ControllerGauges()


def test_preferred_leader_during_a_reassignment_adding_it() -> None:
    adding = ReplicaAssignment((4, 1, 2), adding_replicas=(4,), removing_replicas=(3,))
    # The preferred replica is being added: balanced until it joins the ISR.
    assert has_preferred_leader(adding, _leadership(1, (1, 2)))
    assert not has_preferred_leader(adding, _leadership(1, (1, 2, 4)))
    assert has_preferred_leader(ReplicaAssignment((1, 2)), _leadership(1, (1,)))
    assert not has_preferred_leader(ReplicaAssignment((1, 2)), _leadership(2, (1, 2)))


@dataclass
class FakeState:
    fetch_offset: int
    leader_high_watermark: int


@dataclass
class FakeFetcher:
    name: str
    partitions: dict[LogTopicPartition, FakeState]


def test_follower_lag_is_the_leaders_hw_minus_the_fetch_offset() -> None:
    fetchers = [
        FakeFetcher(
            "ReplicaFetcherThread-0-1",
            {
                LogTopicPartition("orders", 0): FakeState(90, 100),
                LogTopicPartition("orders", 1): FakeState(120, 100),  # ahead of the HW: 0
                LogTopicPartition("orders", 2): FakeState(0, -1),  # no response yet
            },
        ),
        FakeFetcher("ReplicaFetcherThread-0-3", {LogTopicPartition("logs", 4): FakeState(5, 5)}),
    ]
    assert follower_lags(fetchers) == [
        FollowerLag("ReplicaFetcherThread-0-1", "orders", 0, 10),
        FollowerLag("ReplicaFetcherThread-0-1", "orders", 1, 0),
        FollowerLag("ReplicaFetcherThread-0-3", "logs", 4, 0),
    ]
