"""Partition: ``make_leader`` / ``make_follower`` from LeaderAndIsr states, the high
watermark, and leader-epoch fencing (KIP-320), over a real log."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from franz.clock import ManualClock
from franz.cluster.partition import LeaderAndIsrPartitionState, Partition
from franz.errors import ErrorCode
from franz.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_txn_marker_batch,
)
from franz.protocol.records.inflated import RecordBatchBuilder
from franz.storage.files import TopicPartition
from franz.storage.index.txn_index import AbortedTxn
from franz.storage.log import Log
from tests.unit.storage.conftest import make_batch, small_config

TP = TopicPartition("orders", 0)


@pytest.fixture
def log(tmp_path: Path) -> Iterator[Log]:
    opened = Log(tmp_path / TP.dir_name, TP, small_config(), ManualClock())
    yield opened
    opened.close()


def state(
    leader: int = 0, epoch: int = 0, isr: tuple[int, ...] = (0,), replicas: tuple[int, ...] = (0,)
) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState(
        TP.topic, TP.partition, leader, epoch, isr, replicas, partition_epoch=epoch + 10
    )


def append(partition: Partition, count: int = 1) -> None:
    for _ in range(count):
        partition.append_records_to_leader(bytes(make_batch(partition.log_end_offset, 1000)))


def test_a_new_partition_leads_nothing(log: Log) -> None:
    partition = Partition(TP, uuid.uuid4(), log, broker_id=0)
    assert not partition.is_leader
    assert (partition.leader_id, partition.leader_epoch) == (-1, -1)
    assert partition.isr == [] and partition.replicas == []


def test_make_leader_takes_the_state_and_checkpoints_the_epoch(log: Log) -> None:
    partition = Partition(TP, uuid.uuid4(), log, broker_id=0)
    assert partition.make_leader(state(epoch=0)) is True
    assert partition.is_leader
    assert (partition.leader_epoch, partition.partition_epoch) == (0, 10)
    assert partition.isr == [0] and partition.replicas == [0]
    # The epoch starts at the log end offset and is checkpointed at takeover.
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [(0, 0)]
    assert (log.dir / "leader-epoch-checkpoint").exists()


def test_make_leader_again_is_not_a_new_leader(log: Log) -> None:
    partition = Partition(TP, uuid.uuid4(), log, broker_id=0)
    partition.make_leader(state(epoch=0))
    assert partition.make_leader(state(epoch=0)) is False


def test_a_new_leader_epoch_starts_at_the_log_end(log: Log) -> None:
    partition = Partition(TP, uuid.uuid4(), log, broker_id=0)
    partition.make_leader(state(epoch=0))
    append(partition, 2)
    end = partition.log_end_offset
    partition.make_leader(state(epoch=3))
    assert [(e.epoch, e.start_offset) for e in log.leader_epoch_cache.entries] == [
        (0, 0),
        (3, end),
    ]


def test_sole_isr_leader_high_watermark_follows_the_log_end(log: Log) -> None:
    partition = Partition(TP, uuid.uuid4(), log, broker_id=0)
    partition.make_leader(state())
    append(partition, 2)
    assert partition.high_watermark == partition.log_end_offset > 0


def test_high_watermark_waits_for_other_isr_members(log: Log) -> None:
    partition = Partition(TP, uuid.uuid4(), log, broker_id=0)
    partition.make_leader(state(isr=(0, 1), replicas=(0, 1)))
    append(partition)
    assert partition.high_watermark == 0 < partition.log_end_offset


def test_make_follower_follows_the_leader(log: Log) -> None:
    partition = Partition(TP, uuid.uuid4(), log, broker_id=0)
    partition.make_leader(state())
    append(partition)
    hw = partition.high_watermark
    assert partition.make_follower(state(leader=1, epoch=1, isr=(1, 0), replicas=(0, 1)))
    assert not partition.is_leader
    assert (partition.leader_id, partition.leader_epoch, partition.partition_epoch) == (1, 1, 11)
    assert partition.isr == [] and partition.replicas == [0, 1]
    assert partition.high_watermark == hw
    # Same leader, same epoch: nothing changed.
    assert not partition.make_follower(state(leader=1, epoch=1, isr=(1,), replicas=(0, 1)))


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (-1, ErrorCode.NONE),
        (4, ErrorCode.FENCED_LEADER_EPOCH),
        (5, ErrorCode.NONE),
        (6, ErrorCode.UNKNOWN_LEADER_EPOCH),
    ],
)
def test_check_current_leader_epoch(log: Log, requested: int, expected: ErrorCode) -> None:
    partition = Partition(TP, uuid.uuid4(), log, broker_id=0)
    partition.make_leader(state(epoch=5))
    assert partition.check_current_leader_epoch(requested) == expected


def test_last_stable_offset_and_aborted_transactions_through_the_partition(log: Log) -> None:
    partition = Partition(TP, uuid.uuid4(), log, broker_id=0)
    partition.make_leader(state())
    append(partition, 1)
    first = partition.log_end_offset
    builder = RecordBatchBuilder(
        producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    builder.append(1000, b"k", b"v")
    partition.append_records_to_leader(bytes(builder.build()))  # a transaction at first
    assert partition.high_watermark == first + 1
    assert partition.last_stable_offset == first
    abort = build_end_txn_marker_batch(
        EndTransactionMarker(ControlRecordType.ABORT, 0),
        producer_id=7,
        producer_epoch=0,
        timestamp=1000,
    )
    partition.append_records_to_leader(bytes(abort), from_client=False)  # first + 1
    end = first + 2
    assert partition.high_watermark == partition.last_stable_offset == end
    aborted = AbortedTxn(7, first, first + 1, end)
    assert partition.collect_aborted_transactions(0, end) == [aborted]
    assert partition.collect_aborted_transactions(end, end) == []
