"""TxnOffsetCommit on a real broker process, on the wire (kio requests, exact codes).

A producer id from InitProducerId (no transactional id needed for one; the broker runs with
``transaction.partition.verification.enable=false``, so no transaction coordinator is asked,
as Kafka 3.9 without KIP-890's verification: ``test_txn_verification.py`` has the verified
path) commits a group's offsets in a transaction: they are written to
``__consumer_offsets`` as a transactional batch of that producer, OffsetFetch keeps
answering the last committed offsets (with ``require_stable``, UNSTABLE_OFFSET_COMMIT,
KIP-447), and a restart (SIGTERM, then SIGKILL) replays them as still pending.
WriteTxnMarkers (27) to the group's partition then commits or aborts them, and restarts keep
the outcome (Kafka 3.9's ``GroupMetadataManager``).

``test_markers_commit_and_abort_txn_offsets_across_restarts`` needs the broker's
WriteTxnMarkers handler (issue 19, another change): it fails with an unanswered request until
that handler is in.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from franz.coordinator.group.offsets_schema import partition_for
from franz.protocol.api_keys import ApiKey
from franz.protocol.records import iter_batches
from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.wire import WireClient, fetch, request_at, wait_for_leaders

NONE = 0
UNSTABLE_OFFSET_COMMIT = 88
UNKNOWN_TOPIC_OR_PARTITION = 3
WRITE_TXN_MARKERS = 27
OFFSETS_TOPIC = "__consumer_offsets"
OFFSETS_PARTITIONS = 3
TOPIC = "txn-in"
GROUP = "txn-group"


@pytest.fixture
def broker(broker_factory: type[BrokerProcess], tmp_path: Path) -> Iterator[BrokerProcess]:
    proc = broker_factory(
        tmp_path / "b",
        {
            "offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
            "transaction.partition.verification.enable": "false",
        },
    ).start()
    create_topic(proc.bootstrap, TOPIC, 2)
    yield proc
    code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


def init_producer_id(wire: WireClient) -> tuple[int, int]:
    """An idempotent producer id (InitProducerId v4, no transactional id)."""
    answer = request_at(
        wire,
        ApiKey.INIT_PRODUCER_ID,
        4,
        {"transactional_id": None, "transaction_timeout": 60_000},
    )
    assert answer.error_code == NONE, answer
    return answer.producer_id, answer.producer_epoch


def txn_commit(
    wire: WireClient, producer: tuple[int, int], offsets: dict[int, int], version: int = 3
) -> dict[tuple[str, int], int]:
    answer = request_at(
        wire,
        ApiKey.TXN_OFFSET_COMMIT,
        version,
        {
            "transactional_id": "txn-offsets",
            "group_id": GROUP,
            "producer_id": producer[0],
            "producer_epoch": producer[1],
            "generation_id": -1,
            "member_id": "",
            "group_instance_id": None,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {"partition_index": p, "committed_offset": o, "committed_metadata": "tx"}
                        for p, o in offsets.items()
                    ],
                },
                {"name": "no-such-topic", "partitions": [{"partition_index": 0}]},
            ],
        },
    )
    return {
        (t.name, p.partition_index): int(p.error_code) for t in answer.topics for p in t.partitions
    }


def plain_commit(wire: WireClient, offsets: dict[int, int]) -> None:
    answer = request_at(
        wire,
        ApiKey.OFFSET_COMMIT,
        8,
        {
            "group_id": GROUP,
            "generation_id_or_member_epoch": -1,
            "topics": [
                {
                    "name": TOPIC,
                    "partitions": [
                        {"partition_index": p, "committed_offset": o} for p, o in offsets.items()
                    ],
                }
            ],
        },
    )
    assert [p.error_code for t in answer.topics for p in t.partitions] == [NONE] * len(offsets)


def offset_fetch(wire: WireClient, *, stable: bool) -> dict[int, tuple[int, int]]:
    """OffsetFetch v7 of partitions 0 and 1: partition -> (offset, error code)."""
    answer = request_at(
        wire,
        ApiKey.OFFSET_FETCH,
        7,
        {
            "group_id": GROUP,
            "topics": [{"name": TOPIC, "partition_indexes": [0, 1]}],
            "require_stable": stable,
        },
    )
    assert answer.error_code == NONE, answer
    return {
        p.partition_index: (p.committed_offset, int(p.error_code))
        for t in answer.topics
        for p in t.partitions
    }


def write_marker(wire: WireClient, producer: tuple[int, int], commit: bool) -> Any:
    """WriteTxnMarkers v1 (what a transaction coordinator sends) to the group's partition."""
    partition = partition_for(GROUP, OFFSETS_PARTITIONS)
    answer = request_at(
        wire,
        WRITE_TXN_MARKERS,
        1,
        {
            "markers": [
                {
                    "producer_id": producer[0],
                    "producer_epoch": producer[1],
                    "transaction_result": commit,
                    "topics": [{"name": OFFSETS_TOPIC, "partition_indexes": [partition]}],
                    "coordinator_epoch": 0,
                }
            ]
        },
    )
    codes = [p.error_code for m in answer.markers for t in m.topics for p in t.partitions]
    assert codes == [NONE], answer
    return answer


def offsets_batches(wire: WireClient) -> list[Any]:
    partition = partition_for(GROUP, OFFSETS_PARTITIONS)
    data = fetch(wire, OFFSETS_TOPIC, partition, 0, max_wait_ms=0)
    assert data.error_code == NONE, data
    raw = bytes(data.records or b"")
    return list(iter_batches(raw, 0, len(raw)))


def restart(broker: BrokerProcess, *, crash: bool) -> None:
    if crash:
        broker.kill()
    else:
        assert broker.stop() == 0, broker.output()
    broker.start()
    with WireClient.connect(broker.bootstrap) as wire:
        wait_for_leaders(wire, OFFSETS_TOPIC, OFFSETS_PARTITIONS)


PENDING = {0: (1, NONE), 1: (-1, NONE)}
UNSTABLE = {0: (-1, UNSTABLE_OFFSET_COMMIT), 1: (-1, UNSTABLE_OFFSET_COMMIT)}


def test_txn_offsets_are_pending_and_survive_restarts_as_pending(broker: BrokerProcess) -> None:
    with WireClient.connect(broker.bootstrap) as wire:
        producer = init_producer_id(wire)
        plain_commit(wire, {0: 1})
        for version in (0, 3, 4):  # v0-2 have no member fields: the same anonymous commit
            assert txn_commit(wire, producer, {0: 10 + version, 1: 20}, version) == {
                (TOPIC, 0): NONE,
                (TOPIC, 1): NONE,
                ("no-such-topic", 0): UNKNOWN_TOPIC_OR_PARTITION,
            }
        assert offset_fetch(wire, stable=False) == PENDING
        assert offset_fetch(wire, stable=True) == UNSTABLE
        batches = offsets_batches(wire)
        transactional = [b for b in batches if b.is_transactional]
        assert len(transactional) == 3 and len(batches) == 4, batches
        for b in transactional:
            assert (b.producer_id, b.producer_epoch, b.base_sequence) == (*producer, -1)
            assert not b.is_control_batch

    for crash in (False, True):
        restart(broker, crash=crash)
        with WireClient.connect(broker.bootstrap) as wire:
            assert offset_fetch(wire, stable=False) == PENDING, f"crash={crash}"
            assert offset_fetch(wire, stable=True) == UNSTABLE, f"crash={crash}"


def test_markers_commit_and_abort_txn_offsets_across_restarts(broker: BrokerProcess) -> None:
    """Needs WriteTxnMarkers (the broker's handler calls ``handle_txn_completion``)."""
    with WireClient.connect(broker.bootstrap) as wire:
        producer = init_producer_id(wire)
        plain_commit(wire, {0: 1})
        assert txn_commit(wire, producer, {0: 10, 1: 20})[(TOPIC, 0)] == NONE
        write_marker(wire, producer, commit=True)
        committed = {0: (10, NONE), 1: (20, NONE)}
        assert offset_fetch(wire, stable=False) == committed
        assert offset_fetch(wire, stable=True) == committed

        # A second transaction, aborted, after a plain commit of partition 1 made while it
        # was open: the abort drops partition 0's offset and the plain commit stays.
        assert txn_commit(wire, producer, {0: 30})[(TOPIC, 0)] == NONE
        plain_commit(wire, {1: 25})
        assert offset_fetch(wire, stable=True) == {
            0: (-1, UNSTABLE_OFFSET_COMMIT),
            1: (25, NONE),
        }
        write_marker(wire, producer, commit=False)
        after = {0: (10, NONE), 1: (25, NONE)}
        assert offset_fetch(wire, stable=True) == after

        # A third, committed, whose partition-1 offset is older than a plain commit appended
        # after it: Kafka keeps the later-appended one.
        assert txn_commit(wire, producer, {0: 40, 1: 41})[(TOPIC, 1)] == NONE
        plain_commit(wire, {1: 50})
        write_marker(wire, producer, commit=True)
        final = {0: (40, NONE), 1: (50, NONE)}
        assert offset_fetch(wire, stable=True) == final

    for crash in (False, True):
        restart(broker, crash=crash)
        with WireClient.connect(broker.bootstrap) as wire:
            assert offset_fetch(wire, stable=True) == final, f"crash={crash}"
