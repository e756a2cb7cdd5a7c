"""The classic consumer-group data model: states, the transition table, snapshots, deadlines.

Part of the pure state machine whose entry point is ``states.step`` (its rules are in
``states.py``): immutable values and pure queries only. ``GroupState`` mirrors Kafka's
``ClassicGroupState`` and its ``validPreviousStates``; the snapshots carry the fields of
``GroupMetadata.scala`` / ``MemberMetadata.scala``; ``select_protocol`` is Kafka's
``selectProtocol``; ``next_deadline_ms`` tells the driver when its one timer per group is due.

Glossary (coined here):

* *snapshot*: the immutable value of one group between two events.
* *deadline*: an absolute time in ms at which something is due. Kafka's delayed operations map to
  snapshot fields: ``DelayedHeartbeat`` -> ``MemberSnapshot.session_deadline_ms`` and
  ``pending_deadlines``; ``DelayedJoin`` -> ``rebalance_deadline_ms``; ``InitialDelayedJoin`` ->
  ``initial_delay_deadline_ms``; ``DelayedSync`` -> ``sync_deadline_ms``.
* *exempt*: a member parked in JoinGroup or SyncGroup that is not new; Kafka's
  ``hasSatisfiedHeartbeat`` is true for it, so its session deadline cannot fire (it is re-armed
  when the member is answered).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from franz.coordinator.group.events import GroupConfig, Output, Protocols
from franz.errors import FranzError

__all__ = [
    "VALID_PREVIOUS_STATES",
    "GroupSnapshot",
    "GroupState",
    "IllegalGroupTransitionError",
    "MemberSnapshot",
    "Step",
    "can_transition",
    "next_deadline_ms",
    "select_protocol",
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
