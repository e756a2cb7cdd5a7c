"""KIP-890's error mappings and the verification batching rules, without sockets
(``franz.broker.txn_verification``, the Produce and TxnOffsetCommit mappings; Kafka 3.9's
``AddPartitionsToTxnManager``, ``ReplicaManager.handleProduceAppend`` and
``GroupMetadataManager.maybeConvertOffsetCommitError``)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from franz.broker.handlers.produce import _verification_error
from franz.broker.txn_verification import (
    AddPartitionsToTxnManager,
    _outcome,
    _unverified,
    _Waiting,
)
from franz.coordinator.group.txn_offsets import verification_error
from franz.errors import ErrorCode
from franz.metadata.cache import Node
from franz.protocol.messages import build, response_type
from franz.storage.files import TopicPartition

TP0, TP1 = TopicPartition("t", 0), TopicPartition("t", 1)


def test_the_coordinators_codes_are_mapped_for_old_and_new_clients() -> None:
    answer = {
        ("t", 0): ErrorCode.NONE,
        ("t", 1): ErrorCode.TRANSACTION_ABORTABLE,
        ("u", 0): ErrorCode.PRODUCER_FENCED,
        ("u", 1): ErrorCode.CONCURRENT_TRANSACTIONS,
    }
    common = {
        TopicPartition("u", 0): ErrorCode.INVALID_PRODUCER_EPOCH,
        TopicPartition("u", 1): ErrorCode.CONCURRENT_TRANSACTIONS,
    }
    assert _unverified(answer, abortable=False) == {TP1: ErrorCode.INVALID_TXN_STATE, **common}
    assert _unverified(answer, abortable=True) == {TP1: ErrorCode.TRANSACTION_ABORTABLE, **common}


@pytest.mark.parametrize(
    "code",
    [
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.CONCURRENT_TRANSACTIONS,
    ],
)
def test_produce_gets_retriable_verification_errors_as_not_enough_replicas(
    code: ErrorCode,
) -> None:
    assert _verification_error(code) == (
        ErrorCode.NOT_ENOUGH_REPLICAS,
        "Unable to verify the partition has been added to the transaction. "
        f"Underlying error: {code.name}",
    )


def test_produce_keeps_the_other_verification_errors() -> None:
    assert _verification_error(ErrorCode.INVALID_TXN_STATE) == (
        ErrorCode.INVALID_TXN_STATE,
        "Partition was not added to the transaction",
    )
    for code in (
        ErrorCode.TRANSACTION_ABORTABLE,
        ErrorCode.INVALID_PRODUCER_EPOCH,
        ErrorCode.INVALID_PRODUCER_ID_MAPPING,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ):
        assert _verification_error(code) == (code, None)


def test_txn_offset_commit_converts_verification_errors_as_kafka() -> None:
    assert verification_error(ErrorCode.NETWORK_EXCEPTION) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert verification_error(ErrorCode.NOT_ENOUGH_REPLICAS) is ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert verification_error(ErrorCode.NOT_LEADER_OR_FOLLOWER) is ErrorCode.NOT_COORDINATOR
    for code in (
        ErrorCode.INVALID_TXN_STATE,
        ErrorCode.TRANSACTION_ABORTABLE,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.INVALID_PRODUCER_EPOCH,
    ):
        assert verification_error(code) is code


def _response(top: ErrorCode, results: dict[str, dict[tuple[str, int], ErrorCode]]) -> Any:
    return build(
        response_type(24, 4),
        {
            "throttle_time": 0,
            "error_code": top,
            "results_by_transaction": [
                {
                    "transactional_id": tid,
                    "topic_results": [
                        {
                            "name": topic,
                            "results_by_partition": [
                                {"partition_index": p, "partition_error_code": code}
                                for (t, p), code in codes.items()
                                if t == topic
                            ],
                        }
                        for topic in sorted({t for t, _ in codes})
                    ],
                }
                for tid, codes in results.items()
            ],
        },
    )


def _waiting(loop: asyncio.AbstractEventLoop, epoch: int, *, abortable: bool = False) -> _Waiting:
    return _Waiting(7, epoch, [TP0, TP1], abortable, loop.create_future())


def test_a_response_is_split_per_transaction_and_a_top_level_error_covers_all() -> None:
    loop = asyncio.new_event_loop()
    try:
        batch = {"a": _waiting(loop, 0), "b": _waiting(loop, 0, abortable=True)}
        answer = _response(
            ErrorCode.NONE,
            {
                "a": {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.TRANSACTION_ABORTABLE},
                "b": {("t", 0): ErrorCode.TRANSACTION_ABORTABLE, ("t", 1): ErrorCode.NONE},
            },
        )
        assert _outcome(2, answer, batch) == {
            "a": {TP1: ErrorCode.INVALID_TXN_STATE},
            "b": {TP0: ErrorCode.TRANSACTION_ABORTABLE},
        }
        refused = _response(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {})
        assert _outcome(2, refused, batch) == {
            tid: {TP0: ErrorCode.INVALID_TXN_STATE, TP1: ErrorCode.INVALID_TXN_STATE}
            for tid in batch
        }
    finally:
        loop.close()


def test_one_verification_per_transactional_id_waits_for_a_broker() -> None:
    """Kafka's ``addTxnData``: the same epoch replaces the waiting one (NETWORK_EXCEPTION
    to it), a higher epoch fences it (INVALID_PRODUCER_EPOCH), a lower one is fenced."""

    async def go() -> None:
        manager = AddPartitionsToTxnManager(lambda: None, lambda: "PLAINTEXT")  # type: ignore[arg-type,return-value]
        node = Node(2, "127.0.0.1", 1)
        busy: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        manager._senders[node.id] = busy  # type: ignore[assignment]  # a request in flight
        loop = asyncio.get_running_loop()
        first, same, higher, lower = (_waiting(loop, e) for e in (1, 1, 2, 1))
        manager._add(node, "tid", first)
        manager._add(node, "tid", same)
        assert first.future.result() == dict.fromkeys([TP0, TP1], ErrorCode.NETWORK_EXCEPTION)
        manager._add(node, "tid", higher)
        assert same.future.result() == dict.fromkeys([TP0, TP1], ErrorCode.INVALID_PRODUCER_EPOCH)
        manager._add(node, "tid", lower)
        assert lower.future.result() == dict.fromkeys([TP0, TP1], ErrorCode.INVALID_PRODUCER_EPOCH)
        assert manager._waiting[node.id] == {"tid": higher} and not higher.future.done()
        manager.close()
        assert higher.future.result() == dict.fromkeys([TP0, TP1], ErrorCode.NETWORK_EXCEPTION)
        busy.cancel()

    asyncio.run(go())
