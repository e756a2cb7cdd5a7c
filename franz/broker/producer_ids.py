"""Producer id allocation (Kafka's ``ProducerIdManager``).

Ids are reserved in blocks of ``BLOCK_SIZE`` (Kafka's ``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``),
so each InitProducerId costs no write and an id is never reused after a restart: a restarted
broker starts a fresh block.

* ``ProducerIdManager`` (embedded single node): blocks from the local metadata store, a
  synchronous file write.
* ``ZkProducerIdManager`` (cluster mode): blocks claimed in ZooKeeper's
  ``/latest_producer_id_block`` by a set conditional on the znode's version, retried when
  another broker won the race (``ZooKeeperMetadataStore.allocate_producer_ids``, Kafka's
  ``ZkProducerIdManager.getNewProducerIdBlock``), so every broker of the cluster hands out
  distinct ids. The claim is a network round trip: it never runs on the request path when it
  can be avoided. Like Kafka's ``RPCProducerIdManager`` the next block is prefetched in the
  background once 90 % of the current one is used (``PREFETCH_THRESHOLD``); a request that
  finds both used up (a burst, or the first one after start) awaits the claim in flight
  (Kafka 3.9's ZooKeeper-mode manager blocks its request thread on the write instead).

Both answer ``generate()``: an id, or (cluster mode, no id at hand) an awaitable of one.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final, Protocol

from franz.metadata.store import MetadataStore

__all__ = [
    "BLOCK_SIZE",
    "PREFETCH_THRESHOLD",
    "ProducerIdGenerator",
    "ProducerIdManager",
    "ZkProducerIdManager",
]

log = logging.getLogger(__name__)

BLOCK_SIZE: Final = 1000

#: Fraction of a block handed out before the next one is claimed (Kafka's
#: ``RPCProducerIdManager.PidPrefetchThreshold``).
PREFETCH_THRESHOLD: Final = 0.90


class ProducerIdGenerator(Protocol):
    def generate(self) -> int | Awaitable[int]:
        """A producer id never handed out before in the cluster."""
        ...


class ProducerIdManager:
    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        self._next = 0
        self._end = 0

    def generate(self) -> int:
        return self.next_id()

    def next_id(self) -> int:
        if self._next >= self._end:
            self._next = self._store.allocate_producer_ids(BLOCK_SIZE)
            self._end = self._next + BLOCK_SIZE
        producer_id = self._next
        self._next += 1
        return producer_id


class ZkProducerIdManager:
    """Cluster mode's generator (module docstring). ``allocate(count)`` claims a block in
    ZooKeeper and returns its first id. Single-threaded: runs on the broker's loop."""

    def __init__(self, allocate: Callable[[int], Awaitable[int]], broker_id: int) -> None:
        self._allocate = allocate
        self.broker_id = broker_id
        self._next = 0
        self._end = 0  # exclusive; next == end: the current block is used up
        self._prefetched: tuple[int, int] | None = None
        self._claim: asyncio.Task[tuple[int, int]] | None = None

    def generate(self) -> int | Awaitable[int]:
        producer_id = self._take()
        if producer_id is not None:
            return producer_id
        return self._wait_for_block()

    def _take(self) -> int | None:
        if self._next >= self._end and self._prefetched is not None:
            self._next, self._end = self._prefetched
            self._prefetched = None
        if self._next >= self._end:
            self._start_claim()
            return None
        producer_id = self._next
        self._next += 1
        used = BLOCK_SIZE - (self._end - self._next)
        if used >= BLOCK_SIZE * PREFETCH_THRESHOLD and self._prefetched is None:
            self._start_claim()
        return producer_id

    async def _wait_for_block(self) -> int:
        # Several claims may be needed when a burst of waiters drains each new block.
        while True:
            claim = self._claim
            if claim is not None:
                await asyncio.shield(claim)
            producer_id = self._take()
            if producer_id is not None:
                return producer_id

    def _start_claim(self) -> None:
        if self._claim is not None:
            return
        self._claim = asyncio.get_running_loop().create_task(self._claim_block())
        self._claim.add_done_callback(_log_failure)

    async def _claim_block(self) -> tuple[int, int]:
        try:
            first = await self._allocate(BLOCK_SIZE)
        finally:
            self._claim = None
        block = (first, first + BLOCK_SIZE)
        self._prefetched = block
        log.info(
            "broker %d claimed producer id block [%d, %d]",
            self.broker_id,
            first,
            first + BLOCK_SIZE - 1,
        )
        return block


def _log_failure(task: asyncio.Task[tuple[int, int]]) -> None:
    """A failed claim is retried by the next request; say why (and mark it retrieved)."""
    if not task.cancelled() and (exc := task.exception()) is not None:
        log.warning("claiming a producer id block in ZooKeeper failed: %s", exc)
