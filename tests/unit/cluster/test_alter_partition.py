"""``AlterPartitionManager`` without a network (``franz.cluster.alter_partition``): the
requests it builds at each version, one item per partition, withdrawal, shutdown, and what it
does with each kind of answer, through its in-process ``local`` controller hook (what the
embedded mode uses). Real controllers answer it in
``tests/cluster/test_replication_alter_partition.py`` and
``tests/integration/test_alter_partition_embedded.py``."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

from franz.cluster.alter_partition import (
    AlterPartitionManager,
    IsrUpdate,
    IsrUpdateResult,
    _Item,
    build_request,
)
from franz.errors import ErrorCode
from franz.metadata.cache import MetadataCache
from franz.protocol.api_keys import ApiKey
from franz.protocol.messages import build_response
from franz.storage.files import TopicPartition

T0 = TopicPartition("t", 0)
T1 = TopicPartition("t", 1)
U0 = TopicPartition("u", 0)
IDS = {"t": uuid.UUID(int=1), "u": uuid.UUID(int=2)}
SHRINK = IsrUpdate(leader_epoch=3, new_isr=(1, 2), leader_recovery_state=0, partition_epoch=8)


def items(*tps: TopicPartition) -> list[_Item]:
    loop = asyncio.new_event_loop()
    try:
        return [_Item(tp, IDS[tp[0]], SHRINK, loop.create_future()) for tp in tps]
    finally:
        loop.close()


def test_v3_groups_by_topic_id_with_broker_epochs_minus_one() -> None:
    request = build_request(3, 1, 77, items(T0, T1, U0))
    assert (request.broker_id, request.broker_epoch) == (1, 77)
    assert [t.topic_id for t in request.topics] == [IDS["t"], IDS["u"]]
    first = request.topics[0].partitions
    assert [p.partition_index for p in first] == [0, 1]
    assert [(b.broker_id, b.broker_epoch) for b in first[0].new_isr_with_epochs] == [
        (1, -1),
        (2, -1),
    ]
    assert (first[0].leader_epoch, first[0].partition_epoch) == (3, 8)
    assert first[0].leader_recovery_state == 0


def test_older_versions() -> None:
    v2 = build_request(2, 1, 77, items(T0))
    assert v2.topics[0].topic_id == IDS["t"]
    assert v2.topics[0].partitions[0].new_isr == (1, 2)
    v1 = build_request(1, 1, 77, items(T0))
    assert v1.topics[0].topic_name == "t"
    assert v1.topics[0].partitions[0].leader_recovery_state == 0
    v0 = build_request(0, 1, 77, items(T0))
    assert not hasattr(v0.topics[0].partitions[0], "leader_recovery_state")


Controller = Callable[[Any], Any]


def run_with(controller: Controller, script: Callable[[AlterPartitionManager], Any]) -> Any:
    """Run ``script`` against a started manager whose controller is ``controller`` (a
    function from the request entity to a response mapping)."""

    async def local(request: Any) -> Any:
        await asyncio.sleep(0)
        version = int(type(request).__version__)
        return build_response(ApiKey.ALTER_PARTITION, version, controller(request))

    async def main() -> Any:
        manager = AlterPartitionManager(
            1, MetadataCache(1), lambda: 5, local=local, retry_backoff=0.001
        )
        manager.start()
        try:
            return await asyncio.wait_for(script(manager), 10)
        finally:
            await manager.shutdown()

    return asyncio.run(main())


def accepted(request: Any, omit: set[int] = frozenset()) -> dict[str, Any]:  # type: ignore[assignment]
    """Every partition of ``request`` accepted with partition epoch + 1."""
    return {
        "error_code": ErrorCode.NONE,
        "topics": [
            {
                "topic_id": t.topic_id,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": ErrorCode.NONE,
                        "leader_id": request.broker_id,
                        "leader_epoch": p.leader_epoch,
                        "isr": [b.broker_id for b in p.new_isr_with_epochs],
                        "partition_epoch": p.partition_epoch + 1,
                    }
                    for p in t.partitions
                    if p.partition_index not in omit
                ],
            }
            for t in request.topics
        ],
    }


def test_items_pending_together_go_in_one_request_and_get_their_answers() -> None:
    seen: list[int] = []

    def controller(request: Any) -> dict[str, Any]:
        seen.append(sum(len(t.partitions) for t in request.topics))
        return accepted(request)

    async def script(manager: AlterPartitionManager) -> list[IsrUpdateResult]:
        futures = [manager.submit(tp, IDS[tp[0]], SHRINK) for tp in (T0, T1, U0)]
        return list(await asyncio.gather(*futures))

    results = run_with(controller, script)
    assert seen == [3]
    assert results == [IsrUpdateResult(ErrorCode.NONE, 1, 3, (1, 2), 0, 9)] * 3


def test_a_partition_left_out_of_the_answer_is_sent_again() -> None:
    calls: list[list[int]] = []

    def controller(request: Any) -> dict[str, Any]:
        calls.append([p.partition_index for t in request.topics for p in t.partitions])
        return accepted(request, omit={1} if len(calls) == 1 else set())

    async def script(manager: AlterPartitionManager) -> list[IsrUpdateResult]:
        futures = [manager.submit(tp, IDS["t"], SHRINK) for tp in (T0, T1)]
        return list(await asyncio.gather(*futures))

    results = run_with(controller, script)
    assert calls == [[0, 1], [1]]
    assert [r.error for r in results] == [ErrorCode.NONE, ErrorCode.NONE]


def test_not_controller_and_top_level_errors_are_retried_per_partition_errors_are_answered() -> (
    None
):
    answers = iter([ErrorCode.NOT_CONTROLLER, ErrorCode.STALE_BROKER_EPOCH, ErrorCode.NONE])

    def controller(request: Any) -> dict[str, Any]:
        error = next(answers)
        if error != ErrorCode.NONE:
            return {"error_code": error, "topics": []}
        body = accepted(request)
        body["topics"][0]["partitions"][0] = {
            "partition_index": 0,
            "error_code": ErrorCode.FENCED_LEADER_EPOCH,
        }
        return body

    async def script(manager: AlterPartitionManager) -> tuple[IsrUpdateResult, int, int]:
        result = await manager.submit(T0, IDS["t"], SHRINK)
        return result, manager.failed_attempts, manager.requests_answered

    result, failed, answered = run_with(controller, script)
    assert result == IsrUpdateResult.failed(ErrorCode.FENCED_LEADER_EPOCH)
    assert (failed, answered) == (1, 2)  # NOT_CONTROLLER; STALE_BROKER_EPOCH then the answer


def test_one_item_per_partition_withdrawal_and_shutdown() -> None:
    async def main() -> None:
        manager = AlterPartitionManager(1, MetadataCache(1), lambda: 5)  # never started
        first = manager.submit(T0, IDS["t"], SHRINK)
        second = manager.submit(T0, IDS["t"], SHRINK)
        assert second.result() == IsrUpdateResult.failed(ErrorCode.OPERATION_NOT_ATTEMPTED)
        first.cancel()  # withdrawn: the partition takes a new item
        third = manager.submit(T0, IDS["t"], SHRINK)
        assert not third.done()
        assert manager.pending == 1
        await manager.shutdown()
        assert third.result() == IsrUpdateResult.failed(ErrorCode.OPERATION_NOT_ATTEMPTED)
        assert manager.pending == 0

    asyncio.run(main())
