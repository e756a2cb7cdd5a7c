"""The counts of Kafka's IsrExpandsPerSec, IsrShrinksPerSec and FailedIsrUpdatesPerSec: a
leader's ``AlterPartitionListener`` marks (Kafka 3.9's ``Partition.handleAlterPartitionUpdate``
/ ``handleAlterPartitionError``), kept by the ``ReplicaManager``; over real logs, the
controller's answers decided by the tests (``Controller`` of test_partition_replication)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path

from franz.clock import ManualClock
from franz.cluster.alter_partition import IsrUpdateResult
from franz.cluster.replica_manager import ReplicaManager
from franz.errors import ErrorCode
from franz.storage.log import Log
from franz.storage.log_manager import LogManager
from tests.unit.cluster.test_partition_replication import (
    LAG_MS,
    TP,
    Controller,
    append,
    clock,
    fetch,
    leader,
    log,
    state,
)

__all__ = ["clock", "log"]


class Meters:
    def __init__(self) -> None:
        self.expands = self.shrinks = self.failed = 0

    def mark_isr_expand(self) -> None:
        self.expands += 1

    def mark_isr_shrink(self) -> None:
        self.shrinks += 1

    def mark_failed(self) -> None:
        self.failed += 1

    def counts(self) -> tuple[int, int, int]:
        return self.expands, self.shrinks, self.failed


def test_committed_changes_count_as_expands_and_shrinks(log: Log, clock: ManualClock) -> None:
    controller = Controller()
    meters = Meters()

    async def main() -> None:
        partition = leader(log, clock, controller, isr=(0, 1))
        partition.alter_partition_listener = meters
        append(partition, 2)
        fetch(partition, 1, partition.log_end_offset, clock)
        fetch(partition, 2, partition.log_end_offset, clock)
        assert meters.counts() == (0, 0, 0)  # submitted, not committed yet
        controller.answer()
        await asyncio.sleep(0)
        assert partition.isr == [0, 1, 2]
        assert meters.counts() == (1, 0, 0)
        append(partition)  # 2 stops fetching: behind the LEO for longer than the lag time
        clock.advance(LAG_MS + 1)
        fetch(partition, 1, partition.log_end_offset, clock)
        assert partition.maybe_shrink_isr()
        controller.answer()
        await asyncio.sleep(0)
        assert partition.isr == [0, 1]
        assert meters.counts() == (1, 1, 0)

    asyncio.run(main())


def test_refused_failed_and_misfit_answers_count_as_failed(log: Log, clock: ManualClock) -> None:
    controller = Controller()
    meters = Meters()

    async def main() -> None:
        partition = leader(log, clock, controller, isr=(0,))
        partition.alter_partition_listener = meters
        fetch(partition, 1, 0, clock)
        controller.answer(ErrorCode.INELIGIBLE_REPLICA)
        await asyncio.sleep(0)
        assert meters.counts() == (0, 0, 1)
        fetch(partition, 1, 0, clock)
        controller.answer(ErrorCode.FENCED_LEADER_EPOCH)  # stays pending
        await asyncio.sleep(0)
        assert meters.counts() == (0, 0, 2)
        # A LeaderAndIsr drops the pending change; an answer to it is stale: not counted.
        partition.make_leader(state(isr=(0,), epoch=2))
        fetch(partition, 1, 0, clock)
        pending, future = controller.submitted.pop(0)
        partition.make_leader(state(isr=(0,), epoch=3))
        future.set_result(IsrUpdateResult(ErrorCode.NONE, 0, 2, (0, 1), 0, 9))
        await asyncio.sleep(0)
        assert meters.counts() == (0, 0, 2)
        # A success for another leader epoch, or an older partition epoch: failed.
        fetch(partition, 1, 0, clock)
        update, future = controller.submitted.pop(0)
        future.set_result(IsrUpdateResult(ErrorCode.NONE, 0, 2, update.new_isr, 0, 9))
        await asyncio.sleep(0)
        assert meters.counts() == (0, 0, 3)
        partition.pending_isr = None
        fetch(partition, 1, 0, clock)
        update, future = controller.submitted.pop(0)
        future.set_result(IsrUpdateResult(ErrorCode.NONE, 0, 3, update.new_isr, 0, 1))
        await asyncio.sleep(0)
        assert meters.counts() == (0, 0, 4)
        assert partition.isr == [0]
        assert pending.new_isr == (0, 1)

    asyncio.run(main())


def test_a_transport_failure_counts_as_failed(log: Log, clock: ManualClock) -> None:
    controller = Controller()
    meters = Meters()

    async def main() -> None:
        partition = leader(log, clock, controller, isr=(0,))
        partition.alter_partition_listener = meters
        fetch(partition, 1, 0, clock)
        _, future = controller.submitted.pop(0)
        future.set_exception(TimeoutError("controller unreachable"))
        await asyncio.sleep(0)
        assert meters.counts() == (0, 0, 1)
        assert partition.pending_isr is None

    asyncio.run(main())


def test_the_replica_manager_counts_its_partitions_changes(
    tmp_path: Path, open_manager: Callable[..., LogManager], clock: ManualClock
) -> None:
    controller = Controller()

    async def main() -> None:
        manager = ReplicaManager(
            open_manager(tmp_path / "logs"),
            broker_id=0,
            clock=clock,
            replica_lag_time_max_ms=LAG_MS,
            alter_partition_manager=controller,
        )
        manager.become_leader_or_follower([state(isr=(0, 1))], {TP.topic: uuid.uuid4()})
        partition = manager.partitions[TP]
        assert partition.alter_partition_listener is manager
        manager.update_follower_fetch_state(partition, 2, 0, 0, partition.log_end_offset)
        controller.answer()
        await asyncio.sleep(0)
        clock.advance(LAG_MS + 1)
        manager.maybe_shrink_isrs()
        controller.answer(ErrorCode.INVALID_UPDATE_VERSION)
        await asyncio.sleep(0)
        assert (manager.isr_expands, manager.isr_shrinks, manager.failed_isr_updates) == (1, 0, 1)

    asyncio.run(main())
