"""Deadlines in the group snapshot, ``next_deadline_ms`` and ``Tick``; ``GroupConfig`` checks."""

from __future__ import annotations

from franz.coordinator.group.states import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    GroupConfig,
    GroupSnapshot,
    GroupState,
    Heartbeat,
    JoinRequested,
    JoinResponse,
    SyncRequested,
    SyncResponse,
    Tick,
    next_deadline_ms,
)
from franz.errors import ErrorCode
from tests.unit.coordinator.steps import at

S = GroupState
DELAY = 3000


def join(
    member_id: str = "",
    new_id: str = "m1",
    *,
    instance: str | None = None,
    session: int = 10_000,
    rebalance: int = 30_000,
    require: bool = False,
) -> JoinRequested:
    return JoinRequested(
        member_id=member_id,
        group_instance_id=instance,
        client_id="c",
        client_host="/h",
        session_timeout_ms=session,
        rebalance_timeout_ms=rebalance,
        protocol_type="consumer",
        protocols=(("range", b"r"),),
        new_member_id=new_id,
        require_known_member_id=require,
    )


def stable(now: int = 0) -> GroupSnapshot:
    group, _ = at(GroupSnapshot("g"), now, join(new_id="m1"))
    group, _ = at(group, now + DELAY, Tick())
    group, _ = at(group, now + DELAY, SyncRequested("m1", 1, assignments=(("m1", b"A"),)))
    assert group.state is S.STABLE
    return group


def test_empty_group_has_no_deadline() -> None:
    assert next_deadline_ms(GroupSnapshot("g")) is None


def test_leaving_empty_arms_initial_delay_not_rebalance_timeout() -> None:
    group, out = at(GroupSnapshot("g"), 1000, join(new_id="m1"))
    assert out == [] and group.state is S.PREPARING_REBALANCE
    assert group.initial_delay_deadline_ms == 1000 + DELAY and group.awaiting_initial_delay
    assert group.initial_delay_remaining_ms == 30_000 - DELAY
    assert group.rebalance_deadline_ms is None
    # The new member's session deadline is Kafka's NewMemberJoinTimeoutMs.
    assert group.members["m1"].session_deadline_ms == 1000 + NEW_MEMBER_JOIN_TIMEOUT_MS
    assert next_deadline_ms(group) == 1000 + DELAY


def test_tick_before_deadline_does_nothing() -> None:
    group, _ = at(GroupSnapshot("g"), 0, join(new_id="m1"))
    assert at(group, DELAY - 1, Tick()) == (group, [])


def test_tick_at_initial_delay_completes_join_and_arms_sync_and_session() -> None:
    group, _ = at(GroupSnapshot("g"), 0, join(new_id="m1"))
    group, out = at(group, DELAY, Tick())
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 1
    assert [type(o) for o in out] == [JoinResponse]
    member = group.members["m1"]
    assert not member.is_new and member.session_deadline_ms == DELAY + 10_000
    assert group.sync_deadline_ms == DELAY + 30_000
    assert group.pending_sync_member_ids == {"m1"}
    assert next_deadline_ms(group) == DELAY + 10_000


def test_rebalance_deadline_is_set_when_a_stable_group_prepares() -> None:
    group = stable()
    group, _ = at(group, 5000, join(new_id="m2"))
    assert group.state is S.PREPARING_REBALANCE
    assert group.rebalance_deadline_ms == 5000 + 30_000
    assert group.initial_delay_deadline_ms is None
    # m1 has not rejoined: its session still runs; m2 is new.
    assert next_deadline_ms(group) == group.members["m1"].session_deadline_ms


def test_tick_fires_rebalance_timeout_dropping_dynamic_member() -> None:
    group = stable()
    group, _ = at(group, 5000, join(new_id="m2"), Heartbeat("m1", 1))
    group, out = at(group, 5000 + 30_000, Tick())
    # m1's session (15000) expired first (it is not parked): removed, then m2 alone completes.
    assert group.state is S.COMPLETING_REBALANCE and set(group.members) == {"m2"}
    assert [o.member_id for o in out if isinstance(o, JoinResponse)] == ["m2"]


def test_parked_member_is_exempt_from_session_expiry() -> None:
    group = stable()
    group, _ = at(group, 5000, join(new_id="m2"), join("m1"))
    # Both joined: the join completes at once (no initial delay outside Empty).
    assert group.state is S.COMPLETING_REBALANCE
    group, _ = at(group, 6000, SyncRequested("m2", 2))
    assert group.members["m2"].awaiting_sync
    deadline = next_deadline_ms(group)
    assert deadline == group.members["m1"].session_deadline_ms  # m2's does not count
    assert group.members["m2"].session_deadline_ms <= deadline


def test_pending_member_expires_after_its_first_session_timeout() -> None:
    group = stable()
    group, out = at(group, 100, join(new_id="p1", require=True, session=7000))
    assert out == [JoinResponse("p1", ErrorCode.MEMBER_ID_REQUIRED)]
    assert group.pending_deadlines == {"p1": 7100}
    group, _ = at(group, 100, Heartbeat("m1", 1))
    assert next_deadline_ms(group) == 7100
    group, _ = at(group, 7100, Tick())
    assert not group.pending_member_ids and not group.pending_deadlines


def test_session_expiry_via_tick_rebalances_to_empty() -> None:
    group = stable()
    deadline = group.members["m1"].session_deadline_ms
    assert next_deadline_ms(group) == deadline
    group, _ = at(group, deadline, Tick())
    assert group.state is S.EMPTY and group.generation_id == 2 and not group.members
    assert next_deadline_ms(group) is None


def test_join_outside_session_bounds_is_invalid_session_timeout_first() -> None:
    config = GroupConfig(min_session_timeout_ms=6000, max_session_timeout_ms=60_000)
    for session in (5999, 60_001):
        group = GroupSnapshot("g", state=S.DEAD, config=config)
        after, out = at(group, 0, join("x", session=session))
        assert out == [JoinResponse("x", ErrorCode.INVALID_SESSION_TIMEOUT)] and after == group
    group, out = at(GroupSnapshot("g", config=config), 0, join(session=6000))
    assert "m1" in group.members


def test_group_max_size_refuses_new_members() -> None:
    config = GroupConfig(max_size=1)
    group, _ = at(GroupSnapshot("g", config=config), 0, join(new_id="m1"))
    group, _ = at(group, DELAY, Tick(), SyncRequested("m1", 1))
    assert group.state is S.STABLE
    after, out = at(group, DELAY, join(new_id="m2"))
    assert out == [JoinResponse("", ErrorCode.GROUP_MAX_SIZE_REACHED)] and after == group
    # A pending (KIP-394) id is dropped when refused.
    group2 = GroupSnapshot("g", config=config)
    group2, _ = at(group2, 0, join(new_id="p1", require=True))
    group2, _ = at(group2, 0, join(new_id="m9"))
    assert "m9" in group2.members and group2.state is S.PREPARING_REBALANCE
    group2, out = at(group2, 0, join("p1"))
    assert out == [JoinResponse("", ErrorCode.GROUP_MAX_SIZE_REACHED)]
    assert not group2.pending_member_ids


def test_group_max_size_in_preparing_counts_rejoined_members() -> None:
    # Three members, then the limit drops to 2 (a config change): the third to rejoin is
    # refused and removed, and the join completes without it.
    group = GroupSnapshot("g")
    group, _ = at(group, 0, join(new_id="a"), join(new_id="b"), join(new_id="c"))
    group, _ = at(group, DELAY, Tick())
    group, _ = at(group, DELAY, Tick())  # re-armed once because b, c joined during the delay
    group, _ = at(group, 2 * DELAY, Tick())
    assert group.state is S.COMPLETING_REBALANCE and len(group.members) == 3
    group, _ = at(
        group, 10_000, SyncRequested("a", 1), SyncRequested("b", 1), SyncRequested("c", 1)
    )
    from dataclasses import replace

    group = replace(group, config=GroupConfig(max_size=2))
    group, _ = at(group, 10_000, join("a"), join("b"))
    assert group.state is S.PREPARING_REBALANCE
    group, out = at(group, 10_000, join("c"))
    assert out[0] == JoinResponse("", ErrorCode.GROUP_MAX_SIZE_REACHED)
    assert group.state is S.COMPLETING_REBALANCE and set(group.members) == {"a", "b"}


def test_sync_timeout_removes_members_that_did_not_sync() -> None:
    group = stable()
    group, _ = at(group, 5000, join(new_id="m2"), join("m1"))
    assert group.state is S.COMPLETING_REBALANCE and group.sync_deadline_ms == 35_000
    group, _ = at(group, 6000, SyncRequested("m1", 2, assignments=(("m1", b"1"),)))
    assert group.state is S.STABLE and group.pending_sync_member_ids == {"m2"}
    group, _ = at(group, 30_000, Heartbeat("m1", 2), Heartbeat("m2", 2))
    group, _ = at(group, 35_000, Tick())
    # m2 never synced: removed, and the group rebalances without it.
    assert "m2" not in group.members
    assert group.state is S.PREPARING_REBALANCE
    assert group.rebalance_deadline_ms == 35_000 + 30_000


def test_all_synced_cancels_the_sync_deadline() -> None:
    group = stable()
    group, _ = at(group, 5000, join(new_id="m2"), join("m1"))
    group, out = at(group, 6000, SyncRequested("m2", 2))
    assert out == []
    group, out = at(group, 6000, SyncRequested("m1", 2, assignments=(("m2", b"2"),)))
    assert group.sync_deadline_ms is None and not group.pending_sync_member_ids
    assert sorted((o.member_id, o.assignment) for o in out if isinstance(o, SyncResponse)) == [
        ("m1", b""),
        ("m2", b"2"),
    ]
