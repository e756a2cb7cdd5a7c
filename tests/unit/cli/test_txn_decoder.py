"""``franz.cli.tools.txn_decoder``: ``__transaction_state`` records and ``.txnindex`` entries
as Kafka 3.9's ``kafka-dump-log.sh`` prints them (compared with Kafka's own tool on Kafka's
files in ``tests/reference/test_transactions_tool.py``)."""

from __future__ import annotations

import io
import struct
from pathlib import Path

from franz.cli.tools.txn_decoder import (
    dump_txn_index,
    parse_transaction_log_record,
    scala_hash_set_order,
)
from franz.coordinator.transaction.log_schema import (
    TransactionLogValue,
    encode_key,
    encode_value,
)
from franz.coordinator.transaction.states import TransactionState
from franz.storage.index.txn_index import AbortedTxn, TransactionIndex


def _value(
    state: TransactionState, partitions: tuple[tuple[str, tuple[int, ...]], ...] | None
) -> bytes:
    return encode_value(
        TransactionLogValue(4000, 2, 60000, state, partitions, 1700000000123, 1700000000000)
    )


def test_a_value_prints_as_kafkas_transaction_metadata() -> None:
    key, payload = parse_transaction_log_record(
        encode_key("my-txn"), _value(TransactionState.ONGOING, (("t", (0,)),))
    )
    assert key == "transaction_metadata::transactionalId=my-txn"
    assert payload == (
        "producerId:4000,producerEpoch:2,state=Ongoing,partitions=[t-0],"
        "txnLastUpdateTimestamp=1700000000123,txnTimeoutMs=60000"
    )


def test_an_empty_state_and_a_tombstone() -> None:
    _, payload = parse_transaction_log_record(encode_key("x"), _value(TransactionState.EMPTY, None))
    assert payload is not None and "state=Empty,partitions=[]," in payload
    assert parse_transaction_log_record(encode_key("x"), None) == (
        "transaction_metadata::transactionalId=x",
        "<DELETE>",
    )


def test_an_unknown_key_version_has_no_payload() -> None:
    key = struct.pack(">h", 1) + encode_key("x")[2:]
    assert parse_transaction_log_record(key, b"anything") == ("unknown::version=1", None)


def test_partitions_iterate_as_a_scala_mutable_hash_set() -> None:
    # TopicPartition.hashCode = 31 * (31 + p) + "t".hashCode() (116) = 1077 + 31 p; the
    # improved hash equals it (below 2^16), bucket = hash & 15: p0 5, p1 4, p2 3, p3 2.
    assert scala_hash_set_order([[("t", p) for p in range(4)]]) == [
        ("t", 3), ("t", 2), ("t", 1), ("t", 0)
    ]  # fmt: skip
    # Same bucket (p0 and p16 differ by 496 = 31 * 16): ascending hash within the bucket,
    # whatever the insertion order.
    assert scala_hash_set_order([[("t", 16), ("t", 0)]]) == [("t", 0), ("t", 16)]


def test_txn_index_lines(tmp_path: Path) -> None:
    path = tmp_path / "00000000000000000010.txnindex"
    index = TransactionIndex(10, path)
    index.append(AbortedTxn(7, 10, 12, 13))
    index.append(AbortedTxn(8, 11, 15, 16))
    out = io.StringIO()
    dump_txn_index(path, 10, out)
    assert out.getvalue().splitlines() == [
        "version: 0 producerId: 7 firstOffset: 10 lastOffset: 12 lastStableOffset: 13",
        "version: 0 producerId: 8 firstOffset: 11 lastOffset: 15 lastStableOffset: 16",
    ]
