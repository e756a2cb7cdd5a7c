"""Self-tests for the spec-only Kafka log reader in ``tests.support.kafka_format``.

Batches are produced by real clients' encoders -- kafka-python (none, gzip) and aiokafka
(snappy, lz4, zstd; kafka-python lacks those codecs here) -- so the reader is checked against
bytes it had no hand in producing.  Index and checkpoint files are written by hand with
``struct`` straight from Kafka's documented layouts.
"""

from __future__ import annotations

import base64
import struct
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path

import cramjam
import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.kafka_format import (
    BATCH_HEADER_SIZE,
    AbortedTxn,
    KafkaFormatError,
    check_partition_dir,
    count_index_padding,
    decode_varint,
    decompress,
    parse_checkpoint,
    parse_control_key,
    parse_leader_epoch_checkpoint,
    parse_log_segment,
    parse_meta_properties,
    parse_offset_index,
    parse_partition_metadata,
    parse_time_index,
    parse_txn_index,
    segment_file_name,
)

with warnings.catch_warnings():
    # kafka-python's package import uses a deprecated importlib.resources API.
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder

from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioKafkaBuilder

CODECS = [0, 1, 2, 3, 4]
CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

Header = tuple[str, bytes | None]
Spec = tuple[int, int, bytes | None, bytes | None, list[Header]]  # delta, ts, key, value, hdrs


def build_batch(
    codec: int,
    records: list[Spec],
    *,
    base_offset: int = 0,
    leader_epoch: int = 0,
    transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    require_codec: bool = True,
) -> bytes:
    """A batch encoded by a client library, then placed at ``base_offset`` like a broker does.

    baseOffset and partitionLeaderEpoch sit before the CRC-covered region, so a broker (and
    this helper) sets them without touching the CRC.
    """
    builder_cls = KafkaPythonBuilder if codec in (0, 1) else AioKafkaBuilder
    builder = builder_cls(
        magic=2,
        compression_type=codec,
        is_transactional=int(transactional),
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        batch_size=1 << 24,
    )
    for delta, timestamp, key, value, headers in records:
        assert builder.append(delta, timestamp, key, value, headers) is not None
    data = bytearray(builder.build())
    struct.pack_into(">q", data, 0, base_offset)
    struct.pack_into(">i", data, 12, leader_epoch)
    if require_codec:
        (attributes,) = struct.unpack_from(">h", data, 21)
        assert attributes & 7 == codec, "client fell back to no compression; use bigger values"
    return bytes(data)


def rewrite(batch: bytes, fmt: str, offset: int, *values: object, fix_crc: bool = True) -> bytes:
    """Patch header bytes of an encoded batch and (by default) recompute its CRC-32C."""
    data = bytearray(batch)
    struct.pack_into(fmt, data, offset, *values)
    if fix_crc:
        struct.pack_into(">I", data, 17, crc32c.crc32c(bytes(data[21:])))
    return bytes(data)


def sample_records(n: int, *, first_ts: int = 1_700_000_000_000, tag: str = "") -> list[Spec]:
    out: list[Spec] = []
    for i in range(n):
        key = None if i % 3 == 2 else f"key-{tag}{i}".encode()
        value = None if i % 4 == 3 else (f"value-{tag}{i}-" * 40).encode()
        headers: list[Header] = [("trace", f"t{i}".encode()), ("empty", None)] if i % 2 else []
        out.append((i, first_ts + i * 7 - (5 if i == 1 else 0), key, value, headers))
    return out


@dataclass
class Expected:
    position: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    records: list[Spec]


def make_segment(
    codec: int, counts: list[int], base_offset: int, *, first_ts: int = 1_700_000_000_000
) -> tuple[bytes, list[Expected]]:
    data = b""
    expected: list[Expected] = []
    offset = base_offset
    for n, count in enumerate(counts):
        records = sample_records(count, first_ts=first_ts + n * 1000, tag=f"{offset}-")
        batch = build_batch(codec, records, base_offset=offset, leader_epoch=3)
        max_ts = max(ts for _, ts, _, _, _ in records)
        expected.append(Expected(len(data), offset, offset + count - 1, max_ts, records))
        data += batch
        offset += count
    return data, expected


def offset_index_bytes(base_offset: int, entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">ii", off - base_offset, pos) for off, pos in entries)


def time_index_bytes(base_offset: int, entries: list[tuple[int, int]]) -> bytes:
    return b"".join(struct.pack(">qi", ts, off - base_offset) for ts, off in entries)


# ------------------------------------------------------------------------------------------
# Batches and records
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=[CODEC_NAMES[c] for c in CODECS])
def test_segment_of_client_encoded_batches(codec: int) -> None:
    data, expected = make_segment(codec, [1, 5, 3], base_offset=100)
    batches = parse_log_segment(data)
    assert batches.partial_tail is None
    assert len(batches) == len(expected)
    for batch, exp in zip(batches, expected, strict=True):
        assert batch.position == exp.position
        assert batch.base_offset == exp.base_offset
        assert batch.last_offset == exp.last_offset
        assert batch.last_offset_delta == len(exp.records) - 1
        assert batch.records_count == len(exp.records)
        assert batch.magic == 2
        assert batch.crc_valid and batch.crc == batch.computed_crc
        assert batch.decode_error is None
        assert batch.compression == codec
        assert batch.compression_name == CODEC_NAMES[codec]
        assert batch.partition_leader_epoch == 3
        assert batch.base_timestamp == exp.records[0][1]
        assert batch.max_timestamp == exp.max_timestamp
        assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
        assert not batch.is_transactional and not batch.is_control
        assert batch.timestamp_type == 0
        assert batch.size_in_bytes == batch.batch_length + 12
        assert batch.end_position == batch.position + batch.size_in_bytes
        got = [
            (r.offset - batch.base_offset, r.timestamp, r.key, r.value, r.headers)
            for r in batch.records
        ]
        assert got == exp.records
        for record in batch.records:
            assert record.offset == batch.base_offset + record.offset_delta
            assert record.timestamp == batch.base_timestamp + record.timestamp_delta
            assert record.attributes == 0
    assert batches[-1].end_position == len(data)


def test_producer_fields_and_transactional_flag() -> None:
    batch = build_batch(
        0,
        sample_records(2),
        base_offset=7,
        transactional=True,
        producer_id=123456789012,
        producer_epoch=42,
        base_sequence=17,
    )
    (parsed,) = parse_log_segment(batch)
    assert parsed.is_transactional and not parsed.is_control
    assert (parsed.producer_id, parsed.producer_epoch, parsed.base_sequence) == (
        123456789012,
        42,
        17,
    )


def test_control_batch_and_log_append_time() -> None:
    marker = build_batch(0, [(0, 5000, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x07", [])])
    # Broker-side attributes: transactional (bit 4) + control (bit 5) + LogAppendTime (bit 3).
    marker = rewrite(marker, ">h", 21, 0x10 | 0x20 | 0x08)
    marker = rewrite(marker, ">q", 35, 9999)  # maxTimestamp = the append time
    (batch,) = parse_log_segment(marker)
    assert batch.is_control and batch.is_transactional and batch.timestamp_type == 1
    assert parse_control_key(batch.records[0].key) == (0, 1)
    assert batch.records[0].timestamp == 5000
    assert batch.record_timestamp(batch.records[0]) == 9999
    with pytest.raises(ValueError, match="shorter than 4"):
        parse_control_key(b"\x00")


def test_snappy_xerial_stream_with_several_blocks() -> None:
    big = bytes(range(256)) * 300  # > 32 KiB: aiokafka's xerial framing splits it
    data = build_batch(2, [(0, 1, b"k", big, []), (1, 2, None, big[::-1], [])])
    payload = data[BATCH_HEADER_SIZE:]
    assert payload.startswith(b"\x82SNAPPY\x00")
    (batch,) = parse_log_segment(data)
    assert [r.value for r in batch.records] == [big, big[::-1]]


@pytest.mark.parametrize(
    ("codec", "compress"),
    [
        (1, lambda b: __import__("gzip").compress(b)),
        (2, lambda b: bytes(cramjam.snappy.compress_raw(b))),
        (3, lambda b: bytes(cramjam.lz4.compress(b))),
        (4, lambda b: bytes(cramjam.zstd.compress(b))),
    ],
    ids=["gzip", "raw-snappy", "lz4", "zstd"],
)
def test_decompress_accepts_plain_streams(codec, compress) -> None:
    payload = b"records " * 100
    assert decompress(codec, compress(payload)) == payload


def test_decompress_garbage_is_a_value_error() -> None:
    for codec in (1, 2, 3, 4):
        with pytest.raises(ValueError, match="decompress"):
            decompress(codec, b"\x00\x01garbage")
    with pytest.raises(ValueError, match="codec"):
        decompress(6, b"")


def test_empty_input_is_an_empty_segment() -> None:
    assert parse_log_segment(b"") == []


# ------------------------------------------------------------------------------------------
# Corruption and malformed batches
# ------------------------------------------------------------------------------------------


def test_corrupted_crc_field_is_reported_not_raised() -> None:
    data, _ = make_segment(0, [2, 2], base_offset=0)
    bad = bytearray(data)
    bad[17] ^= 0xFF  # the CRC of the first batch
    batches = parse_log_segment(bytes(bad))
    assert [b.crc_valid for b in batches] == [False, True]
    assert batches[0].records_count == len(batches[0].records) == 2
    assert batches[0].crc != batches[0].computed_crc


def test_corrupted_payload_byte_flips_crc_valid() -> None:
    data, _ = make_segment(0, [3], base_offset=0)
    bad = bytearray(data)
    bad[-10] ^= 0x01  # inside the last record's value
    (batch,) = parse_log_segment(bytes(bad))
    assert not batch.crc_valid
    assert batch.decode_error is None  # still decodable, just wrong


def test_corrupt_compressed_payload_with_bad_crc_keeps_parsing() -> None:
    data, _ = make_segment(4, [3, 1], base_offset=0)
    bad = bytearray(data)
    bad[BATCH_HEADER_SIZE + 5 : BATCH_HEADER_SIZE + 9] = b"\xff\xff\xff\xff"
    batches = parse_log_segment(bytes(bad))
    assert not batches[0].crc_valid and batches[0].records == []
    assert batches[0].decode_error
    assert batches[1].crc_valid and len(batches[1].records) == 1


def test_truncated_tail_raises_or_is_reported() -> None:
    data, expected = make_segment(1, [2, 2, 2], base_offset=10)
    cut = data[:-5]
    with pytest.raises(ValueError, match="incomplete batch"):
        parse_log_segment(cut)
    batches = parse_log_segment(cut, allow_partial_tail=True)
    assert [b.base_offset for b in batches] == [10, 12]
    tail = batches.partial_tail
    assert tail is not None
    assert tail.position == expected[2].position
    assert tail.available == len(cut) - expected[2].position
    assert tail.declared_size == len(data) - expected[2].position


def test_tail_shorter_than_the_length_fields() -> None:
    data, expected = make_segment(0, [1, 1], base_offset=0)
    cut = data[: expected[1].position + 7]
    with pytest.raises(ValueError, match="incomplete batch"):
        parse_log_segment(cut)
    batches = parse_log_segment(cut, allow_partial_tail=True)
    assert len(batches) == 1
    assert batches.partial_tail is not None
    assert batches.partial_tail.declared_size is None
    assert batches.partial_tail.available == 7


def test_batch_length_too_short() -> None:
    batch = build_batch(0, sample_records(1))
    with pytest.raises(ValueError, match="shorter than"):
        parse_log_segment(rewrite(batch, ">i", 8, 20, fix_crc=False))
    with pytest.raises(ValueError, match="shorter than"):
        parse_log_segment(bytes(30))  # zero-filled (preallocated) space is not a batch


def test_wrong_magic() -> None:
    batch = build_batch(0, sample_records(1))
    with pytest.raises(ValueError, match="magic"):
        parse_log_segment(rewrite(batch, ">b", 16, 1, fix_crc=False))


def test_record_count_mismatch() -> None:
    batch = build_batch(0, sample_records(3))
    with pytest.raises(ValueError, match="recordsCount is 4"):
        parse_log_segment(rewrite(batch, ">i", 57, 4))
    with pytest.raises(ValueError, match="trailing bytes"):
        parse_log_segment(rewrite(batch, ">i", 57, 2))


def test_trailing_bytes_inside_a_batch() -> None:
    batch = build_batch(0, sample_records(2)) + b"\x00\x00"
    batch = rewrite(batch, ">i", 8, len(batch) - 12)
    with pytest.raises(ValueError, match="2 trailing bytes inside the batch"):
        parse_log_segment(batch)


def test_last_offset_delta_smaller_than_records() -> None:
    batch = build_batch(0, sample_records(3))
    with pytest.raises(ValueError, match="lastOffsetDelta"):
        parse_log_segment(rewrite(batch, ">i", 23, 1))


def test_unknown_codec() -> None:
    batch = build_batch(0, sample_records(1))
    with pytest.raises(ValueError, match="unknown compression codec 5"):
        parse_log_segment(rewrite(batch, ">h", 21, 5))


def test_record_length_overrun() -> None:
    batch = bytearray(build_batch(0, [(0, 1, b"k", b"v", [])]))
    # The record starts right after the header: its length varint (zigzag) is the first byte.
    length, _ = decode_varint(batch, BATCH_HEADER_SIZE)
    batch[BATCH_HEADER_SIZE] = (length + 3) << 1
    batch = bytearray(rewrite(bytes(batch), ">i", 57, 1))
    with pytest.raises(ValueError, match="runs past"):
        parse_log_segment(bytes(batch))


# ------------------------------------------------------------------------------------------
# Varints
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b"\x00", 0),
        (b"\x01", -1),
        (b"\x02", 1),
        (b"\x7f", -64),
        (b"\x80\x01", 64),
        (b"\xfe\xff\xff\xff\x0f", 2**31 - 1),
        (b"\xff\xff\xff\xff\x0f", -(2**31)),
    ],
)
def test_zigzag_varint(raw: bytes, value: int) -> None:
    assert decode_varint(raw, 0) == (value, len(raw))


def test_varlong_and_limits() -> None:
    raw = b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01"
    assert decode_varint(raw, 0, long=True) == (2**63 - 1, 10)
    with pytest.raises(ValueError, match="longer than 5"):
        decode_varint(b"\x80\x80\x80\x80\x80\x01", 0)
    with pytest.raises(ValueError, match="32 bits"):
        decode_varint(b"\xff\xff\xff\xff\x1f", 0)
    with pytest.raises(ValueError, match="past the end"):
        decode_varint(b"\x80", 0)


# ------------------------------------------------------------------------------------------
# Index files
# ------------------------------------------------------------------------------------------


def test_offset_index() -> None:
    raw = struct.pack(">iiii", 4, 0x1000, 9, 0x2345)
    assert parse_offset_index(raw, 50) == [(54, 0x1000), (59, 0x2345)]
    padded = raw + bytes(8 * 5)
    assert count_index_padding(padded, 8) == 5
    with pytest.raises(ValueError, match="5 trailing all-zero"):
        parse_offset_index(padded, 50)
    assert parse_offset_index(padded, 50, allow_padding=True) == [(54, 0x1000), (59, 0x2345)]
    assert parse_offset_index(bytes(80), 50, allow_padding=True) == []
    assert parse_offset_index(b"", 0) == []
    with pytest.raises(ValueError, match="multiple"):
        parse_offset_index(raw + b"\x00", 50)
    with pytest.raises(ValueError, match="negative"):
        parse_offset_index(struct.pack(">ii", -1, 0), 50)


def test_time_index() -> None:
    raw = struct.pack(">qiqi", 1_700_000_000_000, 3, 1_700_000_000_500, 8)
    assert parse_time_index(raw, 10) == [(1_700_000_000_000, 13), (1_700_000_000_500, 18)]
    with pytest.raises(ValueError, match="trailing all-zero"):
        parse_time_index(raw + bytes(24), 10)
    assert len(parse_time_index(raw + bytes(24), 10, allow_padding=True)) == 2
    with pytest.raises(ValueError, match="multiple"):
        parse_time_index(raw[:-1], 10)


def test_txn_index() -> None:
    raw = struct.pack(">hqqqq", 0, 77, 10, 20, 21) + struct.pack(">hqqqq", 0, 78, 30, 31, 40)
    assert parse_txn_index(raw) == [AbortedTxn(0, 77, 10, 20, 21), AbortedTxn(0, 78, 30, 31, 40)]
    with pytest.raises(ValueError, match="version"):
        parse_txn_index(struct.pack(">hqqqq", 1, 77, 10, 20, 21))
    with pytest.raises(ValueError, match="multiple"):
        parse_txn_index(raw[:-1])


# ------------------------------------------------------------------------------------------
# Text files
# ------------------------------------------------------------------------------------------


def test_offset_checkpoint() -> None:
    text = "0\n3\nfoo 0 15\nfoo 1 0\nbar.baz-x 12 9223372036854775807\n"
    assert parse_checkpoint(text) == {
        ("foo", 0): 15,
        ("foo", 1): 0,
        ("bar.baz-x", 12): 2**63 - 1,
    }
    assert parse_checkpoint("0\r\n1\r\nt 0 5") == {("t", 0): 5}
    assert parse_checkpoint("0\n0\n") == {}
    assert parse_checkpoint("") == {}  # Kafka creates the file empty


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0\n2\nfoo 0 15\n", "declares 2 entries but holds 1"),
        ("0\n0\nfoo 0 15\n", "declares 0 entries but holds 1"),
        ("0\n1\nfoo 0 15\nfoo 1 3\n", "declares 1 entries but holds 2"),
        ("1\n1\nfoo 0 15\n", "version 1"),
        ("0\nx\n", "entry count"),
        ("0\n1\nfoo 0\n", "malformed line"),
        ("0\n1\n foo 0 1\n", "malformed line"),
        ("0\n2\nfoo 0 1\n\n", "malformed line"),
        ("0\n1\nfoo zero 1\n", "partition"),
        ("0\n2\nfoo 0 1\nfoo 0 2\n", "twice"),
    ],
)
def test_offset_checkpoint_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_checkpoint(text)


def test_leader_epoch_checkpoint() -> None:
    assert parse_leader_epoch_checkpoint("0\n2\n0 0\n3 120\n") == [(0, 0), (3, 120)]
    with pytest.raises(ValueError, match="declares 3"):
        parse_leader_epoch_checkpoint("0\n3\n0 0\n3 120\n")
    with pytest.raises(ValueError, match="malformed"):
        parse_leader_epoch_checkpoint("0\n1\n0 0 0\n")


def topic_id_text(value: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def test_partition_metadata() -> None:
    topic_id = topic_id_text(uuid.UUID("1d5e5e2c-5a7e-4a1b-9d5e-0c3fa8b2c4d1"))
    assert len(topic_id) == 22
    assert parse_partition_metadata(f"version: 0\ntopic_id: {topic_id}") == topic_id
    assert parse_partition_metadata(f"version: 0\ntopic_id: {topic_id}\n") == topic_id
    for bad, message in [
        (f"version: 1\ntopic_id: {topic_id}", "version 1"),
        (f"version:0\ntopic_id: {topic_id}", "malformed"),
        (f"topic_id: {topic_id}\nversion: 0", "malformed"),
        ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "all-zero"),
        (f"version: 0\ntopic_id: {topic_id}=", "22 characters"),
        (f"version: 0\ntopic_id: {topic_id[:-1]}+", "22 characters"),
        ("version: 0\n", "two lines"),
        (f"version: 0\ntopic_id: {topic_id}\nextra: 1", "two lines"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_partition_metadata(bad)


def test_meta_properties() -> None:
    text = (
        "#\n"
        "#Thu Jan 01 00:00:00 UTC 2026\n"
        "! another comment\n"
        "node.id=1\n"
        "directory.id=a1b2c3d4e5f6g7h8i9j0kA\n"
        "version=1\n"
        "cluster.id = Xy-z_0123456789abcdefgh\n"
        "spaced\\ key:value with spaces\n"
        "escaped=tab\\there\\u0041\\=\n"
        "continued=one\\\n"
        "    two\n"
        "empty=\n"
        "bare\n"
    )
    assert parse_meta_properties(text) == {
        "node.id": "1",
        "directory.id": "a1b2c3d4e5f6g7h8i9j0kA",
        "version": "1",
        "cluster.id": "Xy-z_0123456789abcdefgh",
        "spaced key": "value with spaces",
        "escaped": "tab\thereA=",
        "continued": "onetwo",
        "empty": "",
        "bare": "",
    }


def test_segment_file_name() -> None:
    assert segment_file_name(0, ".log") == "00000000000000000000.log"
    assert segment_file_name(1234, "index") == "00000000000000001234.index"
    assert segment_file_name(2**63 - 1, ".timeindex") == "09223372036854775807.timeindex"
    with pytest.raises(ValueError):
        segment_file_name(-1, ".log")


# ------------------------------------------------------------------------------------------
# Partition directories
# ------------------------------------------------------------------------------------------


def write_segment(
    directory: Path,
    base_offset: int,
    data: bytes,
    offset_entries: list[tuple[int, int]] | None,
    time_entries: list[tuple[int, int]] | None,
) -> None:
    (directory / segment_file_name(base_offset, ".log")).write_bytes(data)
    if offset_entries is not None:
        (directory / segment_file_name(base_offset, ".index")).write_bytes(
            offset_index_bytes(base_offset, offset_entries)
        )
    if time_entries is not None:
        (directory / segment_file_name(base_offset, ".timeindex")).write_bytes(
            time_index_bytes(base_offset, time_entries)
        )


def kafka_style_indexes(
    expected: list[Expected], every: int = 1
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Index entries the way Kafka writes them: (last offset, batch start) and
    (max timestamp so far, last offset of the batch holding it)."""
    offsets: list[tuple[int, int]] = []
    times: list[tuple[int, int]] = []
    best: tuple[int, int] | None = None
    for n, exp in enumerate(expected):
        if best is None or exp.max_timestamp > best[0]:
            best = (exp.max_timestamp, exp.last_offset)
        if n % every == every - 1:
            offsets.append((exp.last_offset, exp.position))
            if not times or best[0] > times[-1][0]:
                times.append(best)
    return offsets, times


@pytest.fixture
def partition_dir(tmp_path: Path) -> tuple[Path, list[list[Expected]]]:
    directory = tmp_path / "orders-3"
    directory.mkdir()
    seg0, exp0 = make_segment(1, [2, 3, 1], base_offset=0)
    seg1, exp1 = make_segment(4, [4, 2], base_offset=6, first_ts=1_700_000_100_000)
    write_segment(directory, 0, seg0, *kafka_style_indexes(exp0))
    write_segment(directory, 6, seg1, *kafka_style_indexes(exp1, every=2))
    (directory / "leader-epoch-checkpoint").write_text("0\n1\n3 0\n")
    topic_id = topic_id_text(uuid.UUID(int=0xC0FFEE))
    (directory / "partition.metadata").write_text(f"version: 0\ntopic_id: {topic_id}")
    (directory / segment_file_name(6, ".snapshot")).write_bytes(b"")
    return directory, [exp0, exp1]


def test_check_partition_dir_accepts_a_kafka_layout(partition_dir) -> None:
    directory, (exp0, exp1) = partition_dir
    report = check_partition_dir(directory, allow_index_padding=False)
    assert report.problems == []
    assert (report.topic, report.partition) == ("orders", 3)
    assert [s.base_offset for s in report.segments] == [0, 6]
    assert [b.base_offset for b in report.batches] == [0, 2, 5, 6, 10]
    assert [r.offset for r in report.records] == list(range(12))
    assert report.log_end_offset == 12
    assert report.leader_epochs == [(3, 0)]
    assert report.topic_id == topic_id_text(uuid.UUID(int=0xC0FFEE))
    assert report.segments[0].offset_index == [(1, 0), (4, exp0[1].position), (5, exp0[2].position)]
    assert report.segments[1].offset_index == [(11, exp1[1].position)]
    assert report.segments[1].time_index == [(exp1[1].max_timestamp, 11)]
    assert report.segments[1].txn_index is None
    assert report.other_files == [segment_file_name(6, ".snapshot")]
    values = [r.value for r in report.records]
    assert values == [v for exp in exp0 + exp1 for (_, _, _, v, _) in exp.records]


def test_check_partition_dir_with_empty_active_segment(partition_dir) -> None:
    directory, _ = partition_dir
    write_segment(directory, 12, b"", [], [])
    report = check_partition_dir(directory)
    assert report.segments[-1].batches == [] and report.log_end_offset == 12


def test_preallocated_index_is_counted(partition_dir) -> None:
    directory, _ = partition_dir
    index = directory / segment_file_name(6, ".index")
    index.write_bytes(index.read_bytes() + bytes(8 * 100))
    timeindex = directory / segment_file_name(6, ".timeindex")
    timeindex.write_bytes(timeindex.read_bytes() + bytes(12 * 100))
    report = check_partition_dir(directory)
    assert report.segments[1].offset_index_padding == 100
    assert report.segments[1].time_index_padding == 100
    assert len(report.segments[1].offset_index or []) == 1
    with pytest.raises(ValueError, match="100 trailing preallocated entries"):
        check_partition_dir(directory, allow_index_padding=False)


def problems_after(directory: Path, **kwargs: bool) -> list[str]:
    report = check_partition_dir(directory, raise_on_problems=False, **kwargs)
    return report.problems


def test_offset_index_entry_must_name_the_batch_last_offset(partition_dir) -> None:
    directory, (exp0, _) = partition_dir
    entries = [(exp0[1].base_offset, exp0[1].position)]  # first offset instead of last
    (directory / segment_file_name(0, ".index")).write_bytes(offset_index_bytes(0, entries))
    (problem,) = problems_after(directory)
    assert "its last offset should be the entry's offset" in problem
    with pytest.raises(KafkaFormatError) as info:
        check_partition_dir(directory)
    assert info.value.report is not None and info.value.report.problems == [problem]


def test_offset_index_entry_must_point_at_a_batch_start(partition_dir) -> None:
    directory, (exp0, _) = partition_dir
    entries = [(exp0[1].last_offset, exp0[1].position + 1)]
    (directory / segment_file_name(0, ".index")).write_bytes(offset_index_bytes(0, entries))
    assert any("not the start of a batch" in p for p in problems_after(directory))


def test_offset_index_entries_must_increase(partition_dir) -> None:
    directory, (exp0, _) = partition_dir
    entries = [(exp0[2].last_offset, exp0[2].position), (exp0[1].last_offset, exp0[1].position)]
    (directory / segment_file_name(0, ".index")).write_bytes(offset_index_bytes(0, entries))
    assert any("does not strictly follow" in p for p in problems_after(directory))


def test_multi_batch_offset_index_entries(partition_dir) -> None:
    """Kafka indexes a whole append: (last offset of the chunk, start of its first batch)."""
    directory, (exp0, _) = partition_dir
    entries = [(exp0[2].last_offset, exp0[1].position)]
    (directory / segment_file_name(0, ".index")).write_bytes(offset_index_bytes(0, entries))
    assert problems_after(directory) != []
    assert problems_after(directory, allow_multi_batch_index_entries=True) == []


def test_time_index_timestamp_must_match_the_batch(partition_dir) -> None:
    directory, (exp0, _) = partition_dir
    entries = [(exp0[1].max_timestamp + 1, exp0[1].last_offset)]
    (directory / segment_file_name(0, ".timeindex")).write_bytes(time_index_bytes(0, entries))
    (problem,) = problems_after(directory)
    assert "maxTimestamp" in problem


def test_time_index_must_not_go_backwards(partition_dir) -> None:
    directory, (exp0, _) = partition_dir
    entries = [(exp0[2].max_timestamp, exp0[2].last_offset), (exp0[0].max_timestamp, 1)]
    (directory / segment_file_name(0, ".timeindex")).write_bytes(time_index_bytes(0, entries))
    assert any("goes backwards" in p for p in problems_after(directory))


def test_missing_index_and_orphans(partition_dir) -> None:
    directory, _ = partition_dir
    (directory / segment_file_name(6, ".timeindex")).unlink()
    (directory / segment_file_name(99, ".index")).write_bytes(b"")
    problems = problems_after(directory)
    assert any("00000000000000000006.timeindex: missing" in p for p in problems)
    assert any("00000000000000000099.index: no" in p for p in problems)
    assert problems_after(directory, require_indexes=False) == [
        p for p in problems if "missing" not in p
    ]


def test_offset_gap_between_segments(partition_dir) -> None:
    directory, _ = partition_dir
    seg, exp = make_segment(0, [1], base_offset=13)
    write_segment(directory, 13, seg, *kafka_style_indexes(exp))
    assert any("expected 12" in p for p in problems_after(directory))
    assert problems_after(directory, allow_compacted=True) == []


def test_segment_base_must_equal_first_batch(partition_dir) -> None:
    directory, _ = partition_dir
    seg, _ = make_segment(0, [1], base_offset=12)
    write_segment(directory, 11, seg, [], [])
    problems = problems_after(directory)
    assert any("first batch starts at offset 12, segment base is 11" in p for p in problems)


def test_gap_inside_a_segment(partition_dir) -> None:
    directory, _ = partition_dir
    first = build_batch(0, sample_records(2), base_offset=12)
    second = build_batch(0, sample_records(2), base_offset=20)
    write_segment(directory, 12, first + second, [], [])
    problems = problems_after(directory)
    assert any("starts at offset 20, previous batch ended at 13" in p for p in problems)
    assert problems_after(directory, allow_compacted=True) == []


def test_bad_crc_in_partition_dir(partition_dir) -> None:
    directory, (exp0, _) = partition_dir
    log = directory / segment_file_name(0, ".log")
    data = bytearray(log.read_bytes())
    data[exp0[1].position + 17] ^= 0x55
    log.write_bytes(bytes(data))
    (problem,) = problems_after(directory)
    assert "CRC" in problem and f"position {exp0[1].position}" in problem


def test_partial_tail_only_in_last_segment(partition_dir) -> None:
    directory, _ = partition_dir
    last = directory / segment_file_name(6, ".log")
    last.write_bytes(last.read_bytes()[:-3])
    with pytest.raises(ValueError, match="incomplete batch"):
        check_partition_dir(directory)
    # The torn batch is dropped, so index entries pointing at it no longer resolve.
    report = check_partition_dir(directory, allow_partial_tail=True, raise_on_problems=False)
    assert report.segments[1].partial_tail is not None
    assert report.log_end_offset == 10
    first = directory / segment_file_name(0, ".log")
    first.write_bytes(first.read_bytes()[:-3])
    with pytest.raises(ValueError, match="incomplete batch"):
        check_partition_dir(directory, allow_partial_tail=True)


def test_max_timestamp_must_be_newest_record(partition_dir) -> None:
    directory, _ = partition_dir
    batch = build_batch(0, sample_records(2, first_ts=5000), base_offset=12)
    batch = rewrite(batch, ">q", 35, 4000)
    write_segment(directory, 12, batch, [], [])
    assert any("maxTimestamp 4000" in p for p in problems_after(directory))


def test_leader_epoch_checkpoint_must_increase(partition_dir) -> None:
    directory, _ = partition_dir
    (directory / "leader-epoch-checkpoint").write_text("0\n2\n3 0\n2 5\n")
    assert any("leader-epoch-checkpoint" in p for p in problems_after(directory))
    (directory / "leader-epoch-checkpoint").write_text("0\n3\n3 0\n")
    with pytest.raises(ValueError, match="declares 3"):
        check_partition_dir(directory)


# ------------------------------------------------------------------------------------------
# Property: anything a client encodes, the reader decodes back
# ------------------------------------------------------------------------------------------

headers_st = st.lists(
    st.tuples(st.text(max_size=12), st.none() | st.binary(max_size=16)), max_size=4
)
record_st = st.tuples(
    # Non-negative, as a Kafka producer requires ("Timestamp should always be non-negative or
    # null"): aiokafka's C builder takes a first timestamp of -1 (NO_TIMESTAMP) for "unset"
    # and encodes such a batch wrongly (a CI run's example: timestamps -1, 0). Deltas are
    # still negative whenever a later record is older.
    st.integers(min_value=0, max_value=2**40),  # timestamp
    st.none() | st.binary(max_size=64),
    st.none() | st.binary(max_size=300),
    headers_st,
)


@settings(max_examples=150, deadline=None)
@given(
    codec=st.sampled_from(CODECS),
    base_offset=st.integers(min_value=0, max_value=2**62),
    leader_epoch=st.integers(min_value=-1, max_value=2**31 - 1),
    batches=st.lists(st.lists(record_st, min_size=1, max_size=12), min_size=1, max_size=4),
)
def test_round_trip_through_client_encoders(codec, base_offset, leader_epoch, batches) -> None:
    data = b""
    offset = base_offset
    expected = []
    for records in batches:
        specs: list[Spec] = [
            (i, ts, key, value, list(headers))
            for i, (ts, key, value, headers) in enumerate(records)
        ]
        data += build_batch(
            codec,
            specs,
            base_offset=offset,
            leader_epoch=leader_epoch,
            require_codec=False,  # clients send uncompressed when compression does not pay
        )
        expected.append((offset, specs))
        offset += len(specs)
    parsed = parse_log_segment(data)
    assert len(parsed) == len(expected)
    for batch, (first_offset, specs) in zip(parsed, expected, strict=True):
        assert batch.crc_valid
        assert batch.compression in (0, codec)
        assert batch.base_offset == first_offset
        assert batch.partition_leader_epoch == leader_epoch
        assert batch.max_timestamp == max(ts for _, ts, _, _, _ in specs)
        assert [
            (r.offset - first_offset, r.timestamp, r.key, r.value, r.headers) for r in batch.records
        ] == specs
