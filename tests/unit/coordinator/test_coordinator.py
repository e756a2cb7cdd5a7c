"""The group coordinator driver over a log that keeps real ``__consumer_offsets`` batches.

``RecordingLog`` is not a broker double: it stores the exact batches the coordinator writes
(assigning offsets as a log does) and replays them with ``offsets_topic.replay``, so a
"restart" here reloads exactly what a broker would have on disk. Broker-level behaviour
(real clients, restarts of the process) is in tests/integration/test_groups*.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from franz.clock import ManualClock
from franz.coordinator.group.consumer_protocol import Subscription, encode_subscription
from franz.coordinator.group.coordinator import GroupCoordinator
from franz.coordinator.group.group import CommitRequest, CoordinatorConfig
from franz.coordinator.group.offsets_schema import partition_for
from franz.coordinator.group.offsets_topic import LoadedPartition, replay
from franz.coordinator.group.states import GroupConfig, GroupState, JoinResponse
from franz.errors import ErrorCode, NotLeaderOrFollowerError
from franz.protocol.records.batch import RecordBatchView
from franz.protocol.records.inflated import iter_records

T = TypeVar("T")
TOPICS = {"t": 3, "u": 1}
PARTITIONS = 4


class RecordingLog:
    """Keeps every appended batch per partition, with offsets, like a partition log."""

    def __init__(self) -> None:
        self.batches: dict[int, list[RecordBatchView]] = {}
        self.next_offset: dict[int, int] = {}
        self.fail: Exception | None = None

    async def append(
        self, partition: int, batch: bytearray, verification_guard: object | None = None
    ) -> int:
        if self.fail is not None:
            raise self.fail
        view = RecordBatchView(bytearray(batch))
        view.validate()
        view.set_base_offset(self.next_offset.get(partition, 0))
        self.next_offset[partition] = view.next_offset
        self.batches.setdefault(partition, []).append(view)
        return view.base_offset

    def records(self, partition: int) -> list[tuple[bytes | None, bytes | None]]:
        return [(r.key, r.value) for b in self.batches.get(partition, []) for r in iter_records(b)]

    def reload_into(self, coordinator: GroupCoordinator) -> None:
        coordinator.set_offsets_topic_partitions(PARTITIONS)
        for partition, batches in self.batches.items():
            coordinator.load_partition(partition, replay(batches, LoadedPartition()))


def make(
    log: RecordingLog | None = None, clock: ManualClock | None = None, **config: object
) -> tuple[GroupCoordinator, RecordingLog, ManualClock]:
    log = log or RecordingLog()
    clock = clock or ManualClock()
    group_config = GroupConfig(initial_rebalance_delay_ms=0)
    coordinator = GroupCoordinator(
        config=CoordinatorConfig(
            group=group_config,
            offsets_topic_num_partitions=PARTITIONS,
            **config,  # type: ignore[arg-type]
        ),
        log_writer=log,
        clock=clock,
        partition_exists=lambda topic, p: 0 <= p < TOPICS.get(topic, 0),
    )
    return coordinator, log, clock


def run(factory: Callable[[], Awaitable[T]]) -> T:
    async def main() -> T:
        return await asyncio.wait_for(factory(), 5)

    return asyncio.run(main())


SUB = encode_subscription(Subscription(topics=("t",)))


async def join_one(c: GroupCoordinator, group: str = "g", **kw: object) -> JoinResponse:
    """The KIP-394 two-step join of one dynamic member, then SyncGroup as leader."""
    args: dict[str, object] = {
        "group_id": group,
        "member_id": "",
        "group_instance_id": None,
        "client_id": "cli",
        "client_host": "/127.0.0.1",
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 30_000,
        "protocol_type": "consumer",
        "protocols": (("range", SUB),),
        "require_known_member_id": True,
    }
    args.update(kw)
    first = await c.join_group(**args)  # type: ignore[arg-type]
    assert first.error is ErrorCode.MEMBER_ID_REQUIRED and first.member_id.startswith("cli-")
    args["member_id"] = first.member_id
    joined = await c.join_group(**args)  # type: ignore[arg-type]
    assert joined.error is ErrorCode.NONE
    assert (joined.generation_id, joined.leader_id) == (1, first.member_id)
    synced = await c.sync_group(
        group_id=group,
        member_id=first.member_id,
        generation_id=1,
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=((first.member_id, b"assignment"),),
    )
    assert (synced.error, synced.assignment) == (ErrorCode.NONE, b"assignment")
    return joined


def commit(
    c: GroupCoordinator,
    offsets: dict[tuple[str, int], CommitRequest],
    *,
    group: str = "g",
    member: str = "",
    generation: int = -1,
    retention: int = -1,
) -> Awaitable[dict[tuple[str, int], ErrorCode]]:
    return c.commit_offsets(
        group_id=group,
        member_id=member,
        generation_id=generation,
        group_instance_id=None,
        retention_time_ms=retention,
        offsets=offsets,
    )


def test_standalone_commit_creates_an_empty_group_and_fetch_returns_it() -> None:
    c, log, _ = make()

    async def scenario() -> None:
        result = await commit(
            c,
            {
                ("t", 0): CommitRequest(5, 2, "meta"),
                ("t", 9): CommitRequest(1),
                ("nope", 0): CommitRequest(1),
                ("u", 0): CommitRequest(7, metadata="x" * 4097),
            },
        )
        assert result == {
            ("t", 0): ErrorCode.NONE,
            ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("u", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE,
        }
        fetched = c.fetch_offsets("g", [("t", 0), ("t", 1)])
        assert fetched[("t", 1)] is None
        got = fetched[("t", 0)]
        assert got is not None and (got.offset, got.leader_epoch, got.metadata) == (5, 2, "meta")
        assert [g.state for g in c.list_groups()] == ["Empty"]

    run(scenario)
    # Exactly one record, on the group's partition: only the accepted commit was written.
    assert len(log.records(partition_for("g", PARTITIONS))) == 1


def test_commit_with_a_generation_for_an_unknown_group_is_illegal_generation() -> None:
    c, log, _ = make()
    result = run(lambda: commit(c, {("t", 0): CommitRequest(1)}, member="m", generation=3))
    assert result == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert not log.batches and "g" not in c.groups


def test_member_commits_are_fenced_by_generation_and_member_id() -> None:
    c, _, _ = make()

    async def scenario() -> None:
        joined = await join_one(c)
        me = joined.member_id
        ok = await commit(c, {("t", 0): CommitRequest(3)}, member=me, generation=1)
        stale = await commit(c, {("t", 0): CommitRequest(9)}, member=me, generation=0)
        stranger = await commit(c, {("t", 0): CommitRequest(9)}, member="x", generation=1)
        simple = await commit(c, {("t", 0): CommitRequest(9)})
        assert ok == {("t", 0): ErrorCode.NONE}
        assert stale == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
        assert stranger == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
        # A standalone commit into a group with members is refused (Kafka's rule).
        assert simple[("t", 0)] is not ErrorCode.NONE
        offset = c.fetch_offsets("g", [("t", 0)])[("t", 0)]
        assert offset is not None and offset.offset == 3

    run(scenario)


def test_a_failed_write_commits_nothing() -> None:
    c, log, _ = make()
    log.fail = NotLeaderOrFollowerError("moved")
    result = run(lambda: commit(c, {("t", 0): CommitRequest(1)}))
    assert result == {("t", 0): ErrorCode.NOT_COORDINATOR}
    assert c.fetch_offsets("g", [("t", 0)]) == {("t", 0): None}


def test_restart_reloads_members_assignment_and_offsets() -> None:
    c, log, clock = make()

    async def before() -> str:
        joined = await join_one(c)
        await commit(
            c, {("t", 1): CommitRequest(42, 0, "m")}, member=joined.member_id, generation=1
        )
        return joined.member_id

    member = run(before)
    c2, _, _ = make(log, clock)
    log.reload_into(c2)

    async def after() -> None:
        c2.arm_all()
        d = c2.describe_group("g")
        assert (d.state, d.protocol_type, d.protocol) == ("Stable", "consumer", "range")
        assert [(m.member_id, m.assignment) for m in d.members] == [(member, b"assignment")]
        # The reloaded member keeps heartbeating in its generation.
        hb = await c2.heartbeat(
            group_id="g", member_id=member, generation_id=1, group_instance_id=None
        )
        assert hb is ErrorCode.NONE
        offset = c2.fetch_offsets("g", None)
        assert list(offset) == [("t", 1)] and offset[("t", 1)] is not None
        assert offset[("t", 1)].offset == 42  # type: ignore[union-attr]
        c2.shutdown()

    run(after)


def test_leave_empties_the_group_and_delete_removes_it_for_good() -> None:
    c, log, clock = make()

    async def scenario() -> None:
        joined = await join_one(c)
        await commit(c, {("t", 0): CommitRequest(1)}, member=joined.member_id, generation=1)
        assert await c.delete_groups(["g"]) == {"g": ErrorCode.NON_EMPTY_GROUP}
        error, results = await c.leave_group(group_id="g", members=[(joined.member_id, None)])
        assert error is ErrorCode.NONE
        assert results == [(joined.member_id, None, ErrorCode.NONE)]
        assert c.describe_group("g").state == "Empty"
        assert [g.group_id for g in c.list_groups(["empty"])] == ["g"]
        assert c.list_groups(["Stable"]) == []
        assert await c.delete_groups(["g", "missing", ""]) == {
            "g": ErrorCode.NONE,
            "missing": ErrorCode.GROUP_ID_NOT_FOUND,
            "": ErrorCode.INVALID_GROUP_ID,
        }
        assert c.describe_group("g").state == "Dead"
        assert c.fetch_offsets("g", None) == {}

    run(scenario)
    c2, _, _ = make(log, clock)
    log.reload_into(c2)
    assert "g" not in c2.groups


def test_offsets_of_an_empty_group_expire_after_retention_then_the_group_goes() -> None:
    c, log, clock = make(offsets_retention_ms=60_000)

    async def scenario() -> None:
        await commit(c, {("t", 0): CommitRequest(1)})
        clock.advance(30_000)
        await commit(c, {("t", 1): CommitRequest(2)})
        clock.advance(30_000)
        assert await c.expire_offsets() == 1  # ("t", 0) is 60 s old; ("t", 1) 30 s
        assert list(c.fetch_offsets("g", None)) == [("t", 1)]
        clock.advance(30_000)
        assert await c.expire_offsets() == 1
        assert "g" not in c.groups

    run(scenario)
    c2, _, _ = make(log, clock)
    log.reload_into(c2)
    assert "g" not in c2.groups


def test_explicit_retention_time_sets_the_expiry() -> None:
    c, _, clock = make(offsets_retention_ms=10**9)

    async def scenario() -> None:
        await commit(c, {("t", 0): CommitRequest(1)}, retention=5_000)
        clock.advance(4_999)
        assert await c.expire_offsets() == 0
        clock.advance(1)
        assert await c.expire_offsets() == 1

    run(scenario)


def test_offset_delete_refuses_subscribed_topics_of_an_active_group() -> None:
    c, _, _ = make()

    async def scenario() -> None:
        joined = await join_one(c)
        me = joined.member_id
        await commit(
            c, {("t", 0): CommitRequest(1), ("u", 0): CommitRequest(1)}, member=me, generation=1
        )
        error, results = await c.delete_offsets("g", [("t", 0), ("u", 0)])
        assert error is ErrorCode.NONE
        assert results == {
            ("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
            ("u", 0): ErrorCode.NONE,
        }
        assert list(c.fetch_offsets("g", None)) == [("t", 0)]
        assert (await c.delete_offsets("missing", [("t", 0)]))[0] is ErrorCode.GROUP_ID_NOT_FOUND

    run(scenario)


@pytest.mark.parametrize(
    ("kw", "error"),
    [
        ({"session_timeout_ms": 10}, ErrorCode.INVALID_SESSION_TIMEOUT),
        ({"session_timeout_ms": 10**8}, ErrorCode.INVALID_SESSION_TIMEOUT),
        ({"protocol_type": ""}, ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
        ({"protocols": ()}, ErrorCode.INCONSISTENT_GROUP_PROTOCOL),
        ({"group_id": ""}, ErrorCode.INVALID_GROUP_ID),
        ({"member_id": "unknown"}, ErrorCode.UNKNOWN_MEMBER_ID),
    ],
)
def test_bad_joins_are_refused_and_leave_no_group(kw: dict[str, object], error: ErrorCode) -> None:
    c, log, _ = make()
    args: dict[str, object] = {
        "group_id": "g",
        "member_id": "",
        "group_instance_id": None,
        "client_id": "cli",
        "client_host": "/127.0.0.1",
        "session_timeout_ms": 10_000,
        "rebalance_timeout_ms": 30_000,
        "protocol_type": "consumer",
        "protocols": (("range", SUB),),
        "require_known_member_id": False,
    }
    args.update(kw)
    response = run(lambda: c.join_group(**args))  # type: ignore[arg-type]
    assert response.error is error
    assert "g" not in c.groups and not log.batches


def test_a_second_protocol_family_is_inconsistent() -> None:
    c, _, _ = make()

    async def scenario() -> None:
        await join_one(c)
        other = await c.join_group(
            group_id="g",
            member_id="",
            group_instance_id=None,
            client_id="cli",
            client_host="/127.0.0.1",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=30_000,
            protocol_type="consumer",
            protocols=(("roundrobin", SUB),),
            require_known_member_id=False,
        )
        assert other.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert c.describe_group("g").state == GroupState.STABLE.value

    run(scenario)


def test_shutdown_answers_parked_joins_not_coordinator() -> None:
    c, _, _ = make()

    async def scenario() -> None:
        joined = await join_one(c)
        # A second member parks its join while the first has not rejoined.
        args = {
            "group_id": "g",
            "member_id": "",
            "group_instance_id": None,
            "client_id": "two",
            "client_host": "/127.0.0.1",
            "session_timeout_ms": 10_000,
            "rebalance_timeout_ms": 30_000,
            "protocol_type": "consumer",
            "protocols": (("range", SUB),),
            "require_known_member_id": False,
        }
        parked = asyncio.ensure_future(c.join_group(**args))  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        assert not parked.done()
        hb = await c.heartbeat(
            group_id="g", member_id=joined.member_id, generation_id=1, group_instance_id=None
        )
        assert hb is ErrorCode.REBALANCE_IN_PROGRESS
        c.shutdown()
        assert (await parked).error is ErrorCode.NOT_COORDINATOR

    run(scenario)
