"""Members that go away without a word, and members that leave, against Kafka 3.9's classic
``GroupCoordinator``: a static member's session expiry (``onExpireHeartbeat`` ->
``removeMemberAndUpdateGroup``, KIP-345 keeps no exception for it), the rebalance timeout that
keeps a static member which did not rejoin (``onCompleteJoin``) until its session or the sync
timeout removes it, and the single round a LeaveGroup causes (a cooperative member's
unsubscribe). Time is the ``now`` passed to each step."""

from __future__ import annotations

from franz.coordinator.group.states import (
    DeleteRequested,
    DeleteResponse,
    GroupConfig,
    GroupSnapshot,
    GroupState,
    Heartbeat,
    HeartbeatResponse,
    JoinRequested,
    JoinResponse,
    LeaveRequested,
    LeaveResponse,
    PersistGroup,
    SyncRequested,
    Tick,
    next_deadline_ms,
)
from franz.errors import ErrorCode
from tests.unit.coordinator.steps import at

S = GroupState
E = ErrorCode
SESSION = 6000


def join(
    member_id: str = "",
    new_id: str = "m1",
    *,
    instance: str | None = None,
    rebalance: int = 30_000,
    owned: bytes = b"",
) -> JoinRequested:
    return JoinRequested(
        member_id=member_id,
        group_instance_id=instance,
        client_id="c",
        client_host="/h",
        session_timeout_ms=SESSION,
        rebalance_timeout_ms=rebalance,
        protocol_type="consumer",
        protocols=(("cooperative-sticky", b"sub" + owned),),
        new_member_id=new_id,
        require_known_member_id=False,
    )


def stable(*members: tuple[str, str | None], rebalance: int = 30_000) -> GroupSnapshot:
    """A Stable generation-1 group of ``(member id, instance id)`` joined at time 0 (the first
    is the leader); the initial delay (3 s, extended while members arrive) ends by 6 s."""
    group = GroupSnapshot("g", config=GroupConfig(initial_rebalance_delay_ms=3000))
    for mid, instance in members:
        group, _ = at(group, 0, join(new_id=mid, instance=instance, rebalance=rebalance))
    now = 0
    while group.state is S.PREPARING_REBALANCE:
        now = next_deadline_ms(group) or now
        group, _ = at(group, now, Tick())
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 1 and now <= 6000
    assignments = tuple((mid, mid.encode()) for mid, _ in members)
    for mid, instance in reversed(members):  # the leader syncs last
        group, _ = at(group, now, SyncRequested(mid, 1, instance, assignments=assignments))
    assert group.state is S.STABLE and group.leader_id == members[0][0]
    return group


# --- a static member whose client closed without leaving ----------------------------------


def test_lone_static_member_expires_at_its_session_and_the_group_can_be_deleted() -> None:
    group = stable(("s1", "i1"))
    deadline = group.members["s1"].session_deadline_ms
    assert deadline == 3000 + SESSION and next_deadline_ms(group) == deadline  # synced at 3 s

    group, out = at(group, deadline - 1, Tick(), DeleteRequested())
    assert group.state is S.STABLE and set(group.members) == {"s1"}
    assert out == [DeleteResponse(E.NON_EMPTY_GROUP)]

    group, out = at(group, deadline, Tick())
    assert group.state is S.EMPTY and not group.members and group.generation_id == 2
    assert out == [PersistGroup(2)]
    assert next_deadline_ms(group) is None
    group, out = at(group, deadline, DeleteRequested())
    assert group.state is S.DEAD and out == [DeleteResponse(E.NONE)]


def test_expired_static_member_rebalances_the_others_like_any_member() -> None:
    group = stable(("s1", "i1"), ("s2", "i2"))
    group, _ = at(group, 8000, Heartbeat("s2", 1, "i2"))  # s1 (the leader) went quiet
    deadline = group.members["s1"].session_deadline_ms
    group, _ = at(group, deadline, Tick())
    assert group.state is S.PREPARING_REBALANCE and set(group.members) == {"s2"}
    assert group.leader_id == "s2"

    group, out = at(group, deadline + 100, Heartbeat("s2", 1, "i2"))
    assert out == [HeartbeatResponse("s2", E.REBALANCE_IN_PROGRESS)]
    group, out = at(group, deadline + 200, join("s2", instance="i2"))
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 2
    assert [(o.member_id, o.error) for o in out if isinstance(o, JoinResponse)] == [("s2", E.NONE)]
    # The member's old instance id is free: a new client with it joins as a new member.
    group, _ = at(group, deadline + 300, join(new_id="s1b", instance="i1"))
    assert group.state is S.PREPARING_REBALANCE and "s1b" in group.members


def test_static_member_not_rejoining_is_kept_by_the_rebalance_timeout_then_removed() -> None:
    """Kafka's ``onCompleteJoin`` drops only dynamic members that did not rejoin; a static one
    stays in the next generation, and the sync timeout (it never syncs) removes it."""
    group = stable(("s1", "i1"), ("s2", "i2"), rebalance=2000)  # Stable at 3 s: no extension
    group, _ = at(group, 4000, join("s1", instance="i1", rebalance=2000, owned=b"+"))
    assert group.state is S.PREPARING_REBALANCE and group.rebalance_deadline_ms == 6000
    group, _ = at(group, 6000, Tick())  # s2 never rejoined; its session (9000) is still live
    assert group.state is S.COMPLETING_REBALANCE and set(group.members) == {"s1", "s2"}
    group, _ = at(group, 6000, SyncRequested("s1", 2, "i1", assignments=(("s1", b"all"),)))
    assert group.state is S.STABLE and group.pending_sync_member_ids == {"s2"}
    group, _ = at(group, 7000, Heartbeat("s1", 2, "i1"))
    group, _ = at(group, 8000, Tick())  # DelayedSync: 6000 + 2000
    assert group.state is S.PREPARING_REBALANCE and set(group.members) == {"s1"}


# --- a cooperative member unsubscribes: one round -----------------------------------------


def test_leave_of_a_cooperative_member_causes_exactly_one_new_generation() -> None:
    """librdkafka's ``l_unsubscribe``: the leaver revoked its partitions before LeaveGroup;
    the other member rejoins once (its owned partitions unchanged), gets the leaver's
    partitions in generation 2, and the group stays Stable: no second round."""
    group = stable(("c1", None), ("c2", None))  # Stable at 6 s
    group, out = at(group, 7000, LeaveRequested("c1"))
    assert out == [LeaveResponse("c1", E.NONE)]
    assert group.state is S.PREPARING_REBALANCE and set(group.members) == {"c2"}

    group, out = at(group, 7100, Heartbeat("c2", 1))
    assert out == [HeartbeatResponse("c2", E.REBALANCE_IN_PROGRESS)]
    group, out = at(group, 7200, join("c2"))
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 2
    assert group.leader_id == "c2"
    group, out = at(group, 7300, SyncRequested("c2", 2, assignments=(("c2", b"all"),)))
    assert group.state is S.STABLE and out[0] == PersistGroup(2)

    for now in range(7800, 7800 + 4 * SESSION, 500):
        group, out = at(group, now, Heartbeat("c2", 2), Tick())
        assert out == [HeartbeatResponse("c2", E.NONE)], now
    assert group.state is S.STABLE and group.generation_id == 2
