"""IncrementalAlterConfigs' operations on a topic's overrides (``apply_operations``)."""

from __future__ import annotations

import pytest

from franz.broker.handlers.incremental_alter_configs import OpType, apply_operations
from franz.errors import InvalidConfigurationError

SET, DELETE, APPEND, SUBTRACT = OpType.SET, OpType.DELETE, OpType.APPEND, OpType.SUBTRACT


@pytest.fixture
def topics(node):
    node.topics.create_topic("t", 1, 1, {"retention.ms": "5000"})
    return node.topics


def test_set_and_delete(topics):
    assert apply_operations(topics, "t", {"retention.ms": "5000"}, [("segment.ms", SET, "9")]) == {
        "retention.ms": "5000",
        "segment.ms": "9",
    }
    assert (
        apply_operations(topics, "t", {"retention.ms": "5000"}, [("retention.ms", DELETE, None)])
        == {}
    )
    # Deleting an override that is not set changes nothing.
    assert apply_operations(topics, "t", {}, [("segment.ms", DELETE, None)]) == {}


def test_append_starts_from_the_effective_value_and_skips_present_values(topics):
    # No override: the effective cleanup.policy is the default, "delete".
    result = apply_operations(
        topics, "t", {}, [("cleanup.policy", APPEND, "compact,delete,compact")]
    )
    assert result == {"cleanup.policy": "delete,compact"}
    result = apply_operations(
        topics, "t", {"cleanup.policy": "compact"}, [("cleanup.policy", APPEND, "delete")]
    )
    assert result == {"cleanup.policy": "compact,delete"}


def test_append_uses_the_broker_default(cluster):
    cluster.overrides = {"log.cleanup.policy": "compact"}
    node = cluster.start()
    node.topics.create_topic("t", 1, 1)
    result = apply_operations(node.topics, "t", {}, [("cleanup.policy", APPEND, "delete")])
    assert result == {"cleanup.policy": "compact,delete"}


def test_subtract_removes_every_listed_value(topics):
    result = apply_operations(
        topics,
        "t",
        {"follower.replication.throttled.replicas": "0:0,1:0,2:0"},
        [("follower.replication.throttled.replicas", SUBTRACT, "1:0, 2:0")],
    )
    assert result == {"follower.replication.throttled.replicas": "0:0"}
    result = apply_operations(topics, "t", {}, [("cleanup.policy", SUBTRACT, "delete")])
    assert result == {"cleanup.policy": ""}


@pytest.mark.parametrize("op", [APPEND, SUBTRACT])
def test_append_and_subtract_need_a_list_config(topics, op):
    with pytest.raises(InvalidConfigurationError, match=f"Can't {op.name} to key retention.ms"):
        apply_operations(topics, "t", {}, [("retention.ms", op, "1")])
    with pytest.raises(InvalidConfigurationError, match="Unknown topic config name: nope"):
        apply_operations(topics, "t", {}, [("nope", op, "1")])
