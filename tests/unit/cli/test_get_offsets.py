"""Pure parts of ``franz get-offsets``: Kafka's GetOffsetShell filters and --time parsing."""

from __future__ import annotations

import pytest

from franz.admin.options import ToolError
from franz.cli.tools.get_offsets import PartitionRule, parse_rules, parse_time


def allowed(rules: list[PartitionRule], topic: str, partitions: range = range(6)) -> list[int]:
    return [p for p in partitions if any(r.allowed(topic, p) for r in rules)]


def test_topic_is_a_full_match_regex_and_partitions_a_set() -> None:
    rules = parse_rules(None, "t.*", "1,3")
    assert allowed(rules, "topic") == [1, 3]
    assert allowed(rules, "xt") == []
    assert allowed(parse_rules(None, None, None), "anything") == list(range(6))
    assert allowed(parse_rules(None, "a,b", None), "b") == list(range(6))  # comma = alternation


def test_topic_partition_rules() -> None:
    rules = parse_rules("t1:1,t2:0-3,t3,t4:5-,t5:-3,:4", None, None)
    assert allowed(rules, "t1") == [1, 4]
    assert allowed(rules, "t2") == [0, 1, 2, 4]  # upper bound excluded
    assert allowed(rules, "t3") == list(range(6))
    assert allowed(rules, "t4") == [4, 5]
    assert allowed(rules, "t5") == [0, 1, 2, 4]
    assert allowed(rules, "other") == [4]


def test_rule_errors() -> None:
    with pytest.raises(ToolError, match="cannot be used with --topic or --partitions"):
        parse_rules("t:1", "t", None)
    with pytest.raises(ToolError, match="Invalid rule specification: t:x"):
        parse_rules("t:x", None, None)
    with pytest.raises(ToolError, match="numeric partition ids, but received: 1,b"):
        parse_rules(None, None, "1,b")


def test_time() -> None:
    assert [parse_time(t) for t in ("latest", "-1", "earliest", "-2", "max-timestamp", "-3")] == [
        -1, -1, -2, -2, -3, -3,
    ]  # fmt: skip
    assert parse_time("1700000000000") == 1_700_000_000_000
    with pytest.raises(ToolError, match=r"Malformed time argument x\. Please use -1 or latest"):
        parse_time("x")
    with pytest.raises(ToolError, match="tiered storage"):
        parse_time("-4")
