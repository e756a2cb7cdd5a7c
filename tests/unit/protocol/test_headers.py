"""Request/response headers, checked against kio's own header classes and encoder.

kio generates ``RequestHeader`` v1/v2 and ``ResponseHeader`` v0/v1 from Kafka's
``RequestHeader.json`` / ``ResponseHeader.json``; its writer is the oracle for the bytes, and
each kio request/response class names the header version Kafka pairs it with
(``__header_schema__``), which is the oracle for the version rules.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.request_header.v1.header import RequestHeader as KioRequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as KioRequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as KioResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as KioResponseHeaderV1
from kio.serial import entity_writer
from kio.static.primitive import i16, i32

from franz.errors import InvalidRequestError
from franz.protocol.api_keys import INTER_BROKER_APIS, SUPPORTED_APIS, ApiKey
from franz.protocol.headers import (
    RequestHeader,
    encode_request_header,
    encode_response_header,
    parse_request_header,
    read_uvarint,
    response_header_version,
    skip_tagged_fields,
)
from franz.protocol.messages import request_type, response_type

FAST = settings(max_examples=200, deadline=None)

INT32 = st.integers(-(2**31), 2**31 - 1)
CLIENT_IDS = st.none() | st.text(max_size=40)
BODIES = st.binary(max_size=30)

ALL_VERSIONS = [
    (key, version)
    for key, support in SUPPORTED_APIS.items()
    for version in range(support.min_accepted, support.max_version + 1)
]
#: A non-flexible and a flexible request of the same API.
METADATA_V1_HEADER = (ApiKey.METADATA, 5)
METADATA_V2_HEADER = (ApiKey.METADATA, 12)


def kio_encode(cls: Any, entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(cls)(buffer, entity)
    return buffer.getvalue()


def kio_request_header(
    api_key: int, version: int, correlation_id: int, client_id: str | None, *, flexible: bool
) -> bytes:
    cls = KioRequestHeaderV2 if flexible else KioRequestHeaderV1
    return kio_encode(
        cls,
        cls(
            request_api_key=i16(api_key),
            request_api_version=i16(version),
            correlation_id=i32(correlation_id),
            client_id=client_id,
        ),
    )


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tagged_fields(fields: list[tuple[int, bytes]]) -> bytes:
    out = bytearray(uvarint(len(fields)))
    for tag, data in fields:
        out += uvarint(tag) + uvarint(len(data)) + data
    return bytes(out)


# -- request headers against kio ---------------------------------------------------------------


@FAST
@given(correlation_id=INT32, client_id=CLIENT_IDS, body=BODIES)
def test_v1_header_matches_kio(correlation_id: int, client_id: str | None, body: bytes) -> None:
    key, version = METADATA_V1_HEADER
    raw = kio_request_header(key, version, correlation_id, client_id, flexible=False)
    header = parse_request_header(raw + body)
    assert header == RequestHeader(key, version, correlation_id, client_id, len(raw), False)


@FAST
@given(correlation_id=INT32, client_id=CLIENT_IDS, body=BODIES)
def test_v2_header_matches_kio(correlation_id: int, client_id: str | None, body: bytes) -> None:
    key, version = METADATA_V2_HEADER
    raw = kio_request_header(key, version, correlation_id, client_id, flexible=True)
    header = parse_request_header(raw + body)
    assert header == RequestHeader(key, version, correlation_id, client_id, len(raw), True)


def test_v2_client_id_stays_a_non_compact_string() -> None:
    # KIP-482 left client_id as a legacy int16-length string in header v2.
    raw = kio_request_header(3, 12, 7, "abc", flexible=True)
    assert raw == bytes.fromhex("0003000c00000007" + "0003" + "616263" + "00")
    assert parse_request_header(raw).client_id == "abc"


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS)
def test_header_version_follows_kio_for_every_accepted_version(api_key: int, version: int) -> None:
    flexible = request_type(api_key, version).__header_schema__.__version__ == 2
    raw = kio_request_header(api_key, version, 99, "client", flexible=flexible)
    header = parse_request_header(raw + b"body")
    assert header.flexible is flexible
    assert header.size == len(raw)
    assert (header.api_key, header.api_version, header.correlation_id) == (api_key, version, 99)


def test_null_client_id() -> None:
    raw = bytes.fromhex("0003000500000001ffff")
    header = parse_request_header(raw)
    assert header.client_id is None
    assert header.size == 10


def test_empty_client_id_is_not_null() -> None:
    header = parse_request_header(bytes.fromhex("00030005000000010000"))
    assert header.client_id == ""


def test_client_id_is_utf8() -> None:
    name = "клиент-1"
    raw = kio_request_header(3, 5, 1, name, flexible=False)
    assert parse_request_header(raw).client_id == name


def test_invalid_utf8_client_id_does_not_fail_the_request() -> None:
    header = parse_request_header(bytes.fromhex("00030005000000010002ff41"))
    assert header.client_id is not None and header.client_id.endswith("A")
    assert header.size == 12


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_accepts_bytes_like_frames(kind: type) -> None:
    raw = kio_request_header(3, 12, 5, "c", flexible=True) + b"rest"
    header = parse_request_header(kind(raw))
    assert (header.client_id, header.size) == ("c", len(raw) - 4)


# -- tagged fields -----------------------------------------------------------------------------


@FAST
@given(
    fields=st.lists(st.tuples(st.integers(0, 2**31 - 1), st.binary(max_size=300)), max_size=5),
    client_id=CLIENT_IDS,
    body=BODIES,
)
def test_v2_tagged_fields_are_skipped(
    fields: list[tuple[int, bytes]], client_id: str | None, body: bytes
) -> None:
    base = kio_request_header(3, 12, 42, client_id, flexible=True)[:-1]  # drop the empty tags
    raw = base + tagged_fields(fields)
    header = parse_request_header(raw + body)
    assert (header.correlation_id, header.client_id) == (42, client_id)
    assert header.size == len(raw)


def test_known_tagged_field_bytes() -> None:
    # Two tagged fields: tag 0 with 3 bytes, tag 300 (2-byte varint) with none.
    raw = bytes.fromhex("0003000c00000007ffff" + "02" + "0003616263" + "ac0200")
    assert parse_request_header(raw + b"\x99").size == len(raw)


def test_v1_header_has_no_tagged_fields() -> None:
    # A non-flexible request: the byte after the client id is the body's, not a tag count.
    raw = bytes.fromhex("0003000500000007ffff")
    assert parse_request_header(raw + b"\x05\x01\x02").size == len(raw)


@pytest.mark.parametrize(
    ("data", "offset", "expected"),
    [
        (b"\x00", 0, (0, 1)),
        (b"\x7f", 0, (127, 1)),
        (b"\x80\x01", 0, (128, 2)),
        (b"\xac\x02", 0, (300, 2)),
        (b"\x00\xff\xff\xff\xff\x0f", 1, (2**32 - 1, 6)),
    ],
)
def test_read_uvarint_known_values(data: bytes, offset: int, expected: tuple[int, int]) -> None:
    assert read_uvarint(data, offset) == expected


@given(st.integers(0, 2**32 - 1), st.binary(max_size=4))
def test_read_uvarint_round_trip(value: int, tail: bytes) -> None:
    encoded = uvarint(value)
    assert read_uvarint(encoded + tail, 0) == (value, len(encoded))


def test_skip_tagged_fields_returns_the_offset_after_them() -> None:
    section = tagged_fields([(1, b"ab"), (2, b"")])
    assert skip_tagged_fields(b"xx" + section + b"yy", 2) == 2 + len(section)


# -- truncated and malformed headers ------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        kio_request_header(3, 5, 1, None, flexible=False),
        kio_request_header(3, 5, 1, "client-id", flexible=False),
    ],
    ids=["v1-null-client", "v1-client"],
)
def test_every_truncated_v1_header_is_invalid(raw: bytes) -> None:
    parse_request_header(raw)
    for cut in range(len(raw)):
        with pytest.raises(InvalidRequestError):
            parse_request_header(raw[:cut])


@pytest.mark.parametrize(
    "raw",
    [
        kio_request_header(3, 12, 1, None, flexible=True),
        kio_request_header(3, 12, 1, "client-id", flexible=True),
        kio_request_header(3, 12, 1, "c", flexible=True)[:-1] + tagged_fields([(7, b"x" * 200)]),
    ],
    ids=["v2-null-client", "v2-client", "v2-tagged"],
)
def test_every_truncated_v2_header_is_invalid(raw: bytes) -> None:
    parse_request_header(raw)
    for cut in range(len(raw)):
        with pytest.raises(InvalidRequestError):
            parse_request_header(raw[:cut])


def test_client_id_length_below_minus_one_is_invalid() -> None:
    with pytest.raises(InvalidRequestError, match="client id length"):
        parse_request_header(bytes.fromhex("0003000500000001fffe") + b"xx")


def test_client_id_longer_than_the_frame_is_invalid() -> None:
    with pytest.raises(InvalidRequestError, match="truncated client id"):
        parse_request_header(bytes.fromhex("00030005000000017fff") + b"short")


def test_tagged_field_count_longer_than_five_bytes_is_invalid() -> None:
    raw = bytes.fromhex("0003000c00000007ffff") + b"\xff" * 5 + b"\x01"
    with pytest.raises(InvalidRequestError, match="longer than 5 bytes"):
        parse_request_header(raw)


def test_tagged_field_size_beyond_the_frame_is_invalid() -> None:
    raw = bytes.fromhex("0003000c00000007ffff") + b"\x01" + b"\x00" + uvarint(50) + b"x" * 49
    with pytest.raises(InvalidRequestError, match="truncated tagged field"):
        parse_request_header(raw)


def test_unknown_api_key_is_parsed_with_header_v1() -> None:
    # CreateDelegationToken (38) v2 is flexible in Kafka but not served: its header is read
    # as v1 and the dispatcher answers from the api key alone.
    assert 38 not in SUPPORTED_APIS
    header = parse_request_header(bytes.fromhex("0026000200000003ffff00"))
    assert (header.flexible, header.size) == (False, 10)


def test_api_versions_newer_than_known_uses_header_v2() -> None:
    # KIP-511: a client may send ApiVersions at a version the broker does not know yet.
    newest = SUPPORTED_APIS[ApiKey.API_VERSIONS].max_version
    raw = kio_request_header(ApiKey.API_VERSIONS, newest + 1, 1, "c", flexible=True)
    header = parse_request_header(raw)
    assert (header.flexible, header.size) == (True, len(raw))


# -- response headers --------------------------------------------------------------------------


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS)
def test_response_header_version_matches_kio(api_key: int, version: int) -> None:
    expected = response_type(api_key, version).__header_schema__.__version__
    assert response_header_version(api_key, version) == expected


@pytest.mark.parametrize("version", range(0, 10))
def test_api_versions_response_header_is_always_v0(version: int) -> None:
    assert response_header_version(ApiKey.API_VERSIONS, version) == 0


def test_flexible_responses_use_header_v1() -> None:
    assert response_header_version(ApiKey.METADATA, 8) == 0
    assert response_header_version(ApiKey.METADATA, 9) == 1
    assert response_header_version(ApiKey.PRODUCE, 9) == 1
    assert response_header_version(ApiKey.FETCH, 11) == 0
    assert response_header_version(ApiKey.FETCH, 12) == 1


@given(INT32)
def test_encode_response_header_matches_kio(correlation_id: int) -> None:
    v0 = kio_encode(KioResponseHeaderV0, KioResponseHeaderV0(correlation_id=i32(correlation_id)))
    v1 = kio_encode(KioResponseHeaderV1, KioResponseHeaderV1(correlation_id=i32(correlation_id)))
    assert encode_response_header(correlation_id, 0) == v0
    assert encode_response_header(correlation_id, 1) == v1
    assert len(v0) == 4
    assert v1 == v0 + b"\x00"


# -- inter-broker APIs (known, not advertised) ---------------------------------------------------

INTER_BROKER_VERSIONS = [
    (key, version)
    for key, support in INTER_BROKER_APIS.items()
    for version in range(support.max_version + 1)
    if (key, version) != (ApiKey.CONTROLLED_SHUTDOWN, 0)
]


@pytest.mark.parametrize(("api_key", "version"), INTER_BROKER_VERSIONS)
def test_inter_broker_header_versions_follow_their_classes(api_key: int, version: int) -> None:
    flexible = bool(request_type(api_key, version).__flexible__)
    raw = kio_request_header(api_key, version, 42, "controller", flexible=flexible)
    assert encode_request_header(api_key, version, 42, "controller") == raw
    header = parse_request_header(raw + b"\x01")
    assert (header.size, header.flexible) == (len(raw), flexible)
    assert response_header_version(api_key, version) == (1 if flexible else 0)


@FAST
@given(correlation_id=INT32, client_id=CLIENT_IDS)
def test_encode_request_header_matches_kio(correlation_id: int, client_id: str | None) -> None:
    for key, version, flexible in ((3, 12, True), (3, 5, False), (4, 7, True), (6, 5, False)):
        expected = kio_request_header(key, version, correlation_id, client_id, flexible=flexible)
        assert encode_request_header(key, version, correlation_id, client_id) == expected


def test_inter_broker_flexible_header_skips_tagged_fields() -> None:
    raw = kio_request_header(4, 7, 1, "c", flexible=True)[:-1] + tagged_fields([(0, b"abc")])
    assert parse_request_header(raw + b"\x00\x00\x00\x01").size == len(raw)


def test_controlled_shutdown_v0_has_request_header_v0() -> None:
    # Kafka's ApiKeys.requestHeaderVersion: ControlledShutdown v0 has no client id.
    raw = bytes.fromhex("0007000000000005")
    assert encode_request_header(7, 0, 5, "ignored") == raw
    header = parse_request_header(raw + bytes.fromhex("00000001"))
    assert header == RequestHeader(7, 0, 5, None, 8, False)
    assert parse_request_header(raw).size == 8
    for cut in range(len(raw)):
        with pytest.raises(InvalidRequestError):
            parse_request_header(raw[:cut])
    assert response_header_version(7, 0) == 0
    # v1 has the standard header v1.
    assert parse_request_header(bytes.fromhex("0007000100000005ffff00000001")).size == 10
