"""The topic pages' form parsing and row filtering (``franz.console.topics_forms``)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from franz.console.topics_forms import (
    DEFAULT_PER_PAGE,
    HIGH_WATERMARK,
    FormError,
    Paging,
    filter_topics,
    parse_config_lines,
    parse_int,
    parse_paging,
    parse_record_deletion,
    total_lag,
)


def test_parse_int_accepts_whole_numbers_with_spaces() -> None:
    assert parse_int(" 12 ", "partitions", minimum=1) == 12


@pytest.mark.parametrize("text", ["", "1.5", "three", None])
def test_parse_int_refuses_non_numbers_naming_the_field(text: str | None) -> None:
    with pytest.raises(FormError, match="partitions must be a whole number"):
        parse_int(text, "partitions")


def test_parse_int_refuses_below_minimum() -> None:
    with pytest.raises(FormError, match="replication factor must be at least 1, not 0"):
        parse_int("0", "replication factor", minimum=1)


def test_config_lines_skip_blanks_and_comments_and_keep_equals_in_values() -> None:
    text = "\n# a comment\n cleanup.policy = compact \n\nmessage.timestamp.type=a=b\n"
    assert parse_config_lines(text) == {
        "cleanup.policy": "compact",
        "message.timestamp.type": "a=b",
    }


def test_config_lines_empty_is_no_configs() -> None:
    assert parse_config_lines("") == {}
    assert parse_config_lines(None) == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("retention.ms", "line 1 is not key=value"),
        ("a=1\n=2", "line 2 is not key=value"),
        ("a=1\na=2", "config a is given twice"),
    ],
)
def test_config_lines_refuse_malformed_lines(text: str, message: str) -> None:
    with pytest.raises(FormError, match=message):
        parse_config_lines(text)


def test_record_deletion_all_partitions_up_to_the_high_watermark() -> None:
    assert parse_record_deletion("all", "", [0, 1, 2]) == {
        0: HIGH_WATERMARK,
        1: HIGH_WATERMARK,
        2: HIGH_WATERMARK,
    }
    assert parse_record_deletion("", "ALL", [0]) == {0: -1}


def test_record_deletion_one_partition_before_an_offset() -> None:
    assert parse_record_deletion("1", " 42 ", [0, 1, 2]) == {1: 42}


@pytest.mark.parametrize(
    ("partition", "offset", "message"),
    [
        ("3", "1", "the topic has no partition 3"),
        ("x", "1", "partition must be a whole number"),
        ("0", "-5", "offset must be at least 0"),
        ("0", "soon", "offset must be a whole number"),
    ],
)
def test_record_deletion_refuses_bad_input(partition: str, offset: str, message: str) -> None:
    with pytest.raises(FormError, match=message):
        parse_record_deletion(partition, offset, [0, 1, 2])


@dataclass
class Row:
    name: str


def test_filter_topics_substring_case_insensitive_sorted_internal_hidden() -> None:
    rows = [Row("payments"), Row("Orders"), Row("__consumer_offsets"), Row("orders-dlq")]
    assert [r.name for r in filter_topics(rows, "ORD", False)] == ["Orders", "orders-dlq"]
    assert [r.name for r in filter_topics(rows, "", False)] == [
        "Orders",
        "orders-dlq",
        "payments",
    ]
    assert [r.name for r in filter_topics(rows, "offsets", True)] == ["__consumer_offsets"]
    assert filter_topics(rows, "offsets", False) == []


def test_total_lag_sums_high_watermark_minus_committed_unclamped() -> None:
    assert total_lag({0: 12, 1: 5}, {0: 30, 1: 20, 2: 10}) == 18 + 15
    # A committed offset past the high watermark (the log was truncated) lowers the sum,
    # as Kafka's ConsumerGroupCommand prints a negative LAG.
    assert total_lag({0: 40, 1: 5}, {0: 30, 1: 20}) == -10 + 15


def test_total_lag_unknown_when_a_high_watermark_is() -> None:
    assert total_lag({0: 1, 1: 1}, {0: 5, 1: None}) is None
    assert total_lag({0: 1, 3: 1}, {0: 5}) is None


def test_paging_of_the_topic_list() -> None:
    assert parse_paging(None, None) == Paging(1, DEFAULT_PER_PAGE)
    assert parse_paging("3", "25") == Paging(3, 25)
    assert parse_paging("x", "-4") == Paging(1, DEFAULT_PER_PAGE)  # never fails on a query
    assert parse_paging("0", "ALL") == Paging(1, None)
    assert Paging(1, 100).window(1000) == (0, 100)
    assert Paging(10, 100).window(1000) == (900, 1000)
    assert Paging(11, 100).window(1000) == (900, 1000)  # past the end: the last page
    assert Paging(2, 100).window(150) == (100, 150)
    assert Paging(1, 100).window(0) == (0, 0)
    assert Paging(4, None).window(1000) == (0, 1000)
    assert (Paging(1, 100).pages(1000), Paging(1, 100).pages(1001), Paging(1, 100).pages(0)) == (
        10,
        11,
        1,
    )
    assert Paging(1, None).pages(1000) == 1
