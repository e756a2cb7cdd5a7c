"""CreateAcls (30), v0-3 (v0 through ``franz.protocol.acls_v0``: LITERAL patterns only):
add ACL bindings through the ``AclAuthorizer`` (Kafka's ``AclApis.handleCreateAcls``).

ALTER on the cluster is required (CLUSTER_AUTHORIZATION_FAILED for every creation); with no
authorizer each creation gets SECURITY_DISABLED ("No Authorizer is configured."). A creation
naming a CLUSTER resource other than ``kafka-cluster`` or an empty name gets INVALID_REQUEST,
a principal not ``<type>:<name>`` UNKNOWN_SERVER_ERROR; ANY or MATCH where a binding needs a
specific value fails every creation with UNKNOWN_SERVER_ERROR; an UNKNOWN element (a code
Kafka does not know) fails the request's parsing, so the connection is closed, as Kafka's
SocketServer closes it. All as Kafka 3.9.2 answers (measured).
"""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize_cluster, authorizer_of
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.network.connection import CloseConnection
from franz.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    enum_or_unknown,
)
from franz.security.authorizer import binding_is_specific

__all__ = ["handle"]


def _binding(creation: Any) -> AclBinding:
    binding = AclBinding(
        ResourcePattern(
            enum_or_unknown(ResourceType, creation.resource_type),
            creation.resource_name,
            enum_or_unknown(PatternType, getattr(creation, "resource_pattern_type", 3)),
        ),
        AccessControlEntry(
            creation.principal,
            creation.host,
            enum_or_unknown(AclOperation, creation.operation),
            enum_or_unknown(AclPermissionType, creation.permission_type),
        ),
    )
    if 0 in (
        binding.pattern.resource_type,
        binding.pattern.pattern_type,
        binding.entry.operation,
        binding.entry.permission_type,
    ):
        # ``CreateAclsRequest.validate``: "CreatableAcls contain unknown elements".
        raise CloseConnection
    return binding


def _all(count: int, code: ErrorCode, message: str | None) -> HandlerResult:
    return {
        "throttle_time": 0,
        "results": [{"error_code": code, "error_message": message} for _ in range(count)],
    }


async def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    bindings = [_binding(c) for c in request.creations]
    if not authorize_cluster(ctx, AclOperation.ALTER):
        return _all(len(bindings), ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return _all(len(bindings), ErrorCode.SECURITY_DISABLED, "No Authorizer is configured.")
    if not all(binding_is_specific(b) for b in bindings):
        # Kafka's ``CreateAclsRequest.aclBinding`` throws on ANY or MATCH (ResourcePattern,
        # AccessControlEntry): the whole request fails (measured on Kafka 3.9.2).
        return _all(len(bindings), ErrorCode.UNKNOWN_SERVER_ERROR, None)
    results = await authorizer.create_acls(bindings)
    return {
        "throttle_time": 0,
        # Kafka answers "" (not null) on success.
        "results": [
            {"error_code": r.error, "error_message": "" if r.error == 0 else r.message}
            for r in results
        ],
    }
