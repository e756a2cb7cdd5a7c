"""``LeaderEpochFileCache.end_offset_for``: Kafka 3.9's ``LeaderEpochFileCache.endOffsetFor``
case by case (what OffsetsForLeaderEpoch answers and a leader's diverging-epoch check uses)."""

from __future__ import annotations

from pathlib import Path

import pytest

from franz.storage.leader_epoch import LeaderEpochFileCache

UNKNOWN = (-1, -1)
LOG_END = 20


@pytest.fixture
def cache(tmp_path: Path) -> LeaderEpochFileCache:
    cache = LeaderEpochFileCache(tmp_path)
    for epoch, start in ((2, 5), (4, 9), (7, 14)):
        cache.assign(epoch, start)
    return cache


@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (7, (7, LOG_END)),  # the latest epoch ends at the log end offset
        (4, (4, 14)),  # where the next epoch starts
        (5, (4, 14)),  # not cached: the floor epoch, ending where the next one starts
        (6, (4, 14)),
        (2, (2, 9)),
        (3, (2, 9)),
        (1, (1, 5)),  # below every cached epoch: itself, up to the first start offset
        (0, (0, 5)),
        (8, UNKNOWN),  # above the latest
        (-1, UNKNOWN),  # UNDEFINED_EPOCH
    ],
)
def test_end_offset_for(cache: LeaderEpochFileCache, requested: int, expected: tuple[int, int]):
    assert cache.end_offset_for(requested, LOG_END) == expected


def test_an_empty_cache_knows_no_epoch(tmp_path: Path) -> None:
    cache = LeaderEpochFileCache(tmp_path)
    assert [cache.end_offset_for(e, LOG_END) for e in (-1, 0, 3)] == [UNKNOWN] * 3


def test_end_offsets_survive_a_reload(cache: LeaderEpochFileCache, tmp_path: Path) -> None:
    reloaded = LeaderEpochFileCache(tmp_path)
    assert reloaded.end_offset_for(3, LOG_END) == (2, 9)
    assert reloaded.end_offset_for(7, 15) == (7, 15)
