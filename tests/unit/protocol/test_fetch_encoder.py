"""The hand-written Fetch response encoder against kio's encoding of the same response.

For every version Franz serves (4-17) the chunks ``encode_fetch_response`` emits, with each
``FileRegion`` replaced by the file bytes it names, must be exactly the bytes kio writes for
the same response built through ``franz.protocol.messages`` (the path every other API takes).
"""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader

from franz.errors import ErrorCode
from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from franz.protocol.fetch import (
    FetchPartitionResult,
    FetchTopicResult,
    FileRegion,
    NodeEndpoint,
    encode_fetch_response,
)
from franz.protocol.messages import build_response, encode_response, response_type

SUPPORT = SUPPORTED_APIS[ApiKey.FETCH]
VERSIONS = range(SUPPORT.min_accepted, SUPPORT.max_version + 1)
FLEXIBLE_FROM = SUPPORT.first_flexible
TOPIC_ID_FROM = 13

#: The "file" FileRegions point into in the property tests; fd 3 names it.
VIRTUAL_FD = 3

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
ERROR_CODES = st.sampled_from([int(code) for code in ErrorCode])
TOPIC_NAMES = st.text(
    alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-",
    min_size=1,
    max_size=30,
) | st.text(min_size=1, max_size=10)  # non-ASCII too: lengths are in UTF-8 bytes


# -- helpers -----------------------------------------------------------------------------------


def resolve(chunks: Sequence[bytes | FileRegion], files: dict[int, bytes]) -> bytes:
    """The wire bytes: each region replaced by the bytes of its (virtual) file."""
    out = bytearray()
    for chunk in chunks:
        if isinstance(chunk, FileRegion):
            data = files[chunk.fd][chunk.position : chunk.position + chunk.size]
            assert len(data) == chunk.size
            out += data
        else:
            out += chunk
    return bytes(out)


def record_bytes(partition: FetchPartitionResult, files: dict[int, bytes]) -> bytes:
    return resolve(partition.records, files)


def kio_reference(
    version: int,
    topics: list[FetchTopicResult],
    files: dict[int, bytes],
    *,
    throttle_time_ms: int = 0,
    error_code: int = 0,
    session_id: int = 0,
) -> bytes:
    """kio's encoding of the same response, built the way every other handler builds one."""
    data: dict[str, Any] = {
        "throttle_time": throttle_time_ms,
        "error_code": error_code,
        "session_id": session_id,
        "responses": [
            {
                "topic": topic.name,
                "topic_id": topic.topic_id,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": p.error_code,
                        "high_watermark": p.high_watermark,
                        "last_stable_offset": p.last_stable_offset,
                        "log_start_offset": p.log_start_offset,
                        "aborted_transactions": (),
                        "preferred_read_replica": p.preferred_read_replica,
                        "records": record_bytes(p, files),
                    }
                    for p in topic.partitions
                ],
            }
            for topic in topics
        ],
    }
    return encode_response(build_response(ApiKey.FETCH, version, data))


def kio_decode(version: int, body: bytes) -> Any:
    cls = response_type(ApiKey.FETCH, version)
    response, size = entity_reader(cls)(body, 0)
    assert size == len(body)
    return response


# -- strategies --------------------------------------------------------------------------------


@st.composite
def record_pieces(draw: st.DrawFn, file_size: int) -> list[FileRegion | bytes]:
    pieces: list[FileRegion | bytes] = []
    for _ in range(draw(st.integers(0, 4))):
        if file_size and draw(st.booleans()):
            position = draw(st.integers(0, file_size))
            size = draw(st.integers(0, file_size - position))
            pieces.append(FileRegion(VIRTUAL_FD, position, size))
        else:
            pieces.append(draw(st.binary(max_size=40)))
    return pieces


@st.composite
def fetch_responses(draw: st.DrawFn) -> tuple[int, list[FetchTopicResult], dict[int, bytes]]:
    version = draw(st.sampled_from(VERSIONS))
    content = draw(st.binary(max_size=300))
    topics = []
    for _ in range(draw(st.integers(0, 3))):
        partitions = [
            FetchPartitionResult(
                partition_index=draw(INT32),
                error_code=draw(ERROR_CODES),
                high_watermark=draw(INT64),
                last_stable_offset=draw(INT64),
                log_start_offset=draw(INT64),
                preferred_read_replica=draw(INT32),
                records=draw(record_pieces(len(content))),
            )
            for _ in range(draw(st.integers(0, 4)))
        ]
        topics.append(FetchTopicResult(draw(TOPIC_NAMES), draw(st.uuids()), partitions))
    return version, topics, {VIRTUAL_FD: content}


# -- equality with kio -------------------------------------------------------------------------


@settings(max_examples=400, deadline=None)
@given(
    response=fetch_responses(),
    throttle=st.integers(0, 2**31 - 1),
    error_code=ERROR_CODES,
    session_id=INT32,
)
def test_chunks_equal_kio_encoding(
    response: tuple[int, list[FetchTopicResult], dict[int, bytes]],
    throttle: int,
    error_code: int,
    session_id: int,
) -> None:
    version, topics, files = response
    chunks = encode_fetch_response(
        version, topics, throttle_time_ms=throttle, error_code=error_code, session_id=session_id
    )
    expected = kio_reference(
        version,
        topics,
        files,
        throttle_time_ms=throttle,
        error_code=error_code,
        session_id=session_id,
    )
    assert resolve(chunks, files) == expected


@settings(max_examples=200, deadline=None)
@given(response=fetch_responses())
def test_regions_are_separate_chunks_and_sizes_add_up(
    response: tuple[int, list[FetchTopicResult], dict[int, bytes]],
) -> None:
    version, topics, files = response
    chunks = encode_fetch_response(version, topics)
    regions = [c for c in chunks if isinstance(c, FileRegion)]
    expected_regions = [
        r
        for t in topics
        for p in t.partitions
        for r in p.records
        if isinstance(r, FileRegion) and r.size
    ]
    # Every non-empty region is emitted as itself, in order; empty ones are dropped.
    assert regions == expected_regions
    total = sum(c.size if isinstance(c, FileRegion) else len(c) for c in chunks)
    assert total == len(kio_reference(version, topics, files))
    # Byte strings are joined: chunks alternate, starting and ending with bytes.
    assert isinstance(chunks[0], bytes)
    assert isinstance(chunks[-1], bytes)
    for a, b in itertools.pairwise(chunks):
        assert isinstance(a, bytes) != isinstance(b, bytes)


@settings(max_examples=100, deadline=None)
@given(response=fetch_responses())
def test_records_size_counts_regions_and_bytes(
    response: tuple[int, list[FetchTopicResult], dict[int, bytes]],
) -> None:
    _version, topics, files = response
    for topic in topics:
        for p in topic.partitions:
            assert p.records_size == len(record_bytes(p, files))


@pytest.mark.parametrize("version", VERSIONS)
def test_decodes_with_kio_to_the_same_values(version: int) -> None:
    topic_id = uuid.UUID("0b9a3a5e-2f0c-4a3d-9c4c-3a8f7bb3a1e2")
    topics = [
        FetchTopicResult(
            "orders",
            topic_id,
            [
                FetchPartitionResult(0, 0, 10, 9, 2, 1, [b"batch-one", b"batch-two"]),
                FetchPartitionResult(1, int(ErrorCode.OFFSET_OUT_OF_RANGE), 5, 5, 0),
            ],
        )
    ]
    body = resolve(encode_fetch_response(version, topics, throttle_time_ms=7, session_id=99), {})
    decoded = kio_decode(version, body)
    assert decoded.throttle_time.total_seconds() == 0.007
    if version >= 7:
        assert decoded.session_id == 99
        assert decoded.error_code == KioErrorCode.none
    (topic,) = decoded.responses
    if version >= TOPIC_ID_FROM:
        assert topic.topic_id == topic_id
    else:
        assert topic.topic == "orders"
    first, second = topic.partitions
    assert (first.partition_index, first.high_watermark, first.last_stable_offset) == (0, 10, 9)
    assert first.records == b"batch-onebatch-two"
    assert second.error_code == KioErrorCode.offset_out_of_range
    if version >= 5:
        assert (first.log_start_offset, second.log_start_offset) == (2, 0)
    if version >= 11:
        assert first.preferred_read_replica == 1


# -- empty, not null ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "records",
    [[], [b""], [FileRegion(VIRTUAL_FD, 0, 0)]],
    ids=["none", "empty-bytes", "empty-region"],
)
def test_empty_record_set_is_empty_not_null(version: int, records: list[Any]) -> None:
    partition = FetchPartitionResult(0, 0, 0, 0, 0, -1, records)
    chunks = encode_fetch_response(version, [FetchTopicResult("t", uuid.uuid4(), [partition])])
    assert all(isinstance(c, bytes) for c in chunks)  # an empty region is not sent
    body = resolve(chunks, {VIRTUAL_FD: b""})
    (topic,) = kio_decode(version, body).responses
    (decoded,) = topic.partitions
    assert decoded.records == b""
    assert decoded.records is not None
    assert decoded.aborted_transactions == ()
    # The size field right before the partition's tagged fields (flexible) or at the very
    # end: int32 0, or uvarint(0 + 1); null would be int32 -1 / uvarint 0.
    if version >= FLEXIBLE_FROM:
        assert body.endswith(b"\x01" + b"\x00" * 3)  # size, partition/topic/response tags
    else:
        assert body.endswith(b"\x00\x00\x00\x00")


@pytest.mark.parametrize("version", VERSIONS)
def test_no_topics(version: int) -> None:
    chunks = encode_fetch_response(version, [])
    assert len(chunks) == 1
    assert resolve(chunks, {}) == kio_reference(version, [], {})


@pytest.mark.parametrize("version", VERSIONS)
def test_top_level_error_response(version: int) -> None:
    # What an unknown fetch session gets: an error and no topics.
    code = int(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    body = resolve(encode_fetch_response(version, [], error_code=code), {})
    assert body == kio_reference(version, [], {}, error_code=code)
    if version >= 7:
        assert kio_decode(version, body).error_code == KioErrorCode.fetch_session_id_not_found


# -- versions ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_topic_is_named_before_v13_and_identified_after(version: int) -> None:
    topic_id = uuid.uuid4()
    a = resolve(encode_fetch_response(version, [FetchTopicResult("a", topic_id, [])]), {})
    b = resolve(encode_fetch_response(version, [FetchTopicResult("bb", topic_id, [])]), {})
    if version >= TOPIC_ID_FROM:
        assert a == b
        assert topic_id.bytes in a
    else:
        assert a != b
        assert topic_id.bytes not in a


def test_flexible_from_v12() -> None:
    # Kafka's FetchResponse.json: "flexibleVersions": "12+".
    assert FLEXIBLE_FROM == 12
    for version in VERSIONS:
        assert response_type(ApiKey.FETCH, version).__flexible__ is (version >= FLEXIBLE_FROM)


# -- a real file -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [4, 11, 12, 17])
def test_regions_of_a_real_file(tmp_path: Path, version: int) -> None:
    content = bytes(range(256)) * 8
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(content)
    fd = os.open(path, os.O_RDONLY)
    try:
        topics = [
            FetchTopicResult(
                "logs",
                uuid.uuid4(),
                [
                    FetchPartitionResult(0, 0, 100, 100, 0, -1, [FileRegion(fd, 0, 300)]),
                    FetchPartitionResult(
                        1, 0, 100, 100, 0, -1, [FileRegion(fd, 1000, 48), b"tail"]
                    ),
                ],
            )
        ]
        chunks = encode_fetch_response(version, topics)
        wire = bytearray()
        for chunk in chunks:
            if isinstance(chunk, FileRegion):
                wire += os.pread(chunk.fd, chunk.size, chunk.position)
            else:
                wire += chunk
        assert [c for c in chunks if isinstance(c, FileRegion)] == [
            FileRegion(fd, 0, 300),
            FileRegion(fd, 1000, 48),
        ]
        assert bytes(wire) == kio_reference(version, topics, {fd: content})
        first, second = kio_decode(version, bytes(wire)).responses[0].partitions
        assert first.records == content[:300]
        assert second.records == content[1000:1048] + b"tail"
    finally:
        os.close(fd)


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= FLEXIBLE_FROM])
def test_current_leader_hints_equal_kio_encoding(version: int) -> None:
    """KIP-951: the current-leader tag (v12+) and the node endpoints (v16+) as kio writes them."""
    topic = FetchTopicResult(
        "t", uuid.UUID(int=5), [FetchPartitionResult(0, 6, current_leader=(1, 3))]
    )
    endpoints = [NodeEndpoint(1, "h1", 9093, "r1"), NodeEndpoint(2, "h2", 9094, None)]
    ours = resolve(encode_fetch_response(version, [topic], node_endpoints=endpoints), {})
    data: dict[str, Any] = {
        "responses": [
            {
                "topic": "t",
                "topic_id": topic.topic_id,
                "partitions": [
                    {
                        "partition_index": 0,
                        "error_code": 6,
                        "high_watermark": -1,
                        "last_stable_offset": -1,
                        "log_start_offset": -1,
                        "preferred_read_replica": -1,
                        "aborted_transactions": (),
                        "records": b"",
                        "current_leader": {"leader_id": 1, "leader_epoch": 3},
                    }
                ],
            }
        ],
    }
    if version >= 16:
        data["node_endpoints"] = [
            {"node_id": e.node_id, "host": e.host, "port": e.port, "rack": e.rack}
            for e in endpoints
        ]
    assert ours == encode_response(build_response(ApiKey.FETCH, version, data))
