"""The group APIs at every version Franz accepts, on the wire (kio requests, exact codes).

Real clients each use one version of each API (tests/integration/test_groups*.py); these
tests make sure every other accepted version encodes and decodes too: a field a version
lacks or makes nullable must never break a response. Requests are built from mappings of
Kafka field names (``franz.protocol.messages.build`` fills what a version lacks).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from franz.coordinator.group.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.wire import WireClient, accepted_versions, batch, produce, request_at

NONE = 0
INVALID_TOPIC_EXCEPTION = 17
UNKNOWN_TOPIC_OR_PARTITION = 3
ILLEGAL_GENERATION = 22
UNKNOWN_MEMBER_ID = 25
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
NON_EMPTY_GROUP = 68

TOPIC = "wire-groups"
SUBSCRIPTION = encode_subscription(Subscription(topics=(TOPIC,)))
ASSIGNMENT = encode_assignment(Assignment(assigned_partitions=((TOPIC, (0, 1)),)))


versions = accepted_versions
call = request_at


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(
        tmp_path_factory.mktemp("groups"),
        {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3"},
    ).start()
    try:
        create_topic(proc.bootstrap, TOPIC, 2)
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


@pytest.fixture
def client(shared_broker: BrokerProcess) -> Iterator[WireClient]:
    with WireClient.connect(shared_broker.bootstrap) as wire:
        yield wire


def join(client: WireClient, version: int, group: str, member_id: str = "") -> Any:
    return call(
        client,
        ApiKey.JOIN_GROUP,
        version,
        {
            "group_id": group,
            "session_timeout": 10_000,
            "rebalance_timeout": 10_000,
            "member_id": member_id,
            "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": SUBSCRIPTION}],
        },
    )


@pytest.mark.parametrize("version", versions(ApiKey.JOIN_GROUP))
def test_one_member_lifecycle_at_every_join_version(client: WireClient, version: int) -> None:
    group = f"lifecycle-v{version}"
    sync_v = min(version, SUPPORTED_APIS[ApiKey.SYNC_GROUP].max_version)
    heartbeat_v = min(version, SUPPORTED_APIS[ApiKey.HEARTBEAT].max_version)
    leave_v = min(version, SUPPORTED_APIS[ApiKey.LEAVE_GROUP].max_version)

    first = join(client, version, group)
    if version >= 4:  # KIP-394: the first join only hands out a member id
        assert first.error_code == MEMBER_ID_REQUIRED and first.member_id
        first = join(client, version, group, first.member_id)
    assert first.error_code == NONE
    member = first.member_id
    assert (first.generation_id, first.leader, first.protocol_name) == (1, member, "range")
    assert [(m.member_id, m.metadata) for m in first.members] == [(member, SUBSCRIPTION)]

    synced = call(
        client,
        ApiKey.SYNC_GROUP,
        sync_v,
        {
            "group_id": group,
            "generation_id": 1,
            "member_id": member,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": member, "assignment": ASSIGNMENT}],
        },
    )
    assert synced.error_code == NONE
    assert decode_assignment(synced.assignment).assigned_partitions == ((TOPIC, (0, 1)),)

    beat = {"group_id": group, "generation_id": 1, "member_id": member}
    assert call(client, ApiKey.HEARTBEAT, heartbeat_v, beat).error_code == NONE
    stale = call(client, ApiKey.HEARTBEAT, heartbeat_v, {**beat, "generation_id": 0})
    assert stale.error_code == ILLEGAL_GENERATION

    leave: dict[str, Any] = {"group_id": group, "member_id": member}
    if leave_v >= 3:
        leave = {"group_id": group, "members": [{"member_id": member}]}
    left = call(client, ApiKey.LEAVE_GROUP, leave_v, leave)
    assert left.error_code == NONE
    if leave_v >= 3:
        assert [(m.member_id, m.error_code) for m in left.members] == [(member, NONE)]
    gone = call(client, ApiKey.HEARTBEAT, heartbeat_v, beat)
    assert gone.error_code == UNKNOWN_MEMBER_ID


@pytest.mark.parametrize("version", versions(ApiKey.OFFSET_COMMIT))
def test_commit_then_fetch_at_every_version(client: WireClient, version: int) -> None:
    group = f"offsets-v{version}"
    committed = call(
        client,
        ApiKey.OFFSET_COMMIT,
        version,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "retention_time": -1,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": 10 + version,
                            "committed_leader_epoch": 0,
                            "committed_metadata": f"v{version}",
                        },
                        {"partition_index": 7, "committed_offset": 1},
                    ],
                }
            ],
        },
    )
    codes = {p.partition_index: p.error_code for t in committed.topics for p in t.partitions}
    assert codes == {0: NONE, 7: UNKNOWN_TOPIC_OR_PARTITION}

    for fetch_v in versions(ApiKey.OFFSET_FETCH):
        wanted = [{"name": TOPIC, "partition_indexes": [0, 1]}]
        if fetch_v >= 8:
            response = call(
                client,
                ApiKey.OFFSET_FETCH,
                fetch_v,
                {"groups": [{"group_id": group, "topics": wanted}, {"group_id": "nobody"}]},
            )
            assert [g.group_id for g in response.groups] == [group, "nobody"]
            assert response.groups[1].topics == () and response.groups[1].error_code == NONE
            topics = response.groups[0].topics
        else:
            response = call(
                client, ApiKey.OFFSET_FETCH, fetch_v, {"group_id": group, "topics": wanted}
            )
            topics = response.topics
        got = {
            (p.partition_index, p.committed_offset, p.metadata)
            for t in topics
            for p in t.partitions
        }
        assert got == {(0, 10 + version, f"v{version}"), (1, -1, "")}, f"OffsetFetch v{fetch_v}"
        if fetch_v >= 5:
            epochs = {
                p.partition_index: p.committed_leader_epoch for t in topics for p in t.partitions
            }
            assert epochs == {0: 0 if version >= 6 else -1, 1: -1}

    # topics = null (v2+): every committed offset of the group.
    everything = call(client, ApiKey.OFFSET_FETCH, 7, {"group_id": group, "topics": None})
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in everything.topics] == [
        (TOPIC, [0])
    ]


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_GROUPS))
def test_describe_groups_at_every_version(client: WireClient, version: int) -> None:
    group = f"describe-v{version}"
    member = join(client, 3, group).member_id
    call(
        client,
        ApiKey.SYNC_GROUP,
        3,
        {
            "group_id": group,
            "generation_id": 1,
            "member_id": member,
            "assignments": [{"member_id": member, "assignment": ASSIGNMENT}],
        },
    )
    described = call(
        client,
        ApiKey.DESCRIBE_GROUPS,
        version,
        {"groups": [group, "never-seen"], "include_authorized_operations": True},
    )
    found, missing = described.groups
    assert (found.error_code, found.group_state, found.protocol_type, found.protocol_data) == (
        NONE,
        "Stable",
        "consumer",
        "range",
    )
    [m] = found.members
    assert (m.member_id, m.client_host, m.member_metadata) == (member, "/127.0.0.1", SUBSCRIPTION)
    assert decode_assignment(m.member_assignment).assigned_partitions == ((TOPIC, (0, 1)),)
    assert (missing.error_code, missing.group_state, missing.members) == (NONE, "Dead", ())
    call(client, ApiKey.LEAVE_GROUP, 0, {"group_id": group, "member_id": member})


@pytest.mark.parametrize("version", versions(ApiKey.LIST_GROUPS))
def test_list_groups_at_every_version(client: WireClient, version: int) -> None:
    group = f"list-v{version}"
    call(
        client,
        ApiKey.OFFSET_COMMIT,
        2,
        {
            "group_id": group,
            "generation_id_or_member_epoch": -1,
            "topics": [
                {"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 1}]}
            ],
        },
    )
    listed = call(client, ApiKey.LIST_GROUPS, version, {})
    assert listed.error_code == NONE
    entry = {g.group_id: g for g in listed.groups}[group]
    assert entry.protocol_type == ""
    if version >= 4:
        assert entry.group_state == "Empty"
        stable_only = call(client, ApiKey.LIST_GROUPS, version, {"states_filter": ["Stable"]})
        assert group not in {g.group_id for g in stable_only.groups}
        empty = call(client, ApiKey.LIST_GROUPS, version, {"states_filter": ["empty"]})
        assert group in {g.group_id for g in empty.groups}
    if version >= 5:
        assert entry.group_type == "classic"
        other = call(client, ApiKey.LIST_GROUPS, version, {"types_filter": ["consumer"]})
        assert other.groups == ()


@pytest.mark.parametrize("version", versions(ApiKey.DELETE_GROUPS))
def test_delete_groups_and_offset_delete(client: WireClient, version: int) -> None:
    group = f"delete-v{version}"
    commit = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "topics": [
            {
                "name": TOPIC,
                "partitions": [
                    {"partition_index": 0, "committed_offset": 5},
                    {"partition_index": 1, "committed_offset": 6},
                ],
            }
        ],
    }
    call(client, ApiKey.OFFSET_COMMIT, 8, commit)
    deleted = call(
        client,
        ApiKey.OFFSET_DELETE,
        0,
        {"group_id": group, "topics": [{"name": TOPIC, "partitions": [{"partition_index": 1}]}]},
    )
    assert deleted.error_code == NONE
    assert [p.error_code for t in deleted.topics for p in t.partitions] == [NONE]
    left = call(client, ApiKey.OFFSET_FETCH, 7, {"group_id": group, "topics": None})
    assert [p.partition_index for t in left.topics for p in t.partitions] == [0]

    busy = f"busy-v{version}"
    join(client, 3, busy)  # a member: the group cannot be deleted
    result = call(
        client, ApiKey.DELETE_GROUPS, version, {"groups_names": [group, busy, "never-seen"]}
    )
    assert {r.group_id: r.error_code for r in result.results} == {
        group: NONE,
        busy: NON_EMPTY_GROUP,
        "never-seen": GROUP_ID_NOT_FOUND,
    }
    after = call(client, ApiKey.OFFSET_FETCH, 7, {"group_id": group, "topics": None})
    assert after.topics == ()
    missing = call(client, ApiKey.OFFSET_DELETE, 0, {"group_id": group, "topics": []})
    assert missing.error_code == GROUP_ID_NOT_FOUND


def test_committed_offsets_survive_a_restart(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker = broker_factory(tmp_path / "b", {"offsets.topic.num.partitions": "2"}).start()
    create_topic(broker.bootstrap, TOPIC, 2)
    with WireClient.connect(broker.bootstrap) as wire:
        for offset in range(1, 51):
            call(
                wire,
                ApiKey.OFFSET_COMMIT,
                9,
                {
                    "group_id": "durable",
                    "generation_id_or_member_epoch": -1,
                    "topics": [
                        {
                            "name": TOPIC,
                            "partitions": [
                                {
                                    "partition_index": 0,
                                    "committed_offset": offset,
                                    "committed_metadata": "m",
                                },
                                {"partition_index": 1, "committed_offset": offset * 2},
                            ],
                        }
                    ],
                },
            )
    assert broker.stop() == 0
    broker.start()
    with WireClient.connect(broker.bootstrap) as wire:
        fetched = call(wire, ApiKey.OFFSET_FETCH, 7, {"group_id": "durable", "topics": None})
        got = {
            (p.partition_index, p.committed_offset, p.metadata)
            for t in fetched.topics
            for p in t.partitions
        }
        assert got == {(0, 50, "m"), (1, 100, "")}
        listed = call(wire, ApiKey.LIST_GROUPS, 4, {})
        assert [(g.group_id, g.group_state) for g in listed.groups] == [("durable", "Empty")]


def test_consumer_offsets_is_compacted_and_reloads_the_latest_commit(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker = broker_factory(
        tmp_path / "b",
        {
            "offsets.topic.num.partitions": "1",
            "offsets.topic.segment.bytes": "8192",
            "log.cleaner.backoff.ms": "100",
        },
    ).start()
    create_topic(broker.bootstrap, TOPIC, 2)
    partition_dir = Path(broker.overrides["log.dirs"]) / "__consumer_offsets-0"

    def disk() -> int:
        return sum(p.stat().st_size for p in partition_dir.glob("*.log"))

    with WireClient.connect(broker.bootstrap) as wire:
        for offset in range(1, 2001):
            call(
                wire,
                ApiKey.OFFSET_COMMIT,
                9,
                {
                    "group_id": "compacted",
                    "generation_id_or_member_epoch": -1,
                    "topics": [
                        {
                            "name": TOPIC,
                            "partitions": [
                                {"partition_index": 0, "committed_offset": offset},
                                {"partition_index": 1, "committed_offset": 5},
                            ],
                        }
                    ],
                },
            )
        written = disk()
        deadline = time.monotonic() + 30
        while disk() > written // 4 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert disk() <= written // 4, f"{written} bytes written, {disk()} after cleaning"
    assert broker.stop() == 0
    broker.start()
    with WireClient.connect(broker.bootstrap) as wire:
        fetched = call(wire, ApiKey.OFFSET_FETCH, 7, {"group_id": "compacted", "topics": None})
        got = {
            (p.partition_index, p.committed_offset) for t in fetched.topics for p in t.partitions
        }
        assert got == {(0, 2000), (1, 5)}


def test_offsets_of_a_deleted_topic_are_removed(
    client: WireClient, shared_broker: BrokerProcess
) -> None:
    create_topic(shared_broker.bootstrap, "doomed", 1)
    commit = {
        "group_id": "forgets",
        "generation_id_or_member_epoch": -1,
        "topics": [
            {"name": "doomed", "partitions": [{"partition_index": 0, "committed_offset": 3}]},
            {"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 4}]},
        ],
    }
    call(client, ApiKey.OFFSET_COMMIT, 9, commit)
    deleted = call(
        client, ApiKey.DELETE_TOPICS, 6, {"topics": [{"name": "doomed"}], "timeout": 5000}
    )
    assert [r.error_code for r in deleted.responses] == [NONE]
    deadline = time.monotonic() + 10
    while True:
        fetched = call(client, ApiKey.OFFSET_FETCH, 7, {"group_id": "forgets", "topics": None})
        names = [t.name for t in fetched.topics]
        if names == [TOPIC] or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert names == [TOPIC]


def test_clients_cannot_produce_to_consumer_offsets(client: WireClient) -> None:
    call(
        client,
        ApiKey.OFFSET_COMMIT,
        9,
        {
            "group_id": "protected",
            "generation_id_or_member_epoch": -1,
            "topics": [
                {"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 8}]}
            ],
        },
    )
    forged = batch((b"\x00\x01garbage", b"\x00\x03garbage"))
    response = produce(client, "__consumer_offsets", 0, forged)
    assert response.error_code == INVALID_TOPIC_EXCEPTION
    fetched = call(client, ApiKey.OFFSET_FETCH, 7, {"group_id": "protected", "topics": None})
    assert [
        (p.partition_index, p.committed_offset) for t in fetched.topics for p in t.partitions
    ] == [(0, 8)]
