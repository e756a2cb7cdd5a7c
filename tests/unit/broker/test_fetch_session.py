"""Incremental fetch sessions (KIP-227): the session cache (Kafka's eviction rules) and what
a session remembers."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from franz.broker.fetch_session import (
    EVICTION_MS,
    FINAL_EPOCH,
    INITIAL_EPOCH,
    CachedPartition,
    FetchSession,
    FetchSessionCache,
)
from franz.clock import ManualClock
from franz.errors import ErrorCode

MAX_SESSION_ID = 2**31 - 1


class ScriptedRandom(random.Random):
    """A Random whose ``randint`` returns the given values in order (then falls back)."""

    def __init__(self, values: list[int]) -> None:
        super().__init__(0)
        self.values = list(values)

    def randint(self, a: int, b: int) -> int:
        if self.values:
            return self.values.pop(0)
        return super().randint(a, b)


def cached(topic: str = "t", partition: int = 0, offset: int = 0, **kwargs: int) -> CachedPartition:
    return CachedPartition(topic, partition, offset, kwargs.pop("max_bytes", 1024), **kwargs)


# -- the cache ---------------------------------------------------------------------------------


def test_epoch_constants_are_kafkas() -> None:
    assert (INITIAL_EPOCH, FINAL_EPOCH) == (0, -1)


def test_create_returns_a_fresh_session() -> None:
    cache = FetchSessionCache(10, random.Random(1))
    session = cache.create()
    assert session is not None
    assert 1 <= session.session_id <= MAX_SESSION_ID
    assert session.next_epoch == 1
    assert not session.partitions
    assert len(cache) == 1
    assert cache.lookup(session.session_id, 1) is session


@given(st.integers(1, 50), st.integers(0, 2**32))
def test_session_ids_are_unique_positive_int32s(count: int, seed: int) -> None:
    cache = FetchSessionCache(count, random.Random(seed))
    sessions = [cache.create() for _ in range(count)]
    ids = [s.session_id for s in sessions if s is not None]
    assert len(set(ids)) == count
    assert all(1 <= i <= MAX_SESSION_ID for i in ids)


def test_session_id_collision_draws_again() -> None:
    cache = FetchSessionCache(10, ScriptedRandom([7, 7, 7, 9]))
    first = cache.create()
    second = cache.create()
    assert first is not None and second is not None
    assert (first.session_id, second.session_id) == (7, 9)


@pytest.mark.parametrize("slots", [0, -1])
def test_no_slots_means_no_sessions(slots: int) -> None:
    cache = FetchSessionCache(slots)
    assert cache.create() is None
    assert len(cache) == 0


STALE = EVICTION_MS + 1


def test_a_full_cache_evicts_a_stale_session() -> None:
    """Kafka's tryEvict, first rule: the least recently used session, once unused for
    EVICTION_MS, makes room for anyone."""
    clock = ManualClock()
    cache = FetchSessionCache(2, random.Random(3), clock)
    a, b = cache.create(), cache.create()
    assert a is not None and b is not None
    clock.advance(STALE)
    c = cache.create()
    assert c is not None
    assert len(cache) == 2 and cache.evictions == 1
    assert cache.lookup(a.session_id, 1) is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert cache.lookup(b.session_id, 1) is b
    assert cache.lookup(c.session_id, 1) is c


def test_a_full_cache_of_fresh_sessions_makes_no_room_for_a_consumer() -> None:
    """A consumer cannot evict sessions that are neither stale nor old: it gets none, and
    its fetch is answered sessionless."""
    clock = ManualClock()
    cache = FetchSessionCache(2, random.Random(3), clock)
    a, b = cache.create(size=1), cache.create(size=1)
    clock.advance(EVICTION_MS - 1)
    assert cache.create(size=50) is None
    assert len(cache) == 2 and cache.evictions == 0
    assert a is not None and cache.lookup(a.session_id, 1) is a
    assert b is not None and cache.lookup(b.session_id, 1) is b


def test_a_followers_session_evicts_a_consumers() -> None:
    clock = ManualClock()
    cache = FetchSessionCache(2, random.Random(3), clock)
    follower = cache.create(privileged=True, size=5)
    consumer = cache.create(size=1)
    assert follower is not None and consumer is not None
    other_follower = cache.create(privileged=True, size=1)
    assert other_follower is not None
    assert cache.lookup(consumer.session_id, 1) is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert cache.lookup(follower.session_id, 1) is follower
    # Two fresh followers' sessions: a third follower finds nothing it may evict.
    assert cache.create(privileged=True, size=100) is None


def test_consumers_never_evict_followers_sessions_however_old() -> None:
    clock = ManualClock()
    cache = FetchSessionCache(1, random.Random(3), clock)
    follower = cache.create(privileged=True, size=1)
    assert follower is not None
    for _ in range(3):
        clock.advance(EVICTION_MS // 2)
        assert cache.lookup(follower.session_id, 1) is follower  # in use: never stale
        assert cache.create(size=1000) is None


def test_an_old_session_is_evicted_by_a_bigger_one_only() -> None:
    """Past EVICTION_MS since its creation (and still in use), a session may be evicted by
    one of equal or higher privilege with more partitions: the least valuable first."""
    clock = ManualClock()
    cache = FetchSessionCache(2, random.Random(3), clock)
    small, big = cache.create(size=2), cache.create(size=10)
    assert small is not None and big is not None
    clock.advance(STALE)
    for session in (small, big):  # used lately: old, not stale
        assert cache.lookup(session.session_id, 1) is session
    assert cache.create(size=2) is None  # not bigger than the smallest
    newer = cache.create(size=3)
    assert newer is not None
    assert cache.lookup(small.session_id, 1) is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert cache.lookup(big.session_id, 1) is big


def test_touch_records_the_sessions_size() -> None:
    cache = FetchSessionCache(2)
    session = cache.create(size=1)
    assert session is not None
    for p in range(4):
        session.upsert(cached(partition=p))
    cache.touch(session)
    assert session.evictable_key() == (False, 4, session.session_id)


def test_failed_lookup_does_not_refresh_a_session() -> None:
    clock = ManualClock()
    cache = FetchSessionCache(2, random.Random(5), clock)
    a, b = cache.create(), cache.create()
    assert a is not None and b is not None
    clock.advance(STALE)
    assert cache.lookup(a.session_id, 5) is ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert cache.lookup(b.session_id, 1) is b
    cache.create()  # a is stale still, b was just used
    assert cache.lookup(a.session_id, 1) is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    assert cache.lookup(b.session_id, 2) is ErrorCode.INVALID_FETCH_SESSION_EPOCH  # still there


@given(st.lists(st.sampled_from(["create", "touch-oldest", "touch-newest"]), max_size=40))
def test_stale_sessions_go_least_recently_used_first(ops: list[str]) -> None:
    """With every step further apart than EVICTION_MS, every idle session is stale, so a
    full cache evicts exactly as an LRU list does."""
    slots = 3
    clock = ManualClock()
    cache = FetchSessionCache(slots, random.Random(6), clock)
    model: list[FetchSession] = []  # least recently used first
    for op in ops:
        clock.advance(STALE)
        if op == "create":
            session = cache.create()
            assert session is not None
            model.append(session)
            del model[:-slots]
        elif model:
            session = model.pop(0 if op == "touch-oldest" else -1)
            assert cache.lookup(session.session_id, session.next_epoch) is session
            model.append(session)
        assert len(cache) == len(model)
    for session in model:
        assert cache.lookup(session.session_id, session.next_epoch) is session


def test_unknown_session_id() -> None:
    cache = FetchSessionCache(4)
    assert cache.lookup(12345, 1) is ErrorCode.FETCH_SESSION_ID_NOT_FOUND


@pytest.mark.parametrize("epoch", [0, 2, 3, 100, 2**31 - 1])
def test_wrong_epoch(epoch: int) -> None:
    cache = FetchSessionCache(4)
    session = cache.create()
    assert session is not None
    assert cache.lookup(session.session_id, epoch) is ErrorCode.INVALID_FETCH_SESSION_EPOCH


def test_lookup_checks_the_sessions_next_epoch() -> None:
    cache = FetchSessionCache(4)
    session = cache.create()
    assert session is not None
    session.next_epoch = 8  # the Fetch handler advances it after each response
    assert cache.lookup(session.session_id, 7) is ErrorCode.INVALID_FETCH_SESSION_EPOCH
    assert cache.lookup(session.session_id, 8) is session
    # lookup itself does not advance the epoch
    assert cache.lookup(session.session_id, 8) is session


def test_lookup_error_codes_are_kafkas() -> None:
    assert ErrorCode.FETCH_SESSION_ID_NOT_FOUND == 70
    assert ErrorCode.INVALID_FETCH_SESSION_EPOCH == 71


def test_remove() -> None:
    cache = FetchSessionCache(4)
    session = cache.create()
    assert session is not None
    cache.remove(session.session_id)
    assert len(cache) == 0
    assert cache.lookup(session.session_id, 1) is ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    cache.remove(session.session_id)  # removing twice (or an unknown id) is harmless
    cache.remove(999)


def test_removed_session_frees_its_slot() -> None:
    cache = FetchSessionCache(2, random.Random(8))
    a, b = cache.create(), cache.create()
    assert a is not None and b is not None
    cache.remove(a.session_id)
    c = cache.create()
    assert c is not None
    assert cache.lookup(b.session_id, 1) is b
    assert cache.lookup(c.session_id, 1) is c


# -- a session's partitions --------------------------------------------------------------------


def test_upsert_adds_in_order() -> None:
    session = FetchSession(1)
    for p in (2, 0, 1):
        session.upsert(cached("t", p))
    assert list(session.partitions) == [("t", 2), ("t", 0), ("t", 1)]


def test_upsert_updates_the_fetch_position_and_keeps_what_was_sent() -> None:
    session = FetchSession(1)
    session.upsert(cached("t", 0, offset=10, max_bytes=100, current_leader_epoch=3))
    session.upsert(cached("u", 0))
    existing = session.partitions[("t", 0)]
    existing.changed(50, 2)  # a response was sent: HW 50, log start 2
    session.upsert(cached("t", 0, offset=20, max_bytes=200, current_leader_epoch=4))
    updated = session.partitions[("t", 0)]
    assert updated is existing
    assert (updated.fetch_offset, updated.max_bytes, updated.current_leader_epoch) == (20, 200, 4)
    assert (updated.high_watermark, updated.log_start_offset) == (50, 2)
    # An update keeps the partition's place in the round-robin order.
    assert list(session.partitions) == [("t", 0), ("u", 0)]


def test_forget() -> None:
    session = FetchSession(1)
    session.upsert(cached("t", 0))
    session.upsert(cached("t", 1))
    session.forget(("t", 0))
    session.forget(("t", 0))
    session.forget(("nope", 3))
    assert list(session.partitions) == [("t", 1)]


def test_rotate_to_end() -> None:
    session = FetchSession(1)
    for p in range(4):
        session.upsert(cached("t", p))
    session.rotate_to_end([("t", 1), ("missing", 0), ("t", 0)])
    assert list(session.partitions) == [("t", 2), ("t", 3), ("t", 1), ("t", 0)]


@given(st.lists(st.integers(0, 5), max_size=10))
def test_rotate_to_end_keeps_every_partition(order: list[int]) -> None:
    session = FetchSession(1)
    for p in range(6):
        session.upsert(cached("t", p))
    session.rotate_to_end([("t", p) for p in order])
    assert sorted(session.partitions) == [("t", p) for p in range(6)]
    if order:
        assert list(session.partitions)[-1] == ("t", order[-1])


# -- CachedPartition.changed -------------------------------------------------------------------


def test_changed_is_true_the_first_time() -> None:
    partition = cached()
    assert (partition.high_watermark, partition.log_start_offset) == (-1, -1)
    assert partition.changed(0, 0) is True
    assert (partition.high_watermark, partition.log_start_offset) == (0, 0)


def test_changed_only_when_hw_or_log_start_moves() -> None:
    partition = cached()
    partition.changed(10, 0)
    assert partition.changed(10, 0) is False
    assert partition.changed(11, 0) is True
    assert partition.changed(11, 0) is False
    assert partition.changed(11, 5) is True
    assert partition.changed(11, 5) is False
    assert partition.changed(3, 1) is True  # backwards counts too (truncation)


@given(st.lists(st.tuples(st.integers(-1, 5), st.integers(-1, 5)), max_size=20))
def test_changed_against_a_model(sent: list[tuple[int, int]]) -> None:
    partition = cached()
    last = (-1, -1)
    for hw, start in sent:
        assert partition.changed(hw, start) is ((hw, start) != last)
        last = (hw, start)
