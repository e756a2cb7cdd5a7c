"""The classic consumer-group state machine as pure data.

Rules this module keeps:

* No I/O, no clock, no randomness. ``step(group, event, now_ms)`` maps an immutable
  ``GroupSnapshot`` and one event to a new snapshot and a tuple of outputs (responses carrying
  ``ErrorCode`` values). Whoever drives it owns timers, sockets and member-id generation.
* Every state change goes through ``can_transition``; a forbidden one raises
  ``IllegalGroupTransitionError`` (a bug, never a client error).
* Names are Kafka's: ``GroupState`` mirrors ``ClassicGroupState`` (Kafka 3.7+, formerly
  ``kafka.coordinator.group.GroupState`` in ``GroupMetadata.scala``) and its
  ``validPreviousStates`` table; the per-request checks mirror ``GroupCoordinator.doJoinGroup``,
  ``doSyncGroup``, ``handleHeartbeat`` and ``handleLeaveGroup``.

Glossary (coined here):

* *snapshot*: the immutable value of one group between two events.
* *session deadline*: ``now_ms + session_timeout_ms`` at the member's last join, sync or
  heartbeat; ``SessionExpired`` before the deadline is a stale timer and is ignored.

What is done:

* The state enum and Kafka's transition table, ``can_transition``.
* Protocol selection (``select_protocol``) and the ``supportsProtocols`` check at join.
* JoinGroup: Dead -> COORDINATOR_NOT_AVAILABLE; protocol type/protocol checks ->
  INCONSISTENT_GROUP_PROTOCOL; the KIP-394 two-step join (v4+, dynamic members: the first join
  is answered MEMBER_ID_REQUIRED with a member id that is remembered as *pending*); joins by
  unknown member ids -> UNKNOWN_MEMBER_ID; a group.instance.id bound to another member id ->
  FENCED_INSTANCE_ID; rejoin with unchanged metadata in CompletingRebalance/Stable (non-leader)
  answers the current generation without a rebalance; otherwise PreparingRebalance, parking
  the join until every member and no pending member is left, then generation + 1, protocol
  selection, leader choice and one JoinResponse per parked member (the leader's lists members).
* SyncGroup: fencing (COORDINATOR_NOT_AVAILABLE, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
  ILLEGAL_GENERATION, INCONSISTENT_GROUP_PROTOCOL for a named type/protocol that differs,
  REBALANCE_IN_PROGRESS); followers park in CompletingRebalance; the leader's assignment moves
  the group to Stable and answers every parked member (members without an assignment get empty
  bytes, as Kafka); Stable answers at once.
* Heartbeat: Kafka 3.x's order of checks; NONE in CompletingRebalance and Stable,
  REBALANCE_IN_PROGRESS in PreparingRebalance, UNKNOWN_MEMBER_ID in Empty.
* LeaveGroup (one member per event), session expiry (also of pending members), the rebalance
  timeout (drops members that did not rejoin, then completes the join) and
  ``group.initial.rebalance.delay.ms`` as a flag cleared by ``InitialDelayElapsed``.

What is not done (yet):

* Static membership beyond fencing: a known group.instance.id with an empty member id gets a new
  member id and triggers a rebalance (Kafka replaces the member without one when the group is
  Stable and the protocols are unchanged); static members are dropped by the rebalance timeout
  like dynamic ones (Kafka keeps them).
* Kafka's extension of the initial delay while new members keep arriving
  (``InitialDelayedJoin`` re-arming up to the rebalance timeout), the CompletingRebalance sync
  timeout (KIP-814 era ``DelayedSync``), ``group.max.size`` (GROUP_MAX_SIZE_REACHED), session
  timeout bounds (INVALID_SESSION_TIMEOUT), transition to Dead (group deletion/emigration) and
  batch LeaveGroup: all belong to the caller or later work.
* Timer requests are not outputs: the driver arms the rebalance timeout when a snapshot enters
  PreparingRebalance (``rebalance_timeout_ms()``), the initial delay when
  ``awaiting_initial_delay`` becomes true, and session timers from ``session_deadline_ms``.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from franz.errors import ErrorCode, FranzError

__all__ = [
    "VALID_PREVIOUS_STATES",
    "Event",
    "GroupSnapshot",
    "GroupState",
    "Heartbeat",
    "HeartbeatResponse",
    "IllegalGroupTransitionError",
    "InitialDelayElapsed",
    "JoinGroupMember",
    "JoinRequested",
    "JoinResponse",
    "LeaveRequested",
    "LeaveResponse",
    "MemberSnapshot",
    "Output",
    "RebalanceTimeout",
    "SessionExpired",
    "SyncRequested",
    "SyncResponse",
    "can_transition",
    "select_protocol",
    "step",
]

Protocols = tuple[tuple[str, bytes], ...]
"""A member's supported protocols in its order of preference: (name, metadata) pairs."""


class GroupState(enum.Enum):
    """A classic group's state; values are Kafka's names as DescribeGroups/ListGroups report them.

    * ``EMPTY``: no members, offsets may remain. Previous: PreparingRebalance.
      Next: PreparingRebalance (a member joins), Dead.
    * ``PREPARING_REBALANCE``: parking joins until all expected members rejoined. Previous:
      Stable, CompletingRebalance, Empty. Next: CompletingRebalance (join completes), Empty
      (everyone left), Dead.
    * ``COMPLETING_REBALANCE``: waiting for the leader's SyncGroup. Previous:
      PreparingRebalance. Next: Stable, PreparingRebalance, Dead.
    * ``STABLE``: assignment delivered; heartbeats answered normally. Previous:
      CompletingRebalance. Next: PreparingRebalance, Dead.
    * ``DEAD``: no members, metadata being removed. Previous: every state, Dead included.
    """

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    @property
    def valid_previous_states(self) -> frozenset[GroupState]:
        """Kafka's ``validPreviousStates`` of this state."""
        return VALID_PREVIOUS_STATES[self]


_S = GroupState
VALID_PREVIOUS_STATES: Mapping[GroupState, frozenset[GroupState]] = MappingProxyType(
    {
        _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
        _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
        _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
        _S.DEAD: frozenset(
            {_S.STABLE, _S.PREPARING_REBALANCE, _S.COMPLETING_REBALANCE, _S.EMPTY, _S.DEAD}
        ),
        _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    }
)
"""Kafka's ``validPreviousStates`` table (``ClassicGroupState``), keyed by the target state."""


def can_transition(from_state: GroupState, to_state: GroupState) -> bool:
    """Whether Kafka allows a classic group to move from ``from_state`` to ``to_state``."""
    return from_state in VALID_PREVIOUS_STATES[to_state]


class IllegalGroupTransitionError(FranzError):
    """A transition the table forbids was attempted: a coordinator bug (Kafka's
    ``IllegalStateException`` in ``transitionTo``)."""


@dataclass(frozen=True, slots=True)
class MemberSnapshot:
    """One member of a classic group (Kafka's ``ClassicGroupMember``).

    ``awaiting_join``: the member sent JoinGroup in this rebalance and is parked until the join
    completes. ``awaiting_sync``: the member sent SyncGroup in CompletingRebalance and is parked
    until the leader's assignment arrives. ``assignment`` is empty until the leader assigns.
    """

    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocols: Protocols
    assignment: bytes = b""
    awaiting_join: bool = False
    awaiting_sync: bool = False
    session_deadline_ms: int = 0

    @property
    def protocol_names(self) -> tuple[str, ...]:
        """The member's protocol names in its order of preference."""
        return tuple(name for name, _ in self.protocols)

    def metadata(self, protocol: str) -> bytes:
        """The member's metadata for ``protocol`` (KeyError if it does not support it)."""
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        raise KeyError(protocol)

    def vote(self, candidates: frozenset[str]) -> str:
        """Kafka's ``vote``: the member's first-preferred protocol among ``candidates``."""
        for name in self.protocol_names:
            if name in candidates:
                return name
        raise ValueError("member supports none of the candidate protocols")


def _freeze(members: Mapping[str, MemberSnapshot]) -> Mapping[str, MemberSnapshot]:
    return MappingProxyType(dict(members))


@dataclass(frozen=True, slots=True)
class GroupSnapshot:
    """The value of a classic group between two events (Kafka's ``ClassicGroup`` fields).

    ``members`` is a read-only mapping member_id -> MemberSnapshot in join order (the order
    breaks leader and protocol-vote ties). ``pending_member_ids``: ids handed out with
    MEMBER_ID_REQUIRED (KIP-394) whose second join has not arrived; the join cannot complete
    while any is pending. ``awaiting_initial_delay``: the group left Empty and
    ``group.initial.rebalance.delay.ms`` has not elapsed yet.
    """

    group_id: str
    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: Mapping[str, MemberSnapshot] = field(default_factory=lambda: _freeze({}))
    pending_member_ids: frozenset[str] = frozenset()
    awaiting_initial_delay: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.members, MappingProxyType):
            object.__setattr__(self, "members", _freeze(self.members))

    def static_member_id(self, group_instance_id: str) -> str | None:
        """The member id currently bound to ``group_instance_id``, if any."""
        for member_id, member in self.members.items():
            if member.group_instance_id == group_instance_id:
                return member_id
        return None

    def candidate_protocols(self) -> frozenset[str]:
        """Protocols every member supports (Kafka's ``candidateProtocols``)."""
        names: frozenset[str] | None = None
        for member in self.members.values():
            mine = frozenset(member.protocol_names)
            names = mine if names is None else names & mine
        return names or frozenset()

    def rebalance_timeout_ms(self) -> int:
        """The longest rebalance timeout among members: how long PreparingRebalance may last."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)


# --- events -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JoinRequested:
    """A JoinGroup request. ``new_member_id`` is the id the driver generated for this request
    (Kafka: ``client_id + "-" + UUID``), used only if the group must hand out a member id.
    ``require_known_member_id`` is true for JoinGroup v4+ (KIP-394)."""

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
    """One member of a LeaveGroup request."""

    member_id: str
    group_instance_id: str | None = None


@dataclass(frozen=True, slots=True)
class SessionExpired:
    """The session timer of ``member_id`` (a member or a pending member id) fired."""

    member_id: str


@dataclass(frozen=True, slots=True)
class RebalanceTimeout:
    """The rebalance timer of the current PreparingRebalance fired."""


@dataclass(frozen=True, slots=True)
class InitialDelayElapsed:
    """``group.initial.rebalance.delay.ms`` elapsed since the group left Empty."""


Event = (
    JoinRequested
    | SyncRequested
    | Heartbeat
    | LeaveRequested
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
    """The JoinGroup response for ``member_id``; ``members`` is non-empty for the leader only."""

    member_id: str
    error: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    members: tuple[JoinGroupMember, ...] = ()


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
    """The per-member LeaveGroup result for ``member_id``."""

    member_id: str
    error: ErrorCode


Output = JoinResponse | SyncResponse | HeartbeatResponse | LeaveResponse
Step = tuple[GroupSnapshot, tuple[Output, ...]]

# --- protocol selection -------------------------------------------------------------------


def select_protocol(members: Iterable[MemberSnapshot]) -> str | None:
    """Kafka's ``selectProtocol``: each member votes for its first-preferred protocol among
    those every member supports; the most votes wins. None if there is no common protocol (the
    caller answers INCONSISTENT_GROUP_PROTOCOL) or no member.

    Ties: Kafka takes whichever tied protocol its HashMap iterates to first; franz picks, among
    the tied protocols, the one the earliest member (iteration order = join order) prefers most,
    so the choice is deterministic.
    """
    ordered = list(members)
    if not ordered:
        return None
    candidates = frozenset(ordered[0].protocol_names)
    for member in ordered[1:]:
        candidates &= frozenset(member.protocol_names)
    if not candidates:
        return None
    votes: dict[str, int] = {}
    for member in ordered:
        choice = member.vote(candidates)
        votes[choice] = votes.get(choice, 0) + 1
    best = max(votes.values())
    tied = frozenset(name for name, count in votes.items() if count == best)
    return ordered[0].vote(tied)


# --- transitions --------------------------------------------------------------------------


def _transition(group: GroupSnapshot, to_state: GroupState, **changes: object) -> GroupSnapshot:
    if not can_transition(group.state, to_state):
        raise IllegalGroupTransitionError(
            f"group {group.group_id}: {group.state.value} -> {to_state.value} is not allowed"
        )
    return replace(group, state=to_state, **changes)  # type: ignore[arg-type]


def _with_members(group: GroupSnapshot, members: Mapping[str, MemberSnapshot]) -> GroupSnapshot:
    return replace(group, members=_freeze(members))


def _supports_protocols(group: GroupSnapshot, protocol_type: str, protocols: Protocols) -> bool:
    """Kafka's ``supportsProtocols``: an Empty group takes any non-empty type and list; otherwise
    the type must match and one protocol must be supported by every member."""
    if not protocol_type or not protocols:
        return False
    if group.state is GroupState.EMPTY or not group.members:
        return True
    names = frozenset(name for name, _ in protocols)
    return group.protocol_type == protocol_type and bool(names & group.candidate_protocols())


def _fence(group: GroupSnapshot, member_id: str, group_instance_id: str | None) -> ErrorCode:
    """Kafka's ``validateMember``: UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID / NONE."""
    if group_instance_id is not None:
        bound = group.static_member_id(group_instance_id)
        if bound is not None and bound != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
    if member_id not in group.members:
        return ErrorCode.UNKNOWN_MEMBER_ID
    return ErrorCode.NONE


def _prepare_rebalance(group: GroupSnapshot) -> Step:
    """Kafka's ``prepareRebalance``: parked syncs are answered REBALANCE_IN_PROGRESS and
    assignments reset when leaving CompletingRebalance; leaving Empty arms the initial delay."""
    outputs: list[Output] = []
    members = dict(group.members)
    if group.state is GroupState.COMPLETING_REBALANCE:
        for member_id, member in group.members.items():
            if member.awaiting_sync:
                outputs.append(SyncResponse(member_id, ErrorCode.REBALANCE_IN_PROGRESS))
            members[member_id] = replace(member, awaiting_sync=False, assignment=b"")
    group = _transition(
        _with_members(group, members),
        GroupState.PREPARING_REBALANCE,
        awaiting_initial_delay=group.state is GroupState.EMPTY,
    )
    return group, tuple(outputs)


def _maybe_prepare_rebalance(group: GroupSnapshot) -> Step:
    if can_transition(group.state, GroupState.PREPARING_REBALANCE):
        return _prepare_rebalance(group)
    return group, ()


def _join_response(group: GroupSnapshot, member_id: str) -> JoinResponse:
    members: tuple[JoinGroupMember, ...] = ()
    if member_id == group.leader_id and group.protocol_name is not None:
        members = tuple(
            JoinGroupMember(mid, m.group_instance_id, m.metadata(group.protocol_name))
            for mid, m in group.members.items()
        )
    return JoinResponse(
        member_id,
        ErrorCode.NONE,
        generation_id=group.generation_id,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader_id=group.leader_id or "",
        members=members,
    )


def _try_complete_join(group: GroupSnapshot, *, force: bool = False) -> Step:
    """Kafka's ``tryCompleteJoin``/``onCompleteJoin``. Without ``force`` the join completes only
    when every member rejoined, none is pending and the initial delay is over; with it (the
    rebalance timeout) members that did not rejoin are dropped first."""
    if group.state is not GroupState.PREPARING_REBALANCE:
        return group, ()
    all_joined = all(m.awaiting_join for m in group.members.values())
    if not force and (not all_joined or group.pending_member_ids or group.awaiting_initial_delay):
        return group, ()
    members = {mid: m for mid, m in group.members.items() if m.awaiting_join}
    generation = group.generation_id + 1
    if not members:
        empty = _transition(
            group,
            GroupState.EMPTY,
            members=_freeze({}),
            generation_id=generation,
            protocol_name=None,
            protocol_type=None,
            leader_id=None,
            pending_member_ids=frozenset(),
            awaiting_initial_delay=False,
        )
        return empty, ()
    protocol = select_protocol(members.values())
    if protocol is None:
        # Unreachable through step(): joins that share no protocol with the group are refused.
        raise IllegalGroupTransitionError(f"group {group.group_id}: no common protocol")
    leader = group.leader_id if group.leader_id in members else next(iter(members))
    members = {mid: replace(m, awaiting_join=False) for mid, m in members.items()}
    done = _transition(
        group,
        GroupState.COMPLETING_REBALANCE,
        members=_freeze(members),
        generation_id=generation,
        protocol_name=protocol,
        leader_id=leader,
        pending_member_ids=frozenset(),
        awaiting_initial_delay=False,
    )
    joined = [mid for mid, m in group.members.items() if m.awaiting_join]
    return done, tuple(_join_response(done, mid) for mid in joined)


def _remove_member(group: GroupSnapshot, member_id: str) -> Step:
    """Kafka's ``removeMemberAndUpdateGroup``."""
    members = {mid: m for mid, m in group.members.items() if mid != member_id}
    leader = group.leader_id
    if leader == member_id:
        leader = next(iter(members), None)
    group = replace(group, members=_freeze(members), leader_id=leader)
    outputs: tuple[Output, ...] = ()
    if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
        group, outputs = _prepare_rebalance(group)
    group, more = _try_complete_join(group)
    return group, outputs + more


def _add_member_and_rebalance(
    group: GroupSnapshot, member_id: str, event: JoinRequested, now_ms: int
) -> Step:
    member = MemberSnapshot(
        group_instance_id=event.group_instance_id,
        client_id=event.client_id,
        client_host=event.client_host,
        session_timeout_ms=event.session_timeout_ms,
        rebalance_timeout_ms=event.rebalance_timeout_ms,
        protocols=event.protocols,
        awaiting_join=True,
        session_deadline_ms=now_ms + event.session_timeout_ms,
    )
    members = dict(group.members)
    members[member_id] = member
    group = replace(
        group,
        members=_freeze(members),
        pending_member_ids=group.pending_member_ids - {member_id},
        protocol_type=event.protocol_type if not group.members else group.protocol_type,
        leader_id=group.leader_id if group.leader_id is not None else member_id,
    )
    group, out1 = _maybe_prepare_rebalance(group)
    group, out2 = _try_complete_join(group)
    return group, out1 + out2


def _join(group: GroupSnapshot, event: JoinRequested, now_ms: int) -> Step:
    def refuse(error: ErrorCode, member_id: str = event.member_id) -> Step:
        return group, (JoinResponse(member_id, error),)

    if group.state is GroupState.DEAD:
        return refuse(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    if not _supports_protocols(group, event.protocol_type, event.protocols):
        return refuse(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)

    if event.member_id == "":
        if event.group_instance_id is not None:
            old = group.static_member_id(event.group_instance_id)
            if old is not None:
                # Partial static membership: the old member id is replaced (and so fenced).
                group, out = _remove_member(group, old)
                group, more = _add_member_and_rebalance(group, event.new_member_id, event, now_ms)
                return group, out + more
            return _add_member_and_rebalance(group, event.new_member_id, event, now_ms)
        if event.require_known_member_id:
            # KIP-394: hand out the id, remember it, let the client come back with it.
            group = replace(
                group, pending_member_ids=group.pending_member_ids | {event.new_member_id}
            )
            return group, (JoinResponse(event.new_member_id, ErrorCode.MEMBER_ID_REQUIRED),)
        return _add_member_and_rebalance(group, event.new_member_id, event, now_ms)

    if event.member_id in group.pending_member_ids:
        return _add_member_and_rebalance(group, event.member_id, event, now_ms)
    error = _fence(group, event.member_id, event.group_instance_id)
    if error is not ErrorCode.NONE:
        return refuse(error)
    if group.state is GroupState.EMPTY:
        return refuse(ErrorCode.UNKNOWN_MEMBER_ID)

    member = group.members[event.member_id]
    unchanged = member.protocols == event.protocols
    refreshed = replace(
        member,
        protocols=event.protocols,
        session_timeout_ms=event.session_timeout_ms,
        rebalance_timeout_ms=event.rebalance_timeout_ms,
        session_deadline_ms=now_ms + event.session_timeout_ms,
    )
    if unchanged and (
        group.state is GroupState.COMPLETING_REBALANCE
        or (group.state is GroupState.STABLE and event.member_id != group.leader_id)
    ):
        # A lost JoinGroup response or a follower's rejoin: answer the current generation.
        group = _with_members(group, {**group.members, event.member_id: refreshed})
        return group, (_join_response(group, event.member_id),)
    members = {**group.members, event.member_id: replace(refreshed, awaiting_join=True)}
    group, out1 = _maybe_prepare_rebalance(_with_members(group, members))
    group, out2 = _try_complete_join(group)
    return group, out1 + out2


def _sync(group: GroupSnapshot, event: SyncRequested, now_ms: int) -> Step:
    def answer(error: ErrorCode) -> Step:
        return group, (SyncResponse(event.member_id, error),)

    if group.state is GroupState.DEAD:
        return answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    error = _fence(group, event.member_id, event.group_instance_id)
    if error is not ErrorCode.NONE:
        return answer(error)
    if event.generation_id != group.generation_id:
        return answer(ErrorCode.ILLEGAL_GENERATION)
    if (event.protocol_type is not None and event.protocol_type != group.protocol_type) or (
        event.protocol_name is not None and event.protocol_name != group.protocol_name
    ):
        return answer(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    if group.state is GroupState.EMPTY:
        return answer(ErrorCode.UNKNOWN_MEMBER_ID)
    if group.state is GroupState.PREPARING_REBALANCE:
        return answer(ErrorCode.REBALANCE_IN_PROGRESS)

    member = replace(
        group.members[event.member_id],
        session_deadline_ms=now_ms + group.members[event.member_id].session_timeout_ms,
    )
    if group.state is GroupState.STABLE:
        group = _with_members(group, {**group.members, event.member_id: member})
        return group, (
            SyncResponse(
                event.member_id,
                ErrorCode.NONE,
                group.protocol_type,
                group.protocol_name,
                member.assignment,
            ),
        )
    # CompletingRebalance: park; the leader's request carries everyone's assignment.
    members = {**group.members, event.member_id: replace(member, awaiting_sync=True)}
    if event.member_id != group.leader_id:
        return _with_members(group, members), ()
    assigned = dict(event.assignments)
    outputs: list[Output] = []
    for mid, m in members.items():
        assignment = assigned.get(mid, b"")
        if m.awaiting_sync:
            outputs.append(
                SyncResponse(
                    mid, ErrorCode.NONE, group.protocol_type, group.protocol_name, assignment
                )
            )
        members[mid] = replace(m, assignment=assignment, awaiting_sync=False)
    group = _transition(group, GroupState.STABLE, members=_freeze(members))
    return group, tuple(outputs)


def _heartbeat(group: GroupSnapshot, event: Heartbeat, now_ms: int) -> Step:
    def answer(g: GroupSnapshot, error: ErrorCode) -> Step:
        return g, (HeartbeatResponse(event.member_id, error),)

    if group.state is GroupState.DEAD:
        return answer(group, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    error = _fence(group, event.member_id, event.group_instance_id)
    if error is not ErrorCode.NONE:
        return answer(group, error)
    if event.generation_id != group.generation_id:
        return answer(group, ErrorCode.ILLEGAL_GENERATION)
    if group.state is GroupState.EMPTY:
        return answer(group, ErrorCode.UNKNOWN_MEMBER_ID)
    member = group.members[event.member_id]
    member = replace(member, session_deadline_ms=now_ms + member.session_timeout_ms)
    group = _with_members(group, {**group.members, event.member_id: member})
    if group.state is GroupState.PREPARING_REBALANCE:
        return answer(group, ErrorCode.REBALANCE_IN_PROGRESS)
    return answer(group, ErrorCode.NONE)


def _leave(group: GroupSnapshot, event: LeaveRequested) -> Step:
    if group.state is GroupState.DEAD:
        return group, (LeaveResponse(event.member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE),)
    if event.member_id in group.pending_member_ids:
        group = replace(group, pending_member_ids=group.pending_member_ids - {event.member_id})
        group, out = _try_complete_join(group)
        return group, (LeaveResponse(event.member_id, ErrorCode.NONE), *out)
    error = _fence(group, event.member_id, event.group_instance_id)
    if error is not ErrorCode.NONE:
        return group, (LeaveResponse(event.member_id, error),)
    group, out = _remove_member(group, event.member_id)
    return group, (LeaveResponse(event.member_id, ErrorCode.NONE), *out)


def _session_expired(group: GroupSnapshot, event: SessionExpired, now_ms: int) -> Step:
    if event.member_id in group.pending_member_ids:
        group = replace(group, pending_member_ids=group.pending_member_ids - {event.member_id})
        return _try_complete_join(group)
    member = group.members.get(event.member_id)
    if member is None or now_ms < member.session_deadline_ms:
        return group, ()  # stale timer
    return _remove_member(group, event.member_id)


def step(group: GroupSnapshot, event: Event, now_ms: int) -> Step:
    """Apply one event to ``group`` at time ``now_ms``; returns the new snapshot and outputs.

    Pure: the same arguments always give the same result, and ``group`` is never mutated.
    """
    match event:
        case JoinRequested():
            return _join(group, event, now_ms)
        case SyncRequested():
            return _sync(group, event, now_ms)
        case Heartbeat():
            return _heartbeat(group, event, now_ms)
        case LeaveRequested():
            return _leave(group, event)
        case SessionExpired():
            return _session_expired(group, event, now_ms)
        case RebalanceTimeout():
            return _try_complete_join(group, force=True)
        case InitialDelayElapsed():
            if not group.awaiting_initial_delay:
                return group, ()
            return _try_complete_join(replace(group, awaiting_initial_delay=False))
