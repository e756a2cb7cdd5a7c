"""``__transaction_state`` records and ``.txnindex`` files as Kafka 3.9's ``kafka-dump-log.sh``
prints them. Not a tool: helpers of ``dump_log``.

``--transaction-log-decoder`` (``DumpLogSegments.TransactionLogMessageParser``, which calls
``TransactionLog.formatRecordKeyAndValue``; unlike ``--offsets-decoder`` it was not moved to
JSON in 3.8) prints each record's key and value as::

    key:     transaction_metadata::transactionalId=<id>
    payload: producerId:<id>,producerEpoch:<epoch>,state=<State>,partitions=[t-0,t-1],
             txnLastUpdateTimestamp=<ms>,txnTimeoutMs=<ms>          (one line)
    payload: <DELETE>                                                (a tombstone)

``State`` is the coordinator's name (``Empty``, ``Ongoing``, ``PrepareCommit``, ...,
``franz.coordinator.transaction.states``). ``partitions`` are the ``TopicPartition`` s of a
Scala ``mutable.HashSet`` (``TransactionMetadata.topicPartitions``, empty for Empty): Scala
2.13's set iterates its buckets in index order (``h ^ (h >>> 16)`` masked by the table
length, 16 growing by doubling) and each bucket's entries by ascending (improved) hash, so
the order is computed, not stored. A key of another version than 0 is
``unknown::version=<n>``, with no payload.

A ``.txnindex`` (``DumpLogSegments.dumpTxnIndex``) prints one line per ``AbortedTxn``::

    version: 0 producerId: 7 firstOffset: 3 lastOffset: 5 lastStableOffset: 6
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Final, TextIO

from franz.admin.java_order import topic_partition_hash
from franz.coordinator.transaction.log_schema import (
    TRANSACTION_LOG_KEY_VERSION,
    decode_key,
    decode_value,
)
from franz.coordinator.transaction.states import TransactionState
from franz.storage.index.txn_index import TransactionIndex

__all__ = [
    "dump_txn_index",
    "parse_transaction_log_record",
    "scala_hash_set_order",
]

_INT16: Final = struct.Struct(">h")
#: Scala 2.13 ``mutable.HashSet``'s default table length and load factor.
_SCALA_INITIAL_TABLE: Final = 16
_SCALA_LOAD_FACTOR: Final = 0.75


def _improve(h: int) -> int:
    """Scala's ``improveHash``: ``h ^ (h >>> 16)`` as a signed 32-bit int."""
    u = h & 0xFFFFFFFF
    v = (u ^ (u >> 16)) & 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def _table_size_for(capacity: int) -> int:
    size = 1
    while size < capacity:
        size *= 2
    return size


def scala_hash_set_order(groups: Iterable[list[tuple[str, int]]]) -> list[tuple[str, int]]:
    """The iteration order of a Scala 2.13 ``mutable.HashSet[TopicPartition]`` filled by
    ``++=`` once per group (``TransactionMetadata.addPartitions``, once per topic).

    ``++=`` first calls ``sizeHint(group size)`` (the table grows to
    ``tableSizeFor((n + 1) / 0.75)`` when larger); each single ``add`` grows the table by
    doubling when ``size + 1 >= length * 0.75``. Iteration is by bucket, then hash.
    """
    table = _SCALA_INITIAL_TABLE
    seen: dict[tuple[str, int], None] = {}
    for group in groups:
        items = list(dict.fromkeys(group))
        table = max(table, _table_size_for(int((len(items) + 1) / _SCALA_LOAD_FACTOR)))
        for tp in items:
            if tp in seen:
                continue
            if len(seen) + 1 >= int(table * _SCALA_LOAD_FACTOR):
                table *= 2
            seen[tp] = None
    mask = table - 1

    def key(tp: tuple[str, int]) -> tuple[int, int]:
        h = _improve(topic_partition_hash(tp))
        return (h & mask, h)

    return sorted(seen, key=key)


def parse_transaction_log_record(
    key: bytes | None, value: bytes | None
) -> tuple[str | None, str | None]:
    """``TransactionLog.formatRecordKeyAndValue``: the key and payload texts of a record."""
    if key is None:
        raise ValueError("Failed to decode message using transaction log decoder (no key)")
    (version,) = _INT16.unpack_from(key)
    if version != TRANSACTION_LOG_KEY_VERSION:
        return f"unknown::version={version}", None
    transactional_id = decode_key(key)
    key_text = f"transaction_metadata::transactionalId={transactional_id}"
    if value is None:
        return key_text, "<DELETE>"
    v = decode_value(value)
    groups = (
        []
        if v.partitions is None or v.state == TransactionState.EMPTY
        else [[(topic, p) for p in ids] for topic, ids in v.partitions]
    )
    partitions = ",".join(f"{t}-{p}" for t, p in scala_hash_set_order(groups))
    return key_text, (
        f"producerId:{v.producer_id},producerEpoch:{v.producer_epoch},"
        f"state={v.state.kafka_name},partitions=[{partitions}],"
        f"txnLastUpdateTimestamp={v.last_update_timestamp_ms},"
        f"txnTimeoutMs={v.transaction_timeout_ms}"
    )


def dump_txn_index(path: Path, base_offset: int, out: TextIO) -> None:
    """Every aborted transaction of a ``.txnindex``, in file order."""
    index = TransactionIndex(base_offset, path)
    for txn in index.all_aborted_txns():
        out.write(
            f"version: {txn.version} producerId: {txn.producer_id} "
            f"firstOffset: {txn.first_offset} lastOffset: {txn.last_offset} "
            f"lastStableOffset: {txn.last_stable_offset}\n"
        )
