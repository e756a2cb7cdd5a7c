"""RecordBatchView: header fields, CRC-32C, in-place patches, iter_batches."""

from __future__ import annotations

import struct

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.errors import CorruptRecordError, InvalidRecordError
from franz.protocol.records import (
    BATCH_HEADER_SIZE,
    CompressionType,
    RecordBatchBuilder,
    RecordBatchView,
    TimestampType,
    build_batch,
    iter_batches,
    iter_records,
    peek_batch_size,
)


def _batch(compression: CompressionType = CompressionType.NONE, **kwargs) -> bytearray:
    builder = RecordBatchBuilder(compression=compression, **kwargs)
    builder.append(1_000, b"k0", b"v0", [("h", b"x")])
    builder.append(3_000, None, b"v1")
    builder.append(2_000, b"k2", None, offset_delta=5)
    return builder.build()


def _rewrite_crc(buf: bytearray, position: int = 0) -> None:
    (length,) = struct.unpack_from(">i", buf, position + 8)
    end = position + 12 + length
    struct.pack_into(">I", buf, position + 17, crc32c.crc32c(bytes(buf[position + 21 : end])))


def test_view_reads_every_header_field() -> None:
    raw = _batch(
        CompressionType.ZSTD,
        base_offset=1_000,
        partition_leader_epoch=7,
        producer_id=42,
        producer_epoch=3,
        base_sequence=10,
        is_transactional=True,
    )
    view = RecordBatchView(raw)
    assert view.base_offset == 1_000
    assert view.batch_length == len(raw) - 12
    assert view.size_in_bytes == len(raw)
    assert view.partition_leader_epoch == 7
    assert view.magic == 2
    assert view.crc == crc32c.crc32c(bytes(raw[21:]))
    assert view.compression_type is CompressionType.ZSTD
    assert view.timestamp_type == TimestampType.CREATE_TIME
    assert view.is_transactional
    assert not view.is_control_batch
    assert not view.has_delete_horizon
    assert view.last_offset_delta == 5
    assert view.last_offset == 1_005
    assert view.next_offset == 1_006
    assert view.base_timestamp == 1_000
    assert view.max_timestamp == 3_000
    assert view.producer_id == 42
    assert view.producer_epoch == 3
    assert view.base_sequence == 10
    assert view.last_sequence == 15
    assert view.records_count == 3
    assert view.position == 0
    assert bytes(view.raw()) == bytes(raw)
    assert bytes(view.records_payload()) == bytes(raw[BATCH_HEADER_SIZE:])
    view.validate()
    assert view.is_valid()
    assert "base_offset=1000" in repr(view)


def test_view_header_matches_struct_layout() -> None:
    """The documented offsets, read with struct independently of the view."""
    raw = _batch(base_offset=9, partition_leader_epoch=4, producer_id=5, producer_epoch=6)
    view = RecordBatchView(raw)
    assert struct.unpack_from(">q", raw, 0)[0] == view.base_offset
    assert struct.unpack_from(">i", raw, 8)[0] == view.batch_length
    assert struct.unpack_from(">i", raw, 12)[0] == view.partition_leader_epoch
    assert raw[16] == 2
    assert struct.unpack_from(">I", raw, 17)[0] == view.crc
    assert struct.unpack_from(">h", raw, 21)[0] == view.attributes
    assert struct.unpack_from(">i", raw, 23)[0] == view.last_offset_delta
    assert struct.unpack_from(">qq", raw, 27) == (view.base_timestamp, view.max_timestamp)
    assert struct.unpack_from(">qhii", raw, 43) == (
        view.producer_id,
        view.producer_epoch,
        view.base_sequence,
        view.records_count,
    )


def test_flags_control_and_log_append_time_and_delete_horizon() -> None:
    raw = _batch(
        is_control_batch=True,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        producer_id=1,
        producer_epoch=0,
    )
    view = RecordBatchView(raw)
    assert view.is_control_batch and not view.is_transactional
    assert view.timestamp_type == TimestampType.LOG_APPEND_TIME
    horizon = RecordBatchView(RecordBatchBuilder(delete_horizon_ms=5).build(last_offset_delta=0))
    assert horizon.has_delete_horizon
    assert horizon.base_timestamp == 5


def test_last_sequence_wraps_at_int32_max() -> None:
    view = RecordBatchView(_batch(producer_id=1, producer_epoch=0, base_sequence=(1 << 31) - 2))
    assert view.last_sequence == 3  # (2^31 - 2) + 5 wraps past 2^31 - 1 to 0
    assert RecordBatchView(_batch()).last_sequence == -1


def test_view_at_a_position_inside_a_larger_buffer() -> None:
    first, second = _batch(base_offset=0), _batch(CompressionType.GZIP, base_offset=6)
    buf = bytearray(first + second)
    view = RecordBatchView(buf, len(first))
    assert view.position == len(first)
    assert view.base_offset == 6
    assert bytes(view.raw()) == bytes(second)
    view.validate()


@settings(max_examples=150, deadline=None)
@given(data=st.data(), codec=st.sampled_from(list(CompressionType)))
def test_flipping_any_byte_after_the_crc_field_is_detected(
    data: st.DataObject, codec: CompressionType
) -> None:
    raw = _batch(codec)
    index = data.draw(st.integers(21, len(raw) - 1), label="index")
    flip = data.draw(st.integers(1, 255), label="xor")
    raw[index] ^= flip
    view = RecordBatchView(raw)
    assert not view.is_valid()
    with pytest.raises(CorruptRecordError, match="corrupt"):
        view.validate()


@pytest.mark.parametrize("index", range(17, 21))
def test_flipping_the_stored_crc_is_detected(index: int) -> None:
    raw = _batch()
    raw[index] ^= 0x01
    with pytest.raises(CorruptRecordError):
        RecordBatchView(raw).validate()


@pytest.mark.parametrize("index", [*range(0, 8), *range(12, 16)])
def test_base_offset_and_leader_epoch_are_outside_the_crc(index: int) -> None:
    raw = _batch()
    raw[index] ^= 0xA5
    view = RecordBatchView(raw)
    assert view.is_valid()
    view.validate()


def test_truncated_batch() -> None:
    raw = bytes(_batch())
    view = RecordBatchView(raw[:-1])
    assert not view.is_valid()
    with pytest.raises(CorruptRecordError, match="truncated"):
        view.validate()
    with pytest.raises(CorruptRecordError, match="truncated"):
        RecordBatchView(raw[: BATCH_HEADER_SIZE - 1])


@pytest.mark.parametrize("magic", [0, 1, 3, 0xFF])
def test_bad_magic(magic: int) -> None:
    raw = _batch()
    raw[16] = magic
    with pytest.raises(CorruptRecordError, match="magic"):
        RecordBatchView(raw)


@pytest.mark.parametrize("batch_length", [-1, 0, 48])
def test_batch_length_smaller_than_the_header(batch_length: int) -> None:
    raw = _batch()
    struct.pack_into(">i", raw, 8, batch_length)
    view = RecordBatchView(raw)
    assert not view.is_valid()
    with pytest.raises(CorruptRecordError, match="smaller than"):
        view.validate()


def test_unknown_attribute_bits_are_invalid() -> None:
    raw = _batch()
    struct.pack_into(">h", raw, 21, 0x80)
    _rewrite_crc(raw)
    with pytest.raises(InvalidRecordError, match="attribute"):
        RecordBatchView(raw).validate()


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_is_invalid(codec: int) -> None:
    raw = _batch()
    struct.pack_into(">h", raw, 21, codec)
    _rewrite_crc(raw)
    with pytest.raises(InvalidRecordError, match="compression"):
        RecordBatchView(raw).validate()


def test_negative_last_offset_delta_is_invalid() -> None:
    raw = _batch()
    struct.pack_into(">i", raw, 23, -1)
    _rewrite_crc(raw)
    with pytest.raises(InvalidRecordError):
        RecordBatchView(raw).validate()


def test_set_base_offset_and_leader_epoch_patch_in_place() -> None:
    raw = _batch(CompressionType.LZ4)
    records_before = bytes(raw[BATCH_HEADER_SIZE:])
    crc_before = bytes(raw[17:21])
    view = RecordBatchView(raw)
    view.set_base_offset(123_456_789_012)
    view.set_partition_leader_epoch(17)
    assert view.base_offset == 123_456_789_012
    assert view.partition_leader_epoch == 17
    assert view.is_valid()
    assert bytes(raw[17:21]) == crc_before
    assert bytes(raw[BATCH_HEADER_SIZE:]) == records_before
    reread = RecordBatchView(raw)
    assert (reread.base_offset, reread.partition_leader_epoch) == (123_456_789_012, 17)
    reread.validate()
    assert [r.offset for r in iter_records(reread)] == [
        123_456_789_012,
        123_456_789_013,
        123_456_789_017,
    ]


def test_patches_through_a_memoryview_at_a_position() -> None:
    first, second = _batch(), _batch(CompressionType.SNAPPY)
    buf = bytearray(first + second)
    view = RecordBatchView(memoryview(buf), len(first))
    view.set_base_offset(99)
    view.set_partition_leader_epoch(2)
    assert struct.unpack_from(">q", buf, len(first))[0] == 99
    assert struct.unpack_from(">i", buf, len(first) + 12)[0] == 2
    assert bytes(buf[: len(first)]) == bytes(first)
    assert [v.base_offset for v in iter_batches(buf)] == [0, 99]


def test_set_log_append_time_recomputes_the_crc() -> None:
    raw = _batch(CompressionType.GZIP)
    crc_before = RecordBatchView(raw).crc
    view = RecordBatchView(raw)
    view.set_log_append_time(1_700_000_000_000)
    assert view.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert view.max_timestamp == 1_700_000_000_000
    assert view.crc != crc_before
    assert view.is_valid()
    reread = RecordBatchView(raw)
    reread.validate()
    assert reread.crc == view.crc == crc32c.crc32c(bytes(raw[21:]))
    assert reread.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert reread.compression_type is CompressionType.GZIP  # other attribute bits kept
    assert reread.max_timestamp == 1_700_000_000_000
    assert reread.base_timestamp == 1_000  # deltas and base untouched


def test_iter_batches_over_concatenated_batches() -> None:
    batches = [_batch(codec, base_offset=10 * i) for i, codec in enumerate(CompressionType)]
    buf = b"".join(batches)
    views = list(iter_batches(buf))
    assert [v.base_offset for v in views] == [0, 10, 20, 30, 40]
    assert [v.compression_type for v in views] == list(CompressionType)
    positions = [sum(len(b) for b in batches[:i]) for i in range(len(batches))]
    assert [v.position for v in views] == positions
    # A sub-range: start at the second batch, stop before the last one.
    middle = list(iter_batches(buf, positions[1], positions[4]))
    assert [v.base_offset for v in middle] == [10, 20, 30]
    assert list(iter_batches(b"")) == []


@pytest.mark.parametrize("tail", [1, 11, 12, 60, 61, 70], ids=lambda n: f"tail-{n}")
def test_iter_batches_rejects_a_partial_batch_at_the_end(tail: int) -> None:
    whole = _batch()
    buf = bytes(whole) + bytes(_batch(base_offset=6))[:tail]
    seen = []
    with pytest.raises(CorruptRecordError):
        for view in iter_batches(buf):
            seen.append(view.base_offset)
    assert seen == [0]


def test_iter_batches_stops_at_a_corrupt_batch() -> None:
    first, second = _batch(), _batch(base_offset=6)
    second[-1] ^= 0xFF
    it = iter_batches(bytes(first + second + _batch(base_offset=12)))
    assert next(it).base_offset == 0
    with pytest.raises(CorruptRecordError, match="corrupt"):
        next(it)


def test_peek_batch_size() -> None:
    raw = build_batch([(0, None, b"x")])
    assert peek_batch_size(raw) == len(raw)
    assert peek_batch_size(raw + raw, len(raw)) == len(raw)
    assert peek_batch_size(raw[:11]) is None
