"""``__consumer_offsets`` keys and values: Kafka's bytes, round trips, strict decoding, hashing."""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.coordinator.group.offsets_schema import (
    GROUP_METADATA_VALUE_VERSION,
    CoordinatorRecordError,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitValue,
    OffsetKey,
    UnknownRecordVersionError,
    decode_group_metadata_value,
    decode_key,
    decode_offset_commit_value,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
    java_string_hash_code,
    offset_commit_value_version,
    partition_for,
)

INT32 = st.integers(-(1 << 31), (1 << 31) - 1)
INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
# Java strings with a UTF-8 form: no lone surrogates.
TEXT = st.text(st.characters(codec="utf-8"), max_size=20)
BLOB = st.binary(max_size=40)


def i16(n: int) -> bytes:
    return struct.pack(">h", n)


def i32(n: int) -> bytes:
    return struct.pack(">i", n)


def i64(n: int) -> bytes:
    return struct.pack(">q", n)


# --- hand-built bytes (the layouts of Kafka's JSON schemas, written out field by field) ---

OFFSET_KEY_BYTES = b"\x00\x01" + b"\x00\x06group1" + b"\x00\x06orders" + b"\x00\x00\x00\x02"
GROUP_KEY_BYTES = b"\x00\x02" + b"\x00\x06group1"

OFFSET_VALUE = OffsetCommitValue(
    offset=42, metadata="meta", commit_timestamp=1_700_000_000_000, leader_epoch=7
)
OFFSET_VALUE_V3_BYTES = (
    b"\x00\x03"
    + b"\x00\x00\x00\x00\x00\x00\x00\x2a"  # offset 42
    + b"\x00\x00\x00\x07"  # leaderEpoch 7
    + b"\x00\x04meta"
    + b"\x00\x00\x01\x8b\xcf\xe5\x68\x00"  # commitTimestamp 1700000000000
)
OFFSET_VALUE_V4_BYTES = (
    b"\x00\x04"
    + b"\x00\x00\x00\x00\x00\x00\x00\x2a"
    + b"\x00\x00\x00\x07"
    + b"\x05meta"  # compact string: length + 1
    + b"\x00\x00\x01\x8b\xcf\xe5\x68\x00"
    + b"\x00"  # no tagged fields
)
EXPIRING_OFFSET_VALUE = dataclasses.replace(
    OFFSET_VALUE, leader_epoch=-1, expire_timestamp=1_700_086_400_000
)
OFFSET_VALUE_V1_BYTES = (
    b"\x00\x01"
    + b"\x00\x00\x00\x00\x00\x00\x00\x2a"
    + b"\x00\x04meta"
    + b"\x00\x00\x01\x8b\xcf\xe5\x68\x00"
    + b"\x00\x00\x01\x8b\xd5\x0b\xc4\x00"  # expireTimestamp 1700086400000
)

MEMBER = MemberMetadata(
    member_id="m-1",
    client_id="cli",
    client_host="/127.0.0.1",
    session_timeout=45_000,
    rebalance_timeout=300_000,
    group_instance_id=None,
    subscription=b"\x00\x01",
    assignment=b"",
)
GROUP_VALUE = GroupMetadataValue(
    protocol_type="consumer",
    generation=3,
    protocol="range",
    leader="m-1",
    current_state_timestamp=1_700_000_000_000,
    members=(MEMBER,),
)
GROUP_VALUE_V3_BYTES = (
    b"\x00\x03"
    + b"\x00\x08consumer"
    + b"\x00\x00\x00\x03"  # generation
    + b"\x00\x05range"
    + b"\x00\x03m-1"  # leader
    + b"\x00\x00\x01\x8b\xcf\xe5\x68\x00"  # currentStateTimestamp
    + b"\x00\x00\x00\x01"  # one member
    + b"\x00\x03m-1"
    + b"\xff\xff"  # groupInstanceId null
    + b"\x00\x03cli"
    + b"\x00\x0a/127.0.0.1"
    + b"\x00\x04\x93\xe0"  # rebalanceTimeout 300000
    + b"\x00\x00\xaf\xc8"  # sessionTimeout 45000
    + b"\x00\x00\x00\x02\x00\x01"  # subscription
    + b"\x00\x00\x00\x00"  # assignment (empty)
)
GROUP_VALUE_V4_BYTES = (
    b"\x00\x04"
    + b"\x09consumer"
    + b"\x00\x00\x00\x03"
    + b"\x06range"
    + b"\x04m-1"
    + b"\x00\x00\x01\x8b\xcf\xe5\x68\x00"
    + b"\x02"  # compact array: one member
    + b"\x04m-1"
    + b"\x00"  # groupInstanceId null
    + b"\x04cli"
    + b"\x0b/127.0.0.1"
    + b"\x00\x04\x93\xe0"
    + b"\x00\x00\xaf\xc8"
    + b"\x03\x00\x01"  # compact bytes
    + b"\x01"  # empty compact bytes
    + b"\x00"  # member's tagged fields
    + b"\x00"  # value's tagged fields
)
GROUP_VALUE_V0_EMPTY_BYTES = (
    b"\x00\x00" + b"\x00\x08consumer" + b"\x00\x00\x00\x00" + b"\xff\xff" + b"\xff\xff"
) + b"\x00\x00\x00\x00"


def test_offset_key_matches_kafka_bytes() -> None:
    key = OffsetKey("group1", "orders", 2)
    assert encode_offset_commit_key(key) == OFFSET_KEY_BYTES
    assert decode_key(OFFSET_KEY_BYTES) == key


def test_offset_key_version_0_decodes_as_an_offset_key() -> None:
    assert decode_key(b"\x00\x00" + OFFSET_KEY_BYTES[2:]) == OffsetKey("group1", "orders", 2, 0)
    assert encode_offset_commit_key(OffsetKey("group1", "orders", 2, 0))[:2] == b"\x00\x00"


def test_group_key_matches_kafka_bytes() -> None:
    assert encode_group_metadata_key(GroupMetadataKey("group1")) == GROUP_KEY_BYTES
    assert decode_key(GROUP_KEY_BYTES) == GroupMetadataKey("group1")


def test_offset_value_is_written_at_v3_without_expire_timestamp() -> None:
    assert offset_commit_value_version(OFFSET_VALUE) == 3
    assert encode_offset_commit_value(OFFSET_VALUE) == OFFSET_VALUE_V3_BYTES
    assert decode_offset_commit_value(OFFSET_VALUE_V3_BYTES) == OFFSET_VALUE


def test_offset_value_is_written_at_v1_with_expire_timestamp() -> None:
    assert offset_commit_value_version(EXPIRING_OFFSET_VALUE) == 1
    assert encode_offset_commit_value(EXPIRING_OFFSET_VALUE) == OFFSET_VALUE_V1_BYTES
    assert decode_offset_commit_value(OFFSET_VALUE_V1_BYTES) == EXPIRING_OFFSET_VALUE


def test_offset_value_v4_is_flexible() -> None:
    assert encode_offset_commit_value(OFFSET_VALUE, 4) == OFFSET_VALUE_V4_BYTES
    assert decode_offset_commit_value(OFFSET_VALUE_V4_BYTES) == OFFSET_VALUE


def test_offset_value_v0_and_v2_have_no_epoch_nor_expiry() -> None:
    v0 = encode_offset_commit_value(EXPIRING_OFFSET_VALUE, 0)
    assert v0 == b"\x00\x00" + i64(42) + b"\x00\x04meta" + i64(1_700_000_000_000)
    v2 = encode_offset_commit_value(OFFSET_VALUE, 2)
    assert v2 == b"\x00\x02" + v0[2:]
    expected = OffsetCommitValue(42, "meta", 1_700_000_000_000)
    assert decode_offset_commit_value(v0) == expected
    assert decode_offset_commit_value(v2) == expected


def test_group_value_is_written_at_v3() -> None:
    assert GROUP_METADATA_VALUE_VERSION == 3
    assert encode_group_metadata_value(GROUP_VALUE) == GROUP_VALUE_V3_BYTES
    assert decode_group_metadata_value(GROUP_VALUE_V3_BYTES) == GROUP_VALUE


def test_group_value_v4_is_flexible() -> None:
    assert encode_group_metadata_value(GROUP_VALUE, 4) == GROUP_VALUE_V4_BYTES
    assert decode_group_metadata_value(GROUP_VALUE_V4_BYTES) == GROUP_VALUE


def test_empty_group_v0_has_null_protocol_and_leader() -> None:
    empty = GroupMetadataValue("consumer", 0, None, None)
    assert encode_group_metadata_value(empty, 0) == GROUP_VALUE_V0_EMPTY_BYTES
    assert decode_group_metadata_value(GROUP_VALUE_V0_EMPTY_BYTES) == empty


def test_static_member_instance_id_is_kept_from_v3() -> None:
    static = dataclasses.replace(
        GROUP_VALUE, members=(dataclasses.replace(MEMBER, group_instance_id="inst-1"),)
    )
    encoded = encode_group_metadata_value(static)
    assert b"\x00\x03m-1\x00\x06inst-1\x00\x03cli" in encoded
    assert decode_group_metadata_value(encoded) == static


def test_unknown_tagged_fields_are_skipped() -> None:
    # Tag 5 carrying 3 bytes, in the value's own tagged-field section.
    with_tag = OFFSET_VALUE_V4_BYTES[:-1] + b"\x01\x05\x03abc"
    assert decode_offset_commit_value(with_tag) == OFFSET_VALUE
    member_tagged = GROUP_VALUE_V4_BYTES[:-2] + b"\x01\x00\x01z" + b"\x00"
    assert decode_group_metadata_value(member_tagged) == GROUP_VALUE


# --- round trips -------------------------------------------------------------------------

OFFSET_VALUES = st.builds(
    OffsetCommitValue,
    offset=INT64,
    metadata=TEXT,
    commit_timestamp=INT64,
    leader_epoch=INT32,
    expire_timestamp=INT64,
)
MEMBERS = st.builds(
    MemberMetadata,
    member_id=TEXT,
    client_id=TEXT,
    client_host=TEXT,
    session_timeout=INT32,
    rebalance_timeout=INT32,
    group_instance_id=st.none() | TEXT,
    subscription=BLOB,
    assignment=BLOB,
)
GROUP_VALUES = st.builds(
    GroupMetadataValue,
    protocol_type=TEXT,
    generation=INT32,
    protocol=st.none() | TEXT,
    leader=st.none() | TEXT,
    current_state_timestamp=INT64,
    members=st.lists(MEMBERS, max_size=4).map(tuple),
)


def _as_offset_value_version(value: OffsetCommitValue, version: int) -> OffsetCommitValue:
    """What survives ``version``: Kafka drops the ignorable fields it lacks."""
    return dataclasses.replace(
        value,
        leader_epoch=value.leader_epoch if version >= 3 else -1,
        expire_timestamp=value.expire_timestamp if version == 1 else -1,
    )


def _as_group_value_version(value: GroupMetadataValue, version: int) -> GroupMetadataValue:
    members = tuple(
        dataclasses.replace(
            m,
            rebalance_timeout=m.rebalance_timeout if version >= 1 else -1,
            group_instance_id=m.group_instance_id if version >= 3 else None,
        )
        for m in value.members
    )
    return dataclasses.replace(
        value,
        current_state_timestamp=value.current_state_timestamp if version >= 2 else -1,
        members=members,
    )


@settings(max_examples=200)
@given(group=TEXT, topic=TEXT, partition=INT32, version=st.sampled_from([0, 1]))
def test_offset_key_round_trip(group: str, topic: str, partition: int, version: int) -> None:
    key = OffsetKey(group, topic, partition, version)
    assert decode_key(encode_offset_commit_key(key)) == key


@settings(max_examples=200)
@given(group=TEXT)
def test_group_key_round_trip(group: str) -> None:
    assert decode_key(encode_group_metadata_key(GroupMetadataKey(group))) == GroupMetadataKey(group)


@settings(max_examples=200)
@given(value=OFFSET_VALUES, version=st.integers(0, 4))
def test_offset_value_round_trip(value: OffsetCommitValue, version: int) -> None:
    encoded = encode_offset_commit_value(value, version)
    assert encoded[:2] == i16(version)
    assert decode_offset_commit_value(encoded) == _as_offset_value_version(value, version)


@settings(max_examples=200)
@given(value=GROUP_VALUES, version=st.integers(0, 4))
def test_group_value_round_trip(value: GroupMetadataValue, version: int) -> None:
    encoded = encode_group_metadata_value(value, version)
    assert encoded[:2] == i16(version)
    assert decode_group_metadata_value(encoded) == _as_group_value_version(value, version)


# --- bad input ---------------------------------------------------------------------------

RECORDS = [
    pytest.param(decode_key, OFFSET_KEY_BYTES, id="offset-key"),
    pytest.param(decode_key, GROUP_KEY_BYTES, id="group-key"),
    pytest.param(decode_offset_commit_value, OFFSET_VALUE_V1_BYTES, id="offset-v1"),
    pytest.param(decode_offset_commit_value, OFFSET_VALUE_V3_BYTES, id="offset-v3"),
    pytest.param(decode_offset_commit_value, OFFSET_VALUE_V4_BYTES, id="offset-v4"),
    pytest.param(decode_group_metadata_value, GROUP_VALUE_V3_BYTES, id="group-v3"),
    pytest.param(decode_group_metadata_value, GROUP_VALUE_V4_BYTES, id="group-v4"),
]


@pytest.mark.parametrize(("decode", "data"), RECORDS)
def test_every_truncation_is_a_clear_error(decode: Callable[[bytes], object], data: bytes) -> None:
    for n in range(len(data)):
        with pytest.raises(CoordinatorRecordError):
            decode(data[:n])


def test_truncation_error_names_the_field() -> None:
    with pytest.raises(CoordinatorRecordError, match="truncated: partition needs 4 bytes"):
        decode_key(OFFSET_KEY_BYTES[:-1])


@pytest.mark.parametrize(("decode", "data"), RECORDS)
def test_trailing_bytes_are_refused(decode: Callable[[bytes], object], data: bytes) -> None:
    with pytest.raises(CoordinatorRecordError, match="trailing"):
        decode(data + b"\x00")


def test_unknown_versions_are_refused() -> None:
    with pytest.raises(UnknownRecordVersionError, match="key version 3"):
        decode_key(b"\x00\x03" + GROUP_KEY_BYTES[2:])
    with pytest.raises(UnknownRecordVersionError, match="OffsetCommitValue version 5"):
        decode_offset_commit_value(b"\x00\x05" + OFFSET_VALUE_V3_BYTES[2:])
    with pytest.raises(UnknownRecordVersionError, match="GroupMetadataValue version -1"):
        decode_group_metadata_value(b"\xff\xff" + GROUP_VALUE_V3_BYTES[2:])
    with pytest.raises(ValueError):
        encode_offset_commit_value(OFFSET_VALUE, 5)
    with pytest.raises(ValueError):
        encode_offset_commit_key(OffsetKey("g", "t", 0, 2))


def test_null_in_a_non_nullable_field_is_refused() -> None:
    with pytest.raises(CoordinatorRecordError, match="non-nullable group is null"):
        decode_key(b"\x00\x02\xff\xff")
    with pytest.raises(CoordinatorRecordError, match="non-nullable protocolType"):
        decode_group_metadata_value(b"\x00\x04\x00")


def test_invalid_utf8_is_refused() -> None:
    with pytest.raises(CoordinatorRecordError, match="not UTF-8"):
        decode_key(b"\x00\x02\x00\x01\xff")


def test_huge_member_count_is_refused_without_allocating() -> None:
    head = GROUP_VALUE_V0_EMPTY_BYTES[:-4]
    with pytest.raises(CoordinatorRecordError, match="claims 2147483647 elements"):
        decode_group_metadata_value(head + i32(0x7FFFFFFF))


def test_out_of_range_values_are_refused_when_encoding() -> None:
    with pytest.raises(ValueError, match="int32"):
        encode_offset_commit_key(OffsetKey("g", "t", 1 << 31))
    with pytest.raises(ValueError, match="int64"):
        encode_offset_commit_value(OffsetCommitValue(1 << 63))
    with pytest.raises(ValueError, match="longer than 32767"):
        encode_group_metadata_key(GroupMetadataKey("x" * 32768))


# --- group -> partition ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("s", "expected"),
    [
        ("", 0),
        ("a", 97),
        # g r o u p 1 = 103 114 111 117 112 49: ((((103*31+114)*31+111)*31+117)*31+112)*31+49
        # = 3057506706, as int32: 3057506706 - 2**32.
        ("group1", 3057506706 - (1 << 32)),
        ("\u00e9", 0xE9),  # one UTF-16 code unit
        # U+1F600 is the surrogate pair D83D DE00 in UTF-16: 0xD83D*31 + 0xDE00.
        ("\U0001f600", 0xD83D * 31 + 0xDE00),
        ("polygenelubricants", -(1 << 31)),  # the classic Integer.MIN_VALUE hash
    ],
)
def test_java_string_hash_code(s: str, expected: int) -> None:
    assert java_string_hash_code(s) == expected


def test_partition_for_uses_kafka_utils_abs() -> None:
    assert partition_for("", 50) == 0
    assert partition_for("a", 50) == 97 % 50
    # A negative hash: Math.abs, not n & 0x7fffffff (that would give 8 here).
    assert (1 << 32) - 3057506706 == 1237460590
    assert partition_for("group1", 50) == 1237460590 % 50 == 40
    assert partition_for("polygenelubricants", 7) == 0  # Utils.abs(MIN_VALUE) is 0


@settings(max_examples=200)
@given(group=st.text(), n=st.integers(1, 1000))
def test_partition_for_is_in_range(group: str, n: int) -> None:
    assert 0 <= partition_for(group, n) < n


def test_partition_for_refuses_no_partitions() -> None:
    with pytest.raises(ValueError):
        partition_for("g", 0)
