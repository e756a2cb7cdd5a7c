"""Transaction markers written to partitions this broker leads (WriteTxnMarkers' local path).

A minimal stand-in with the contract's signature, for the transaction coordinator of this
branch: the Produce/Fetch/WriteTxnMarkers helper (issue 19, txnbroker) owns this module, and
its version replaces this one at merge. Kafka's ``ReplicaManager.appendRecords`` with
``AppendOrigin.Coordinator`` for each marker (``KafkaApis.handleWriteTxnMarkersRequest``):
one COMMIT/ABORT control batch per partition carrying ``coordinator_epoch``, appended with
acks=-1 and awaited until the ISR has it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from franz.errors import ApiError, ErrorCode
from franz.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_txn_marker_batch,
)
from franz.storage.files import TopicPartition

if TYPE_CHECKING:
    from franz.broker.services import BrokerServices

__all__ = ["write_txn_markers_locally"]

#: Kafka's ``request.timeout.ms`` default: how long a marker waits for the ISR.
_REPLICATION_TIMEOUT_MS: Final = 30_000


async def write_txn_markers_locally(
    services: BrokerServices,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    commit: bool,
    partitions: Sequence[TopicPartition],
) -> dict[TopicPartition, ErrorCode]:
    """Append one end-transaction marker to each of ``partitions``; each one's outcome."""
    marker = EndTransactionMarker(
        ControlRecordType.COMMIT if commit else ControlRecordType.ABORT, coordinator_epoch
    )
    now = services.clock.wall_ms()
    replica_manager = services.replica_manager
    outcome: dict[TopicPartition, ErrorCode] = {}
    required: dict[TopicPartition, int] = {}
    for tp in partitions:
        tp = TopicPartition(tp[0], tp[1])
        batch = build_end_txn_marker_batch(
            marker, producer_id=producer_id, producer_epoch=producer_epoch, timestamp=now
        )
        try:
            info = replica_manager.append(
                tp, memoryview(batch), from_client=False, required_acks=-1
            )
        except ApiError as exc:
            outcome[tp] = exc.code
            continue
        except OSError:
            outcome[tp] = ErrorCode.KAFKA_STORAGE_ERROR
            continue
        outcome[tp] = ErrorCode.NONE
        if info.batch_count:
            required[tp] = info.last_offset + 1
    if required:
        outcome.update(
            await replica_manager.wait_for_replication(required, _REPLICATION_TIMEOUT_MS)
        )
    return outcome
