"""The classic consumer-group state machine as pure data.

Rules this module keeps:

* No I/O, no clock, no randomness. ``step(group, event, now_ms)`` maps an immutable
  ``GroupSnapshot`` and one event (``events.py``, re-exported here) to a new snapshot and a tuple
  of outputs. Whoever drives it owns sockets, persistence, member-id generation and ONE timer
  per group, armed at ``next_deadline_ms(group)``; when it fires the driver steps ``Tick()``.
* Every state change goes through ``can_transition``; a forbidden one raises
  ``IllegalGroupTransitionError`` (a bug, never a client error).
* Names are Kafka's: ``GroupState`` mirrors ``ClassicGroupState`` and its
  ``validPreviousStates``; the handlers mirror Kafka 3.7-3.9's ``GroupCoordinator.scala``
  (``handleJoinGroup``, ``doSyncGroup``, ``handleHeartbeat``, ``handleLeaveGroup``,
  ``handleDeleteGroups``, ``onCompleteJoin``, ``onExpirePendingSync``, ``onExpireHeartbeat``,
  ``onGroupLoaded``/``onGroupUnloaded``) and ``GroupMetadata.scala``.

Glossary (coined here):

* *snapshot*: the immutable value of one group between two events.
* *deadline*: an absolute time in ms at which something is due. Kafka's delayed operations map to
  snapshot fields: ``DelayedHeartbeat`` -> ``MemberSnapshot.session_deadline_ms`` and
  ``pending_deadlines``; ``DelayedJoin`` -> ``rebalance_deadline_ms``; ``InitialDelayedJoin`` ->
  ``initial_delay_deadline_ms``; ``DelayedSync`` -> ``sync_deadline_ms``.
* *exempt*: a member parked in JoinGroup or SyncGroup that is not new; Kafka's
  ``hasSatisfiedHeartbeat`` is true for it, so its session deadline cannot fire (it is re-armed
  when the member is answered).

What is done:

* The state table; protocol selection; ``group.min/max.session.timeout.ms`` (checked first:
  INVALID_SESSION_TIMEOUT), ``group.max.size`` (``acceptJoiningMember``: GROUP_MAX_SIZE_REACHED,
  the refused member id is dropped; a loaded group over capacity rebalances).
* JoinGroup: KIP-394 pending members (expire after their first join's session timeout, survive a
  completed join as in Kafka); new members expire after ``NEW_MEMBER_JOIN_TIMEOUT_MS`` until
  answered; KIP-345 static members: a known instance id with an empty member id replaces the old
  id (its parked join/sync is answered FENCED_INSTANCE_ID) without a rebalance in Stable when
  the selected protocol would not change (``skip_assignment`` for a v9+ leader), with one in
  CompletingRebalance; the rebalance timeout keeps static members that did not rejoin and drops
  dynamic ones; when nobody rejoined the rebalance timer is re-armed.
* The initial delay as Kafka's ``InitialDelayedJoin`` (re-armed for ``min(delay, remaining)``
  while new members arrive during the group's first generation; a delay of 0 completes at once).
* The KIP-814-era sync timeout (``DelayedSync``): members that did not SyncGroup within the
  rebalance timeout after the join completed are removed and the group rebalances.
* SyncGroup, Heartbeat, LeaveGroup (single and v3+ batches, static members by instance id),
  DeleteGroups (Empty -> Dead), unload, load; ``validate_offset_commit`` /
  ``accept_offset_commit`` / ``validate_offset_delete`` / ``subscribed_topics``.

What is not done (yet):

* Failed ``PersistGroup`` writes: Kafka answers the leader's SyncGroup with the write error and
  rebalances, or reverts a static replacement; here the snapshot has already moved on, and the
  driver can only map the error on the held responses (see ``PersistGroup``).
* A parked request replaced by a second request from the same member id (Kafka drops the older
  callback unanswered): the driver must answer the older one itself.
* A member removed by LeaveGroup while parked in SyncGroup: Kafka never answers that sync;
  franz answers it UNKNOWN_MEMBER_ID (so every parked request gets exactly one response).
* This module is ~1100 lines, over the ~600 rule: the data model could move next to the events
  and the join/static-membership handlers into a module of their own.
* ``subscribed_topics`` decodes the current members on demand; Kafka caches the set at each new
  generation and at load.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from franz.coordinator.group.consumer_protocol import CONSUMER_PROTOCOL_TYPE, subscribed_topics
from franz.coordinator.group.events import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    DeleteRequested,
    DeleteResponse,
    Event,
    GroupConfig,
    GroupLoaded,
    Heartbeat,
    HeartbeatResponse,
    InitialDelayElapsed,
    JoinGroupMember,
    JoinRequested,
    JoinResponse,
    LeaveGroupRequested,
    LeaveRequested,
    LeaveResponse,
    Output,
    PersistGroup,
    Protocols,
    RebalanceTimeout,
    SessionExpired,
    SyncRequested,
    SyncResponse,
    Tick,
    Unload,
)
from franz.errors import ErrorCode, FranzError

__all__ = [
    "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "VALID_PREVIOUS_STATES",
    "DeleteRequested",
    "DeleteResponse",
    "Event",
    "GroupConfig",
    "GroupLoaded",
    "GroupSnapshot",
    "GroupState",
    "Heartbeat",
    "HeartbeatResponse",
    "IllegalGroupTransitionError",
    "InitialDelayElapsed",
    "JoinGroupMember",
    "JoinRequested",
    "JoinResponse",
    "LeaveGroupRequested",
    "LeaveRequested",
    "LeaveResponse",
    "MemberSnapshot",
    "Output",
    "PersistGroup",
    "Protocols",
    "RebalanceTimeout",
    "SessionExpired",
    "SyncRequested",
    "SyncResponse",
    "Tick",
    "Unload",
    "accept_offset_commit",
    "can_transition",
    "next_deadline_ms",
    "select_protocol",
    "step",
    "subscribed_topics",
    "validate_offset_commit",
    "validate_offset_delete",
]


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
    ``is_new``: added by a JoinGroup that has not been answered yet (Kafka's ``isNew``; its
    session deadline is ``NEW_MEMBER_JOIN_TIMEOUT_MS`` after the join and it is never exempt).
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
    is_new: bool = False

    @property
    def exempt(self) -> bool:
        """Kafka's ``hasSatisfiedHeartbeat`` without a heartbeat: a parked, non-new member."""
        return not self.is_new and (self.awaiting_join or self.awaiting_sync)

    def matches(self, protocols: Protocols) -> bool:
        """Kafka's ``matches``: the same protocols, in the same order, with the same metadata."""
        return self.protocols == protocols

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
    """The value of a classic group between two events (Kafka's ``GroupMetadata`` fields).

    ``members`` is a read-only mapping member_id -> MemberSnapshot in join order (the order
    breaks leader and protocol-vote ties). ``pending_member_ids``: ids handed out with
    MEMBER_ID_REQUIRED (KIP-394) whose second join has not arrived; the join cannot complete on
    its own while any is pending; ``pending_deadlines`` maps them to their expiry (first join +
    its session timeout). ``pending_sync_member_ids``: members that have not sent SyncGroup since
    the last join completed (Kafka's ``pendingSyncMembers``), removed at ``sync_deadline_ms``.

    Deadlines (absolute ms, None = not armed): ``rebalance_deadline_ms`` (``DelayedJoin``: the
    join completes with whoever rejoined), ``initial_delay_deadline_ms`` (``InitialDelayedJoin``
    of a group leaving Empty, with ``initial_delay_ms`` its current delay and
    ``initial_delay_remaining_ms`` what is left of the rebalance timeout; ``new_member_added`` is
    Kafka's flag that re-arms it), ``sync_deadline_ms`` (``DelayedSync``). At most one of the
    first two is armed, and only in PreparingRebalance. ``awaiting_initial_delay`` is true while
    the initial delay is armed (kept for drivers written before ``Tick``).
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
    config: GroupConfig = field(default_factory=GroupConfig)
    pending_deadlines: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    pending_sync_member_ids: frozenset[str] = frozenset()
    rebalance_deadline_ms: int | None = None
    initial_delay_deadline_ms: int | None = None
    initial_delay_ms: int = 0
    initial_delay_remaining_ms: int = 0
    new_member_added: bool = False
    sync_deadline_ms: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.members, MappingProxyType):
            object.__setattr__(self, "members", _freeze(self.members))
        if not isinstance(self.pending_deadlines, MappingProxyType):
            object.__setattr__(
                self, "pending_deadlines", MappingProxyType(dict(self.pending_deadlines))
            )

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


Step = tuple[GroupSnapshot, tuple[Output, ...]]

# --- transitions and membership bookkeeping -----------------------------------------------


def _transition(group: GroupSnapshot, to_state: GroupState, **changes: object) -> GroupSnapshot:
    if not can_transition(group.state, to_state):
        raise IllegalGroupTransitionError(
            f"group {group.group_id}: {group.state.value} -> {to_state.value} is not allowed"
        )
    return replace(group, state=to_state, **changes)  # type: ignore[arg-type]


def _with_members(group: GroupSnapshot, members: Mapping[str, MemberSnapshot]) -> GroupSnapshot:
    return replace(group, members=_freeze(members))


def _put(group: GroupSnapshot, member_id: str, member: MemberSnapshot) -> GroupSnapshot:
    return _with_members(group, {**group.members, member_id: member})


def _armed(member: MemberSnapshot, now_ms: int) -> MemberSnapshot:
    """Kafka's ``completeAndScheduleNextHeartbeatExpiration``."""
    return replace(member, session_deadline_ms=now_ms + member.session_timeout_ms)


def _without_pending(group: GroupSnapshot, member_id: str) -> GroupSnapshot:
    deadlines = {k: v for k, v in group.pending_deadlines.items() if k != member_id}
    return replace(
        group,
        pending_member_ids=group.pending_member_ids - {member_id},
        pending_deadlines=MappingProxyType(deadlines),
    )


def _bare_remove(group: GroupSnapshot, member_id: str) -> GroupSnapshot:
    """Kafka's ``GroupMetadata.remove``: no callbacks, no rebalance; the leader passes to the
    first remaining member."""
    members = {mid: m for mid, m in group.members.items() if mid != member_id}
    leader = group.leader_id
    if leader == member_id:
        leader = next(iter(members), None)
    group = _without_pending(group, member_id)
    return replace(
        group,
        members=_freeze(members),
        leader_id=leader,
        pending_sync_member_ids=group.pending_sync_member_ids - {member_id},
    )


def _supports_protocols(group: GroupSnapshot, protocol_type: str, protocols: Protocols) -> bool:
    """Kafka's ``supportsProtocols``: an Empty group takes any non-empty type and list; otherwise
    the type must match and one protocol must be supported by every member."""
    if not protocol_type or not protocols:
        return False
    if group.state is GroupState.EMPTY or not group.members:
        return True
    names = frozenset(name for name, _ in protocols)
    return group.protocol_type == protocol_type and bool(names & group.candidate_protocols())


def _validate_member(group: GroupSnapshot, member_id: str, instance_id: str | None) -> ErrorCode:
    """Kafka's ``validateCurrentMember``: an instance id must exist and be bound to
    ``member_id`` (else UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID); the member id must exist."""
    if instance_id is not None:
        bound = group.static_member_id(instance_id)
        if bound is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if bound != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
    if member_id not in group.members:
        return ErrorCode.UNKNOWN_MEMBER_ID
    return ErrorCode.NONE


def _join_response(group: GroupSnapshot, member_id: str) -> JoinResponse:
    members: tuple[JoinGroupMember, ...] = ()
    if member_id == group.leader_id and group.protocol_name is not None:
        members = _member_list(group)
    return JoinResponse(
        member_id,
        ErrorCode.NONE,
        generation_id=group.generation_id,
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader_id=group.leader_id or "",
        members=members,
    )


def _member_list(group: GroupSnapshot) -> tuple[JoinGroupMember, ...]:
    """Kafka's ``currentMemberMetadata``: every member, with its metadata for the protocol."""
    assert group.protocol_name is not None
    return tuple(
        JoinGroupMember(mid, m.group_instance_id, m.metadata(group.protocol_name))
        for mid, m in group.members.items()
    )


def _clear_timers(group: GroupSnapshot) -> GroupSnapshot:
    return replace(
        group,
        rebalance_deadline_ms=None,
        initial_delay_deadline_ms=None,
        awaiting_initial_delay=False,
    )


# --- rebalance ----------------------------------------------------------------------------


def _prepare_rebalance(group: GroupSnapshot, now_ms: int) -> Step:
    """Kafka's ``prepareRebalance``: parked syncs are answered REBALANCE_IN_PROGRESS and
    assignments reset when leaving CompletingRebalance; the sync timer is cancelled; leaving
    Empty arms ``InitialDelayedJoin``, anything else ``DelayedJoin`` (the rebalance timeout)."""
    outputs: list[Output] = []
    if group.state is GroupState.COMPLETING_REBALANCE:
        members = dict(group.members)
        for member_id, member in group.members.items():
            if member.awaiting_sync:
                outputs.append(SyncResponse(member_id, ErrorCode.REBALANCE_IN_PROGRESS))
                member = _armed(member, now_ms)
            members[member_id] = replace(member, awaiting_sync=False, assignment=b"")
        group = _with_members(group, members)
    timeout = group.rebalance_timeout_ms()
    if group.state is GroupState.EMPTY:
        delay = group.config.initial_rebalance_delay_ms
        timers: dict[str, object] = {
            "initial_delay_deadline_ms": now_ms + delay,
            "initial_delay_ms": delay,
            "initial_delay_remaining_ms": max(timeout - delay, 0),
            "awaiting_initial_delay": True,
            "rebalance_deadline_ms": None,
        }
    else:
        timers = {"rebalance_deadline_ms": now_ms + timeout}
    group = _transition(
        group,
        GroupState.PREPARING_REBALANCE,
        pending_sync_member_ids=frozenset(),
        sync_deadline_ms=None,
        **timers,
    )
    if group.initial_delay_deadline_ms is not None and group.initial_delay_deadline_ms <= now_ms:
        group, more = _expire_initial_delay(group, now_ms)  # a delay of 0: no delay at all
    else:
        group, more = _try_complete_join(group, now_ms)
    return group, (*outputs, *more)


def _maybe_prepare_rebalance(group: GroupSnapshot, now_ms: int) -> Step:
    if can_transition(group.state, GroupState.PREPARING_REBALANCE):
        return _prepare_rebalance(group, now_ms)
    return group, ()


def _try_complete_join(group: GroupSnapshot, now_ms: int) -> Step:
    """``DelayedJoin.tryComplete``: complete once every member rejoined and none is pending;
    never while ``InitialDelayedJoin`` is armed (its ``tryComplete`` is false)."""
    if group.state is not GroupState.PREPARING_REBALANCE or group.awaiting_initial_delay:
        return group, ()
    if group.pending_member_ids or not all(m.awaiting_join for m in group.members.values()):
        return group, ()
    return _complete_join(group, now_ms)


def _expire_initial_delay(group: GroupSnapshot, now_ms: int) -> Step:
    """``InitialDelayedJoin.onComplete``: while new members joined during the last delay and
    rebalance time remains, wait ``min(configured delay, remaining)`` more (remaining shrinks by
    the delay that just ended); otherwise complete the join."""
    while group.new_member_added and group.initial_delay_remaining_ms != 0:
        delay = min(group.config.initial_rebalance_delay_ms, group.initial_delay_remaining_ms)
        group = replace(
            group,
            new_member_added=False,
            initial_delay_deadline_ms=now_ms + delay,
            initial_delay_remaining_ms=max(
                group.initial_delay_remaining_ms - group.initial_delay_ms, 0
            ),
            initial_delay_ms=delay,
        )
        if delay > 0:
            return group, ()
    return _complete_join(group, now_ms)


def _complete_join(group: GroupSnapshot, now_ms: int) -> Step:
    """Kafka's ``onCompleteJoin``: drop dynamic members that did not rejoin (static ones stay),
    keep or elect a leader among the rejoined; if nobody rejoined re-arm the rebalance timer;
    else next generation (CompletingRebalance, every parked join answered, every member's
    session re-armed and expected to sync before ``sync_deadline_ms``) or Empty."""
    group = _clear_timers(group)
    for mid, member in group.members.items():
        if not member.awaiting_join and member.group_instance_id is None:
            group = _bare_remove(group, mid)
    joined = [mid for mid, m in group.members.items() if m.awaiting_join]
    if group.members and not joined:
        deadline = now_ms + group.rebalance_timeout_ms()
        return replace(group, rebalance_deadline_ms=deadline), ()
    generation = group.generation_id + 1
    if not group.members:
        empty = _transition(
            group, GroupState.EMPTY, generation_id=generation, protocol_name=None, leader_id=None
        )
        return empty, (PersistGroup(generation),)
    leader = group.leader_id if group.leader_id in joined else joined[0]
    protocol = select_protocol(group.members.values())
    if protocol is None:
        # Unreachable through step(): joins that share no protocol with the group are refused.
        raise IllegalGroupTransitionError(f"group {group.group_id}: no common protocol")
    members = {
        mid: _armed(replace(m, awaiting_join=False, is_new=False), now_ms)
        for mid, m in group.members.items()
    }
    done = _transition(
        group,
        GroupState.COMPLETING_REBALANCE,
        members=_freeze(members),
        generation_id=generation,
        protocol_name=protocol,
        leader_id=leader,
        pending_sync_member_ids=frozenset(members),
        sync_deadline_ms=now_ms + group.rebalance_timeout_ms(),
    )
    return done, tuple(_join_response(done, mid) for mid in joined)


def _remove_member(group: GroupSnapshot, member_id: str, now_ms: int) -> Step:
    """Kafka's ``removeMemberAndUpdateGroup``: a parked join is answered UNKNOWN_MEMBER_ID (a
    parked sync too: franz's choice, Kafka leaves it unanswered), then the group rebalances."""
    member = group.members[member_id]
    outputs: list[Output] = []
    if member.awaiting_join:
        outputs.append(JoinResponse(member_id, ErrorCode.UNKNOWN_MEMBER_ID))
    if member.awaiting_sync:
        outputs.append(SyncResponse(member_id, ErrorCode.UNKNOWN_MEMBER_ID))
    group = _bare_remove(group, member_id)
    if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
        group, more = _prepare_rebalance(group, now_ms)
    else:
        group, more = _try_complete_join(group, now_ms)
    return group, (*outputs, *more)


def _remove_pending(group: GroupSnapshot, member_id: str, now_ms: int) -> Step:
    """Kafka's ``removePendingMemberAndUpdateGroup``."""
    return _try_complete_join(_without_pending(group, member_id), now_ms)


# --- JoinGroup ----------------------------------------------------------------------------


def _accept_joining_member(group: GroupSnapshot, member_id: str) -> bool:
    """Kafka's ``acceptJoiningMember`` (``group.max.size``): in PreparingRebalance count the
    members already rejoined (a group shrunk by a config change sheds the last rejoiners); in
    CompletingRebalance/Stable existing members are always accepted."""
    limit = group.config.max_size
    member = group.members.get(member_id)
    if group.state is GroupState.PREPARING_REBALANCE:
        awaiting = sum(m.awaiting_join for m in group.members.values())
        return (member is not None and member.awaiting_join) or awaiting < limit
    if group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
        return member is not None or len(group.members) < limit
    return True


def _join(group: GroupSnapshot, event: JoinRequested, now_ms: int) -> Step:
    cfg = group.config
    if not cfg.min_session_timeout_ms <= event.session_timeout_ms <= cfg.max_session_timeout_ms:
        return group, (JoinResponse(event.member_id, ErrorCode.INVALID_SESSION_TIMEOUT),)
    if not _accept_joining_member(group, event.member_id):
        group = _bare_remove(group, event.member_id)
        group, out = _try_complete_join(group, now_ms)
        return group, (JoinResponse("", ErrorCode.GROUP_MAX_SIZE_REACHED), *out)
    answer_id = event.member_id or ""
    if group.state is GroupState.DEAD:
        return group, (JoinResponse(answer_id, ErrorCode.COORDINATOR_NOT_AVAILABLE),)
    if not _supports_protocols(group, event.protocol_type, event.protocols):
        return group, (JoinResponse(answer_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL),)
    if event.member_id == "":
        group, out = _join_new_member(group, event, now_ms)
    elif event.member_id in group.pending_member_ids:
        group, out = _add_member_and_rebalance(group, event.member_id, event, now_ms)
    else:
        error = _validate_member(group, event.member_id, event.group_instance_id)
        if error is not ErrorCode.NONE:
            return group, (JoinResponse(event.member_id, error),)
        group, out = _join_current_member(group, event, now_ms)
    group, more = _try_complete_join(group, now_ms)
    return group, (*out, *more)


def _join_new_member(group: GroupSnapshot, event: JoinRequested, now_ms: int) -> Step:
    """Kafka's ``doStaticNewMemberJoinGroup`` / ``doDynamicNewMemberJoinGroup``."""
    new_id = event.new_member_id
    if event.group_instance_id is not None:
        old = group.static_member_id(event.group_instance_id)
        if old is not None:
            return _update_static_member(group, old, event, now_ms)
        return _add_member_and_rebalance(group, new_id, event, now_ms)
    if event.require_known_member_id:
        # KIP-394: hand out the id, remember it, let the client come back with it.
        group = replace(
            group,
            pending_member_ids=group.pending_member_ids | {new_id},
            pending_deadlines=MappingProxyType(
                {**group.pending_deadlines, new_id: now_ms + event.session_timeout_ms}
            ),
        )
        return group, (JoinResponse(new_id, ErrorCode.MEMBER_ID_REQUIRED),)
    return _add_member_and_rebalance(group, new_id, event, now_ms)


def _add_member_and_rebalance(
    group: GroupSnapshot, member_id: str, event: JoinRequested, now_ms: int
) -> Step:
    """Kafka's ``addMemberAndRebalance``."""
    member = MemberSnapshot(
        group_instance_id=event.group_instance_id,
        client_id=event.client_id,
        client_host=event.client_host,
        session_timeout_ms=event.session_timeout_ms,
        rebalance_timeout_ms=event.rebalance_timeout_ms,
        protocols=event.protocols,
        awaiting_join=True,
        session_deadline_ms=now_ms + NEW_MEMBER_JOIN_TIMEOUT_MS,
        is_new=True,
    )
    added = group.state is GroupState.PREPARING_REBALANCE and group.generation_id == 0
    group = _without_pending(group, member_id)
    group = replace(
        _put(group, member_id, member),
        protocol_type=event.protocol_type if not group.members else group.protocol_type,
        leader_id=group.leader_id if group.leader_id is not None else member_id,
        new_member_added=group.new_member_added or added,
    )
    return _maybe_prepare_rebalance(group, now_ms)


def _rejoined(member: MemberSnapshot, event: JoinRequested) -> MemberSnapshot:
    """Kafka's ``updateMember`` with a callback: new protocols and timeouts, parked."""
    return replace(
        member,
        protocols=event.protocols,
        session_timeout_ms=event.session_timeout_ms,
        rebalance_timeout_ms=event.rebalance_timeout_ms,
        awaiting_join=True,
    )


def _join_current_member(group: GroupSnapshot, event: JoinRequested, now_ms: int) -> Step:
    """Kafka's ``doCurrentMemberJoinGroup`` after validation."""
    member_id = event.member_id
    member = group.members[member_id]
    if group.state is GroupState.EMPTY:
        return group, (JoinResponse(member_id, ErrorCode.UNKNOWN_MEMBER_ID),)
    unchanged = member.matches(event.protocols)
    if unchanged and (
        group.state is GroupState.COMPLETING_REBALANCE
        or (group.state is GroupState.STABLE and member_id != group.leader_id)
    ):
        # A lost JoinGroup response or a follower's rejoin: answer the current generation.
        return group, (_join_response(group, member_id),)
    group = _put(group, member_id, _rejoined(member, event))
    return _maybe_prepare_rebalance(group, now_ms)


def _update_static_member(
    group: GroupSnapshot, old_id: str, event: JoinRequested, now_ms: int
) -> Step:
    """Kafka's ``updateStaticMemberAndRebalance``: the instance's old member id is replaced by
    the new one (its parked requests answered FENCED_INSTANCE_ID), keeping the assignment. In
    Stable without a protocol change the group does not rebalance: the join is answered at once
    after ``PersistGroup``; v9+ leaders get the member list and ``skip_assignment``, others (and
    older leaders) get the previous leader id so that nobody runs the assignor."""
    new_id = event.new_member_id
    old = group.members[old_id]
    outputs: list[Output] = []
    if old.awaiting_join:
        outputs.append(JoinResponse(old_id, ErrorCode.FENCED_INSTANCE_ID))
    if old.awaiting_sync:
        outputs.append(SyncResponse(old_id, ErrorCode.FENCED_INSTANCE_ID))
    previous_leader = group.leader_id
    member = _rejoined(replace(_armed(old, now_ms), awaiting_sync=False), event)
    members = {(new_id if mid == old_id else mid): m for mid, m in group.members.items()}
    members[new_id] = member
    pending_sync = group.pending_sync_member_ids
    if old_id in pending_sync:
        pending_sync = (pending_sync - {old_id}) | {new_id}
    group = replace(
        _with_members(group, members),
        leader_id=new_id if previous_leader == old_id else previous_leader,
        pending_sync_member_ids=pending_sync,
    )
    if group.state is GroupState.STABLE:
        if select_protocol(group.members.values()) != group.protocol_name:
            group, more = _prepare_rebalance(group, now_ms)
            return group, (*outputs, *more)
        group = _put(group, new_id, replace(member, awaiting_join=False))
        is_leader = group.leader_id == new_id
        if event.supports_skip_assignment:
            response = replace(_join_response(group, new_id), skip_assignment=is_leader)
        else:
            response = replace(
                _join_response(group, new_id), members=(), leader_id=previous_leader or ""
            )
        return group, (*outputs, PersistGroup(group.generation_id), response)
    if group.state is GroupState.COMPLETING_REBALANCE:
        group, more = _prepare_rebalance(group, now_ms)
        return group, (*outputs, *more)
    return group, tuple(outputs)  # PreparingRebalance: parked like any rejoin


# --- SyncGroup, Heartbeat, LeaveGroup, DeleteGroups -----------------------------------------


def _sync(group: GroupSnapshot, event: SyncRequested, now_ms: int) -> Step:
    def answer(error: ErrorCode) -> Step:
        return group, (SyncResponse(event.member_id, error),)

    if group.state is GroupState.DEAD:
        return answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)
    error = _validate_member(group, event.member_id, event.group_instance_id)
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

    pending_sync = group.pending_sync_member_ids - {event.member_id}
    group = replace(
        group,
        pending_sync_member_ids=pending_sync,
        sync_deadline_ms=group.sync_deadline_ms if pending_sync else None,
    )
    member = group.members[event.member_id]
    if group.state is GroupState.STABLE:
        group = _put(group, event.member_id, _armed(member, now_ms))
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
            m = _armed(m, now_ms)
        members[mid] = replace(m, assignment=assignment, awaiting_sync=False)
    group = _transition(group, GroupState.STABLE, members=_freeze(members))
    return group, (PersistGroup(group.generation_id), *outputs)


def _heartbeat(group: GroupSnapshot, event: Heartbeat, now_ms: int) -> Step:
    def answer(g: GroupSnapshot, error: ErrorCode) -> Step:
        return g, (HeartbeatResponse(event.member_id, error),)

    if group.state is GroupState.DEAD:
        return answer(group, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    error = _validate_member(group, event.member_id, event.group_instance_id)
    if error is not ErrorCode.NONE:
        return answer(group, error)
    if event.generation_id != group.generation_id:
        return answer(group, ErrorCode.ILLEGAL_GENERATION)
    if group.state is GroupState.EMPTY:
        return answer(group, ErrorCode.UNKNOWN_MEMBER_ID)
    group = _put(group, event.member_id, _armed(group.members[event.member_id], now_ms))
    if group.state is GroupState.PREPARING_REBALANCE:
        return answer(group, ErrorCode.REBALANCE_IN_PROGRESS)
    return answer(group, ErrorCode.NONE)


def _leave_one(group: GroupSnapshot, who: LeaveRequested, now_ms: int) -> Step:
    """One identity of Kafka's ``handleLeaveGroup``: the ``LeaveResponse`` comes first."""

    def done(g: GroupSnapshot, error: ErrorCode, out: tuple[Output, ...] = ()) -> Step:
        return g, (LeaveResponse(who.member_id, error, who.group_instance_id), *out)

    if who.member_id == "":
        # v3+ administrative removal of a static member by its instance id.
        instance = who.group_instance_id
        bound = None if instance is None else group.static_member_id(instance)
        if bound is None:
            return done(group, ErrorCode.UNKNOWN_MEMBER_ID)
        after, out = _remove_member(group, bound, now_ms)
        return done(after, ErrorCode.NONE, out)
    if who.member_id in group.pending_member_ids:
        after, out = _remove_pending(group, who.member_id, now_ms)
        return done(after, ErrorCode.NONE, out)
    error = _validate_member(group, who.member_id, who.group_instance_id)
    if error is not ErrorCode.NONE:
        return done(group, error)
    after, out = _remove_member(group, who.member_id, now_ms)
    return done(after, ErrorCode.NONE, out)


def _leave(group: GroupSnapshot, event: LeaveRequested, now_ms: int) -> Step:
    if group.state is GroupState.DEAD:
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        return group, (LeaveResponse(event.member_id, error, event.group_instance_id),)
    return _leave_one(group, event, now_ms)


def _leave_group(group: GroupSnapshot, event: LeaveGroupRequested, now_ms: int) -> Step:
    if group.state is GroupState.DEAD:
        error = ErrorCode.COORDINATOR_NOT_AVAILABLE
        return group, tuple(
            LeaveResponse(w.member_id, error, w.group_instance_id) for w in event.identities
        )
    answers: list[Output] = []
    outputs: list[Output] = []
    for who in event.identities:
        group, out = _leave_one(group, who, now_ms)
        answers.append(out[0])
        outputs.extend(out[1:])
    return group, (*answers, *outputs)


def _delete(group: GroupSnapshot) -> Step:
    """Kafka's ``handleDeleteGroups`` for one held group."""
    if group.state is GroupState.DEAD:
        return group, (DeleteResponse(ErrorCode.GROUP_ID_NOT_FOUND),)
    if group.state is not GroupState.EMPTY:
        return group, (DeleteResponse(ErrorCode.NON_EMPTY_GROUP),)
    dead = _transition(
        _clear_timers(group),
        GroupState.DEAD,
        pending_member_ids=frozenset(),
        pending_deadlines=MappingProxyType({}),
    )
    return dead, (DeleteResponse(ErrorCode.NONE),)


def _unload(group: GroupSnapshot) -> Step:
    """Kafka's ``onGroupUnloaded``: Dead, parked requests answered NOT_COORDINATOR."""
    outputs: list[Output] = []
    members = dict(group.members)
    for mid, m in group.members.items():
        if m.awaiting_join:
            outputs.append(JoinResponse(mid, ErrorCode.NOT_COORDINATOR))
        if m.awaiting_sync:
            outputs.append(SyncResponse(mid, ErrorCode.NOT_COORDINATOR))
        members[mid] = replace(m, awaiting_join=False, awaiting_sync=False)
    dead = _transition(
        _clear_timers(_with_members(group, members)),
        GroupState.DEAD,
        pending_sync_member_ids=frozenset(),
        sync_deadline_ms=None,
    )
    return dead, tuple(outputs)


def _loaded(group: GroupSnapshot, now_ms: int) -> Step:
    """Kafka's ``onGroupLoaded``: sessions restart now; over ``group.max.size`` -> rebalance."""
    group = _with_members(group, {mid: _armed(m, now_ms) for mid, m in group.members.items()})
    if len(group.members) > group.config.max_size:
        return _maybe_prepare_rebalance(group, now_ms)
    return group, ()


def _expire_sync(group: GroupSnapshot, now_ms: int) -> Step:
    """Kafka's ``onExpirePendingSync``: members that did not sync are removed; rebalance."""
    group = replace(group, sync_deadline_ms=None)
    if group.state not in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
        return group, ()
    if not group.pending_sync_member_ids:
        return group, ()
    for member_id in [mid for mid in group.members if mid in group.pending_sync_member_ids]:
        group = _bare_remove(group, member_id)
    return _prepare_rebalance(group, now_ms)


def _expire_session(group: GroupSnapshot, member_id: str, now_ms: int) -> Step:
    """Kafka's ``onExpireHeartbeat`` for a member whose deadline passed."""
    member = group.members.get(member_id)
    if member is None or now_ms < member.session_deadline_ms or member.exempt:
        return group, ()
    return _remove_member(group, member_id, now_ms)


# --- deadlines ----------------------------------------------------------------------------

_SESSION, _PENDING, _JOIN, _SYNC = range(4)


def _deadlines(group: GroupSnapshot) -> list[tuple[int, int, str]]:
    """Every armed deadline as (due_ms, kind, member id or ""), in Kafka's firing order."""
    if group.state is GroupState.DEAD:
        return []
    found = [
        (m.session_deadline_ms, _SESSION, mid) for mid, m in group.members.items() if not m.exempt
    ]
    found += [(due, _PENDING, mid) for mid, due in group.pending_deadlines.items()]
    for due in (group.initial_delay_deadline_ms, group.rebalance_deadline_ms):
        if due is not None:
            found.append((due, _JOIN, ""))
    if group.sync_deadline_ms is not None:
        found.append((group.sync_deadline_ms, _SYNC, ""))
    return sorted(found)


def next_deadline_ms(group: GroupSnapshot) -> int | None:
    """When the driver's timer for ``group`` must fire next (then ``step(group, Tick(), now)``);
    None when nothing is armed. Re-arm after every ``step``: any event may change it."""
    found = _deadlines(group)
    return found[0][0] if found else None


def _tick(group: GroupSnapshot, now_ms: int) -> Step:
    """Fire every deadline due at ``now_ms``, earliest first (session expiries before pending
    expiries before the join timer before the sync timer at equal times). A timer is fired at
    most once per tick, so a timeout of 0 cannot spin."""
    outputs: list[Output] = []
    fired: set[tuple[int, str]] = set()
    while True:
        due = [d for d in _deadlines(group) if d[0] <= now_ms and (d[1], d[2]) not in fired]
        if not due:
            return group, tuple(outputs)
        _, kind, member_id = due[0]
        fired.add((kind, member_id))
        if kind == _SESSION:
            group, out = _expire_session(group, member_id, now_ms)
        elif kind == _PENDING:
            group, out = _remove_pending(group, member_id, now_ms)
        elif kind == _SYNC:
            group, out = _expire_sync(group, now_ms)
        elif group.initial_delay_deadline_ms is not None:
            group, out = _expire_initial_delay(group, now_ms)
        else:
            group, out = _complete_join(group, now_ms)  # DelayedJoin expired
        outputs.extend(out)


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
            return _leave(group, event, now_ms)
        case LeaveGroupRequested():
            return _leave_group(group, event, now_ms)
        case DeleteRequested():
            return _delete(group)
        case GroupLoaded():
            return _loaded(group, now_ms)
        case Unload():
            return _unload(group) if group.state is not GroupState.DEAD else (group, ())
        case Tick():
            return _tick(group, now_ms)
        case SessionExpired():
            if event.member_id in group.pending_member_ids:
                return _remove_pending(group, event.member_id, now_ms)
            return _expire_session(group, event.member_id, now_ms)
        case RebalanceTimeout():
            if group.state is not GroupState.PREPARING_REBALANCE:
                return group, ()
            return _complete_join(group, now_ms)
        case InitialDelayElapsed():
            if group.state is not GroupState.PREPARING_REBALANCE:
                return group, ()
            if not group.awaiting_initial_delay:
                return group, ()
            return _expire_initial_delay(group, now_ms)


# --- offsets ------------------------------------------------------------------------------


def validate_offset_commit(
    group: GroupSnapshot,
    member_id: str,
    generation_id: int,
    group_instance_id: str | None,
    *,
    transactional: bool = False,
) -> ErrorCode:
    """Kafka's ``validateOffsetCommit`` plus ``doCommitOffsets``'s state check.

    Generation < 0 ("simple" consumers and admin tools) commits only to an Empty group; any
    member identity is validated like a heartbeat (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
    ILLEGAL_GENERATION); an anonymous commit to a non-empty group is UNKNOWN_MEMBER_ID (allowed
    for TxnOffsetCommit). A valid OffsetCommit in CompletingRebalance is REBALANCE_IN_PROGRESS
    (the member got its generation but not its assignment). For a group the driver does not hold,
    Kafka creates an Empty group when generation < 0 and answers ILLEGAL_GENERATION otherwise.
    """
    if group.state is GroupState.DEAD:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if generation_id < 0 and group.state is GroupState.EMPTY:
        return ErrorCode.NONE
    if generation_id >= 0 or member_id != "" or group_instance_id is not None:
        error = _validate_member(group, member_id, group_instance_id)
        if error is ErrorCode.NONE and generation_id != group.generation_id:
            error = ErrorCode.ILLEGAL_GENERATION
        rebalancing = group.state is GroupState.COMPLETING_REBALANCE
        if error is ErrorCode.NONE and not transactional and rebalancing:
            error = ErrorCode.REBALANCE_IN_PROGRESS
        return error
    if not transactional and group.state is not GroupState.EMPTY:
        return ErrorCode.UNKNOWN_MEMBER_ID
    return ErrorCode.NONE


def accept_offset_commit(
    group: GroupSnapshot,
    member_id: str,
    generation_id: int,
    group_instance_id: str | None,
    now_ms: int,
    *,
    transactional: bool = False,
) -> tuple[GroupSnapshot, ErrorCode]:
    """``validate_offset_commit``, and on NONE Kafka's side effect: a member's OffsetCommit in
    Stable or PreparingRebalance counts as a heartbeat (its session deadline restarts)."""
    error = validate_offset_commit(
        group, member_id, generation_id, group_instance_id, transactional=transactional
    )
    member = group.members.get(member_id)
    if (
        error is ErrorCode.NONE
        and not transactional
        and member is not None
        and group.state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE)
    ):
        group = _put(group, member_id, _armed(member, now_ms))
    return group, error


def validate_offset_delete(group: GroupSnapshot) -> ErrorCode:
    """Kafka's ``handleDeleteOffsets`` group-level check: a Dead group is GROUP_ID_NOT_FOUND, an
    Empty one and an active ``consumer`` group are NONE (then each partition of a topic in
    ``subscribed_topics`` -- all of them when that is None -- is GROUP_SUBSCRIBED_TO_TOPIC),
    any other active group NON_EMPTY_GROUP."""
    if group.state is GroupState.DEAD:
        return ErrorCode.GROUP_ID_NOT_FOUND
    if group.state is GroupState.EMPTY or group.protocol_type == CONSUMER_PROTOCOL_TYPE:
        return ErrorCode.NONE
    return ErrorCode.NON_EMPTY_GROUP
