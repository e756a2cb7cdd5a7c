"""The record formats of ``__transaction_state``, byte for byte as Kafka 3.9 writes them.

Kafka's names: ``TransactionLog`` (``keyToBytes``, ``valueToBytes``, ``readTxnRecordKey``,
``readTxnRecordValue``) and the generated messages ``TransactionLogKey`` /
``TransactionLogValue`` (``transaction-coordinator/src/main/resources/common/message/``, the
3.9.2 jar carries the JSON). ``TransactionStateManager.partitionFor`` maps an id to a partition.

Every key and value is a big-endian int16 *version* followed by the struct of that version::

    key   v0      TransactionLogKey    transactionalId string
    value v0, v1  TransactionLogValue  producerId int64, producerEpoch int16,
                                       transactionTimeoutMs int32, transactionStatus int8,
                                       transactionPartitions [PartitionsSchema]? ,
                                       transactionLastUpdateTimestampMs int64,
                                       transactionStartTimestampMs int64
    PartitionsSchema                   topic string, partitionIds [int32]
    value None    tombstone: the transactional id expired (written on expiry, see below)

Note the order: the last-update timestamp comes *before* the start timestamp on the wire.

Version 0 uses the classic encodings (string = int16 length + UTF-8, array = int32 count,
-1 = null); version 1 is *flexible* (KIP-482: compact string and arrays as unsigned varint
n + 1, 0 = null, and each struct -- every PartitionsSchema and the value -- ends with a tagged
field section). 3.9 defines no tagged fields (the 4.0 tags ``PreviousProducerId``,
``NextProducerId``, ``ClientTransactionVersion`` are not in 3.9), so franz writes empty
sections and skips unknown tags when reading.

What Kafka 3.9 writes:

* keys at version 0 (any other key version is an ``UnknownKey``, skipped by the loader);
* values at version 1 only when the finalized feature ``transaction.version`` is > 0
  (``TransactionStateManager.usesFlexibleRecords``), else version 0. ZooKeeper-mode clusters
  (franz's design) never finalize ``transaction.version``, so franz writes **version 0**;
* ``transactionPartitions`` null when the state is Empty (and refuses an Empty state with
  partitions: ``IllegalStateException``), else the partitions grouped by topic. Kafka's
  order is its Scala hash-set/map order, which no reader depends on (the loader adds them
  to a set); franz sorts by topic, then partition id;
* on expiry of a transactional id (``transactional.id.expiration.ms``), a *tombstone*: the
  key with a null value (``TransactionStateManager.writeTombstonesForExpiredTransactionalIds``).

On load (``readTxnRecordValue``) Kafka ignores the partitions of an Empty value, sets
``lastProducerId`` to -1 and ``lastProducerEpoch`` to -1 (neither is stored in 3.9), and
rejects unknown value versions and state ids (``IllegalStateException``). Decoding here is
strict like the group coordinator's (``franz.coordinator.group.offsets_schema``): truncation,
a null non-nullable field, bad UTF-8, an unknown version or state, or trailing bytes raise
``TransactionLogRecordError`` (unknown versions ``UnknownTransactionLogVersionError``).

``partition_for`` is ``Utils.abs(transactionalId.hashCode) % transactionTopicPartitionCount``
(``transaction.state.log.num.partitions``, default 50): the same formula as the group
coordinator, so it reuses ``offsets_schema.partition_for``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from franz.coordinator.group.offsets_schema import (
    CoordinatorRecordError,
    RecordReader,
    UnknownRecordVersionError,
)
from franz.coordinator.group.offsets_schema import (
    partition_for as _offsets_partition_for,
)
from franz.coordinator.transaction.states import TransactionState, UnknownTransactionStateError
from franz.protocol.records.varint import encode_unsigned_varint

__all__ = [
    "TRANSACTION_LOG_KEY_VERSION",
    "TRANSACTION_LOG_VALUE_VERSION",
    "TopicPartitions",
    "TransactionLogRecordError",
    "TransactionLogValue",
    "UnknownTransactionLogVersionError",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
    "group_partitions",
    "partition_for",
]

TRANSACTION_LOG_KEY_VERSION: Final = 0
"""The only ``TransactionLogKey`` version (``keyToBytes`` writes 0)."""
TRANSACTION_LOG_VALUE_VERSION: Final = 0
"""The value version Kafka 3.9 writes without finalized ``transaction.version`` (always, in
ZooKeeper mode)."""

_VALUE_VERSIONS: Final = (0, 1)
_FIRST_FLEXIBLE_VERSION: Final = 1

TopicPartitions = tuple[tuple[str, tuple[int, ...]], ...]
"""Partitions grouped by topic, as ``PartitionsSchema`` entries: ``((topic, (id, ...)), ...)``."""

_INT8: Final = struct.Struct(">b")
_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
_INT64: Final = struct.Struct(">q")
_INT16_MAX: Final = (1 << 15) - 1


class TransactionLogRecordError(CoordinatorRecordError):
    """A ``__transaction_state`` key or value cannot be decoded (local: raised while loading)."""


class UnknownTransactionLogVersionError(TransactionLogRecordError, UnknownRecordVersionError):
    """A key or value version this module does not know (Kafka: "Unknown version ... from the
    transaction log message value"; an unknown key version is Kafka's ``UnknownKey``)."""


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    """One ``TransactionLogValue``: a transactional id's state as stored.

    ``partitions`` is exactly what is on the wire: None for a null array (Kafka writes null
    for an Empty state), else the ``PartitionsSchema`` entries in order.
    """

    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    state: TransactionState
    partitions: TopicPartitions | None
    last_update_timestamp_ms: int
    start_timestamp_ms: int


def group_partitions(partitions: Iterable[tuple[str, int]]) -> TopicPartitions:
    """Group ``(topic, partition)`` pairs by topic, sorted (Kafka's ``groupBy(_.topic)``)."""
    by_topic: dict[str, set[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, set()).add(partition)
    return tuple((topic, tuple(sorted(ids))) for topic, ids in sorted(by_topic.items()))


# --- writing -------------------------------------------------------------------------------


def _string(value: str, flexible: bool) -> bytes:
    data = value.encode("utf-8")
    if len(data) > _INT16_MAX:
        raise ValueError(f"string of {len(data)} UTF-8 bytes is longer than {_INT16_MAX}")
    return (encode_unsigned_varint(len(data) + 1) if flexible else _INT16.pack(len(data))) + data


def _array_length(n: int | None, flexible: bool) -> bytes:
    if flexible:
        return encode_unsigned_varint(0 if n is None else n + 1)
    return _INT32.pack(-1 if n is None else n)


def encode_key(transactional_id: str) -> bytes:
    """``TransactionLog.keyToBytes``: version 0, then the transactional id."""
    return _INT16.pack(TRANSACTION_LOG_KEY_VERSION) + _string(transactional_id, flexible=False)


def encode_value(value: TransactionLogValue, version: int = TRANSACTION_LOG_VALUE_VERSION) -> bytes:
    """``TransactionLog.valueToBytes``'s bytes for ``value`` at ``version`` (0 or 1).

    Writes ``value`` as given; ``metadata.value_for_transit`` applies Kafka's rules (null
    partitions for Empty, grouping). Out-of-range integers raise ``struct.error``.
    """
    if version not in _VALUE_VERSIONS:
        raise ValueError(f"TransactionLogValue version {version} is not 0 or 1")
    flexible = version >= _FIRST_FLEXIBLE_VERSION
    parts = [
        _INT16.pack(version),
        _INT64.pack(value.producer_id),
        _INT16.pack(value.producer_epoch),
        _INT32.pack(value.transaction_timeout_ms),
        _INT8.pack(int(value.state)),
    ]
    if value.partitions is None:
        parts.append(_array_length(None, flexible))
    else:
        parts.append(_array_length(len(value.partitions), flexible))
        for topic, ids in value.partitions:
            parts.append(_string(topic, flexible))
            parts.append(_array_length(len(ids), flexible))
            parts.extend(_INT32.pack(i) for i in ids)
            if flexible:
                parts.append(b"\x00")  # PartitionsSchema's tagged fields: none
    parts.append(_INT64.pack(value.last_update_timestamp_ms))
    parts.append(_INT64.pack(value.start_timestamp_ms))
    if flexible:
        parts.append(b"\x00")  # the value's tagged fields: none
    return b"".join(parts)


# --- reading -------------------------------------------------------------------------------


class _Reader(RecordReader):
    """The coordinator records' reader, failing with ``TransactionLogRecordError``."""

    __slots__ = ()
    error = TransactionLogRecordError


def decode_key(data: bytes) -> str:
    """``TransactionLog.readTxnRecordKey``: the transactional id of a version-0 key.

    Another version raises ``UnknownTransactionLogVersionError`` (Kafka's ``UnknownKey``,
    which its loader skips).
    """
    r = _Reader(data, "__transaction_state key")
    version = r.fixed(_INT16, "version")
    if version != TRANSACTION_LOG_KEY_VERSION:
        raise UnknownTransactionLogVersionError(
            f"unknown __transaction_state key version {version}"
        )
    transactional_id = r.string("transactionalId")
    r.end()
    return transactional_id


def decode_value(data: bytes) -> TransactionLogValue:
    """Decode a ``TransactionLogValue`` of version 0 or 1 (not a tombstone: callers handle a
    null value, which Kafka's loader turns into "remove this transactional id")."""
    r = _Reader(data, "TransactionLogValue")
    version = r.fixed(_INT16, "version")
    if version not in _VALUE_VERSIONS:
        raise UnknownTransactionLogVersionError(
            f"Unknown version {version} from the transaction log message value"
        )
    r.flexible = version >= _FIRST_FLEXIBLE_VERSION
    producer_id = r.fixed(_INT64, "producerId")
    producer_epoch = r.fixed(_INT16, "producerEpoch")
    timeout_ms = r.fixed(_INT32, "transactionTimeoutMs")
    status = r.fixed(_INT8, "transactionStatus")
    try:
        state = TransactionState.from_id(status)
    except UnknownTransactionStateError as e:
        raise TransactionLogRecordError(f"TransactionLogValue: {e}") from None
    partitions: TopicPartitions | None = None
    count = r.nullable_array_length("transactionPartitions")
    if count is not None:
        entries = []
        for _ in range(count):
            topic = r.string("topic")
            n = r.array_length("partitionIds")
            ids = tuple(r.fixed(_INT32, "partitionIds") for _ in range(n))
            r.skip_tagged_fields()
            entries.append((topic, ids))
        partitions = tuple(entries)
    last_update = r.fixed(_INT64, "transactionLastUpdateTimestampMs")
    start = r.fixed(_INT64, "transactionStartTimestampMs")
    r.skip_tagged_fields()
    r.end()
    return TransactionLogValue(
        producer_id, producer_epoch, timeout_ms, state, partitions, last_update, start
    )


def partition_for(transactional_id: str, num_partitions: int) -> int:
    """The ``__transaction_state`` partition of ``transactional_id``
    (``TransactionStateManager.partitionFor``: ``Utils.abs(hashCode) % partition count``)."""
    return _offsets_partition_for(transactional_id, num_partitions)
