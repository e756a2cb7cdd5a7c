"""Control records: keys, end-transaction-marker values, and the marker batch, byte for byte."""

from __future__ import annotations

import crc32c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.errors import InvalidRecordError
from franz.protocol.records import (
    CompressionType,
    RecordBatchBuilder,
    RecordBatchView,
    TimestampType,
    build_batch,
    iter_batches,
    iter_records,
)
from franz.protocol.records.control import (
    END_TXN_MARKER_BATCH_SIZE,
    ControlRecordType,
    EndTransactionMarker,
    build_end_txn_marker_batch,
    encode_control_record_key,
    parse_control_record_type,
    parse_control_record_type_id,
    read_end_txn_marker,
)

# A COMMIT marker from producer 73 (epoch 13), coordinator epoch 347, at offset 983, leader
# epoch 29, timestamp 1_700_000_000_123 (0x18bcfe5687b), laid out field by field. The CRC-32C
# is the only value not derived by hand; the test below recomputes it. Kafka 3.9.2's
# ``MemoryRecords.withEndTransactionMarker(983L, 1700000000123L, 29, 73L, (short) 13,
# new EndTransactionMarker(COMMIT, 347))`` printed exactly these 78 bytes.
COMMIT_BATCH_FIELDS = [
    "00000000000003d7",  # baseOffset 983
    "00000042",  # batchLength 66 = 78 - 12
    "0000001d",  # partitionLeaderEpoch 29
    "02",  # magic
    "b4026435",  # crc (CRC-32C of the rest)
    "0030",  # attributes: transactional (0x10) + control (0x20), no codec, CreateTime
    "00000000",  # lastOffsetDelta 0
    "0000018bcfe5687b",  # baseTimestamp = the marker's timestamp
    "0000018bcfe5687b",  # maxTimestamp = the same
    "0000000000000049",  # producerId 73
    "000d",  # producerEpoch 13
    "ffffffff",  # baseSequence -1
    "00000001",  # recordsCount 1
    # the record
    "20",  # length 16 (zigzag varint)
    "00",  # attributes
    "00",  # timestampDelta 0
    "00",  # offsetDelta 0
    "08",  # key length 4
    "0000" + "0001",  # key: version 0, type COMMIT (1)
    "0c",  # value length 6
    "0000" + "0000015b",  # value: version 0, coordinatorEpoch 347
    "00",  # headers count 0
]
COMMIT_BATCH = bytes.fromhex("".join(COMMIT_BATCH_FIELDS))

# An ABORT marker as the broker's WriteTxnMarkers path builds it before the log assigns the
# offset and leader epoch: baseOffset 0, partitionLeaderEpoch -1 (Kafka 3.9.2 output too).
ABORT_BATCH = bytes.fromhex(
    "0000000000000000"
    "00000042"
    "ffffffff"
    "02"
    "dfa3a3c9"
    "0030"
    "00000000"
    "0000000000000005"
    "0000000000000005"
    "00000000000003e8"
    "0000"
    "ffffffff"
    "00000001"
    "20000000"
    "08" + "00000000"  # key: version 0, type ABORT (0)
    "0c" + "000000000000"  # value: version 0, coordinatorEpoch 0
    "00"
)


# -- keys -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("control_type", "encoded"),
    [
        (ControlRecordType.ABORT, "00000000"),
        (ControlRecordType.COMMIT, "00000001"),
        (ControlRecordType.LEADER_CHANGE, "00000002"),
        (ControlRecordType.SNAPSHOT_HEADER, "00000003"),
        (ControlRecordType.SNAPSHOT_FOOTER, "00000004"),
        (ControlRecordType.KRAFT_VERSION, "00000005"),
        (ControlRecordType.KRAFT_VOTERS, "00000006"),
    ],
)
def test_control_record_key_is_version_then_type(control_type, encoded):
    key = encode_control_record_key(control_type)
    assert key.hex() == encoded
    assert parse_control_record_type(key) is control_type


def test_unknown_control_type_cannot_be_written():
    with pytest.raises(ValueError, match="UNKNOWN"):
        encode_control_record_key(ControlRecordType.UNKNOWN)


def test_unknown_type_id_parses_as_unknown():
    assert parse_control_record_type(bytes.fromhex("00000007")) is ControlRecordType.UNKNOWN
    assert parse_control_record_type(bytes.fromhex("0000ffff")) is ControlRecordType.UNKNOWN
    assert parse_control_record_type_id(bytes.fromhex("00000007")) == 7


def test_newer_key_version_is_read_as_v0():
    # Kafka logs "unknown control record key version" and reads type at bytes 2-3 anyway;
    # trailing bytes (fields a later version may add) are ignored.
    assert parse_control_record_type(bytes.fromhex("00010001ffff")) is ControlRecordType.COMMIT


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x00"])
def test_short_key_is_invalid_record(key):
    with pytest.raises(InvalidRecordError, match="at least 4 bytes"):
        parse_control_record_type(key)


def test_negative_key_version_is_invalid_record():
    with pytest.raises(InvalidRecordError, match="version"):
        parse_control_record_type(bytes.fromhex("ffff0001"))


# -- end transaction marker values ------------------------------------------------------------


def test_marker_value_is_version_then_coordinator_epoch():
    marker = EndTransactionMarker(ControlRecordType.ABORT, 0x01020304)
    assert marker.serialize_key() == b"\x00\x00\x00\x00"
    assert marker.serialize_value() == b"\x00\x00\x01\x02\x03\x04"
    assert not marker.is_commit
    negative = EndTransactionMarker(ControlRecordType.COMMIT, -1)
    assert negative.serialize_value() == b"\x00\x00\xff\xff\xff\xff"
    assert negative.is_commit


@pytest.mark.parametrize(
    "control_type",
    [ControlRecordType.LEADER_CHANGE, ControlRecordType.UNKNOWN, ControlRecordType.KRAFT_VOTERS],
)
def test_marker_type_must_be_commit_or_abort(control_type):
    with pytest.raises(ValueError, match="end transaction marker"):
        EndTransactionMarker(control_type, 0)
    # The type is checked before the value, as in Kafka's deserializeValue.
    with pytest.raises(ValueError, match="end transaction marker"):
        EndTransactionMarker.deserialize_value(control_type, b"")


def test_marker_value_round_trips_and_ignores_newer_fields():
    marker = EndTransactionMarker.deserialize_value(
        ControlRecordType.COMMIT, bytes.fromhex("0000" + "0000015b")
    )
    assert marker == EndTransactionMarker(ControlRecordType.COMMIT, 347)
    newer = EndTransactionMarker.deserialize_value(
        ControlRecordType.ABORT, bytes.fromhex("0003" + "00000007" + "abcdef")
    )
    assert newer == EndTransactionMarker(ControlRecordType.ABORT, 7)


@pytest.mark.parametrize("value", [None, b"", bytes(5)])
def test_short_marker_value_is_invalid_record(value):
    with pytest.raises(InvalidRecordError, match="at least 6 bytes"):
        EndTransactionMarker.deserialize_value(ControlRecordType.COMMIT, value)


def test_negative_marker_value_version_is_invalid_record():
    with pytest.raises(InvalidRecordError, match="version"):
        EndTransactionMarker.deserialize_value(
            ControlRecordType.ABORT, bytes.fromhex("8000" + "00000001")
        )


# -- the marker batch -------------------------------------------------------------------------


def test_commit_marker_batch_is_byte_exact():
    built = build_end_txn_marker_batch(
        EndTransactionMarker(ControlRecordType.COMMIT, 347),
        producer_id=73,
        producer_epoch=13,
        timestamp=1_700_000_000_123,
        base_offset=983,
        partition_leader_epoch=29,
    )
    assert bytes(built) == COMMIT_BATCH
    assert len(built) == END_TXN_MARKER_BATCH_SIZE
    assert crc32c.crc32c(COMMIT_BATCH[21:]) == int.from_bytes(COMMIT_BATCH[17:21], "big")


def test_abort_marker_batch_defaults_are_the_brokers():
    built = build_end_txn_marker_batch(
        EndTransactionMarker(ControlRecordType.ABORT, 0),
        producer_id=1000,
        producer_epoch=0,
        timestamp=5,
    )
    assert bytes(built) == ABORT_BATCH


def test_marker_batch_parses_with_record_batch_view():
    view = RecordBatchView(COMMIT_BATCH)
    view.validate()
    assert view.is_valid()
    assert view.is_control_batch
    assert view.is_transactional
    assert view.compression_type is CompressionType.NONE
    assert view.timestamp_type == TimestampType.CREATE_TIME
    assert (view.base_offset, view.last_offset, view.records_count) == (983, 983, 1)
    assert (view.producer_id, view.producer_epoch, view.base_sequence) == (73, 13, -1)
    assert view.partition_leader_epoch == 29
    assert view.base_timestamp == view.max_timestamp == 1_700_000_000_123
    assert view.size_in_bytes == END_TXN_MARKER_BATCH_SIZE
    [record] = iter_records(view)
    assert (record.offset, record.timestamp, record.headers) == (983, 1_700_000_000_123, ())
    assert EndTransactionMarker.deserialize(record) == EndTransactionMarker(
        ControlRecordType.COMMIT, 347
    )


def test_marker_batch_survives_the_logs_in_place_patches():
    # The log assigns baseOffset and partitionLeaderEpoch in place: outside the CRC.
    buffer = bytearray(ABORT_BATCH)
    view = RecordBatchView(buffer)
    view.set_base_offset(12_345)
    view.set_partition_leader_epoch(7)
    [patched] = iter_batches(buffer)
    assert (patched.base_offset, patched.partition_leader_epoch) == (12_345, 7)
    marker, timestamp = read_end_txn_marker(patched) or (None, None)
    assert marker == EndTransactionMarker(ControlRecordType.ABORT, 0)
    assert timestamp == 5


def test_read_end_txn_marker_rejects_data_batches_and_other_control_types():
    data = build_batch([(1, b"k", b"v")])
    with pytest.raises(ValueError, match="not a control batch"):
        read_end_txn_marker(RecordBatchView(data))
    leader_change = build_batch(
        [(1, encode_control_record_key(ControlRecordType.LEADER_CHANGE), b"\x00\x00")],
        is_control_batch=True,
    )
    with pytest.raises(ValueError, match="end transaction marker"):
        read_end_txn_marker(RecordBatchView(leader_change))


def test_read_end_txn_marker_of_an_empty_control_batch_is_none():
    # The cleaner may keep a control batch's header without its record (writeEmptyHeader).
    empty = RecordBatchBuilder(is_control_batch=True, is_transactional=True).build(
        last_offset_delta=0, max_timestamp=9
    )
    assert read_end_txn_marker(RecordBatchView(empty)) is None


@settings(max_examples=50, deadline=None)
@given(
    commit=st.booleans(),
    coordinator_epoch=st.integers(-(2**31), 2**31 - 1),
    producer_id=st.integers(0, 2**63 - 1),
    producer_epoch=st.integers(0, 2**15 - 1),
    timestamp=st.integers(0, 2**50),
    base_offset=st.integers(0, 2**62),
    leader_epoch=st.integers(-1, 2**31 - 1),
)
def test_marker_batch_round_trips(
    commit, coordinator_epoch, producer_id, producer_epoch, timestamp, base_offset, leader_epoch
):
    control_type = ControlRecordType.COMMIT if commit else ControlRecordType.ABORT
    marker = EndTransactionMarker(control_type, coordinator_epoch)
    built = build_end_txn_marker_batch(
        marker,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        timestamp=timestamp,
        base_offset=base_offset,
        partition_leader_epoch=leader_epoch,
    )
    assert len(built) == END_TXN_MARKER_BATCH_SIZE
    [view] = iter_batches(built)
    assert view.is_control_batch and view.is_transactional
    assert (view.base_offset, view.partition_leader_epoch) == (base_offset, leader_epoch)
    assert (view.producer_id, view.producer_epoch) == (producer_id, producer_epoch)
    assert read_end_txn_marker(view) == (marker, timestamp)
