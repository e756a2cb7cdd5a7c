"""Initial delay extension, static membership, batch LeaveGroup, DeleteGroups, unload/load and
the offset checks of the classic group state machine, against Kafka 3.9's GroupCoordinator."""

from __future__ import annotations

from dataclasses import replace

import pytest

from franz.coordinator.group.consumer_protocol import Subscription, encode_subscription
from franz.coordinator.group.states import (
    DeleteRequested,
    DeleteResponse,
    GroupConfig,
    GroupLoaded,
    GroupSnapshot,
    GroupState,
    Heartbeat,
    HeartbeatResponse,
    JoinGroupMember,
    JoinRequested,
    JoinResponse,
    LeaveGroupRequested,
    LeaveResponse,
    PersistGroup,
    SyncRequested,
    SyncResponse,
    Tick,
    Unload,
    accept_offset_commit,
    next_deadline_ms,
    subscribed_topics,
    validate_offset_commit,
    validate_offset_delete,
)
from franz.errors import ErrorCode
from tests.unit.coordinator.steps import at

S = GroupState
E = ErrorCode


def join(
    member_id: str = "",
    new_id: str = "m1",
    *,
    instance: str | None = None,
    protocols: tuple[tuple[str, bytes], ...] = (("range", b"r"),),
    rebalance: int = 30_000,
    skip: bool = False,
) -> JoinRequested:
    return JoinRequested(
        member_id=member_id,
        group_instance_id=instance,
        client_id="c",
        client_host="/h",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=rebalance,
        protocol_type="consumer",
        protocols=protocols,
        new_member_id=new_id,
        require_known_member_id=False,
        supports_skip_assignment=skip,
    )


def stable_pair(config: GroupConfig | None = None) -> GroupSnapshot:
    """A Stable generation-1 group: static leader s1 (instance i1) and dynamic m2."""
    group = GroupSnapshot("g", config=config or GroupConfig(initial_rebalance_delay_ms=0))
    group, _ = at(group, 0, join(new_id="s1", instance="i1"))
    assert group.state is S.COMPLETING_REBALANCE  # a delay of 0 completes at once
    group, _ = at(group, 0, join(new_id="m2"), join("s1", instance="i1"))
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 2
    group, _ = at(
        group,
        0,
        SyncRequested("m2", 2),
        SyncRequested("s1", 2, "i1", assignments=(("s1", b"A1"), ("m2", b"A2"))),
    )
    assert group.state is S.STABLE and group.leader_id == "s1"
    return group


# --- group.initial.rebalance.delay.ms (InitialDelayedJoin) --------------------------------


def test_initial_delay_is_extended_while_new_members_arrive() -> None:
    config = GroupConfig(initial_rebalance_delay_ms=3000)
    group = GroupSnapshot("g", config=config)
    group, _ = at(group, 0, join(new_id="a", rebalance=10_000))
    assert (group.initial_delay_deadline_ms, group.initial_delay_remaining_ms) == (3000, 7000)
    group, _ = at(group, 1000, join(new_id="b", rebalance=10_000))
    assert group.new_member_added
    group, out = at(group, 3000, Tick())
    assert out == [] and group.state is S.PREPARING_REBALANCE
    assert (group.initial_delay_deadline_ms, group.initial_delay_remaining_ms) == (6000, 4000)
    group, _ = at(group, 4000, join(new_id="c", rebalance=10_000))
    group, _ = at(group, 6000, Tick())
    assert (group.initial_delay_deadline_ms, group.initial_delay_remaining_ms) == (9000, 1000)
    group, _ = at(group, 7000, join(new_id="d", rebalance=10_000))
    group, _ = at(group, 9000, Tick())
    # min(delay, remaining) = 1000; remaining shrinks by the delay that ended (3000) -> 0.
    assert (group.initial_delay_deadline_ms, group.initial_delay_remaining_ms) == (10_000, 0)
    group, _ = at(group, 9500, join(new_id="e", rebalance=10_000))
    group, out = at(group, 10_000, Tick())
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 1
    assert [o.member_id for o in out if isinstance(o, JoinResponse)] == ["a", "b", "c", "d", "e"]


def test_initial_delay_without_newcomers_completes_at_first_expiry() -> None:
    group, _ = at(GroupSnapshot("g"), 0, join(new_id="a"))
    group, _ = at(group, 3000, Tick())
    assert group.state is S.COMPLETING_REBALANCE and group.initial_delay_deadline_ms is None


def test_initial_delay_of_zero_completes_in_the_joining_step() -> None:
    group = GroupSnapshot("g", config=GroupConfig(initial_rebalance_delay_ms=0))
    group, out = at(group, 0, join(new_id="a"))
    assert group.state is S.COMPLETING_REBALANCE
    members = (JoinGroupMember("a", None, b"r"),)
    assert out == [JoinResponse("a", E.NONE, 1, "consumer", "range", "a", members)]


def test_initial_delay_blocks_completion_even_when_everyone_joined() -> None:
    group, _ = at(GroupSnapshot("g"), 0, join(new_id="a"), join("a"))
    assert group.state is S.PREPARING_REBALANCE


# --- static membership (KIP-345) ----------------------------------------------------------


def test_static_rejoin_in_stable_replaces_member_without_rebalance_skip_assignment() -> None:
    group = stable_pair()
    after, out = at(group, 50, join(new_id="s1b", instance="i1", skip=True))
    assert after.state is S.STABLE and after.generation_id == 2
    assert set(after.members) == {"s1b", "m2"} and after.leader_id == "s1b"
    assert after.members["s1b"].assignment == b"A1" and not after.members["s1b"].awaiting_join
    assert out[0] == PersistGroup(2)
    response = out[1]
    assert isinstance(response, JoinResponse)
    assert response.skip_assignment and response.leader_id == "s1b"
    assert [m.member_id for m in response.members] == ["s1b", "m2"]
    # The old member id is fenced.
    _, out = at(after, 60, Heartbeat("s1", 2, "i1"))
    assert out == [HeartbeatResponse("s1", E.FENCED_INSTANCE_ID)]
    _, out = at(after, 60, SyncRequested("s1b", 2, "i1"))
    assert out == [SyncResponse("s1b", E.NONE, "consumer", "range", b"A1")]


def test_static_leader_rejoin_before_v9_gets_old_leader_id_and_no_members() -> None:
    _, out = at(stable_pair(), 50, join(new_id="s1b", instance="i1"))
    response = out[1]
    assert isinstance(response, JoinResponse)
    assert response.leader_id == "s1" and response.members == () and not response.skip_assignment


def test_static_rejoin_with_changed_protocol_rebalances() -> None:
    group = stable_pair()
    after, out = at(group, 0, join(new_id="s1b", instance="i1", protocols=(("rr", b""),)))
    assert out == [JoinResponse("", E.INCONSISTENT_GROUP_PROTOCOL)]  # m2 lacks "rr"
    protocols = (("rr", b""), ("range", b"r2"))
    after, out = at(group, 0, join(new_id="s1b", instance="i1", protocols=protocols))
    # Still "range" by vote: metadata changed but the selected protocol does not -> no rebalance.
    assert after.state is S.STABLE
    m2 = replace(group.members["m2"], protocols=protocols)
    group2 = replace(group, members={**group.members, "m2": m2})
    after, out = at(group2, 0, join(new_id="s1b", instance="i1", protocols=protocols))
    assert after.state is S.PREPARING_REBALANCE and after.members["s1b"].awaiting_join


def test_static_rejoin_in_completing_rebalance_fences_old_sync_and_rebalances() -> None:
    group = stable_pair()
    group, _ = at(group, 0, join("s1", instance="i1"), join("m2"))
    assert group.state is S.COMPLETING_REBALANCE
    group, _ = at(group, 0, SyncRequested("m2", 3))
    group, out = at(group, 0, join(new_id="s1b", instance="i1"))
    assert group.state is S.PREPARING_REBALANCE
    assert out == [SyncResponse("m2", E.REBALANCE_IN_PROGRESS)]
    assert "s1" not in group.members and group.members["s1b"].awaiting_join


def test_static_rejoin_in_preparing_rebalance_fences_old_parked_join() -> None:
    group = stable_pair()
    group, _ = at(group, 0, join("s1", instance="i1", protocols=(("range", b"x"),)))
    assert group.state is S.PREPARING_REBALANCE and group.members["s1"].awaiting_join
    group, out = at(group, 0, join(new_id="s1c", instance="i1"))
    assert out == [JoinResponse("s1", E.FENCED_INSTANCE_ID)]
    assert group.state is S.PREPARING_REBALANCE and group.members["s1c"].awaiting_join
    assert group.leader_id == "s1c"
    group, out = at(group, 0, join("m2"))
    assert group.state is S.COMPLETING_REBALANCE
    assert {o.member_id for o in out if isinstance(o, JoinResponse)} == {"s1c", "m2"}


def test_rebalance_timeout_keeps_static_members_that_did_not_rejoin() -> None:
    group = stable_pair()
    group, _ = at(group, 0, join("m2", protocols=(("range", b"changed"),)))
    assert group.state is S.PREPARING_REBALANCE and group.rebalance_deadline_ms == 30_000
    group, _ = at(group, 25_000, Heartbeat("s1", 2, "i1"))
    group, out = at(group, 30_000, Tick())
    assert group.state is S.COMPLETING_REBALANCE and set(group.members) == {"s1", "m2"}
    # The leader did not rejoin: a joined member leads; only joined members are answered.
    assert group.leader_id == "m2"
    [resp] = [o for o in out if isinstance(o, JoinResponse)]
    assert resp.member_id == "m2" and [m.member_id for m in resp.members] == ["s1", "m2"]


def test_rebalance_timeout_with_only_absent_static_members_rearms() -> None:
    group = stable_pair()
    group, _ = at(group, 0, LeaveGroupRequested((("m2", None),)))
    assert group.state is S.PREPARING_REBALANCE and set(group.members) == {"s1"}
    group, _ = at(group, 25_000, Heartbeat("s1", 2, "i1"))
    group, out = at(group, 30_000, Tick())
    assert out == [] and group.state is S.PREPARING_REBALANCE
    assert group.rebalance_deadline_ms == 60_000


# --- LeaveGroup v3+ batches ---------------------------------------------------------------


def test_batch_leave_answers_each_identity_and_rebalances_once() -> None:
    group = stable_pair()
    group, _ = at(group, 0, join(new_id="m3"))
    idents = (("m2", None), ("", "i1"), ("zz", None), ("", "nope"), ("m3", "i1"))
    after, out = at(group, 0, LeaveGroupRequested(idents))
    assert out[:5] == [
        LeaveResponse("m2", E.NONE),
        LeaveResponse("", E.NONE, "i1"),
        LeaveResponse("zz", E.UNKNOWN_MEMBER_ID),
        LeaveResponse("", E.UNKNOWN_MEMBER_ID, "nope"),
        LeaveResponse("m3", E.UNKNOWN_MEMBER_ID, "i1"),  # i1 is gone by then
    ]
    assert set(after.members) == {"m3"} and after.state is S.COMPLETING_REBALANCE


def test_batch_leave_of_dead_group() -> None:
    _, out = at(GroupSnapshot("g", state=S.DEAD), 0, LeaveGroupRequested((("a", None), ("b", "i"))))
    assert out == [
        LeaveResponse("a", E.COORDINATOR_NOT_AVAILABLE),
        LeaveResponse("b", E.COORDINATOR_NOT_AVAILABLE, "i"),
    ]


def test_leave_of_parked_member_answers_its_join() -> None:
    group = stable_pair()
    group, _ = at(group, 0, join("m2", protocols=(("range", b"changed"),)))
    group, out = at(group, 0, LeaveGroupRequested((("m2", None),)))
    assert out[:2] == [LeaveResponse("m2", E.NONE), JoinResponse("m2", E.UNKNOWN_MEMBER_ID)]


# --- DeleteGroups, Dead, unload and load --------------------------------------------------


def test_delete_empty_group_makes_it_dead() -> None:
    group, out = at(GroupSnapshot("g", generation_id=3), 0, DeleteRequested())
    assert out == [DeleteResponse(E.NONE)] and group.state is S.DEAD
    assert next_deadline_ms(group) is None
    _, out = at(group, 0, DeleteRequested())
    assert out == [DeleteResponse(E.GROUP_ID_NOT_FOUND)]
    for event, expected in [
        (join(new_id="x"), JoinResponse("", E.COORDINATOR_NOT_AVAILABLE)),
        (SyncRequested("x", 1), SyncResponse("x", E.COORDINATOR_NOT_AVAILABLE)),
        (Heartbeat("x", 1), HeartbeatResponse("x", E.COORDINATOR_NOT_AVAILABLE)),
    ]:
        _, out = at(group, 0, event)
        assert out == [expected]
    assert validate_offset_commit(group, "", -1, None) is E.COORDINATOR_NOT_AVAILABLE


def test_delete_non_empty_group_is_refused() -> None:
    group = stable_pair()
    after, out = at(group, 0, DeleteRequested())
    assert out == [DeleteResponse(E.NON_EMPTY_GROUP)] and after == group


def test_unload_answers_parked_requests_not_coordinator() -> None:
    group = stable_pair()
    group, _ = at(group, 0, join("m2", protocols=(("range", b"changed"),)))
    group, out = at(group, 0, Unload())
    assert out == [JoinResponse("m2", E.NOT_COORDINATOR)] and group.state is S.DEAD


def test_loaded_group_over_capacity_rebalances_and_sessions_restart() -> None:
    group = replace(stable_pair(), config=GroupConfig(max_size=1))
    group, _ = at(group, 1000, GroupLoaded())
    assert group.state is S.PREPARING_REBALANCE
    assert all(m.session_deadline_ms == 11_000 for m in group.members.values())


# --- offsets ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("member", "generation", "instance", "expected"),
    [
        ("", -1, None, E.UNKNOWN_MEMBER_ID),  # anonymous commit to a non-empty group
        ("m2", 2, None, E.NONE),
        ("m2", 1, None, E.ILLEGAL_GENERATION),
        ("zz", 2, None, E.UNKNOWN_MEMBER_ID),
        ("s1", 2, "i1", E.NONE),
        ("s9", 2, "i1", E.FENCED_INSTANCE_ID),
        ("m2", 2, "i9", E.UNKNOWN_MEMBER_ID),
        ("m2", -1, None, E.ILLEGAL_GENERATION),
    ],
)
def test_validate_offset_commit_stable(
    member: str, generation: int, instance: str | None, expected: ErrorCode
) -> None:
    assert validate_offset_commit(stable_pair(), member, generation, instance) is expected


def test_validate_offset_commit_by_state() -> None:
    empty = GroupSnapshot("g", generation_id=4)
    assert validate_offset_commit(empty, "", -1, None) is E.NONE
    assert validate_offset_commit(empty, "x", -1, None) is E.NONE  # generation < 0, Empty
    assert validate_offset_commit(empty, "x", 4, None) is E.UNKNOWN_MEMBER_ID
    group = stable_pair()
    group, _ = at(group, 0, join("s1", instance="i1"), join("m2"))
    assert group.state is S.COMPLETING_REBALANCE
    assert validate_offset_commit(group, "m2", 3, None) is E.REBALANCE_IN_PROGRESS
    assert validate_offset_commit(group, "m2", 3, None, transactional=True) is E.NONE
    assert validate_offset_commit(group, "", -1, None, transactional=True) is E.NONE


def test_accept_offset_commit_counts_as_heartbeat_in_stable() -> None:
    group = stable_pair()
    after, error = accept_offset_commit(group, "m2", 2, None, 4000)
    assert error is E.NONE and after.members["m2"].session_deadline_ms == 14_000
    same, error = accept_offset_commit(group, "m2", 1, None, 4000)
    assert error is E.ILLEGAL_GENERATION and same == group


def test_offset_delete_and_subscribed_topics() -> None:
    sub = encode_subscription(Subscription(("t1", "t2"), version=1))
    group = GroupSnapshot("g", generation_id=0)
    assert validate_offset_delete(group) is E.NONE
    assert subscribed_topics(group) is None  # no protocol type yet
    assert validate_offset_delete(GroupSnapshot("g", state=S.DEAD)) is E.GROUP_ID_NOT_FOUND
    group = GroupSnapshot("g", config=GroupConfig(initial_rebalance_delay_ms=0))
    group, _ = at(group, 0, join(new_id="a", protocols=(("range", sub),)))
    assert validate_offset_delete(group) is E.NONE
    assert subscribed_topics(group) == {"t1", "t2"}
    bad = replace(group, members={"a": replace(group.members["a"], protocols=(("range", b"x"),))})
    assert subscribed_topics(bad) is None
    other = replace(group, protocol_type="connect")
    assert validate_offset_delete(other) is E.NON_EMPTY_GROUP and subscribed_topics(other) is None
