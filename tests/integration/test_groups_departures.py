"""Members that go away: a static member closed without leaving, a cooperative member that
unsubscribes (issue 14, item 7: conformance gaps reported from a third-party client's suite).

Kafka 3.9's classic coordinator is the reference:

* A static member (``group.instance.id``, KIP-345) sends no LeaveGroup when its client closes
  (librdkafka, kafka-python and aiokafka all skip it so that a restart within the session
  timeout causes no rebalance). The coordinator keeps the member until its session timeout
  expires (``onExpireHeartbeat`` -> ``removeMemberAndUpdateGroup``), then rebalances the others
  like for any member; when the last member goes the group becomes Empty and DeleteGroups
  succeeds (NON_EMPTY_GROUP before that).
* A cooperative-sticky member that unsubscribes revokes its partitions itself and sends
  LeaveGroup (librdkafka ``rd_kafka_cgrp_unsubscribe``: revoke all, then leave; kafka-python
  ``maybe_leave_group``). The others rejoin once: one new generation, in which they only gain
  the leaver's partitions, so nothing is revoked and no second round follows (librdkafka's own
  suite, ``0113-cooperative_rebalance`` ``l_unsubscribe``, counts exactly one more assign
  callback on the member that stays and none revoked).

The broker runs with ``group.initial.rebalance.delay.ms=0``; members use a 6 s session.
"""

from __future__ import annotations

import itertools
import re
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupState, KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.groups import (
    GROUP_BROKER_OVERRIDES,
    SESSION_TIMEOUT_MS,
    TP,
    GroupMember,
    MemberClient,
    close_all,
    describe_group,
    event_counts,
    make_member,
    wait_for_assignment,
    wait_until,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor

#: How long a session expiry may take to show: the session plus a generous margin for a
#: loaded machine (the coordinator fires at the deadline; clients notice within a heartbeat).
EXPIRY_WAIT = SESSION_TIMEOUT_MS / 1000 + 15
_names = itertools.count()


@pytest.fixture(scope="module")
def group_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("departures"), GROUP_BROKER_OVERRIDES).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()[-5000:]}"


@pytest.fixture(scope="module")
def admin(group_broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": group_broker.bootstrap})


def unique(prefix: str) -> str:
    return f"{prefix}-{next(_names)}-{time.monotonic_ns() % 1_000_000}"


def new_topic(broker: BrokerProcess, prefix: str, partitions: int) -> tuple[str, list[TP]]:
    topic = unique(prefix)
    create_topic(broker.bootstrap, topic, partitions)
    return topic, [(topic, p) for p in range(partitions)]


def delete_group(admin: AdminClient, group: str) -> KafkaError | None:
    """DeleteGroups for ``group``: None on success, else the error."""
    try:
        admin.delete_consumer_groups([group], request_timeout=15)[group].result(15)
    except KafkaException as exc:
        error: KafkaError = exc.args[0]
        return error
    return None


def instances(bootstrap: str, group: str) -> list[str | None]:
    return sorted(m.group_instance_id for m in describe_group(bootstrap, group).members)


# -- static members closed without leaving -----------------------------------------------------

STATIC_CONFIG: dict[MemberClient, str] = {
    "confluent-kafka": "group.instance.id",
    "kafka-python": "group_instance_id",
    "aiokafka": "group_instance_id",
}


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python", "aiokafka"])
def test_static_members_closed_without_leaving_expire_and_the_group_can_be_deleted(
    group_broker: BrokerProcess, admin: AdminClient, client: MemberClient
) -> None:
    """Two static members; one closes (no LeaveGroup): it stays a member until its session
    expires, then the other takes its partitions. The other closes too: DeleteGroups is
    NON_EMPTY_GROUP until that session expires, then the group is Empty and deleted."""
    topic, partitions = new_topic(group_broker, "static-gone", 3)
    group = unique("static-gone")
    bootstrap = group_broker.bootstrap

    def static(i: int) -> GroupMember:
        config = {STATIC_CONFIG[client]: f"instance-{i}"}
        return make_member(client, bootstrap, group, [topic], name=f"s{i}", config=config)

    members = [static(0), static(1)]
    try:
        wait_for_assignment(members, partitions, sizes=[2, 1], what="two static members")
        survivor, gone = members
        before = event_counts([survivor])
        gone.close()
        # Kafka keeps a static member whose client closed: a restart may reclaim it.
        assert instances(bootstrap, group) == ["instance-0", "instance-1"]
        wait_for_assignment(
            [survivor],
            partitions,
            sizes=[3],
            after=before,
            timeout=EXPIRY_WAIT,
            what="the survivor to take the partitions of the expired static member",
        )
        assert instances(bootstrap, group) == ["instance-0"]

        survivor.close()
        error = delete_group(admin, group)
        assert error is not None and error.code() == KafkaError.NON_EMPTY_GROUP, error

        def emptied() -> Any:
            description = describe_group(bootstrap, group)
            if description.state == ConsumerGroupState.EMPTY and not description.members:
                return description
            return None

        wait_until(emptied, EXPIRY_WAIT, "the last static member's session to expire")
        assert delete_group(admin, group) is None
        after = describe_group(bootstrap, group)
        assert after.state == ConsumerGroupState.DEAD and not after.members, after
    finally:
        close_all(members)


# -- a cooperative-sticky member unsubscribes --------------------------------------------------

COOPERATIVE_CONFIG: dict[MemberClient, dict[str, Any]] = {
    "confluent-kafka": {"partition.assignment.strategy": "cooperative-sticky"},
    "kafka-python": {"partition_assignment_strategy": [CooperativeStickyAssignor]},
}


def generations(broker: BrokerProcess, group: str, since_line: int) -> list[int]:
    """The generations the coordinator formed for ``group`` after log line ``since_line``
    (its INFO line ``group <id>: generation <n> with ...``)."""
    pattern = re.compile(rf"group {re.escape(group)}: generation (\d+) with")
    lines = broker.output().splitlines()[since_line:]
    return [int(m.group(1)) for line in lines if (m := pattern.search(line))]


@pytest.mark.parametrize("client", ["confluent-kafka", "kafka-python"])
def test_cooperative_member_unsubscribing_causes_exactly_one_rebalance(
    group_broker: BrokerProcess, client: MemberClient
) -> None:
    """Two cooperative-sticky members (3 + 3 of 6 partitions); the group leader (the first to
    join) unsubscribes. It revokes its own partitions; the other gets them in one new
    generation: exactly one more assign callback, nothing revoked, and no further round."""
    topic, partitions = new_topic(group_broker, "coop-unsub", 6)
    group = unique("coop-unsub")
    config = COOPERATIVE_CONFIG[client]
    members: list[GroupMember] = []
    try:
        for i in range(2):
            members.append(
                make_member(
                    client, group_broker.bootstrap, group, [topic], name=f"c{i}", config=config
                )
            )
            wait_for_assignment(members, partitions, sizes=[6 // len(members)] * len(members))
        leaver, stayer = members
        held = {m.name: m.assignment for m in members}
        marks = {m.name: len(m.events) for m in members}
        line = len(group_broker.output().splitlines())

        leaver.call(lambda consumer: consumer.unsubscribe())
        wait_until(
            lambda: stayer.assignment == frozenset(partitions) and not leaver.assignment,
            30,
            "the remaining member to own all six partitions",
            observe=lambda: "\n".join(m.diagnose() for m in members),
        )
        # A second round would reach the stayer within a heartbeat interval or two (500 ms).
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline:
            stayed = stayer.events[marks[stayer.name] :]
            assert len(stayed) <= 1, f"more than one rebalance round: {stayed}"
            time.sleep(0.1)

        stayed = stayer.events[marks[stayer.name] :]
        assert [(e.kind, e.partitions) for e in stayed] == [("assign", held[leaver.name])], stayed
        left = leaver.events[marks[leaver.name] :]
        assert not [e for e in left if e.kind != "revoke"], left
        formed = generations(group_broker, group, line)
        assert len(formed) == 1, f"generations formed after the unsubscribe: {formed}"
        description = describe_group(group_broker.bootstrap, group)
        assert description.state == ConsumerGroupState.STABLE, description
        assert [m.client_id for m in description.members] == [stayer.name], description
    finally:
        close_all(members)
