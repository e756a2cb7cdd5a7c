"""Incremental fetch sessions (KIP-227, Fetch v7+): Kafka's ``FetchSession`` and cache.

A session remembers, per partition, what the client fetches (offset, max bytes) and what it
was last told (high watermark, log start offset), so an incremental request lists only
partitions whose fetch position changed, and an incremental response only partitions with
news: records, an error, or a changed high watermark / log start offset.

Request (session_id, epoch) -> action:

    (0, -1)   FINAL_EPOCH, no session: a full, sessionless fetch (response session id 0)
    (X, -1)   close session X, then a full sessionless fetch
    (0, 0) / (X, 0)
              INITIAL_EPOCH: (close X and) create a session holding the request's partitions;
              full response carrying the new session id (0 when the cache is full)
    (X, n>0)  incremental: X unknown -> FETCH_SESSION_ID_NOT_FOUND; n != X's next epoch ->
              INVALID_FETCH_SESSION_EPOCH; else apply the request's partitions (add/update) and
              forgotten topics (remove), answer with the changed partitions, next epoch n + 1

The cache holds at most ``max.incremental.fetch.session.cache.slots`` sessions and evicts the
least recently used one when full (Kafka also weighs session size and privilege; one slot
per client is what matters here).
"""

from __future__ import annotations

import collections
import random
from dataclasses import dataclass, field
from typing import Final

from franz.errors import ErrorCode

__all__ = ["CachedPartition", "FetchSession", "FetchSessionCache", "SessionKey"]

INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1

#: (topic name, partition)
SessionKey = tuple[str, int]


@dataclass(slots=True)
class CachedPartition:
    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    #: v12+ (KIP-320): the epoch of the last batch the fetcher has; -1: none given.
    last_fetched_epoch: int = -1
    #: What the last response said (-1: never sent).
    high_watermark: int = -1
    log_start_offset: int = -1
    #: A follower's own log start offset, from its request (v5+).
    fetcher_log_start_offset: int = -1

    def changed(self, high_watermark: int, log_start_offset: int) -> bool:
        """Record what is being sent; True if it differs from what was sent before."""
        changed = high_watermark != self.high_watermark or log_start_offset != self.log_start_offset
        self.high_watermark = high_watermark
        self.log_start_offset = log_start_offset
        return changed


@dataclass(slots=True)
class FetchSession:
    session_id: int
    next_epoch: int = 1
    partitions: collections.OrderedDict[SessionKey, CachedPartition] = field(
        default_factory=collections.OrderedDict
    )

    def upsert(self, cached: CachedPartition) -> None:
        existing = self.partitions.get((cached.topic, cached.partition))
        if existing is None:
            self.partitions[(cached.topic, cached.partition)] = cached
        else:
            existing.fetch_offset = cached.fetch_offset
            existing.max_bytes = cached.max_bytes
            existing.current_leader_epoch = cached.current_leader_epoch
            existing.fetcher_log_start_offset = cached.fetcher_log_start_offset
            existing.last_fetched_epoch = cached.last_fetched_epoch

    def forget(self, key: SessionKey) -> None:
        self.partitions.pop(key, None)

    def rotate_to_end(self, keys: list[SessionKey]) -> None:
        """Partitions that returned data go last next time, so none starves (Kafka does
        the same round-robin)."""
        for key in keys:
            if key in self.partitions:
                self.partitions.move_to_end(key)


class FetchSessionCache:
    def __init__(self, max_slots: int, rng: random.Random | None = None) -> None:
        self.max_slots = max_slots
        self._sessions: collections.OrderedDict[int, FetchSession] = collections.OrderedDict()
        self._rng = rng or random.Random()

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self) -> FetchSession | None:
        """A new session, or None when sessions are disabled (0 slots)."""
        if self.max_slots <= 0:
            return None
        while len(self._sessions) >= self.max_slots:
            self._sessions.popitem(last=False)
        session_id = 0
        while session_id == 0 or session_id in self._sessions:
            session_id = self._rng.randint(1, 2**31 - 1)
        session = FetchSession(session_id)
        self._sessions[session_id] = session
        return session

    def remove(self, session_id: int) -> None:
        self._sessions.pop(session_id, None)

    def lookup(self, session_id: int, epoch: int) -> FetchSession | ErrorCode:
        """The session for an incremental request, or the error to answer with."""
        session = self._sessions.get(session_id)
        if session is None:
            return ErrorCode.FETCH_SESSION_ID_NOT_FOUND
        if epoch != session.next_epoch:
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH
        self._sessions.move_to_end(session_id)
        return session
