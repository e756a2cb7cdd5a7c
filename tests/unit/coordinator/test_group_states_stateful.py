"""Random event sequences against the classic group state machine, checked by a model driver
that parks requests the way ``events.py``'s routing rule says and checks Kafka's invariants."""

from __future__ import annotations

from collections import deque

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from franz.coordinator.group.states import (
    VALID_PREVIOUS_STATES,
    DeleteRequested,
    Event,
    GroupConfig,
    GroupLoaded,
    GroupSnapshot,
    GroupState,
    Heartbeat,
    HeartbeatResponse,
    InitialDelayElapsed,
    JoinRequested,
    JoinResponse,
    LeaveGroupRequested,
    LeaveRequested,
    RebalanceTimeout,
    SessionExpired,
    SyncRequested,
    SyncResponse,
    Tick,
    next_deadline_ms,
    step,
)
from franz.errors import ErrorCode

IDS = ["", "m0", "m1", "m2", "m3"]
INSTANCES = [None, "i1", "i2"]
PROTOCOLS = [(("range", b"a"),), (("range", b"b"),), (("rr", b""), ("range", b"a")), (("rr", b""),)]


def reachable(src: GroupState, dst: GroupState) -> bool:
    """Whether ``dst`` can be reached from ``src`` through allowed transitions."""
    seen, todo = {src}, deque([src])
    while todo:
        here = todo.popleft()
        if here is dst:
            return True
        for nxt, previous in VALID_PREVIOUS_STATES.items():
            if here in previous and nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return False


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.config = GroupConfig(initial_rebalance_delay_ms=1000, max_size=3)
        self.group = GroupSnapshot("g", config=self.config)
        self.now = 0
        self.counter = 0
        self.parked_joins: set[str] = set()
        self.parked_syncs: set[str] = set()

    def _step(self, event: Event, requester: str | None = None) -> None:
        before = self.group
        after, outputs = step(before, event, self.now)
        assert reachable(before.state, after.state) or before.state is after.state
        assert after.generation_id >= before.generation_id
        in_hand = []
        for out in outputs:
            if (
                isinstance(out, JoinResponse)
                and out.member_id in self.parked_joins
                and (
                    before.members.get(out.member_id)
                    and before.members[out.member_id].awaiting_join
                )
            ):
                self.parked_joins.remove(out.member_id)
            elif (
                isinstance(out, SyncResponse)
                and out.member_id in self.parked_syncs
                and (
                    before.members.get(out.member_id)
                    and before.members[out.member_id].awaiting_sync
                )
            ):
                self.parked_syncs.remove(out.member_id)
            elif isinstance(out, (JoinResponse, SyncResponse, HeartbeatResponse)):
                in_hand.append(out)
            # Successes go to members only.
            answer = isinstance(out, (JoinResponse, SyncResponse, HeartbeatResponse))
            if answer and out.error is ErrorCode.NONE:  # type: ignore[union-attr]
                assert out.member_id in after.members, (event, out)  # type: ignore[union-attr]
        if requester is None:
            assert in_hand == [], (event, in_hand)  # timers answer nothing in hand
        else:
            assert len(in_hand) <= 1, (event, in_hand)
            if not in_hand:
                # Parked under the id the new snapshot marks awaiting.
                if isinstance(event, JoinRequested):
                    mid = event.member_id or event.new_member_id
                    assert after.members[mid].awaiting_join, event
                    self.parked_joins.add(mid)  # a duplicate replaces the older (driver's job)
                elif isinstance(event, SyncRequested):
                    assert after.members[event.member_id].awaiting_sync, event
                    self.parked_syncs.add(event.member_id)
        self.group = after

    @rule(
        mid=st.sampled_from(IDS),
        instance=st.sampled_from(INSTANCES),
        protocols=st.sampled_from(PROTOCOLS),
        require=st.booleans(),
        skip=st.booleans(),
        session=st.sampled_from([5000, 10_000, 20_000]),
        rebalance=st.sampled_from([3000, 15_000]),  # 0 lets DelayedSync fire at once
    )
    def join(
        self,
        mid: str,
        instance: str | None,
        protocols: tuple[tuple[str, bytes], ...],
        require: bool,
        skip: bool,
        session: int,
        rebalance: int,
    ) -> None:
        self.counter += 1
        event = JoinRequested(
            mid, instance, "c", "/h", session, rebalance, "consumer", protocols,
            f"n{self.counter}", require, skip,
        )  # fmt: skip
        self._step(event, requester=mid or event.new_member_id)

    @rule(data=st.data())
    def rejoin_pending(self, data: st.DataObject) -> None:
        if self.group.pending_member_ids:
            mid = data.draw(st.sampled_from(sorted(self.group.pending_member_ids)))
            self.join(mid, None, PROTOCOLS[0], True, False, 10_000, 15_000)

    @rule(data=st.data(), protocols=st.sampled_from(PROTOCOLS), skip=st.booleans())
    def rejoin_member(
        self, data: st.DataObject, protocols: tuple[tuple[str, bytes], ...], skip: bool
    ) -> None:
        if self.group.members:
            mid = data.draw(st.sampled_from(sorted(self.group.members)))
            instance = self.group.members[mid].group_instance_id
            if data.draw(st.booleans()) and instance is not None:
                mid = ""  # a static member restarting: replaces the old member id
            self.join(mid, instance, protocols, True, skip, 10_000, 15_000)

    @rule(data=st.data(), known=st.booleans(), gen_delta=st.sampled_from([0, 0, -1]))
    def sync(self, data: st.DataObject, known: bool, gen_delta: int) -> None:
        members = sorted(self.group.members)
        mid = data.draw(st.sampled_from(members)) if known and members else "m9"
        owners = data.draw(st.lists(st.sampled_from([*members, "zz"]), max_size=3))
        instance = self.group.members[mid].group_instance_id if mid in self.group.members else None
        event = SyncRequested(
            mid, self.group.generation_id + gen_delta, instance,
            assignments=tuple((o, b"x") for o in owners),
        )  # fmt: skip
        self._step(event, requester=mid)

    @rule(data=st.data())
    def heartbeat(self, data: st.DataObject) -> None:
        members = sorted(self.group.members) or ["m9"]
        mid = data.draw(st.sampled_from(members))
        m = self.group.members.get(mid)
        event = Heartbeat(mid, self.group.generation_id, m.group_instance_id if m else None)
        self._step(event, requester=mid)

    @rule(who=st.lists(st.tuples(st.sampled_from(IDS), st.sampled_from(INSTANCES)), max_size=3))
    def leave(self, who: list[tuple[str, str | None]]) -> None:
        ids = [*who, *[(p, None) for p in sorted(self.group.pending_member_ids)[:1]]]
        self._step(LeaveGroupRequested(tuple(LeaveRequested(m, i) for m, i in ids)), "leave")

    @rule(ms=st.sampled_from([1, 500, 1000, 5000, 20_000]))
    def advance_and_tick(self, ms: int) -> None:
        self.now += ms
        deadline = next_deadline_ms(self.group)
        if deadline is not None and deadline <= self.now:
            self._step(Tick())
            nxt = next_deadline_ms(self.group)
            assert nxt is None or nxt > self.now or self.group.rebalance_timeout_ms() == 0

    @rule(event=st.sampled_from([RebalanceTimeout(), InitialDelayElapsed(), GroupLoaded()]))
    def legacy_timer(self, event: Event) -> None:
        self._step(event)

    @rule(mid=st.sampled_from(IDS[1:]))
    def legacy_session_expired(self, mid: str) -> None:
        self._step(SessionExpired(mid))

    @rule(roll=st.integers(0, 4))
    def delete(self, roll: int) -> None:
        if roll:
            return  # rarely: deleting resets the whole run
        before = self.group.state
        self._step(DeleteRequested(), "delete")
        if before is GroupState.EMPTY:
            assert self.group.state is GroupState.DEAD
            self.group = GroupSnapshot("g", config=self.config)  # the driver recreates it
            self.parked_joins.clear()
            self.parked_syncs.clear()

    @invariant()
    def kafka_invariants(self) -> None:
        g = self.group
        assert g.leader_id is None or g.leader_id in g.members
        if g.members and g.state is not GroupState.DEAD:
            assert g.leader_id is not None
        for mid, m in g.members.items():
            assert not (m.awaiting_join and m.awaiting_sync), mid
        if g.state is GroupState.EMPTY:
            assert not g.members
        if g.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            assert g.protocol_name is not None and g.protocol_name in g.candidate_protocols()
            assert g.rebalance_deadline_ms is None and g.initial_delay_deadline_ms is None
        if g.state is GroupState.PREPARING_REBALANCE:
            armed = [g.rebalance_deadline_ms, g.initial_delay_deadline_ms]
            assert sum(d is not None for d in armed) == 1
        assert g.pending_sync_member_ids <= set(g.members)
        assert set(g.pending_deadlines) == set(g.pending_member_ids)
        # Every parked request is known to the machine, and nothing else is parked.
        assert self.parked_joins == {mid for mid, m in g.members.items() if m.awaiting_join}
        assert self.parked_syncs == {mid for mid, m in g.members.items() if m.awaiting_sync}

    @invariant()
    def clients_gone_group_drains_to_empty(self) -> None:
        """Liveness: if every client went away now (no request ever again, not even a
        LeaveGroup, as a closed static member), the group's own timers -- session expiry,
        pending-member expiry, rebalance and sync timeouts -- remove every member, static
        ones included, and the group ends Empty, where DeleteGroups succeeds."""
        g, now = self.group, self.now
        if g.state is GroupState.DEAD:
            return
        for _ in range(100):
            deadline = next_deadline_ms(g)
            if deadline is None:
                break
            now = max(now, deadline)
            g, _ = step(g, Tick(), now)
        assert next_deadline_ms(g) is None, g
        assert g.state is GroupState.EMPTY and not g.members and not g.pending_member_ids, g
        dead, outputs = step(g, DeleteRequested(), now)
        assert dead.state is GroupState.DEAD and outputs, outputs


GroupMachine.TestCase.settings = settings(max_examples=300, stateful_step_count=40, deadline=None)
test_group_state_machine = GroupMachine.TestCase
