"""Partition's leader side of replication (Kafka 3.9's ``Partition``): followers' fetch
states, HW = smallest LEO of the maximal ISR, ISR expansion and shrink with the pending
states, min ISR, and the delayed acks=all produce of the ReplicaManager; over real logs.

The controller's end of AlterPartition is ``Controller``, a recorder of submitted ISR changes
whose answers the tests decide (the sans-IO seam ``AlterPartitionSubmitter``)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from franz.clock import ManualClock
from franz.cluster.alter_partition import IsrUpdate, IsrUpdateResult
from franz.cluster.partition import LeaderAndIsrPartitionState, Partition
from franz.cluster.replica_manager import ReplicaManager
from franz.errors import ErrorCode, NotEnoughReplicasError
from franz.storage.files import TopicPartition
from franz.storage.log import Log
from franz.storage.log_manager import LogManager
from tests.unit.storage.conftest import make_batch, small_config

TP = TopicPartition("orders", 0)
LAG_MS = 10_000


class Controller:
    """Records ``submit`` calls; ``answer`` completes the oldest one."""

    def __init__(self) -> None:
        self.submitted: list[tuple[IsrUpdate, asyncio.Future[IsrUpdateResult]]] = []

    def submit(
        self, tp: TopicPartition, topic_id: uuid.UUID, leader_and_isr: IsrUpdate
    ) -> asyncio.Future[IsrUpdateResult]:
        future: asyncio.Future[IsrUpdateResult] = asyncio.get_running_loop().create_future()
        self.submitted.append((leader_and_isr, future))
        return future

    def answer(self, error: ErrorCode = ErrorCode.NONE) -> IsrUpdate:
        update, future = self.submitted.pop(0)
        future.set_result(
            IsrUpdateResult(
                error, 0, update.leader_epoch, update.new_isr, 0, update.partition_epoch + 1
            )
        )
        return update


def state(
    isr: tuple[int, ...] = (0, 1, 2), replicas: tuple[int, ...] = (0, 1, 2), epoch: int = 1
) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState(
        TP.topic, TP.partition, 0, epoch, isr, replicas, partition_epoch=5
    )


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def log(tmp_path: Path, clock: ManualClock) -> Iterator[Log]:
    opened = Log(tmp_path / TP.dir_name, TP, small_config({"min.insync.replicas": 2}), clock)
    yield opened
    opened.close()


def leader(
    log: Log, clock: ManualClock, controller: Controller, **kwargs: tuple[int, ...]
) -> Partition:
    partition = Partition(
        TP,
        uuid.uuid4(),
        log,
        broker_id=0,
        clock=clock,
        replica_lag_time_max_ms=LAG_MS,
        alter_partition_manager=controller,
    )
    partition.make_leader(state(**kwargs))
    return partition


def append(partition: Partition, count: int = 1, acks: int = 1) -> None:
    for _ in range(count):
        partition.append_records_to_leader(
            bytes(make_batch(partition.log_end_offset, 1000)), required_acks=acks
        )


def fetch(partition: Partition, replica: int, offset: int, clock: ManualClock) -> bool:
    return partition.update_follower_fetch_state(
        replica, offset, 0, clock.wall_ms(), partition.log_end_offset
    )


def test_high_watermark_is_the_smallest_isr_log_end_offset(log: Log, clock: ManualClock) -> None:
    partition = leader(log, clock, Controller())
    append(partition, 3)
    leo = partition.log_end_offset
    assert partition.high_watermark == 0
    assert fetch(partition, 1, leo, clock) is False  # 2 has not fetched yet
    assert partition.high_watermark == 0
    middle = leo // 2
    assert fetch(partition, 2, middle, clock) is True
    assert partition.high_watermark == middle
    assert fetch(partition, 2, leo, clock) is True
    assert partition.high_watermark == leo


def test_a_replica_not_assigned_cannot_fetch(log: Log, clock: ManualClock) -> None:
    partition = leader(log, clock, Controller())
    assert partition.is_follower(1) and not partition.is_follower(7)
    assert not partition.is_follower(0)
    assert fetch(partition, 7, 0, clock) is False


def test_a_caught_up_follower_joins_the_isr_through_a_pending_expand(
    log: Log, clock: ManualClock
) -> None:
    controller = Controller()
    outcome: list[bool] = []

    def body() -> None:
        partition = leader(log, clock, controller, isr=(0, 1))
        append(partition, 2)
        leo = partition.log_end_offset
        fetch(partition, 1, leo, clock)
        assert partition.high_watermark == leo
        append(partition)  # 2 is behind the HW: not in sync yet
        fetch(partition, 2, leo - 1, clock)
        assert controller.submitted == [] and partition.pending_isr is None
        fetch(partition, 2, leo, clock)  # at the HW and past the epoch start: in sync
        assert len(controller.submitted) == 1
        assert controller.submitted[0][0] == IsrUpdate(1, (0, 1, 2), 0, 5)
        # Pending: counted in the maximal ISR (HW), not in the committed one (min ISR).
        assert partition.maximal_isr == {0, 1, 2} and partition.isr == [0, 1]
        # One change in flight at a time.
        assert not partition.maybe_expand_isr(partition.remote_replicas[2])
        controller.answer()
        outcome.append(True)

    async def main() -> None:
        body()
        await asyncio.sleep(0)
        await asyncio.sleep(0)

    asyncio.run(main())
    assert outcome


def test_committed_expansion_and_a_refused_one(log: Log, clock: ManualClock) -> None:
    controller = Controller()
    holder: list[Partition] = []

    async def main() -> None:
        partition = leader(log, clock, controller, isr=(0,))
        holder.append(partition)
        fetch(partition, 1, 0, clock)
        controller.answer()
        await asyncio.sleep(0)
        assert partition.isr == [0, 1] and partition.partition_epoch == 6
        assert partition.pending_isr is None
        fetch(partition, 2, 0, clock)
        assert partition.pending_isr is not None
        controller.answer(ErrorCode.INELIGIBLE_REPLICA)
        await asyncio.sleep(0)
        # Known not applied: back to the committed state.
        assert partition.isr == [0, 1] and partition.pending_isr is None
        fetch(partition, 2, 0, clock)
        controller.answer(ErrorCode.FENCED_LEADER_EPOCH)
        await asyncio.sleep(0)
        # Maybe applied: stays pending until LeaderAndIsr.
        assert partition.pending_isr is not None
        partition.make_leader(state(isr=(0, 1, 2), epoch=2))
        assert partition.pending_isr is None and partition.isr == [0, 1, 2]

    asyncio.run(main())
    assert holder


def test_an_isr_follower_not_caught_up_for_the_lag_time_is_shrunk(
    log: Log, clock: ManualClock
) -> None:
    controller = Controller()

    async def main() -> None:
        partition = leader(log, clock, controller)
        append(partition, 2)
        leo = partition.log_end_offset
        fetch(partition, 1, leo, clock)
        fetch(partition, 2, 0, clock)  # 2 stays behind
        assert partition.high_watermark == 0
        clock.advance(LAG_MS)
        assert partition.get_out_of_sync_replicas(clock.wall_ms(), LAG_MS) == frozenset()
        assert not partition.maybe_shrink_isr()
        clock.advance(1)
        # 1 fetched at the LEO: caught up; 2 last caught up at becoming leader.
        assert partition.get_out_of_sync_replicas(clock.wall_ms(), LAG_MS) == {2}
        assert partition.maybe_shrink_isr()
        update = controller.submitted[0][0]
        assert update.new_isr == (0, 1)
        # Pending shrink: 2 still holds the HW back and counts for min ISR.
        assert partition.maximal_isr == {0, 1, 2} and partition.high_watermark == 0
        controller.answer()
        await asyncio.sleep(0)
        assert partition.isr == [0, 1]
        assert partition.high_watermark == leo

    asyncio.run(main())


def test_last_caught_up_time_follows_kafkas_rules(log: Log, clock: ManualClock) -> None:
    partition = leader(log, clock, Controller())
    append(partition, 2)
    replica = partition.remote_replicas[1]
    start = clock.wall_ms()
    assert replica.last_caught_up_time_ms == start  # an ISR member at leadership
    clock.advance(100)
    first_leo = partition.log_end_offset
    fetch(partition, 1, first_leo, clock)  # at the leader's LEO: caught up now
    assert replica.last_caught_up_time_ms == start + 100
    append(partition)
    clock.advance(100)
    fetch(partition, 1, first_leo, clock)  # reached the previous fetch's LEO: then
    assert replica.last_caught_up_time_ms == start + 100
    second_leo = partition.log_end_offset
    append(partition)
    clock.advance(100)
    fetch(partition, 1, second_leo, clock)  # reached the previous fetch's LEO: then
    assert replica.last_caught_up_time_ms == start + 200
    clock.advance(100)
    fetch(partition, 1, second_leo, clock)  # still behind: nothing new
    assert replica.last_caught_up_time_ms == start + 200


def test_min_isr_refuses_acks_all_before_append_and_holds_the_hw(
    log: Log, clock: ManualClock
) -> None:
    partition = leader(log, clock, Controller(), isr=(0,))
    with pytest.raises(NotEnoughReplicasError):
        append(partition, acks=-1)
    assert partition.log_end_offset == 0
    append(partition, acks=1)
    assert partition.log_end_offset > 0
    # Under min ISR the HW does not move (Kafka 3.9's maybeIncrementLeaderHW).
    assert partition.is_under_min_isr and partition.high_watermark == 0


def test_min_isr_is_capped_by_the_replication_factor(log: Log, clock: ManualClock) -> None:
    partition = leader(log, clock, Controller(), isr=(0,), replicas=(0,))
    assert partition.effective_min_isr == 1
    append(partition, acks=-1)
    assert partition.high_watermark == partition.log_end_offset


def test_check_enough_replicas_reach_offset(log: Log, clock: ManualClock) -> None:
    controller = Controller()

    async def main() -> None:
        partition = leader(log, clock, controller, isr=(0, 1, 2))
        append(partition, acks=-1)
        leo = partition.log_end_offset
        assert partition.check_enough_replicas_reach_offset(leo) == (False, ErrorCode.NONE)
        fetch(partition, 1, leo, clock)
        fetch(partition, 2, leo, clock)
        assert partition.check_enough_replicas_reach_offset(leo) == (True, ErrorCode.NONE)
        append(partition, acks=-1)
        leo = partition.log_end_offset
        fetch(partition, 1, leo, clock)
        clock.advance(LAG_MS + 1)
        partition.maybe_shrink_isr()
        controller.answer()
        await asyncio.sleep(0)
        # The ISR shrank to {0, 1}: the HW moves, and 2 >= min ISR 2.
        assert partition.check_enough_replicas_reach_offset(leo) == (True, ErrorCode.NONE)
        partition.make_follower(
            LeaderAndIsrPartitionState(TP.topic, 0, 1, 3, (1, 2), (0, 1, 2), partition_epoch=9)
        )
        assert partition.check_enough_replicas_reach_offset(leo) == (
            True,
            ErrorCode.NOT_LEADER_OR_FOLLOWER,
        )

    asyncio.run(main())


def test_after_append_the_isr_below_min_isr_is_not_enough_replicas_after_append(
    log: Log, clock: ManualClock
) -> None:
    controller = Controller()

    async def main() -> None:
        partition = leader(log, clock, controller, isr=(0, 1))
        append(partition, acks=-1)
        required = partition.log_end_offset
        clock.advance(LAG_MS + 1)
        partition.maybe_shrink_isr()
        controller.answer()
        await asyncio.sleep(0)
        assert partition.isr == [0]
        # Under min ISR the HW stays: the produce would time out, as in Kafka 3.9.
        assert partition.check_enough_replicas_reach_offset(required) == (False, ErrorCode.NONE)
        partition.log.update_high_watermark(required)
        assert partition.check_enough_replicas_reach_offset(required) == (
            True,
            ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        )

    asyncio.run(main())


# -- ReplicaManager: delayed produce and wake-ups ------------------------------------------


@pytest.fixture
def manager(
    tmp_path: Path, open_manager: Callable[..., LogManager], clock: ManualClock
) -> ReplicaManager:
    return ReplicaManager(
        open_manager(tmp_path / "logs"),
        broker_id=0,
        clock=clock,
        replica_lag_time_max_ms=LAG_MS,
        alter_partition_manager=Controller(),
    )


def test_acks_all_with_a_sole_isr_completes_at_once(manager: ReplicaManager) -> None:
    manager.become_leader_or_follower([state(isr=(0,), replicas=(0,))], {TP.topic: uuid.uuid4()})
    info = manager.append(TP, bytes(make_batch(0, 1000)), required_acks=-1)
    assert manager.replication_done(TP, info.last_offset + 1) == ErrorCode.NONE
    assert manager._delayed_produce == {}


def test_delayed_produce_completes_when_followers_fetch(
    manager: ReplicaManager, clock: ManualClock
) -> None:
    manager.become_leader_or_follower([state()], {TP.topic: uuid.uuid4()})
    partition = manager.partitions[TP]

    async def main() -> dict[TopicPartition, ErrorCode]:
        info = manager.append(TP, bytes(make_batch(0, 1000)), required_acks=-1)
        required = info.last_offset + 1
        assert manager.replication_done(TP, required) is None
        waiting = asyncio.ensure_future(manager.wait_for_replication({TP: required}, 30_000))
        consumer = asyncio.ensure_future(manager.wait_for_appends([TP], 30))
        follower = asyncio.ensure_future(manager.wait_for_appends([TP], 30, follower=True))
        await asyncio.sleep(0)
        manager.append(TP, bytes(make_batch(partition.log_end_offset, 1000)))
        assert await asyncio.wait_for(follower, 5) is True  # followers wake on append
        assert not consumer.done()
        manager.update_follower_fetch_state(partition, 1, required, 0, partition.log_end_offset)
        await asyncio.sleep(0)
        assert not waiting.done()
        manager.update_follower_fetch_state(partition, 2, required, 0, partition.log_end_offset)
        assert await asyncio.wait_for(consumer, 5) is True  # consumers: when the HW moves
        return await asyncio.wait_for(waiting, 5)

    assert asyncio.run(main()) == {TP: ErrorCode.NONE}


def test_delayed_produce_times_out_or_loses_leadership(manager: ReplicaManager) -> None:
    manager.become_leader_or_follower([state()], {TP.topic: uuid.uuid4()})

    async def main() -> tuple[dict[TopicPartition, ErrorCode], dict[TopicPartition, ErrorCode]]:
        info = manager.append(TP, bytes(make_batch(0, 1000)), required_acks=-1)
        timed_out = await manager.wait_for_replication({TP: info.last_offset + 1}, 10)
        waiting = asyncio.ensure_future(
            manager.wait_for_replication({TP: info.last_offset + 1}, 30_000)
        )
        await asyncio.sleep(0)
        manager.become_leader_or_follower(
            [LeaderAndIsrPartitionState(TP.topic, 0, 1, 2, (1, 2), (0, 1, 2))],
            {TP.topic: uuid.uuid4()},
        )
        return timed_out, await asyncio.wait_for(waiting, 5)

    timed_out, moved = asyncio.run(main())
    assert timed_out == {TP: ErrorCode.REQUEST_TIMED_OUT}
    assert moved == {TP: ErrorCode.NOT_LEADER_OR_FOLLOWER}
    assert manager._delayed_produce == {}


# -- a follower that stops right after catching up (a broker in controlled shutdown) --------


def _stopped_follower_holds_the_hw(
    manager: ReplicaManager, controller: Controller, clock: ManualClock
) -> tuple[Partition, int]:
    """Leader 0 with ISR {0, 1}; follower 2 catches up, so the leader proposes it to the ISR
    (pending: in the maximal ISR) and 2 stops fetching; an acks=all record is appended and
    follower 1 fetches it. Returns the partition and the record's required offset, which
    only 2 lacks."""
    manager.become_leader_or_follower([state(isr=(0, 1))], {TP.topic: uuid.uuid4()})
    partition = manager.partitions[TP]
    first = manager.append(TP, bytes(make_batch(0, 1000)), required_acks=1)
    manager.update_follower_fetch_state(partition, 1, first.last_offset + 1, 0, 1)
    manager.update_follower_fetch_state(partition, 2, first.last_offset + 1, 0, 1)
    assert len(controller.submitted) == 1 and partition.maximal_isr == {0, 1, 2}
    info = manager.append(TP, bytes(make_batch(partition.log_end_offset, 1000)), required_acks=-1)
    required = info.last_offset + 1
    manager.update_follower_fetch_state(partition, 1, required, 0, partition.log_end_offset)
    assert partition.high_watermark < required  # 2 is in the maximal ISR
    return partition, required


def make_manager(
    tmp_path: Path,
    open_manager: Callable[..., LogManager],
    clock: ManualClock,
    controller: Controller,
    alive: set[int],
) -> ReplicaManager:
    """A leader's replica manager whose followers are ISR-eligible while in ``alive``."""
    return ReplicaManager(
        open_manager(tmp_path / "logs"),
        broker_id=0,
        clock=clock,
        replica_lag_time_max_ms=LAG_MS,
        alter_partition_manager=controller,
        is_replica_isr_eligible=lambda broker_id: broker_id in alive,
    )


def test_a_refused_expansion_of_a_dead_follower_completes_the_waiting_produce(
    tmp_path: Path, open_manager: Callable[..., LogManager], clock: ManualClock
) -> None:
    controller = Controller()
    alive = {0, 1, 2}
    manager = make_manager(tmp_path, open_manager, clock, controller, alive)

    async def main() -> dict[TopicPartition, ErrorCode]:
        _, required = _stopped_follower_holds_the_hw(manager, controller, clock)
        waiting = asyncio.ensure_future(manager.wait_for_replication({TP: required}, 30_000))
        await asyncio.sleep(0)
        alive.discard(2)  # UpdateMetadata: broker 2 is gone
        controller.answer(ErrorCode.INELIGIBLE_REPLICA)  # it was shutting down
        # Out of the maximal ISR and not eligible: the HW reaches the record at once.
        return await asyncio.wait_for(waiting, 1)

    assert asyncio.run(main()) == {TP: ErrorCode.NONE}


def test_a_caught_up_follower_that_stopped_holds_the_hw_for_the_lag_time_only(
    tmp_path: Path, open_manager: Callable[..., LogManager], clock: ManualClock
) -> None:
    controller = Controller()
    manager = make_manager(tmp_path, open_manager, clock, controller, {0, 1, 2})

    async def main() -> dict[TopicPartition, ErrorCode]:
        partition, required = _stopped_follower_holds_the_hw(manager, controller, clock)
        waiting = asyncio.ensure_future(manager.wait_for_replication({TP: required}, 30_000))
        controller.answer(ErrorCode.INELIGIBLE_REPLICA)
        await asyncio.sleep(0)
        # Still alive and caught up within the lag time: Kafka's HW waits for it.
        assert not waiting.done() and partition.high_watermark < required
        manager.maybe_shrink_isrs()
        await asyncio.sleep(0)
        assert not waiting.done()
        clock.advance(LAG_MS + 1)
        # No append, no fetch: the ISR expiration round looks at the HW again.
        manager.maybe_shrink_isrs()
        return await asyncio.wait_for(waiting, 1)

    assert asyncio.run(main()) == {TP: ErrorCode.NONE}


def test_an_append_that_moves_the_hw_completes_older_produces(
    tmp_path: Path, open_manager: Callable[..., LogManager], clock: ManualClock
) -> None:
    controller = Controller()
    manager = make_manager(tmp_path, open_manager, clock, controller, {0, 1, 2})

    async def main() -> dict[TopicPartition, ErrorCode]:
        partition, required = _stopped_follower_holds_the_hw(manager, controller, clock)
        waiting = asyncio.ensure_future(manager.wait_for_replication({TP: required}, 30_000))
        controller.answer(ErrorCode.INELIGIBLE_REPLICA)
        await asyncio.sleep(0)
        clock.advance(LAG_MS + 1)
        # Kafka's LeaderHwChange.INCREASED: the append's HW move completes delayed produces.
        manager.append(TP, bytes(make_batch(partition.log_end_offset, 1000)), required_acks=1)
        assert partition.high_watermark >= required
        return await asyncio.wait_for(waiting, 1)

    assert asyncio.run(main()) == {TP: ErrorCode.NONE}


def test_a_fetch_that_moves_the_hw_and_proposes_the_follower_completes_the_produce(
    tmp_path: Path, open_manager: Callable[..., LogManager], clock: ManualClock
) -> None:
    """A follower outside the ISR, caught up and eligible, holds the HW; its next fetch both
    moves the HW and makes the leader propose it to the ISR. The produce waiting for that HW
    completes then (the HW is computed once, after the proposal, as Kafka's
    ``updateFollowerFetchState`` does), not at its timeout."""
    controller = Controller()
    manager = make_manager(tmp_path, open_manager, clock, controller, {0, 1, 2})

    async def main() -> dict[TopicPartition, ErrorCode]:
        partition, required = _stopped_follower_holds_the_hw(manager, controller, clock)
        waiting = asyncio.ensure_future(manager.wait_for_replication({TP: required}, 30_000))
        controller.answer(ErrorCode.INELIGIBLE_REPLICA)
        await asyncio.sleep(0)
        assert not waiting.done()  # 2 is caught up and alive: the HW waits for it
        manager.update_follower_fetch_state(partition, 2, required, 0, partition.log_end_offset)
        assert len(controller.submitted) == 1  # proposed again
        return await asyncio.wait_for(waiting, 1)

    assert asyncio.run(main()) == {TP: ErrorCode.NONE}
