"""One classic group as the coordinator holds it: the pure snapshot plus what is not pure.

Kafka's ``GroupMetadata`` mixes the state machine's fields with the committed offsets and the
members' response callbacks. Franz keeps the state machine's value in an immutable
``GroupSnapshot`` (``states.py``) and puts the rest here: the group's committed offsets, the
parked JoinGroup/SyncGroup futures keyed by member id, the single timer armed at the
snapshot's next deadline, and the time of the last state change (Kafka's
``currentStateTimestamp``, which offset expiry measures from).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from franz.coordinator.group.consumer_protocol import subscribed_topics
from franz.coordinator.group.offsets_schema import GroupMetadataValue, MemberMetadata
from franz.coordinator.group.offsets_topic import (
    CommitRecordMetadataAndOffset,
    OffsetAndMetadata,
    TopicPartitionKey,
)
from franz.coordinator.group.states import (
    GroupConfig,
    GroupSnapshot,
    GroupState,
    JoinResponse,
    MemberSnapshot,
    SyncResponse,
)
from franz.errors import ErrorCode
from franz.protocol.records.compression import CompressionType

__all__ = [
    "CommitRequest",
    "CoordinatorConfig",
    "Group",
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
    "commit_error",
    "metadata_or_empty",
    "snapshot_from_value",
]


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    """Broker settings the coordinator uses (Kafka's ``GroupConfig`` + ``OffsetConfig``)."""

    group: GroupConfig = field(default_factory=GroupConfig)
    offsets_topic_num_partitions: int = 50
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    offsets_retention_check_interval_ms: int = 600_000
    compression: CompressionType = CompressionType.NONE


@dataclass(frozen=True, slots=True)
class CommitRequest:
    """One partition of an OffsetCommit request."""

    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


@dataclass(frozen=True, slots=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupDescription:
    """DescribeGroups' view of a group (Kafka's ``GroupSummary``): protocol, metadata and
    assignments only when the group is Stable, as Kafka reports them."""

    error: ErrorCode
    group_id: str
    state: str = "Dead"
    protocol_type: str = ""
    protocol: str = ""
    members: tuple[MemberDescription, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str


@dataclass(slots=True)
class Group:
    """Mutable holder of one group; only the coordinator's event loop touches it."""

    snapshot: GroupSnapshot
    current_state_timestamp_ms: int
    offsets: dict[TopicPartitionKey, OffsetAndMetadata] = field(default_factory=dict)
    #: Base offset of the ``__consumer_offsets`` batch of each committed offset (Kafka's
    #: ``CommitRecordMetadataAndOffset.appendedBatchOffset``; -1: unknown).
    appended_batch_offsets: dict[TopicPartitionKey, int] = field(default_factory=dict)
    #: TxnOffsetCommit offsets awaiting their transaction's marker, per producer id (Kafka's
    #: ``pendingTransactionalOffsetCommits``; ``franz.coordinator.group.txn_offsets``).
    pending_txn_offsets: dict[int, dict[TopicPartitionKey, CommitRecordMetadataAndOffset]] = field(
        default_factory=dict
    )
    join_waiters: dict[str, asyncio.Future[JoinResponse]] = field(default_factory=dict)
    sync_waiters: dict[str, asyncio.Future[SyncResponse]] = field(default_factory=dict)
    timer: asyncio.TimerHandle | None = None
    timer_deadline_ms: int | None = None

    @property
    def group_id(self) -> str:
        return self.snapshot.group_id

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer = None
        self.timer_deadline_ms = None

    def metadata_value(self) -> GroupMetadataValue:
        """The group as Kafka stores it (``GroupMetadataValue``; written at v3)."""
        s = self.snapshot
        members = tuple(
            MemberMetadata(
                member_id=mid,
                client_id=m.client_id,
                client_host=m.client_host,
                session_timeout=m.session_timeout_ms,
                rebalance_timeout=m.rebalance_timeout_ms,
                group_instance_id=m.group_instance_id,
                subscription=metadata_or_empty(m, s.protocol_name),
                assignment=m.assignment,
            )
            for mid, m in s.members.items()
        )
        return GroupMetadataValue(
            protocol_type=s.protocol_type or "",
            generation=s.generation_id,
            protocol=s.protocol_name,
            leader=s.leader_id,
            current_state_timestamp=self.current_state_timestamp_ms,
            members=members,
        )

    def expired_offsets(self, now_ms: int, retention_ms: int) -> list[TopicPartitionKey]:
        """Offsets Kafka 3.x's ``cleanupGroupMetadata`` removes at ``now_ms`` (KIP-211).

        * An explicit expire timestamp (OffsetCommit v2-v4 retention) wins.
        * Empty group: ``retention_ms`` after the group became Empty, or after the commit for
          a group that never had members (standalone commits, no protocol type).
        * Stable ``consumer`` group: offsets of topics no member subscribes to, ``retention_ms``
          after their commit. Other states and protocols keep everything.
        """
        s = self.snapshot
        expired: list[TopicPartitionKey] = []
        if s.state is GroupState.EMPTY:
            for tp, om in self.offsets.items():
                if om.expire_timestamp_ms is not None:
                    if now_ms >= om.expire_timestamp_ms:
                        expired.append(tp)
                    continue
                base = (
                    self.current_state_timestamp_ms
                    if s.protocol_type is not None
                    else om.commit_timestamp_ms
                )
                if now_ms - base >= retention_ms:
                    expired.append(tp)
        elif s.state is GroupState.STABLE and s.protocol_type == "consumer":
            topics = subscribed_topics(s)
            if topics is not None:
                for tp, om in self.offsets.items():
                    if tp[0] not in topics and now_ms - om.commit_timestamp_ms >= retention_ms:
                        expired.append(tp)
        return expired


def commit_error(code: ErrorCode) -> ErrorCode:
    """Kafka maps storage failures of an offset commit to codes clients retry on
    (``GroupMetadataManager.storeOffsets``, for OffsetCommit and TxnOffsetCommit alike)."""
    if code in (
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.REQUEST_TIMED_OUT,
    ):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR):
        return ErrorCode.NOT_COORDINATOR
    if code in (
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
        ErrorCode.INVALID_FETCH_SIZE,
    ):
        return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
    return code


def metadata_or_empty(member: MemberSnapshot, protocol: str | None) -> bytes:
    """The member's metadata for ``protocol``; empty when it has none."""
    if protocol is None:
        return b""
    try:
        return member.metadata(protocol)
    except KeyError:
        return b""


def snapshot_from_value(
    group_id: str, value: GroupMetadataValue | None, config: GroupConfig, now_ms: int
) -> GroupSnapshot:
    """The snapshot a loaded group starts from (Kafka's ``GroupMetadata.loadGroup``): Stable
    with its stored members (each member's only protocol is the selected one, with its
    subscription), or Empty; a group known only from its offsets is a fresh Empty group."""
    if value is None:
        return GroupSnapshot(group_id, config=config)
    members: dict[str, MemberSnapshot] = {}
    for m in value.members:
        rebalance = m.rebalance_timeout if m.rebalance_timeout >= 0 else m.session_timeout
        members[m.member_id] = MemberSnapshot(
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            session_timeout_ms=m.session_timeout,
            rebalance_timeout_ms=rebalance,
            protocols=((value.protocol or "", m.subscription),),
            assignment=m.assignment,
            session_deadline_ms=now_ms + m.session_timeout,
        )
    return GroupSnapshot(
        group_id,
        state=GroupState.STABLE if members else GroupState.EMPTY,
        generation_id=value.generation,
        protocol_type=value.protocol_type or None,
        protocol_name=value.protocol if members else None,
        leader_id=value.leader if members else None,
        members=members,
        config=config,
    )
