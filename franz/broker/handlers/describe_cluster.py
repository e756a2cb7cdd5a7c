"""DescribeCluster (60), v0-1 (flexible only; KIP-700): the cluster id, the controller and
the brokers, which the Java AdminClient's ``describeCluster`` prefers to Metadata.

In single-node mode this broker is the one broker and the controller. v1 adds
``endpoint_type`` (KIP-919): Franz serves broker endpoints (1); a request asking for
controllers (2) gets MISMATCHED_ENDPOINT_TYPE, an unknown type UNSUPPORTED_ENDPOINT_TYPE, as
``AuthHelper.computeDescribeClusterResponse`` answers. ``cluster_authorized_operations`` is
Kafka's "not requested" sentinel (``Integer.MIN_VALUE``) unless asked for; then it is the
CLUSTER operations the principal may do (``franz.broker.authz``; all of them with no
authorizer, as Kafka without one; 0 without DESCRIBE on the cluster, as Kafka's
``handleDescribeCluster``).
"""

from __future__ import annotations

from typing import Any, Final

from franz.broker.authorized_operations import OPERATIONS_OMITTED
from franz.broker.authz import cluster_operations
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode

__all__ = ["handle"]

#: ``EndpointType`` ids (KIP-919).
BROKER_ENDPOINT: Final = 1
CONTROLLER_ENDPOINT: Final = 2


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    services = ctx.services
    endpoint_type = getattr(request, "endpoint_type", BROKER_ENDPOINT)
    if endpoint_type != BROKER_ENDPOINT:
        if endpoint_type == CONTROLLER_ENDPOINT:
            code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
            message = (
                "The request was sent to an endpoint of type BROKER, but we wanted an endpoint "
                "of type CONTROLLER"
            )
        else:
            code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
            message = f"Unsupported endpoint type {endpoint_type}"
        return {
            "throttle_time": 0,
            "error_code": code,
            "error_message": message,
            "endpoint_type": BROKER_ENDPOINT,
            "cluster_id": "",
            "controller_id": -1,
            "brokers": [],
            "cluster_authorized_operations": OPERATIONS_OMITTED,
        }
    cache = services.metadata_cache
    brokers = [
        {"broker_id": node.id, "host": node.host, "port": node.port, "rack": node.rack}
        for node in cache.alive_broker_nodes(ctx.listener_name)
    ]
    controller_id = cache.controller_id
    requested = bool(getattr(request, "include_cluster_authorized_operations", False))
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "endpoint_type": BROKER_ENDPOINT,
        "cluster_id": services.cluster_id,
        "controller_id": -1 if controller_id is None else controller_id,
        "brokers": brokers,
        "cluster_authorized_operations": cluster_operations(ctx, requested),
    }
