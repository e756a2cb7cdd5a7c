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

The cache holds at most ``max.incremental.fetch.session.cache.slots`` sessions. When it is
full, a new session may evict one as Kafka's ``FetchSessionCache.tryEvict`` decides: first
the least recently used session if it is *stale* (unused for ``EVICTION_MS``, Kafka's
``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS``, 120 s); else the least valuable *evictable*
session, ordered by (privileged, partitions, id), if the new one is worth more: a follower's
(privileged) session may evict any consumer's, and a session older than ``EVICTION_MS`` may be
evicted by one with more partitions (of equal or higher privilege). Otherwise no session is
created: the fetch is answered in full with session id 0, and the client stays sessionless.
So consumers coming and going never cost followers their sessions. A session's size and age
are taken when it is used (Kafka's ``touch``). An incremental request that leaves its session
with no partitions closes it and is answered sessionless (session id 0), as Kafka.
"""

from __future__ import annotations

import collections
import random
from dataclasses import dataclass, field
from typing import Final

from franz.clock import Clock, SystemClock
from franz.errors import ErrorCode

__all__ = ["CachedPartition", "FetchSession", "FetchSessionCache", "SessionKey"]

INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
#: Kafka's ``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS``: a session unused this long is
#: stale, and one created this long ago may be evicted by a bigger one.
EVICTION_MS: Final = 120_000

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
    #: A follower's session (Kafka's ``privileged``): consumers' sessions never evict it.
    privileged: bool = False
    creation_ms: int = 0
    last_used_ms: int = 0
    #: The partitions it held when last used (Kafka's ``cachedSize``).
    cached_size: int = 0

    def evictable_key(self) -> tuple[bool, int, int]:
        """Kafka's ``EvictableKey``: the less valuable sessions sort first."""
        return (self.privileged, self.cached_size, self.session_id)

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
    def __init__(
        self,
        max_slots: int,
        rng: random.Random | None = None,
        clock: Clock | None = None,
        eviction_ms: int = EVICTION_MS,
    ) -> None:
        self.max_slots = max_slots
        self.eviction_ms = eviction_ms
        #: Sessions by id, least recently used first.
        self._sessions: collections.OrderedDict[int, FetchSession] = collections.OrderedDict()
        self._rng = rng or random.Random()
        self._clock: Clock = clock or SystemClock()
        #: Sessions evicted to make room (Kafka's ``IncrementalFetchSessionEvictionsPerSec``).
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def _now_ms(self) -> int:
        return self._clock.monotonic_ns() // 1_000_000

    def create(self, *, privileged: bool = False, size: int = 0) -> FetchSession | None:
        """A new session for a fetcher (``privileged``: a follower) asking for ``size``
        partitions; None when sessions are disabled (0 slots) or the cache is full and
        nothing may be evicted for it (module docstring)."""
        if self.max_slots <= 0:
            return None
        now = self._now_ms()
        while len(self._sessions) >= self.max_slots:
            if not self._try_evict(privileged, size, now):
                return None
        session_id = 0
        while session_id == 0 or session_id in self._sessions:
            session_id = self._rng.randint(1, 2**31 - 1)
        session = FetchSession(
            session_id, privileged=privileged, creation_ms=now, last_used_ms=now, cached_size=size
        )
        self._sessions[session_id] = session
        return session

    def _try_evict(self, privileged: bool, size: int, now: int) -> bool:
        """Kafka's ``tryEvict``: evict a stale session, else the least valuable evictable
        one if the new session is worth at least as much; True if one was evicted."""
        if not self._sessions:
            return False
        lru = next(iter(self._sessions.values()))
        if now - lru.last_used_ms > self.eviction_ms:
            self._evict(lru)
            return True
        candidates = [
            s
            for s in self._sessions.values()
            if now - s.creation_ms > self.eviction_ms or (privileged and not s.privileged)
        ]
        if not candidates:
            return False
        victim = min(candidates, key=FetchSession.evictable_key)
        if (privileged, size, 0) < victim.evictable_key():
            return False
        self._evict(victim)
        return True

    def _evict(self, session: FetchSession) -> None:
        del self._sessions[session.session_id]
        self.evictions += 1

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
        session.last_used_ms = self._now_ms()
        return session

    def touch(self, session: FetchSession) -> None:
        """Record the session's size after a request updated it (Kafka's ``touch``)."""
        session.cached_size = len(session.partitions)
