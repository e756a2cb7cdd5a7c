"""Zigzag varints and varlongs: known vectors, round trips, Java's limits."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.errors import InvalidRecordError
from franz.protocol.records.varint import (
    MAX_VARINT_SIZE,
    MAX_VARLONG_SIZE,
    decode_unsigned_varint,
    decode_varint,
    decode_varlong,
    encode_unsigned_varint,
    encode_varint,
    encode_varlong,
    size_of_unsigned_varint,
    size_of_varint,
    size_of_varlong,
)
from tests.unit.protocol.records._peers import (
    kafka_python_decode_varint,
    kafka_python_encode_varint,
)

INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
UINT32 = st.integers(0, (1 << 32) - 1)
FAST = settings(max_examples=300, deadline=None)

VARINT_VECTORS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (-2, "03"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (-65, "8101"),
    (150, "ac02"),
    (300, "d804"),
    (-300, "d704"),
    ((1 << 31) - 1, "feffffff0f"),
    (-(1 << 31), "ffffffff0f"),
]

VARLONG_EXTRA_VECTORS = [
    (1 << 31, "8080808010"),
    ((1 << 63) - 1, "feffffffffffffffff01"),
    (-(1 << 63), "ffffffffffffffffff01"),
]


@pytest.mark.parametrize(("value", "encoded"), VARINT_VECTORS)
def test_varint_known_vectors(value: int, encoded: str) -> None:
    raw = bytes.fromhex(encoded)
    assert encode_varint(value) == raw
    assert decode_varint(raw) == (value, len(raw))
    assert size_of_varint(value) == len(raw)


@pytest.mark.parametrize(("value", "encoded"), VARINT_VECTORS + VARLONG_EXTRA_VECTORS)
def test_varlong_known_vectors(value: int, encoded: str) -> None:
    raw = bytes.fromhex(encoded)
    assert encode_varlong(value) == raw
    assert decode_varlong(raw) == (value, len(raw))
    assert size_of_varlong(value) == len(raw)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (0xFFFFFFFF, "ffffffff0f")],
)
def test_unsigned_varint_known_vectors(value: int, encoded: str) -> None:
    raw = bytes.fromhex(encoded)
    assert encode_unsigned_varint(value) == raw
    assert decode_unsigned_varint(raw) == (value, len(raw))
    assert size_of_unsigned_varint(value) == len(raw)


@FAST
@given(value=INT32, prefix=st.binary(max_size=4), suffix=st.binary(max_size=4))
def test_varint_round_trips_inside_a_buffer(value: int, prefix: bytes, suffix: bytes) -> None:
    encoded = encode_varint(value)
    assert 1 <= len(encoded) <= MAX_VARINT_SIZE
    assert len(encoded) == size_of_varint(value)
    buf = bytearray(prefix + encoded + suffix)
    assert decode_varint(buf, len(prefix)) == (value, len(prefix) + len(encoded))
    assert decode_varint(memoryview(buf), len(prefix)) == (value, len(prefix) + len(encoded))


@FAST
@given(value=INT64)
def test_varlong_round_trips(value: int) -> None:
    encoded = encode_varlong(value)
    assert 1 <= len(encoded) <= MAX_VARLONG_SIZE
    assert len(encoded) == size_of_varlong(value)
    assert decode_varlong(encoded + b"\xff") == (value, len(encoded))


@FAST
@given(value=UINT32)
def test_unsigned_varint_round_trips(value: int) -> None:
    encoded = encode_unsigned_varint(value)
    assert len(encoded) == size_of_unsigned_varint(value)
    assert decode_unsigned_varint(encoded) == (value, len(encoded))


@FAST
@given(value=INT32)
def test_varint_and_varlong_agree_on_int32(value: int) -> None:
    assert encode_varint(value) == encode_varlong(value)


@FAST
@given(value=INT64)
def test_varlong_matches_kafka_python(value: int) -> None:
    """kafka-python's record varints are zigzag varlongs; the bytes must be identical."""
    out = bytearray()
    kafka_python_encode_varint(value, out.append)
    assert encode_varlong(value) == bytes(out)
    assert kafka_python_decode_varint(encode_varlong(value), 0) == (value, len(out))


@pytest.mark.parametrize("value", [1 << 31, -(1 << 31) - 1])
def test_encode_varint_rejects_values_outside_int32(value: int) -> None:
    with pytest.raises(ValueError):
        encode_varint(value)


@pytest.mark.parametrize("value", [1 << 63, -(1 << 63) - 1])
def test_encode_varlong_rejects_values_outside_int64(value: int) -> None:
    with pytest.raises(ValueError):
        encode_varlong(value)


@pytest.mark.parametrize("value", [-1, 1 << 32])
def test_encode_unsigned_varint_rejects_values_outside_uint32(value: int) -> None:
    with pytest.raises(ValueError):
        encode_unsigned_varint(value)


def test_varint_longer_than_five_bytes_is_rejected() -> None:
    with pytest.raises(InvalidRecordError, match="longer than 5 bytes"):
        decode_varint(b"\x80\x80\x80\x80\x80\x00")
    with pytest.raises(InvalidRecordError):
        decode_unsigned_varint(b"\xff" * 5 + b"\x01")


def test_varlong_longer_than_ten_bytes_is_rejected() -> None:
    with pytest.raises(InvalidRecordError, match="longer than 10 bytes"):
        decode_varlong(b"\x80" * 10 + b"\x00")
    # Ten bytes is the maximum, and fine.
    assert decode_varlong(b"\x80" * 9 + b"\x00") == (0, 10)


def test_padded_varints_within_the_limit_decode() -> None:
    """Java accepts non-minimal encodings up to the maximum width; so do we."""
    assert decode_varint(b"\x82\x80\x80\x80\x00") == (1, 5)


def test_fifth_byte_bits_beyond_32_are_dropped_as_in_java() -> None:
    # Java's `value |= b << 28` keeps only the low 4 bits of the fifth byte.
    assert decode_varint(b"\xff\xff\xff\xff\x7f") == decode_varint(b"\xff\xff\xff\xff\x0f")
    assert decode_varint(b"\xff\xff\xff\xff\x7f")[0] == -(1 << 31)


@pytest.mark.parametrize(
    "decode", [decode_varint, decode_varlong, decode_unsigned_varint], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("raw", [b"", b"\x80", b"\xff\xff", b"\x80\x80\x80\x80"])
def test_truncated_varints_are_rejected(decode, raw: bytes) -> None:
    with pytest.raises(InvalidRecordError, match="truncated"):
        decode(raw)


def test_decoding_past_the_end_is_truncation() -> None:
    with pytest.raises(InvalidRecordError, match="truncated"):
        decode_varint(b"\x02", 1)
