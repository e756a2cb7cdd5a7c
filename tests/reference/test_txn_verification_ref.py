"""KIP-890 part 1, differential: the same raw requests (``tests.support.txn_wire``) to Apache
Kafka 3.9 and to Franz, the same answers.

A transactional producer skips AddPartitionsToTxn for one partition and AddOffsetsToTxn for
its group: both brokers refuse the Produce (v9: INVALID_TXN_STATE with Kafka's message; v11:
TRANSACTION_ABORTABLE) and the TxnOffsetCommit (v3: INVALID_TXN_STATE; v4:
TRANSACTION_ABORTABLE) and append nothing, take the batch of the partition that was added,
refuse a request whose transactional batches name two producer ids, and answer a broker's
AddPartitionsToTxn ``verify_only`` (v4, v5) per partition without adding anything.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from franz.errors import ErrorCode
from tests.support import txn_wire
from tests.support.clients import create_topic
from tests.support.kafka_ref import HasBootstrap
from tests.support.wire import WireClient, list_offsets, request_at

#: Franz like the session's Kafka broker: one partition per internal topic.
FRANZ_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
}


def _verify_only_codes(answer: Any) -> list[tuple[str, int, int]]:
    [result] = answer.results_by_transaction
    return sorted(
        (t.name, int(p.partition_index), int(p.partition_error_code))
        for t in result.topic_results
        for p in t.results_by_partition
    )


def _scenario(broker: HasBootstrap) -> dict[str, Any]:
    """Run the module's steps on ``broker``; what it answered, with names made generic."""
    suffix = uuid.uuid4().hex[:8]
    topic, tid = f"ref-ver-{suffix}", f"ref-ver-tid-{suffix}"
    group = f"ref-ver-group-{suffix}"
    create_topic(broker.bootstrap, topic, 2)
    seen: dict[str, Any] = {}
    with WireClient.connect(broker.bootstrap) as client:
        txn_wire.find_coordinator(client, tid, 1)
        txn_wire.find_coordinator(client, group, 0)
        producer = txn_wire.init_producer(client, tid)
        seen["add"] = txn_wire.add_partitions(client, producer, {topic: [1]})[(topic, 1)]
        for version in (9, 10, 11):
            answer = txn_wire.produce(
                client, version, tid, topic, 0, txn_wire.txn_batch(producer, 0, [b"hanging"])
            )
            seen[f"produce-v{version}"] = (
                int(answer.error_code),
                answer.error_message,
                int(answer.base_offset),
                int(answer.log_start_offset),
            )
        seen["end-offset"] = int(list_offsets(client, topic, 0, -1).offset)
        added = txn_wire.produce(client, 11, tid, topic, 1, txn_wire.txn_batch(producer, 0, [b"a"]))
        seen["produce-added"] = (int(added.error_code), int(added.base_offset))
        # Transactional batches of two producer ids in one request: all refused.
        other = txn_wire.TxnProducer(tid, producer.producer_id + 1, 0)
        mixed = request_at(
            client,
            0,
            11,
            {
                "transactional_id": tid,
                "acks": -1,
                "timeout": 30_000,
                "topic_data": [
                    {
                        "name": topic,
                        "partition_data": [
                            {"index": 0, "records": txn_wire.txn_batch(producer, 1, [b"m"])},
                            {"index": 1, "records": txn_wire.txn_batch(other, 0, [b"m"])},
                        ],
                    }
                ],
            },
        )
        seen["produce-mixed"] = sorted(
            (int(p.index), int(p.error_code), p.error_message)
            for t in mixed.responses
            for p in t.partition_responses
        )
        for version in (4, 5):
            answer = txn_wire.verify_only(client, producer, {topic: [0, 1]}, version)
            seen[f"verify-only-v{version}"] = (
                int(answer.error_code),
                [(t.replace(topic, "T"), p, c) for t, p, c in _verify_only_codes(answer)],
            )
        for version in (3, 4):
            codes = txn_wire.txn_offset_commit(client, version, producer, group, {(topic, 0): 3})
            seen[f"txn-offset-commit-v{version}"] = codes[(topic, 0)]
        seen["offset-fetch"] = txn_wire.offset_fetch(client, group, topic, 0)
        seen["end"] = txn_wire.end_txn(client, producer, commit=False)
    return seen


@pytest.fixture(scope="module")
def answers(kafka: HasBootstrap, franz: HasBootstrap) -> dict[str, dict[str, Any]]:
    return {"kafka": _scenario(kafka), "franz": _scenario(franz)}


def test_franz_answers_as_kafka(answers: dict[str, dict[str, Any]]) -> None:
    assert answers["franz"] == answers["kafka"]


def test_the_answers_are_the_refusals_kip_890_describes(answers: dict[str, dict[str, Any]]) -> None:
    """What both answered (so the comparison above is not of two wrong answers)."""
    not_added = "Partition was not added to the transaction"
    abortable = ErrorCode.TRANSACTION_ABORTABLE
    mixed = "Transactional records contained more than one producer ID"
    assert answers["kafka"] == {
        "add": 0,
        "produce-v9": (ErrorCode.INVALID_TXN_STATE, not_added, -1, -1),
        "produce-v10": (ErrorCode.INVALID_TXN_STATE, not_added, -1, -1),
        "produce-v11": (abortable, None, -1, -1),
        "end-offset": 0,
        "produce-added": (0, 0),
        "produce-mixed": [(p, ErrorCode.INVALID_PRODUCER_ID_MAPPING, mixed) for p in range(2)],
        "verify-only-v4": (0, [("T", 0, abortable), ("T", 1, 0)]),
        "verify-only-v5": (0, [("T", 0, abortable), ("T", 1, 0)]),
        "txn-offset-commit-v3": ErrorCode.INVALID_TXN_STATE,
        "txn-offset-commit-v4": abortable,
        "offset-fetch": (0, -1),
        "end": 0,
    }
