"""Inputs and outputs of the classic group state machine (``franz.coordinator.group.states``).

Everything here is a frozen value: the driver builds one event per request or timer, hands it to
``states.step`` and acts on the outputs. ``states`` re-exports every name, so callers may import
from either module.

Routing rule for the driver (the outputs carry no request handle): an output addressed to member
X answers X's *parked* request when the snapshot given to ``step`` had X parked
(``members[X].awaiting_join`` for a JoinResponse, ``members[X].awaiting_sync`` for a
SyncResponse); every other output of a request event answers the request in hand (at most one
does). A request event that gets no answer in hand was parked under the id the new snapshot marks
awaiting: ``event.member_id``, or ``event.new_member_id`` when the join came with an empty id.
"""

from __future__ import annotations

from dataclasses import dataclass

from franz.errors import ErrorCode

Protocols = tuple[tuple[str, bytes], ...]
"""A member's supported protocols in its order of preference: (name, metadata) pairs."""

NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
"""Kafka's ``GroupCoordinator.NewMemberJoinTimeoutMs``: the session deadline of a member that
joined but has not yet been answered (it has no id to heartbeat with)."""


@dataclass(frozen=True, slots=True)
class GroupConfig:
    """The broker's group settings (Kafka's ``GroupConfig``, keys ``group.min.session.timeout.ms``,
    ``group.max.session.timeout.ms``, ``group.initial.rebalance.delay.ms``, ``group.max.size``;
    defaults are Kafka 3.9's)."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1


# --- events -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JoinRequested:
    """A JoinGroup request. ``new_member_id`` is the id the driver generated for this request
    (Kafka: ``client_id`` or ``group_instance_id`` + "-" + UUID), used only if the group must hand
    out a member id. ``require_known_member_id`` is true for JoinGroup v4+ (KIP-394);
    ``supports_skip_assignment`` for v9+ (KIP-814)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: Protocols
    new_member_id: str
    require_known_member_id: bool = True
    supports_skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncRequested:
    """A SyncGroup request; ``assignments`` are (member_id, bytes), sent by the leader only.
    ``protocol_type``/``protocol_name`` are None before SyncGroup v5."""

    member_id: str
    generation_id: int
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """A Heartbeat request."""

    member_id: str
    generation_id: int
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveRequested:
    """One member of a LeaveGroup request (answered by one ``LeaveResponse``). For v3+ batches
    use ``LeaveGroupRequested``; member_id "" with a group_instance_id names a static member by
    its instance id (administrative removal)."""

    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class LeaveGroupRequested:
    """A whole LeaveGroup request (v3+ carries several identities; v0-v2 one), each a
    ``LeaveRequested`` or a (member_id, group_instance_id) pair. Answered by one
    ``LeaveResponse`` per identity, in order, before any other output; the members are removed
    in order, so the group rebalances once for the batch unless a rebalance completes between
    two removals (as in Kafka). A Dead group answers every identity COORDINATOR_NOT_AVAILABLE
    (Kafka: that top-level error with an empty member list)."""

    members: tuple[LeaveRequested | tuple[str, str | None], ...]

    @property
    def identities(self) -> tuple[LeaveRequested, ...]:
        """``members`` as ``LeaveRequested`` values."""
        return tuple(
            m if isinstance(m, LeaveRequested) else LeaveRequested(*m) for m in self.members
        )


@dataclass(frozen=True, slots=True)
class DeleteRequested:
    """This group named in a DeleteGroups request (the driver answers GROUP_ID_NOT_FOUND itself
    for a group it does not hold)."""


@dataclass(frozen=True, slots=True)
class GroupLoaded:
    """The group was just loaded from ``__consumer_offsets`` (Kafka's ``onGroupLoaded``): every
    member's session timer restarts at ``now_ms``; a group over ``group.max.size`` rebalances."""


@dataclass(frozen=True, slots=True)
class Unload:
    """The coordinator resigned or shuts down (Kafka's ``onGroupUnloaded``): the group becomes
    Dead and parked requests are answered NOT_COORDINATOR."""


@dataclass(frozen=True, slots=True)
class Tick:
    """The driver's single timer for this group fired (armed at ``next_deadline_ms``); ``step``
    fires every deadline that is due at ``now_ms``, earliest first."""


@dataclass(frozen=True, slots=True)
class SessionExpired:
    """The session timer of ``member_id`` (a member or a pending member id) fired. Kept for
    drivers written before ``Tick``; a member whose deadline is in the future is not expired."""

    member_id: str


@dataclass(frozen=True, slots=True)
class RebalanceTimeout:
    """The rebalance timer of the current PreparingRebalance fired (before ``Tick``): the join
    completes with whoever rejoined, whatever the deadlines say."""


@dataclass(frozen=True, slots=True)
class InitialDelayElapsed:
    """``group.initial.rebalance.delay.ms`` elapsed (before ``Tick``): runs Kafka's
    ``InitialDelayedJoin`` expiry now (it may re-arm the delay)."""


Event = (
    JoinRequested
    | SyncRequested
    | Heartbeat
    | LeaveRequested
    | LeaveGroupRequested
    | DeleteRequested
    | GroupLoaded
    | Unload
    | Tick
    | SessionExpired
    | RebalanceTimeout
    | InitialDelayElapsed
)

# --- outputs ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JoinGroupMember:
    """One entry of the member list the leader receives in its JoinGroup response."""

    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True, slots=True)
class JoinResponse:
    """The JoinGroup response for ``member_id``; ``members`` is non-empty for the leader only.
    ``skip_assignment`` (v9+): the leader must not run the assignor (a static leader replaced
    in a Stable group)."""

    member_id: str
    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()
    skip_assignment: bool = False


@dataclass(frozen=True, slots=True)
class SyncResponse:
    """The SyncGroup response for ``member_id``."""

    member_id: str
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class HeartbeatResponse:
    """The Heartbeat response for ``member_id``."""

    member_id: str
    error: ErrorCode


@dataclass(frozen=True, slots=True)
class LeaveResponse:
    """The per-member LeaveGroup result for ``member_id`` (echoing the identity asked for)."""

    member_id: str
    error: ErrorCode
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class DeleteResponse:
    """The DeleteGroups result for this group: NONE (now Dead), NON_EMPTY_GROUP, or
    GROUP_ID_NOT_FOUND (already Dead)."""

    error: ErrorCode


@dataclass(frozen=True, slots=True)
class PersistGroup:
    """Write this step's snapshot as the group's ``GroupMetadataValue`` to ``__consumer_offsets``
    (Kafka's ``storeGroup``), before sending the other outputs of the same step. Emitted when
    the leader's assignment makes the group Stable, when a join completes with no member (Empty),
    and when a static member is replaced in a Stable group; a Dead group is written as a
    tombstone by the driver (DeleteGroups)."""

    generation_id: int


Output = (
    JoinResponse | SyncResponse | HeartbeatResponse | LeaveResponse | DeleteResponse | PersistGroup
)
