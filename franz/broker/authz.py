"""The handlers' authorization checks: Kafka's ``AuthHelper`` (``authorize``,
``filterByAuthorized``, ``authorizeByResourceType``, ``authorizedOperations``) over the
broker's ``AclAuthorizer`` (``franz.security.authorizer``).

Who asks is ``ctx.principal`` from ``ctx.client_host``. With no authorizer configured
(``authorizer.class.name`` empty) every check passes, as Kafka's ``AuthHelper`` with
``authorizer = None``. The codes a handler answers when a check fails are the protocol's:
TOPIC_, GROUP_, CLUSTER_ and TRANSACTIONAL_ID_AUTHORIZATION_FAILED (``DENIED`` below maps
each resource type to its code).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Final

from franz.errors import ErrorCode
from franz.security.acl import (
    CLUSTER_NAME,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePatternFilter,
    ResourceType,
    enum_or_unknown,
)
from franz.security.authorizer import SUPPORTED_OPERATIONS

if TYPE_CHECKING:
    from franz.broker.context import RequestContext
    from franz.security.authorizer import AclAuthorizer

__all__ = [
    "DENIED",
    "authorize",
    "authorize_by_resource_type",
    "authorize_cluster",
    "authorized_operations",
    "authorizer_of",
    "binding_fields",
    "binding_filter",
    "cluster_operations",
    "config_resource_denied",
    "entry_fields",
    "filter_authorized",
    "txn_offsets_denied",
    "txn_partitions_denied",
]

#: The error code of a refused resource, by its type.
DENIED: Final = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ResourceType.DELEGATION_TOKEN: ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
}

#: Kafka's "authorized operations not requested" value (``Integer.MIN_VALUE``).
_OMITTED: Final = -(2**31)


def authorizer_of(ctx: RequestContext) -> AclAuthorizer | None:
    # A test's services object may predate the authorizer: no authorizer then.
    return getattr(ctx.services, "authorizer", None)


def authorize(
    ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, name: str
) -> bool:
    """``AuthHelper.authorize``: may the request's principal do ``operation`` on the
    resource (a literal name)?"""
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return True
    allowed = authorizer.authorize(ctx.principal, ctx.client_host, operation, resource_type, name)
    if not allowed:
        ctx.refused(
            f"{operation.name} {resource_type.name}",
            f"principal {ctx.principal} from {ctx.client_host} is not authorized to "
            f"{operation.name} {resource_type.name} {name}",
        )
    return allowed


def authorize_cluster(ctx: RequestContext, operation: AclOperation) -> bool:
    """``AuthHelper.authorizeClusterOperation``'s test (``kafka-cluster``)."""
    return authorize(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def filter_authorized(
    ctx: RequestContext, operation: AclOperation, resource_type: ResourceType, names: Iterable[str]
) -> set[str]:
    """``AuthHelper.filterByAuthorized``: the names (each once) the principal may act on."""
    unique = set(names)
    if authorizer_of(ctx) is None:
        return unique
    return {name for name in unique if authorize(ctx, operation, resource_type, name)}


def authorize_by_resource_type(
    ctx: RequestContext, operation: AclOperation, resource_type: ResourceType
) -> bool:
    """``AuthHelper.authorizeByResourceType`` (KIP-679)."""
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        return True
    return authorizer.authorize_by_resource_type(
        ctx.principal, ctx.client_host, operation, resource_type
    )


def authorized_operations(
    ctx: RequestContext, resource_type: ResourceType, name: str, requested: bool = True
) -> int:
    """KIP-430's bit field (``Utils.to32BitField``) of the operations the principal may do
    on the resource; every supported one with no authorizer; ``Integer.MIN_VALUE`` when the
    request did not ask."""
    if not requested:
        return _OMITTED
    authorizer = authorizer_of(ctx)
    if authorizer is None:
        ops = list(SUPPORTED_OPERATIONS.get(resource_type, ()))
    else:
        ops = authorizer.authorized_operations(ctx.principal, ctx.client_host, resource_type, name)
    field = 0
    for op in ops:
        field |= 1 << int(op)
    return field


def cluster_operations(ctx: RequestContext, requested: bool = True) -> int:
    """The cluster's authorized operations (DescribeCluster, Metadata v8-10): 0 without
    DESCRIBE on the cluster (``KafkaApis.handleDescribeCluster``), else the bit field."""
    if not requested:
        return _OMITTED
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        return 0
    return authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)


def binding_filter(item: Any) -> AclBindingFilter:
    """A DescribeAcls request or a DeleteAcls filter (``*_filter`` fields) as Kafka's
    ``AclBindingFilter``; a code Franz does not know is UNKNOWN."""
    return AclBindingFilter(
        ResourcePatternFilter(
            enum_or_unknown(ResourceType, item.resource_type_filter),
            item.resource_name_filter,
            enum_or_unknown(PatternType, getattr(item, "pattern_type_filter", 3)),
        ),
        AccessControlEntryFilter(
            item.principal_filter,
            item.host_filter,
            enum_or_unknown(AclOperation, item.operation),
            enum_or_unknown(AclPermissionType, item.permission_type),
        ),
    )


def binding_fields(binding: AclBinding) -> dict[str, Any]:
    """A binding as the ACL responses' fields (DeleteAcls' matching ACLs)."""
    return {
        "resource_type": int(binding.pattern.resource_type),
        "resource_name": binding.pattern.name,
        "pattern_type": int(binding.pattern.pattern_type),
        **entry_fields(binding.entry),
    }


def entry_fields(entry: AccessControlEntry) -> dict[str, Any]:
    return {
        "principal": entry.principal,
        "host": entry.host,
        "operation": int(entry.operation),
        "permission_type": int(entry.permission_type),
    }


#: ``ConfigResource.Type`` ids (DescribeConfigs, AlterConfigs) -> the ACL resource checked:
#: a topic's configs on the topic, a group's on the group, the rest on the cluster
#: (``KafkaApis.handleDescribeConfigsRequest`` / ``ConfigAdminManager.authorize``).
_CONFIG_TOPIC, _CONFIG_GROUP = 2, 32


def config_resource_denied(
    ctx: RequestContext, operation: AclOperation, config_type: int, name: str
) -> ErrorCode | None:
    """DESCRIBE_CONFIGS / ALTER_CONFIGS on a config resource: None when allowed, else the
    code to answer (TOPIC_, GROUP_ or CLUSTER_AUTHORIZATION_FAILED)."""
    if config_type == _CONFIG_TOPIC:
        resource_type, resource_name = ResourceType.TOPIC, name
    elif config_type == _CONFIG_GROUP:
        resource_type, resource_name = ResourceType.GROUP, name
    else:
        resource_type, resource_name = ResourceType.CLUSTER, CLUSTER_NAME
    if authorize(ctx, operation, resource_type, resource_name):
        return None
    return DENIED[resource_type]


def txn_partitions_denied(
    ctx: RequestContext, transactional_id: str, partitions: Iterable[tuple[str, int]]
) -> dict[tuple[str, int], ErrorCode] | None:
    """AddPartitionsToTxn (v0-3, a client's) and TxnOffsetCommit-style checks
    (``KafkaApis.handleAddPartitionsToTxnRequest``): WRITE on the transactional id (else every
    partition TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then WRITE on each topic (refused ones
    TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED: the request fails whole).
    None when allowed."""
    wanted = list(partitions)
    if not authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    writable = filter_authorized(
        ctx, AclOperation.WRITE, ResourceType.TOPIC, (t for t, _ in wanted)
    )
    if all(t in writable for t, _ in wanted):
        return None
    return {
        tp: ErrorCode.OPERATION_NOT_ATTEMPTED
        if tp[0] in writable
        else ErrorCode.TOPIC_AUTHORIZATION_FAILED
        for tp in wanted
    }


def txn_offsets_denied(ctx: RequestContext, request: Any) -> dict[tuple[str, int], ErrorCode]:
    """TxnOffsetCommit's ACLs (``KafkaApis.handleTxnOffsetCommitRequest``): WRITE on the
    transactional id, then READ on the group (each refusal fails every partition), then READ
    on each topic (its partitions TOPIC_AUTHORIZATION_FAILED; the others are committed). The
    refused partitions and their codes."""
    wanted = [(t.name, p.partition_index) for t in request.topics for p in t.partitions]
    if not authorize(
        ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    ):
        return dict.fromkeys(wanted, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if not authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return dict.fromkeys(wanted, ErrorCode.GROUP_AUTHORIZATION_FAILED)
    readable = filter_authorized(ctx, AclOperation.READ, ResourceType.TOPIC, (t for t, _ in wanted))
    return {tp: ErrorCode.TOPIC_AUTHORIZATION_FAILED for tp in wanted if tp[0] not in readable}
