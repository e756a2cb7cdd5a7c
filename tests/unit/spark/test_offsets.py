"""``franz.spark.offsets``: checkpoint JSON, rate limiting and range splitting."""

from __future__ import annotations

import json
import random

import pytest

from franz.spark.offsets import (
    OffsetRange,
    TopicPartition,
    offsets_from_json,
    offsets_to_json,
    rate_limit,
    split_ranges,
)

T0, T1, T2 = TopicPartition("t", 0), TopicPartition("t", 1), TopicPartition("t", 2)


def test_checkpoint_json_is_canonical_and_round_trips() -> None:
    offsets = {
        TopicPartition("b", 10): 5,
        TopicPartition("b", 2): 7,
        TopicPartition("a", 1): 0,
    }
    as_json = offsets_to_json(offsets)
    # Topics sorted, partitions sorted numerically ("2" before "10"), string keys.
    assert json.dumps(as_json) == '{"a": {"1": 0}, "b": {"2": 7, "10": 5}}'
    assert offsets_from_json(as_json) == offsets
    # Spark hands offsets back through JSON: text and dict forms both come back equal.
    assert offsets_from_json(json.loads(json.dumps(as_json))) == offsets
    # Any insertion order gives the same text.
    shuffled = list(offsets.items())
    random.Random(1).shuffle(shuffled)
    assert json.dumps(offsets_to_json(dict(shuffled))) == json.dumps(as_json)
    assert offsets_to_json({}) == {}


def test_rate_limit_without_backlog_beyond_limit_returns_latest() -> None:
    latest = {T0: 100, T1: 50}
    assert rate_limit(1000, {T0: 0, T1: 0}, latest) == latest
    assert rate_limit(150, {T0: 0, T1: 0}, latest) == latest


def test_rate_limit_is_proportional_to_backlog() -> None:
    end = rate_limit(300, {T0: 0, T1: 0, T2: 0}, {T0: 1000, T1: 1000, T2: 1000})
    assert end == {T0: 100, T1: 100, T2: 100}
    end = rate_limit(100, {T0: 0, T1: 500}, {T0: 300, T1: 600})
    # backlogs 300 and 100: shares 75 and 25
    assert end == {T0: 75, T1: 525}


def test_rate_limit_never_exceeds_the_limit_and_does_not_starve_small_partitions() -> None:
    # Spark's rounding (ceil below 1) would give 1 + 1 + 1 = 3 > 2 here.
    end = rate_limit(2, {T0: 0, T1: 0, T2: 0}, {T0: 1, T1: 1, T2: 1})
    assert sum(end[tp] for tp in (T0, T1, T2)) == 2
    # A small partition next to a big one still gets a record.
    end = rate_limit(10, {T0: 0, T1: 0}, {T0: 10_000, T1: 1})
    assert end == {T0: 9, T1: 1}


def test_rate_limit_new_partitions_start_at_zero_and_idle_ones_stay() -> None:
    end = rate_limit(10, {T0: 50}, {T0: 50, T1: 100})
    assert end == {T0: 50, T1: 10}


def test_rate_limit_property_total_is_min_of_limit_and_backlog() -> None:
    rng = random.Random(7)
    for _ in range(500):
        n = rng.randint(1, 6)
        tps = [TopicPartition("t", p) for p in range(n)]
        start = {tp: rng.randint(0, 50) for tp in tps}
        latest = {tp: start[tp] + rng.choice([0, 1, 2, rng.randint(0, 5000)]) for tp in tps}
        limit = rng.randint(1, 3000)
        end = rate_limit(limit, start, latest)
        taken = [end[tp] - start[tp] for tp in tps]
        backlog = sum(latest[tp] - start[tp] for tp in tps)
        assert all(0 <= t <= latest[tp] - start[tp] for t, tp in zip(taken, tps, strict=True))
        assert sum(taken) == min(limit, backlog)


def test_split_ranges_drops_empty_and_keeps_enough() -> None:
    ranges = [OffsetRange("t", 1, 5, 5), OffsetRange("t", 0, 0, 10)]
    assert split_ranges(ranges) == [OffsetRange("t", 0, 0, 10)]
    assert split_ranges(ranges, min_partitions=1) == [OffsetRange("t", 0, 0, 10)]


def test_min_partitions_splits_big_ranges_as_spark() -> None:
    ranges = [OffsetRange("t", 0, 0, 1000), OffsetRange("t", 1, 0, 10)]
    pieces = split_ranges(ranges, min_partitions=4)
    # t-1 is too small to split (rounds to one part); t-0 takes the other 3 parts.
    assert pieces == [
        OffsetRange("t", 0, 0, 333),
        OffsetRange("t", 0, 333, 666),
        OffsetRange("t", 0, 666, 1000),
        OffsetRange("t", 1, 0, 10),
    ]


@pytest.mark.parametrize("min_partitions", [1, 2, 3, 5, 8, 17])
def test_min_partitions_cover_every_offset_once(min_partitions: int) -> None:
    ranges = [OffsetRange("a", 0, 3, 1003), OffsetRange("b", 0, 0, 7), OffsetRange("b", 1, 9, 59)]
    pieces = split_ranges(ranges, min_partitions=min_partitions)
    assert len(pieces) >= min(min_partitions, len(ranges))
    covered = sorted((p.topic, p.partition, o) for p in pieces for o in range(p.start, p.end))
    expected = sorted((r.topic, r.partition, o) for r in ranges for o in range(r.start, r.end))
    assert covered == expected


def test_max_records_per_partition() -> None:
    pieces = split_ranges([OffsetRange("t", 0, 0, 25)], max_records_per_partition=10)
    assert [(p.start, p.end) for p in pieces] == [(0, 8), (8, 16), (16, 25)]
    assert all(p.size <= 10 for p in pieces)
