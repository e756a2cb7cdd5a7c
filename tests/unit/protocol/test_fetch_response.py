"""The hand-written Fetch response decoder, against kio's encoder and Franz's own encoder."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.protocol.api_keys import ApiKey
from franz.protocol.fetch import FetchPartitionResult, FetchTopicResult, encode_fetch_response
from franz.protocol.fetch_response import (
    FetchResponseDecodeError,
    decode_fetch_response,
)
from franz.protocol.messages import build_response, encode_response

VERSIONS = range(4, 18)
INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)


def kio_body(version: int, data: dict[str, Any]) -> bytes:
    return encode_response(build_response(ApiKey.FETCH, version, data))


@st.composite
def responses(draw: st.DrawFn) -> tuple[int, dict[str, Any]]:
    version = draw(st.sampled_from(VERSIONS))
    topics = []
    for _ in range(draw(st.integers(0, 3))):
        partitions = []
        for _ in range(draw(st.integers(0, 3))):
            aborted = draw(
                st.none()
                | st.lists(
                    st.fixed_dictionaries({"producer_id": INT64, "first_offset": INT64}),
                    max_size=2,
                )
            )
            partitions.append(
                {
                    "partition_index": draw(INT32),
                    "error_code": draw(st.sampled_from([0, 1, 6, 74])),
                    "high_watermark": draw(INT64),
                    "last_stable_offset": draw(INT64),
                    "log_start_offset": draw(INT64),
                    "aborted_transactions": aborted,
                    "preferred_read_replica": draw(INT32),
                    "records": draw(st.none() | st.binary(max_size=64)),
                }
            )
        topics.append(
            {
                "topic": draw(st.text(max_size=10)),
                "topic_id": draw(st.uuids()),
                "partitions": partitions,
            }
        )
    data = {
        "throttle_time": draw(st.integers(0, 2**31 - 1)),
        "error_code": draw(st.sampled_from([0, 70])),
        "session_id": draw(INT32),
        "responses": topics,
    }
    return version, data


@settings(max_examples=300, deadline=None)
@given(responses())
def test_decodes_what_kio_encodes(case: tuple[int, dict[str, Any]]) -> None:
    version, data = case
    decoded = decode_fetch_response(version, kio_body(version, data))
    assert decoded.throttle_time_ms == data["throttle_time"]
    assert decoded.error_code == (data["error_code"] if version >= 7 else 0)
    assert decoded.session_id == (data["session_id"] if version >= 7 else 0)
    assert len(decoded.responses) == len(data["responses"])
    for topic, expected in zip(decoded.responses, data["responses"], strict=True):
        if version >= 13:
            assert topic.topic_id == expected["topic_id"]
        else:
            assert topic.name == expected["topic"]
        for p, e in zip(topic.partitions, expected["partitions"], strict=True):
            assert (p.partition_index, p.error_code, p.high_watermark, p.last_stable_offset) == (
                e["partition_index"],
                e["error_code"],
                e["high_watermark"],
                e["last_stable_offset"],
            )
            assert p.log_start_offset == (e["log_start_offset"] if version >= 5 else -1)
            assert p.preferred_read_replica == (
                e["preferred_read_replica"] if version >= 11 else -1
            )
            if e["aborted_transactions"] is None:
                assert p.aborted_transactions is None
            else:
                assert [(a.producer_id, a.first_offset) for a in p.aborted_transactions or []] == [
                    (a["producer_id"], a["first_offset"]) for a in e["aborted_transactions"]
                ]
            assert bytes(p.records) == (e["records"] or b"")


@pytest.mark.parametrize("version", VERSIONS)
def test_decodes_what_the_broker_encodes_records_as_views(version: int) -> None:
    batches = [b"\x00" * 61 + b"A", b"B" * 100]
    topic_id = uuid.uuid4()
    chunks = encode_fetch_response(
        version,
        [
            FetchTopicResult(
                "events",
                topic_id,
                [FetchPartitionResult(3, 0, 10, 10, 0, -1, list(batches))],
            )
        ],
        session_id=9,
    )
    body = b"".join(c for c in chunks if isinstance(c, bytes))
    decoded = decode_fetch_response(version, body)
    (topic,) = decoded.responses
    (partition,) = topic.partitions
    assert topic.name == ("" if version >= 13 else "events")
    assert isinstance(partition.records, memoryview)
    assert partition.records.obj is body  # a view of the frame, not a copy
    assert bytes(partition.records) == b"".join(batches)
    assert partition.high_watermark == 10


def test_diverging_epoch_and_current_leader_tags() -> None:
    data = {
        "responses": [
            {
                "topic_id": uuid.uuid4(),
                "partitions": [
                    {
                        "partition_index": 0,
                        "diverging_epoch": {"epoch": 4, "end_offset": 1234},
                        "current_leader": {"leader_id": 2, "leader_epoch": 5},
                        "records": b"xyz",
                    }
                ],
            }
        ]
    }
    (topic,) = decode_fetch_response(16, kio_body(16, data)).responses
    (p,) = topic.partitions
    assert p.diverging_epoch == (4, 1234)
    assert p.current_leader == (2, 5)
    assert bytes(p.records) == b"xyz"


def test_truncated_and_trailing_bytes_are_errors() -> None:
    body = kio_body(12, {"responses": [{"topic": "t", "partitions": [{"records": b"abc"}]}]})
    for cut in range(len(body)):
        with pytest.raises(FetchResponseDecodeError):
            decode_fetch_response(12, body[:cut])
    with pytest.raises(FetchResponseDecodeError, match="unexpected bytes"):
        decode_fetch_response(12, body + b"\x00")
    with pytest.raises(FetchResponseDecodeError, match="v3"):
        decode_fetch_response(3, body)
