"""TransactionIndex (``.txnindex``) on real files: format, append, collect, truncate, reload.

The collect and truncate cases are those of Kafka's ``TransactionIndexTest``.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.storage.files import TXN_INDEX_SUFFIX, segment_file
from franz.storage.index.base import CorruptIndexError
from franz.storage.index.txn_index import (
    ABORTED_TXN_SIZE,
    AbortedTxn,
    TransactionIndex,
    TxnIndexSearchResult,
)

# Kafka's TransactionIndexTest fixture.
TXNS = [
    AbortedTxn(0, 0, 10, 11),
    AbortedTxn(1, 5, 15, 13),
    AbortedTxn(2, 18, 35, 25),
    AbortedTxn(3, 32, 50, 40),
]


@pytest.fixture
def index(tmp_path):
    return TransactionIndex(0, segment_file(tmp_path, 0, TXN_INDEX_SUFFIX))


def _filled(index: TransactionIndex, txns: list[AbortedTxn] = TXNS) -> TransactionIndex:
    for txn in txns:
        index.append(txn)
    return index


def test_entry_is_34_big_endian_bytes():
    txn = AbortedTxn(producer_id=983493, first_offset=137, last_offset=299, last_stable_offset=200)
    encoded = txn.encode()
    assert ABORTED_TXN_SIZE == len(encoded) == 34
    assert encoded == bytes.fromhex(
        "0000"  # version 0
        "00000000000f01c5"  # producerId 983493
        "0000000000000089"  # firstOffset 137
        "000000000000012b"  # lastOffset 299
        "00000000000000c8"  # lastStableOffset 200
    )
    assert AbortedTxn.decode(encoded) == txn
    assert txn.version == 0
    assert txn.as_aborted_transaction() == (983493, 137)


def test_file_is_named_and_created_only_by_the_first_append(index, tmp_path):
    assert index.path == tmp_path / "00000000000000000000.txnindex"
    index.reset()
    index.flush()
    assert not index.path.exists()
    assert index.is_empty()
    assert index.all_aborted_txns() == []
    assert index.collect_aborted_txns(0, 100) == TxnIndexSearchResult([], False)
    index.append(TXNS[0])
    assert index.path.read_bytes() == TXNS[0].encode()
    assert not index.is_empty()


def test_append_writes_entries_in_order(index):
    _filled(index)
    index.flush()
    assert index.path.read_bytes() == b"".join(txn.encode() for txn in TXNS)
    assert index.size_in_bytes == 4 * 34
    assert index.all_aborted_txns() == TXNS
    assert list(index) == TXNS
    assert len(index) == 4


@pytest.mark.parametrize("last_offset", [15, 10])
def test_last_offset_must_increase(index, last_offset):
    index.append(AbortedTxn(1, 5, 15, 13))
    with pytest.raises(ValueError, match="must increase sequentially"):
        index.append(AbortedTxn(0, 0, last_offset, 11))
    assert index.all_aborted_txns() == [AbortedTxn(1, 5, 15, 13)]
    assert index.size_in_bytes == 34


def test_reopened_index_reads_the_file_and_appends_after_it(index):
    _filled(index)
    index.close()
    reopened = TransactionIndex(0, index.path)
    assert reopened.all_aborted_txns() == TXNS
    another = AbortedTxn(3, 50, 60, 55)
    reopened.append(another)
    assert reopened.all_aborted_txns() == [*TXNS, another]
    assert TransactionIndex(0, index.path).all_aborted_txns() == [*TXNS, another]
    # Stricter than Kafka: the check also covers the entries already in the file.
    with pytest.raises(ValueError, match="must increase sequentially"):
        TransactionIndex(0, index.path).append(AbortedTxn(9, 55, 60, 61))


@pytest.mark.parametrize(
    ("fetch_offset", "upper_bound", "expected", "is_complete"),
    [
        (0, 100, TXNS, False),
        (0, 32, TXNS[:3], True),  # stops at TXNS[3] (LSO 40 >= 32), which starts at 32
        (0, 35, TXNS, True),
        (10, 35, TXNS, True),
        (11, 35, TXNS[1:], True),
        (20, 41, TXNS[2:], False),
        (51, 100, [], False),  # all ended before the fetch offset
        (0, 12, TXNS[:2], True),  # TXNS[0]'s LSO 11 < 12; TXNS[1]'s 13 >= 12 ends the search
        (0, 11, TXNS[:1], True),  # the first entry's LSO already reaches the bound
    ],
)
def test_collect_aborted_txns(index, fetch_offset, upper_bound, expected, is_complete):
    _filled(index)
    result = index.collect_aborted_txns(fetch_offset, upper_bound)
    assert result.aborted_transactions == expected
    assert result.is_complete is is_complete


def test_truncate_to_removes_entries_from_the_first_reaching_offset(index):
    txns = [
        AbortedTxn(0, 0, 10, 2),
        AbortedTxn(1, 5, 15, 16),
        AbortedTxn(2, 18, 35, 25),
        AbortedTxn(3, 32, 50, 40),
    ]
    _filled(index, txns)
    index.truncate_to(51)
    assert index.collect_aborted_txns(0, 100).aborted_transactions == txns
    assert index.size_in_bytes == 4 * 34
    index.truncate_to(50)
    assert index.collect_aborted_txns(0, 100).aborted_transactions == txns[:3]
    assert index.size_in_bytes == 3 * 34
    # The new last entry is the check's reference: 35 is taken, 36 is not.
    with pytest.raises(ValueError, match="must increase sequentially"):
        index.append(AbortedTxn(4, 30, 35, 36))
    index.append(AbortedTxn(4, 30, 36, 37))
    index.truncate_to(11)
    assert TransactionIndex(0, index.path).all_aborted_txns() == txns[:1]
    index.truncate_to(0)
    assert index.size_in_bytes == 0
    index.append(AbortedTxn(5, 0, 1, 2))  # nothing left to compare with
    index.reset()
    assert index.collect_aborted_txns(0, 100).aborted_transactions == []
    assert index.path.exists() and index.size_in_bytes == 0
    index.append(AbortedTxn(6, 0, 1, 2))
    assert TransactionIndex(0, index.path).all_aborted_txns() == [AbortedTxn(6, 0, 1, 2)]


def test_rename_moves_the_file_and_later_appends_follow(index, tmp_path):
    index.append(AbortedTxn(0, 0, 10, 2))
    renamed = tmp_path / "00000000000000000000.txnindex.deleted"
    index.rename_to(renamed)
    index.append(AbortedTxn(1, 5, 15, 16))
    assert not (tmp_path / "00000000000000000000.txnindex").exists()
    assert [t.first_offset for t in TransactionIndex(0, renamed).all_aborted_txns()] == [0, 5]


def test_delete_reports_whether_the_file_existed(index):
    assert index.delete() is False
    index.append(TXNS[0])
    assert index.delete() is True
    assert not index.path.exists()
    assert index.is_empty()


def test_sanity_check_accepts_a_good_index(index):
    index.sanity_check()  # no file
    _filled(index)
    index.sanity_check()


def test_sanity_check_rejects_entries_below_the_start_offset(index):
    _filled(index)
    # Kafka's testSanityCheck: the same file opened as a segment starting at 100.
    with pytest.raises(CorruptIndexError, match="less than start offset 100"):
        TransactionIndex(100, index.path).sanity_check()
    # Every entry is checked: the smallest lastOffset (10) decides.
    with pytest.raises(CorruptIndexError, match="less than start offset 11"):
        TransactionIndex(11, index.path).sanity_check()
    TransactionIndex(10, index.path).sanity_check()


@pytest.mark.parametrize("extra", [1, 17, 33])
def test_sanity_check_rejects_a_torn_entry(index, extra):
    _filled(index)
    with index.path.open("ab") as f:
        f.write(AbortedTxn(4, 51, 60, 61).encode()[:extra])
    reopened = TransactionIndex(0, index.path)
    with pytest.raises(CorruptIndexError, match="not a multiple of 34"):
        reopened.sanity_check()
    # Reads ignore the partial tail, as Kafka's iterator does.
    assert reopened.all_aborted_txns() == TXNS


def test_unknown_entry_version_is_corrupt(index):
    _filled(index, TXNS[:1])
    with index.path.open("ab") as f:
        f.write(AbortedTxn(1, 5, 15, 13, version=1).encode())
    reopened = TransactionIndex(0, index.path)
    with pytest.raises(CorruptIndexError, match="unexpected aborted transaction version 1"):
        reopened.collect_aborted_txns(0, 100)
    with pytest.raises(CorruptIndexError):
        reopened.sanity_check()


def _oracle(txns: list[AbortedTxn], fetch: int, upper: int) -> tuple[list[AbortedTxn], bool]:
    """The first entry whose LSO reaches the bound ends the search; overlap is a range test."""
    stop = next((i for i, t in enumerate(txns) if t.last_stable_offset >= upper), None)
    scanned = txns if stop is None else txns[: stop + 1]
    overlapping = [t for t in scanned if t.last_offset >= fetch and t.first_offset < upper]
    return overlapping, stop is not None


@st.composite
def aborted_txns(draw: st.DrawFn) -> list[AbortedTxn]:
    out, last = [], 0
    for pid in range(draw(st.integers(0, 20))):
        last += draw(st.integers(1, 30))
        first = last - draw(st.integers(0, 40))
        out.append(AbortedTxn(pid, first, last, last + draw(st.integers(0, 20))))
    return out


@settings(max_examples=60, deadline=None)
@given(
    txns=aborted_txns(),
    probes=st.lists(st.tuples(st.integers(-5, 700), st.integers(0, 20)), max_size=10),
    cut=st.integers(-5, 700),
)
def test_collect_and_truncate_match_the_oracle(tmp_path_factory, txns, probes, cut):
    path = tmp_path_factory.mktemp("txn") / "00000000000000000000.txnindex"
    index = _filled(TransactionIndex(0, path), txns)
    for fetch, width in probes:
        expected, complete = _oracle(txns, fetch, fetch + width)
        assert index.collect_aborted_txns(fetch, fetch + width) == (expected, complete)
    index.truncate_to(cut)
    kept = [t for t in txns if t.last_offset < cut]
    assert index.all_aborted_txns() == kept
    assert TransactionIndex(0, path).all_aborted_txns() == kept
    assert index.size_in_bytes == ABORTED_TXN_SIZE * len(kept)
