"""Pure parts of ``franz reassign-partitions`` (``franz.admin.reassignment``): Kafka 3.9's
JSON formats and checks, the rack-unaware assignment, the move map and throttle values of
``ReassignPartitionsCommand``, and the texts it prints."""

from __future__ import annotations

import json
import random

import pytest

from franz.admin.options import ToolError
from franz.admin.reassignment import (
    LogDirMove,
    Ongoing,
    PartitionState,
    assign_replicas_to_brokers,
    execute_checks,
    follower_throttles,
    format_reassignment_json,
    leader_throttles,
    log_dir_move_lines,
    parse_broker_list,
    parse_reassignment_json,
    parse_topics_json,
    partition_state_lines,
    proposed_move_map,
    reassigning_brokers,
    reassignments_text,
)


def test_reassignment_json_round_trip_sorted_by_topic_then_partition() -> None:
    text = format_reassignment_json({("b", 0): [0], ("a", 10): [1, 0], ("a", 2): [0, 1]})
    assert text == (
        '{"version":1,"partitions":['
        '{"topic":"a","partition":2,"replicas":[0,1],"log_dirs":["any","any"]},'
        '{"topic":"a","partition":10,"replicas":[1,0],"log_dirs":["any","any"]},'
        '{"topic":"b","partition":0,"replicas":[0],"log_dirs":["any"]}]}'
    )
    plan = parse_reassignment_json(text)
    assert plan.targets() == {("a", 2): [0, 1], ("a", 10): [1, 0], ("b", 0): [0]}
    assert plan.log_dirs == {}


def test_log_dirs_other_than_any_name_replicas() -> None:
    entry = {"topic": "t", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "/d"]}
    text = json.dumps({"partitions": [entry]})
    plan = parse_reassignment_json(text)
    assert plan.log_dirs == {("t", 0, 2): "/d"}
    assert format_reassignment_json(plan.targets(), plan.log_dirs) == (
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],'
        '"log_dirs":["any","/d"]}]}'
    )


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({"partitions": []}, "Partition reassignment list cannot be empty"),
        ({"partitions": [{"topic": "t", "partition": 0, "replicas": []}]}, "cannot be empty"),
        (
            {"partitions": [{"topic": "t", "partition": 0, "replicas": [1]}] * 2},
            "duplicate topic partitions: t-0",
        ),
        (
            {"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]},
            "may not contain duplicate entries: t-0 contains multiple entries for 1",
        ),
    ],
)
def test_execute_checks(plan: object, message: str) -> None:
    parsed = parse_reassignment_json(json.dumps(plan))  # --verify / --cancel take these
    with pytest.raises(ToolError) as info:
        execute_checks(parsed)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({"version": 2, "partitions": []}, "Not supported version field value 2"),
        (
            {"partitions": [{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": []}]},
            "Size of replicas list [1] is different from size of log dirs list [] for "
            "partition t-0",
        ),
        ({"partitions": [{"topic": "t", "replicas": [1]}]}, "No such field exists: `partition`"),
    ],
)
def test_reassignment_json_errors(plan: object, message: str) -> None:
    with pytest.raises(ToolError) as info:
        parse_reassignment_json(json.dumps(plan))
    assert message in str(info.value)
    with pytest.raises(ToolError, match="The input string is not a valid JSON"):
        parse_reassignment_json("{")


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


def test_move_map_and_throttles_of_a_fresh_reassignment() -> None:
    """Kafka's ``calculateProposedMoveMap`` and throttle strings: sources are the current
    replicas, destinations the new ones; lists are sorted as strings (a TreeSet)."""
    current = {("t", 0): [1], ("t", 10): [2, 3], ("u", 0): [1, 2]}
    proposed = {("t", 0): [2, 3], ("t", 10): [3, 1], ("u", 0): [1, 2]}
    moves = proposed_move_map({}, proposed, current)
    assert leader_throttles(moves) == {"t": "0:1,10:2,10:3", "u": "0:1,0:2"}
    assert follower_throttles(moves) == {"t": "0:2,0:3,10:1", "u": ""}
    assert reassigning_brokers(moves) == [1, 2, 3]


def test_move_map_keeps_the_sources_of_an_ongoing_reassignment() -> None:
    """With --additional, an ongoing reassignment's sources are its replicas less those being
    added; other ongoing reassignments stay in the map (and get throttled again)."""
    ongoing = {
        ("t", 0): Ongoing((2, 3, 1), adding=(2, 3), removing=(1,)),
        ("v", 0): Ongoing((4, 5), adding=(5,), removing=()),
    }
    moves = proposed_move_map(ongoing, {("t", 0): [3, 4]}, {("t", 0): [2, 3, 1]})
    assert leader_throttles(moves) == {"t": "0:1", "v": "0:4"}
    assert follower_throttles(moves) == {"t": "0:3,0:4", "v": "0:5"}
    assert reassigning_brokers(moves) == [1, 3, 4, 5]
    with pytest.raises(ToolError, match="Trying to reassign a topic partition t-9 with 0"):
        proposed_move_map({}, {("t", 9): [1]}, {})


def test_partition_state_lines() -> None:
    assert partition_state_lines(
        {
            ("t", 1): PartitionState([0], [0], done=True),
            ("t", 0): PartitionState([0], [2, 0], done=True),
            ("s", 3): PartitionState([2, 0, 1], [2, 0], done=False),
        }
    ) == [
        "Status of partition reassignment:",
        "Reassignment of partition s-3 is still in progress.",
        "There is no active reassignment of partition t-0, but replica set is 0 rather than 2,0.",
        "Reassignment of partition t-1 is completed.",
    ]


def test_log_dir_move_lines_sorted_by_broker_then_partition() -> None:
    assert log_dir_move_lines(
        {
            ("t", 0, 2): LogDirMove("completed", "/a", "/a"),
            ("t", 1, 1): LogDirMove("active", "/b", "/a", "/b"),
            ("t", 0, 1): LogDirMove("active", "/b", "/a", "/c"),
            ("s", 0, 1): LogDirMove("cancelled", "/b", "/a"),
            ("s", 1, 3): LogDirMove("missing_log_dir", "/b"),
            ("s", 2, 3): LogDirMove("missing_replica", "/b"),
        }
    ) == [
        "Partition s-0 on broker 1 is not being moved from log dir /a to /b.",
        "Partition t-0 on broker 1 is being moved to log dir /c instead of /b.",
        "Reassignment of replica t-1-1 is still in progress.",
        "Reassignment of replica t-0-2 completed successfully.",
        "Partition s-1 is not found in any live log dir on broker 3. There is likely an "
        "offline log directory on the broker.",
        "Partition s-2 cannot be found in any live log directory on broker 3.",
    ]
    assert not LogDirMove("missing_replica", "/b").done
    assert LogDirMove("cancelled", "/b", "/a").done


def test_reassignments_text() -> None:
    assert reassignments_text({}) == "No partition reassignments found."
    assert reassignments_text(
        {
            ("t", 1): Ongoing((3, 1, 2), adding=(3,), removing=()),
            ("t", 0): Ongoing((2, 3, 1), adding=(2, 3), removing=(1,)),
        }
    ) == (
        "Current partition reassignments:\n"
        "t-0: replicas: 2,3,1. adding: 2,3. removing: 1.\n"
        "t-1: replicas: 3,1,2. adding: 3."
    )
