"""``franz.config.quota``: the throttled-replica lists (Kafka's
``ThrottledReplicaListValidator`` and ``TopicConfigHandler.parseThrottledPartitions``) and the
broker quota keys."""

from __future__ import annotations

import pytest

from franz.config.defs import LONG_MAX
from franz.config.quota import (
    ALL_REPLICAS,
    replication_quota_bound,
    throttled_partitions,
    validate_throttled_replicas,
)
from franz.config.topic import LogConfig
from franz.errors import InvalidConfigurationError

NAME = "leader.replication.throttled.replicas"


@pytest.mark.parametrize("value", [[], ["*"], ["0:1"], ["0:1", "12:3"], ["0:1", ""], [" 0:1 "]])
def test_valid_lists(value):
    validate_throttled_replicas(NAME, value)


@pytest.mark.parametrize("value", [["a"], ["0"], ["0:1", "*"], ["0:-1"], ["*:1"], ["0:1:2"]])
def test_invalid_lists(value):
    with pytest.raises(InvalidConfigurationError) as info:
        validate_throttled_replicas(NAME, value)
    assert str(info.value) == (
        f"Invalid value [{', '.join(value)}] for configuration {NAME}: {NAME} must be the "
        "literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )


def test_topic_config_validates_the_lists():
    with pytest.raises(InvalidConfigurationError, match="must be the literal"):
        LogConfig().with_overrides({"follower.replication.throttled.replicas": "0:1,x"})
    config = LogConfig().with_overrides({NAME: "0:1, 1:2"})
    assert config.leader_replication_throttled_replicas == ("0:1", "1:2")


def test_partitions_of_this_broker():
    assert throttled_partitions(("0:1", "1:2", "2:1"), 1) == frozenset({0, 2})
    assert throttled_partitions(("0:1", "1:2"), 3) == frozenset()
    assert throttled_partitions((), 1) == frozenset()
    assert throttled_partitions(("*",), 1) is ALL_REPLICAS
    assert 12345 in ALL_REPLICAS


def test_bound_per_broker_then_default_then_unbounded():
    name = "follower.replication.throttled.rate"
    assert replication_quota_bound(name, {name: "10"}, {name: "20"}) == 10
    assert replication_quota_bound(name, {}, {name: "20"}) == 20
    assert replication_quota_bound(name, {}, {}) == LONG_MAX
