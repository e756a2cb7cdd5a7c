"""The client codec: requests parse with the broker's own inbound decoder; responses match.

The oracle for request bytes is the broker's side (``parse_request_header``,
``decode_request``) and kio's header classes (``__header_schema__`` names the header version
Kafka pairs with each request and response).
"""

from __future__ import annotations

import struct

import pytest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.request_header.v2.header import RequestHeader as KioRequestHeaderV2
from kio.schema.response_header.v1.header import ResponseHeader as KioResponseHeaderV1

from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from franz.protocol.client import (
    ClientCodec,
    CorrelationIdMismatchError,
    ResponseDecodeError,
    UnexpectedResponseError,
    decode_body,
    encode_body,
    encode_request_header,
    negotiate_version,
    request_header_version,
    response_header_version,
)
from franz.protocol.framing import FramingError
from franz.protocol.headers import encode_response_header, parse_request_header
from franz.protocol.messages import (
    build_response,
    decode_request,
    encode_response,
    request_type,
    response_type,
)


def response_frame(correlation_id: int, header_version: int, body: bytes) -> bytes:
    payload = encode_response_header(correlation_id, header_version) + body
    return struct.pack(">i", len(payload)) + payload


def test_metadata_request_golden_bytes() -> None:
    codec = ClientCodec("franz")
    request = MetadataRequest(
        topics=(MetadataRequestTopic(topic_id=None, name="t"),),  # type: ignore[arg-type]
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )
    correlation_id, frame = codec.encode_request(3, 12, encode_body(request))
    assert correlation_id == 0
    assert (
        frame
        == bytes.fromhex(
            "00000027"  # size: 16 header + 23 body
            "0003000c00000000"  # api 3, v12, correlation id 0
            "00056672616e7a00"  # client id "franz", header tags
            "02" + "00" * 16 + "027400"  # one topic: null topic id, name "t", tags
            "000000"  # auto create, authorized ops, tags
        )
    )


@pytest.mark.parametrize(
    ("api_key", "version"),
    [(ApiKey.METADATA, 12), (ApiKey.METADATA, 8), (ApiKey.API_VERSIONS, 3), (ApiKey.FETCH, 12)],
)
def test_requests_parse_with_the_inbound_decoder(api_key: ApiKey, version: int) -> None:
    from franz.protocol.messages import build

    codec = ClientCodec("replica-fetcher")
    codec.next_correlation_id()
    entity = build(request_type(api_key, version), {})
    correlation_id, frame = codec.encode_request(api_key, version, encode_body(entity))
    payload = frame[4:]
    assert struct.unpack(">i", frame[:4])[0] == len(payload)
    header = parse_request_header(payload)
    assert (header.api_key, header.api_version) == (api_key, version)
    assert header.correlation_id == correlation_id == 1
    assert header.client_id == "replica-fetcher"
    assert decode_request(api_key, version, payload, header.size) == entity


def test_header_versions_follow_kio_schemas() -> None:
    for api_key, support in SUPPORTED_APIS.items():
        for version in range(support.min_accepted, support.max_version + 1):
            try:
                req, resp = request_type(api_key, version), response_type(api_key, version)
            except Exception:  # kio has no class for a few versions Franz advertises
                continue
            req_header = int(req.__header_schema__.__version__)
            resp_header = int(resp.__header_schema__.__version__)
            assert request_header_version(api_key, version) == req_header, (api_key, version)
            assert response_header_version(api_key, version) == resp_header, (api_key, version)


def test_inter_broker_apis_kio_lacks_use_kafka_39_flexible_versions() -> None:
    assert [request_header_version(ApiKey.LEADER_AND_ISR, v) for v in (3, 4, 7)] == [1, 2, 2]
    assert [response_header_version(ApiKey.UPDATE_METADATA, v) for v in (5, 6, 8)] == [0, 1, 1]
    assert [response_header_version(ApiKey.STOP_REPLICA, v) for v in (1, 2, 4)] == [0, 1, 1]


def test_request_header_matches_kio_writer() -> None:
    import io

    from kio.serial import entity_writer

    ours = encode_request_header(3, 12, 77, "c")
    out = io.BytesIO()
    entity_writer(KioRequestHeaderV2)(
        out,
        KioRequestHeaderV2(
            request_api_key=3,  # type: ignore[arg-type]
            request_api_version=12,  # type: ignore[arg-type]
            correlation_id=77,  # type: ignore[arg-type]
            client_id="c",
        ),
    )
    assert ours == out.getvalue()
    assert encode_request_header(3, 8, 77, None) == struct.pack(">hhih", 3, 8, 77, -1)


def test_responses_match_in_order_across_chunk_boundaries() -> None:
    codec = ClientCodec(None)
    ids = [codec.encode_request(ApiKey.METADATA, 12, b"")[0] for _ in range(3)]
    assert codec.in_flight == 3
    data = b"".join(response_frame(i, 1, f"body{i}".encode()) for i in ids)
    got = []
    for i in range(len(data)):
        got += codec.receive(data[i : i + 1])
    assert [(r.correlation_id, bytes(r.body)) for r in got] == [
        (0, b"body0"),
        (1, b"body1"),
        (2, b"body2"),
    ]
    assert codec.in_flight == 0


def test_api_versions_response_has_header_v0_even_when_flexible() -> None:
    codec = ClientCodec("x")
    correlation_id, _ = codec.encode_request(ApiKey.API_VERSIONS, 3, b"")
    body = encode_response(build_response(ApiKey.API_VERSIONS, 3, {"api_keys": []}))
    (response,) = codec.receive(response_frame(correlation_id, 0, body))
    assert bytes(response.body) == body
    decoded = decode_body(ApiKey.API_VERSIONS, 3, response.body)
    assert decoded.api_keys == ()


def test_flexible_response_header_tagged_fields_are_skipped() -> None:
    import io

    from kio.serial import entity_writer

    codec = ClientCodec("x")
    correlation_id, _ = codec.encode_request(ApiKey.METADATA, 12, b"")
    out = io.BytesIO()
    entity_writer(KioResponseHeaderV1)(out, KioResponseHeaderV1(correlation_id=correlation_id))  # type: ignore[arg-type]
    payload = out.getvalue() + b"BODY"
    (response,) = codec.receive(struct.pack(">i", len(payload)) + payload)
    assert bytes(response.body) == b"BODY"


def test_wrong_correlation_id_is_an_error() -> None:
    codec = ClientCodec("x")
    codec.encode_request(ApiKey.METADATA, 8, b"")
    with pytest.raises(CorrelationIdMismatchError, match="correlation id 5 does not match"):
        codec.receive(response_frame(5, 0, b""))


def test_response_without_request_is_an_error() -> None:
    codec = ClientCodec("x")
    codec.encode_request(ApiKey.PRODUCE, 9, b"", expect_response=False)
    assert codec.in_flight == 0
    with pytest.raises(UnexpectedResponseError):
        codec.receive(response_frame(0, 1, b""))


def test_short_response_and_oversized_frame_are_errors() -> None:
    codec = ClientCodec("x")
    codec.encode_request(ApiKey.METADATA, 8, b"")
    with pytest.raises(ResponseDecodeError):
        codec.receive(struct.pack(">i", 2) + b"\x00\x00")
    with pytest.raises(FramingError):
        ClientCodec("x", max_frame_size=10).receive(struct.pack(">i", 11))


def test_correlation_ids_wrap_at_int32_max() -> None:
    codec = ClientCodec("x")
    codec._next_correlation_id = 2**31 - 1
    assert [codec.next_correlation_id() for _ in range(2)] == [2**31 - 1, 0]


def test_negotiate_version_picks_highest_common() -> None:
    assert negotiate_version(1, (0, 17), 12) == 12
    assert negotiate_version(1, (4, 11), 17) == 11
    assert negotiate_version(1, (4, 11), 3) is None
    assert negotiate_version(1, (4, 11), 17, client_min=12) is None
    assert negotiate_version(1, None, 17) is None


def test_decode_body_reports_garbage() -> None:
    with pytest.raises(ResponseDecodeError, match="api 3 v12"):
        decode_body(ApiKey.METADATA, 12, b"\x01")
