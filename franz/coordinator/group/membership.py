"""SyncGroup, Heartbeat, LeaveGroup, DeleteGroups, load, unload and the timers of a classic group.

Part of the pure state machine whose entry point is ``states.step`` (its rules are in
``states.py``). Mirrors Kafka's ``doSyncGroup``, ``handleHeartbeat``, ``handleLeaveGroup``,
``handleDeleteGroups``, ``onGroupLoaded``/``onGroupUnloaded``, ``onExpirePendingSync`` and
``onExpireHeartbeat``; ``_tick`` fires the deadlines that ``model.next_deadline_ms`` reports.

What is done:

* SyncGroup, Heartbeat, LeaveGroup (single and v3+ batches, static members by instance id),
  DeleteGroups (Empty -> Dead), unload, load (a loaded group over ``group.max.size``
  rebalances).
* The KIP-814-era sync timeout (``DelayedSync``): members that did not SyncGroup within the
  rebalance timeout after the join completed are removed and the group rebalances.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from franz.coordinator.group.events import (
    DeleteResponse,
    Heartbeat,
    HeartbeatResponse,
    JoinResponse,
    LeaveGroupRequested,
    LeaveRequested,
    LeaveResponse,
    Output,
    PersistGroup,
    SyncRequested,
    SyncResponse,
)
from franz.coordinator.group.model import (
    _PENDING,
    _SESSION,
    _SYNC,
    GroupSnapshot,
    GroupState,
    Step,
    _deadlines,
    _freeze,
)
from franz.coordinator.group.rebalance import (
    _armed,
    _bare_remove,
    _clear_timers,
    _complete_join,
    _expire_initial_delay,
    _maybe_prepare_rebalance,
    _prepare_rebalance,
    _put,
    _remove_member,
    _remove_pending,
    _transition,
    _validate_member,
    _with_members,
)
from franz.errors import ErrorCode

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


# --- Tick ---------------------------------------------------------------------------------


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
