"""ListGroups (16), v0-5: every group this coordinator knows, with its protocol type; v4+
filters by state (KIP-518, case-insensitive), v5 by type (KIP-848: Franz's groups are all
``classic``)."""

from __future__ import annotations

from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    types = {t.lower() for t in getattr(request, "types_filter", ())}
    listing = []
    if not types or "classic" in types:
        listing = ctx.services.group_coordinator.list_groups(getattr(request, "states_filter", ()))
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.NONE,
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
