"""Writing end-transaction markers into the partitions this broker leads (KIP-98).

``write_txn_markers_locally`` is the broker half of a transaction's completion: the
transaction coordinator (``franz.coordinator.transaction``) calls it for the partitions led
here, and the WriteTxnMarkers handler (``franz.broker.handlers.write_txn_markers``) for the
markers other brokers' coordinators send. It does what Kafka's
``KafkaApis.handleWriteTxnMarkersRequest`` does for one marker:

* per partition, one control batch (``build_end_txn_marker_batch``: COMMIT or ABORT, the
  coordinator epoch, the producer id and epoch, base sequence -1, the wall-clock time) is
  appended as leader with ``AppendOrigin.COORDINATOR`` (no client checks; the producer state
  fences a marker of an older producer epoch, INVALID_PRODUCER_EPOCH, or of an older
  coordinator epoch, TRANSACTION_COORDINATOR_FENCED) and ``requiredAcks`` -1: the answer
  waits until the ISR has it (Kafka's ``DelayedProduce``, ``ReplicaManager.
  wait_for_replication``), at most ``request.timeout.ms`` (Kafka's default, 30000 ms; Franz
  has no such broker key, hence the constant);
* internal topics are allowed (``__consumer_offsets`` gets the markers of transactional
  offset commits, KIP-98);
* a partition without a local replica answers UNKNOWN_TOPIC_OR_PARTITION (Kafka's
  ``replicaManager.getMagic`` finds no log), a follower NOT_LEADER_OR_FOLLOWER (the append
  as leader refuses it); a failed append its error's code (``error_code_for``), as Kafka's
  ``appendToLocalLog``; the wait NOT_ENOUGH_REPLICAS(_AFTER_APPEND), REQUEST_TIMED_OUT or
  NOT_LEADER_OR_FOLLOWER;
* once the markers of ``__consumer_offsets`` partitions are replicated, the group
  coordinator materializes (commit) or drops (abort) the producer's pending transactional
  offsets there (Kafka's ``groupCoordinator.onTransactionCompleted`` /
  ``scheduleHandleTxnCompletion``); if that raises, those partitions answer
  UNKNOWN_SERVER_ERROR, as in Kafka.

A marker can move the partition's last stable offset without moving its high watermark (the
transaction ends below a HW that already passed it), so read-committed consumers parked in a
long poll on the partition are woken after each marker append.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from franz.coordinator.group.offsets_topic import OFFSETS_TOPIC
from franz.errors import ErrorCode, error_code_for
from franz.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_txn_marker_batch,
)
from franz.storage.files import TopicPartition

if TYPE_CHECKING:
    from franz.broker.services import BrokerServices

__all__ = ["MARKER_REQUEST_TIMEOUT_MS", "write_txn_markers_locally"]

log = logging.getLogger(__name__)

#: Kafka's broker ``request.timeout.ms`` default: how long a marker append waits for the ISR
#: (``handleWriteTxnMarkersRequest`` passes ``config.requestTimeoutMs``).
MARKER_REQUEST_TIMEOUT_MS: Final = 30000


async def write_txn_markers_locally(
    services: BrokerServices,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    partitions: Sequence[TopicPartition],
) -> dict[TopicPartition, ErrorCode]:
    """Append one COMMIT (``commit``) or ABORT marker to each of ``partitions`` and wait for
    their ISRs; the error code per partition (module docstring). The appends happen before
    the first ``await``: markers of several calls made in one step keep their order."""
    replica_manager = services.replica_manager
    marker = EndTransactionMarker(
        ControlRecordType.COMMIT if commit else ControlRecordType.ABORT, coordinator_epoch
    )
    now = services.clock.wall_ms()
    errors: dict[TopicPartition, ErrorCode] = {}
    required: dict[TopicPartition, int] = {}
    for tp in partitions:
        if tp in errors or tp in required:
            continue
        if tp not in replica_manager.partitions:
            errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        batch = build_end_txn_marker_batch(
            marker, producer_id=producer_id, producer_epoch=producer_epoch, timestamp=now
        )
        try:
            info = replica_manager.append(
                tp, memoryview(batch), from_client=False, required_acks=-1
            )
        except Exception as exc:
            code = error_code_for(exc)
            if code == ErrorCode.UNKNOWN_SERVER_ERROR:
                log.exception("unexpected error appending a transaction marker to %s", tp)
            else:
                log.debug(
                    "transaction marker for producer %d (epoch %d) refused by %s: %s",
                    producer_id,
                    producer_epoch,
                    tp,
                    exc,
                )
            errors[tp] = code
            continue
        # The LSO may have moved with the HW standing still: wake read-committed fetches.
        replica_manager.wake_waiters(tp)
        required[tp] = info.last_offset + 1
    waiting: dict[TopicPartition, int] = {}
    for tp, offset in required.items():
        # Decided already (the ISR is this broker alone, or caught up): no wait.
        done = replica_manager.replication_done(tp, offset)
        if done is None:
            waiting[tp] = offset
        else:
            errors[tp] = done
    if waiting:
        outcomes = await replica_manager.wait_for_replication(waiting, MARKER_REQUEST_TIMEOUT_MS)
        errors.update(outcomes)
    offsets_partitions = [
        tp.partition
        for tp in required
        if tp.topic == OFFSETS_TOPIC and errors.get(tp) == ErrorCode.NONE
    ]
    if offsets_partitions:
        try:
            services.group_coordinator.handle_txn_completion(
                producer_id, offsets_partitions, commit
            )
        except Exception:
            log.exception(
                "updating the offsets cache on the transaction marker of producer %d failed",
                producer_id,
            )
            for partition in offsets_partitions:
                errors[TopicPartition(OFFSETS_TOPIC, partition)] = ErrorCode.UNKNOWN_SERVER_ERROR
    return {tp: errors[tp] for tp in dict.fromkeys(partitions)}
