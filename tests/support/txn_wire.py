"""A raw-protocol transactional producer for tests (``tests.support.wire``): the requests a
transactional client sends, one at a time, so a test can skip a step a real client never
skips (AddPartitionsToTxn before a Produce, AddOffsetsToTxn before a TxnOffsetCommit) and
see what the broker answers. KIP-890's tests use it on one broker and on three
(``tests/integration/test_txn_verification.py``,
``tests/cluster/test_txn_verification_cluster.py``).

Every helper returns error codes as ints (Kafka's numbers) or the decoded kio response.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from franz.protocol.messages import build, request_type
from franz.protocol.records import RecordBatchBuilder
from tests.support.wire import WireClient, request_at

__all__ = [
    "TxnProducer",
    "add_offsets",
    "add_partitions",
    "end_txn",
    "find_coordinator",
    "init_producer",
    "offset_fetch",
    "partition_response",
    "produce",
    "produce_request",
    "txn_batch",
    "txn_offset_commit",
    "verify_only",
    "wait_state",
]

#: How long a helper retries a retriable coordinator error: far more than any answer needs.
DEADLINE_S = 60.0
#: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR,
#: CONCURRENT_TRANSACTIONS.
_RETRIABLE = {14, 15, 16, 51}


@dataclass(frozen=True)
class TxnProducer:
    transactional_id: str
    producer_id: int
    epoch: int


def find_coordinator(client: WireClient, key: str, key_type: int) -> tuple[int, str, int]:
    """FindCoordinator v3 (key type 0: group, 1: transaction), retried until found:
    ``(node id, host, port)``."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        found = request_at(client, 10, 3, {"key": key, "key_type": key_type})
        if found.error_code == 0:
            return int(found.node_id), str(found.host), int(found.port)
        assert time.monotonic() < deadline, found
        time.sleep(0.1)


def init_producer(client: WireClient, transactional_id: str) -> TxnProducer:
    """InitProducerId v4 with ``transactional_id`` (``client``: its coordinator)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        body = {"transactional_id": transactional_id, "transaction_timeout": 60_000}
        answer = request_at(client, 22, 4, body)
        if answer.error_code == 0:
            return TxnProducer(
                transactional_id, int(answer.producer_id), int(answer.producer_epoch)
            )
        assert answer.error_code in _RETRIABLE and time.monotonic() < deadline, answer
        time.sleep(0.1)


def txn_batch(producer: TxnProducer, base_sequence: int, values: list[bytes]) -> bytes:
    builder = RecordBatchBuilder(
        producer_id=producer.producer_id,
        producer_epoch=producer.epoch,
        base_sequence=base_sequence,
        is_transactional=True,
    )
    now = int(time.time() * 1000)
    for value in values:
        builder.append(now, None, value)
    return bytes(builder.build())


def produce_request(
    version: int, transactional_id: str | None, topic: str, partition: int, records: bytes
) -> Any:
    """Produce at ``version`` (3+) of one record set, acks=-1 (a kio request)."""
    return build(
        request_type(0, version),
        {
            "transactional_id": transactional_id,
            "acks": -1,
            "timeout": 30_000,
            "topic_data": [
                {"name": topic, "partition_data": [{"index": partition, "records": records}]}
            ],
        },
    )


def partition_response(response: Any) -> Any:
    [topic_response] = response.responses
    [partition] = topic_response.partition_responses
    return partition


def produce(
    client: WireClient,
    version: int,
    transactional_id: str | None,
    topic: str,
    partition: int,
    records: bytes,
) -> Any:
    """Produce at ``version`` (3+) of one record set, acks=-1; the partition's response."""
    request = produce_request(version, transactional_id, topic, partition, records)
    return partition_response(client.request(request))


def add_partitions(
    client: WireClient, producer: TxnProducer, partitions: Mapping[str, list[int]]
) -> dict[tuple[str, int], int]:
    """AddPartitionsToTxn v3 (a client's), retried on CONCURRENT_TRANSACTIONS."""
    deadline = time.monotonic() + DEADLINE_S
    body = {
        "v3_and_below_transactional_id": producer.transactional_id,
        "v3_and_below_producer_id": producer.producer_id,
        "v3_and_below_producer_epoch": producer.epoch,
        "v3_and_below_topics": [{"name": t, "partitions": p} for t, p in partitions.items()],
    }
    while True:
        answer = request_at(client, 24, 3, body)
        codes = {
            (t.name, int(p.partition_index)): int(p.partition_error_code)
            for t in answer.results_by_topic_v3_and_below
            for p in t.results_by_partition
        }
        if 51 not in codes.values() or time.monotonic() > deadline:
            return codes
        time.sleep(0.1)


def verify_only(
    client: WireClient, producer: TxnProducer, partitions: Mapping[str, list[int]], version: int = 4
) -> Any:
    """AddPartitionsToTxn v4+ with ``verify_only`` (what a partition leader sends)."""
    return request_at(
        client,
        24,
        version,
        {
            "transactions": [
                {
                    "transactional_id": producer.transactional_id,
                    "producer_id": producer.producer_id,
                    "producer_epoch": producer.epoch,
                    "verify_only": True,
                    "topics": [{"name": t, "partitions": p} for t, p in partitions.items()],
                }
            ]
        },
    )


def add_offsets(client: WireClient, producer: TxnProducer, group_id: str) -> int:
    """AddOffsetsToTxn v3, retried on CONCURRENT_TRANSACTIONS."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        answer = request_at(
            client,
            25,
            3,
            {
                "transactional_id": producer.transactional_id,
                "producer_id": producer.producer_id,
                "producer_epoch": producer.epoch,
                "group_id": group_id,
            },
        )
        if answer.error_code != 51 or time.monotonic() > deadline:
            return int(answer.error_code)
        time.sleep(0.1)


def txn_offset_commit(
    client: WireClient,
    version: int,
    producer: TxnProducer,
    group_id: str,
    offsets: Mapping[tuple[str, int], int],
) -> dict[tuple[str, int], int]:
    """TxnOffsetCommit at ``version`` (``client``: the group's coordinator)."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "committed_offset": offset, "committed_leader_epoch": -1}
        )
    answer = request_at(
        client,
        28,
        version,
        {
            "transactional_id": producer.transactional_id,
            "group_id": group_id,
            "producer_id": producer.producer_id,
            "producer_epoch": producer.epoch,
            "generation_id": -1,
            "member_id": "",
            "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()],
        },
    )
    return {
        (t.name, int(p.partition_index)): int(p.error_code)
        for t in answer.topics
        for p in t.partitions
    }


def offset_fetch(client: WireClient, group_id: str, topic: str, partition: int) -> tuple[int, int]:
    """OffsetFetch v7 with ``require_stable``: ``(error code, committed offset)``."""
    answer = request_at(
        client,
        9,
        7,
        {
            "group_id": group_id,
            "topics": [{"name": topic, "partition_indexes": [partition]}],
            "require_stable": True,
        },
    )
    [t] = answer.topics
    [p] = t.partitions
    return int(p.error_code), int(p.committed_offset)


def wait_state(client: WireClient, transactional_id: str, state: str) -> None:
    """Until DescribeTransactions v0 shows ``state`` (EndTxn answers once the transaction is
    prepared; its markers are written after)."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        answer = request_at(client, 65, 0, {"transactional_ids": [transactional_id]})
        [described] = answer.transaction_states
        if described.transaction_state == state:
            return
        assert time.monotonic() < deadline, described
        time.sleep(0.05)


def end_txn(client: WireClient, producer: TxnProducer, commit: bool) -> int:
    """EndTxn v3, retried on CONCURRENT_TRANSACTIONS."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        answer = request_at(
            client,
            26,
            3,
            {
                "transactional_id": producer.transactional_id,
                "producer_id": producer.producer_id,
                "producer_epoch": producer.epoch,
                "committed": commit,
            },
        )
        if answer.error_code != 51 or time.monotonic() > deadline:
            return int(answer.error_code)
        time.sleep(0.1)
