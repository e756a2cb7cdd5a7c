"""The classic consumer-group state machine as pure data: ``step`` and the offset checks.

Rules the state machine keeps (this module and the ones it is split into):

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

Layout (this module re-exports every public name, so callers import from ``states`` only):

* ``events.py``: the events ``step`` takes, the outputs it returns, ``GroupConfig``.
* ``model.py``: ``GroupState`` and its table, ``MemberSnapshot``/``GroupSnapshot``,
  ``select_protocol``, ``next_deadline_ms``; the glossary (*snapshot*, *deadline*, *exempt*).
* ``rebalance.py``: transitions, membership bookkeeping, prepare/complete join, removals.
* ``join.py``: JoinGroup, KIP-394 pending members, KIP-345 static members.
* ``membership.py``: SyncGroup, Heartbeat, LeaveGroup, DeleteGroups, load/unload, ``Tick``.
* here: ``step``; ``validate_offset_commit`` / ``accept_offset_commit`` /
  ``validate_offset_delete``; ``subscribed_topics`` (from ``consumer_protocol.py``).

What is not done (yet):

* Failed ``PersistGroup`` writes: Kafka answers the leader's SyncGroup with the write error and
  rebalances, or reverts a static replacement; here the snapshot has already moved on, and the
  driver can only map the error on the held responses (see ``PersistGroup``).
* A parked request replaced by a second request from the same member id (Kafka drops the older
  callback unanswered): the driver must answer the older one itself.
* ``subscribed_topics`` decodes the current members on demand; Kafka caches the set at each new
  generation and at load.
"""

from __future__ import annotations

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
from franz.coordinator.group.join import _join
from franz.coordinator.group.membership import (
    _delete,
    _expire_session,
    _heartbeat,
    _leave,
    _leave_group,
    _loaded,
    _sync,
    _tick,
    _unload,
)
from franz.coordinator.group.model import (
    VALID_PREVIOUS_STATES,
    GroupSnapshot,
    GroupState,
    IllegalGroupTransitionError,
    MemberSnapshot,
    Step,
    can_transition,
    next_deadline_ms,
    select_protocol,
)
from franz.coordinator.group.rebalance import (
    _armed,
    _complete_join,
    _expire_initial_delay,
    _put,
    _remove_pending,
    _validate_member,
)
from franz.errors import ErrorCode

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
