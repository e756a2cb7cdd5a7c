"""Message formats v0/v1: parsing, up-conversion to v2 and down-conversion from v2.

The peer is kafka-python (a real client with its own encoder and decoder for message sets,
``kafka.record.legacy_records``): message sets it builds must up-convert, and message sets
Franz down-converts must read back through it with valid CRCs. ``GOLDEN_V1`` is the bytes
kafka-python 3.0.12 writes for one magic 1 message, pinned so the encoder cannot drift with
the peer.
"""

from __future__ import annotations

import zlib

import pytest
from kafka.record import MemoryRecords
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from franz.errors import CorruptRecordError, InvalidRecordError, UnsupportedCompressionTypeError
from franz.protocol.records import RecordBatchBuilder, iter_batches, iter_records
from franz.protocol.records.batch import RecordBatchView, TimestampType
from franz.protocol.records.compression import CompressionType, compress
from franz.protocol.records.legacy import (
    _xxh32,
    downconvert,
    downconvert_for_fetch,
    encode_message,
    iter_deep,
    iter_message_set,
    record_set_magic,
    upconvert,
)

#: kafka-python 3.0.12: LegacyRecordBatchBuilder(magic=1, compression_type=0)
#: .append(0, timestamp=1700000000000, key=b"k", value=b"v").build()
GOLDEN_V1 = bytes.fromhex(
    "00000000000000000000001839268c3301000000018bcfe56800000000016b0000000176"
)
CODECS = [CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4]


def broken_lz4_set(records: list[tuple[int, bytes | None, bytes]]) -> bytes:
    """A magic 0 LZ4 wrapper as Kafka 0.8/0.9 and librdkafka write it: the frame header
    checksum covers the frame magic too (KIP-57). kafka-python needs ``xxhash`` for this."""
    inner = b"".join(
        encode_message(i, 0, -1, key, value) for i, (_, key, value) in enumerate(records)
    )
    frame = bytearray(compress(CompressionType.LZ4, inner))
    frame[6] = (_xxh32(bytes(frame[:6])) >> 8) & 0xFF
    return encode_message(len(records) - 1, 0, -1, None, bytes(frame), CompressionType.LZ4)


def test_magic0_lz4_wrapper_has_the_broken_header_checksum() -> None:
    out = downconvert(bytes(stored(CompressionType.LZ4)), 0, 10)
    [wrapper] = list(iter_message_set(out))
    frame = wrapper.value or b""
    assert frame[6] == (_xxh32(frame[:6]) >> 8) & 0xFF
    assert frame[6] != (_xxh32(frame[4:6]) >> 8) & 0xFF


def kafka_python_set(
    magic: int, codec: int, records: list[tuple[int, bytes | None, bytes]]
) -> bytes:
    if magic == 0 and codec == CompressionType.LZ4:
        return broken_lz4_set(records)
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 20)
    for offset, (timestamp, key, value) in enumerate(records):
        builder.append(offset, timestamp=timestamp if magic else None, key=key, value=value)
    return bytes(builder.build())


def read_back(data: bytes) -> list[tuple[int, int | None, bytes | None, bytes | None]]:
    """Decode a message set with kafka-python (it checks every CRC); magic 0 LZ4 (kafka-python
    needs ``xxhash`` for it) with ``iter_deep``."""
    wrappers = list(iter_message_set(data))
    if any(m.magic == 0 and m.codec == CompressionType.LZ4 for m in wrappers):
        return [(r.offset, None, r.key, r.value) for w in wrappers for r in iter_deep(w)]
    records = MemoryRecords(data)
    out = []
    while True:
        batch = records.next_batch()
        if batch is None:
            return out
        assert batch.validate_crc()
        for record in batch:
            assert record.validate_crc()
            out.append((record.offset, record.timestamp, record.key, record.value))


def decode_v2(batch: bytes | bytearray) -> list[tuple[int, int, bytes | None, bytes | None]]:
    [view] = list(iter_batches(bytearray(batch)))
    return [(r.offset, r.timestamp, r.key, r.value) for r in iter_records(view)]


RECORDS = [(1_700_000_000_000 + i, f"k{i}".encode() if i % 2 else None, b"v" * i) for i in range(5)]


def test_encode_message_is_kafka_pythons_golden_bytes() -> None:
    assert encode_message(0, 1, 1_700_000_000_000, b"k", b"v") == GOLDEN_V1
    assert kafka_python_set(1, 0, [(1_700_000_000_000, b"k", b"v")]) == GOLDEN_V1


@pytest.mark.parametrize("magic", [0, 1])
def test_encode_message_matches_kafka_python(magic: int) -> None:
    ours = b"".join(
        encode_message(offset, magic, ts, key, value)
        for offset, (ts, key, value) in enumerate(RECORDS)
    )
    assert ours == kafka_python_set(magic, 0, RECORDS)


def test_crc_is_zlib_crc32_of_magic_to_end() -> None:
    [message] = list(iter_message_set(GOLDEN_V1))
    assert int.from_bytes(GOLDEN_V1[12:16], "big") == zlib.crc32(GOLDEN_V1[16:])
    assert (message.offset, message.magic, message.timestamp) == (0, 1, 1_700_000_000_000)
    assert (message.key, message.value) == (b"k", b"v")


def test_record_set_magic_reads_byte_16() -> None:
    assert record_set_magic(GOLDEN_V1) == 1
    assert record_set_magic(stored(CompressionType.NONE)) == 2
    assert record_set_magic(b"\x00" * 16) is None


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_upconvert_magic1_keeps_keys_values_timestamps(codec: CompressionType) -> None:
    batch = upconvert(kafka_python_set(1, codec, RECORDS))
    [view] = list(iter_batches(batch))
    assert view.compression_type == codec
    assert view.base_offset == 0 and view.records_count == len(RECORDS)
    assert view.timestamp_type == TimestampType.CREATE_TIME
    assert decode_v2(batch) == [(i, ts, key, value) for i, (ts, key, value) in enumerate(RECORDS)]


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_upconvert_magic0_has_no_timestamps(codec: CompressionType) -> None:
    # magic 0 lz4 carries Kafka's broken frame header checksum (KIP-57).
    if codec == CompressionType.LZ4:
        with pytest.raises(CorruptRecordError):
            upconvert(encode_message(0, 0, -1, None, b"\x04\x22\x4d\x18\x60\x40\x00", 3))
    batch = upconvert(kafka_python_set(0, codec, RECORDS))
    assert decode_v2(batch) == [(i, -1, key, value) for i, (_, key, value) in enumerate(RECORDS)]
    [view] = list(iter_batches(batch))
    assert view.max_timestamp == -1


def test_upconvert_several_shallow_messages_into_one_batch() -> None:
    data = kafka_python_set(1, 0, RECORDS[:2]) + kafka_python_set(
        1, CompressionType.GZIP, RECORDS[2:]
    )
    assert [r[0] for r in decode_v2(upconvert(data))] == [0, 1, 2, 3, 4]


def test_upconvert_log_append_time_wrapper_stamps_inner_messages() -> None:
    inner = b"".join(encode_message(i, 1, 5, b"k", b"v", 0x08) for i in range(2))
    wrapper = encode_message(1, 1, 42, None, zlib.compress(inner, wbits=31), 0x08 | 1)
    assert [r[1] for r in decode_v2(upconvert(wrapper))] == [42, 42]


CORRUPTIONS = {
    "crc": 12,
    "magic-to-end byte": -1,
}


@pytest.mark.parametrize("position", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_upconvert_wrong_crc_is_corrupt_message(position: int) -> None:
    data = bytearray(kafka_python_set(1, 0, RECORDS))
    data[position] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        upconvert(data)


def test_upconvert_wrong_crc_of_an_inner_message_is_corrupt_message() -> None:
    inner = bytearray(encode_message(0, 1, 5, b"k", b"value"))
    inner[-1] ^= 0xFF
    wrapper = encode_message(0, 1, 5, None, zlib.compress(bytes(inner), wbits=31), 1)
    with pytest.raises(CorruptRecordError):
        upconvert(wrapper)


def test_upconvert_refuses_partial_message_bad_magic_and_nested_compression() -> None:
    with pytest.raises(CorruptRecordError):
        upconvert(GOLDEN_V1[:-1])
    bad_magic = bytearray(GOLDEN_V1)
    bad_magic[16] = 3
    with pytest.raises(InvalidRecordError):
        upconvert(bad_magic)
    nested = encode_message(0, 1, 5, None, b"x", 1)
    wrapper = encode_message(0, 1, 5, None, zlib.compress(nested, wbits=31), 1)
    with pytest.raises(InvalidRecordError):
        upconvert(wrapper)
    with pytest.raises(CorruptRecordError):
        upconvert(b"")


def stored(
    codec: CompressionType, *, headers: bool = False, log_append_time: int | None = None
) -> bytearray:
    builder = RecordBatchBuilder(
        compression=codec,
        base_offset=10,
        timestamp_type=TimestampType.LOG_APPEND_TIME if log_append_time else 0,
    )
    for ts, key, value in RECORDS:
        builder.append(ts, key, value, [("h", b"x")] if headers else ())
    batch = builder.build()
    if log_append_time:
        RecordBatchView(batch).set_log_append_time(log_append_time)
    return batch


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("magic", [0, 1])
def test_downconvert_reads_back_with_kafka_python(codec: CompressionType, magic: int) -> None:
    out = downconvert(bytes(stored(codec, headers=True)), magic, 10)
    expected = [
        (10 + i, ts if magic else None, key, value) for i, (ts, key, value) in enumerate(RECORDS)
    ]
    assert read_back(out) == expected
    assert out == downconvert(bytes(stored(codec)), magic, 10), "headers are dropped"


def test_downconvert_uncompressed_leaves_out_records_below_the_fetch_offset() -> None:
    out = downconvert(bytes(stored(CompressionType.NONE)), 1, 12)
    assert [r[0] for r in read_back(out)] == [12, 13, 14]


def test_downconvert_compressed_keeps_the_whole_batch_in_one_wrapper() -> None:
    out = downconvert(bytes(stored(CompressionType.GZIP)), 1, 12)
    [wrapper] = list(iter_message_set(out))
    assert wrapper.offset == 14 and wrapper.codec == CompressionType.GZIP
    assert wrapper.timestamp == max(ts for ts, _, _ in RECORDS)
    inner = list(iter_message_set(zlib.decompress(wrapper.value or b"", wbits=47)))
    assert [m.offset for m in inner] == [0, 1, 2, 3, 4], "magic 1 inner offsets are relative"
    out0 = downconvert(bytes(stored(CompressionType.GZIP)), 0, 12)
    [wrapper0] = list(iter_message_set(out0))
    inner0 = list(iter_message_set(zlib.decompress(wrapper0.value or b"", wbits=47)))
    assert [m.offset for m in inner0] == [10, 11, 12, 13, 14], "magic 0 inner offsets are absolute"


@pytest.mark.parametrize(
    "codec", [CompressionType.NONE, CompressionType.GZIP], ids=lambda c: c.name
)
def test_downconvert_log_append_time(codec: CompressionType) -> None:
    out = downconvert(bytes(stored(codec, log_append_time=1_800_000_000_000)), 1, 10)
    assert {ts for _, ts, _, _ in read_back(out)} == {1_800_000_000_000}
    assert all(m.log_append_time for m in iter_message_set(out))


def test_downconvert_drops_control_batches_and_a_partial_tail() -> None:
    control = RecordBatchBuilder(base_offset=9, is_control_batch=True, is_transactional=True)
    control.append(0, b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")
    data = bytes(control.build()) + bytes(stored(CompressionType.NONE))
    full = downconvert(data, 1, 9)
    assert [r[0] for r in read_back(full)] == [10, 11, 12, 13, 14]
    assert downconvert(data[:-1], 1, 9) == b""


def test_downconvert_zstd_is_unsupported_compression_type() -> None:
    with pytest.raises(UnsupportedCompressionTypeError):
        downconvert(bytes(stored(CompressionType.ZSTD)), 1, 10)


def test_xxh32_known_values() -> None:
    assert _xxh32(b"") == 0x02CC5D05
    assert _xxh32(b"abc") == 0x32D153FF
    assert _xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_upconvert_zstd_wrapper_is_unsupported_compression_type() -> None:
    inner = encode_message(0, 1, 5, b"k", b"v")
    wrapper = encode_message(0, 1, 5, None, compress(CompressionType.ZSTD, inner), 4)
    with pytest.raises(UnsupportedCompressionTypeError):
        upconvert(wrapper)
    with pytest.raises(InvalidRecordError):
        upconvert(encode_message(0, 1, 5, None, b"x", 5))


# -- downconvert_for_fetch: the records as Kafka 3.9 sends them to Fetch v0-3 -----------------
# (tests/reference/test_differential.py compares them with Kafka's bytes; these pin the rules.)


def test_fetch_pads_a_shorter_conversion_with_an_overflow_batch() -> None:
    one = bytes(stored(CompressionType.NONE, headers=True))
    data = one + one
    converted = downconvert(data, 1, 14)  # the records below 14 left out: shorter than data
    out = downconvert_for_fetch(data, 1, 14)
    rest = len(data) - len(converted)
    assert 0 < rest < len(data) and len(out) == len(data)
    assert out[: len(converted)] == converted
    # offset -1, a length past the end (at least a v2 batch header), zeros.
    overflow = out[len(converted) :]
    assert overflow[:8] == b"\xff" * 8
    assert int.from_bytes(overflow[8:12], "big") == max(rest + 1, 61)
    assert overflow[12:] == bytes(rest - 12)
    assert [r[0] for r in read_back(converted)] == [14, 14]


def test_fetch_cuts_a_longer_conversion_at_the_size_of_the_first_batch_converted() -> None:
    one = bytes(stored(CompressionType.NONE))
    data = one + one
    first = downconvert(one, 0, 10)
    assert len(first) > len(one), "magic 0 messages take more room than v2 records here"
    out = downconvert_for_fetch(data, 0, 10)
    assert len(out) == max(len(data), len(first))
    assert out == downconvert(data, 0, 10)[: len(out)]


def test_fetch_of_a_partial_batch_only_is_empty() -> None:
    one = bytes(stored(CompressionType.NONE))
    assert downconvert_for_fetch(one[:-1], 1, 10) == b""


def test_fetch_stops_at_a_zstd_batch_after_others_and_refuses_one_first() -> None:
    zstd = bytearray(stored(CompressionType.ZSTD))
    zstd[:8] = (15).to_bytes(8, "big")  # the next batch: offsets 15-19
    data = bytes(stored(CompressionType.NONE)) + bytes(zstd)
    out = downconvert_for_fetch(data, 1, 10)
    converted = downconvert(bytes(stored(CompressionType.NONE)), 1, 10)
    assert len(out) == len(data) and out.startswith(converted)
    assert out[len(converted) : len(converted) + 8] == b"\xff" * 8
    with pytest.raises(UnsupportedCompressionTypeError):
        downconvert_for_fetch(bytes(zstd), 1, 15)
