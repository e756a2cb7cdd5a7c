"""Producer ids (Kafka's ``ProducerIdManager``): blocks from the metadata store, never reused."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.broker.producer_ids import (
    BLOCK_SIZE,
    PREFETCH_THRESHOLD,
    ProducerIdManager,
    ZkProducerIdManager,
)
from franz.metadata.local import LocalMetadataStore


class CountingStore(LocalMetadataStore):
    """The real store, counting block reservations (each one is a durable write)."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.allocations: list[tuple[int, int]] = []

    def allocate_producer_ids(self, count: int) -> int:
        first = super().allocate_producer_ids(count)
        self.allocations.append((first, count))
        return first


def open_store(directory: Path) -> CountingStore:
    store = CountingStore(directory)
    store.load()
    return store


def test_block_size_is_kafkas() -> None:
    # Kafka's ProducerIdManager reserves ids in blocks of 1000 (PidBlockSize).
    assert BLOCK_SIZE == 1000


def test_ids_are_consecutive_from_the_first_block(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    manager = ProducerIdManager(store)
    assert [manager.next_id() for _ in range(5)] == [0, 1, 2, 3, 4]
    assert store.allocations == [(0, BLOCK_SIZE)]


def test_one_store_write_per_block(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    manager = ProducerIdManager(store)
    ids = [manager.next_id() for _ in range(2 * BLOCK_SIZE + 1)]
    assert ids == list(range(2 * BLOCK_SIZE + 1))
    assert store.allocations == [
        (0, BLOCK_SIZE),
        (BLOCK_SIZE, BLOCK_SIZE),
        (2 * BLOCK_SIZE, BLOCK_SIZE),
    ]


def test_no_store_write_before_the_first_id(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    ProducerIdManager(store)
    assert store.allocations == []
    assert not store.path.exists()


def test_restart_starts_a_fresh_block(tmp_path: Path) -> None:
    manager = ProducerIdManager(open_store(tmp_path))
    before = [manager.next_id() for _ in range(3)]  # 997 ids of the block never handed out
    restarted = ProducerIdManager(open_store(tmp_path))
    after = restarted.next_id()
    assert after == BLOCK_SIZE
    assert after > max(before)


def test_two_managers_on_one_store_never_share_an_id(tmp_path: Path) -> None:
    store = open_store(tmp_path)
    a, b = ProducerIdManager(store), ProducerIdManager(store)
    ids = [m.next_id() for _ in range(BLOCK_SIZE + 10) for m in (a, b)]
    assert len(set(ids)) == len(ids)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(0, 2 * BLOCK_SIZE + 5), min_size=1, max_size=5))
def test_ids_never_repeat_across_restarts(
    tmp_path_factory: pytest.TempPathFactory, runs: list[int]
) -> None:
    directory = tmp_path_factory.mktemp("pids")
    seen: list[int] = []
    for count in runs:
        manager = ProducerIdManager(open_store(directory))
        seen.extend(manager.next_id() for _ in range(count))
    assert len(set(seen)) == len(seen)
    assert seen == sorted(seen)


# -- cluster mode: ZkProducerIdManager ------------------------------------------------------


class SharedBlocks:
    """What ``/latest_producer_id_block`` gives every broker: the next unclaimed block (the
    ZooKeeper side is tested in tests/cluster/test_zookeeper_configs.py)."""

    def __init__(self) -> None:
        self.next_first = 0
        self.claims = 0
        self.fail = False

    async def allocate(self, count: int) -> int:
        await asyncio.sleep(0)  # a round trip: other requests run meanwhile
        if self.fail:
            raise ConnectionError("ZooKeeper unreachable")
        first, self.next_first = self.next_first, self.next_first + count
        self.claims += 1
        return first


async def take(manager: ZkProducerIdManager) -> int:
    got = manager.generate()
    return got if isinstance(got, int) else await got


def test_zk_manager_awaits_its_first_block_then_prefetches_the_next() -> None:
    async def scenario() -> None:
        blocks = SharedBlocks()
        manager = ZkProducerIdManager(blocks.allocate, broker_id=1)
        pending = manager.generate()
        assert not isinstance(pending, int)  # no block yet: an awaitable
        ids = [await pending]
        ids += [await take(manager) for _ in range(int(BLOCK_SIZE * PREFETCH_THRESHOLD))]
        await asyncio.sleep(0.01)
        # The 90 % mark started the next claim in the background.
        assert blocks.claims == 2
        ids += [await take(manager) for _ in range(BLOCK_SIZE)]
        assert ids == list(range(len(ids)))

    asyncio.run(scenario())


def test_zk_managers_of_several_brokers_never_share_an_id() -> None:
    async def scenario() -> None:
        blocks = SharedBlocks()
        managers = [ZkProducerIdManager(blocks.allocate, broker_id=b) for b in (1, 2, 3)]
        ids = await asyncio.gather(*(take(m) for _ in range(1500) for m in managers))
        assert len(set(ids)) == len(ids) == 4500

    asyncio.run(scenario())


def test_zk_manager_surfaces_a_failed_claim_and_recovers() -> None:
    async def scenario() -> None:
        blocks = SharedBlocks()
        blocks.fail = True
        manager = ZkProducerIdManager(blocks.allocate, broker_id=1)
        with pytest.raises(ConnectionError):
            await take(manager)
        blocks.fail = False
        assert await take(manager) == 0

    asyncio.run(scenario())
