"""The group coordinator refuses bad group requests with Kafka's error codes, and stays well.

Requests go out on the raw wire client (``tests.support.wire``: JoinGroup v5, SyncGroup v3,
Heartbeat v3, OffsetCommit v8 and OffsetFetch v8 unless a test names a version), because real
clients will not send most of them. Kafka 3.9's ``GroupCoordinator`` is the reference:

* OffsetCommit to a group that does not exist: a generation >= 0 is ILLEGAL_GENERATION for
  every partition (the commit comes from a member of a generation the coordinator does not
  know); generation -1 with no member id is a standalone ("simple consumer") commit and is
  accepted, creating an Empty group. Unknown topics and partitions are
  UNKNOWN_TOPIC_OR_PARTITION for that partition only; metadata longer than
  ``offset.metadata.max.bytes`` (4096) is OFFSET_METADATA_TOO_LARGE for that partition while
  the others of the same request commit.
* Members are checked before generations: an unknown member id is UNKNOWN_MEMBER_ID, a known
  member with another generation ILLEGAL_GENERATION (Heartbeat, SyncGroup, OffsetCommit); a
  standalone commit into a group with members is UNKNOWN_MEMBER_ID; a commit between the
  join and the sync (CompletingRebalance) is REBALANCE_IN_PROGRESS.
* JoinGroup: an empty group id is INVALID_GROUP_ID (also for SyncGroup, Heartbeat and
  LeaveGroup); a session timeout outside [``group.min.session.timeout.ms`` 6000,
  ``group.max.session.timeout.ms`` 1800000] is INVALID_SESSION_TIMEOUT; a protocol type or
  protocol set with nothing in common with the group's (or an empty one for a new group) is
  INCONSISTENT_GROUP_PROTOCOL, checked before the KIP-394 member-id handshake and without
  disturbing the current members; from v4 a new dynamic member's first join is answered
  MEMBER_ID_REQUIRED with a member id (static members and v0-v3 joins skip the step); a
  member id the coordinator never issued is UNKNOWN_MEMBER_ID.
* SyncGroup or Heartbeat for a group that does not exist: UNKNOWN_MEMBER_ID. DescribeGroups
  (v0-v5) of an unknown group: no error, state Dead.

After every test the broker is still well: the ``baseline`` group's committed offsets are
exactly as committed at the start (a real confluent-kafka consumer committed them), and a new
confluent-kafka consumer group still joins, gets every partition and reads every record.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

import pytest

from franz.errors import ErrorCode
from tests.support.broker import BrokerProcess
from tests.support.clients import OutRecord, create_topic, produce_with
from tests.support.groups import (
    GROUP_BROKER_OVERRIDES,
    TP,
    committed_offsets,
    make_member,
    wait_for_assignment,
    wait_until,
)
from tests.support.wire import (
    WireClient,
    consumer_assignment,
    consumer_subscription,
    heartbeat,
    join_group,
    join_group_member,
    leave_group,
    offset_commit,
    offset_fetch,
    recv_join_group,
    request_at,
    send_join_group,
    sync_group,
)

TOPIC = "group-bad-input"
PARTITIONS = 3
RECORDS_PER_PARTITION = 10
BASELINE = "baseline"

NONE = ErrorCode.NONE
_names = itertools.count()


@pytest.fixture(scope="module")
def bad_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("group-bad-input"), GROUP_BROKER_OVERRIDES)
    proc.start()
    try:
        create_topic(proc.bootstrap, TOPIC, PARTITIONS)
        records = [
            OutRecord(b"k", b"v-%d-%d" % (p, i), partition=p)
            for i in range(RECORDS_PER_PARTITION)
            for p in range(PARTITIONS)
        ]
        produce_with("confluent-kafka", proc.bootstrap, TOPIC, records)
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()[-5000:]}"


@pytest.fixture(scope="module")
def baseline(bad_broker: BrokerProcess) -> dict[TP, tuple[int, str | None]]:
    """Offsets a real consumer group committed before any bad request."""
    member = make_member("confluent-kafka", bad_broker.bootstrap, BASELINE, [TOPIC], name="base")
    try:
        wait_for_assignment([member], partitions(), sizes=[3])
        offsets = {(TOPIC, p): (3 + p, f"baseline {p}") for p in range(PARTITIONS)}
        assert member.commit(offsets) == dict.fromkeys(offsets)
    finally:
        member.close()
    snapshot = committed_offsets(bad_broker.bootstrap, BASELINE)
    assert {tp: o for tp, (o, _) in snapshot.items()} == {tp: o for tp, (o, _) in offsets.items()}
    return snapshot


@pytest.fixture(autouse=True)
def still_healthy(
    bad_broker: BrokerProcess, baseline: dict[TP, tuple[int, str | None]]
) -> Iterator[None]:
    yield
    assert bad_broker.proc is not None and bad_broker.proc.poll() is None, (
        f"the broker died:\n{bad_broker.output()[-5000:]}"
    )
    assert committed_offsets(bad_broker.bootstrap, BASELINE) == baseline
    good = make_member(
        "confluent-kafka", bad_broker.bootstrap, unique("good"), [TOPIC], name="good"
    )
    try:
        wait_for_assignment([good], partitions(), sizes=[3], what="a good consumer")
        wait_until(
            lambda: len(good.records) >= PARTITIONS * RECORDS_PER_PARTITION,
            30,
            "a good consumer to read every record",
            observe=good.diagnose,
        )
    finally:
        good.close()


@pytest.fixture
def wire(bad_broker: BrokerProcess) -> Iterator[WireClient]:
    with WireClient.connect(bad_broker.bootstrap) as client:
        yield client


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_names)}-{time.monotonic_ns() % 1_000_000}"


def partitions() -> list[TP]:
    return [(TOPIC, p) for p in range(PARTITIONS)]


SUBSCRIPTION = consumer_subscription([TOPIC])
RANGE = (("range", SUBSCRIPTION),)


def joined_member(client: WireClient, group: str, **kwargs: Any) -> tuple[str, int]:
    """A dynamic member that joined and synced alone (it is the leader and takes every
    partition); ``(member id, generation)``."""
    joined = join_group_member(client, group, protocols=RANGE, **kwargs)
    assert joined.error_code == NONE, joined
    member, generation = joined.member_id, int(joined.generation_id)
    synced = sync_group(
        client, group, generation, member, {member: consumer_assignment({TOPIC: range(3)})}
    )
    assert synced.error_code == NONE, synced
    return member, generation


def describe(client: WireClient, group: str) -> Any:
    response = request_at(
        client, 15, 5, {"groups": [group], "include_authorized_operations": False}
    )
    [described] = response.groups
    return described


def fetched(client: WireClient, group: str, wanted: list[TP]) -> dict[TP, tuple[int, str | None]]:
    answer = offset_fetch(client, group, wanted)
    assert all(error == NONE for _, _, error in answer.values()), answer
    return {tp: (offset, metadata) for tp, (offset, metadata, _) in answer.items()}


# -- OffsetCommit ------------------------------------------------------------------------------


@pytest.mark.parametrize("generation", [0, 1, 7])
def test_commit_with_a_generation_to_an_unknown_group_is_illegal_generation(
    wire: WireClient, generation: int
) -> None:
    group = unique("no-such-group")
    offsets = {tp: 5 for tp in partitions()}
    answer = offset_commit(wire, group, offsets, generation_id=generation, member_id="someone")
    assert answer == dict.fromkeys(offsets, ErrorCode.ILLEGAL_GENERATION)
    assert fetched(wire, group, partitions()) == dict.fromkeys(partitions(), (-1, ""))
    assert describe(wire, group).group_state == "Dead"  # no group was created


def test_standalone_commit_to_an_unknown_group_is_accepted(wire: WireClient) -> None:
    group = unique("simple")
    offsets = {(TOPIC, 0): (4, "simple consumer"), (TOPIC, 2): (9, None)}
    assert offset_commit(wire, group, offsets) == dict.fromkeys(offsets, NONE)
    assert fetched(wire, group, partitions()) == {
        (TOPIC, 0): (4, "simple consumer"),
        (TOPIC, 1): (-1, ""),
        (TOPIC, 2): (9, ""),  # null metadata is stored as "" (Kafka's NO_METADATA)
    }
    described = describe(wire, group)
    assert (described.error_code, described.group_state, described.members) == (NONE, "Empty", ())


def test_unknown_topics_and_partitions_fail_alone(wire: WireClient) -> None:
    group = unique("unknown-tp")
    answer = offset_commit(
        wire,
        group,
        {(TOPIC, 1): 6, (TOPIC, 99): 6, ("no-such-topic", 0): 6, (TOPIC, -1): 6},
    )
    assert answer == {
        (TOPIC, 1): NONE,
        (TOPIC, 99): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        (TOPIC, -1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert committed_offsets(wire_bootstrap(wire), group) == {(TOPIC, 1): (6, "")}


def wire_bootstrap(client: WireClient) -> str:
    host, port = client.sock.getpeername()[:2]
    return f"{host}:{port}"


def test_oversized_metadata_fails_alone(wire: WireClient) -> None:
    group = unique("big-metadata")
    assert offset_commit(wire, group, {(TOPIC, 0): (1, "before")}) == {(TOPIC, 0): NONE}
    answer = offset_commit(
        wire,
        group,
        {(TOPIC, 0): (7, "x" * 4097), (TOPIC, 1): (8, "y" * 4096), (TOPIC, 2): (9, "z")},
    )
    assert answer == {
        (TOPIC, 0): ErrorCode.OFFSET_METADATA_TOO_LARGE,
        (TOPIC, 1): NONE,
        (TOPIC, 2): NONE,
    }
    assert fetched(wire, group, partitions()) == {
        (TOPIC, 0): (1, "before"),
        (TOPIC, 1): (8, "y" * 4096),
        (TOPIC, 2): (9, "z"),
    }


def test_commits_from_wrong_generations_and_unknown_members(wire: WireClient) -> None:
    group = unique("fenced-commits")
    member, generation = joined_member(wire, group)
    assert generation == 1
    tp = (TOPIC, 0)
    cases = {
        "next generation": (dict(generation_id=2, member_id=member), ErrorCode.ILLEGAL_GENERATION),
        "older generation": (dict(generation_id=0, member_id=member), ErrorCode.ILLEGAL_GENERATION),
        "unknown member": (dict(generation_id=1, member_id="nobody"), ErrorCode.UNKNOWN_MEMBER_ID),
        "unknown member, no generation": (
            dict(generation_id=-1, member_id="nobody"),
            ErrorCode.UNKNOWN_MEMBER_ID,
        ),
        "standalone into a group with members": (
            dict(generation_id=-1, member_id=""),
            ErrorCode.UNKNOWN_MEMBER_ID,
        ),
    }
    for case, (identity, expected) in cases.items():
        answer = offset_commit(wire, group, {tp: (11, case)}, **identity)
        assert answer == {tp: expected}, case
    assert fetched(wire, group, [tp]) == {tp: (-1, "")}, "a refused commit was stored"
    good = offset_commit(wire, group, {tp: (12, "good")}, generation_id=1, member_id=member)
    assert good == {tp: NONE}
    assert fetched(wire, group, [tp]) == {tp: (12, "good")}
    assert leave_group(wire, group, member).error_code == NONE


def test_commit_between_join_and_sync_is_rebalance_in_progress(
    bad_broker: BrokerProcess, wire: WireClient
) -> None:
    group = unique("completing")
    first, generation = joined_member(wire, group)
    with WireClient.connect(bad_broker.bootstrap) as other:
        pending = join_group(other, group, protocols=RANGE)
        assert pending.error_code == ErrorCode.MEMBER_ID_REQUIRED, pending
        second = pending.member_id
        parked = send_join_group(other, group, second, protocols=RANGE)  # waits for `first`
        assert heartbeat(wire, group, generation, first) == ErrorCode.REBALANCE_IN_PROGRESS
        rejoined = join_group(wire, group, first, protocols=RANGE)
        assert rejoined.error_code == NONE, rejoined
        joined = recv_join_group(other, parked)
        assert joined.error_code == NONE, joined
        assert int(rejoined.generation_id) == int(joined.generation_id) == generation + 1
        new_generation = int(rejoined.generation_id)

        # Both joined generation 2, nobody synced yet: the group is CompletingRebalance.
        tp = (TOPIC, 1)
        answer = offset_commit(wire, group, {tp: 3}, generation_id=new_generation, member_id=first)
        assert answer == {tp: ErrorCode.REBALANCE_IN_PROGRESS}

        leader = rejoined.leader
        assert leader in (first, second) and joined.leader == leader
        leader_client, follower_client = (wire, other) if leader == first else (other, wire)
        follower = second if leader == first else first
        assignments = {
            leader: consumer_assignment({TOPIC: [0, 1]}),
            follower: consumer_assignment({TOPIC: [2]}),
        }
        synced = sync_group(leader_client, group, new_generation, leader, assignments)
        assert synced.error_code == NONE, synced
        assert synced.assignment == assignments[leader]
        synced = sync_group(follower_client, group, new_generation, follower)
        assert synced.error_code == NONE, synced
        assert synced.assignment == assignments[follower]

        answer = offset_commit(wire, group, {tp: 3}, generation_id=new_generation, member_id=first)
        assert answer == {tp: NONE}
        for client, member in ((wire, first), (other, second)):
            assert leave_group(client, group, member).error_code == NONE


# -- Heartbeat and SyncGroup -------------------------------------------------------------------


def test_heartbeats_with_stale_generations_and_unknown_members(wire: WireClient) -> None:
    group = unique("heartbeats")
    member, generation = joined_member(wire, group)
    assert heartbeat(wire, group, generation, member) == NONE
    assert heartbeat(wire, group, generation - 1, member) == ErrorCode.ILLEGAL_GENERATION
    assert heartbeat(wire, group, generation + 1, member) == ErrorCode.ILLEGAL_GENERATION
    assert heartbeat(wire, group, generation, "nobody") == ErrorCode.UNKNOWN_MEMBER_ID
    assert heartbeat(wire, unique("no-group"), 1, member) == ErrorCode.UNKNOWN_MEMBER_ID
    # None of that disturbed the member.
    assert heartbeat(wire, group, generation, member) == NONE
    assert describe(wire, group).group_state == "Stable"
    assert leave_group(wire, group, member).error_code == NONE


def test_sync_from_non_members_and_wrong_generations(wire: WireClient) -> None:
    group = unique("syncs")
    member, generation = joined_member(wire, group)
    mine = consumer_assignment({TOPIC: range(3)})
    intruder = sync_group(
        wire, group, generation, "intruder", {"intruder": consumer_assignment({TOPIC: [0]})}
    )
    assert intruder.error_code == ErrorCode.UNKNOWN_MEMBER_ID, intruder
    assert sync_group(wire, unique("no-group"), 1, member).error_code == ErrorCode.UNKNOWN_MEMBER_ID
    stale = sync_group(wire, group, generation + 1, member, {member: b""})
    assert stale.error_code == ErrorCode.ILLEGAL_GENERATION, stale
    # In Stable a sync of the current generation returns the member's current assignment.
    again = sync_group(wire, group, generation, member)
    assert (again.error_code, again.assignment) == (NONE, mine)
    assert heartbeat(wire, group, generation, member) == NONE
    assert leave_group(wire, group, member).error_code == NONE


# -- JoinGroup ---------------------------------------------------------------------------------


def test_empty_group_id_is_invalid_group_id(wire: WireClient) -> None:
    joined = join_group(wire, "", protocols=RANGE)
    assert joined.error_code == ErrorCode.INVALID_GROUP_ID, joined
    assert sync_group(wire, "", 1, "m").error_code == ErrorCode.INVALID_GROUP_ID
    assert heartbeat(wire, "", 1, "m") == ErrorCode.INVALID_GROUP_ID
    assert leave_group(wire, "", "m").error_code == ErrorCode.INVALID_GROUP_ID


@pytest.mark.parametrize("version", [0, 5])
@pytest.mark.parametrize("session_timeout_ms", [0, 5999, 1_800_001])
def test_session_timeouts_outside_the_broker_bounds(
    wire: WireClient, version: int, session_timeout_ms: int
) -> None:
    group = unique("session")
    refused = join_group(
        wire, group, protocols=RANGE, session_timeout_ms=session_timeout_ms, version=version
    )
    assert refused.error_code == ErrorCode.INVALID_SESSION_TIMEOUT, refused
    assert describe(wire, group).group_state == "Dead"  # the refused join created nothing
    # The bounds themselves are accepted.
    for bound in (6000, 1_800_000):
        accepted_group = unique("session-ok")
        accepted = join_group(
            wire, accepted_group, protocols=RANGE, session_timeout_ms=bound, version=version
        )
        expected = ErrorCode.MEMBER_ID_REQUIRED if version >= 4 else NONE
        assert accepted.error_code == expected, accepted
        if accepted.error_code == NONE:
            left = leave_group(wire, accepted_group, accepted.member_id, version=0)
            assert left.error_code == NONE, left


def test_joins_with_no_common_protocol(wire: WireClient) -> None:
    group = unique("protocols")
    member, generation = joined_member(wire, group)
    roundrobin_only = (("roundrobin", SUBSCRIPTION),)
    cases = {
        "no protocol in common": dict(protocols=roundrobin_only),
        "another protocol type": dict(protocols=RANGE, protocol_type="connect"),
        "no protocols at all": dict(protocols=()),
    }
    for case, kwargs in cases.items():
        # Checked before the KIP-394 handshake: the first join already fails.
        refused = join_group(wire, group, **kwargs)
        assert refused.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL, (case, refused)
    # The current member was not disturbed: no rebalance was started.
    assert heartbeat(wire, group, generation, member) == NONE
    assert describe(wire, group).group_state == "Stable"

    # A new group needs a protocol type and at least one protocol.
    for kwargs in (dict(protocols=()), dict(protocols=RANGE, protocol_type="")):
        fresh = unique("protocols-new")
        refused = join_group(wire, fresh, **kwargs)
        assert refused.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL, (kwargs, refused)
    assert leave_group(wire, group, member).error_code == NONE


def test_kip394_two_step_join(wire: WireClient) -> None:
    group = unique("kip394")
    first = join_group(wire, group, protocols=RANGE, version=4)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED, first
    assert first.member_id and int(first.generation_id) == -1, first
    assert describe(wire, group).members == (), "a pending member is not a member yet"

    second = join_group(wire, group, first.member_id, protocols=RANGE, version=4)
    assert second.error_code == NONE, second
    assert second.member_id == first.member_id
    assert (int(second.generation_id), second.leader) == (1, first.member_id)
    assert [m.member_id for m in second.members] == [first.member_id]
    assert leave_group(wire, group, first.member_id).error_code == NONE

    # JoinGroup v0-v3 and static members (v5 with group.instance.id) join in one step.
    for kwargs in (dict(version=3), dict(version=5, group_instance_id="static-1")):
        direct = join_group(wire, unique("one-step"), protocols=RANGE, **kwargs)
        assert direct.error_code == NONE and direct.member_id, (kwargs, direct)
        assert int(direct.generation_id) == 1, direct

    # Member ids the coordinator never issued.
    known, generation = joined_member(wire, group)
    forged = join_group(wire, group, "forged-member-id", protocols=RANGE)
    assert forged.error_code == ErrorCode.UNKNOWN_MEMBER_ID, forged
    elsewhere = join_group(wire, unique("no-group"), "forged-member-id", protocols=RANGE)
    assert elsewhere.error_code == ErrorCode.UNKNOWN_MEMBER_ID, elsewhere
    assert heartbeat(wire, group, generation, known) == NONE
    assert leave_group(wire, group, known).error_code == NONE


def test_describe_groups_of_an_unknown_group(wire: WireClient) -> None:
    described = describe(wire, unique("never"))
    assert (described.error_code, described.group_state, described.members) == (NONE, "Dead", ())
