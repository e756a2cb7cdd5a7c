"""Log: appends, validation before any write, reads at batch boundaries, rolls, timestamps."""

from __future__ import annotations

import pytest

from franz.clock import ManualClock
from franz.config.topic import LogConfig
from franz.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    InvalidTimestampError,
    OffsetOutOfRangeError,
    RecordBatchTooLargeError,
    RecordTooLargeError,
)
from franz.protocol.records.batch import RecordBatchView, TimestampType, iter_batches
from franz.protocol.records.inflated import RecordBatchBuilder, iter_records
from franz.storage.files import TopicPartition
from franz.storage.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP, Log

TP = TopicPartition("orders", 0)


def make_log(tmp_path, clock=None, **overrides) -> Log:
    config = LogConfig().with_overrides({k.replace("_", "."): str(v) for k, v in overrides.items()})
    return Log(tmp_path / TP.dir_name, TP, config, clock or ManualClock())


def batch(count=3, ts=1_700_000_000_000, value=b"v" * 20, **kwargs) -> bytearray:
    builder = RecordBatchBuilder(**kwargs)
    for i in range(count):
        builder.append(ts + i, f"k{i}".encode(), value)
    return builder.build()


def offsets_in(data: bytes) -> list[tuple[int, int]]:
    return [(v.base_offset, v.last_offset) for v in iter_batches(data)]


def test_append_assigns_offsets_and_stamps_leader_epoch(tmp_path):
    log = make_log(tmp_path)
    first = log.append_as_leader(batch(3), leader_epoch=5)
    second = log.append_as_leader(batch(2), leader_epoch=5)
    assert (first.first_offset, first.last_offset) == (0, 2)
    assert (second.first_offset, second.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    views = list(iter_batches(log.read(0, 10_000).read_bytes()))
    assert [v.partition_leader_epoch for v in views] == [5, 5]
    assert all(v.is_valid() for v in views)
    assert [r.offset for v in views for r in iter_records(v)] == [0, 1, 2, 3, 4]
    assert log.leader_epoch_cache.entries == [(5, 0)]


@pytest.mark.parametrize(
    ("mutate", "error", "code"),
    [
        (lambda b: b.__setitem__(70, b[70] ^ 0xFF), CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
        (lambda b: b.__setitem__(16, 1), CorruptRecordError, ErrorCode.CORRUPT_MESSAGE),
        (
            lambda b: b.__setitem__(slice(8, 12), b"\x7f\xff\xff\xff"),
            CorruptRecordError,
            ErrorCode.CORRUPT_MESSAGE,
        ),
        (
            lambda b: b.__setitem__(slice(0, 8), (7).to_bytes(8, "big")),
            InvalidRecordError,
            ErrorCode.INVALID_RECORD,
        ),
    ],
    ids=["crc", "magic", "length", "base-offset-not-zero"],
)
def test_bad_batches_are_rejected_before_anything_is_written(tmp_path, mutate, error, code):
    log = make_log(tmp_path)
    log.append_as_leader(batch(2), leader_epoch=0)
    size_before = log.active_segment.size
    bad = batch(3)
    good = batch(1)
    mutate(bad)
    with pytest.raises(error) as info:
        log.append_as_leader(good + bad, leader_epoch=0)  # the good batch first: all or nothing
    assert info.value.code == code
    assert log.active_segment.size == size_before == log.active_segment.log_path.stat().st_size
    assert log.log_end_offset == 2


def test_half_a_batch_is_corrupt(tmp_path):
    log = make_log(tmp_path)
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(batch(3)[:-5], leader_epoch=0)
    assert log.log_end_offset == 0 and log.active_segment.size == 0


def test_control_batches_from_clients_are_invalid(tmp_path):
    log = make_log(tmp_path)
    with pytest.raises(InvalidRecordError, match="control"):
        log.append_as_leader(batch(1, is_control_batch=True), leader_epoch=0)


def test_compacted_topics_refuse_records_without_a_key(tmp_path):
    log = make_log(tmp_path, cleanup_policy="compact")
    keyless = RecordBatchBuilder()
    keyless.append(1_700_000_000_000, b"k", b"v")
    keyless.append(1_700_000_000_001, None, b"v")
    with pytest.raises(InvalidRecordError, match="without key"):
        log.append_as_leader(keyless.build(), leader_epoch=0)
    assert log.log_end_offset == 0
    log.append_as_leader(batch(2), leader_epoch=0)  # keyed records are fine
    assert log.log_end_offset == 2
    # Topics with the delete policy never look at keys.
    plain = make_log(tmp_path / "plain")
    plain.append_as_leader(keyless.build(), leader_epoch=0)
    assert plain.log_end_offset == 2


def test_batch_over_max_message_bytes_is_too_large(tmp_path):
    log = make_log(tmp_path, max_message_bytes=200)
    with pytest.raises(RecordTooLargeError) as info:
        log.append_as_leader(batch(10), leader_epoch=0)
    assert info.value.code == ErrorCode.MESSAGE_TOO_LARGE
    small = make_log(tmp_path / "b", segment_bytes=300)
    with pytest.raises(RecordBatchTooLargeError):
        small.append_as_leader(batch(2) + batch(2) + batch(2), leader_epoch=0)


def test_log_append_time_stamps_the_batch_and_keeps_the_crc_valid(tmp_path):
    clock = ManualClock(1_800_000_000_000)
    log = make_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    info = log.append_as_leader(batch(3, ts=5), leader_epoch=0)
    assert info.log_append_time == clock.wall_ms()
    view = RecordBatchView(log.read(0, 10_000).read_bytes())
    assert view.timestamp_type == TimestampType.LOG_APPEND_TIME and view.is_valid()
    assert [r.timestamp for r in iter_records(view)] == [clock.wall_ms()] * 3


def test_create_time_outside_the_configured_window_is_rejected(tmp_path):
    clock = ManualClock(1_800_000_000_000)
    log = make_log(tmp_path, clock, message_timestamp_before_max_ms=1000)
    with pytest.raises(InvalidTimestampError):
        log.append_as_leader(batch(1, ts=clock.wall_ms() - 5000), leader_epoch=0)
    log.append_as_leader(batch(1, ts=clock.wall_ms() - 500), leader_epoch=0)
    assert log.log_end_offset == 1


def test_read_inside_a_batch_returns_that_whole_batch(tmp_path):
    log = make_log(tmp_path)
    for _ in range(3):
        log.append_as_leader(batch(10), leader_epoch=0)
    assert offsets_in(log.read(14, 1).read_bytes()) == [(10, 19)]  # min one batch (KIP-74)
    assert offsets_in(log.read(14, 10_000).read_bytes()) == [(10, 19), (20, 29)]
    assert offsets_in(log.read(0, 10_000, max_offset=20).read_bytes()) == [(0, 9), (10, 19)]
    assert log.read(30, 100).size == 0 and log.read(20, 100, max_offset=20).size == 0
    with pytest.raises(OffsetOutOfRangeError) as info:
        log.read(31, 100)
    assert info.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_read_never_splits_a_batch(tmp_path):
    log = make_log(tmp_path)
    sizes = [len(batch(n)) for n in (1, 2, 3, 4)]
    for n in (1, 2, 3, 4):
        log.append_as_leader(batch(n), leader_epoch=0)
    got = log.read(0, sizes[0] + sizes[1] + 5).read_bytes()
    assert len(got) == sizes[0] + sizes[1]


def test_segments_roll_on_size_time_and_full_index(tmp_path):
    clock = ManualClock()
    by_size = make_log(tmp_path / "s", clock, segment_bytes=1000)
    for _ in range(20):
        by_size.append_as_leader(batch(2), leader_epoch=0)
    assert len(by_size.segments) > 1
    assert all(s.size <= 1000 for s in by_size.segments)

    by_time = make_log(tmp_path / "t", clock, segment_ms=1000)
    by_time.append_as_leader(batch(1, ts=clock.wall_ms()), leader_epoch=0)
    by_time.append_as_leader(batch(1, ts=clock.wall_ms() + 500), leader_epoch=0)
    assert len(by_time.segments) == 1
    by_time.append_as_leader(batch(1, ts=clock.wall_ms() + 1500), leader_epoch=0)
    assert [s.base_offset for s in by_time.segments] == [0, 2]

    by_index = make_log(tmp_path / "i", clock, segment_index_bytes=16, index_interval_bytes=0)
    for _ in range(6):
        by_index.append_as_leader(batch(1), leader_epoch=0)
    assert len(by_index.segments) > 1
    # Rolled segments are trimmed: the index files hold exactly their entries.
    for segment in by_index.segments[:-1]:
        assert segment.offset_index.path.stat().st_size == 8 * segment.offset_index.entries


def test_segment_files_are_named_after_their_base_offset(tmp_path):
    log = make_log(tmp_path, segment_bytes=500)
    for _ in range(10):
        log.append_as_leader(batch(2), leader_epoch=0)
    names = sorted(p.name for p in log.dir.iterdir() if p.suffix == ".log")
    assert names == [f"{s.base_offset:020d}.log" for s in log.segments]


def test_offset_by_timestamp_finds_the_first_record_at_or_after(tmp_path):
    log = make_log(tmp_path, index_interval_bytes=0)
    for i in range(10):
        log.append_as_leader(batch(3, ts=1000 + 10 * i), leader_epoch=i // 5)
    found = log.fetch_offset_by_timestamp(1041)
    assert (found.timestamp, found.offset) == (1041, 13)
    found = log.fetch_offset_by_timestamp(1043)  # between batches: the next batch's first
    assert (found.timestamp, found.offset, found.leader_epoch) == (1050, 15, 1)
    assert log.fetch_offset_by_timestamp(5000) is None
    assert log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP).offset == 0
    assert log.fetch_offset_by_timestamp(LATEST_TIMESTAMP).offset == 30
    latest = log.fetch_offset_by_timestamp(MAX_TIMESTAMP)
    assert (latest.timestamp, latest.offset) == (1092, 29)


def test_delete_records_moves_log_start_and_retention_drops_segments_below(tmp_path):
    log = make_log(tmp_path, segment_bytes=600, file_delete_delay_ms=0)
    for _ in range(12):
        log.append_as_leader(batch(2), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(log.high_watermark + 1)
    target = log.segments[2].base_offset + 1
    assert log.maybe_increment_log_start_offset(target)
    assert log.log_start_offset == target
    with pytest.raises(OffsetOutOfRangeError):
        log.read(target - 1, 1000)
    deleted = log.delete_old_segments()
    log.delete_expired_files()
    assert deleted == 2 and log.segments[0].base_offset <= target
    assert not any(p.suffix == ".deleted" for p in log.dir.iterdir())
    assert log.read(target, 10**6).size > 0


def test_retention_by_time_and_size(tmp_path):
    clock = ManualClock()
    log = make_log(
        tmp_path, clock, segment_bytes=400, retention_ms=60_000, file_delete_delay_ms=1000
    )
    for i in range(6):
        log.append_as_leader(batch(2, ts=clock.wall_ms() + i), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() == 0
    clock.advance(61_000)
    segments = len(log.segments)
    assert log.delete_old_segments() == segments  # everything expired: roll, delete all
    assert len(log.segments) == 1 and log.active_segment.size == 0
    assert log.log_start_offset == log.log_end_offset == 12
    deleted_files = [p for p in log.dir.iterdir() if p.name.endswith(".deleted")]
    assert deleted_files and log.delete_expired_files() == 0  # file.delete.delay.ms not passed
    clock.advance(1000)
    assert log.delete_expired_files() == segments
    assert not any(p.name.endswith(".deleted") for p in log.dir.iterdir())

    by_size = make_log(
        tmp_path / "b", clock, segment_bytes=400, retention_bytes=800, retention_ms=-1
    )
    for _ in range(10):
        by_size.append_as_leader(batch(2), leader_epoch=0)
    by_size.update_high_watermark(by_size.log_end_offset)
    by_size.delete_old_segments()
    assert by_size.size_in_bytes - by_size.active_segment.size <= 800


def test_retention_never_deletes_above_the_high_watermark(tmp_path):
    clock = ManualClock()
    log = make_log(tmp_path, clock, segment_bytes=400, retention_ms=1)
    for _ in range(6):
        log.append_as_leader(batch(2, ts=clock.wall_ms()), leader_epoch=0)
    clock.advance(10)
    log.update_high_watermark(0)
    assert log.delete_old_segments() == 0


def test_truncate_to_removes_batches_and_epochs(tmp_path):
    log = make_log(tmp_path, segment_bytes=500)
    for epoch in range(8):
        log.append_as_leader(batch(2), leader_epoch=epoch)
    log.update_high_watermark(log.log_end_offset)
    assert log.truncate_to(6)
    assert log.log_end_offset == 6 and log.high_watermark == 6
    assert [e.epoch for e in log.leader_epoch_cache.entries] == [0, 1, 2]
    assert log.append_as_leader(batch(1), leader_epoch=9).first_offset == 6


def test_truncate_to_the_log_end_still_drops_an_epoch_that_holds_no_data(tmp_path):
    # Kafka's UnifiedLog.truncateTo: a broker that became leader (its epoch assigned at the
    # log end offset) and lost leadership before appending keeps no entry for that epoch
    # once it truncates as a follower, even where nothing is cut.
    log = make_log(tmp_path)
    log.append_as_leader(batch(2), leader_epoch=0)
    log.leader_epoch_cache.assign(5, log.log_end_offset)
    assert log.leader_epoch_cache.latest_epoch == 5
    assert not log.truncate_to(log.log_end_offset)
    assert log.leader_epoch_cache.entries == [(0, 0)]
    assert log.log_end_offset == 2


def test_leader_epoch_end_offsets(tmp_path):
    log = make_log(tmp_path)
    for epoch in (0, 0, 2, 2, 5):
        log.append_as_leader(batch(2), leader_epoch=epoch)
    cache = log.leader_epoch_cache
    assert cache.end_offset_for(0, log.log_end_offset) == (0, 4)
    assert cache.end_offset_for(1, log.log_end_offset) == (0, 4)
    assert cache.end_offset_for(2, log.log_end_offset) == (2, 8)
    assert cache.end_offset_for(5, log.log_end_offset) == (5, 10)
    reopened = Log(log.dir, TP, log.config, ManualClock())
    assert reopened.leader_epoch_cache.entries == [(0, 0), (2, 4), (5, 8)]


def test_a_corrupt_leader_epoch_checkpoint_is_rebuilt_from_batch_headers(tmp_path):
    log = make_log(tmp_path, segment_bytes=500)
    for epoch in (0, 0, 3, 3, 7):
        log.append_as_leader(batch(2), leader_epoch=epoch)
    expected = log.leader_epoch_cache.entries
    log.close()
    (log.dir / "leader-epoch-checkpoint").write_text("garbage\n")
    reopened = Log(log.dir, TP, log.config, ManualClock())
    assert reopened.leader_epoch_cache.entries == expected == [(0, 0), (3, 4), (7, 8)]
    assert (log.dir / "leader-epoch-checkpoint").read_text() == "0\n3\n0 0\n3 4\n7 8\n"


def test_a_corrupt_partition_metadata_is_rewritten_with_the_known_topic_id(tmp_path):
    import uuid

    from franz.protocol.kafka_uuid import uuid_to_str

    topic_id = uuid.UUID(int=12345)
    log = Log(tmp_path / TP.dir_name, TP, LogConfig(), ManualClock(), topic_id=topic_id)
    log.close()
    (log.dir / "partition.metadata").write_text("version: 9\nnonsense")
    reopened = Log(log.dir, TP, LogConfig(), ManualClock(), topic_id=topic_id)
    assert reopened.topic_id == topic_id
    text = (log.dir / "partition.metadata").read_text()
    assert text == f"version: 0\ntopic_id: {uuid_to_str(topic_id)}"
