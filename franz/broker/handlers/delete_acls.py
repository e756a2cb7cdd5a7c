"""DeleteAcls (31), v0-3 (v0: LITERAL filters, ``franz.protocol.acls_v0``): remove the
ACL bindings each filter matches, answering per filter the bindings it removed (Kafka's
``AclApis.handleDeleteAcls``, ``AclAuthorizer.deleteAcls``).

ALTER on the cluster is required (CLUSTER_AUTHORIZATION_FAILED for every filter); with no
authorizer every filter gets SECURITY_DISABLED ("No Authorizer is configured."). A filter
with an UNKNOWN element fails parsing in Kafka (``DeleteAclsRequest.validate``): the
connection is closed.
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize_cluster, authorizer_of, binding_fields, binding_filter
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.network.connection import CloseConnection
from franz.security.acl import AclOperation

__all__ = ["handle"]


def _all(count: int, code: ErrorCode, message: str | None) -> HandlerResult:
    return {
        "throttle_time": 0,
        "filter_results": [
            {"error_code": code, "error_message": message, "matching_acls": []}
            for _ in range(count)
        ],
    }


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    filters = [binding_filter(f) for f in request.filters]
    if any(f.is_unknown for f in filters):
        raise CloseConnection
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return _all(len(filters), ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return _all(len(filters), ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    results = await authorizer.delete_acls(filters)
    return {
        "throttle_time": 0,
        "filter_results": [
            {
                "error_code": r.error,
                "error_message": r.message,
                "matching_acls": [
                    {"error_code": ErrorCode.NONE, "error_message": None, **binding_fields(b)}
                    for b in r.deleted
                ],
            }
            for r in results
        ],
    }
