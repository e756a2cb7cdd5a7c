"""ReplicaManager.become_leader_or_follower: LeaderAndIsr partition states applied."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from franz.cluster.partition import LeaderAndIsrPartitionState
from franz.cluster.replica_manager import ReplicaManager
from franz.errors import (
    ErrorCode,
    KafkaStorageError,
    NotLeaderOrFollowerError,
    UnknownTopicOrPartitionError,
)
from franz.storage.files import TopicPartition
from franz.storage.log_manager import LogManager

TOPIC_ID = uuid.UUID(int=7)
IDS = {"orders": TOPIC_ID}


def state(
    partition: int, leader: int = 0, epoch: int = 0, replicas: tuple[int, ...] = (0,)
) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState("orders", partition, leader, epoch, replicas, replicas)


@pytest.fixture
def manager(tmp_path: Path, open_manager: Callable[..., LogManager]) -> ReplicaManager:
    return ReplicaManager(open_manager(tmp_path / "logs"), broker_id=0)


def test_leaders_are_created_with_their_logs(manager: ReplicaManager) -> None:
    assert manager.become_leader_or_follower([state(0), state(1)], IDS) == {}
    for index in (0, 1):
        partition = manager.get_partition(TopicPartition("orders", index))
        assert partition.is_leader and partition.topic_id == TOPIC_ID
        assert partition.log.topic_id == TOPIC_ID


def test_a_follower_is_hosted_but_not_led(manager: ReplicaManager) -> None:
    errors = manager.become_leader_or_follower([state(0, leader=1, replicas=(1, 0))], IDS)
    assert errors == {}
    tp = TopicPartition("orders", 0)
    assert manager.partitions[tp].leader_id == 1
    with pytest.raises(NotLeaderOrFollowerError):
        manager.get_partition(tp)


def test_leadership_moves_with_a_newer_epoch(manager: ReplicaManager) -> None:
    tp = TopicPartition("orders", 0)
    manager.become_leader_or_follower([state(0, replicas=(0, 1))], IDS)
    manager.become_leader_or_follower([state(0, leader=1, epoch=1, replicas=(0, 1))], IDS)
    assert not manager.partitions[tp].is_leader
    manager.become_leader_or_follower([state(0, leader=0, epoch=2, replicas=(0, 1))], IDS)
    assert manager.get_partition(tp).leader_epoch == 2


def test_stale_epoch_and_foreign_partitions_are_refused(manager: ReplicaManager) -> None:
    manager.become_leader_or_follower([state(0, epoch=3)], IDS)
    errors = manager.become_leader_or_follower(
        [state(0, epoch=2), state(1, leader=1, replicas=(1, 2))], IDS
    )
    assert {tp: e.code for tp, e in errors.items()} == {
        TopicPartition("orders", 0): ErrorCode.STALE_CONTROLLER_EPOCH,
        TopicPartition("orders", 1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert manager.partitions[TopicPartition("orders", 0)].leader_epoch == 3
    with pytest.raises(UnknownTopicOrPartitionError):
        manager.get_partition(TopicPartition("orders", 1))


def test_no_online_log_dir_is_a_storage_error(manager: ReplicaManager) -> None:
    log_dir = manager.log_manager.log_dirs[0]
    manager.log_manager.handle_log_dir_failure(log_dir, OSError(28, "ENOSPC"))
    errors = manager.become_leader_or_follower([state(0)], IDS)
    assert isinstance(errors[TopicPartition("orders", 0)], KafkaStorageError)
    assert TopicPartition("orders", 0) not in manager.partitions


def test_a_replica_on_a_failed_log_dir_answers_storage_error_before_its_epoch_is_checked(
    tmp_path: Path, open_manager: Callable[..., LogManager]
) -> None:
    # Kafka's HostedPartition.Offline: the controller's LeaderAndIsr after a log dir event
    # carries the current leader epoch, and must still learn that the replica is offline.
    log_manager = open_manager([tmp_path / "a", tmp_path / "b"])
    manager = ReplicaManager(log_manager, broker_id=0)
    assert manager.become_leader_or_follower([state(0), state(1)], IDS) == {}
    failed = manager.partitions[TopicPartition("orders", 0)].log.dir.parent
    log_manager.handle_log_dir_failure(failed, OSError(5, "EIO"))
    errors = manager.become_leader_or_follower([state(0), state(1)], IDS)
    assert {tp: e.code for tp, e in errors.items()} == {
        TopicPartition("orders", 0): ErrorCode.KAFKA_STORAGE_ERROR,
        TopicPartition("orders", 1): ErrorCode.STALE_CONTROLLER_EPOCH,
    }
    # A newer epoch (the controller moved leadership away) is refused likewise.
    errors = manager.become_leader_or_follower([state(0, leader=1, epoch=1, replicas=(1, 0))], IDS)
    assert errors[TopicPartition("orders", 0)].code == ErrorCode.KAFKA_STORAGE_ERROR


class Recorder:
    """A leadership listener that records what it heard."""

    def __init__(self) -> None:
        self.changes: list[tuple[list[TopicPartition], list[TopicPartition]]] = []
        self.stopped: list[tuple[TopicPartition, int]] = []

    def on_leadership_change(
        self, new_leaders: Sequence[Any], new_followers: Sequence[Any]
    ) -> None:
        self.changes.append(
            ([p.topic_partition for p in new_leaders], [p.topic_partition for p in new_followers])
        )

    def on_replicas_stopped(self, stopped: Sequence[tuple[TopicPartition, int]]) -> None:
        self.stopped.extend(stopped)


def test_leadership_listeners_hear_new_leaders_followers_and_stopped_replicas(
    manager: ReplicaManager,
) -> None:
    heard = Recorder()
    manager.add_leadership_listener(heard)
    tp0, tp1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
    manager.become_leader_or_follower(
        [state(0, replicas=(0, 1)), state(1, leader=1, replicas=(1, 0))], IDS
    )
    assert heard.changes == [([tp0], [tp1])]
    # The same states again change nothing: nobody is told.
    manager.become_leader_or_follower(
        [state(0, replicas=(0, 1)), state(1, leader=1, replicas=(1, 0))], IDS
    )
    assert len(heard.changes) == 1
    manager.become_leader_or_follower([state(0, leader=1, epoch=1, replicas=(0, 1))], IDS)
    assert heard.changes[-1] == ([], [tp0])
    manager.remove_partition(tp1, delete=True, leader_epoch=3)
    assert heard.stopped == [(tp1, 3)]
