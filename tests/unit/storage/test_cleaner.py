"""The log cleaner on real segment files (``franz.storage.cleaner``), no mocks.

Logs are compacted topics with tiny segments. A round runs as in the broker: ``tick`` builds
the job on this thread, a real cleaner thread cleans, the next ``tick`` swaps the result in.
The expected log after a round comes from a simple oracle: below the first uncleanable
offset, a record stays iff it is the last of its key there (tombstones too, until their
delete horizon has passed); at and above it, every record stays as it was.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from franz.clock import ManualClock
from franz.config.topic import LogConfig
from franz.protocol.records.batch import RecordBatchView, iter_batches
from franz.protocol.records.compression import CompressionType
from franz.protocol.records.inflated import RecordBatchBuilder
from franz.storage.checkpoints import CLEANER_OFFSET_CHECKPOINT
from franz.storage.cleaner import CleanerConfig, LogCleaner
from franz.storage.cleaner.offset_map import BYTES_PER_ENTRY, OffsetMap, max_entries_for
from franz.storage.files import TopicPartition
from franz.storage.log import Log
from tests.support.kafka_format import parse_checkpoint
from tests.unit.storage.conftest import ManagerFactory, read_records, small_config

TP = TopicPartition("compacted", 0)
KV = tuple[bytes | None, bytes | None]
Row = tuple[int, bytes | None, bytes | None]

DELETE_RETENTION_MS = 1000


def compact_config(overrides: dict[str, object] | None = None) -> LogConfig:
    values: dict[str, object] = {
        "cleanup.policy": "compact",
        "min.cleanable.dirty.ratio": "0.01",
        "segment.bytes": 1024,
        "delete.retention.ms": DELETE_RETENTION_MS,
        "file.delete.delay.ms": 0,
    }
    values.update(overrides or {})
    return small_config(values)


def open_log(directory: Path, clock: ManualClock, config: LogConfig | None = None) -> Log:
    return Log(directory / TP.dir_name, TP, config or compact_config(), clock)


def append(
    lg: Log,
    clock: ManualClock,
    records: Sequence[KV],
    *,
    compression: CompressionType = CompressionType.NONE,
    producer: tuple[int, int, int] | None = None,
    advance_ms: int = 1,
) -> list[int]:
    """Append ``records`` as one batch (optionally idempotent: (pid, epoch, sequence));
    the HW follows the LEO as on a single-replica partition. Returns their offsets."""
    pid, epoch, seq = producer if producer else (-1, -1, -1)
    builder = RecordBatchBuilder(
        compression=compression, producer_id=pid, producer_epoch=epoch, base_sequence=seq
    )
    for key, value in records:
        builder.append(clock.wall_ms(), key, value)
    info = lg.append_as_leader(builder.build(), 0)
    lg.update_high_watermark(lg.log_end_offset)
    clock.advance(advance_ms)
    return list(range(info.first_offset, info.last_offset + 1))


def append_each(lg: Log, clock: ManualClock, records: Sequence[KV]) -> list[Row]:
    """One batch per record; returns (offset, key, value) of each."""
    rows: list[Row] = []
    for key, value in records:
        (offset,) = append(lg, clock, [(key, value)])
        rows.append((offset, key, value))
    return rows


def rows(lg: Log) -> list[Row]:
    return [(r.offset, r.key, r.value) for r in read_records(lg)]


def batches(lg: Log) -> list[RecordBatchView]:
    out: list[RecordBatchView] = []
    for segment in lg.segments:
        data = bytearray(segment.read_bytes(0, segment.size))
        out.extend(iter_batches(data))
    return out


def oracle(original: Sequence[Row], uncleanable: int, *, drop_tombstones: bool) -> list[Row]:
    last: dict[bytes, int] = {}
    for offset, key, _ in original:
        if offset < uncleanable and key is not None:
            last[key] = offset
    out = []
    for offset, key, value in original:
        latest = key is not None and last.get(key) == offset
        if offset >= uncleanable or (latest and (value is not None or not drop_tombstones)):
            out.append((offset, key, value))
    return out


def fast_config(**overrides: object) -> CleanerConfig:
    values: dict[str, object] = {"threads": 1, "backoff_ms": 0}
    values.update(overrides)
    return CleanerConfig(**values)  # type: ignore[arg-type]


@pytest.fixture
def cleaner(tmp_path: Path, clock: ManualClock) -> Iterator[LogCleaner]:
    made = LogCleaner([tmp_path], clock, fast_config())
    made.startup()
    yield made
    made.shutdown()


def clean_round(cleaner: LogCleaner, lg: Log) -> bool:
    """One round if the log is cleanable: start it, wait for the thread, swap it in."""
    logs = {lg.topic_partition: lg}
    status = cleaner.status().get(lg.topic_partition)
    before = status.cleanings if status else 0
    cleaner.tick(logs)
    if not cleaner.is_cleaning(lg.topic_partition):
        return False
    assert cleaner.await_idle(30)
    cleaner.tick(logs)
    status = cleaner.status().get(lg.topic_partition)
    return status is not None and status.cleanings > before


def keyed_updates(count: int, keys: int, prefix: bytes = b"v") -> list[KV]:
    return [(b"k%d" % (i % keys), prefix + b"%d" % i) for i in range(count)]


# -- offset map ---------------------------------------------------------------------------------


def test_offset_map_capacity_follows_kafkas_dedupe_buffer_arithmetic() -> None:
    assert max_entries_for(134217728, 1, 0.9) == int(134217728 // BYTES_PER_ENTRY * 0.9)
    assert max_entries_for(240, 2, 1.0) == 5
    omap = OffsetMap(2)
    omap.put(b"a", 3)
    omap.put(b"a", 5)
    assert (len(omap), omap.get(b"a"), omap.get(b"b"), omap.is_full) == (1, 5, -1, False)
    omap.put(b"b", 6)
    assert omap.is_full and omap.latest_offset == 6


# -- compaction ---------------------------------------------------------------------------------


def test_many_updates_per_key_shrink_to_the_latest_value_per_key(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    lg = open_log(tmp_path, clock)
    original = append_each(lg, clock, keyed_updates(200, 7))
    assert len(lg.segments) > 5
    active = lg.active_segment
    active_rows = [r for r in original if r[0] >= active.base_offset]
    size_before = lg.size_in_bytes

    assert clean_round(cleaner, lg)

    after = rows(lg)
    assert after == oracle(original, active.base_offset, drop_tombstones=False)
    assert lg.active_segment is active  # untouched, same object and bytes
    assert [r for r in after if r[0] >= active.base_offset] == active_rows
    assert lg.size_in_bytes < size_before / 3
    assert lg.log_end_offset == original[-1][0] + 1
    # Offsets kept: a strictly increasing subset of the originals.
    offsets = [r[0] for r in after]
    assert offsets == sorted(set(offsets))
    assert set(offsets) <= {r[0] for r in original}
    assert not list(lg.dir.glob("*.cleaned")) and not list(lg.dir.glob("*.swap"))
    # Reads by offset still work in the gaps: a fetch from a removed offset returns the next.
    first_gap = next(o for o in range(lg.log_end_offset) if o not in set(offsets))
    data = lg.read(first_gap, 1 << 16).read_bytes()
    assert next(iter_batches(bytearray(data))).last_offset >= first_gap


def test_old_segments_are_renamed_deleted_and_removed_after_the_delay(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    lg = open_log(tmp_path, clock, compact_config({"file.delete.delay.ms": 60_000}))
    append_each(lg, clock, keyed_updates(120, 3))
    old = list(lg.segments[:-1])
    fd = old[0].fd
    assert clean_round(cleaner, lg)
    assert list(lg.dir.glob("*.log.deleted"))
    # A fetch in flight still reads the old bytes through its descriptor.
    assert os.pread(fd, 8, 0) == (0).to_bytes(8, "big")
    clock.advance(60_001)
    lg.delete_expired_files()
    assert not list(lg.dir.glob("*.deleted"))


def test_records_without_a_key_are_removed(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    # Produce refuses keyless records once a topic is compacted; they remain from before a
    # switch of cleanup.policy from delete to compact, and the cleaner drops them then.
    compacted = compact_config()
    lg = open_log(tmp_path, clock, compacted.with_overrides({"cleanup.policy": "delete"}))
    original = append_each(lg, clock, [(None, b"keyless"), *keyed_updates(80, 4)])
    lg.update_config(compacted)
    assert clean_round(cleaner, lg)
    after = rows(lg)
    assert (0, None, b"keyless") not in after
    assert after == oracle(original, lg.active_segment.base_offset, drop_tombstones=False)


def test_tombstones_stay_until_delete_retention_ms_after_their_first_cleaning(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    lg = open_log(tmp_path, clock)
    records = [*keyed_updates(40, 4), (b"k1", None), (b"k2", None), *keyed_updates(60, 1, b"w")]
    original = append_each(lg, clock, records)
    uncleanable = lg.active_segment.base_offset
    assert clean_round(cleaner, lg)
    assert rows(lg) == oracle(original, uncleanable, drop_tombstones=False)
    tombstone_batches = [
        b
        for b in batches(lg)
        if b.base_offset < uncleanable and b.records_count and b.has_delete_horizon
    ]
    assert len(tombstone_batches) == 2
    assert {b.base_timestamp for b in tombstone_batches} == {clock.wall_ms() + DELETE_RETENTION_MS}

    clock.advance(DELETE_RETENTION_MS - 1)
    assert not clean_round(cleaner, lg)  # not cleanable: nothing dirty, horizon not passed
    assert rows(lg) == oracle(original, uncleanable, drop_tombstones=False)

    clock.advance(1)
    assert clean_round(cleaner, lg)  # the horizon passed: the tombstones go
    assert rows(lg) == oracle(original, uncleanable, drop_tombstones=True)
    assert all(value is not None for _, _, value in rows(lg))


def test_below_min_cleanable_dirty_ratio_nothing_is_cleaned(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    lg = open_log(tmp_path, clock, compact_config({"min.cleanable.dirty.ratio": "0.9"}))
    append_each(lg, clock, keyed_updates(150, 5))
    assert clean_round(cleaner, lg)  # all dirty: ratio 1.0
    append_each(lg, clock, keyed_updates(40, 5, b"w"))  # a little dirty data
    ltc = cleaner.manager.log_to_clean(lg, clock.wall_ms())
    assert 0 < ltc.cleanable_ratio <= 0.9
    assert not clean_round(cleaner, lg)


def test_max_compaction_lag_forces_a_cleaning_below_the_ratio(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    config = compact_config({"min.cleanable.dirty.ratio": "0.9", "max.compaction.lag.ms": 10_000})
    lg = open_log(tmp_path, clock, config)
    append_each(lg, clock, keyed_updates(150, 5))
    assert clean_round(cleaner, lg)
    append_each(lg, clock, keyed_updates(40, 5, b"w"))
    assert not clean_round(cleaner, lg)
    clock.advance(10_001)
    assert clean_round(cleaner, lg)


def test_min_compaction_lag_keeps_recent_segments_dirty(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    lg = open_log(tmp_path, clock, compact_config({"min.compaction.lag.ms": 60_000}))
    original = append_each(lg, clock, keyed_updates(100, 5))
    assert not clean_round(cleaner, lg)
    clock.advance(30_000)
    late = append_each(lg, clock, keyed_updates(100, 5, b"w"))
    clock.advance(30_001)  # the first 100 are old enough, the later ones are not
    first, uncleanable, _ = cleaner.manager.cleanable_offsets(lg, clock.wall_ms())
    assert first == 0 and 0 < uncleanable <= late[0][0] + 1
    assert clean_round(cleaner, lg)
    assert rows(lg) == oracle(original + late, uncleanable, drop_tombstones=False)


@pytest.mark.parametrize(
    "codec",
    [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD],
)
def test_compressed_batches_are_rewritten_with_their_codec(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner, codec: CompressionType
) -> None:
    lg = open_log(tmp_path, clock)
    original: list[Row] = []
    for i in range(40):
        batch = [(b"shared", b"s%d" % i), (b"unique%d" % i, b"u" * 30), (b"other", b"o%d" % i)]
        offsets = append(lg, clock, batch, compression=codec)
        original.extend((o, k, v) for o, (k, v) in zip(offsets, batch, strict=True))
    uncleanable = lg.active_segment.base_offset
    assert clean_round(cleaner, lg)
    assert rows(lg) == oracle(original, uncleanable, drop_tombstones=False)
    cleaned = [b for b in batches(lg) if b.base_offset < uncleanable]
    assert cleaned and all(b.compression_type == codec for b in cleaned)
    assert all(b.is_valid() for b in cleaned)
    # Each rebuilt batch keeps its base and last offset (so its producer sequence range).
    assert all(b.last_offset_delta == 2 for b in cleaned)


def test_the_last_batch_of_an_idempotent_producer_is_kept_empty(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    lg = open_log(tmp_path, clock)
    pid = 4000
    for seq in range(0, 6, 2):
        append(lg, clock, [(b"a", b"p%d" % seq), (b"b", b"p%d" % seq)], producer=(pid, 0, seq))
    last_offset = lg.log_end_offset - 1
    # Supersedes every key of the producer.
    append_each(lg, clock, [(b"a" if i % 2 else b"b", b"x%d" % i) for i in range(80)])
    assert clean_round(cleaner, lg)
    mine = [b for b in batches(lg) if b.producer_id == pid]
    assert len(mine) == 1  # the earlier batches are gone, the last stays as an empty header
    (kept,) = mine
    assert (kept.records_count, kept.last_offset, kept.base_sequence) == (0, last_offset, 4)
    assert kept.last_sequence == 5 and kept.is_valid()
    # The producer's state survives a restart rebuilt from the log alone.
    lg.close()
    for snapshot in lg.dir.glob("*.snapshot"):
        snapshot.unlink()
    reopened = open_log(tmp_path, clock)
    entry = reopened.producer_state.last_entry(pid)
    assert entry is not None and entry.last_seq == 5
    append(reopened, clock, [(b"a", b"next")], producer=(pid, 0, 6))  # in sequence
    reopened.close()


def test_a_full_offset_map_cleans_over_several_rounds(tmp_path: Path, clock: ManualClock) -> None:
    small = LogCleaner(
        [tmp_path],
        clock,
        fast_config(dedupe_buffer_size=BYTES_PER_ENTRY * 8, io_buffer_load_factor=1.0),
    )
    small.startup()
    try:
        lg = open_log(tmp_path, clock)
        original = append_each(lg, clock, keyed_updates(150, 30))
        uncleanable = lg.active_segment.base_offset
        rounds = 0
        while clean_round(small, lg):
            rounds += 1
            assert rounds < 50
        assert rounds > 1
        assert rows(lg) == oracle(original, uncleanable, drop_tombstones=False)
    finally:
        small.shutdown()


def test_checkpoint_is_written_in_kafkas_format_and_read_at_startup(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    lg = open_log(tmp_path, clock)
    append_each(lg, clock, keyed_updates(100, 5))
    assert clean_round(cleaner, lg)
    text = (tmp_path / CLEANER_OFFSET_CHECKPOINT).read_text(encoding="utf-8")
    assert parse_checkpoint(text) == {(TP.topic, TP.partition): lg.active_segment.base_offset}
    again = LogCleaner([tmp_path], clock, fast_config())
    again.startup()
    try:
        assert again.manager.checkpoint(tmp_path, TP) == lg.active_segment.base_offset
        first_dirty, _, _ = again.manager.cleanable_offsets(lg, clock.wall_ms())
        assert first_dirty == lg.active_segment.base_offset
    finally:
        again.shutdown()


def test_a_checkpoint_past_the_log_end_is_reset_to_the_log_start(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    lg = open_log(tmp_path, clock)
    append_each(lg, clock, keyed_updates(60, 5))
    cleaner.manager.update_checkpoint(tmp_path, TP, 10_000)
    first_dirty, _, force = cleaner.manager.cleanable_offsets(lg, clock.wall_ms())
    assert (first_dirty, force) == (0, True)


# -- concurrency with the loop ------------------------------------------------------------------


def test_appends_during_a_round_are_kept_and_the_round_applies(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    lg = open_log(tmp_path, clock)
    original = append_each(lg, clock, keyed_updates(150, 5))
    uncleanable = lg.active_segment.base_offset
    logs = {TP: lg}
    cleaner.tick(logs)
    assert cleaner.is_cleaning(TP)
    late = append_each(lg, clock, keyed_updates(60, 5, b"late"))  # rolls new segments
    assert cleaner.await_idle(30)
    cleaner.tick(logs)
    assert cleaner.status()[TP].cleanings == 1
    assert rows(lg) == oracle(original, uncleanable, drop_tombstones=False) + late


def test_retention_deleting_a_source_segment_mid_round_drops_the_result(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    config = compact_config({"cleanup.policy": "compact,delete", "retention.ms": 50_000})
    lg = open_log(tmp_path, clock, config)
    old = append_each(lg, clock, keyed_updates(100, 5))
    clock.advance(60_000)
    fresh = append_each(lg, clock, keyed_updates(100, 5, b"w"))
    logs = {TP: lg}
    cleaner.tick(logs)
    assert cleaner.is_cleaning(TP)
    assert lg.delete_old_segments() > 0  # the loop's retention pass, mid-round
    assert cleaner.await_idle(30)
    cleaner.tick(logs)
    status = cleaner.status().get(TP)
    assert status is None or status.cleanings == 0  # dropped
    assert cleaner.manager.checkpoint(tmp_path, TP) is None
    assert lg.log_start_offset > 0
    survivors = [r for r in old + fresh if r[0] >= lg.log_start_offset]
    # The next tick started a new round over what retention left; it applies.
    assert cleaner.await_idle(30)
    cleaner.tick(logs)
    assert cleaner.status()[TP].cleanings == 1
    assert not list(lg.dir.glob("*.cleaned")) and not list(lg.dir.glob("*.swap"))
    assert rows(lg) == oracle(survivors, lg.active_segment.base_offset, drop_tombstones=False)


def test_truncation_mid_round_drops_the_result(
    tmp_path: Path, clock: ManualClock, cleaner: LogCleaner
) -> None:
    lg = open_log(tmp_path, clock)
    original = append_each(lg, clock, keyed_updates(150, 5))
    logs = {TP: lg}
    cleaner.tick(logs)
    cut = lg.segments[2].base_offset + 1
    lg.truncate_to(cut)  # a follower diverged: the segment holding ``cut`` is active now
    assert cleaner.await_idle(30)
    cleaner.tick(logs)
    assert cleaner.status().get(TP) is None or cleaner.status()[TP].cleanings == 0
    assert rows(lg) == [r for r in original if r[0] < cut]


def test_log_manager_runs_the_cleaner_and_deleting_a_topic_mid_round_is_safe(
    tmp_path: Path, clock: ManualClock, open_manager: ManagerFactory
) -> None:
    manager = open_manager(tmp_path, config=compact_config(), cleaner_config=fast_config())
    lg = manager.get_or_create_log(TP)
    original = append_each(lg, clock, keyed_updates(150, 5))
    uncleanable = lg.active_segment.base_offset
    manager.tick()
    assert manager.cleaner.await_idle(30)
    manager.tick()
    assert rows(lg) == oracle(original, uncleanable, drop_tombstones=False)
    assert manager.cleaner.status()[TP].cleanings == 1

    append_each(lg, clock, keyed_updates(150, 5, b"w"))
    manager.tick()
    assert manager.cleaner.is_cleaning(TP)
    manager.delete_log(TP)
    assert manager.cleaner.await_idle(30)
    manager.tick()
    assert not (tmp_path / TP.dir_name).exists()
    assert parse_checkpoint((tmp_path / CLEANER_OFFSET_CHECKPOINT).read_text()) == {}
    manager.shutdown()


def test_switching_a_topic_to_compact_starts_cleaning(
    tmp_path: Path, clock: ManualClock, open_manager: ManagerFactory
) -> None:
    delete_config = compact_config({"cleanup.policy": "delete"})
    manager = open_manager(tmp_path, config=delete_config, cleaner_config=fast_config())
    lg = manager.get_or_create_log(TP)
    original = append_each(lg, clock, keyed_updates(100, 5))
    manager.tick()
    assert not manager.cleaner.is_cleaning(TP)
    manager.update_topic_config(TP.topic, compact_config())
    manager.tick()
    assert manager.cleaner.is_cleaning(TP)
    assert manager.cleaner.await_idle(30)
    manager.tick()
    assert rows(lg) == oracle(original, lg.active_segment.base_offset, drop_tombstones=False)
    manager.shutdown()


def test_disabled_cleaner_runs_no_thread(
    tmp_path: Path, clock: ManualClock, open_manager: ManagerFactory
) -> None:
    disabled = CleanerConfig(enable=False)
    manager = open_manager(tmp_path, config=compact_config(), cleaner_config=disabled)
    lg = manager.get_or_create_log(TP)
    append_each(lg, clock, keyed_updates(100, 5))
    manager.tick()
    assert not manager.cleaner.is_running and not manager.cleaner.is_cleaning(TP)
    manager.shutdown()


def test_shutdown_aborts_a_round_promptly_and_leftovers_go_at_load(
    tmp_path: Path, clock: ManualClock
) -> None:
    import time

    lg = open_log(tmp_path, clock, compact_config({"segment.bytes": 64 * 1024}))
    for i in range(300):
        append(lg, clock, [(b"k%d" % (j % 50), b"v%d-%d" % (i, j)) for j in range(40)])
    cleaner = LogCleaner([tmp_path], clock, fast_config(io_max_bytes_per_second=200_000.0))
    cleaner.startup()
    cleaner.tick({TP: lg})
    assert cleaner.is_cleaning(TP)
    started = time.monotonic()
    cleaner.shutdown()
    assert time.monotonic() - started < 5
    before = rows(lg)
    lg.close()
    reopened = open_log(tmp_path, clock)
    assert not list(reopened.dir.glob("*.cleaned"))
    assert rows(reopened) == before
    reopened.close()
