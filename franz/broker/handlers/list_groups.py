"""ListGroups (16), v0-5: every group this coordinator knows, with its protocol type; v4+
filters by state (KIP-518, case-insensitive), v5 by type (KIP-848: Franz's groups are all
``classic``).

While a ``__consumer_offsets`` partition led here is loading, the answer lists the groups
loaded so far with COORDINATOR_LOAD_IN_PROGRESS (Kafka's ``handleListGroups``), so tools
retry rather than miss groups."""

from __future__ import annotations

from typing import Any

from franz.broker.authz import authorize, authorize_cluster
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.security.acl import AclOperation, ResourceType

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    types = {t.lower() for t in getattr(request, "types_filter", ())}
    coordinator = ctx.services.group_coordinator
    listing = []
    if not types or "classic" in types:
        listing = coordinator.list_groups(getattr(request, "states_filter", ()))
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        # KafkaApis.handleListGroupsRequest: without DESCRIBE on the cluster, the groups
        # the principal may DESCRIBE.
        listing = [
            g
            for g in listing
            if authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)
        ]
    return {
        "throttle_time": 0,
        "error_code": (
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if coordinator.loading else ErrorCode.NONE
        ),
        "groups": [
            {
                "group_id": g.group_id,
                "protocol_type": g.protocol_type,
                "group_state": g.state,
                "group_type": "classic",
            }
            for g in listing
        ],
    }
