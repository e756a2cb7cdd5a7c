"""What moves a leader's high watermark besides a follower's fetch and an append, and wakes
the acks=all produces waiting on it (``ReplicaManager.wait_for_replication``):

* a refused ISR addition (INELIGIBLE_REPLICA, OPERATION_NOT_ATTEMPTED, a failed request):
  the follower leaves the maximal ISR (``Partition._alter_partition_done``);
* an UpdateMetadata without a follower's broker among the live ones: a caught-up follower
  outside the ISR no longer holds the HW (``ReplicaManager.on_brokers_not_alive``).

Both are the moments after a controlled shutdown when nothing else may come: the producer's
in-flight requests all wait for that HW and the remaining followers are caught up, so the
produces timed out after ``request.timeout.ms`` (``bench.replication_bench``: 30 s).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path

from franz.clock import ManualClock
from franz.cluster.partition import LeaderAndIsrPartitionState
from franz.cluster.replica_manager import ReplicaManager
from franz.errors import ErrorCode
from franz.storage.files import TopicPartition
from franz.storage.log_manager import LogManager
from tests.unit.cluster.test_partition_replication import LAG_MS, Controller, make_manager
from tests.unit.storage.conftest import make_batch

TP = TopicPartition("orders", 0)


def lead(manager: ReplicaManager, isr: tuple[int, ...]) -> None:
    state = LeaderAndIsrPartitionState(TP.topic, 0, 0, 1, isr, (0, 1, 2), partition_epoch=5)
    assert manager.become_leader_or_follower([state], {TP.topic: uuid.uuid4()}) == {}


def test_a_refused_isr_addition_releases_the_waiting_produce(
    tmp_path: Path, open_manager: Callable[..., LogManager], clock: ManualClock
) -> None:
    controller = Controller()
    alive = {0, 1, 2}
    manager = make_manager(tmp_path, open_manager, clock, controller, alive)
    lead(manager, isr=(0, 1))
    partition = manager.partitions[TP]

    async def main() -> dict[TopicPartition, ErrorCode]:
        # Broker 2 catches up (its fetch proposes it for the ISR) and then stops, as a broker
        # after its controlled shutdown; the controller refuses it.
        manager.update_follower_fetch_state(partition, 2, 0, 0, partition.log_end_offset)
        assert len(controller.submitted) == 1 and partition.maximal_isr == {0, 1, 2}
        alive.discard(2)
        info = manager.append(TP, bytes(make_batch(0, 1000)), required_acks=-1)
        required = info.last_offset + 1
        manager.update_follower_fetch_state(partition, 1, required, 0, partition.log_end_offset)
        waiting = asyncio.ensure_future(manager.wait_for_replication({TP: required}, 30_000))
        await asyncio.sleep(0)
        assert not waiting.done() and partition.high_watermark == 0  # held by the pending 2
        controller.answer(ErrorCode.INELIGIBLE_REPLICA)
        # No fetch, no append: the answer alone moves the HW and completes the produce.
        outcome = await asyncio.wait_for(waiting, 5)
        assert partition.pending_isr is None and partition.isr == [0, 1]
        assert partition.high_watermark == required
        return outcome

    assert asyncio.run(main()) == {TP: ErrorCode.NONE}


def test_a_failed_isr_request_releases_the_waiting_produce(
    tmp_path: Path, open_manager: Callable[..., LogManager], clock: ManualClock
) -> None:
    controller = Controller()
    alive = {0, 1, 2}
    manager = make_manager(tmp_path, open_manager, clock, controller, alive)
    lead(manager, isr=(0, 1))
    partition = manager.partitions[TP]

    async def main() -> dict[TopicPartition, ErrorCode]:
        manager.update_follower_fetch_state(partition, 2, 0, 0, partition.log_end_offset)
        alive.discard(2)
        info = manager.append(TP, bytes(make_batch(0, 1000)), required_acks=-1)
        required = info.last_offset + 1
        manager.update_follower_fetch_state(partition, 1, required, 0, partition.log_end_offset)
        waiting = asyncio.ensure_future(manager.wait_for_replication({TP: required}, 30_000))
        await asyncio.sleep(0)
        assert not waiting.done()
        _, future = controller.submitted.pop(0)
        future.set_exception(ConnectionError("the controller went away"))
        return await asyncio.wait_for(waiting, 5)

    assert asyncio.run(main()) == {TP: ErrorCode.NONE}
    assert manager.partitions[TP].pending_isr is None


def test_a_caught_up_follower_holds_the_hw_until_its_broker_is_not_alive(
    tmp_path: Path, open_manager: Callable[..., LogManager], clock: ManualClock
) -> None:
    controller = Controller()
    alive = {0, 1, 2}
    manager = make_manager(tmp_path, open_manager, clock, controller, alive)
    lead(manager, isr=(0, 1))
    partition = manager.partitions[TP]

    async def main() -> dict[TopicPartition, ErrorCode]:
        # 2 fetched at the log end offset, was refused the ISR, and stopped fetching.
        manager.update_follower_fetch_state(partition, 2, 0, 0, partition.log_end_offset)
        controller.answer(ErrorCode.INELIGIBLE_REPLICA)
        await asyncio.sleep(0)
        assert partition.pending_isr is None and partition.isr == [0, 1]
        info = manager.append(TP, bytes(make_batch(0, 1000)), required_acks=-1)
        required = info.last_offset + 1
        manager.update_follower_fetch_state(partition, 1, required, 0, partition.log_end_offset)
        waiting = asyncio.ensure_future(manager.wait_for_replication({TP: required}, 30_000))
        await asyncio.sleep(0)
        # Caught up within the lag time and alive: the HW waits for it (Kafka's
        # shouldWaitForReplicaToJoinIsr).
        assert not waiting.done() and partition.high_watermark == 0
        manager.on_brokers_not_alive({7})  # another broker: nothing changes
        await asyncio.sleep(0)
        assert not waiting.done()
        alive.discard(2)  # the UpdateMetadata without broker 2
        manager.on_brokers_not_alive({2})
        return await asyncio.wait_for(waiting, 5)

    assert asyncio.run(main()) == {TP: ErrorCode.NONE}
    assert manager.partitions[TP].high_watermark == manager.partitions[TP].log_end_offset


def test_the_fetch_that_proposes_an_isr_addition_and_moves_the_hw_completes_the_produce(
    tmp_path: Path, open_manager: Callable[..., LogManager], clock: ManualClock
) -> None:
    controller = Controller()
    manager = make_manager(tmp_path, open_manager, clock, controller, {0, 1, 2})
    lead(manager, isr=(0, 1))
    partition = manager.partitions[TP]

    async def main() -> dict[TopicPartition, ErrorCode]:
        # 2 is caught up (refused once, say while its broker restarted): it holds the HW.
        manager.update_follower_fetch_state(partition, 2, 0, 0, partition.log_end_offset)
        controller.answer(ErrorCode.INELIGIBLE_REPLICA)
        await asyncio.sleep(0)
        info = manager.append(TP, bytes(make_batch(0, 1000)), required_acks=-1)
        required = info.last_offset + 1
        manager.update_follower_fetch_state(partition, 1, required, 0, partition.log_end_offset)
        waiting = asyncio.ensure_future(manager.wait_for_replication({TP: required}, 30_000))
        await asyncio.sleep(0)
        assert not waiting.done() and partition.high_watermark == 0
        # 2's next fetch both proposes it for the ISR again and lets the HW move.
        manager.update_follower_fetch_state(partition, 2, required, 0, partition.log_end_offset)
        assert len(controller.submitted) == 1
        return await asyncio.wait_for(waiting, 5)

    assert asyncio.run(main()) == {TP: ErrorCode.NONE}


def test_an_append_that_moves_the_hw_completes_the_earlier_produce(
    tmp_path: Path, open_manager: Callable[..., LogManager], clock: ManualClock
) -> None:
    controller = Controller()
    manager = make_manager(tmp_path, open_manager, clock, controller, {0, 1, 2})
    lead(manager, isr=(0, 1))
    partition = manager.partitions[TP]

    async def main() -> dict[TopicPartition, ErrorCode]:
        manager.update_follower_fetch_state(partition, 2, 0, 0, partition.log_end_offset)
        controller.answer(ErrorCode.INELIGIBLE_REPLICA)
        await asyncio.sleep(0)
        info = manager.append(TP, bytes(make_batch(0, 1000)), required_acks=-1)
        required = info.last_offset + 1
        manager.update_follower_fetch_state(partition, 1, required, 0, partition.log_end_offset)
        waiting = asyncio.ensure_future(manager.wait_for_replication({TP: required}, 30_000))
        await asyncio.sleep(0)
        assert not waiting.done()  # held by 2, caught up within the lag time
        clock.advance(LAG_MS + 1)  # 2 stopped fetching: no longer caught up
        manager.append(TP, bytes(make_batch(partition.log_end_offset, 1000)), required_acks=-1)
        assert partition.high_watermark == required
        return await asyncio.wait_for(waiting, 5)

    assert asyncio.run(main()) == {TP: ErrorCode.NONE}


def test_a_watch_started_at_the_read_sees_an_append_before_the_wait(
    tmp_path: Path, open_manager: Callable[..., LogManager], clock: ManualClock
) -> None:
    """Kafka's tryCompleteElseWatch: the Fetch handler watches in the step of its read; an
    append that runs before the long poll's first wait still wakes it at once."""
    manager = make_manager(tmp_path, open_manager, clock, Controller(), {0, 1, 2})
    lead(manager, isr=(0, 1))

    async def main() -> tuple[bool, bool, float]:
        follower = manager.watch_appends([TP], follower=True)
        consumer = manager.watch_appends([TP])
        manager.append(TP, bytes(make_batch(0, 1000)))  # a follower's waiter wakes on it
        partition = manager.partitions[TP]
        leo = partition.log_end_offset
        manager.update_follower_fetch_state(partition, 1, leo, 0, leo)  # the HW moves
        loop = asyncio.get_running_loop()
        started = loop.time()
        woke = await manager.wait_for_appends([TP], 30, follower=True, waiter=follower)
        woke_consumer = await manager.wait_for_appends([TP], 30, waiter=consumer)
        return woke, woke_consumer, loop.time() - started

    woke, woke_consumer, waited = asyncio.run(main())
    assert woke and woke_consumer and waited < 5
    assert manager._follower_waiters == {} and manager._waiters == {}


def test_an_unused_watch_is_unregistered(
    tmp_path: Path, open_manager: Callable[..., LogManager], clock: ManualClock
) -> None:
    manager = make_manager(tmp_path, open_manager, clock, Controller(), {0, 1, 2})
    lead(manager, isr=(0, 1))

    async def main() -> bool:
        waiter = manager.watch_appends([TP], follower=True)
        return await manager.wait_for_appends([TP], 0, follower=True, waiter=waiter)

    assert asyncio.run(main()) is False
    assert manager._follower_waiters == {}
