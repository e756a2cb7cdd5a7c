"""Kafka's magic v2 record batches: deflated views, inflated records, compression, varints.

``batch`` reads and patches batch headers without decoding records (the broker's hot path);
``inflated`` decodes and builds records; ``compression`` holds the codecs; ``varint`` the
zigzag varints of the record format; ``control`` the control records (transaction markers).
"""

from __future__ import annotations

from franz.protocol.records.batch import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    RecordBatchView,
    TimestampType,
    iter_batches,
    peek_batch_size,
)
from franz.protocol.records.compression import CompressionType, compress, decompress
from franz.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    build_end_txn_marker_batch,
    read_end_txn_marker,
)
from franz.protocol.records.inflated import (
    Header,
    HeaderLike,
    Record,
    RecordBatchBuilder,
    build_batch,
    iter_records,
)

__all__ = [
    "BATCH_HEADER_SIZE",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "CompressionType",
    "ControlRecordType",
    "EndTransactionMarker",
    "Header",
    "HeaderLike",
    "Record",
    "RecordBatchBuilder",
    "RecordBatchView",
    "TimestampType",
    "build_batch",
    "build_end_txn_marker_batch",
    "compress",
    "decompress",
    "iter_batches",
    "iter_records",
    "peek_batch_size",
    "read_end_txn_marker",
]
