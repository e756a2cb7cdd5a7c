"""Pure parts of ``franz reassign-partitions``: Kafka's JSON formats, checks and the
rack-unaware replica assignment."""

from __future__ import annotations

import json
import random

import pytest

from franz.admin.options import ToolError
from franz.cli.tools.reassign_partitions import (
    assign_replicas_to_brokers,
    format_reassignment_json,
    parse_broker_list,
    parse_reassignment_json,
    parse_topics_json,
    status_lines,
)


def test_reassignment_json_round_trip_sorted_by_topic_then_partition() -> None:
    text = format_reassignment_json({("b", 0): [0], ("a", 10): [1, 0], ("a", 2): [0, 1]})
    assert text == (
        '{"version":1,"partitions":['
        '{"topic":"a","partition":2,"replicas":[0,1],"log_dirs":["any","any"]},'
        '{"topic":"a","partition":10,"replicas":[1,0],"log_dirs":["any","any"]},'
        '{"topic":"b","partition":0,"replicas":[0],"log_dirs":["any"]}]}'
    )
    assert parse_reassignment_json(text) == {("a", 2): [0, 1], ("a", 10): [1, 0], ("b", 0): [0]}


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({"partitions": []}, "Partition reassignment list cannot be empty"),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": []}]}, "cannot be empty"),
        ({"version": 2, "partitions": []}, "Not supported version field value 2"),
        (
            {"partitions": [{"topic": "t", "partition": 0, "replicas": [1]}] * 2},
            "duplicate topic partitions: t-0",
        ),
        (
            {"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]},
            "may not contain duplicate entries: t-0 contains multiple entries for 1",
        ),
        (
            {"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": []}]},
            "Size of replicas list [1] is different from size of log dirs list []",
        ),
    ],
)
def test_reassignment_json_checks(plan: object, message: str) -> None:
    with pytest.raises(ToolError) as info:
        parse_reassignment_json(json.dumps(plan))
    assert message in str(info.value)


def test_topics_json_and_broker_list() -> None:
    assert parse_topics_json('{"topics": [{"topic": "a"}, {"topic": "b"}], "version": 1}') == [
        "a",
        "b",
    ]
    with pytest.raises(ToolError, match=r"duplicate entries: \[a\]"):
        parse_topics_json('{"topics": [{"topic": "a"}, {"topic": "a"}]}')
    assert parse_broker_list("2,0,1") == [2, 0, 1]
    with pytest.raises(ToolError, match=r"Broker list contains duplicate entries: \[1\]"):
        parse_broker_list("1,1")


def test_assignment_spreads_leaders_and_followers() -> None:
    for seed in range(20):
        out = assign_replicas_to_brokers([5, 1, 3], 6, 2, random.Random(seed))
        assert sorted(out) == list(range(6))
        assert all(len(set(r)) == 2 and set(r) <= {1, 3, 5} for r in out.values())
        leaders = [r[0] for r in out.values()]
        assert sorted(leaders) == [1, 1, 3, 3, 5, 5]  # consecutive partitions, rotating leader
    assert assign_replicas_to_brokers([0], 3, 1) == {0: [0], 1: [0], 2: [0]}
    with pytest.raises(
        ToolError, match=r"Replication factor: 2 larger than available brokers: 1\."
    ):
        assign_replicas_to_brokers([0], 1, 2)


def test_status_lines() -> None:
    assert status_lines({("t", 1): [0], ("t", 0): [2, 0]}, {("t", 0): [0], ("t", 1): [0]}) == [
        "Status of partition reassignment:",
        "There is no active reassignment of partition t-0, but replica set is 0 rather than 2,0.",
        "Reassignment of partition t-1 is completed.",
    ]
