"""``franz.coordinator.transaction.log_schema``: ``__transaction_state`` keys and values.

Golden bytes: each ``KAFKA_*`` constant was printed by Kafka 3.9.2's own generated classes
(``MessageUtil.toVersionPrefixedBytes`` over ``TransactionLogKey`` / ``TransactionLogValue``
from ``kafka-transaction-coordinator-3.9.2.jar``) for the values built here; the first vector
is also spelled out field by field from ``TransactionLogValue.json``. The hash partitions were
printed by Java (``String.hashCode``, ``Utils.abs(h) % 50``).
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from franz.coordinator.group.offsets_schema import (
    CoordinatorRecordError,
    UnknownRecordVersionError,
)
from franz.coordinator.transaction.log_schema import (
    TRANSACTION_LOG_VALUE_VERSION,
    TransactionLogRecordError,
    TransactionLogValue,
    UnknownTransactionLogVersionError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    group_partitions,
    partition_for,
)
from franz.coordinator.transaction.states import TransactionState

ONGOING = TransactionLogValue(
    producer_id=1000,
    producer_epoch=5,
    transaction_timeout_ms=60000,
    state=TransactionState.ONGOING,
    partitions=(("t", (0, 2)), ("u", (1,))),
    last_update_timestamp_ms=1_700_000_001_000,
    start_timestamp_ms=1_700_000_000_000,
)
EMPTY = TransactionLogValue(
    producer_id=7,
    producer_epoch=0,
    transaction_timeout_ms=60000,
    state=TransactionState.EMPTY,
    partitions=None,
    last_update_timestamp_ms=1_700_000_000_000,
    start_timestamp_ms=-1,
)

KAFKA_KEY_TXN_1 = bytes.fromhex("0000000574786e2d31")
KAFKA_ONGOING_V0 = bytes.fromhex(
    "000000000000000003e800050000ea60010000000200017400000002000000000000000200017500000001"
    "000000010000018bcfe56be80000018bcfe56800"
)
KAFKA_ONGOING_V1 = bytes.fromhex(
    "000100000000000003e800050000ea60010302740300000000000000020002750200000001000000018bcf"
    "e56be80000018bcfe5680000"
)
KAFKA_EMPTY_V0 = bytes.fromhex(
    "0000000000000000000700000000ea6000ffffffff0000018bcfe56800ffffffffffffffff"
)
KAFKA_EMPTY_V1 = bytes.fromhex(
    "0001000000000000000700000000ea6000000000018bcfe56800ffffffffffffffff00"
)


def test_value_v0_matches_the_schema_field_by_field() -> None:
    expected = b"".join(
        [
            b"\x00\x00",  # version 0
            struct.pack(">q", 1000),  # ProducerId int64
            struct.pack(">h", 5),  # ProducerEpoch int16
            struct.pack(">i", 60000),  # TransactionTimeoutMs int32
            b"\x01",  # TransactionStatus int8: Ongoing
            struct.pack(">i", 2),  # TransactionPartitions: 2 entries
            b"\x00\x01t",  # Topic "t"
            struct.pack(">iii", 2, 0, 2),  # PartitionIds [0, 2]
            b"\x00\x01u",  # Topic "u"
            struct.pack(">ii", 1, 1),  # PartitionIds [1]
            struct.pack(">q", 1_700_000_001_000),  # TransactionLastUpdateTimestampMs
            struct.pack(">q", 1_700_000_000_000),  # TransactionStartTimestampMs
        ]
    )
    assert encode_value(ONGOING, 0) == expected
    assert expected == KAFKA_ONGOING_V0


def test_kafka_writes_value_version_0() -> None:
    assert TRANSACTION_LOG_VALUE_VERSION == 0
    assert encode_value(ONGOING) == KAFKA_ONGOING_V0


@pytest.mark.parametrize(
    ("value", "version", "golden"),
    [
        (ONGOING, 0, KAFKA_ONGOING_V0),
        (ONGOING, 1, KAFKA_ONGOING_V1),
        (EMPTY, 0, KAFKA_EMPTY_V0),
        (EMPTY, 1, KAFKA_EMPTY_V1),
    ],
)
def test_value_matches_kafka_generated_bytes(
    value: TransactionLogValue, version: int, golden: bytes
) -> None:
    assert encode_value(value, version) == golden
    assert decode_value(golden) == value


def test_key_matches_kafka_generated_bytes() -> None:
    assert encode_key("txn-1") == KAFKA_KEY_TXN_1
    assert decode_key(KAFKA_KEY_TXN_1) == "txn-1"


def test_value_v1_skips_unknown_tagged_fields() -> None:
    # The value's tagged-field section (last byte) replaced by one field: tag 5, 2 bytes.
    tagged = KAFKA_EMPTY_V1[:-1] + b"\x01\x05\x02\xab\xcd"
    assert decode_value(tagged) == EMPTY


def test_unknown_versions_are_refused() -> None:
    with pytest.raises(UnknownTransactionLogVersionError):
        decode_value(b"\x00\x02" + KAFKA_EMPTY_V0[2:])
    with pytest.raises(UnknownTransactionLogVersionError) as info:
        decode_key(b"\x00\x01" + KAFKA_KEY_TXN_1[2:])
    # A loader that catches the group coordinator's errors catches these too.
    assert isinstance(info.value, UnknownRecordVersionError)
    assert isinstance(info.value, CoordinatorRecordError)
    with pytest.raises(ValueError, match="not 0 or 1"):
        encode_value(EMPTY, 2)


def test_unknown_state_id_is_refused() -> None:
    bad = bytearray(KAFKA_EMPTY_V0)
    bad[16] = 8  # TransactionStatus: offset 2 + 8 + 2 + 4
    with pytest.raises(TransactionLogRecordError, match="Unknown transaction state id 8"):
        decode_value(bytes(bad))


@pytest.mark.parametrize("cut", range(len(KAFKA_ONGOING_V0)))
def test_truncated_value_is_refused(cut: int) -> None:
    with pytest.raises(TransactionLogRecordError):
        decode_value(KAFKA_ONGOING_V0[:cut])


def test_trailing_bytes_are_refused() -> None:
    with pytest.raises(TransactionLogRecordError, match="trailing"):
        decode_value(KAFKA_ONGOING_V0 + b"\x00")
    with pytest.raises(TransactionLogRecordError, match="trailing"):
        decode_key(KAFKA_KEY_TXN_1 + b"\x00")


def test_null_partition_ids_are_refused() -> None:
    # v0, one PartitionsSchema whose PartitionIds array is null (-1): non-nullable.
    head = KAFKA_EMPTY_V0[:17]
    body = struct.pack(">i", 1) + b"\x00\x01t" + struct.pack(">i", -1) + bytes(16)
    with pytest.raises(TransactionLogRecordError, match="non-nullable partitionIds"):
        decode_value(head + body)


def test_group_partitions_sorts_by_topic_then_partition() -> None:
    tps = [("b", 3), ("a", 2), ("b", 1), ("a", 0), ("a", 2)]
    assert group_partitions(tps) == (("a", (0, 2)), ("b", (1, 3)))
    assert group_partitions([]) == ()


_topic = st.text(min_size=0, max_size=20)
_int32 = st.integers(-(2**31), 2**31 - 1)
_partitions = st.lists(st.tuples(_topic, st.lists(_int32, max_size=5).map(tuple)), max_size=5)


@given(
    producer_id=st.integers(-(2**63), 2**63 - 1),
    producer_epoch=st.integers(-(2**15), 2**15 - 1),
    timeout=_int32,
    state=st.sampled_from(TransactionState),
    partitions=st.none() | _partitions.map(tuple),
    last_update=st.integers(-(2**63), 2**63 - 1),
    start=st.integers(-(2**63), 2**63 - 1),
    version=st.sampled_from([0, 1]),
)
def test_value_round_trips(
    producer_id: int,
    producer_epoch: int,
    timeout: int,
    state: TransactionState,
    partitions: tuple[tuple[str, tuple[int, ...]], ...] | None,
    last_update: int,
    start: int,
    version: int,
) -> None:
    value = TransactionLogValue(
        producer_id, producer_epoch, timeout, state, partitions, last_update, start
    )
    data = encode_value(value, version)
    assert int.from_bytes(data[:2], "big") == version
    assert decode_value(data) == value


@given(st.text(max_size=50))
def test_key_round_trips(transactional_id: str) -> None:
    data = encode_key(transactional_id)
    assert data[:2] == b"\x00\x00"
    assert decode_key(data) == transactional_id


def _java_hash_reference(s: str) -> int:
    """Java's String.hashCode by its definition: sum of s[i] * 31^(n-1-i) over UTF-16 units."""
    data = s.encode("utf-16-be", "surrogatepass")
    units = [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]
    n = len(units)
    h = sum(u * pow(31, n - 1 - i, 2**32) for i, u in enumerate(units)) % 2**32
    return h - 2**32 if h >= 2**31 else h


# (id, Java's hashCode, Utils.abs(hashCode) % 50) as printed by Java 17 and Kafka 3.9.2.
JAVA_HASHES = [
    ("", 0, 0),
    ("txn-1", 110810510, 10),
    ("my-transactional-id", -959806496, 46),
    ("\u00e9t\u00e9", 227742, 42),
    ("polygenelubricants", -(2**31), 0),  # Integer.MIN_VALUE: Utils.abs gives 0
    ("GydZG_", -(2**31), 0),
    ("DESIGNING WORKHOUSES", -(2**31), 0),
    ("\U0001f600", 1772899, 49),  # a surrogate pair: two UTF-16 units
]


@pytest.mark.parametrize(("transactional_id", "java_hash", "partition"), JAVA_HASHES)
def test_partition_for_matches_java(transactional_id: str, java_hash: int, partition: int) -> None:
    assert _java_hash_reference(transactional_id) == java_hash
    assert partition_for(transactional_id, 50) == partition


def test_partition_for_refuses_no_partitions() -> None:
    with pytest.raises(ValueError, match="positive"):
        partition_for("txn-1", 0)
