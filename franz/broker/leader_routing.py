"""Which local replica serves a client's partition request, and where the client should go
instead (Kafka's ``ReplicaManager.getPartitionOrError``, ``Partition.localLogWithEpochOrThrow``
and ``KafkaApis.getCurrentLeader``).

Rules, per partition, in Kafka 3.9's order:

1. Not hosted here: NOT_LEADER_OR_FOLLOWER when the metadata cache knows the partition (the
   client's metadata is stale: it must refresh and go to the leader), else
   UNKNOWN_TOPIC_OR_PARTITION.
2. The request's ``current_leader_epoch`` is checked first (``Partition.
   check_current_leader_epoch``: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH), even on a
   follower.
3. ``require_leader`` and this replica is not the leader: NOT_LEADER_OR_FOLLOWER.

``require_leader`` is Kafka's ``fetchOnlyLeader``: always for Produce, for ListOffsets unless
the replica id is the debugging consumer's (-2), and for Fetch from a follower or from a
consumer below v11. A consumer's Fetch v11+ carries client metadata (KIP-392) and Kafka then
reads from any local replica, a follower up to its high watermark (no ``replica.selector``:
no preferred read replica is named).

The current-leader hint (KIP-951: Produce v10+ and Fetch v16+ on NOT_LEADER_OR_FOLLOWER,
Fetch also on FENCED_LEADER_EPOCH) is the local replica's leader and epoch when it is
hosted here, else the metadata cache's; the leader's endpoint goes into the response's
``node_endpoints`` when that broker is alive on the request's listener.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from franz.errors import ErrorCode
from franz.metadata.cache import Node

if TYPE_CHECKING:
    from franz.broker.services import BrokerServices
    from franz.cluster.partition import Partition
    from franz.storage.files import TopicPartition

__all__ = [
    "CONSUMER_REPLICA_ID",
    "DEBUGGING_CONSUMER_ID",
    "LeaderNode",
    "current_leader",
    "leader_nodes",
    "local_partition",
]

#: Kafka's ``FetchRequest.CONSUMER_REPLICA_ID``: an ordinary client.
CONSUMER_REPLICA_ID: Final = -1
#: Kafka's ``FetchRequest.DEBUGGING_CONSUMER_ID``: may read from followers.
DEBUGGING_CONSUMER_ID: Final = -2


@dataclass(frozen=True, slots=True)
class LeaderNode:
    """Kafka's ``LeaderNode``: a partition's leader id and epoch (-1 when unknown) and, when
    that broker is alive on the listener, its node."""

    leader_id: int
    leader_epoch: int
    node: Node | None

    def hint(self) -> dict[str, int]:
        """The ``LeaderIdAndEpoch`` of Produce and Fetch responses."""
        return {"leader_id": self.leader_id, "leader_epoch": self.leader_epoch}


def local_partition(
    services: BrokerServices,
    tp: TopicPartition,
    *,
    current_leader_epoch: int = -1,
    require_leader: bool = True,
) -> Partition | ErrorCode:
    """The local replica that may serve ``tp``, or the error the client gets."""
    partition = services.replica_manager.partitions.get(tp)
    if partition is None:
        if services.metadata_cache.partition_info(tp.topic, tp.partition) is not None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    fenced = partition.check_current_leader_epoch(current_leader_epoch)
    if fenced != ErrorCode.NONE:
        return fenced
    if require_leader and not partition.is_leader:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return partition


def current_leader(services: BrokerServices, tp: TopicPartition, listener: str) -> LeaderNode:
    """Kafka's ``KafkaApis.getCurrentLeader``."""
    partition = services.replica_manager.partitions.get(tp)
    if partition is not None:
        leader_id, leader_epoch = partition.leader_id, partition.leader_epoch
    else:
        info = services.metadata_cache.partition_info(tp.topic, tp.partition)
        leader_id, leader_epoch = (info.leader, info.leader_epoch) if info else (-1, -1)
    node = (
        services.metadata_cache.alive_broker_node(leader_id, listener) if leader_id >= 0 else None
    )
    return LeaderNode(leader_id, leader_epoch, node)


def leader_nodes(leaders: list[LeaderNode]) -> list[Node]:
    """The distinct alive leader nodes of ``leaders``, by id (a response's
    ``node_endpoints``)."""
    nodes = {leader.node.id: leader.node for leader in leaders if leader.node is not None}
    return [nodes[node_id] for node_id in sorted(nodes)]
