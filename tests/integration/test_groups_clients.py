"""Consumer groups through each client's own group features, and the group admin APIs.

Balanced consumers of every client library against a real Franz broker:

* ``kcat -G`` (librdkafka's balanced consumer, a separate process) and aiokafka consumers with
  ``group_id``: partitions split between members, records read exactly once between them;
* cooperative-sticky incremental rebalancing with confluent-kafka
  (``partition.assignment.strategy=cooperative-sticky``): a joining member takes partitions
  without the others giving up the ones they keep (the incremental revoke callbacks name only
  the partitions that move; nothing is ever "lost");
* static membership (``group.instance.id``, KIP-345): a static member restarted within its
  session timeout gets its partitions back and the other members see no rebalance;
* the range and roundrobin assignors in confluent-kafka and kafka-python, and the
  coordinator's protocol choice (the protocol every member supports, by members' votes).

Admin APIs through confluent-kafka's ``AdminClient`` and kafka-python's ``KafkaAdminClient``:
ListGroups (with the states filter), DescribeGroups, DeleteGroups (an empty group, a group
with members: NON_EMPTY_GROUP, an unknown group: GROUP_ID_NOT_FOUND), OffsetDelete
(kafka-python's ``delete_group_offsets``; confluent-kafka 2.16 has no such API), listing and
altering committed offsets, commit metadata across clients, and OffsetFetch for several groups
in one request (kafka-python's ``list_group_offsets`` batches groups with OffsetFetch v8+;
confluent-kafka's ``list_consumer_group_offsets`` accepts one group per call, so it cannot).

Kafka's rules are the reference: DeleteGroups refuses a group with members (NON_EMPTY_GROUP)
and an unknown one (GROUP_ID_NOT_FOUND); OffsetDelete refuses partitions of a topic a member
is subscribed to (GROUP_SUBSCRIBED_TO_TOPIC, per partition); a standalone commit (generation
-1, no member id, as the admin clients send) into a group with members is UNKNOWN_MEMBER_ID.
"""

from __future__ import annotations

import itertools
import time
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from tests.support.broker import BrokerProcess
from tests.support.clients import OutRecord, create_topic, produce_with
from tests.support.groups import (
    GROUP_BROKER_OVERRIDES,
    TP,
    GroupMember,
    MemberClient,
    close_all,
    committed_offsets,
    describe_group,
    event_counts,
    make_member,
    wait_for_assignment,
    wait_until,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.errors as kafka_errors
    from kafka import TopicPartition as KafkaPythonTopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.structs import OffsetAndMetadata

TIMEOUT = 15.0
_names = itertools.count()


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("group-clients"), GROUP_BROKER_OVERRIDES)
    proc.start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()[-5000:]}"


@pytest.fixture(scope="module")
def admin(group_broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": group_broker.bootstrap})


@pytest.fixture
def kp_admin(group_broker: BrokerProcess) -> Iterator[Any]:
    client = KafkaAdminClient(bootstrap_servers=group_broker.bootstrap, request_timeout_ms=15000)
    try:
        yield client
    finally:
        client.close()


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_names)}-{time.monotonic_ns() % 1_000_000}"


def new_topic(broker: BrokerProcess, prefix: str, partitions: int = 3) -> str:
    topic = unique(prefix)
    create_topic(broker.bootstrap, topic, partitions)
    return topic


def produce(
    broker: BrokerProcess, topic: str, partitions: int, per_partition: int
) -> set[tuple[int, int]]:
    records = [
        OutRecord(b"k%d" % i, b"v-%d-%d" % (p, i), partition=p)
        for i in range(per_partition)
        for p in range(partitions)
    ]
    result = produce_with("confluent-kafka", broker.bootstrap, topic, records)
    return {(a.partition, a.offset) for a in result.acks if a is not None}


def tps(topic: str, partitions: int = 3) -> list[TP]:
    return [(topic, p) for p in range(partitions)]


def standalone_commit(
    bootstrap: str, group: str, offsets: dict[TP, tuple[int, str | None]]
) -> None:
    """Commit as a non-member (generation -1, empty member id) with kafka-python's admin
    ``alter_group_offsets``; every partition must succeed."""
    client = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    try:
        result = client.alter_group_offsets(
            group,
            {
                KafkaPythonTopicPartition(t, p): OffsetAndMetadata(o, m or "", -1)
                for (t, p), (o, m) in offsets.items()
            },
        )
    finally:
        client.close()
    errors = {(tp.topic, tp.partition): e for tp, e in result.items()}
    assert errors == dict.fromkeys(offsets, kafka_errors.NoError), errors


def exactly_once(members: Sequence[GroupMember], produced: set[tuple[int, int]]) -> None:
    """Wait until ``members`` read ``len(produced)`` records between them; then check each
    record was read once, by the member owning its partition."""
    wait_until(
        lambda: sum(len(m.records) for m in members) >= len(produced),
        30,
        f"{len(produced)} records read between the members",
        observe=lambda: "\n".join(m.diagnose() for m in members),
    )
    read = sorted((r.partition, r.offset) for m in members for r in m.records)
    assert read == sorted(produced), "a record was read twice, or one was lost"
    for m in members:
        mine = {p for _, p in m.assignment}
        foreign = [r for r in m.records if r.partition not in mine]
        assert not foreign, f"{m.name} read records of partitions it does not own: {foreign[:3]}"


# -- kcat -G and aiokafka ----------------------------------------------------------------------


def test_kcat_balanced_consumers(group_broker: BrokerProcess) -> None:
    topic = new_topic(group_broker, "kcat-g")
    group = unique("kcat-g")
    partitions = tps(topic)
    members = [
        make_member("kcat", group_broker.bootstrap, group, [topic], name=f"kcat{i}")
        for i in range(2)
    ]
    try:
        wait_for_assignment(members, partitions, sizes=[2, 1], what="two kcat -G members")
        exactly_once(members, produce(group_broker, topic, 3, 20))

        leaving, staying = members
        before = event_counts([staying])
        leaving.close()  # SIGTERM: kcat closes its consumer, which leaves the group
        wait_for_assignment([staying], partitions, sizes=[3], after=before, what="kcat member left")
    finally:
        close_all(members)


def test_aiokafka_group_members(group_broker: BrokerProcess) -> None:
    topic = new_topic(group_broker, "aiokafka-g")
    group = unique("aiokafka-g")
    partitions = tps(topic)
    members = [
        make_member("aiokafka", group_broker.bootstrap, group, [topic], name=f"aio{i}")
        for i in range(2)
    ]
    try:
        wait_for_assignment(members, partitions, sizes=[2, 1], what="two aiokafka members")
        exactly_once(members, produce(group_broker, topic, 3, 20))
        for member in members:
            member.commit()
        committed = committed_offsets(group_broker.bootstrap, group)
        assert {tp: o for tp, (o, _) in committed.items()} == dict.fromkeys(partitions, 20)
    finally:
        close_all(members)


# -- cooperative-sticky ------------------------------------------------------------------------


def test_cooperative_sticky_rebalances_incrementally(group_broker: BrokerProcess) -> None:
    """Six partitions; members join one by one (6 -> 3 + 3 -> 2 + 2 + 2), then the newest
    leaves. At each step a member gives up only the partitions that move to another member:
    its incremental revoke callbacks never name a partition it keeps, and it never loses its
    partitions ("lost" means the coordinator fenced it)."""
    topic = new_topic(group_broker, "coop", 6)
    group = unique("coop")
    partitions = tps(topic, 6)
    config = {"partition.assignment.strategy": "cooperative-sticky"}
    members: list[GroupMember] = []
    try:
        for count, sizes in [(1, [6]), (2, [3, 3]), (3, [2, 2, 2])]:
            held = {m.name: m.assignment for m in members}
            marks = {m.name: len(m.events) for m in members}
            members.append(
                make_member(
                    "confluent-kafka",
                    group_broker.bootstrap,
                    group,
                    [topic],
                    name=f"coop{count}",
                    config=config,
                )
            )
            wait_for_assignment(members, partitions, sizes=sizes, what=f"{count} member(s)")
            for m in members[:-1]:
                kept = held[m.name] & m.assignment
                assert kept, f"{m.name} kept nothing of {sorted(held[m.name])} (not sticky)"
                new_events = m.events[marks[m.name] :]
                revoked = frozenset().union(
                    *(e.partitions for e in new_events if e.kind == "revoke")
                )
                assert not revoked & kept, (
                    f"{m.name} had partitions it keeps revoked: events {new_events}"
                )
                assert revoked == held[m.name] - m.assignment, new_events
                assert m.assignment <= held[m.name], f"{m.name} gained partitions: {new_events}"
        # The newest member leaves: the others only gain partitions, nothing is revoked.
        leaving = members.pop()
        held = {m.name: m.assignment for m in members}
        marks = {m.name: len(m.events) for m in members}
        leaving.close()
        wait_for_assignment(members, partitions, sizes=[3, 3], what=f"{leaving.name} left")
        for m in members:
            new_events = m.events[marks[m.name] :]
            assert not [e for e in new_events if e.kind != "assign"], new_events
            assert held[m.name] <= m.assignment, new_events
        for m in [*members, leaving]:
            assert not [e for e in m.events if e.kind == "lost"], m.describe()
    finally:
        close_all(members)


# -- static membership -------------------------------------------------------------------------


def test_static_member_restart_within_session_timeout_causes_no_rebalance(
    group_broker: BrokerProcess,
) -> None:
    """Three static members (``group.instance.id``). One closes (a static member sends no
    LeaveGroup) and a new consumer with the same instance id starts at once: Kafka replaces
    the member without a rebalance, so it gets the same partitions back and the two others
    get no revoke/assign callbacks; DescribeGroups shows them unchanged."""
    topic = new_topic(group_broker, "static")
    group = unique("static")
    partitions = tps(topic)

    def static(i: int) -> GroupMember:
        return make_member(
            "confluent-kafka",
            group_broker.bootstrap,
            group,
            [topic],
            name=f"static{i}",
            config={"group.instance.id": f"instance-{i}", "session.timeout.ms": 10000},
        )

    members = [static(0), static(1), static(2)]
    try:
        wait_for_assignment(members, partitions, sizes=[1, 1, 1], what="three static members")
        before = describe_group(group_broker.bootstrap, group)
        ids_before = {m.group_instance_id: m.member_id for m in before.members}
        assert set(ids_before) == {"instance-0", "instance-1", "instance-2"}, before
        others = members[:2]
        marks = {m.name: len(m.events) for m in others}
        restarted = members[2]
        old_assignment = restarted.assignment

        restarted.close()
        members[2] = static(2)
        wait_until(
            lambda: members[2].assignment == old_assignment,
            15,
            f"the restarted static member to get {sorted(old_assignment)} back",
            observe=lambda: "\n".join(m.diagnose() for m in members),
        )
        # A rebalance would reach the others within a heartbeat interval or two (500 ms).
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            moved = {m.name: m.events[marks[m.name] :] for m in others if m.events[marks[m.name] :]}
            assert not moved, f"the other members were rebalanced: {moved}"
            time.sleep(0.1)

        after = describe_group(group_broker.bootstrap, group)
        assert after.state == ConsumerGroupState.STABLE, after
        ids_after = {m.group_instance_id: m.member_id for m in after.members}
        assert set(ids_after) == set(ids_before), after
        for i in (0, 1):
            assert ids_after[f"instance-{i}"] == ids_before[f"instance-{i}"], (before, after)
        described = {
            m.group_instance_id: {(tp.topic, tp.partition) for tp in m.assignment.topic_partitions}
            for m in after.members
        }
        assert described == {f"instance-{i}": set(members[i].assignment) for i in range(3)}
    finally:
        close_all(members)


# -- assignors and protocol selection ----------------------------------------------------------


ASSIGNOR_CONFIG: dict[tuple[MemberClient, str], dict[str, Any]] = {
    ("confluent-kafka", "range"): {"partition.assignment.strategy": "range"},
    ("confluent-kafka", "roundrobin"): {"partition.assignment.strategy": "roundrobin"},
    ("kafka-python", "range"): {"partition_assignment_strategy": [RangePartitionAssignor]},
    ("kafka-python", "roundrobin"): {
        "partition_assignment_strategy": [RoundRobinPartitionAssignor]
    },
}


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
@pytest.mark.parametrize("assignor", ["range", "roundrobin"])
def test_range_and_roundrobin_assignors(
    group_broker: BrokerProcess, client: MemberClient, assignor: str
) -> None:
    """Two members, two topics of three partitions. Range splits each topic on its own
    (first member by id: partitions 0-1 of each, second: partition 2 of each); roundrobin
    deals the sorted topic partitions alternately."""
    a = new_topic(group_broker, "assign-a")
    b = new_topic(group_broker, "assign-b")
    group = unique(f"assign-{assignor}")
    members = [
        make_member(
            client,
            group_broker.bootstrap,
            group,
            [a, b],
            name=f"{assignor}{i}",
            config=ASSIGNOR_CONFIG[(client, assignor)],
        )
        for i in range(2)
    ]
    try:
        got = wait_for_assignment(
            members,
            [*tps(a), *tps(b)],
            sizes=[3, 3] if assignor == "roundrobin" else [4, 2],
            what=assignor,
        )
        if assignor == "range":
            expected = {
                frozenset({(a, 0), (a, 1), (b, 0), (b, 1)}),
                frozenset({(a, 2), (b, 2)}),
            }
        else:
            expected = {frozenset({(a, 0), (a, 2), (b, 1)}), frozenset({(a, 1), (b, 0), (b, 2)})}
        assert set(got.values()) == expected
        # DescribeGroups names the protocol only while the group is Stable (Kafka answers ""
        # during a rebalance), and kafka-python may rejoin once more when its metadata
        # snapshot fills in after the first assignment: wait for the group to settle.
        wait_until(
            lambda: describe_group(group_broker.bootstrap, group).partition_assignor == assignor,
            15,
            f"the group to be Stable with the {assignor} assignor",
            observe=lambda: describe_group(group_broker.bootstrap, group),
        )
    finally:
        close_all(members)


def test_coordinator_picks_the_protocol_all_members_support_by_votes(
    group_broker: BrokerProcess,
) -> None:
    """Kafka's ``selectProtocol``: candidates are the protocols every member supports; each
    member votes for its most preferred candidate; the most votes win."""
    topic = new_topic(group_broker, "vote")
    bootstrap = group_broker.bootstrap

    def member(group: str, name: str, strategy: str) -> GroupMember:
        config = {"partition.assignment.strategy": strategy}
        return make_member("confluent-kafka", bootstrap, group, [topic], name=name, config=config)

    only_common = unique("vote-common")
    members = [member(only_common, "rr-first", "range,roundrobin")]
    try:
        wait_for_assignment(members, tps(topic), sizes=[3])
        assert describe_group(bootstrap, only_common).partition_assignor == "range"
        # A member supporting only roundrobin: range is no longer a candidate.
        members.append(member(only_common, "rr-only", "roundrobin"))
        wait_for_assignment(members, tps(topic), sizes=[2, 1])
        wait_until(
            lambda: describe_group(bootstrap, only_common).partition_assignor == "roundrobin",
            10,
            "the group to switch to roundrobin, the only common protocol",
            observe=lambda: describe_group(bootstrap, only_common),
        )

        majority = unique("vote-majority")
        voters = [
            member(majority, "v1", "range,roundrobin"),
            member(majority, "v2", "range,roundrobin"),
            member(majority, "v3", "roundrobin,range"),
        ]
        members += voters
        wait_for_assignment(voters, tps(topic), sizes=[1, 1, 1])
        assert describe_group(bootstrap, majority).partition_assignor == "range"
    finally:
        close_all(members)


# -- ListGroups and DescribeGroups -------------------------------------------------------------


def test_list_and_describe_groups(
    group_broker: BrokerProcess, admin: AdminClient, kp_admin: Any
) -> None:
    topic = new_topic(group_broker, "listing")
    stable, empty = unique("stable"), unique("empty")
    standalone_commit(group_broker.bootstrap, empty, {(topic, 0): (1, None)})
    members = [
        make_member("confluent-kafka", group_broker.bootstrap, stable, [topic], name=f"lister{i}")
        for i in range(2)
    ]
    try:
        wait_for_assignment(members, tps(topic), sizes=[2, 1])

        def listed(**kwargs: Any) -> dict[str, Any]:
            result = admin.list_consumer_groups(request_timeout=TIMEOUT, **kwargs).result()
            assert not result.errors, result.errors
            return {g.group_id: g for g in result.valid}

        everything = listed()
        assert {stable, empty} <= set(everything)
        assert everything[stable].state == ConsumerGroupState.STABLE
        assert everything[empty].state == ConsumerGroupState.EMPTY
        assert not everything[stable].is_simple_consumer_group
        only_stable = listed(states={ConsumerGroupState.STABLE})
        assert stable in only_stable and empty not in only_stable
        assert all(g.state == ConsumerGroupState.STABLE for g in only_stable.values())
        only_empty = listed(states={ConsumerGroupState.EMPTY})
        assert empty in only_empty and stable not in only_empty
        assert not listed(states={ConsumerGroupState.PREPARING_REBALANCING}).keys() & {
            stable,
            empty,
        }

        description = describe_group(group_broker.bootstrap, stable)
        assert description.group_id == stable
        assert description.state == ConsumerGroupState.STABLE
        assert description.partition_assignor == "range"
        assert description.coordinator.id == 0
        assert {m.client_id: m.member_id for m in description.members}.keys() == {
            "lister0",
            "lister1",
        }
        for m in description.members:
            assert m.member_id.startswith(m.client_id + "-"), m  # Kafka: clientId-UUID
            assert m.host.strip("/") in ("127.0.0.1", "localhost"), m
        assigned = {
            m.client_id: {(tp.topic, tp.partition) for tp in m.assignment.topic_partitions}
            for m in description.members
        }
        assert assigned == {m.name: set(m.assignment) for m in members}
        empty_description = describe_group(group_broker.bootstrap, empty)
        assert empty_description.state == ConsumerGroupState.EMPTY
        assert not empty_description.members

        # kafka-python: ListGroups v4+ with a states filter, DescribeGroups with decoded
        # subscriptions and assignments.
        kp_stable = kp_admin.list_groups(states_filter=["Stable"])
        kp_names = {g["group_id"]: g for g in kp_stable}
        assert stable in kp_names and empty not in kp_names, kp_stable
        assert kp_names[stable]["protocol_type"] == "consumer"
        assert {g["group_id"] for g in kp_admin.list_groups(states_filter=["Empty"])} >= {empty}
        kp_described = kp_admin.describe_groups([stable])[stable]
        assert kp_described["error"] is None, kp_described
        assert kp_described["group_state"] == "Stable"
        assert kp_described["protocol_type"] == "consumer"
        assert kp_described["protocol_data"] == "range"
        assert len(kp_described["members"]) == 2
        for m in kp_described["members"]:
            assert list(m["member_metadata"]["topics"]) == [topic], m
    finally:
        close_all(members)


# -- DeleteGroups ------------------------------------------------------------------------------


def test_delete_groups(group_broker: BrokerProcess, admin: AdminClient, kp_admin: Any) -> None:
    topic = new_topic(group_broker, "delete-groups")
    bootstrap = group_broker.bootstrap
    empty_c, empty_k, busy = unique("del-c"), unique("del-k"), unique("del-busy")
    for group in (empty_c, empty_k, busy):
        standalone_commit(bootstrap, group, {(topic, 0): (2, "before delete")})
    member = make_member("confluent-kafka", bootstrap, busy, [topic], name="busy")
    try:
        wait_for_assignment([member], tps(topic), sizes=[3])

        # confluent-kafka
        admin.delete_consumer_groups([empty_c], request_timeout=TIMEOUT)[empty_c].result()
        assert committed_offsets(bootstrap, empty_c) == {}
        with pytest.raises(KafkaException) as refused:
            admin.delete_consumer_groups([busy], request_timeout=TIMEOUT)[busy].result()
        assert refused.value.args[0].code() == KafkaError.NON_EMPTY_GROUP
        unknown = unique("never-existed")
        with pytest.raises(KafkaException) as missing:
            admin.delete_consumer_groups([unknown], request_timeout=TIMEOUT)[unknown].result()
        assert missing.value.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND

        # kafka-python: several groups in one DeleteGroups, one result each.
        # kafka-python reports "OK" or the error class name per group.
        results = dict(kp_admin.delete_groups([empty_k, busy, unknown]))
        assert results == {
            empty_k: "OK",
            busy: "NonEmptyGroupError",
            unknown: "GroupIdNotFoundError",
        }

        listed = {g.group_id for g in admin.list_consumer_groups().result().valid}
        assert empty_c not in listed and empty_k not in listed and busy in listed
        # The refused deletion left the busy group and its offsets alone.
        assert committed_offsets(bootstrap, busy)[(topic, 0)][0] == 2
        assert describe_group(bootstrap, busy).state == ConsumerGroupState.STABLE
    finally:
        member.close()


def _error_name(error: Any) -> str:
    return error.__name__ if isinstance(error, type) else type(error).__name__


# -- OffsetDelete ------------------------------------------------------------------------------


def test_offset_delete(group_broker: BrokerProcess, kp_admin: Any) -> None:
    """kafka-python's ``delete_group_offsets`` (OffsetDelete v0). confluent-kafka 2.16's
    AdminClient has no OffsetDelete API."""
    subscribed = new_topic(group_broker, "odel-sub")
    other = new_topic(group_broker, "odel-other")
    bootstrap = group_broker.bootstrap
    empty, busy = unique("odel-empty"), unique("odel-busy")
    offsets = {(subscribed, p): (5 + p, None) for p in range(3)}
    offsets |= {(other, p): (7, None) for p in range(3)}
    standalone_commit(bootstrap, empty, offsets)
    standalone_commit(bootstrap, busy, offsets)

    # An empty group: the named partitions' offsets go, the others stay.
    result = kp_admin.delete_group_offsets(
        empty, [KafkaPythonTopicPartition(subscribed, 0), KafkaPythonTopicPartition(other, 1)]
    )
    assert {(tp.topic, tp.partition): _error_name(e) for tp, e in result.items()} == {
        (subscribed, 0): "NoError",
        (other, 1): "NoError",
    }
    left = committed_offsets(bootstrap, empty)
    assert set(left) == set(offsets) - {(subscribed, 0), (other, 1)}, left

    member = make_member("confluent-kafka", bootstrap, busy, [subscribed], name="odel")
    try:
        wait_for_assignment([member], tps(subscribed), sizes=[3])
        result = kp_admin.delete_group_offsets(
            busy,
            [KafkaPythonTopicPartition(subscribed, 1), KafkaPythonTopicPartition(other, 2)],
        )
        assert {(tp.topic, tp.partition): _error_name(e) for tp, e in result.items()} == {
            (subscribed, 1): "GroupSubscribedToTopicError",
            (other, 2): "NoError",
        }
        left = committed_offsets(bootstrap, busy)
        assert (subscribed, 1) in left and (other, 2) not in left, left
    finally:
        member.close()

    with pytest.raises(kafka_errors.GroupIdNotFoundError):
        kp_admin.delete_group_offsets(
            unique("odel-unknown"), [KafkaPythonTopicPartition(subscribed, 0)]
        )


# -- offsets through the admin clients ---------------------------------------------------------


def test_alter_and_list_group_offsets_with_admin_clients(
    group_broker: BrokerProcess, admin: AdminClient, kp_admin: Any
) -> None:
    topic = new_topic(group_broker, "alter")
    bootstrap = group_broker.bootstrap
    produced = produce(group_broker, topic, 3, 10)
    group = unique("alter")

    altered = admin.alter_consumer_group_offsets(
        [
            ConsumerGroupTopicPartitions(
                group, [TopicPartition(topic, p, 2 * p + 1) for p in range(3)]
            )
        ],
        request_timeout=TIMEOUT,
    )[group].result()
    assert all(tp.error is None for tp in altered.topic_partitions), altered.topic_partitions
    listed = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group)], request_timeout=TIMEOUT
    )[group].result()
    assert {(tp.topic, tp.partition): tp.offset for tp in listed.topic_partitions} == {
        (topic, p): 2 * p + 1 for p in range(3)
    }
    # The same offsets through kafka-python, for named partitions and for all.
    kp_all = kp_admin.list_group_offsets({group: None})[group]
    assert {(tp.topic, tp.partition): om.offset for tp, om in kp_all.items()} == {
        (topic, p): 2 * p + 1 for p in range(3)
    }
    kp_some = kp_admin.list_group_offsets(
        {group: [KafkaPythonTopicPartition(topic, 2), KafkaPythonTopicPartition(topic, 7)]}
    )[group]
    assert {(tp.topic, tp.partition): om.offset for tp, om in kp_some.items()} == {
        (topic, 2): 5,
        (topic, 7): -1,
    }

    # kafka-python alters one partition with metadata; confluent-kafka reads it back.
    result = kp_admin.alter_group_offsets(
        group, {KafkaPythonTopicPartition(topic, 1): OffsetAndMetadata(8, "moved by kp", -1)}
    )
    assert [_error_name(e) for e in result.values()] == ["NoError"]
    assert committed_offsets(bootstrap, group)[(topic, 1)] == (8, "moved by kp")

    # A member of the group resumes where the admin clients put the offsets.
    member = make_member("confluent-kafka", bootstrap, group, [topic], name="alter")
    try:
        expected = {(p, o) for p, o in produced if o >= {0: 1, 1: 8, 2: 5}[p]}
        wait_until(
            lambda: len(member.records) >= len(expected),
            30,
            f"the member to read {len(expected)} records",
            observe=member.diagnose,
        )
        assert sorted((r.partition, r.offset) for r in member.records) == sorted(expected)

        # With a member in the group, an admin (standalone) commit is refused.
        refused = admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 0)])],
            request_timeout=TIMEOUT,
        )[group]
        with pytest.raises(KafkaException) as error:
            outcome = refused.result()
            errors = [tp.error for tp in outcome.topic_partitions if tp.error is not None]
            if errors:
                raise KafkaException(errors[0])
        assert error.value.args[0].code() == KafkaError.UNKNOWN_MEMBER_ID, error.value
        kp_refused = kp_admin.alter_group_offsets(
            group, {KafkaPythonTopicPartition(topic, 0): OffsetAndMetadata(0, "", -1)}
        )
        assert [_error_name(e) for e in kp_refused.values()] == ["UnknownMemberIdError"]
        assert committed_offsets(bootstrap, group)[(topic, 0)][0] == 1
    finally:
        member.close()


def test_commit_metadata_round_trips_between_clients(group_broker: BrokerProcess) -> None:
    """Metadata committed by one client is read back by the others, byte for byte.

    confluent-kafka's Python binding sends a metadata string with its C terminator
    (``metadata_size = strlen + 1``), so kafka-python and aiokafka read it with a trailing
    NUL; confluent-kafka reads it as a C string (up to the NUL)."""
    topic = new_topic(group_broker, "metadata")
    bootstrap = group_broker.bootstrap
    group_c, group_k = unique("meta-c"), unique("meta-k")
    text = "ünïcode, spaces and = signs; " + "x" * 200
    producer_side = make_member("confluent-kafka", bootstrap, group_c, [topic], name="meta-c")
    try:
        wait_for_assignment([producer_side], tps(topic), sizes=[3])
        assert producer_side.commit({(topic, 0): (4, text), (topic, 1): (5, "")}) == {
            (topic, 0): None,
            (topic, 1): None,
        }
        assert producer_side.committed([(topic, 0)]) == {(topic, 0): (4, text)}
    finally:
        producer_side.close()
    kp_side = make_member("kafka-python", bootstrap, group_c, [topic], name="meta-read")
    try:
        read = kp_side.committed([(topic, 0), (topic, 1)])
        assert read[(topic, 0)] == (4, text + "\0")
        assert read[(topic, 1)][0] == 5 and read[(topic, 1)][1] in ("", "\0")
    finally:
        kp_side.close()

    writer = make_member("kafka-python", bootstrap, group_k, [topic], name="meta-k")
    try:
        wait_for_assignment([writer], tps(topic), sizes=[3])
        writer.commit({(topic, 2): (6, text)})
        assert writer.committed([(topic, 2)]) == {(topic, 2): (6, text)}
    finally:
        writer.close()
    assert committed_offsets(bootstrap, group_k) == {(topic, 2): (6, text)}


def test_offset_fetch_of_several_groups_in_one_request(
    group_broker: BrokerProcess, kp_admin: Any
) -> None:
    """kafka-python's ``list_group_offsets`` sends one OffsetFetch (v8+, KIP-709) for all the
    groups this coordinator hosts; each group gets its own answer."""
    topic = new_topic(group_broker, "multi")
    bootstrap = group_broker.bootstrap
    g1, g2, g3, unknown = unique("m1"), unique("m2"), unique("m3"), unique("m-none")
    standalone_commit(bootstrap, g1, {(topic, 0): (1, "one")})
    standalone_commit(bootstrap, g2, {(topic, 0): (2, None), (topic, 1): (3, None)})
    standalone_commit(bootstrap, g3, {(topic, 2): (4, "three")})
    result = kp_admin.list_group_offsets(
        {g1: None, g2: None, g3: [KafkaPythonTopicPartition(topic, 2)], unknown: None}
    )
    flat = {
        g: {(tp.topic, tp.partition): (om.offset, om.metadata) for tp, om in offsets.items()}
        for g, offsets in result.items()
    }
    assert flat == {
        g1: {(topic, 0): (1, "one")},
        g2: {(topic, 0): (2, ""), (topic, 1): (3, "")},
        g3: {(topic, 2): (4, "three")},
        unknown: {},
    }
