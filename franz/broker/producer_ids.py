"""Producer id allocation (Kafka's ``ProducerIdManager``).

Ids are reserved from the metadata store in blocks of ``BLOCK_SIZE`` (Kafka's
``/latest_producer_id_block`` znode does the same), so each InitProducerId costs no write
and an id is never reused after a restart: a restarted broker starts a fresh block.
"""

from __future__ import annotations

from typing import Final

from franz.metadata.store import MetadataStore

__all__ = ["BLOCK_SIZE", "ProducerIdManager"]

BLOCK_SIZE: Final = 1000


class ProducerIdManager:
    def __init__(self, store: MetadataStore) -> None:
        self._store = store
        self._next = 0
        self._end = 0

    def next_id(self) -> int:
        if self._next >= self._end:
            self._next = self._store.allocate_producer_ids(BLOCK_SIZE)
            self._end = self._next + BLOCK_SIZE
        producer_id = self._next
        self._next += 1
        return producer_id
