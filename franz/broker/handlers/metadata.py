"""Metadata (3): brokers, cluster id, controller, topics with their partitions.

Requested topics that do not exist are created when both ``auto.create.topics.enable`` and
the request's ``allow_auto_topic_creation`` (v4+; always true before) say so. In single-node
mode creation is synchronous, so the new topic is described in the same response instead of
Kafka's first LEADER_NOT_AVAILABLE. In cluster mode, as Kafka 3.9's ZooKeeper-mode broker
(``getTopicMetadata`` -> ``AutoTopicCreationManager.createTopicsInZk``), a topic so created,
or already recorded in ZooKeeper but not in the metadata cache yet (its leaders not elected:
Kafka's TOPIC_ALREADY_EXISTS), answers LEADER_NOT_AVAILABLE at the topic level with no
partitions; without auto-creation such a topic is UNKNOWN_TOPIC_OR_PARTITION, as in Kafka.
``__consumer_offsets`` is auto-created too, with the
``offsets.topic.*`` settings (``franz.broker.offsets_log``; in cluster mode fewer live brokers
than ``offsets.topic.replication.factor`` answer INVALID_REPLICATION_FACTOR, as Kafka 3.9).
Topics requested by id (v10+) that do not exist get UNKNOWN_TOPIC_ID; invalid names
INVALID_TOPIC_EXCEPTION. A partition whose log dir failed has no leader (LEADER_NOT_AVAILABLE,
leader -1, this broker offline).

Everything described comes from the metadata cache (``franz.metadata.cache``), as Kafka's
``KafkaApis.handleTopicMetadataRequest`` reads its ``MetadataCache``; only auto-creation goes
to the topic manager. A partition whose leader is not a live broker (-1: no leader, or a
failed log dir, which the controller takes the leader from) answers LEADER_NOT_AVAILABLE, as
Kafka's ``ZkMetadataCache.getPartitionMetadata``.

ACLs (``franz.broker.authz``, as ``handleTopicMetadataRequest``): a topic the principal may
not DESCRIBE is left out of an all-topics answer, and answered TOPIC_AUTHORIZATION_FAILED
when asked for by name (by id: with the id and a null name), these answers first;
auto-creation needs CREATE on the cluster or on the topic, else TOPIC_AUTHORIZATION_FAILED.

Authorized operations (v8+, KIP-430): with ``include_topic_authorized_operations`` every topic
looked up by name and answered, found or not, carries the TOPIC operations the principal may
do (all of them with no authorizer), as Kafka's ``handleTopicMetadataRequest`` sets them on its
``topicMetadata``; a topic id that is not found keeps the "omitted" value.
``include_cluster_authorized_operations`` (v8-10; v11 dropped the field, KIP-700) gives the
CLUSTER operations likewise. Unasked, both are ``Integer.MIN_VALUE``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from franz.broker.authorized_operations import OPERATIONS_OMITTED
from franz.broker.authz import (
    authorize,
    authorized_operations,
    cluster_operations,
    filter_authorized,
)
from franz.broker.context import HandlerResult, RequestContext
from franz.broker.topic_manager import validate_topic_name
from franz.coordinator.group.offsets_topic import OFFSETS_TOPIC
from franz.errors import ApiError, ErrorCode, error_code_for
from franz.metadata.cache import MetadataCache, is_internal_topic
from franz.security.acl import CLUSTER_NAME, AclOperation, ResourceType

if TYPE_CHECKING:
    from franz.broker.services import BrokerServices

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    services = ctx.services
    version = ctx.api_version
    cache = services.metadata_cache
    requested = request.topics
    allow_auto_create = getattr(request, "allow_auto_topic_creation", True)
    results: list[dict[str, Any]] = []
    #: The TOPIC_AUTHORIZATION_FAILED answers, which Kafka lists first.
    denied: list[dict[str, Any]] = []
    if requested is None or (version == 0 and not requested):
        describable = _describable(ctx, cache.all_topics())
        for existing in cache.all_topics():
            if existing in describable:
                results.append(describe_topic(cache, existing, ctx.listener_name, version))
    else:
        describable = _describable(
            ctx, (n for e in requested if (n := _requested_name(cache, e)) is not None)
        )
        for entry in requested:
            name: str | None = getattr(entry, "name", None)
            topic_id = getattr(entry, "topic_id", None)
            if not name and topic_id is not None and topic_id.int != 0:
                found = cache.topic_name(topic_id)
                if found is None:
                    results.append(
                        _error_topic(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID)
                    )
                elif found not in describable:
                    denied.append(
                        _error_topic(None, topic_id, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                    )
                else:
                    results.append(describe_topic(cache, found, ctx.listener_name, version))
                continue
            try:
                name = validate_topic_name(name)
            except ApiError as exc:
                results.append(_error_topic(name, None, exc.code))
                continue
            if name not in describable:
                denied.append(_error_topic(name, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            exists = cache.contains(name)
            if (
                not exists
                and allow_auto_create
                and services.config.get("auto.create.topics.enable")
                and not _may_create(ctx, name)
            ):
                denied.append(_error_topic(name, None, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                continue
            if not exists and allow_auto_create:
                try:
                    if name == OFFSETS_TOPIC:
                        exists = _maybe_create_offsets_topic(services)
                    else:
                        exists = services.topic_manager.maybe_auto_create(name) is not None
                except ApiError as exc:
                    results.append(_error_topic(name, None, error_code_for(exc)))
                    continue
                if exists and not cache.contains(name):
                    # Cluster mode: created (or being created), no leaders in the cache yet.
                    results.append(_error_topic(name, None, ErrorCode.LEADER_NOT_AVAILABLE))
                    continue
            if not exists:
                results.append(_error_topic(name, None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                results.append(describe_topic(cache, name, ctx.listener_name, version))
    if version >= 8 and getattr(request, "include_topic_authorized_operations", False):
        for result in results:
            if result["name"] is not None:
                result["topic_authorized_operations"] = authorized_operations(
                    ctx, ResourceType.TOPIC, result["name"]
                )
    results = denied + results
    cluster_ops = OPERATIONS_OMITTED
    if 8 <= version <= 10 and getattr(request, "include_cluster_authorized_operations", False):
        cluster_ops = cluster_operations(ctx)
    brokers = [
        {"node_id": node.id, "host": node.host, "port": node.port, "rack": node.rack}
        for node in cache.alive_broker_nodes(ctx.listener_name)
    ]
    controller_id = cache.controller_id
    return {
        "throttle_time": 0,
        "brokers": brokers,
        "cluster_id": services.cluster_id,
        "controller_id": -1 if controller_id is None else controller_id,
        "topics": results,
        "cluster_authorized_operations": cluster_ops,
    }


def _requested_name(cache: MetadataCache, entry: Any) -> str | None:
    name: str | None = getattr(entry, "name", None)
    topic_id = getattr(entry, "topic_id", None)
    if not name and topic_id is not None and topic_id.int != 0:
        return cache.topic_name(topic_id)
    return name


def _describable(ctx: RequestContext, names: Any) -> set[str]:
    return filter_authorized(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)


def _may_create(ctx: RequestContext, name: str) -> bool:
    """Auto-creation's ACL: CREATE on the cluster, or on the topic."""
    return authorize(ctx, AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME) or authorize(
        ctx, AclOperation.CREATE, ResourceType.TOPIC, name
    )


def _maybe_create_offsets_topic(services: BrokerServices) -> bool:
    """``__consumer_offsets`` is auto-created as FindCoordinator creates it (Kafka's
    ``AutoTopicCreationManager.creatableTopic``: ``offsets.topic.*`` settings); True if it
    exists or is being created."""
    if not services.config.get("auto.create.topics.enable"):
        return False
    services.offsets_log.ensure_topic()
    return True


def _error_topic(name: str | None, topic_id: Any, code: ErrorCode) -> dict[str, Any]:
    out: dict[str, Any] = {
        "error_code": code,
        "name": name,
        # Kafka's metadataResponseTopic(error, topic, Topic.isInternal(topic), ...).
        "is_internal": name is not None and is_internal_topic(name),
        "partitions": [],
        "topic_authorized_operations": OPERATIONS_OMITTED,
    }
    if topic_id is not None:
        out["topic_id"] = topic_id
    return out


def describe_topic(
    cache: MetadataCache, name: str, listener: str = "PLAINTEXT", version: int = 12
) -> dict[str, Any]:
    """One topic of the cache, as Metadata describes it on ``listener``.

    A live leader without an endpoint on the request's listener is no leader there (Kafka's
    ``ZkMetadataCache.getPartitionMetadata``): LISTENER_NOT_FOUND from v6 on
    (``errorUnavailableListeners``), LEADER_NOT_AVAILABLE before, leader -1 either way.
    """
    partitions = []
    for state in cache.partition_states(name):
        alive = state.leader >= 0 and cache.has_alive_broker(state.leader)
        led = alive and cache.alive_broker_node(state.leader, listener) is not None
        error = ErrorCode.NONE
        if not alive:
            error = ErrorCode.LEADER_NOT_AVAILABLE
        elif not led:
            error = ErrorCode.LISTENER_NOT_FOUND if version >= 6 else ErrorCode.LEADER_NOT_AVAILABLE
        partitions.append(
            {
                "error_code": error,
                "partition_index": state.partition_index,
                "leader_id": state.leader if led else -1,
                "leader_epoch": state.leader_epoch,
                "replica_nodes": list(state.replicas),
                "isr_nodes": list(state.isr),
                "offline_replicas": list(state.offline_replicas),
            }
        )
    return {
        "error_code": 0,
        "name": name,
        "topic_id": cache.topic_id(name),
        "is_internal": is_internal_topic(name),
        "partitions": partitions,
        "topic_authorized_operations": OPERATIONS_OMITTED,
    }
