"""The classic group state machine (franz.coordinator.group.states) against Kafka's rules."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.coordinator.group.states import (
    VALID_PREVIOUS_STATES,
    Event,
    GroupSnapshot,
    GroupState,
    Heartbeat,
    HeartbeatResponse,
    InitialDelayElapsed,
    JoinRequested,
    JoinResponse,
    LeaveRequested,
    LeaveResponse,
    MemberSnapshot,
    RebalanceTimeout,
    SessionExpired,
    SyncRequested,
    SyncResponse,
    can_transition,
    select_protocol,
    step,
)
from franz.errors import ErrorCode

S = GroupState

# Kafka's ClassicGroupState.validPreviousStates, written out independently: (from, to) pairs.
KAFKA_ALLOWED = {
    (S.STABLE, S.PREPARING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.PREPARING_REBALANCE),
    (S.EMPTY, S.PREPARING_REBALANCE),
    (S.PREPARING_REBALANCE, S.COMPLETING_REBALANCE),
    (S.COMPLETING_REBALANCE, S.STABLE),
    (S.STABLE, S.DEAD),
    (S.PREPARING_REBALANCE, S.DEAD),
    (S.COMPLETING_REBALANCE, S.DEAD),
    (S.EMPTY, S.DEAD),
    (S.DEAD, S.DEAD),
    (S.PREPARING_REBALANCE, S.EMPTY),
}


@pytest.mark.parametrize(("src", "dst"), list(itertools.product(S, S)))
def test_can_transition_matches_kafka_table(src: GroupState, dst: GroupState) -> None:
    assert can_transition(src, dst) == ((src, dst) in KAFKA_ALLOWED)
    assert (src in dst.valid_previous_states) == ((src, dst) in KAFKA_ALLOWED)


def test_state_values_are_kafka_names() -> None:
    assert [s.value for s in S] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]
    assert set(VALID_PREVIOUS_STATES) == set(S)


def member(*names: str) -> MemberSnapshot:
    return MemberSnapshot(None, "c", "/h", 10_000, 30_000, tuple((n, n.encode()) for n in names))


def test_select_protocol_majority_of_first_choices() -> None:
    members = [member("range", "roundrobin"), member("roundrobin", "range"), member("roundrobin")]
    assert select_protocol(members) == "roundrobin"


def test_select_protocol_votes_only_among_common_protocols() -> None:
    # "sticky" is first choice of two, but the third does not support it.
    members = [member("sticky", "range"), member("sticky", "range"), member("range")]
    assert select_protocol(members) == "range"


def test_select_protocol_tie_goes_to_earliest_members_preference() -> None:
    assert select_protocol([member("a", "b"), member("b", "a")]) == "a"
    assert select_protocol([member("b", "a"), member("a", "b")]) == "b"


def test_select_protocol_without_common_protocol_is_none() -> None:
    assert select_protocol([member("a"), member("b")]) is None
    assert select_protocol([]) is None


# --- driving the machine ------------------------------------------------------------------


def join(
    member_id: str = "",
    new_id: str = "m1",
    protocols: tuple[str, ...] = ("range",),
    *,
    instance: str | None = None,
    require: bool = True,
    protocol_type: str = "consumer",
) -> JoinRequested:
    return JoinRequested(
        member_id=member_id,
        group_instance_id=instance,
        client_id="c",
        client_host="/127.0.0.1",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000,
        protocol_type=protocol_type,
        protocols=tuple((p, p.encode()) for p in protocols),
        new_member_id=new_id,
        require_known_member_id=require,
    )


def run(group: GroupSnapshot, *events: Event, now: int = 0) -> tuple[GroupSnapshot, list[object]]:
    outputs: list[object] = []
    for event in events:
        group, out = step(group, event, now)
        outputs.extend(out)
    return group, outputs


def stable_group_of_one() -> GroupSnapshot:
    group, _ = run(
        GroupSnapshot("g"),
        join(new_id="m1"),
        join("m1"),
        InitialDelayElapsed(),
        SyncRequested("m1", 1, assignments=(("m1", b"A"),)),
    )
    assert group.state is S.STABLE
    return group


def test_kip394_first_join_returns_member_id_required_and_pends_it() -> None:
    group, out = step(GroupSnapshot("g"), join(new_id="c-1"), 0)
    assert out == (JoinResponse("c-1", ErrorCode.MEMBER_ID_REQUIRED),)
    assert group.pending_member_ids == {"c-1"}
    assert group.state is S.EMPTY and not group.members


def test_kip394_old_clients_and_static_members_join_in_one_step() -> None:
    group, _ = step(GroupSnapshot("g"), join(new_id="c-1", require=False), 0)
    assert "c-1" in group.members and group.state is S.PREPARING_REBALANCE
    group, _ = step(GroupSnapshot("g"), join(new_id="c-2", instance="i"), 0)
    assert "c-2" in group.members and not group.pending_member_ids


def test_second_join_with_pending_id_completes_after_initial_delay() -> None:
    group, out = run(GroupSnapshot("g"), join(new_id="m1"), join("m1"))
    assert group.state is S.PREPARING_REBALANCE and group.awaiting_initial_delay
    group, out = run(group, InitialDelayElapsed())
    assert group.state is S.COMPLETING_REBALANCE
    assert group.generation_id == 1 and group.leader_id == "m1"
    assert group.protocol_type == "consumer" and group.protocol_name == "range"
    [resp] = out
    assert isinstance(resp, JoinResponse) and resp.error is ErrorCode.NONE
    assert [m.member_id for m in resp.members] == ["m1"]


def test_join_with_unknown_member_id_is_refused() -> None:
    _, out = step(GroupSnapshot("g"), join("nobody"), 0)
    assert out == (JoinResponse("nobody", ErrorCode.UNKNOWN_MEMBER_ID),)


def test_join_without_common_protocol_is_inconsistent() -> None:
    group = stable_group_of_one()
    after, out = step(group, join(new_id="m2", protocols=("roundrobin",)), 0)
    assert out == (JoinResponse("", ErrorCode.INCONSISTENT_GROUP_PROTOCOL),)
    assert after == group
    _, out = step(group, join(new_id="m2", protocol_type="connect"), 0)
    assert out == (JoinResponse("", ErrorCode.INCONSISTENT_GROUP_PROTOCOL),)
    _, out = step(GroupSnapshot("g"), join(new_id="m2", protocols=()), 0)
    assert out == (JoinResponse("", ErrorCode.INCONSISTENT_GROUP_PROTOCOL),)


def test_join_to_dead_group_is_coordinator_not_available() -> None:
    _, out = step(GroupSnapshot("g", state=S.DEAD), join(new_id="m1"), 0)
    assert out == (JoinResponse("", ErrorCode.COORDINATOR_NOT_AVAILABLE),)


def test_heartbeat_fencing() -> None:
    group = stable_group_of_one()
    cases = [
        (Heartbeat("m1", 1), ErrorCode.NONE),
        (Heartbeat("m1", 0), ErrorCode.ILLEGAL_GENERATION),
        (Heartbeat("m1", 2), ErrorCode.ILLEGAL_GENERATION),
        (Heartbeat("zz", 1), ErrorCode.UNKNOWN_MEMBER_ID),
    ]
    for event, error in cases:
        _, out = step(group, event, 5)
        assert out == (HeartbeatResponse(event.member_id, error),), event
    _, out = step(GroupSnapshot("g", state=S.DEAD), Heartbeat("m1", 1), 0)
    assert out == (HeartbeatResponse("m1", ErrorCode.COORDINATOR_NOT_AVAILABLE),)


def test_heartbeat_refreshes_session_deadline() -> None:
    group = stable_group_of_one()
    group, _ = step(group, Heartbeat("m1", 1), 7_000)
    assert group.members["m1"].session_deadline_ms == 17_000
    same, out = step(group, SessionExpired("m1"), 16_999)
    assert same == group and out == ()
    gone, _ = step(group, SessionExpired("m1"), 17_000)
    assert "m1" not in gone.members


def test_heartbeat_during_rebalance_says_rebalance_in_progress() -> None:
    group = stable_group_of_one()
    group, _ = run(group, join(new_id="m2", require=False))
    assert group.state is S.PREPARING_REBALANCE
    _, out = step(group, Heartbeat("m1", 1), 0)
    assert out == (HeartbeatResponse("m1", ErrorCode.REBALANCE_IN_PROGRESS),)


def test_static_member_fencing() -> None:
    group, _ = run(
        GroupSnapshot("g"),
        join(new_id="s1", instance="inst"),
        InitialDelayElapsed(),
        SyncRequested("s1", 1, group_instance_id="inst"),
    )
    assert group.state is S.STABLE
    _, out = step(group, Heartbeat("other", 1, group_instance_id="inst"), 0)
    assert out == (HeartbeatResponse("other", ErrorCode.FENCED_INSTANCE_ID),)
    _, out = step(group, SyncRequested("other", 1, group_instance_id="inst"), 0)
    assert out == (SyncResponse("other", ErrorCode.FENCED_INSTANCE_ID),)
    _, out = step(group, LeaveRequested("other", "inst"), 0)
    assert out == (LeaveResponse("other", ErrorCode.FENCED_INSTANCE_ID, "inst"),)


def test_sync_fencing() -> None:
    group = stable_group_of_one()
    cases = [
        (SyncRequested("zz", 1), ErrorCode.UNKNOWN_MEMBER_ID),
        (SyncRequested("m1", 3), ErrorCode.ILLEGAL_GENERATION),
        (SyncRequested("m1", 1, protocol_type="connect"), ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
        (SyncRequested("m1", 1, protocol_name="sticky"), ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
    ]
    for event, error in cases:
        _, out = step(group, event, 0)
        assert out == (SyncResponse(event.member_id, error),), event
    _, out = step(group, SyncRequested("m1", 1, None, "consumer", "range"), 0)
    assert out == (SyncResponse("m1", ErrorCode.NONE, "consumer", "range", b"A"),)
    # Kafka's validateCurrentMember: an instance id that names no static member is unknown.
    _, out = step(group, SyncRequested("m1", 1, "", "consumer", "range"), 0)
    assert out == (SyncResponse("m1", ErrorCode.UNKNOWN_MEMBER_ID),)
    _, out = step(group, SyncRequested("m1", 1, None, "consumer", "range"), 0)
    assert out == (SyncResponse("m1", ErrorCode.NONE, "consumer", "range", b"A"),)


def test_two_members_rebalance_and_sync() -> None:
    group = stable_group_of_one()
    group, out = run(group, join(new_id="m2"), join("m2"))
    assert group.state is S.PREPARING_REBALANCE and out[0] == JoinResponse(
        "m2", ErrorCode.MEMBER_ID_REQUIRED
    )
    _, out = step(group, SyncRequested("m1", 1), 0)
    assert out == (SyncResponse("m1", ErrorCode.REBALANCE_IN_PROGRESS),)
    group, out = run(group, join("m1"))
    assert group.state is S.COMPLETING_REBALANCE and group.generation_id == 2
    assert {r.member_id for r in out if isinstance(r, JoinResponse)} == {"m1", "m2"}
    leader = next(r for r in out if isinstance(r, JoinResponse) and r.member_id == "m1")
    assert leader.leader_id == "m1" and len(leader.members) == 2
    group, out = run(group, SyncRequested("m2", 2))
    assert out == [] and group.members["m2"].awaiting_sync
    group, out = run(group, SyncRequested("m1", 2, assignments=(("m1", b"1"), ("m2", b"2"))))
    assert group.state is S.STABLE
    assert sorted((r.member_id, r.assignment) for r in out if isinstance(r, SyncResponse)) == [
        ("m1", b"1"),
        ("m2", b"2"),
    ]


def test_leave_of_last_member_empties_group() -> None:
    group = stable_group_of_one()
    group, out = run(group, LeaveRequested("m1"))
    assert out[0] == LeaveResponse("m1", ErrorCode.NONE)
    assert group.state is S.EMPTY and not group.members and group.generation_id == 2


def test_rebalance_timeout_drops_members_that_did_not_rejoin() -> None:
    group = stable_group_of_one()
    group, _ = run(group, join(new_id="m2", require=False), InitialDelayElapsed())
    assert group.state is S.PREPARING_REBALANCE
    group, out = run(group, RebalanceTimeout())
    assert group.state is S.COMPLETING_REBALANCE and set(group.members) == {"m2"}
    assert group.leader_id == "m2"
    assert [(r.member_id, r.generation_id) for r in out if isinstance(r, JoinResponse)] == [
        ("m2", 2)
    ]


# --- property: the table is never violated -----------------------------------------------

MEMBER_IDS = ["", "m0", "m1", "m2", "m3"]
ids = st.sampled_from(MEMBER_IDS)
protocol_lists = st.sampled_from([("range",), ("roundrobin", "range"), ("sticky",), ()])
events = st.one_of(
    st.builds(
        lambda mid, new, protos, inst, req: join(mid, new, protos, instance=inst, require=req),
        ids,
        st.sampled_from(MEMBER_IDS[1:]),
        protocol_lists,
        st.sampled_from([None, "i1", "i2"]),
        st.booleans(),
    ),
    st.builds(
        lambda mid, gen, owner: SyncRequested(mid, gen, assignments=((owner, b"x"),)),
        ids,
        st.integers(0, 4),
        ids,
    ),
    st.builds(Heartbeat, ids, st.integers(0, 4)),
    st.builds(LeaveRequested, ids),
    st.builds(SessionExpired, ids),
    st.just(RebalanceTimeout()),
    st.just(InitialDelayElapsed()),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(events, st.integers(0, 50_000)), max_size=40))
def test_random_event_sequences_only_take_allowed_transitions(
    seq: list[tuple[Event, int]],
) -> None:
    group = GroupSnapshot("g")
    for event, now in seq:
        before = group
        group, _ = step(group, event, now)
        # Every state change goes through the table (a forbidden one raises); one event may
        # chain two, as Kafka's does: the last member leaving CompletingRebalance goes through
        # PreparingRebalance, whose join completes at once, to Empty.
        if group.state is not before.state:
            assert can_transition(before.state, group.state) or any(
                can_transition(before.state, mid) and can_transition(mid, group.state) for mid in S
            )
        # Invariants Kafka keeps between requests.
        assert group.generation_id >= before.generation_id
        if group.state is S.EMPTY:
            assert not group.members
        if group.state in (S.COMPLETING_REBALANCE, S.STABLE):
            assert group.members and group.leader_id in group.members
            assert group.protocol_name is not None
            assert group.protocol_name in group.candidate_protocols()
        if group.leader_id is not None:
            assert group.leader_id in group.members


def test_forbidden_transition_raises() -> None:
    from franz.coordinator.group.rebalance import _transition
    from franz.coordinator.group.states import IllegalGroupTransitionError

    with pytest.raises(IllegalGroupTransitionError):
        _transition(GroupSnapshot("g"), S.STABLE)


def test_rejoin_with_same_metadata_in_completing_rebalance_answers_current_generation() -> None:
    group, _ = run(GroupSnapshot("g"), join(new_id="m1"), join("m1"), InitialDelayElapsed())
    assert group.state is S.COMPLETING_REBALANCE
    after, out = step(group, join("m1"), 0)
    assert after.state is S.COMPLETING_REBALANCE and after.generation_id == 1
    [resp] = out
    assert (
        isinstance(resp, JoinResponse) and resp.generation_id == 1 and resp.error is ErrorCode.NONE
    )


def test_expired_pending_member_no_longer_blocks_the_join() -> None:
    group = stable_group_of_one()
    group, _ = run(group, join(new_id="p1"), join("m1", protocols=("range", "x")))
    assert group.state is S.PREPARING_REBALANCE and group.pending_member_ids == {"p1"}
    group, out = run(group, SessionExpired("p1"))
    assert group.state is S.COMPLETING_REBALANCE and not group.pending_member_ids
    assert [r.member_id for r in out if isinstance(r, JoinResponse)] == ["m1"]
