"""OffsetIndex and TimeIndex against a sorted-list oracle (Kafka's OffsetIndexTest style)."""

from __future__ import annotations

import bisect
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.storage.index.base import RESERVE_BYTES, CorruptIndexError, IndexFullError
from franz.storage.index.offset_index import OffsetIndex, OffsetPosition
from franz.storage.index.time_index import TimeIndex, TimestampOffset

BASE = 1000


def _floor(entries: list[tuple[int, int]], key: int, default: tuple[int, int]) -> tuple[int, int]:
    keys = [e[0] for e in entries]
    i = bisect.bisect_right(keys, key)
    return entries[i - 1] if i else default


@st.composite
def increasing_entries(draw: st.DrawFn, max_size: int = 200) -> list[tuple[int, int]]:
    steps = draw(st.lists(st.tuples(st.integers(1, 50), st.integers(1, 5000)), max_size=max_size))
    out, offset, position = [], BASE, 0
    for d_offset, d_position in steps:
        offset += d_offset
        position += d_position
        out.append((offset, position))
    return out


@settings(max_examples=60, deadline=None)
@given(
    entries=increasing_entries(), probes=st.lists(st.integers(BASE - 5, BASE + 12000), max_size=40)
)
def test_offset_index_lookup_returns_floor_entry(tmp_path_factory, entries, probes):
    path = tmp_path_factory.mktemp("idx") / "00000000000000001000.index"
    index = OffsetIndex(path, BASE, 8 * 256)
    for offset, position in entries:
        index.append(offset, position)
    for probe in probes + [e[0] for e in entries]:
        assert index.lookup(probe) == OffsetPosition(*_floor(entries, probe, (BASE, 0)))
    index.close()
    # A clean close trims the file to exactly the valid entries, Kafka's on-disk form.
    assert path.stat().st_size == 8 * len(entries)
    reopened = OffsetIndex(path, BASE, 8 * 256)
    assert [tuple(reopened.entry_at(i)) for i in range(reopened.entries)] == entries
    for probe in probes:
        assert reopened.lookup(probe) == OffsetPosition(*_floor(entries, probe, (BASE, 0)))
    reopened.close()


@settings(max_examples=40, deadline=None)
@given(entries=increasing_entries(), cut=st.integers(BASE, BASE + 12000))
def test_offset_index_truncate_to_removes_entries_at_or_after_offset(
    tmp_path_factory, entries, cut
):
    index = OffsetIndex(tmp_path_factory.mktemp("idx") / "a.index", BASE, 8 * 256)
    for offset, position in entries:
        index.append(offset, position)
    index.truncate_to(cut)
    kept = [e for e in entries if e[0] < cut]
    assert [tuple(index.entry_at(i)) for i in range(index.entries)] == kept
    index.close()


def test_offset_index_is_preallocated_and_bytes_are_big_endian(tmp_path):
    path = tmp_path / "00000000000000001000.index"
    index = OffsetIndex(path, BASE, 100)  # rounded down to whole 8-byte entries
    assert path.stat().st_size == 96 and index.max_entries == 12
    index.append(BASE + 7, 4242)
    index.flush()
    assert path.read_bytes()[:8] == struct.pack(">ii", 7, 4242)
    index.close()
    assert path.read_bytes() == struct.pack(">ii", 7, 4242)


def test_offset_index_refuses_non_increasing_and_full_appends(tmp_path):
    index = OffsetIndex(tmp_path / "a.index", BASE, 16)
    index.append(BASE + 1, 10)
    with pytest.raises(ValueError):
        index.append(BASE + 1, 20)
    with pytest.raises(ValueError):
        index.append(BASE + 2, 10)
    index.append(BASE + 2, 20)
    assert index.is_full()
    with pytest.raises(IndexFullError):
        index.append(BASE + 3, 30)
    index.close()


def test_offset_index_resize_keeps_entries(tmp_path):
    index = OffsetIndex(tmp_path / "a.index", BASE, 64)
    index.append(BASE + 1, 10)
    index.trim_to_valid_size()
    assert index.file_length == 8 and index.is_full()
    index.resize(800)
    assert index.max_entries == 100 and index.lookup(BASE + 5) == (BASE + 1, 10)
    index.close()


def test_offset_index_sanity_check_finds_untrimmed_and_bad_files(tmp_path):
    path = tmp_path / "a.index"
    index = OffsetIndex(path, BASE, 80)
    index.append(BASE + 3, 100)
    index.flush()
    index.close_handler()  # a crash: the file keeps its preallocated zeros
    reopened = OffsetIndex(path, BASE, 80)
    with pytest.raises(CorruptIndexError):
        reopened.sanity_check(log_size=1000)
    reopened.close_handler()
    path.write_bytes(b"\x00" * 13)
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, BASE, 80).sanity_check(log_size=1000)
    path.write_bytes(struct.pack(">ii", 3, 5000))
    with pytest.raises(CorruptIndexError, match="past the end"):
        OffsetIndex(path, BASE, 80).sanity_check(log_size=1000)


@settings(max_examples=60, deadline=None)
@given(
    steps=st.lists(st.tuples(st.integers(-3, 40), st.integers(0, 9)), max_size=150),
    probes=st.lists(st.integers(-10, 7000), max_size=40),
)
def test_time_index_keeps_only_growing_timestamps_and_looks_up_floor(
    tmp_path_factory, steps, probes
):
    index = TimeIndex(tmp_path_factory.mktemp("t") / "a.timeindex", BASE, 12 * 200)
    oracle: list[tuple[int, int]] = []
    ts, offset = 0, BASE
    for d_ts, d_offset in steps:
        ts, offset = ts + d_ts, offset + d_offset
        index.maybe_append(ts, offset)
        if not oracle or ts > oracle[-1][0]:
            oracle.append((ts, offset))
    assert [tuple(index.entry_at(i)) for i in range(index.entries)] == oracle
    for probe in probes:
        assert index.lookup(probe) == TimestampOffset(*_floor(oracle, probe, (-1, BASE)))
    index.close()


def test_time_index_keeps_one_slot_for_the_final_entry(tmp_path):
    index = TimeIndex(tmp_path / "a.timeindex", BASE, 36)  # 3 slots
    index.maybe_append(10, BASE + 1)
    index.maybe_append(20, BASE + 2)
    assert index.is_full()
    with pytest.raises(ValueError):
        index.maybe_append(30, BASE + 3)
    index.maybe_append(30, BASE + 3, skip_full_check=True)
    assert index.last_entry == (30, BASE + 3)
    index.truncate_to(BASE + 2)
    assert index.entries == 1 and index.last_entry == (10, BASE + 1)
    index.close()


def _allocated(path) -> int:
    return path.stat().st_blocks * 512


def test_index_preallocation_is_sparse_and_blocks_come_with_entries(tmp_path):
    # Kafka's setLength: a new 10 MiB index has its length but no blocks; blocks are
    # reserved a page (RESERVE_BYTES) at a time just before entries are stored there.
    offsets = OffsetIndex(tmp_path / "00000000000000001000.index", BASE, 10 << 20)
    times = TimeIndex(tmp_path / "00000000000000001000.timeindex", BASE, 10 << 20)
    assert offsets.path.stat().st_size == 10 << 20
    assert times.path.stat().st_size == (10 << 20) - (10 << 20) % 12
    assert _allocated(offsets.path) == 0 and _allocated(times.path) == 0

    offsets.append(BASE + 1, 100)
    times.maybe_append(1_000, BASE + 1)
    assert 0 < _allocated(offsets.path) <= 2 * RESERVE_BYTES
    assert 0 < _allocated(times.path) <= 2 * RESERVE_BYTES
    entries = RESERVE_BYTES // 8 + 10  # into the second page
    for i in range(2, entries + 1):
        offsets.append(BASE + i, 100 * i)
    assert RESERVE_BYTES < _allocated(offsets.path) <= 3 * RESERVE_BYTES
    assert offsets.lookup(BASE + entries) == (BASE + entries, 100 * entries)

    # Trimmed on close to the valid entries (Kafka's form), then reopened and grown again.
    offsets.close()
    times.close()
    assert offsets.path.stat().st_size == 8 * entries
    assert times.path.stat().st_size == 12
    reopened = OffsetIndex(offsets.path, BASE, 10 << 20)
    reopened.resize(10 << 20)
    assert reopened.path.stat().st_size == 10 << 20
    assert _allocated(reopened.path) <= 3 * RESERVE_BYTES
    reopened.append(BASE + entries + 1, 100 * (entries + 1))
    # Reserving space for the new entry wrote zeros after it only, never over the old ones.
    assert [tuple(reopened.entry_at(i)) for i in range(reopened.entries)] == [
        (BASE + i, 100 * i) for i in range(1, entries + 2)
    ]
    reopened.close()
    assert reopened.path.stat().st_size == 8 * (entries + 1)


def test_time_index_entries_across_reserved_chunks_read_back(tmp_path):
    # 12-byte entries straddle the 4 KiB chunk boundaries; a reset (a rebuild after a crash)
    # writes the slots again from the start.
    index = TimeIndex(tmp_path / "00000000000000001000.timeindex", BASE, 10 << 20)
    count = 2 * RESERVE_BYTES // 12 + 5
    for round_ in range(2):
        for i in range(count):
            index.maybe_append(1_000 * (i + 1) + round_, BASE + i)
        assert [tuple(index.entry_at(i)) for i in range(index.entries)] == [
            (1_000 * (i + 1) + round_, BASE + i) for i in range(count)
        ]
        index.reset()
    index.close_handler()
