"""Pure parts of ``franz leader-election``: Kafka's election JSON and result lines."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from franz.admin.options import ToolError
from franz.cli.tools.leader_election import parse_election_json, result_lines


def test_election_json() -> None:
    text = '{"partitions": [{"topic": "b", "partition": 1}, {"topic": "a", "partition": 2}]}'
    assert parse_election_json(text) == [("a", 2), ("b", 1)]
    with pytest.raises(ToolError, match='missing "partitions" field'):
        parse_election_json('{"version": 1}')
    twice = '{"partitions": [{"topic": "a", "partition": 0}, {"topic": "a", "partition": 0}]}'
    with pytest.raises(ToolError, match=r"contains duplicate partitions: \[a-0\]"):
        parse_election_json(twice)


def test_result_lines_group_success_noop_and_failures() -> None:
    lines, failures = result_lines(
        "PREFERRED",
        {
            ("t", 1): None,
            ("t", 0): None,
            ("t", 2): KafkaError(84),  # ELECTION_NOT_NEEDED
            ("u", 0): KafkaError(80),  # PREFERRED_LEADER_NOT_AVAILABLE
        },
    )
    assert failures == 1
    assert lines == [
        "Successfully completed leader election (PREFERRED) for partitions t-1, t-0",
        "Valid replica already elected for partitions t-2",
        "Error completing leader election (PREFERRED) for partition: u-0: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: "
        "The preferred leader was not available.",
    ]
    assert result_lines("UNCLEAN", {}) == ([], 0)


def test_result_lines_list_partitions_in_kafkas_hash_set_order() -> None:
    """Kafka 3.9's LeaderElectionCommand printed these (``HashSet<TopicPartition>``)."""
    lines, _ = result_lines("PREFERRED", {("rt-delete", p): KafkaError(84) for p in (0, 1)})
    assert lines == ["Valid replica already elected for partitions rt-delete-1, rt-delete-0"]
