"""Log validation beyond headers: recompression to ``compression.type`` and per-record
errors (KIP-467), through ``Log.append_as_leader`` with real files."""

from __future__ import annotations

import crc32c
import pytest

from franz.clock import ManualClock
from franz.config.topic import LogConfig
from franz.errors import (
    CorruptRecordError,
    ErrorCode,
    InvalidRecordError,
    InvalidTimestampError,
    RecordError,
    RecordTooLargeError,
)
from franz.protocol.records.batch import RecordBatchView, TimestampType, iter_batches
from franz.protocol.records.compression import CompressionType, decompress
from franz.protocol.records.inflated import Header, RecordBatchBuilder, iter_records
from franz.storage.files import TopicPartition
from franz.storage.log import Log
from franz.storage.log_validator import target_compression

TP = TopicPartition("orders", 0)
NOW = 1_800_000_000_000
CODECS = list(CompressionType)
TARGETS = {
    "uncompressed": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}


def make_log(tmp_path, **overrides) -> Log:
    config = LogConfig().with_overrides({k.replace("_", "."): str(v) for k, v in overrides.items()})
    return Log(tmp_path / TP.dir_name, TP, config, ManualClock(NOW))


def batch(codec=CompressionType.NONE, count=3, ts=NOW - 10, keys=None, **kwargs) -> bytearray:
    builder = RecordBatchBuilder(compression=codec, **kwargs)
    for i in range(count):
        key = f"k{i}".encode() if keys is None else keys[i]
        builder.append(ts + i, key, b"value-%d" % i * 10, [Header("h", b"%d" % i)])
    return builder.build()


def stored(log: Log) -> list[RecordBatchView]:
    views = list(iter_batches(log.read(0, 1 << 20).read_bytes()))
    assert all(view.is_valid() for view in views)
    return views


def contents(view: RecordBatchView) -> list[tuple[int, int, bytes | None, bytes | None, tuple]]:
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in iter_records(view)]


# -- compression.type -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["producer", *TARGETS])
def test_target_compression_is_kafkas_broker_compression_type(name):
    config = LogConfig().with_overrides({"compression.type": name})
    assert target_compression(config) is TARGETS.get(name)


@pytest.mark.parametrize("source", CODECS, ids=lambda c: c.config_name)
@pytest.mark.parametrize("target", list(TARGETS))
def test_batches_are_stored_with_the_topics_codec(tmp_path, source, target):
    log = make_log(tmp_path, compression_type=target)
    log.append_as_leader(batch(CompressionType.NONE, count=2), leader_epoch=0)
    info = log.append_as_leader(batch(source), leader_epoch=7)
    assert (info.first_offset, info.last_offset, info.max_timestamp) == (2, 4, NOW - 8)
    view = stored(log)[-1]
    assert view.compression_type is TARGETS[target]
    assert (view.base_offset, view.last_offset, view.partition_leader_epoch) == (2, 4, 7)
    assert (view.base_timestamp, view.max_timestamp) == (NOW - 10, NOW - 8)
    expected = RecordBatchView(batch(CompressionType.NONE, base_offset=2))
    assert contents(view) == contents(expected)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.config_name)
def test_producer_and_a_matching_codec_keep_the_batch_bytes(tmp_path, codec):
    produced = batch(codec)
    for name in ("producer", codec.config_name if codec else "uncompressed"):
        log = make_log(tmp_path / name, compression_type=name)
        log.append_as_leader(bytearray(produced), leader_epoch=-1)
        assert bytes(stored(log)[0].raw()) == bytes(produced)


def test_recompression_keeps_producer_fields_and_retries_stay_duplicates(tmp_path):
    log = make_log(tmp_path, compression_type="zstd")
    produced = batch(CompressionType.GZIP, producer_id=42, producer_epoch=3, base_sequence=0)
    first = log.append_as_leader(bytearray(produced), leader_epoch=0)
    view = stored(log)[0]
    assert view.compression_type is CompressionType.ZSTD
    assert (view.producer_id, view.producer_epoch, view.base_sequence) == (42, 3, 0)
    retry = log.append_as_leader(bytearray(produced), leader_epoch=0)
    assert retry.duplicate and retry.first_offset == first.first_offset
    assert log.log_end_offset == 3


def test_recompression_under_log_append_time_stamps_the_rebuilt_batch(tmp_path):
    log = make_log(tmp_path, compression_type="lz4", message_timestamp_type="LogAppendTime")
    info = log.append_as_leader(batch(CompressionType.SNAPPY, ts=5), leader_epoch=0)
    view = stored(log)[0]
    assert info.log_append_time == NOW
    assert view.compression_type is CompressionType.LZ4
    assert view.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in iter_records(view)] == [NOW] * 3


def test_only_batches_with_another_codec_are_rebuilt(tmp_path):
    log = make_log(tmp_path, compression_type="gzip")
    kept = batch(CompressionType.GZIP)
    log.append_as_leader(bytearray(kept) + batch(CompressionType.NONE), leader_epoch=-1)
    first, second = stored(log)
    assert bytes(first.raw()) == bytes(kept)
    assert second.compression_type is CompressionType.GZIP and second.base_offset == 3


def test_recompression_keeps_the_records_bytes(tmp_path):
    produced = RecordBatchView(batch(CompressionType.SNAPPY))
    log = make_log(tmp_path, compression_type="zstd")
    log.append_as_leader(bytearray(produced.raw()), leader_epoch=0)
    view = stored(log)[0]
    assert decompress(view.compression_type, view.records_payload()) == decompress(
        produced.compression_type, produced.records_payload()
    )
    assert view.attributes == produced.attributes & ~0x07 | CompressionType.ZSTD


def test_a_block_that_does_not_decompress_is_corrupt(tmp_path):
    builder = RecordBatchBuilder()
    builder.append(NOW, b"k", b"v")
    data = builder.build()
    data[22] |= CompressionType.GZIP  # attributes: claims gzip; records are plain
    data[17:21] = crc32c.crc32c(memoryview(data)[21:]).to_bytes(4, "big")
    log = make_log(tmp_path, compression_type="lz4")
    with pytest.raises(CorruptRecordError, match="does not decompress with gzip"):
        log.append_as_leader(data, leader_epoch=0)
    assert log.log_end_offset == 0


def test_the_configured_level_is_used(tmp_path):
    # zlib writes the level class into the gzip header's XFL byte: 4 fastest, 2 best.
    for level, xfl in ((1, 4), (9, 2)):
        log = make_log(tmp_path / str(level), compression_type="gzip", compression_gzip_level=level)
        log.append_as_leader(batch(), leader_epoch=0)
        assert bytes(stored(log)[0].records_payload())[8] == xfl


def test_a_rebuilt_batch_over_max_message_bytes_is_too_large(tmp_path):
    produced = RecordBatchBuilder(compression=CompressionType.ZSTD)
    for _ in range(50):
        produced.append(NOW, b"k", b"x" * 100)
    data = produced.build()
    assert len(data) < 400
    log = make_log(tmp_path, compression_type="uncompressed", max_message_bytes=1000)
    with pytest.raises(RecordTooLargeError):
        log.append_as_leader(data, leader_epoch=0)
    assert log.log_end_offset == 0


# -- per-record errors (KIP-467) ------------------------------------------------------------


def test_keyless_records_on_a_compacted_topic_are_named(tmp_path):
    log = make_log(tmp_path, cleanup_policy="compact")
    keys = [b"a", None, b"c", None, None, None]
    with pytest.raises(InvalidRecordError) as info:
        log.append_as_leader(batch(count=6, keys=keys), leader_epoch=0)
    why = "Compacted topic cannot accept message without key in topic partition orders-0"
    assert info.value.record_errors == tuple(RecordError(i, why) for i in (1, 3, 4, 5))
    assert info.value.message == (
        "One or more records have been rejected due to 4 record errors in total, and only "
        f"showing the first three errors at most: [RecordError(batchIndex=1, message='{why}'), "
        f"RecordError(batchIndex=3, message='{why}'), RecordError(batchIndex=4, message='{why}')]"
    )
    assert log.log_end_offset == 0


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.config_name)
def test_timestamps_out_of_range_are_named_per_record(tmp_path, codec):
    log = make_log(
        tmp_path, message_timestamp_before_max_ms=1000, message_timestamp_after_max_ms=2000
    )
    builder = RecordBatchBuilder(compression=codec)
    for ts in (NOW, NOW - 5000, NOW + 1000, NOW + 3000):
        builder.append(ts, b"k", b"v")
    with pytest.raises(InvalidTimestampError) as info:
        log.append_as_leader(builder.build(), leader_epoch=0)
    assert info.value.code == ErrorCode.INVALID_TIMESTAMP
    assert info.value.message == "One or more records have been rejected due to invalid timestamp"
    window = f"is out of range. The timestamp should be within [{NOW - 1000}, {NOW + 2000}]"
    assert info.value.record_errors == (
        RecordError(1, f"Timestamp {NOW - 5000} of message with offset 1 {window}"),
        RecordError(3, f"Timestamp {NOW + 3000} of message with offset 3 {window}"),
    )


def test_the_unbounded_window_is_quoted_as_java_longs(tmp_path):
    log = make_log(tmp_path, message_timestamp_before_max_ms=1000)
    with pytest.raises(InvalidTimestampError) as info:
        log.append_as_leader(batch(count=1, ts=NOW - 5000), leader_epoch=0)
    (error,) = info.value.record_errors
    assert error.message is not None
    assert error.message.endswith(f"[{NOW - 1000}, {NOW + (1 << 63) - 1 - (1 << 64)}]")


def test_timestamp_errors_win_over_key_errors(tmp_path):
    log = make_log(tmp_path, cleanup_policy="compact", message_timestamp_after_max_ms=0)
    with pytest.raises(InvalidTimestampError) as info:
        log.append_as_leader(batch(count=2, ts=NOW + 1, keys=[None, b"k"]), leader_epoch=0)
    assert [e.batch_index for e in info.value.record_errors] == [0, 1]
    assert "Compacted topic" in str(info.value.record_errors[0].message)


def test_a_producer_may_not_set_log_append_time(tmp_path):
    log = make_log(tmp_path, message_timestamp_type="LogAppendTime")
    produced = batch(count=2, timestamp_type=TimestampType.LOG_APPEND_TIME)
    with pytest.raises(InvalidTimestampError) as info:
        log.append_as_leader(produced, leader_epoch=0)
    assert info.value.record_errors == tuple(
        RecordError(
            i,
            f"Invalid timestamp type in message DefaultRecord(offset={i}, timestamp={NOW - 9}, "
            "key=2 bytes, value=70 bytes). Producer should not set timestamp type to "
            "LogAppendTime.",
        )
        for i in range(2)
    )


def test_in_range_batches_take_the_zero_copy_path(tmp_path, monkeypatch):
    import franz.storage.log as log_module

    def no_decoding(view):
        raise AssertionError("records decoded on the common path")

    monkeypatch.setattr(log_module, "iter_records", no_decoding)
    log = make_log(tmp_path, message_timestamp_before_max_ms=1000, compression_type="lz4")
    log.append_as_leader(batch(CompressionType.LZ4), leader_epoch=0)
    assert log.log_end_offset == 3
