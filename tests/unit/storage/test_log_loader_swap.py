"""A crash at every step of a compaction swap, recovered by the loader (Kafka's LogLoader).

A real cleaning round writes its ``.cleaned`` segments (``Cleaner.clean`` on a job built as
the broker builds it). The steps of ``Log.replace_segments`` are then replayed on the files
up to a crash point, the log is reopened, and the result must be either the cleaned or the
original content of each replaced range, never a mix inside a range, never a lost record:

1. ``.cleaned`` -> ``.swap`` (log, then indexes): before the three are ``.swap``, a crash
   rolls the group back (the swap is incomplete: KAFKA-6264's rule);
2. old segments -> ``.deleted``;
3. ``.swap`` -> final name.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from franz.clock import ManualClock
from franz.storage.cleaner.cleaner import CleanedGroup, Cleaner, CleaningResult
from franz.storage.cleaner.manager import CleanerConfig, LogCleanerManager
from franz.storage.cleaner.thread import build_job
from franz.storage.files import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX
from franz.storage.log import Log
from tests.unit.storage.test_cleaner import (
    Row,
    append_each,
    keyed_updates,
    open_log,
    oracle,
    rows,
)

SUFFIXES = (".log", ".index", ".timeindex")


def _clean_without_swap(
    tmp_path: Path, clock: ManualClock
) -> tuple[Log, list[Row], int, CleaningResult]:
    lg = open_log(tmp_path, clock)
    original = append_each(lg, clock, keyed_updates(150, 6))
    # Groups of several source segments: 1 KiB segments regrouped into 4 KiB.
    lg.update_config(replace(lg.config, segment_bytes=4096))
    manager = LogCleanerManager([tmp_path], clock)
    ltc = manager.log_to_clean(lg, clock.wall_ms())
    job, _ = build_job(ltc, CleanerConfig(), 10_000, clock.wall_ms())
    result = Cleaner(10_000).clean(job)
    assert result.ok and len(result.groups) > 2
    assert all(len(group.replaced) > 2 for group in result.groups[:2])
    return lg, original, ltc.first_uncleanable_offset, result


def _name(base: int, suffix: str) -> str:
    return f"{base:020d}{suffix}"


def _replay(directory: Path, group: CleanedGroup, step: str) -> None:
    """Replay ``replace_segments`` on the files of ``group`` up to ``step``."""
    base = group.base_offset

    def rename(old: str, new: str) -> None:
        os.replace(directory / old, directory / new)

    order = ["swap-log", "swap-all", "deleted-some", "deleted-all", "final-log", "final-all"]
    upto = order.index(step)
    for i, suffix in enumerate(SUFFIXES):
        if upto >= 1 or i == 0:
            rename(_name(base, suffix + CLEANED_SUFFIX), _name(base, suffix + SWAP_SUFFIX))
    if upto >= 2:
        for old in _deleted_before_crash(group, step):
            for suffix in SUFFIXES:
                rename(_name(old, suffix), _name(old, suffix + DELETED_SUFFIX))
    if upto >= 4:
        for i, suffix in enumerate(SUFFIXES):
            if upto >= 5 or i == 0:
                rename(_name(base, suffix + SWAP_SUFFIX), _name(base, suffix))


def _deleted_before_crash(group: CleanedGroup, step: str) -> tuple[int, ...]:
    if step in ("swap-log", "swap-all"):
        return ()
    if step == "deleted-some":
        return group.replaced[: max(1, len(group.replaced) // 2)]
    return group.replaced


def _expected(
    original: list[Row],
    uncleanable: int,
    result: CleaningResult,
    completed: dict[int, set[int]],
) -> list[Row]:
    """What the loader must leave: ``completed`` maps a group's base offset to the old
    segments renamed ``.deleted`` before the crash.

    A rolled-back group keeps its original rows. A completed group has its cleaned rows, plus
    the original rows of old segments that were not yet ``.deleted`` and lie at or above the
    cleaned segment's next offset: Kafka's loader deletes only ``[swap base, swap next
    offset)``; such segments hold superseded records only, so the log is merely less compacted.
    """
    cleaned = set(oracle(original, uncleanable, drop_tombstones=False))
    bounds = sorted(b for g in result.groups for b in g.replaced)
    owner = {b: g for g in result.groups for b in g.replaced}
    swap_next = {}
    for group in result.groups:
        last = max(
            (
                r[0]
                for r in cleaned
                if owner.get(_floor(bounds, r[0])) is group and r[0] < uncleanable
            ),
            default=group.base_offset,
        )
        swap_next[group.base_offset] = max(last + 1, group.base_offset + 1)
    out = []
    for row in original:
        floor = _floor(bounds, row[0])
        group = owner.get(floor) if floor is not None and row[0] < uncleanable else None
        if group is None or group.base_offset not in completed or row in cleaned:
            out.append(row)
        else:
            assert floor is not None
            deleted = completed[group.base_offset]
            if floor not in deleted and floor >= swap_next[group.base_offset]:
                out.append(row)  # an old segment the loader leaves in place
    return out


def _floor(bounds: list[int], offset: int) -> int | None:
    return max((b for b in bounds if b <= offset), default=None)


def _reopen(lg: Log, tmp_path: Path, clock: ManualClock) -> Log:
    lg.close_without_flush()
    reopened = open_log(tmp_path, clock)
    leftovers = [
        p.name
        for p in reopened.dir.iterdir()
        if p.name.endswith((CLEANED_SUFFIX, SWAP_SUFFIX, DELETED_SUFFIX))
    ]
    assert leftovers == []
    return reopened


def test_crash_while_writing_cleaned_files_rolls_back(tmp_path: Path, clock: ManualClock) -> None:
    lg, original, _, _ = _clean_without_swap(tmp_path, clock)
    reopened = _reopen(lg, tmp_path, clock)
    assert rows(reopened) == original
    reopened.close()


@pytest.mark.parametrize(
    ("step", "completes"),
    [
        ("swap-log", False),  # an index still .cleaned: incomplete, rolled back
        ("swap-all", True),
        ("deleted-some", True),
        ("deleted-all", True),
        ("final-log", True),
        ("final-all", True),
    ],
)
def test_crash_at_each_step_of_the_swap(
    tmp_path: Path, clock: ManualClock, step: str, completes: bool
) -> None:
    lg, original, uncleanable, result = _clean_without_swap(tmp_path, clock)
    first, second = result.groups[0], result.groups[1]
    _replay(lg.dir, first, "final-all")  # the first group was swapped in before the crash
    _replay(lg.dir, second, step)  # the crash hit the second; the rest are still .cleaned
    reopened = _reopen(lg, tmp_path, clock)
    completed = {first.base_offset: set(first.replaced)}
    if completes:
        completed[second.base_offset] = set(_deleted_before_crash(second, step))
    assert rows(reopened) == _expected(original, uncleanable, result, completed)
    # Every offset of the log is readable through the indexes of whatever was loaded.
    for offset in range(reopened.log_start_offset, reopened.log_end_offset):
        data = reopened.read(offset, 1 << 16).read_bytes()
        assert data
    reopened.close()


def test_a_swap_completed_by_the_loader_is_cleaned_again_normally(
    tmp_path: Path, clock: ManualClock
) -> None:
    lg, original, uncleanable, result = _clean_without_swap(tmp_path, clock)
    for group in result.groups:
        _replay(lg.dir, group, "swap-all")
    reopened = _reopen(lg, tmp_path, clock)
    assert rows(reopened) == oracle(original, uncleanable, drop_tombstones=False)
    assert [s.base_offset for s in reopened.segments[:-1]] == [g.base_offset for g in result.groups]
    reopened.close()
