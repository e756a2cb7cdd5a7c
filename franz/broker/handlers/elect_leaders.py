"""ElectLeaders (43), v0-2 (KIP-183 preferred, KIP-460 unclean): move leadership to the
preferred (or any live) replica.

Single-node mode: every partition is led by its only replica, which is also its preferred
replica, so no election is ever needed. As Kafka's controller answers:

* a named partition the cluster has: ELECTION_NOT_NEEDED (for PREFERRED and UNCLEAN alike:
  the leader is the preferred replica and alive);
* a named partition it does not have: UNKNOWN_TOPIC_OR_PARTITION;
* ``topic_partitions`` null (every partition): results only for partitions whose election
  failed or happened, so ELECTION_NOT_NEEDED ones are left out (Kafka filters them for the
  all-partitions form) and the list is empty here;
* an election type other than 0 (PREFERRED) or 1 (UNCLEAN): INVALID_REQUEST for the request.

v0 has no election type (preferred) and no top-level error code.

Cluster mode (``zookeeper.connect`` set; Kafka 3.9's ``KafkaApis.handleElectLeaders`` ->
``ReplicaManager.electLeaders`` -> ``KafkaController.electLeaders``): the request is handed to
this broker's controller (``franz.controller.shell.replica_election``), which answers
NOT_CONTROLLER for every partition unless it is the active one (the admin client sends
ElectLeaders to the controller). ``topic_partitions`` null means every partition in this
broker's metadata cache, with the ELECTION_NOT_NEEDED results left out. A partition the
controller elected a leader for is answered NONE once this broker's metadata cache shows that
leader (Kafka's ``DelayedElectLeader``), REQUEST_TIMED_OUT if ``timeout_ms`` passes first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from datetime import timedelta
from typing import Any, Final

from franz.broker.authz import authorize_cluster
from franz.broker.context import HandlerResult, RequestContext
from franz.controller.events import ElectionType
from franz.controller.model import TopicPartition
from franz.controller.shell.replica_election import ElectionOutcome
from franz.errors import ErrorCode
from franz.security.acl import AclOperation

__all__ = ["handle"]

PREFERRED: Final = 0
UNCLEAN: Final = 1
#: How often a pending election's leader is looked up in the metadata cache.
_POLL_S: Final = 0.05


def handle(ctx: RequestContext, request: Any) -> HandlerResult | Awaitable[HandlerResult]:
    election_type = getattr(request, "election_type", PREFERRED)
    if election_type not in (PREFERRED, UNCLEAN):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.INVALID_REQUEST,
            "replica_election_results": [],
        }
    if not authorize_cluster(ctx, AclOperation.ALTER):
        # KafkaApis.handleElectLeaders: the top-level error, and on every partition asked.
        denied = {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "error_message": None}
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "replica_election_results": [
                {
                    "topic": e.topic,
                    "partition_result": [{"partition_id": p, **denied} for p in e.partitions],
                }
                for e in request.topic_partitions or ()
            ],
        }
    if ctx.services.zk_mode:
        return _handle_cluster(ctx, request, ElectionType(election_type))
    if request.topic_partitions is None:
        return {"throttle_time": 0, "error_code": ErrorCode.NONE, "replica_election_results": []}
    cache = ctx.services.metadata_cache
    results: dict[str, list[dict[str, Any]]] = {}
    for entry in request.topic_partitions:
        for partition in entry.partitions:
            if cache.partition_info(entry.topic, partition) is None:
                code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                message = "The partition does not exist."
            else:
                code = ErrorCode.ELECTION_NOT_NEEDED
                message = "Leader election not needed for topic partition."
            results.setdefault(entry.topic, []).append(
                {"partition_id": partition, "error_code": code, "error_message": message}
            )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.NONE,
        "replica_election_results": [
            {"topic": topic, "partition_result": parts} for topic, parts in results.items()
        ],
    }


async def _handle_cluster(
    ctx: RequestContext, request: Any, election_type: ElectionType
) -> HandlerResult:
    """Cluster mode (module docstring)."""
    cache = ctx.services.metadata_cache
    every_partition = request.topic_partitions is None
    if every_partition:
        partitions = frozenset(
            TopicPartition(topic, state.partition_index)
            for topic in cache.all_topics()
            for state in cache.partition_states(topic)
        )
    else:
        partitions = frozenset(
            TopicPartition(entry.topic, int(p))
            for entry in request.topic_partitions
            for p in entry.partitions
        )
    timeout = request.timeout  # timeout_ms, decoded as a timedelta
    seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else int(timeout) / 1000
    deadline = time.monotonic() + max(0.0, seconds)
    controller = ctx.services.controller
    if controller is None:
        results = {tp: ElectionOutcome(ErrorCode.NOT_CONTROLLER) for tp in partitions}
    else:
        results = await controller.elect_leaders(partitions, election_type)
    # DelayedElectLeader: wait until this broker's metadata shows the elected leaders.
    waiting = {tp: o.leader for tp, o in results.items() if o.error_code is ErrorCode.NONE}
    while waiting:
        for tp, leader in list(waiting.items()):
            state = cache.partition_info(tp.topic, tp.partition)
            if state is not None and state.leader == leader:
                del waiting[tp]
        if not waiting or time.monotonic() >= deadline:
            break
        await asyncio.sleep(_POLL_S)
    for tp in waiting:
        results[tp] = ElectionOutcome(ErrorCode.REQUEST_TIMED_OUT)
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for tp in sorted(results):
        outcome = results[tp]
        if every_partition and outcome.error_code is ErrorCode.ELECTION_NOT_NEEDED:
            continue
        message = outcome.message
        if message is None and outcome.error_code is ErrorCode.ELECTION_NOT_NEEDED:
            message = outcome.error_code.message  # ApiError(Errors): Kafka's description
        by_topic.setdefault(tp.topic, []).append(
            {
                "partition_id": tp.partition,
                "error_code": outcome.error_code,
                "error_message": message,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.NONE,
        "replica_election_results": [
            {"topic": topic, "partition_result": parts} for topic, parts in by_topic.items()
        ],
    }
