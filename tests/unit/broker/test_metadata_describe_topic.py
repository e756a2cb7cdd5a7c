"""Metadata's per-topic answer is the metadata cache's state (``describe_topic``)."""

from __future__ import annotations

import uuid

from franz.broker.handlers.metadata import describe_topic
from franz.errors import ErrorCode
from franz.metadata.cache import (
    BrokerEndpoint,
    MetadataBroker,
    MetadataCache,
    UpdateMetadataPartitionState,
)

TOPIC_ID = uuid.UUID(int=3)


def cache_with(*states: UpdateMetadataPartitionState) -> MetadataCache:
    cache = MetadataCache(0)
    cache.update_metadata(
        controller_id=0,
        live_brokers=[MetadataBroker(0, (BrokerEndpoint("localhost", 9092),))],
        partition_states=states,
        topic_ids={"orders": TOPIC_ID},
    )
    return cache


def test_led_partitions_are_described_as_cached() -> None:
    cache = cache_with(UpdateMetadataPartitionState("orders", 0, 0, 4, (0,), (0,)))
    described = describe_topic(cache, "orders")
    assert described["topic_id"] == TOPIC_ID and described["is_internal"] is False
    assert described["partitions"] == [
        {
            "error_code": 0,
            "partition_index": 0,
            "leader_id": 0,
            "leader_epoch": 4,
            "replica_nodes": [0],
            "isr_nodes": [0],
            "offline_replicas": [],
        }
    ]


def test_no_live_leader_is_leader_not_available() -> None:
    cache = cache_with(
        UpdateMetadataPartitionState("orders", 0, -1, 2, (0,), (0,), (0,)),
        UpdateMetadataPartitionState("orders", 1, 7, 2, (7,), (7,)),
    )
    partitions = describe_topic(cache, "orders")["partitions"]
    assert [p["error_code"] for p in partitions] == [ErrorCode.LEADER_NOT_AVAILABLE] * 2
    assert [p["leader_id"] for p in partitions] == [-1, -1]
    assert partitions[0]["offline_replicas"] == [0] and partitions[0]["leader_epoch"] == 2


def test_a_leader_without_the_requests_listener_is_listener_not_found_from_v6() -> None:
    # Kafka's ZkMetadataCache.getPartitionMetadata: a live leader lacking the listener the
    # request came in on is LISTENER_NOT_FOUND (errorUnavailableListeners, v6+), else
    # LEADER_NOT_AVAILABLE; the leader is -1 either way.
    cache = MetadataCache(0)
    cache.update_metadata(
        controller_id=0,
        live_brokers=[
            MetadataBroker(
                0,
                (
                    BrokerEndpoint("localhost", 9092),
                    BrokerEndpoint("localhost", 9093, "SSL", "SSL"),
                ),
            ),
            MetadataBroker(1, (BrokerEndpoint("localhost", 9094),)),
        ],
        partition_states=[
            UpdateMetadataPartitionState("orders", 0, 0, 1, (0, 1), (0, 1)),
            UpdateMetadataPartitionState("orders", 1, 1, 1, (1, 0), (1, 0)),
        ],
        topic_ids={"orders": TOPIC_ID},
    )
    on_ssl = describe_topic(cache, "orders", "SSL", 6)["partitions"]
    assert [(p["error_code"], p["leader_id"]) for p in on_ssl] == [
        (0, 0),
        (ErrorCode.LISTENER_NOT_FOUND, -1),
    ]
    old = describe_topic(cache, "orders", "SSL", 5)["partitions"]
    assert [p["error_code"] for p in old] == [0, ErrorCode.LEADER_NOT_AVAILABLE]
    plain = describe_topic(cache, "orders", "PLAINTEXT", 12)["partitions"]
    assert [(p["error_code"], p["leader_id"]) for p in plain] == [(0, 0), (0, 1)]
