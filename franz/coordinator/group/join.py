"""JoinGroup for a classic group.

Part of the pure state machine whose entry point is ``states.step`` (its rules are in
``states.py``). Mirrors Kafka's ``handleJoinGroup``, ``doStaticNewMemberJoinGroup``,
``doDynamicNewMemberJoinGroup``, ``doCurrentMemberJoinGroup``, ``addMemberAndRebalance`` and
``updateStaticMemberAndRebalance``; the rebalance it starts is in ``rebalance.py``.

What is done:

* ``group.min/max.session.timeout.ms`` (checked first: INVALID_SESSION_TIMEOUT),
  ``group.max.size`` (``acceptJoiningMember``: GROUP_MAX_SIZE_REACHED, the refused member id is
  dropped).
* KIP-394 pending members (expire after their first join's session timeout, survive a
  completed join as in Kafka); new members expire after ``NEW_MEMBER_JOIN_TIMEOUT_MS`` until
  answered.
* KIP-345 static members: a known instance id with an empty member id replaces the old id (its
  parked join/sync is answered FENCED_INSTANCE_ID) without a rebalance in Stable when the
  selected protocol would not change (``skip_assignment`` for a v9+ leader), with one in
  CompletingRebalance.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from franz.coordinator.group.events import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    JoinRequested,
    JoinResponse,
    Output,
    PersistGroup,
    SyncResponse,
)
from franz.coordinator.group.model import (
    GroupSnapshot,
    GroupState,
    MemberSnapshot,
    Step,
    select_protocol,
)
from franz.coordinator.group.rebalance import (
    _armed,
    _bare_remove,
    _join_response,
    _maybe_prepare_rebalance,
    _prepare_rebalance,
    _put,
    _supports_protocols,
    _try_complete_join,
    _validate_member,
    _with_members,
    _without_pending,
)
from franz.errors import ErrorCode

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
