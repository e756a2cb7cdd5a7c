"""What the coordinators' internal topics share: creating one, appending a coordinator's batch
and waiting for its ISR, and reading a partition back whole.

``__consumer_offsets`` (``franz.broker.offsets_log``, the group coordinator) and
``__transaction_state`` (``franz.broker.txn_log``, the transaction coordinator) are written
and loaded the same way in Kafka (``GroupMetadataManager.appendForGroup`` /
``TransactionStateManager.appendTransactionToLog``; both loads read from the log start to the
log end, ``FetchIsolation.LOG_END``); only their settings and record schemas differ.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from franz.errors import (
    ApiError,
    CoordinatorNotAvailableError,
    ErrorCode,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
)
from franz.protocol.records.batch import RecordBatchView, iter_batches, peek_batch_size
from franz.storage.files import TopicPartition

if TYPE_CHECKING:
    from franz.broker.topic_manager import TopicManager
    from franz.cluster.replica_manager import ReplicaManager
    from franz.storage.log import Log
    from franz.storage.verification import VerificationGuard

__all__ = ["append_and_wait", "create_internal_topic", "iter_partition_batches"]

#: The errors of an acks=all wait, as the coordinators' logs raise them.
_REPLICATION_ERRORS: dict[ErrorCode, type[ApiError]] = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER: NotLeaderOrFollowerError,
    ErrorCode.NOT_ENOUGH_REPLICAS: NotEnoughReplicasError,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: NotEnoughReplicasError,
    ErrorCode.REQUEST_TIMED_OUT: RequestTimedOutError,
}


def create_internal_topic(
    topics: TopicManager, name: str, partitions: int, factor: int, configs: Mapping[str, str]
) -> int:
    """Create ``name`` unless it exists (another request may have created it meanwhile);
    its partition count."""
    record = topics.get(name)
    if record is not None:
        return record.partition_count
    try:
        return topics.create_topic(name, partitions, factor, dict(configs)).partition_count
    except TopicAlreadyExistsError:
        record = topics.get(name)
        assert record is not None
        return record.partition_count


async def append_and_wait(
    replica_manager: ReplicaManager,
    tp: TopicPartition,
    batch: bytearray,
    *,
    required_acks: int,
    timeout_ms: int,
    verification_guard: VerificationGuard | None = None,
) -> int:
    """Append a coordinator's batch to ``tp`` (Kafka's ``AppendOrigin.Coordinator``: the client
    checks, base offset 0 and keys of compacted topics, hold by construction) and, with
    ``required_acks=-1``, wait until the ISR has it; the batch's base offset.

    Raises the append's ``ApiError``, ``CoordinatorNotAvailableError`` for a failed write, and
    NOT_LEADER_OR_FOLLOWER / NOT_ENOUGH_REPLICAS / REQUEST_TIMED_OUT from the wait (the
    coordinators map them to their clients' codes).
    """
    try:
        info = replica_manager.append(
            tp,
            memoryview(batch),
            from_client=False,
            required_acks=required_acks,
            verification_guard=verification_guard,
        )
    except ApiError:
        raise
    except OSError as exc:
        raise CoordinatorNotAvailableError(f"writing {tp} failed: {exc}") from exc
    if required_acks != -1 or not info.batch_count:
        return info.first_offset
    required = info.last_offset + 1
    # Decided already (the ISR is this broker alone, or caught up): no wait, no event-loop turn.
    code = replica_manager.replication_done(tp, required)
    if code is None:
        outcome = await replica_manager.wait_for_replication({tp: required}, timeout_ms)
        code = outcome[tp]
    if code != ErrorCode.NONE:
        raise _REPLICATION_ERRORS.get(code, CoordinatorNotAvailableError)(
            f"writing {tp}: {code.name} while waiting for its in-sync replicas"
        )
    return info.first_offset


def iter_partition_batches(data_log: Log, buffer_size: int) -> Iterator[RecordBatchView]:
    """Every batch of ``data_log`` from its log start to its log end, in offset order, read
    ``buffer_size`` bytes at a time. To the log end, not the HW: a follower just made leader
    may not know yet that the old leader's HW passed its last records, and everything it holds
    is what its followers will keep."""
    offset = data_log.log_start_offset
    end = data_log.log_end_offset
    while offset < end:
        info = data_log.read(offset, buffer_size, max_offset=end)
        if info.size == 0:
            break
        data = os.pread(info.fd, info.size, info.position)
        last = offset
        position = 0
        while position < len(data):
            size = peek_batch_size(data, position)
            if size is None or position + size > len(data):
                break
            for batch in iter_batches(data, position, position + size):
                yield batch
                last = batch.next_offset
            position += size
        if last <= offset:
            break  # no whole batch fitted (cannot happen with min_one_message reads)
        offset = last
