"""MetadataCache: UpdateMetadata's merge rules (Kafka's ``ZkMetadataCache.updateMetadata``)."""

from __future__ import annotations

import uuid

from franz.metadata.cache import (
    LEADER_DURING_DELETE,
    BrokerEndpoint,
    MetadataBroker,
    MetadataCache,
    Node,
    UpdateMetadataPartitionState,
    is_internal_topic,
)

ORDERS = uuid.UUID(int=1)
EVENTS = uuid.UUID(int=2)


def broker(broker_id: int, port: int, rack: str | None = None) -> MetadataBroker:
    return MetadataBroker(broker_id, (BrokerEndpoint("h", port),), rack)


def state(
    topic: str, partition: int, leader: int = 0, epoch: int = 0
) -> UpdateMetadataPartitionState:
    return UpdateMetadataPartitionState(topic, partition, leader, epoch, (0, 1), (0, 1))


def test_empty_cache_knows_nothing() -> None:
    cache = MetadataCache(0)
    assert cache.controller_id is None
    assert cache.alive_brokers() == []
    assert cache.all_topics() == []
    assert cache.partition_info("orders", 0) is None
    assert cache.topic_id("orders") is None
    assert cache.topic_name(ORDERS) is None
    assert cache.num_partitions("orders") is None


def test_update_sets_brokers_controller_partitions_and_ids() -> None:
    cache = MetadataCache(0)
    cache.update_metadata(
        controller_id=1,
        live_brokers=[broker(1, 9093, "r1"), broker(0, 9092)],
        partition_states=[state("orders", 1, leader=1), state("orders", 0)],
        topic_ids={"orders": ORDERS},
    )
    assert cache.controller_id == 1
    assert [b.id for b in cache.alive_brokers()] == [0, 1]
    assert cache.alive_broker_nodes("PLAINTEXT") == [Node(0, "h", 9092), Node(1, "h", 9093, "r1")]
    assert cache.alive_broker_node(1, "PLAINTEXT") == Node(1, "h", 9093, "r1")
    assert cache.alive_broker_node(1, "SSL") is None
    assert cache.all_topics() == ["orders"]
    assert [s.partition_index for s in cache.partition_states("orders")] == [0, 1]
    assert cache.num_partitions("orders") == 2
    assert cache.topic_id("orders") == ORDERS
    assert cache.topic_name(ORDERS) == "orders"
    leader = cache.partition_leader("orders", 1)
    assert leader is not None and leader.id == 1


def test_partition_states_merge_and_brokers_are_replaced() -> None:
    cache = MetadataCache(0)
    cache.update_metadata(
        controller_id=0,
        live_brokers=[broker(0, 9092), broker(1, 9093)],
        partition_states=[state("orders", 0), state("events", 0)],
        topic_ids={"orders": ORDERS, "events": EVENTS},
    )
    cache.update_metadata(
        controller_id=None,
        live_brokers=[broker(0, 9092)],
        partition_states=[state("orders", 0, leader=1, epoch=3)],
    )
    assert cache.controller_id is None
    assert [b.id for b in cache.alive_brokers()] == [0]
    info = cache.partition_info("orders", 0)
    assert info is not None and (info.leader, info.leader_epoch) == (1, 3)
    assert cache.partition_info("events", 0) == state("events", 0)
    # Broker 1 is gone: the partition has no live leader.
    assert cache.partition_leader("orders", 0) is None


def test_leader_during_delete_removes_partitions_then_the_topic() -> None:
    cache = MetadataCache(0)
    cache.update_metadata(
        controller_id=0,
        live_brokers=[broker(0, 9092)],
        partition_states=[state("orders", 0), state("orders", 1)],
        topic_ids={"orders": ORDERS},
    )
    cache.update_topic_configs("orders", {"retention.ms": "1000"})
    deleted = cache.update_metadata(
        controller_id=0,
        live_brokers=[broker(0, 9092)],
        partition_states=[state("orders", 0, leader=LEADER_DURING_DELETE)],
    )
    assert deleted == [("orders", 0)]
    assert cache.contains("orders") and cache.num_partitions("orders") == 1
    assert cache.topic_configs("orders") == {"retention.ms": "1000"}
    deleted = cache.update_metadata(
        controller_id=0,
        live_brokers=[broker(0, 9092)],
        partition_states=[state("orders", 1, leader=LEADER_DURING_DELETE)],
    )
    assert deleted == [("orders", 1)]
    assert not cache.contains("orders")
    assert cache.topic_id("orders") is None and cache.topic_name(ORDERS) is None
    assert cache.topic_configs("orders") == {}


def test_deleting_an_unknown_partition_deletes_nothing() -> None:
    cache = MetadataCache(0)
    deleted = cache.update_metadata(
        controller_id=0,
        live_brokers=[],
        partition_states=[state("ghost", 0, leader=LEADER_DURING_DELETE)],
    )
    assert deleted == []
    assert cache.all_topics() == []


def test_a_recreated_topic_gets_its_new_id() -> None:
    cache = MetadataCache(0)
    cache.update_metadata(
        controller_id=0,
        live_brokers=[],
        partition_states=[state("orders", 0)],
        topic_ids={"orders": ORDERS},
    )
    cache.update_metadata(
        controller_id=0,
        live_brokers=[],
        partition_states=[state("orders", 0)],
        topic_ids={"orders": EVENTS},
    )
    assert cache.topic_id("orders") == EVENTS
    assert cache.topic_name(EVENTS) == "orders"
    assert cache.topic_name(ORDERS) is None


def test_topic_configs_are_copies() -> None:
    cache = MetadataCache(0)
    overrides = {"cleanup.policy": "compact"}
    cache.update_topic_configs("orders", overrides)
    overrides["cleanup.policy"] = "delete"
    cache.topic_configs("orders")["x"] = "y"
    assert cache.topic_configs("orders") == {"cleanup.policy": "compact"}


def test_internal_topics_are_kafkas() -> None:
    assert is_internal_topic("__consumer_offsets")
    assert is_internal_topic("__transaction_state")
    assert not is_internal_topic("orders")
