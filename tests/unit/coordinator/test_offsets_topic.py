"""``__consumer_offsets`` records as the coordinator writes them, replayed in offset order."""

from __future__ import annotations

from franz.coordinator.group.offsets_schema import (
    GroupMetadataValue,
    MemberMetadata,
    decode_key,
    decode_offset_commit_value,
)
from franz.coordinator.group.offsets_topic import (
    LoadedPartition,
    OffsetAndMetadata,
    encode_records,
    group_metadata_record,
    group_tombstone,
    offset_commit_record,
    offset_commit_records,
    offset_tombstone,
    replay,
)
from franz.protocol.records.batch import RecordBatchView, iter_batches
from franz.protocol.records.compression import CompressionType
from franz.protocol.records.inflated import iter_records


def _batches(*record_lists: list[tuple[bytes, bytes | None]]) -> list[RecordBatchView]:
    views = []
    base = 0
    for records in record_lists:
        batch = encode_records(records, 1_700_000_000_000, CompressionType.LZ4)
        view = RecordBatchView(batch)
        view.set_base_offset(base)
        base = view.next_offset
        views.append(view)
    return views


def test_commit_record_is_kafka_v1_key_and_v3_value() -> None:
    om = OffsetAndMetadata(42, leader_epoch=7, metadata="m", commit_timestamp_ms=1000)
    key, value = offset_commit_record("g", ("t", 3), om)
    assert key[:2] == b"\x00\x01"  # OffsetCommitKey v1
    assert value is not None and value[:2] == b"\x00\x03"  # OffsetCommitValue v3
    decoded = decode_offset_commit_value(value)
    assert (decoded.offset, decoded.leader_epoch, decoded.metadata) == (42, 7, "m")
    assert decode_key(key).group == "g"


def test_explicit_expiry_is_written_as_value_v1() -> None:
    om = OffsetAndMetadata(1, commit_timestamp_ms=1000, expire_timestamp_ms=5000)
    _, value = offset_commit_record("g", ("t", 0), om)
    assert value is not None and value[:2] == b"\x00\x01"
    assert OffsetAndMetadata.from_value(decode_offset_commit_value(value)) == OffsetAndMetadata(
        1, leader_epoch=-1, metadata="", commit_timestamp_ms=1000, expire_timestamp_ms=5000
    )


def test_batch_is_valid_and_holds_every_record() -> None:
    records = [offset_commit_record("g", ("t", p), OffsetAndMetadata(p)) for p in range(5)]
    batch = encode_records(records, 123)
    views = list(iter_batches(batch))  # validates the CRC
    assert len(views) == 1
    got = [(r.key, r.value, r.timestamp) for r in iter_records(views[0])]
    assert got == [(k, v, 123) for k, v in records]


def test_replay_keeps_the_last_record_per_key_and_honours_tombstones() -> None:
    member = MemberMetadata("m1", "client", "/127.0.0.1", 10000, 30000, None, b"sub", b"asg")
    value = GroupMetadataValue("consumer", 3, "range", "m1", 99, (member,))
    views = _batches(
        [offset_commit_record("g1", ("t", 0), OffsetAndMetadata(5))],
        [
            offset_commit_record("g1", ("t", 0), OffsetAndMetadata(9, metadata="x")),
            offset_commit_record("g1", ("t", 1), OffsetAndMetadata(4)),
            offset_commit_record("g2", ("u", 0), OffsetAndMetadata(1)),
        ],
        [group_metadata_record("g1", value), offset_tombstone("g1", ("t", 1))],
        [group_metadata_record("g2", value), group_tombstone("g2")],
    )
    loaded = replay(views)
    assert loaded.offsets["g1"] == {("t", 0): OffsetAndMetadata(9, metadata="x")}
    assert loaded.offsets["g2"] == {("u", 0): OffsetAndMetadata(1)}
    assert loaded.groups == {"g1": value}
    assert loaded.deleted_groups == {"g2"}
    assert loaded.records == 8 and loaded.skipped == 0


def test_unreadable_records_are_skipped_not_fatal() -> None:
    loaded = LoadedPartition()
    loaded.apply(b"\x00\x09garbage", b"x")
    loaded.apply(None, b"x")
    loaded.apply(*offset_commit_record("g", ("t", 0), OffsetAndMetadata(3)))
    assert loaded.skipped == 2
    assert loaded.offsets == {"g": {("t", 0): OffsetAndMetadata(3)}}


def test_the_batched_commit_encoder_is_byte_identical_to_the_schema_encoders() -> None:
    items = [
        (("t", 0), OffsetAndMetadata(5, 2, "meta", 1000)),
        (("t", 1), OffsetAndMetadata(2**40, -1, "", 1001)),
        (("ü-topic", 7), OffsetAndMetadata(0, 9, "é" * 100, -1)),
        (
            ("t", 2),
            OffsetAndMetadata(1, metadata="x", commit_timestamp_ms=5, expire_timestamp_ms=9),
        ),
    ]
    assert offset_commit_records("grøup", items) == [
        offset_commit_record("grøup", tp, om) for tp, om in items
    ]
