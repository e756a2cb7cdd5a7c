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
"""

from __future__ import annotations

from typing import Any, Final

from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode

__all__ = ["handle"]

PREFERRED: Final = 0
UNCLEAN: Final = 1


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    election_type = getattr(request, "election_type", PREFERRED)
    if election_type not in (PREFERRED, UNCLEAN):
        return {
            "throttle_time": 0,
            "error_code": ErrorCode.INVALID_REQUEST,
            "replica_election_results": [],
        }
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
