"""Transitions, membership bookkeeping and the rebalance of a classic group.

Part of the pure state machine whose entry point is ``states.step`` (its rules are in
``states.py``). Every state change goes through ``_transition``, which checks
``can_transition``. The rebalance mirrors Kafka's ``GroupCoordinator.scala``:
``prepareRebalance``, ``DelayedJoin`` (``tryCompleteJoin``), ``InitialDelayedJoin``,
``onCompleteJoin``, ``removeMemberAndUpdateGroup`` and ``removePendingMemberAndUpdateGroup``.
The private helpers here are shared by ``join.py``, ``membership.py`` and ``states.py``.

What is done:

* The initial delay as Kafka's ``InitialDelayedJoin`` (re-armed for ``min(delay, remaining)``
  while new members arrive during the group's first generation; a delay of 0 completes at once).
* The rebalance timeout keeps static members that did not rejoin and drops dynamic ones; when
  nobody rejoined the rebalance timer is re-armed. A completed join arms the KIP-814-era sync
  timeout (``DelayedSync``, fired in ``membership.py``).

What is not done (yet):

* A member removed by LeaveGroup while parked in SyncGroup: Kafka never answers that sync;
  franz answers it UNKNOWN_MEMBER_ID (so every parked request gets exactly one response).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from franz.coordinator.group.events import (
    JoinGroupMember,
    JoinResponse,
    Output,
    PersistGroup,
    Protocols,
    SyncResponse,
)
from franz.coordinator.group.model import (
    GroupSnapshot,
    GroupState,
    IllegalGroupTransitionError,
    MemberSnapshot,
    Step,
    _freeze,
    can_transition,
    select_protocol,
)
from franz.errors import ErrorCode

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
