"""Consumer groups with real clients: the classic scenario, broadcast, commit and resume.

The issue-4 acceptance scenarios, each against a real Franz broker (subprocess) with real
consumers (``tests.support.groups``: confluent-kafka, kafka-python and aiokafka members in
threads, a confluent-kafka member in a child process for SIGKILL):

* the classic scenario: a 3-partition topic; one member gets all three partitions, a second
  joins (2 + 1), a third (1 + 1 + 1), a fourth (one idle member); then members leave one by
  one and the rest take the partitions back until the last owns all three;
* broadcast: a one-member group and a three-member group (one member per client library) on
  the same topic: the first group receives every record, the second receives every record
  exactly once between its members;
* commit and resume: synchronous manual commits (the consumed positions, and explicit offsets
  with metadata) and auto-commit; a new member of the group resumes exactly at the committed
  offsets, with another client library; a broker restart (SIGTERM and SIGKILL) keeps the
  committed offsets and metadata;
* a consumer process killed with SIGKILL is removed after its session timeout, not at once,
  and its partitions go to the surviving member.

A membership change counts as handled only when every remaining member has had a new assign
callback since the change and the assignments are disjoint, cover the topic and have the
expected sizes (``wait_for_assignment``); so an assignment left from before cannot pass.
The broker runs with ``group.initial.rebalance.delay.ms=0``; clients use Kafka's minimum
session timeout (6 s) and 500 ms heartbeats, so a rebalance takes well under a second.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker import BrokerProcess
from tests.support.clients import Consumed, OutRecord, create_topic, produce_with
from tests.support.groups import (
    GROUP_BROKER_OVERRIDES,
    SESSION_TIMEOUT_MS,
    TP,
    GroupMember,
    MemberClient,
    MemberProcess,
    close_all,
    committed_offsets,
    describe_group,
    event_counts,
    make_member,
    wait_for_assignment,
    wait_until,
)
from tests.support.leaks import KAFKA_PYTHON_SOCKET_FILTERS, release_kafka_python_sockets

PARTITIONS = 3
_names = itertools.count()


#: kafka-python members leave sockets to the garbage collector (``tests.support.leaks``); one
#: warned at the end of a session that ran the classic scenario alone.
pytestmark = KAFKA_PYTHON_SOCKET_FILTERS


@pytest.fixture(autouse=True)
def _release_leaked_sockets() -> Iterator[None]:
    yield
    release_kafka_python_sockets()


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("groups"), GROUP_BROKER_OVERRIDES).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()[-5000:]}"


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_names)}-{time.monotonic_ns() % 1_000_000}"


def new_topic(broker: BrokerProcess, prefix: str, partitions: int = PARTITIONS) -> str:
    topic = unique(prefix)
    create_topic(broker.bootstrap, topic, partitions)
    return topic


def produce(broker: BrokerProcess, topic: str, per_partition: int, tag: str = "r") -> set[TP]:
    """``per_partition`` records into every partition of ``topic`` (partitions 0..2);
    returns the ``(partition, offset)`` pairs the broker acknowledged."""
    records = [
        OutRecord(b"k%d" % i, f"{tag}-{p}-{i}".encode(), partition=p)
        for i in range(per_partition)
        for p in range(PARTITIONS)
    ]
    result = produce_with("confluent-kafka", broker.bootstrap, topic, records)
    acks = {(a.partition, a.offset) for a in result.acks if a is not None}
    assert len(acks) == len(records), result
    return acks


def positions(records: list[Consumed]) -> list[tuple[int, int]]:
    return [(r.partition, r.offset) for r in records]


def all_partitions(topic: str) -> list[TP]:
    return [(topic, p) for p in range(PARTITIONS)]


# -- the classic scenario ---------------------------------------------------------------------


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_classic_scenario_join_one_by_one_then_leave_one_by_one(
    group_broker: BrokerProcess, client: MemberClient
) -> None:
    topic = new_topic(group_broker, "classic")
    group = unique("group1")
    produced = produce(group_broker, topic, 10)
    partitions = all_partitions(topic)
    members: list[GroupMember] = []
    try:
        # Join one by one: 3 -> 2 + 1 -> 1 + 1 + 1 -> 1 + 1 + 1 + idle.
        for count, sizes in [(1, [3]), (2, [2, 1]), (3, [1, 1, 1]), (4, [1, 1, 1, 0])]:
            before = event_counts(members)
            members.append(
                make_member(client, group_broker.bootstrap, group, [topic], name=f"m{count}")
            )
            got = wait_for_assignment(
                members, partitions, sizes=sizes, after=before, what=f"{count} member(s) joined"
            )
            if count == 1:
                assert got == {"m1": frozenset(partitions)}
        idle = [m for m in members if not m.assignment]
        assert len(idle) == 1, [m.describe() for m in members]

        # The group as the coordinator describes it matches what the members were given.
        description = describe_group(group_broker.bootstrap, group)
        assert str(description.state.name) == "STABLE", description
        described = {
            m.client_id: frozenset((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
            for m in description.members
        }
        assert described == {m.name: m.assignment for m in members}, description

        # Leave one by one (each close sends LeaveGroup): the rest take the partitions back.
        while len(members) > 1:
            leaving = members.pop(0)
            before = event_counts(members)
            leaving.close()
            sizes = {3: [1, 1, 1], 2: [2, 1], 1: [3]}[len(members)]
            wait_for_assignment(
                members,
                partitions,
                sizes=sizes,
                after=before,
                what=f"{leaving.name} left, {len(members)} member(s) remain",
            )
        [last] = members
        assert last.assignment == frozenset(partitions)
        # No commits were made, so the last member reads every partition from the start.
        wait_until(
            lambda: produced <= set(positions(last.records)),
            30,
            f"the last member to read all {len(produced)} records",
            observe=last.diagnose,
        )
    finally:
        close_all(members)


# -- broadcast ---------------------------------------------------------------------------------


def test_broadcast_two_groups_on_one_topic(group_broker: BrokerProcess) -> None:
    """group1 (one member) gets every record; group2 (confluent-kafka, kafka-python and
    aiokafka members: the leader decodes the others' subscriptions) gets every record exactly
    once between its three members, each only from its own partition."""
    topic = new_topic(group_broker, "broadcast")
    group1, group2 = unique("group1"), unique("group2")
    partitions = all_partitions(topic)
    members: list[GroupMember] = []
    try:
        solo = make_member("confluent-kafka", group_broker.bootstrap, group1, [topic], name="solo")
        members.append(solo)
        trio: list[GroupMember] = []
        for client in ("confluent-kafka", "kafka-python", "aiokafka"):
            trio.append(make_member(client, group_broker.bootstrap, group2, [topic], name=client))
        members += trio
        wait_for_assignment([solo], partitions, sizes=[3], what="group1")
        wait_for_assignment(trio, partitions, sizes=[1, 1, 1], what="group2")
        # The assignments are settled before anything is produced: no record can be read by
        # one member of group2 and then again by another after a partition moved.
        owner = {p: m for m in trio for (_, p) in m.assignment}

        produced = produce(group_broker, topic, 100)

        wait_until(
            lambda: len(solo.records) >= len(produced),
            30,
            f"group1 to read {len(produced)} records",
            observe=solo.diagnose,
        )
        wait_until(
            lambda: sum(len(m.records) for m in trio) >= len(produced),
            30,
            f"group2 to read {len(produced)} records",
            observe=lambda: "\n".join(m.diagnose() for m in trio),
        )
        assert sorted(positions(solo.records)) == sorted(produced)
        group2_positions = [pos for m in trio for pos in positions(m.records)]
        assert sorted(group2_positions) == sorted(produced), (
            "group2 read a record twice or lost one"
        )
        for member in trio:
            foreign = [r for r in member.records if owner[r.partition] is not member]
            assert not foreign, f"{member.name} read partitions it does not own: {foreign[:5]}"
    finally:
        close_all(members)


# -- commit and resume -------------------------------------------------------------------------


def test_manual_commits_and_a_new_member_resumes_from_them(group_broker: BrokerProcess) -> None:
    """confluent-kafka commits its consumed positions, then rewinds with explicit offsets and
    metadata; a kafka-python member of the same group resumes exactly there."""
    topic = new_topic(group_broker, "manual")
    group = unique("manual")
    produced = produce(group_broker, topic, 20)
    partitions = all_partitions(topic)
    first = make_member("confluent-kafka", group_broker.bootstrap, group, [topic], name="first")
    try:
        wait_until(
            lambda: len(first.records) >= len(produced),
            30,
            "the first member to read everything",
            observe=first.diagnose,
        )
        errors = first.commit()  # the consumed positions, synchronously
        assert errors == dict.fromkeys(partitions), errors
        committed = committed_offsets(group_broker.bootstrap, group)
        assert {tp: o for tp, (o, _) in committed.items()} == dict.fromkeys(partitions, 20)
        assert not any(m for _, m in committed.values()), committed  # no metadata was given

        rewind = {
            (topic, 0): (10, "p0 rewound"),
            (topic, 1): (20, "p1 done"),
            (topic, 2): (5, "p2 ünïcode metadata"),
        }
        errors = first.commit(rewind)
        assert errors == dict.fromkeys(partitions), errors
        assert first.committed(partitions) == rewind
    finally:
        first.close()

    second = make_member("kafka-python", group_broker.bootstrap, group, [topic], name="second")
    try:
        expected = {(p, o) for (p, o) in produced if o >= rewind[(topic, p)][0]}
        wait_until(
            lambda: len(second.records) >= len(expected),
            30,
            f"the second member to read the {len(expected)} uncommitted records",
            observe=second.diagnose,
        )
        assert sorted(positions(second.records)) == sorted(expected), (
            "the new member did not resume at the committed offsets "
            f"{ {p: o for (_, p), (o, _) in rewind.items()} }"
        )
        # confluent-kafka's Python binding sends the metadata with its C string terminator
        # (metadata_size = strlen + 1; librdkafka's own API does not): the broker keeps the
        # bytes it got, so another client reads them with the NUL.
        assert second.committed(partitions) == {
            tp: (offset, metadata + "\0") for tp, (offset, metadata) in rewind.items()
        }
    finally:
        second.close()


@pytest.mark.parametrize(
    ("committer", "resumer"),
    [("confluent-kafka", "aiokafka"), ("kafka-python", "confluent-kafka"), ("aiokafka", "kcat")],
)
def test_auto_commit_and_a_new_member_resumes(
    group_broker: BrokerProcess, committer: MemberClient, resumer: MemberClient
) -> None:
    """With auto-commit every 200 ms, the consumed positions reach the broker while the member
    is still running (not only at close); a member of another client library then starts at
    them: it receives exactly the records produced afterwards."""
    topic = new_topic(group_broker, "auto")
    group = unique("auto")
    produced = produce(group_broker, topic, 20)
    partitions = all_partitions(topic)
    config: dict[str, object]
    if committer == "confluent-kafka":
        config = {"enable.auto.commit": True, "auto.commit.interval.ms": 200}
    else:
        config = {"enable_auto_commit": True, "auto_commit_interval_ms": 200}
    first = make_member(
        committer, group_broker.bootstrap, group, [topic], name="auto", config=config
    )
    try:
        wait_until(
            lambda: len(first.records) >= len(produced),
            30,
            "the auto-committing member to read everything",
            observe=first.diagnose,
        )
        wait_until(
            lambda: (
                {tp: o for tp, (o, _) in committed_offsets(group_broker.bootstrap, group).items()}
                == dict.fromkeys(partitions, 20)
            ),
            15,
            "auto-commit of offset 20 on every partition while the member runs",
            observe=lambda: committed_offsets(group_broker.bootstrap, group),
        )
    finally:
        first.close()

    config = {"enable.auto.commit": "false"} if resumer == "kcat" else {}
    second = make_member(
        resumer, group_broker.bootstrap, group, [topic], name="resumer", config=config
    )
    try:
        wait_for_assignment([second], partitions, sizes=[3], what="the resumer joined")
        later = produce(group_broker, topic, 5, tag="later")
        assert all(o >= 20 for _, o in later)
        wait_until(
            lambda: len(second.records) >= len(later),
            30,
            f"the resumer to read the {len(later)} new records",
            observe=second.diagnose,
        )
        assert sorted(positions(second.records)) == sorted(later), (
            "the new member did not start at the auto-committed offsets (20)"
        )
    finally:
        second.close()


@pytest.mark.parametrize("how", ["sigterm", "sigkill"])
def test_committed_offsets_survive_a_broker_restart(
    broker_factory: type[BrokerProcess], tmp_path: Path, how: str
) -> None:
    broker = broker_factory(tmp_path / "broker", GROUP_BROKER_OVERRIDES).start()
    topic = new_topic(broker, "restart")
    group = unique("restart")
    produced = produce(broker, topic, 10)
    partitions = all_partitions(topic)
    offsets = {(topic, 0): (3, "three"), (topic, 1): (7, None), (topic, 2): (10, "all done")}
    member = make_member("confluent-kafka", broker.bootstrap, group, [topic], name="before")
    try:
        wait_for_assignment([member], partitions, sizes=[3])
        assert member.commit(offsets) == dict.fromkeys(partitions)
    finally:
        member.close()
    before = committed_offsets(broker.bootstrap, group)

    if how == "sigterm":
        assert broker.stop() == 0, broker.output()[-5000:]
    else:
        broker.kill()
    broker.start()

    after = wait_until(
        lambda: _committed_or_none(broker.bootstrap, group),
        30,
        "OffsetFetch to answer after the restart",
    )
    assert after == before, f"committed offsets changed across a {how} restart"
    assert {tp: o for tp, (o, _) in after.items()} == {tp: o for tp, (o, _) in offsets.items()}
    # As stored: confluent-kafka's binding sends the metadata with its C terminator.
    assert after[(topic, 0)][1] == "three\0" and after[(topic, 2)][1] == "all done\0"

    resumed = make_member("kafka-python", broker.bootstrap, group, [topic], name="after")
    try:
        expected = {(p, o) for (p, o) in produced if o >= offsets[(topic, p)][0]}
        wait_until(
            lambda: len(resumed.records) >= len(expected),
            30,
            f"the member after the restart to read {len(expected)} records",
            observe=resumed.diagnose,
        )
        assert sorted(positions(resumed.records)) == sorted(expected)
    finally:
        resumed.close()


def _committed_or_none(bootstrap: str, group: str) -> dict[TP, tuple[int, str | None]] | None:
    try:
        return committed_offsets(bootstrap, group, timeout=5) or None
    except Exception:
        return None


# -- a dead member -----------------------------------------------------------------------------


def test_sigkilled_consumer_process_is_removed_after_its_session_timeout(
    group_broker: BrokerProcess,
) -> None:
    """A consumer process killed with SIGKILL sends no LeaveGroup; the coordinator must
    notice through the session timeout (6 s), not at once (Kafka ignores the closed
    connection: a client may reconnect), and give its partitions to the survivor."""
    topic = new_topic(group_broker, "sigkill")
    group = unique("sigkill")
    partitions = all_partitions(topic)
    survivor = make_member("confluent-kafka", group_broker.bootstrap, group, [topic], name="stays")
    doomed = MemberProcess(group_broker.bootstrap, group, [topic], name="doomed")
    try:
        before = event_counts([survivor])
        wait_for_assignment(
            [survivor, doomed], partitions, sizes=[2, 1], after=before, what="two members"
        )
        doomed_partitions = doomed.partitions(topic)
        assert doomed_partitions
        before = event_counts([survivor])
        killed_at = time.monotonic()
        doomed.kill()

        wait_for_assignment(
            [survivor],
            partitions,
            sizes=[3],
            after=before,
            timeout=SESSION_TIMEOUT_MS / 1000 + 15,
            what="the survivor to take the killed member's partitions",
        )
        took = time.monotonic() - killed_at
        assert took >= 3.0, (
            f"the killed member was removed {took:.1f} s after SIGKILL: before its 6 s session "
            "timeout could expire (Kafka keeps a member whose connection closed until then)"
        )
        description = describe_group(group_broker.bootstrap, group)
        assert [m.client_id for m in description.members] == ["stays"], description

        later = produce(group_broker, topic, 3, tag="after-kill")
        wanted = {(p, o) for (p, o) in later if p in doomed_partitions}
        wait_until(
            lambda: wanted <= set(positions(survivor.records)),
            30,
            "the survivor to read new records of the killed member's partitions",
            observe=survivor.diagnose,
        )
    finally:
        doomed.close()
        survivor.close()
