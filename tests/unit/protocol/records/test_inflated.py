"""Inflated records: builder -> iter_records round trips, strict decoding, client interop."""

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
    Header,
    Record,
    RecordBatchBuilder,
    RecordBatchView,
    TimestampType,
    build_batch,
    compress,
    iter_batches,
    iter_records,
)
from franz.protocol.records.varint import encode_varint, encode_varlong
from tests.unit.protocol.records._peers import (
    AiokafkaBatch,
    AiokafkaBatchBuilder,
    KafkaPythonBatch,
    KafkaPythonBatchBuilder,
    kafka_python_codecs,
)

ALL_CODECS = list(CompressionType)

RecordInput = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]

NULLABLE_BYTES = st.none() | st.binary(max_size=48)
HEADERS = st.lists(st.tuples(st.text(max_size=10), NULLABLE_BYTES), max_size=4)
TIMESTAMPS = st.integers(-1, 1 << 50)
RECORDS = st.lists(st.tuples(TIMESTAMPS, NULLABLE_BYTES, NULLABLE_BYTES, HEADERS), max_size=30)


def _expected(
    records: list[RecordInput], offsets: list[int], fixed_timestamp: int | None = None
) -> list[Record]:
    return [
        Record(
            offset,
            timestamp if fixed_timestamp is None else fixed_timestamp,
            key,
            value,
            tuple(Header(k, v) for k, v in headers),
        )
        for offset, (timestamp, key, value, headers) in zip(offsets, records, strict=True)
    ]


def _decode_all(raw: bytes | bytearray) -> list[Record]:
    return [record for view in iter_batches(raw) for record in iter_records(view)]


# -- round trips ------------------------------------------------------------------------------


@settings(max_examples=120, deadline=None)
@given(
    codec=st.sampled_from(ALL_CODECS),
    records=RECORDS.filter(bool),
    base_offset=st.integers(0, 1 << 62),
    gaps=st.lists(st.integers(1, 1_000), min_size=30, max_size=30),
)
def test_builder_round_trips_through_iter_records(
    codec: CompressionType, records: list[RecordInput], base_offset: int, gaps: list[int]
) -> None:
    builder = RecordBatchBuilder(compression=codec, base_offset=base_offset)
    deltas: list[int] = []
    for i, (timestamp, key, value, headers) in enumerate(records):
        delta = (deltas[-1] + gaps[i]) if (deltas and i % 2) else None
        deltas.append(builder.append(timestamp, key, value, headers, offset_delta=delta))
    raw = builder.build()

    (view,) = iter_batches(raw)
    assert view.compression_type is codec
    assert view.records_count == len(records) == len(builder)
    assert view.base_timestamp == records[0][0]
    assert view.max_timestamp == max(r[0] for r in records)
    assert view.last_offset_delta == deltas[-1]
    assert list(iter_records(view)) == _expected(records, [base_offset + d for d in deltas])


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.config_name)
def test_many_records_round_trip(codec: CompressionType) -> None:
    records: list[RecordInput] = [
        (
            1_700_000_000_000 + (i * 37) % 5_000,
            None if i % 11 == 0 else f"key-{i % 100}".encode(),
            b"" if i % 13 == 0 else (f"value {i} " * (i % 9)).encode(),
            [("index", str(i).encode())] if i % 3 else [],
        )
        for i in range(5_000)
    ]
    raw = build_batch(records, compression=codec, base_offset=1 << 40)
    assert _decode_all(raw) == _expected(records, [(1 << 40) + i for i in range(5_000)])


def test_headers_accept_header_objects_and_tuples() -> None:
    raw = build_batch(
        [(5, b"k", b"v", [Header("a", b"1"), ("b", None), Header("ü→☃", b"")])],
    )
    (record,) = _decode_all(raw)
    assert record.headers == (Header("a", b"1"), Header("b", None), Header("ü→☃", b""))


def test_records_keep_their_offsets_through_build_batch() -> None:
    originals = [
        Record(100, 1_000, b"a", b"1"),
        Record(103, 900, None, None, (Header("h", None),)),
        Record(107, 1_100, b"c", b""),
    ]
    raw = build_batch(originals, compression=CompressionType.ZSTD)
    (view,) = iter_batches(raw)
    assert (view.base_offset, view.last_offset, view.records_count) == (100, 107, 3)
    assert list(iter_records(view)) == originals


def test_tuples_get_consecutive_offsets_from_base_offset() -> None:
    raw = build_batch([(1, None, b"a"), (2, None, b"b")], base_offset=50)
    assert [r.offset for r in _decode_all(raw)] == [50, 51]


def test_header_fields_are_written_as_given() -> None:
    raw = build_batch(
        [(10, b"k", b"v")],
        compression=CompressionType.SNAPPY,
        base_offset=3,
        partition_leader_epoch=9,
        producer_id=77,
        producer_epoch=2,
        base_sequence=40,
        is_transactional=True,
    )
    view = RecordBatchView(raw)
    view.validate()
    assert (view.base_offset, view.partition_leader_epoch) == (3, 9)
    assert (view.producer_id, view.producer_epoch, view.base_sequence) == (77, 2, 40)
    assert view.is_transactional and not view.is_control_batch
    assert view.attributes == 0x10 | CompressionType.SNAPPY


def test_delete_horizon_is_the_base_timestamp_and_records_keep_their_times() -> None:
    builder = RecordBatchBuilder(delete_horizon_ms=2_000_000, compression=CompressionType.GZIP)
    builder.append(1_000, b"k", None)
    builder.append(3_000_000, b"k2", b"v")
    view = RecordBatchView(builder.build())
    view.validate()
    assert view.has_delete_horizon
    assert view.base_timestamp == 2_000_000
    assert view.max_timestamp == 3_000_000
    assert [r.timestamp for r in iter_records(view)] == [1_000, 3_000_000]


def test_empty_batch_as_the_cleaner_keeps_it() -> None:
    """Kafka's ``writeEmptyHeader``: no records, uncompressed, baseTimestamp -1."""
    builder = RecordBatchBuilder(
        compression=CompressionType.GZIP,
        base_offset=100,
        producer_id=7,
        producer_epoch=1,
        base_sequence=30,
    )
    view = RecordBatchView(builder.build(last_offset_delta=4, max_timestamp=999))
    view.validate()
    assert view.size_in_bytes == BATCH_HEADER_SIZE
    assert view.records_count == 0
    assert view.compression_type is CompressionType.NONE
    assert (view.base_timestamp, view.max_timestamp) == (-1, 999)
    assert (view.last_offset, view.last_sequence) == (104, 34)
    assert list(iter_records(view)) == []


def test_builder_rejects_bad_input() -> None:
    builder = RecordBatchBuilder()
    with pytest.raises(ValueError, match="last_offset_delta"):
        builder.build()
    builder.append(1, None, None, offset_delta=5)
    with pytest.raises(ValueError, match="monotonically"):
        builder.append(1, None, None, offset_delta=5)
    with pytest.raises(ValueError, match="int32"):
        builder.append(1, None, None, offset_delta=1 << 31)
    with pytest.raises(ValueError, match="below"):
        builder.build(last_offset_delta=4)
    assert RecordBatchView(builder.build(last_offset_delta=9)).last_offset_delta == 9
    with pytest.raises(ValueError, match="timestamp_type"):
        RecordBatchBuilder(timestamp_type=2)


# -- LogAppendTime ----------------------------------------------------------------------------


def test_log_append_time_batches_use_max_timestamp_for_every_record() -> None:
    raw = build_batch(
        [(5_000, None, b"a"), (1_000, None, b"b"), (3_000, None, b"c")],
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        compression=CompressionType.LZ4,
    )
    (view,) = iter_batches(raw)
    assert view.max_timestamp == 5_000
    assert [r.timestamp for r in iter_records(view)] == [5_000, 5_000, 5_000]


def test_set_log_append_time_changes_every_record_timestamp() -> None:
    raw = build_batch([(5_000, None, b"a"), (1_000, None, b"b")])
    view = RecordBatchView(raw)
    assert [r.timestamp for r in iter_records(view)] == [5_000, 1_000]
    view.set_log_append_time(1_700_000_000_000)
    (reread,) = iter_batches(raw)
    assert [r.timestamp for r in iter_records(reread)] == [1_700_000_000_000] * 2


# -- strict decoding --------------------------------------------------------------------------


def _raw_batch(
    payload: bytes,
    count: int,
    codec: int = CompressionType.NONE,
    *,
    precompressed: bool = False,
) -> bytearray:
    """A batch around hand-made record bytes (independent of the builder); valid CRC."""
    if codec in CompressionType.__members__.values() and not precompressed:
        payload = compress(CompressionType(codec), payload)
    buf = bytearray(struct.pack(">qiib", 0, 49 + len(payload), -1, 2))
    buf += b"\x00\x00\x00\x00"
    buf += struct.pack(">hiqqqhii", codec, max(count - 1, 0), 1_000, 1_000, -1, -1, -1, count)
    buf += payload
    struct.pack_into(">I", buf, 17, crc32c.crc32c(bytes(buf[21:])))
    return buf


def _body(
    *,
    attributes: bytes = b"\x00",
    timestamp_delta: int = 0,
    offset_delta: int = 0,
    key: bytes = b"\x01",  # null
    value: bytes = b"\x01",  # null
    headers: bytes = b"\x00",  # none
) -> bytes:
    return (
        attributes
        + encode_varlong(timestamp_delta)
        + encode_varint(offset_delta)
        + key
        + value
        + headers
    )


def _record(body: bytes, length_adjust: int = 0) -> bytes:
    return encode_varint(len(body) + length_adjust) + body


def _decode_raw(buf: bytearray) -> list[Record]:
    view = RecordBatchView(buf)
    view.validate()
    return list(iter_records(view))


def test_hand_made_records_decode() -> None:
    body = _body(
        timestamp_delta=-5,
        offset_delta=0,
        key=encode_varint(2) + b"ab",
        value=encode_varint(0),
        headers=encode_varint(1) + encode_varint(1) + b"h" + b"\x01",
    )
    assert _decode_raw(_raw_batch(_record(body), 1)) == [
        Record(0, 995, b"ab", b"", (Header("h", None),))
    ]


def test_record_attributes_are_kept_as_signed_int8() -> None:
    (record,) = _decode_raw(_raw_batch(_record(_body(attributes=b"\x80")), 1))
    assert record.attributes == -128


def test_non_utf8_header_keys_survive_a_round_trip_byte_for_byte() -> None:
    headers = encode_varint(1) + encode_varint(3) + b"\xff\xfeA" + encode_varint(1) + b"v"
    payload = _record(_body(key=encode_varint(1) + b"k", headers=headers))
    (record,) = _decode_raw(_raw_batch(payload, 1))
    assert record.headers[0].key == "\udcff\udcfeA"
    rebuilt = build_batch([record], base_offset=0)
    assert bytes(rebuilt[BATCH_HEADER_SIZE:]) == payload


@pytest.mark.parametrize(
    ("payload", "count", "match"),
    [
        (_record(_body(), +1), 1, "remain"),
        (_record(_body(), +1) + _record(_body(offset_delta=1)), 2, "declares length"),
        (_record(_body(), -1) + _record(_body(offset_delta=1)), 2, "run past"),
        (_record(_body()), 2, "declares 2 records"),
        (_record(_body()) + _record(_body(offset_delta=1)), 1, "after its 1 declared"),
        (_record(_body()) + b"\x00", 1, "after its 1 declared"),
        (_record(_body(key=encode_varint(-2))), 1, "key has invalid length -2"),
        (_record(_body(value=encode_varint(-5))), 1, "value has invalid length -5"),
        (_record(_body(key=encode_varint(10) + b"abc")), 1, "key runs past"),
        (_record(_body(headers=encode_varint(-1))), 1, "number of headers"),
        (_record(_body(headers=encode_varint(1) + encode_varint(-1))), 1, "negative key length"),
        (_record(_body(headers=encode_varint(1) + encode_varint(9) + b"k")), 1, "key runs past"),
        (
            _record(_body(headers=encode_varint(1) + encode_varint(1) + b"k" + encode_varint(4))),
            1,
            "header value runs past",
        ),
        (_record(_body(headers=encode_varint(1_000_000))), 1, "truncated"),
        (encode_varint(0), 1, "empty"),
        (encode_varint(-3) + _body(), 1, "length -3"),
        (b"\x80\x80\x80\x80\x80\x00" + _body(), 1, "longer than 5 bytes"),
        (b"\x06\x00\x80\x80", 1, "truncated"),
        (b"", 1, "declares 1 records"),
    ],
    ids=[
        "length-past-the-end",
        "length-too-long",
        "length-too-short",
        "fewer-records-than-count",
        "more-records-than-count",
        "trailing-byte",
        "key-length-minus-2",
        "value-length-minus-5",
        "key-past-record",
        "negative-header-count",
        "negative-header-key-length",
        "header-key-past-record",
        "header-value-past-record",
        "huge-header-count",
        "empty-record",
        "negative-record-length",
        "overlong-varint",
        "truncated-varint",
        "no-records-at-all",
    ],
)
@pytest.mark.parametrize(
    "codec", [CompressionType.NONE, CompressionType.ZSTD], ids=lambda c: c.config_name
)
def test_malformed_records_are_invalid(
    payload: bytes, count: int, match: str, codec: CompressionType
) -> None:
    with pytest.raises(InvalidRecordError, match=match):
        _decode_raw(_raw_batch(payload, count, codec))


def test_negative_records_count_is_invalid() -> None:
    with pytest.raises(InvalidRecordError, match="-1 records"):
        list(iter_records(RecordBatchView(_raw_batch(b"", -1))))


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_is_invalid(codec: int) -> None:
    with pytest.raises(InvalidRecordError, match="codec"):
        list(iter_records(RecordBatchView(_raw_batch(_record(_body()), 1, codec))))


@pytest.mark.parametrize(
    "codec",
    [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD],
    ids=lambda c: c.config_name,
)
def test_records_that_do_not_decompress_are_corrupt(codec: CompressionType) -> None:
    buf = _raw_batch(b"\xff" + _record(_body()), 1, codec, precompressed=True)
    view = RecordBatchView(buf)
    view.validate()  # the CRC is fine: the damage predates it
    with pytest.raises(CorruptRecordError, match="decompress"):
        list(iter_records(view))


def test_truncated_batch_is_invalid_not_misread() -> None:
    raw = bytes(build_batch([(1, b"k", b"v" * 20)]))
    with pytest.raises(InvalidRecordError, match="truncated"):
        list(iter_records(RecordBatchView(raw[:-3])))


# -- interop with kafka-python and aiokafka ---------------------------------------------------

INTEROP_SETTINGS = settings(max_examples=25, deadline=None)
INTEROP_RECORDS = st.lists(
    st.tuples(st.integers(0, 1 << 45), NULLABLE_BYTES, NULLABLE_BYTES, HEADERS),
    min_size=1,
    max_size=12,
)


def _client_build(builder_class, codec: CompressionType, records: list[RecordInput]) -> bytes:
    builder = builder_class(2, int(codec), 0, -1, -1, -1, 1 << 20)
    for offset, (timestamp, key, value, headers) in enumerate(records):
        assert builder.append(offset, timestamp, key, value, headers) is not None
    return bytes(builder.build())


def _client_decode(batch_class, raw: bytes) -> list[tuple]:
    batch = batch_class(raw)
    assert batch.validate_crc()
    return [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]


def _as_tuples(records: list[RecordInput], base_offset: int) -> list[tuple]:
    return [
        (base_offset + i, ts, key, value, list(headers))
        for i, (ts, key, value, headers) in enumerate(records)
    ]


@INTEROP_SETTINGS
@given(codec=st.sampled_from(kafka_python_codecs()), records=INTEROP_RECORDS)
def test_kafka_python_batches_decode_with_franz(
    codec: CompressionType, records: list[RecordInput]
) -> None:
    raw = _client_build(KafkaPythonBatchBuilder, codec, records)
    assert _decode_all(raw) == _expected(records, list(range(len(records))))


@INTEROP_SETTINGS
@given(
    codec=st.sampled_from(kafka_python_codecs()),
    records=INTEROP_RECORDS,
    base_offset=st.integers(0, 1 << 40),
)
def test_franz_batches_decode_with_kafka_python(
    codec: CompressionType, records: list[RecordInput], base_offset: int
) -> None:
    raw = bytes(build_batch(records, compression=codec, base_offset=base_offset))
    assert _client_decode(KafkaPythonBatch, raw) == _as_tuples(records, base_offset)


@INTEROP_SETTINGS
@given(codec=st.sampled_from(ALL_CODECS), records=INTEROP_RECORDS)
def test_aiokafka_batches_decode_with_franz(
    codec: CompressionType, records: list[RecordInput]
) -> None:
    raw = _client_build(AiokafkaBatchBuilder, codec, records)
    assert _decode_all(raw) == _expected(records, list(range(len(records))))


@INTEROP_SETTINGS
@given(
    codec=st.sampled_from(ALL_CODECS),
    records=INTEROP_RECORDS,
    base_offset=st.integers(0, 1 << 40),
)
def test_franz_batches_decode_with_aiokafka(
    codec: CompressionType, records: list[RecordInput], base_offset: int
) -> None:
    raw = bytes(build_batch(records, compression=codec, base_offset=base_offset))
    assert _client_decode(AiokafkaBatch, raw) == _as_tuples(records, base_offset)


@pytest.mark.parametrize("codec", kafka_python_codecs(), ids=lambda c: c.config_name)
def test_compressible_kafka_python_batches_use_the_codec(codec: CompressionType) -> None:
    """kafka-python sends uncompressed when compression does not pay; make sure it did here."""
    records: list[RecordInput] = [(i, b"key", b"repeat " * 40, [("h", b"v")]) for i in range(20)]
    raw = _client_build(KafkaPythonBatchBuilder, codec, records)
    (view,) = iter_batches(raw)
    assert view.compression_type is codec
    assert list(iter_records(view)) == _expected(records, list(range(20)))


def test_uncompressed_encoding_is_byte_identical_to_kafka_python() -> None:
    """Varints are canonical, so equal inputs give equal bytes (bar the leader epoch)."""
    records: list[RecordInput] = [
        (1_000, b"k", b"v", [("a", None), ("b", b"1")]),
        (999, None, b"", []),
        (5_000, b"", None, [("ключ", b"\x00")]),
    ]
    theirs = _client_build(KafkaPythonBatchBuilder, CompressionType.NONE, records)
    ours = build_batch(records, partition_leader_epoch=0)  # kafka-python writes epoch 0
    assert bytes(ours) == theirs
