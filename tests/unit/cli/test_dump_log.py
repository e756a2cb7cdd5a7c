"""Pure parts of ``franz dump-log-segments``: Kafka 3.9's batch, record and error lines, the
file walk, and the ``--offsets-decoder`` JSON (checked against DumpLogSegmentsTest's
expectations)."""

from __future__ import annotations

import json

import pytest

from franz.admin.options import ToolError
from franz.cli.tools.dump_log import (
    DumpErrors,
    format_batch,
    format_record,
    iter_file_batches,
    offsets_parser,
)
from franz.cli.tools.offsets_decoder import MissingKeyError, parse_offsets_record
from franz.coordinator.group.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from franz.coordinator.group.offsets_schema import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitValue,
    OffsetKey,
    encode_group_metadata_key,
    encode_group_metadata_value,
    encode_offset_commit_key,
    encode_offset_commit_value,
)
from franz.protocol.records import (
    CompressionType,
    Header,
    RecordBatchView,
    build_batch,
    iter_records,
)


def _batch(**kwargs: object) -> RecordBatchView:
    data = build_batch(
        [
            (1_700_000_000_000, b"k", b"value", [Header("h1", b"x"), Header("h2", None)]),
            (1_700_000_000_005, None, b"v2"),
        ],
        **kwargs,  # type: ignore[arg-type]
    )
    return RecordBatchView(bytes(data))


def test_batch_line_has_kafka_fields_in_order() -> None:
    batch = _batch(base_offset=7, partition_leader_epoch=3)
    assert format_batch(batch, 120) == (
        "baseOffset: 7 lastOffset: 8 count: 2 baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 3 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: 120 CreateTime: 1700000000005 "
        f"size: {batch.size_in_bytes} magic: 2 compresscodec: none crc: {batch.crc} isvalid: true"
    )


def test_batch_line_sequences_codec_and_corruption() -> None:
    data = bytearray(
        build_batch(
            [(1, b"a", b"b")] * 3,
            producer_id=42,
            producer_epoch=1,
            base_sequence=2**31 - 2,
            compression=CompressionType.GZIP,
        )
    )
    line = format_batch(RecordBatchView(bytes(data)), 0)
    assert "baseSequence: 2147483646 lastSequence: 0 producerId: 42 producerEpoch: 1" in line
    assert "compresscodec: gzip" in line and line.endswith("isvalid: true")
    data[-1] ^= 0xFF
    assert format_batch(RecordBatchView(bytes(data)), 0).endswith("isvalid: false")


def test_record_lines_metadata_headers_key_and_payload() -> None:
    batch = _batch(base_sequence=10, producer_id=1, producer_epoch=0)
    first, second = list(iter_records(batch))
    assert format_record(batch, first, print_contents=True) == (
        "| offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 5 sequence: 10 "
        "headerKeys: [h1,h2] key: k payload: value"
    )
    assert format_record(batch, second, print_contents=True) == (
        "| offset: 1 CreateTime: 1700000000005 keySize: -1 valueSize: 2 sequence: 11 "
        "headerKeys: [] payload: v2"
    )
    assert format_record(batch, first, print_contents=False).endswith("headerKeys: [h1,h2]")
    assert format_record(batch, first, print_contents=True, skip_metadata=True) == (
        "| key: k payload: value"
    )


def test_control_record_shows_the_end_txn_marker() -> None:
    key = (0).to_bytes(2, "big") + (1).to_bytes(2, "big")  # version 0, COMMIT
    value = (0).to_bytes(2, "big") + (5).to_bytes(4, "big")
    batch = RecordBatchView(
        bytes(build_batch([(1, key, value)], is_control_batch=True, is_transactional=True))
    )
    (record,) = iter_records(batch)
    line = format_record(batch, record, print_contents=True)
    assert line.endswith("headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5")
    assert "isControl: true" in format_batch(batch, 0)


def test_file_walk_stops_at_a_partial_batch_and_refuses_a_tiny_length() -> None:
    one = bytes(build_batch([(1, b"a", b"b")]))
    two = bytes(build_batch([(2, b"c", b"d")], base_offset=1))
    walked = list(iter_file_batches(one + two[:-1], "x.log"))
    assert [b.base_offset for b in walked] == [0]
    assert list(iter_file_batches(one + two[:16], "x.log"))[-1].base_offset == 0
    broken = bytearray(one)
    broken[8:12] = (13).to_bytes(4, "big")
    with pytest.raises(
        ToolError,
        match=r"Found record size 13 smaller than minimum record "
        r"overhead \(14\) in file x.log\.",
    ):
        list(iter_file_batches(bytes(broken), "x.log"))


def test_errors_print_in_kafkas_order() -> None:
    errors = DumpErrors()
    errors.index_mismatches["/a.index"] = [(3, 4), (7, 9)]
    errors.time_mismatches["/a.timeindex"] = [(10, 11)]
    errors.time_out_of_order["/a.timeindex"] = [(10, 12)]
    errors.time_offset_not_found["/a.timeindex"] = [(5, -1)]
    errors.non_consecutive["/a.log"] = [(1, 3)]
    assert list(errors.lines()) == [
        "Mismatches in :/a.index",
        "  Index offset: 7, log offset: 9",
        "  Index offset: 3, log offset: 4",
        "Found timestamp mismatch in :/a.timeindex",
        "  Index timestamp: 10, log timestamp: 11",
        "Found out of order timestamp in :/a.timeindex",
        "  Index timestamp: 10, Previously indexed timestamp: 12",
        "The following indexed offsets are not found in the log.",
        "Indexed offset: 5, found log offset: -1",
        "Non-consecutive offsets in /a.log",
        "  1 is followed by 3",
    ]


# -- --offsets-decoder ---------------------------------------------------------------------------


def test_offset_commit_v3_and_v1() -> None:
    key = encode_offset_commit_key(OffsetKey("g", "t", 0))
    v3 = encode_offset_commit_value(OffsetCommitValue(5, "", 1000, leader_epoch=2), 3)
    assert parse_offsets_record(0, key, v3) == (
        '{"type":"1","data":{"group":"g","topic":"t","partition":0}}',
        '{"version":"3","data":{"offset":5,"leaderEpoch":2,"metadata":"","commitTimestamp":1000}}',
    )
    v1 = encode_offset_commit_value(OffsetCommitValue(5, "m", 1000, expire_timestamp=9), 1)
    assert parse_offsets_record(0, key, v1)[1] == (
        '{"version":"1","data":{"offset":5,"metadata":"m","commitTimestamp":1000,'
        '"expireTimestamp":9}}'
    )
    assert parse_offsets_record(0, key, None)[1] == "<DELETE>"


def test_group_metadata_with_consumer_protocol_is_expanded() -> None:
    # DumpLogSegmentsTest's "Consumer embedded protocol is parsed if possible" (value v4).
    member = MemberMetadata(
        member_id="member",
        client_id="client",
        client_host="host",
        session_timeout=100,
        rebalance_timeout=1000,
        group_instance_id="instance",
        subscription=encode_subscription(
            Subscription(("foo",), None, (("foo", (0,)),), 0, "rack", 3)
        ),
        assignment=encode_assignment(Assignment((("foo", (0,)),), None, 3)),
    )
    value = GroupMetadataValue("consumer", 10, "range", "member", -1, (member,))
    key, payload = parse_offsets_record(
        0,
        encode_group_metadata_key(GroupMetadataKey("group")),
        encode_group_metadata_value(value, 4),
    )
    assert key == '{"type":"2","data":{"group":"group"}}'
    assert payload == (
        '{"version":"4","data":{"protocolType":"consumer","generation":10,"protocol":"range",'
        '"leader":"member","currentStateTimestamp":-1,"members":[{"memberId":"member",'
        '"groupInstanceId":"instance","clientId":"client","clientHost":"host",'
        '"rebalanceTimeout":1000,"sessionTimeout":100,"subscription":{"topics":["foo"],'
        '"userData":null,"ownedPartitions":[{"topic":"foo","partitions":[0]}],'
        '"generationId":0,"rackId":"rack"},"assignment":{"assignedPartitions":'
        '[{"topic":"foo","partitions":[0]}],"userData":null}}]}}'
    )


def test_malformed_embedded_protocol_stays_base64() -> None:
    member = MemberMetadata(
        "member", "client", "host", 100, 1000, "instance", b"Subscription", b"Assignment"
    )
    value = GroupMetadataValue("consumer", 10, "range", "member", -1, (member,))
    _, payload = parse_offsets_record(
        0,
        encode_group_metadata_key(GroupMetadataKey("group")),
        encode_group_metadata_value(value, 4),
    )
    assert payload is not None
    data = json.loads(payload)["data"]["members"][0]
    assert data["subscription"] == "U3Vic2NyaXB0aW9u"
    assert data["assignment"] == "QXNzaWdubWVudA=="


def test_unknown_and_broken_records_are_reported_in_the_key() -> None:
    unknown = (32767).to_bytes(2, "big") + b"\x00\x01g"
    assert parse_offsets_record(4, unknown, b"") == (
        "Unknown record type 32767 at offset 4, skipping.",
        None,
    )
    key = encode_offset_commit_key(OffsetKey("g", "t", 0))
    text, payload = parse_offsets_record(6, key, b"\x00\x03\x00")
    assert text is not None and text.startswith("Error at offset 6, skipping. ")
    assert payload is None
    with pytest.raises(MissingKeyError, match="message had a missing key"):
        parse_offsets_record(2, None, b"x")


def test_offsets_parser_reads_a_record() -> None:
    key = encode_offset_commit_key(OffsetKey("g", "t", 1))
    value = encode_offset_commit_value(OffsetCommitValue(9, "", 5), 3)
    batch = RecordBatchView(bytes(build_batch([(5, key, value)])))
    (record,) = iter_records(batch)
    line = format_record(batch, record, print_contents=True, parser=offsets_parser)
    assert line.endswith(
        'key: {"type":"1","data":{"group":"g","topic":"t","partition":1}} payload: '
        '{"version":"3","data":{"offset":9,"leaderEpoch":-1,"metadata":"","commitTimestamp":5}}'
    )
