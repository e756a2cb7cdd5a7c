"""The embedded controller step: ``TopicManager.publish_metadata`` keeps the metadata cache
in step with topics, partitions, configs and failed log dirs."""

from __future__ import annotations

from franz.storage.files import TopicPartition
from tests.unit.broker.conftest import Cluster, Node


def test_loaded_topics_are_published_at_start(cluster: Cluster) -> None:
    first = cluster.start()
    first.topics.create_topic("orders", 2, configs={"retention.ms": "1000"})
    topic_id = first.topics.get("orders").topic_id  # type: ignore[union-attr]
    cluster.stop()
    cache = cluster.start().topics.metadata_cache
    assert cache.all_topics() == ["orders"]
    assert cache.topic_id("orders") == topic_id
    assert cache.topic_configs("orders") == {"retention.ms": "1000"}
    assert cache.controller_id == 0


def test_created_topic_is_led_by_this_broker(node: Node) -> None:
    node.topics.create_topic("orders", 2)
    cache = node.topics.metadata_cache
    for index, state in enumerate(cache.partition_states("orders")):
        assert state.partition_index == index
        assert (state.leader, state.leader_epoch) == (0, 0)
        assert state.isr == (0,) and state.replicas == (0,) and state.offline_replicas == ()


def test_validate_only_publishes_nothing(node: Node) -> None:
    node.topics.create_topic("orders", 2, validate_only=True)
    assert not node.topics.metadata_cache.contains("orders")


def test_added_partitions_and_configs_are_published(node: Node) -> None:
    node.topics.create_topic("orders", 1)
    node.topics.create_partitions("orders", 3)
    node.topics.set_topic_configs("orders", {"cleanup.policy": "compact"})
    cache = node.topics.metadata_cache
    assert cache.num_partitions("orders") == 3
    assert cache.topic_configs("orders") == {"cleanup.policy": "compact"}


def test_deleted_topic_leaves_the_cache(node: Node) -> None:
    record = node.topics.create_topic("orders", 2)
    node.topics.delete_topic("orders")
    cache = node.topics.metadata_cache
    assert not cache.contains("orders")
    assert cache.topic_name(record.topic_id) is None


def test_failed_log_dir_takes_the_leader_away(node: Node) -> None:
    node.topics.create_topic("orders", 1)
    partition = node.topics.replica_manager.partitions[TopicPartition("orders", 0)]
    node.log_manager.handle_log_dir_failure(partition.log.dir.parent, OSError(5, "EIO"))
    node.topics.publish_metadata()  # the broker's on_log_dir_failure hook
    state = node.topics.metadata_cache.partition_info("orders", 0)
    assert state is not None
    assert state.leader == -1 and state.offline_replicas == (0,)
    assert state.isr == (0,) and state.leader_epoch == 0
