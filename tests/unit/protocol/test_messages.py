"""``franz.protocol.messages``: kio entities from plain mappings, encode, decode.

Round trips encode with ``build_response`` + ``encode_response`` and decode with kio's own
``entity_reader`` of the response class, so both directions are checked against kio.
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import os
import subprocess
import sys
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader, entity_writer

from franz.errors import ErrorCode, InvalidRequestError
from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from franz.protocol.messages import (
    build,
    build_response,
    datetime_ms,
    decode_request,
    encode_response,
    request_type,
    response_type,
    timedelta_ms,
)

REPO_ROOT = Path(__file__).resolve().parents[3]
FAST = settings(max_examples=60, deadline=None)
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
#: 2100-01-01T00:00:00Z. kio's *reader* builds a datetime from float seconds, exact to the
#: microsecond only while a double resolves well under 1 us (before ~2106); kio's writer,
#: the direction Franz uses, is exact up to datetime's maximum (year 9999).
MAX_TIMESTAMP_MS = 4_102_444_800_000

ALL_VERSIONS = [
    (key, version)
    for key, support in SUPPORTED_APIS.items()
    for version in range(support.min_accepted, support.max_version + 1)
]

INT16 = st.integers(-(2**15), 2**15 - 1)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
NAMES = st.text(min_size=1, max_size=20)
ERROR_CODES = st.sampled_from(list(ErrorCode))
TIMESTAMPS = st.just(-1) | st.integers(0, MAX_TIMESTAMP_MS)
THROTTLE = st.integers(0, 2**31 - 1)


def kio_decode_response(api_key: int, version: int, body: bytes) -> Any:
    response, size = entity_reader(response_type(api_key, version))(body, 0)
    assert size == len(body)
    return response


def kio_encode(entity: Any) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def round_trip(api_key: int, version: int, data: Mapping[str, Any]) -> Any:
    built = build_response(api_key, version, data)
    decoded = kio_decode_response(api_key, version, encode_response(built))
    assert decoded == built
    return decoded


def assert_carries(decoded: Any, data: Mapping[str, Any], path: str = "") -> None:
    """Every key of ``data`` the decoded entity's version has, with the same plain value."""
    names = {f.name for f in dataclasses.fields(decoded)}
    for key, expected in data.items():
        if key not in names:
            continue  # not in this version: build drops it
        assert_plain_equal(getattr(decoded, key), expected, f"{path}.{key}")


def assert_plain_equal(actual: Any, expected: Any, path: str) -> None:
    if isinstance(expected, Mapping):
        assert_carries(actual, expected, path)
    elif isinstance(expected, list):
        assert len(actual) == len(expected), path
        for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_plain_equal(a, e, f"{path}[{i}]")
    elif isinstance(actual, KioErrorCode):
        assert int(actual) == int(expected), path
    elif isinstance(actual, datetime.timedelta):
        assert timedelta_ms(actual) == expected, path
    elif isinstance(actual, datetime.datetime) or (actual is None and expected == -1):
        assert datetime_ms(actual) == expected, path
    else:
        assert actual == expected, path


# -- every API and version from an empty mapping -----------------------------------------------


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS)
def test_every_response_builds_and_encodes_from_nothing(api_key: int, version: int) -> None:
    built = build_response(api_key, version, {})
    assert type(built) is response_type(api_key, version)
    body = encode_response(built)
    assert kio_decode_response(api_key, version, body) == built


@pytest.mark.parametrize(("api_key", "version"), ALL_VERSIONS)
def test_every_request_builds_and_decodes_from_nothing(api_key: int, version: int) -> None:
    built = build(request_type(api_key, version), {})
    body = kio_encode(built)
    assert decode_request(api_key, version, body, 0) == built


def test_defaults_come_from_kafkas_schema() -> None:
    # Fields with a schema default get it; the others are zero, empty or null.
    response = build_response(ApiKey.METADATA, 12, {"topics": [{"partitions": [{}]}]})
    assert response.controller_id == -1
    assert response.cluster_id is None
    assert response.throttle_time == datetime.timedelta(0)
    (topic,) = response.topics
    assert topic.topic_authorized_operations == -(2**31)
    assert topic.name is None
    (partition,) = topic.partitions
    assert partition.leader_epoch == -1
    assert partition.error_code == KioErrorCode.none
    assert partition.replica_nodes == ()


# -- round trips -------------------------------------------------------------------------------


@st.composite
def produce_responses(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "throttle_time": draw(THROTTLE),
        "responses": [
            {
                "name": draw(NAMES),
                "partition_responses": [
                    {
                        "index": draw(INT32),
                        "error_code": draw(ERROR_CODES),
                        "base_offset": draw(INT64),
                        "log_append_time": draw(TIMESTAMPS),
                        "log_start_offset": draw(INT64),
                        "record_errors": [
                            {
                                "batch_index": draw(INT32),
                                "batch_index_error_message": draw(st.none() | NAMES),
                            }
                            for _ in range(draw(st.integers(0, 2)))
                        ],
                        "error_message": draw(st.none() | NAMES),
                    }
                    for _ in range(draw(st.integers(0, 3)))
                ],
            }
            for _ in range(draw(st.integers(0, 3)))
        ],
    }


@st.composite
def metadata_responses(draw: st.DrawFn) -> dict[str, Any]:
    def partition() -> dict[str, Any]:
        return {
            "error_code": draw(ERROR_CODES),
            "partition_index": draw(INT32),
            "leader_id": draw(INT32),
            "leader_epoch": draw(INT32),
            "replica_nodes": draw(st.lists(INT32, max_size=3)),
            "isr_nodes": draw(st.lists(INT32, max_size=3)),
            "offline_replicas": draw(st.lists(INT32, max_size=3)),
        }

    return {
        "throttle_time": draw(THROTTLE),
        "brokers": [
            {
                "node_id": draw(INT32),
                "host": draw(NAMES),
                "port": draw(INT32),
                "rack": draw(st.none() | NAMES),
            }
            for _ in range(draw(st.integers(0, 3)))
        ],
        "cluster_id": draw(st.none() | NAMES),
        "controller_id": draw(INT32),
        "topics": [
            {
                "error_code": draw(ERROR_CODES),
                "name": draw(NAMES),
                "topic_id": draw(st.uuids()),
                "is_internal": draw(st.booleans()),
                "partitions": [partition() for _ in range(draw(st.integers(0, 3)))],
                "topic_authorized_operations": draw(INT32),
            }
            for _ in range(draw(st.integers(0, 3)))
        ],
        "cluster_authorized_operations": draw(INT32),
    }


@st.composite
def list_offsets_responses(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "throttle_time": draw(THROTTLE),
        "topics": [
            {
                "name": draw(NAMES),
                "partitions": [
                    {
                        "partition_index": draw(INT32),
                        "error_code": draw(ERROR_CODES),
                        "timestamp": draw(INT64),
                        "offset": draw(INT64),
                        "leader_epoch": draw(INT32),
                    }
                    for _ in range(draw(st.integers(0, 3)))
                ],
            }
            for _ in range(draw(st.integers(0, 3)))
        ],
    }


@FAST
@pytest.mark.parametrize("version", [3, 8, 9, 11])
@given(data=produce_responses())
def test_produce_round_trip(version: int, data: dict[str, Any]) -> None:
    assert_carries(round_trip(ApiKey.PRODUCE, version, data), data)


@FAST
@pytest.mark.parametrize("version", [0, 5, 9, 12])
@given(data=metadata_responses())
def test_metadata_round_trip(version: int, data: dict[str, Any]) -> None:
    assert_carries(round_trip(ApiKey.METADATA, version, data), data)


@FAST
@pytest.mark.parametrize("version", [1, 5, 9])
@given(data=list_offsets_responses())
def test_list_offsets_round_trip(version: int, data: dict[str, Any]) -> None:
    assert_carries(round_trip(ApiKey.LIST_OFFSETS, version, data), data)


def test_produce_v9_is_flexible_and_v8_is_not() -> None:
    data = {"responses": [{"name": "t", "partition_responses": [{"index": 0}]}]}
    v8 = encode_response(build_response(ApiKey.PRODUCE, 8, data))
    v9 = encode_response(build_response(ApiKey.PRODUCE, 9, data))
    assert v8.startswith(b"\x00\x00\x00\x01\x00\x01t")  # int32 array length, int16 string
    assert v9.startswith(b"\x02\x02t")  # compact array and string: length + 1


# -- conversions -------------------------------------------------------------------------------


def test_unknown_keys_are_ignored_at_every_level() -> None:
    data = {
        "no_such_field": 1,
        "cluster_id": "only-in-v2+",
        "topics": [{"name": "t", "nonsense": [1, 2], "partitions": [{"bogus": None}]}],
    }
    v0 = build_response(ApiKey.METADATA, 0, data)
    assert not hasattr(v0, "cluster_id")
    assert v0.topics[0].name == "t"
    assert v0 == build_response(ApiKey.METADATA, 0, {"topics": [{"name": "t", "partitions": [{}]}]})
    assert build_response(ApiKey.METADATA, 2, data).cluster_id == "only-in-v2+"


@pytest.mark.parametrize("code", list(ErrorCode))
def test_error_codes_as_ints_or_franz_codes(code: ErrorCode) -> None:
    for value in (int(code), code):
        data = {"topics": [{"name": "t", "partitions": [{"error_code": value}]}]}
        response = round_trip(ApiKey.LIST_OFFSETS, 9, data)
        decoded = response.topics[0].partitions[0].error_code
        assert isinstance(decoded, KioErrorCode)
        assert decoded == int(code)
        assert decoded.name == code.name.lower()


def test_kio_error_codes_pass_through() -> None:
    data = {"topics": [{"name": "t", "partitions": [{"error_code": KioErrorCode.not_controller}]}]}
    response = build_response(ApiKey.LIST_OFFSETS, 9, data)
    assert response.topics[0].partitions[0].error_code is KioErrorCode.not_controller


@pytest.mark.parametrize(
    "value", [250, datetime.timedelta(milliseconds=250)], ids=["int-ms", "timedelta"]
)
def test_durations_from_milliseconds_or_timedelta(value: Any) -> None:
    response = round_trip(ApiKey.METADATA, 12, {"throttle_time": value})
    assert response.throttle_time == datetime.timedelta(milliseconds=250)
    assert timedelta_ms(response.throttle_time) == 250


def test_i32_duration_in_a_request() -> None:
    request = build(request_type(ApiKey.INIT_PRODUCER_ID, 4), {"transaction_timeout": 60_000})
    assert request.transaction_timeout == datetime.timedelta(minutes=1)
    assert decode_request(ApiKey.INIT_PRODUCER_ID, 4, kio_encode(request), 0) == request


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (-1, None),
        (None, None),
        (0, EPOCH),
        (1_700_000_000_123, EPOCH + datetime.timedelta(milliseconds=1_700_000_000_123)),
        (EPOCH + datetime.timedelta(days=1), EPOCH + datetime.timedelta(days=1)),
    ],
)
def test_timestamps_from_epoch_ms_or_datetime(value: Any, expected: Any) -> None:
    data = {"responses": [{"name": "t", "partition_responses": [{"log_append_time": value}]}]}
    for version in (3, 11):
        response = round_trip(ApiKey.PRODUCE, version, data)
        decoded = response.responses[0].partition_responses[0].log_append_time
        assert decoded == expected


@given(st.integers(0, 253_402_300_799_999))
def test_timestamp_is_written_exactly_up_to_year_9999(ms: int) -> None:
    data = {"responses": [{"name": "t", "partition_responses": [{"log_append_time": ms}]}]}
    body = encode_response(build_response(ApiKey.PRODUCE, 3, data))
    assert body[-12:-4] == ms.to_bytes(8, "big")


def test_null_timestamp_is_minus_one_on_the_wire() -> None:
    data = {
        "responses": [
            {"name": "t", "partition_responses": [{"base_offset": 0, "log_append_time": -1}]}
        ]
    }
    body = encode_response(build_response(ApiKey.PRODUCE, 3, data))
    # topics(1) name(t) partitions(1) index error base_offset log_append_time throttle
    assert body[-12:-4] == b"\xff" * 8


@given(st.integers(0, MAX_TIMESTAMP_MS))
def test_timestamp_round_trip_is_exact(ms: int) -> None:
    data = {"responses": [{"name": "t", "partition_responses": [{"log_append_time": ms}]}]}
    response = round_trip(ApiKey.PRODUCE, 9, data)
    assert datetime_ms(response.responses[0].partition_responses[0].log_append_time) == ms


@given(st.integers(0, 2**31 - 1))
def test_duration_round_trip_is_exact(ms: int) -> None:
    assert timedelta_ms(round_trip(ApiKey.METADATA, 12, {"throttle_time": ms}).throttle_time) == ms


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (datetime.timedelta(0), 0),
        (datetime.timedelta(milliseconds=1500), 1500),
        (datetime.timedelta(days=2, seconds=3, milliseconds=4), 2 * 86_400_000 + 3004),
        (datetime.timedelta(milliseconds=-1), -1),
        (datetime.timedelta(microseconds=1999), 1),
        (30_000, 30_000),
        (-1, -1),
    ],
)
def test_timedelta_ms(value: Any, expected: int) -> None:
    assert timedelta_ms(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, -1),
        (EPOCH, 0),
        (EPOCH + datetime.timedelta(milliseconds=1_700_000_000_123), 1_700_000_000_123),
        (EPOCH + datetime.timedelta(microseconds=2500), 2),
        (
            datetime.datetime(2024, 1, 1, 1, tzinfo=datetime.timezone(datetime.timedelta(hours=1))),
            1_704_067_200_000,
        ),
        (1234, 1234),
        (-1, -1),
    ],
)
def test_datetime_ms(value: Any, expected: int) -> None:
    assert datetime_ms(value) == expected


def test_lists_become_tuples_and_entities_pass_through() -> None:
    broker_cls = type(build_response(ApiKey.METADATA, 12, {"brokers": [{}]}).brokers[0])
    prebuilt = broker_cls(node_id=1, host="h", port=9092, rack=None)
    response = build_response(
        ApiKey.METADATA,
        12,
        {"brokers": [prebuilt, {"node_id": 2, "host": "g", "port": 1}], "topics": []},
    )
    assert isinstance(response.brokers, tuple)
    assert response.brokers[0] is prebuilt
    assert response.brokers[1].node_id == 2


def test_missing_topic_id_is_sent_as_the_zero_uuid() -> None:
    # Kafka's Uuid fields are never null on the wire: ZERO_UUID stands for "none".
    built = build_response(ApiKey.CREATE_TOPICS, 7, {"topics": [{"name": "t"}]})
    body = encode_response(built)
    assert uuid.UUID(int=0).bytes in body
    decoded = kio_decode_response(ApiKey.CREATE_TOPICS, 7, body)
    assert decoded.topics[0].topic_id in (None, uuid.UUID(int=0))


def test_uuid_values_pass_through() -> None:
    topic_id = uuid.UUID("7f1c1b36-5d0e-4a52-8f44-b8a1f5c0d2e3")
    data = {"topics": [{"name": "t", "topic_id": topic_id}]}
    decoded = round_trip(ApiKey.CREATE_TOPICS, 7, data)
    assert decoded.topics[0].topic_id == topic_id


# -- decoding requests -------------------------------------------------------------------------


def metadata_request_v12() -> tuple[Any, bytes]:
    request = build(
        request_type(ApiKey.METADATA, 12),
        {
            "topics": [{"name": "orders", "topic_id": uuid.UUID(int=5)}, {"name": "b"}],
            "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": False,
        },
    )
    return request, kio_encode(request)


def test_decode_request_at_an_offset() -> None:
    request, body = metadata_request_v12()
    frame = b"HEADER" + body
    assert decode_request(ApiKey.METADATA, 12, frame, 6) == request
    assert decode_request(ApiKey.METADATA, 12, memoryview(frame), 6) == request
    # Frames arrive as writable bytearrays (franz.protocol.framing).
    assert decode_request(ApiKey.METADATA, 12, bytearray(frame), 6) == request


@pytest.mark.parametrize(
    ("api_key", "version", "request_data"),
    [
        (ApiKey.METADATA, 12, {"topics": [{"name": "orders"}], "allow_auto_topic_creation": True}),
        (ApiKey.METADATA, 1, {"topics": [{"name": "orders"}, {"name": "x"}]}),
        (
            ApiKey.PRODUCE,
            3,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": 1000,
                "topic_data": [
                    {"name": "t", "partition_data": [{"index": 0, "records": b"\x01" * 20}]}
                ],
            },
        ),
        (
            ApiKey.LIST_OFFSETS,
            9,
            {"replica_id": -1, "topics": [{"name": "t", "partitions": [{"timestamp": -1}]}]},
        ),
        (ApiKey.API_VERSIONS, 3, {"client_software_name": "x", "client_software_version": "1"}),
    ],
    ids=["metadata-v12", "metadata-v1", "produce-v3", "list-offsets-v9", "api-versions-v3"],
)
def test_every_truncated_request_is_invalid(
    api_key: int, version: int, request_data: dict[str, Any]
) -> None:
    request = build(request_type(api_key, version), request_data)
    body = kio_encode(request)
    assert decode_request(api_key, version, body, 0) == request
    for cut in range(len(body)):
        with pytest.raises(InvalidRequestError):
            decode_request(api_key, version, body[:cut], 0)


@pytest.mark.parametrize(
    ("api_key", "version", "body"),
    [
        (ApiKey.METADATA, 1, b""),
        (ApiKey.METADATA, 1, b"\x00\x00\x00\x05"),  # five topics, none sent
        (ApiKey.METADATA, 12, b"\x03\x00"),  # two topics, then a bad one
        (ApiKey.PRODUCE, 3, b"\xff\xfe"),  # string length -2
        (ApiKey.PRODUCE, 9, b"\x00" * 3),
        (ApiKey.FETCH, 12, b"\x00" * 10),
        (ApiKey.API_VERSIONS, 3, b"\x05ab"),  # compact string of 4 bytes, 2 sent
    ],
)
def test_garbage_is_an_invalid_request(api_key: int, version: int, body: bytes) -> None:
    with pytest.raises(InvalidRequestError, match=r"could not parse a \w+Request v\d+"):
        decode_request(api_key, version, body, 0)


def test_offset_beyond_the_frame_is_an_invalid_request() -> None:
    _request, body = metadata_request_v12()
    with pytest.raises(InvalidRequestError):
        decode_request(ApiKey.METADATA, 12, body, len(body) + 1)


_HUGE_ARRAY_SCRIPT = """
import resource, sys
# Cap the address space so the outcome does not depend on the machine's RAM/overcommit.
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from franz.errors import InvalidRequestError
from franz.protocol.messages import decode_request
api_key, version, body = int(sys.argv[1]), int(sys.argv[2]), bytes.fromhex(sys.argv[3])
try:
    decode_request(api_key, version, body, 0)
except InvalidRequestError as exc:
    print("InvalidRequestError:", exc)
"""


def decode_in_child(api_key: int, version: int, body: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-c", _HUGE_ARRAY_SCRIPT, str(int(api_key)), str(version), body],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        env=env,
        check=False,
    )


def test_short_array_is_an_invalid_request_in_a_child_process() -> None:
    # The control for the test below: the child harness itself works.
    result = decode_in_child(ApiKey.METADATA, 12, "0200")
    assert result.returncode == 0, result.stderr[-500:]
    assert result.stdout.startswith("InvalidRequestError:")


# kio's native reader allocates for the element count a peer claims before checking the
# bytes exist: franz.protocol.guard checks every length first (a 5-byte body once asked for
# 32 GiB and aborted the process).
@pytest.mark.parametrize(
    ("api_key", "version", "body"),
    [
        (ApiKey.METADATA, 12, "ffffffff0f"),  # compact array, 2**32 - 2 topics
        (ApiKey.METADATA, 9, "ffffffff0f"),
        (ApiKey.METADATA, 1, "7fffffff"),  # int32 array, 2**31 - 1 topics
    ],
)
def test_huge_array_length_is_an_invalid_request_not_a_crash(
    api_key: int, version: int, body: str
) -> None:
    # In a child process: the failure mode is an abort that would take pytest down too.
    result = decode_in_child(api_key, version, body)
    assert result.returncode == 0, result.stderr[-500:]
    assert result.stdout.startswith("InvalidRequestError:")
