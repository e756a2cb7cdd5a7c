"""The embedded controller (``franz.controller.shell.local.LocalController``, driven by
``TopicManager``) keeps the metadata cache in step with topics, partitions, configs and failed
log dirs, and the partition states in the local store."""

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
    node.topics.log_dir_failed()  # the broker's on_log_dir_failure hook
    state = node.topics.metadata_cache.partition_info("orders", 0)
    assert state is not None
    assert state.leader == -1 and state.offline_replicas == (0,)
    # Kafka's controller takes the offline replica out as leader with a new leader epoch
    # (``removeReplicasFromIsr``: ``newLeaderAndIsr``); the ISR of one is kept.
    assert state.isr == (0,) and state.leader_epoch == 1


def test_restart_keeps_leader_epoch_zero_and_stores_the_partition_states(
    cluster: Cluster,
) -> None:
    first = cluster.start()
    first.topics.create_topic("orders", 2)
    stored = first.topics.store.partition_states()  # type: ignore[attr-defined]
    assert {tp: (s.leader, s.leader_epoch, s.isr) for tp, s in stored.items()} == {
        ("orders", 0): (0, 0, (0,)),
        ("orders", 1): (0, 0, (0,)),
    }
    cluster.stop()
    for _ in range(2):
        node = cluster.start()
        cache = node.topics.metadata_cache
        assert [(s.leader, s.leader_epoch) for s in cache.partition_states("orders")] == [
            (0, 0),
            (0, 0),
        ]
        partition = node.topics.replica_manager.partitions[TopicPartition("orders", 1)]
        assert (partition.leader_id, partition.leader_epoch) == (0, 0)
        cluster.stop()


def test_deleted_topic_leaves_no_partition_state(node: Node) -> None:
    node.topics.create_topic("orders", 2)
    node.topics.delete_topic("orders")
    assert node.topics.store.partition_states() == {}  # type: ignore[attr-defined]
    node.topics.create_topic("orders", 1)  # the same name again: new partitions, epoch 0
    state = node.topics.metadata_cache.partition_info("orders", 0)
    assert state is not None and (state.leader, state.leader_epoch) == (0, 0)

