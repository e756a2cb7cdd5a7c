"""DescribeAcls (29), v0-3 (v0: LITERAL filters, ``franz.protocol.acls_v0``): the ACL
bindings a filter matches, grouped by resource pattern (Kafka's ``AclApis.handleDescribeAcls``,
``DescribeAclsResponse.aclsResources``).

DESCRIBE on the cluster is required (top-level CLUSTER_AUTHORIZATION_FAILED); with no
authorizer the answer is SECURITY_DISABLED ("No Authorizer is configured on the broker"). A
filter with an UNKNOWN element fails parsing in Kafka (``DescribeAclsRequest.validate``): the
connection is closed.
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize_cluster, authorizer_of, binding_filter, entry_fields
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.network.connection import CloseConnection
from franz.security.acl import AclOperation, ResourcePattern

__all__ = ["handle"]


def _error(code: ErrorCode, message: str | None) -> HandlerResult:
    return {"throttle_time": 0, "error_code": code, "error_message": message, "resources": []}


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    acl_filter = binding_filter(request)
    if acl_filter.is_unknown:
        raise CloseConnection
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return _error(ErrorCode.SECURITY_DISABLED, "No Authorizer is configured on the broker")
    grouped: dict[ResourcePattern, list[dict[str, Any]]] = {}
    for binding in authorizer.acls(acl_filter):
        grouped.setdefault(binding.pattern, []).append(entry_fields(binding.entry))
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.NONE,
        "error_message": "",  # Kafka's, on success
        "resources": [
            {
                "resource_type": int(pattern.resource_type),
                "resource_name": pattern.name,
                "pattern_type": int(pattern.pattern_type),
                "acls": acls,
            }
            for pattern, acls in grouped.items()
        ],
    }
