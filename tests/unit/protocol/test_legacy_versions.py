"""The hand-written pre-0.11 messages against kafka-python's codec (a real client that still
encodes Produce v0-2, Fetch v0-3, ListOffsets v0 and OffsetCommit v0-1 from Kafka's schemas):
what kafka-python encodes decodes here, and what Franz encodes kafka-python decodes."""

from __future__ import annotations

import uuid

import pytest
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    OffsetCommitRequest,
)
from kafka.protocol.producer import ProduceResponse

from franz.errors import InvalidRequestError
from franz.protocol.fetch import FetchPartitionResult, FetchTopicResult, encode_fetch_response
from franz.protocol.legacy_versions import (
    decode_legacy_fetch_request,
    decode_legacy_offset_commit_request,
    decode_list_offsets_v0_request,
    encode_legacy_produce_response,
    encode_list_offsets_v0_response,
)

#: kafka-python 3.0.12, FetchRequest v1 (replica -1, max wait 500, min bytes 1, topic "t",
#: partition 0 at offset 5, max 100 bytes): the body it sent in the integration runs.
GOLDEN_FETCH_V1 = bytes.fromhex(
    "ffffffff000001f400000001000000010001740000000100000000000000000000000500000064"
)


def fetch_request_body(version: int) -> bytes:
    partition = FetchRequest.FetchTopic.FetchPartition(
        partition=3, fetch_offset=42, partition_max_bytes=1 << 20
    )
    request = FetchRequest(
        version=version,
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=52428800,
        topics=[FetchRequest.FetchTopic(topic="orders", partitions=[partition])],
    )
    return bytes(request.encode())


def test_fetch_v1_golden_bytes() -> None:
    request = decode_legacy_fetch_request(1, GOLDEN_FETCH_V1, 0)
    assert (request.replica_id, request.max_wait_ms, request.min_bytes) == (-1, 500, 1)
    [topic] = request.topics
    assert topic.topic == "t"
    assert [(p.partition, p.fetch_offset, p.partition_max_bytes) for p in topic.partitions] == [
        (0, 5, 100)
    ]


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_fetch_request_decodes_kafka_pythons(version: int) -> None:
    request = decode_legacy_fetch_request(version, b"xx" + fetch_request_body(version), 2)
    assert request.max_wait.total_seconds() == 0.5 and request.min_bytes == 1
    assert request.max_bytes == (52428800 if version >= 3 else 2**31 - 1)
    [topic] = request.topics
    [p] = topic.partitions
    assert (topic.topic, p.partition, p.fetch_offset, p.partition_max_bytes) == (
        "orders",
        3,
        42,
        1 << 20,
    )


def test_truncated_fetch_request_is_invalid() -> None:
    with pytest.raises(InvalidRequestError):
        decode_legacy_fetch_request(3, fetch_request_body(3)[:-1], 0)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_fetch_response_decodes_with_kafka_python(version: int) -> None:
    records = b"\x00" * 8 + b"\x00\x00\x00\x0e" + b"m" * 14
    topics = [
        FetchTopicResult(
            "orders",
            uuid.UUID(int=0),
            [
                FetchPartitionResult(3, 0, 17, 17, 0, records=[records]),
                FetchPartitionResult(4, 6, -1, -1, -1),
            ],
        )
    ]
    body = b"".join(c for c in encode_fetch_response(version, topics) if isinstance(c, bytes))
    response = FetchResponse.decode(body, version=version)
    [topic] = response.responses
    assert topic.topic == "orders"
    first, second = topic.partitions
    assert (first.partition_index, first.error_code, first.high_watermark) == (3, 0, 17)
    assert bytes(first.records) == records
    assert (second.partition_index, second.error_code) == (4, 6)


@pytest.mark.parametrize("version", [0, 1, 2])
def test_produce_response_decodes_with_kafka_python(version: int) -> None:
    body = {
        "responses": [
            {
                "name": "orders",
                "partition_responses": [
                    {"index": 0, "error_code": 0, "base_offset": 41, "log_append_time": 7},
                    {"index": 1, "error_code": 2, "base_offset": -1, "log_append_time": -1},
                ],
            }
        ],
        "throttle_time": 5,
    }
    response = ProduceResponse.decode(
        encode_legacy_produce_response(version, body), version=version
    )
    [topic] = response.responses
    assert topic.name == "orders"
    ok, bad = topic.partition_responses
    assert (ok.index, ok.error_code, ok.base_offset) == (0, 0, 41)
    assert (bad.index, bad.error_code, bad.base_offset) == (1, 2, -1)
    if version >= 1:
        assert response.throttle_time_ms == 5
    if version >= 2:
        assert ok.log_append_time_ms == 7


def test_list_offsets_v0_round_trip_with_kafka_python() -> None:
    partition = ListOffsetsRequest.ListOffsetsTopic.ListOffsetsPartition(
        partition_index=2, timestamp=-1, max_num_offsets=3
    )
    request = ListOffsetsRequest(
        version=0,
        replica_id=-1,
        topics=[ListOffsetsRequest.ListOffsetsTopic(name="orders", partitions=[partition])],
    )
    decoded = decode_list_offsets_v0_request(bytes(request.encode()), 0)
    [topic] = decoded.topics
    [p] = topic.partitions
    assert (decoded.replica_id, topic.name, p.partition_index, p.timestamp, p.max_num_offsets) == (
        -1,
        "orders",
        2,
        -1,
        3,
    )
    body = encode_list_offsets_v0_response(
        [
            {
                "name": "orders",
                "partitions": [
                    {"partition_index": 2, "error_code": 0, "old_style_offsets": [9, 0]},
                    {"partition_index": 5, "error_code": 3, "old_style_offsets": []},
                ],
            }
        ]
    )
    response = ListOffsetsResponse.decode(body, version=0)
    [topic_response] = response.topics
    ok, bad = topic_response.partitions
    assert (ok.partition_index, ok.error_code, list(ok.old_style_offsets)) == (2, 0, [9, 0])
    assert (bad.partition_index, bad.error_code, list(bad.old_style_offsets)) == (5, 3, [])


@pytest.mark.parametrize("version", [0, 1])
def test_offset_commit_request_decodes_kafka_pythons(version: int) -> None:
    partition = OffsetCommitRequest.OffsetCommitRequestTopic.OffsetCommitRequestPartition(
        partition_index=1, committed_offset=99, commit_timestamp=-1, committed_metadata=None
    )
    request = OffsetCommitRequest(
        version=version,
        group_id="g",
        generation_id_or_member_epoch=4,
        member_id="m-1",
        topics=[
            OffsetCommitRequest.OffsetCommitRequestTopic(name="orders", partitions=[partition])
        ],
    )
    decoded = decode_legacy_offset_commit_request(version, bytes(request.encode()), 0)
    assert decoded.group_id == "g"
    assert (decoded.generation_id_or_member_epoch, decoded.member_id) == (
        (4, "m-1") if version else (-1, "")
    )
    [topic] = decoded.topics
    [p] = topic.partitions
    assert (topic.name, p.partition_index, p.committed_offset, p.committed_metadata) == (
        "orders",
        1,
        99,
        None,
    )
