"""The Fetch response encoder's ``aborted_transactions`` array (KIP-98), decoded by kio.

``franz.protocol.fetch.encode_fetch_response`` writes the array by hand (the rest of
``test_fetch_encoder.py`` only ever sends it empty). Kafka's ``FetchResponse.json``:
``AbortedTransactions`` is ``"versions": "4+", "nullableVersions": "4+"``, each entry
``ProducerId int64, FirstOffset int64`` (plus tagged fields from v12, flexible). What Kafka
sends in it: null for a partition read at READ_UNCOMMITTED, the aborted transactions
overlapping the records sent for READ_COMMITTED (an empty array when there are none), and an
empty array for partitions refused before the read (``FetchResponse.partitionResponse``'s
default). The field does not exist before v4.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest

from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from franz.protocol.fetch import FetchPartitionResult, FetchTopicResult, encode_fetch_response
from franz.protocol.messages import build_response, encode_response
from tests.unit.protocol.test_fetch_encoder import kio_decode, resolve

SUPPORT = SUPPORTED_APIS[ApiKey.FETCH]
VERSIONS = range(SUPPORT.min_accepted, SUPPORT.max_version + 1)
FLEXIBLE_FROM = SUPPORT.first_flexible

#: (producer id, first offset) pairs, in the order the log's ``.txnindex`` gives them; the
#: extremes of int64 check the field widths and signs.
ABORTED = [(1000, 5), (1001, 17), (2**63 - 1, 2**62), (0, 0)]


def one_partition(version: int, partition: FetchPartitionResult) -> bytes:
    topic = FetchTopicResult("t", uuid.UUID(int=7), [partition])
    return resolve(encode_fetch_response(version, [topic]), {})


def decoded_aborted(version: int, body: bytes) -> Any:
    (topic,) = kio_decode(version, body).responses
    (partition,) = topic.partitions
    assert partition.records == b"batch"  # what follows the array is read where it should be
    return partition.aborted_transactions


def kio_encoding(version: int, aborted: list[tuple[int, int]] | None) -> bytes:
    """kio's bytes for the same partition: the schema's own encoding of the array."""
    data: dict[str, Any] = {
        "responses": [
            {
                "topic": "t",
                "topic_id": uuid.UUID(int=7),
                "partitions": [
                    {
                        "partition_index": 3,
                        "error_code": 0,
                        "high_watermark": 40,
                        "last_stable_offset": 30,
                        "log_start_offset": 0,
                        "preferred_read_replica": -1,
                        "aborted_transactions": None
                        if aborted is None
                        else [{"producer_id": p, "first_offset": o} for p, o in aborted],
                        "records": b"batch",
                    }
                ],
            }
        ],
    }
    return encode_response(build_response(ApiKey.FETCH, version, data))


def partition(
    aborted: list[tuple[int, int]], *, null: bool = False, records: bytes = b"batch"
) -> FetchPartitionResult:
    return FetchPartitionResult(
        3,
        0,
        40,
        30,
        0,
        -1,
        [records],
        aborted_transactions_null=null,
        aborted_transactions=list(aborted),
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_read_committed_aborted_transactions_decode_in_order(version: int) -> None:
    body = one_partition(version, partition(ABORTED))
    decoded = decoded_aborted(version, body)
    assert decoded is not None
    assert [(a.producer_id, a.first_offset) for a in decoded] == ABORTED
    assert body == kio_encoding(version, ABORTED)


@pytest.mark.parametrize("version", VERSIONS)
def test_read_committed_without_aborted_transactions_is_empty_not_null(version: int) -> None:
    body = one_partition(version, partition([]))
    assert decoded_aborted(version, body) == ()
    assert body == kio_encoding(version, [])
    # The count right after log_start_offset: int32 0, or uvarint(0 + 1) when flexible.
    count = b"\x01" if version >= FLEXIBLE_FROM else struct.pack(">i", 0)
    assert _array_bytes(version, body).startswith(count)


@pytest.mark.parametrize("version", VERSIONS)
def test_read_uncommitted_is_null(version: int) -> None:
    # Null wins over a list: the handler fills the list only for READ_COMMITTED.
    body = one_partition(version, partition(ABORTED, null=True))
    assert decoded_aborted(version, body) is None
    assert body == kio_encoding(version, None)
    # int32 -1, or uvarint 0 when flexible; then straight to the next field.
    null = b"\x00" if version >= FLEXIBLE_FROM else struct.pack(">i", -1)
    assert _array_bytes(version, body).startswith(null)


@pytest.mark.parametrize("version", VERSIONS)
def test_entry_layout_is_two_int64s_and_tags_when_flexible(version: int) -> None:
    body = one_partition(version, partition([(0x0102030405060708, 0x1112131415161718)]))
    entry = struct.pack(">qq", 0x0102030405060708, 0x1112131415161718)
    if version >= FLEXIBLE_FROM:
        expected = b"\x02" + entry + b"\x00"  # uvarint(1 + 1), entry, its empty tagged fields
    else:
        expected = struct.pack(">i", 1) + entry
    assert _array_bytes(version, body).startswith(expected)


@pytest.mark.parametrize("version", VERSIONS)
def test_size_of_one_entry_per_version(version: int) -> None:
    # Each aborted transaction adds 16 bytes (17 with its tagged fields when flexible); the
    # count field is 4 bytes, or a uvarint (1 byte for these sizes).
    empty = len(one_partition(version, partition([])))
    sizes = [len(one_partition(version, partition(ABORTED[:n]))) - empty for n in (1, 2, 3)]
    per_entry = 17 if version >= FLEXIBLE_FROM else 16
    assert sizes == [per_entry, 2 * per_entry, 3 * per_entry]


def _array_bytes(version: int, body: bytes) -> bytes:
    """``body`` from the partition's aborted_transactions field on (one topic ``t``, one
    partition, as :func:`one_partition` writes it)."""
    offset = 4 + 2 + 4 if version >= 7 else 4  # throttle_time_ms, error_code, session_id
    flexible = version >= FLEXIBLE_FROM
    offset += 1 if flexible else 4  # topics count
    if version >= 13:
        offset += 16  # topic_id
    else:
        offset += (1 if flexible else 2) + 1  # name length, "t"
    offset += 1 if flexible else 4  # partitions count
    offset += 4 + 2 + 8 + 8 + 8  # index, error_code, HW, LSO, log_start_offset (v5+)
    if version < 5:
        offset -= 8
    return body[offset:]


@pytest.mark.parametrize("version", range(0, 4))
def test_no_field_before_v4(version: int) -> None:
    # Fetch v0-3 (down-converted message sets, franz.protocol.legacy_versions) have no
    # aborted transactions, whatever the partition holds. kio has no v0-3 schemas: the
    # bytes are spelled out (v1+ start with throttle_time_ms).
    expected = (
        (struct.pack(">i", 0) if version >= 1 else b"")
        + struct.pack(">ih", 1, 1)  # one topic, name length
        + b"t"
        + struct.pack(">iihq", 1, 3, 0, 40)  # one partition: index, error, HW
        + struct.pack(">i", 5)
        + b"batch"
    )
    for p in (partition(ABORTED), partition(ABORTED, null=True), partition([])):
        assert one_partition(version, p) == expected
