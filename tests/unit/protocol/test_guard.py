"""The pre-decode guard: null arrays are legal exactly where Kafka's schema makes them nullable.

Kafka's generated ``read()`` throws "non-nullable field X was serialized as null" for a
negative count in any other array, and the broker closes the connection; kio alone would
decode ``None`` and hand it to the handler.
"""

from __future__ import annotations

import struct

import pytest

from franz.errors import InvalidRequestError
from franz.protocol.messages import decode_request
from franz.protocol.produce import decode_produce_request

NULL = struct.pack(">i", -1)


@pytest.mark.parametrize(
    ("api_key", "version", "body", "field"),
    [
        # ListOffsets v1: replica_id int32, topics [..]
        (2, 1, struct.pack(">i", -1) + NULL, "topics"),
        # DeleteRecords v0: topics [..], timeout_ms int32
        (21, 0, NULL + struct.pack(">i", 100), "topics"),
        # CreateTopics v2: topics [..], timeout_ms, validate_only
        (19, 2, NULL + struct.pack(">i?", 100, False), "topics"),
        # ListOffsets v1, one topic "t" whose partitions array is null
        (2, 1, struct.pack(">ii", -1, 1) + struct.pack(">h", 1) + b"t" + NULL, "partitions"),
        # ListOffsets v6 (flexible): compact null is uvarint 0
        (2, 6, struct.pack(">ib", -1, 0) + b"\x00\x00", "topics"),
    ],
)
def test_null_in_a_non_nullable_array_fails_the_parse(
    api_key: int, version: int, body: bytes, field: str
) -> None:
    with pytest.raises(InvalidRequestError, match=f"non-nullable field {field} was serialized"):
        decode_request(api_key, version, body, 0)


def test_null_in_a_nullable_array_decodes_as_none() -> None:
    # Metadata v4: topics nullable (null = every topic), allow_auto_topic_creation bool
    request = decode_request(3, 4, NULL + b"\x01", 0)
    assert request.topics is None
    # OffsetFetch v2: group_id, topics nullable (null = every committed partition)
    request = decode_request(9, 2, struct.pack(">h", 1) + b"g" + NULL, 0)
    assert request.topics is None


def test_empty_arrays_decode() -> None:
    request = decode_request(2, 1, struct.pack(">ii", -1, 0), 0)
    assert request.topics == ()


@pytest.mark.parametrize(
    ("body", "field"),
    [
        (NULL, "topic_data"),
        (struct.pack(">i", 1) + struct.pack(">h", 1) + b"t" + NULL, "partition_data"),
    ],
)
def test_produce_with_a_null_array_fails_the_parse(body: bytes, field: str) -> None:
    # transactional_id null, acks -1, timeout_ms 0, then the arrays
    head = struct.pack(">hhi", -1, -1, 0)
    with pytest.raises(InvalidRequestError, match=f"non-nullable field {field} was serialized"):
        decode_produce_request(3, head + body, 0)
