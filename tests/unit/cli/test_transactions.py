"""``franz transactions``' pure formatting: Kafka's ``ToolsUtils.prettyPrintTable`` and the
rows of ``describe`` and ``describe-producers`` (the tool itself is compared with Kafka's in
``tests/reference/test_transactions_tool.py``)."""

from __future__ import annotations

from franz.admin.txn_wire import AbortSpec, ProducerState, millis
from franz.cli.tools.transactions import (
    DESCRIBE_HEADERS,
    describe_rows,
    long_hash,
    pretty_print_table,
    producer_rows,
)


def test_pretty_print_table_pads_every_cell_and_ends_each_with_a_tab() -> None:
    lines = pretty_print_table(("A", "Longer"), [["wide value", "x"], ["b", "yy"]])
    assert lines == ["A         \tLonger\t", "wide value\tx     \t", "b         \tyy    \t"]


def test_pretty_print_table_without_rows_prints_the_header() -> None:
    assert pretty_print_table(("Topic", "Partition"), []) == ["Topic\tPartition\t"]


def test_long_hash_is_javas() -> None:
    assert long_hash(0) == 0
    assert long_hash(4000) == 4000
    assert long_hash(-1) == 0  # 0xffffffff ^ 0xffffffff
    assert long_hash(1 << 32) == 1
    assert long_hash(1 << 31) == -(1 << 31)


def test_producer_rows_print_none_for_no_transaction() -> None:
    rows = producer_rows(
        [ProducerState(7, 0, 4, 1700000000000, -1, -1), ProducerState(8, 2, 0, 5, 3, 12)]
    )
    assert rows == [
        ["7", "0", "-1", "4", "1700000000000", "None"],
        ["8", "2", "3", "0", "5", "12"],
    ]


def test_describe_rows_duration_and_hash_set_order() -> None:
    partitions = [("t", 0), ("t", 1), ("t", 2)]
    [row] = describe_rows("id", 0, 9, 1, "Ongoing", 60000, 1000, partitions, 1500)
    assert len(row) == len(DESCRIBE_HEADERS)
    assert row[:8] == ["0", "id", "9", "1", "Ongoing", "60000", "1000", "500"]
    # TopicPartition.hashCode = 31 * (31 + p) + "t".hashCode() (116): 1077, 1108, 1139 in a
    # 16-bucket HashSet: buckets 5, 4, 3.
    assert row[8] == "t-2,t-1,t-0"
    [idle] = describe_rows("id", 0, 9, 1, "Empty", 60000, -1, [], 1500)
    assert idle[6:] == ["None", "None", ""]


def test_abort_spec_prints_as_kafkas() -> None:
    spec = AbortSpec(("t", 3), 42, 1, 0)
    assert str(spec) == (
        "AbortTransactionSpec(topicPartition=t-3, producerId=42, producerEpoch=1, "
        "coordinatorEpoch=0)"
    )


def test_millis_reads_kios_time_types() -> None:
    import datetime

    assert millis(datetime.timedelta(seconds=60)) == 60000
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    assert millis(epoch + datetime.timedelta(milliseconds=-1)) == -1
    assert millis(5) == 5
