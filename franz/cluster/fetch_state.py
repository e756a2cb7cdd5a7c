"""The follower's fetch state and the pure rules of replica fetching
(``franz.cluster.replica_fetcher`` has the whole picture): where a follower starts
(``InitialFetchState``), the ``replica.*`` keys (``ReplicaFetcherConfig``), which fetcher a
partition goes to (Kafka's ``getFetcherId`` over Java's ``String.hashCode``), whole-batch
cutting of a response, and where a follower truncates on a ``diverging_epoch`` answer
(Kafka's ``getOffsetTruncationState``). No I/O.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from franz.storage.files import TopicPartition

if TYPE_CHECKING:
    from franz.cluster.partition import Partition

__all__ = [
    "EARLIEST_TIMESTAMP",
    "FETCH_VERSION",
    "FIRST_TOPIC_ID_VERSION",
    "LATEST_TIMESTAMP",
    "LIST_OFFSETS_VERSION",
    "MIN_FETCH_VERSION",
    "MIN_LIST_OFFSETS_VERSION",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "InitialFetchState",
    "ReplicaFetcherConfig",
    "fetcher_id_for",
    "java_string_hash",
    "truncation_offset",
    "whole_batches_length",
]


#: Kafka 3.9's ``MetadataVersion.fetchRequestVersion`` for IBP 3.9 (``IBP_3_9_IV0``).
FETCH_VERSION: Final = 17
#: Truncation on fetch (``last_fetched_epoch`` / ``diverging_epoch``) exists from v12.
MIN_FETCH_VERSION: Final = 12
#: Fetch names topics by id from v13.
FIRST_TOPIC_ID_VERSION: Final = 13
#: Kafka 3.9's ``listOffsetRequestVersion`` for IBP 3.9 is 9; v1+ has one offset per answer.
LIST_OFFSETS_VERSION: Final = 9
MIN_LIST_OFFSETS_VERSION: Final = 1
LATEST_TIMESTAMP: Final = -1
EARLIEST_TIMESTAMP: Final = -2
#: Kafka's UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET.
UNDEFINED_EPOCH: Final = -1
UNDEFINED_EPOCH_OFFSET: Final = -1
_BATCH_HEADER: Final = 12  # baseOffset int64 + batchLength int32


@dataclass(frozen=True, slots=True)
class InitialFetchState:
    """Where a new follower starts (Kafka's ``InitialFetchState``): its leader and leader
    epoch, the first offset to fetch (the LEO, or the HW for a log without leader epochs)
    and the log's latest leader epoch (None: none; the partition truncates to its HW)."""

    leader_id: int
    leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int | None


@dataclass(frozen=True, slots=True)
class ReplicaFetcherConfig:
    """The broker's ``replica.*`` keys (Kafka's defaults), in Kafka's units."""

    broker_id: int
    #: ``num.replica.fetchers``.
    num_fetchers: int = 1
    #: ``replica.fetch.max.bytes``: per partition (a larger first batch still comes whole).
    fetch_max_bytes: int = 1048576
    #: ``replica.fetch.response.max.bytes``: the whole response.
    fetch_response_max_bytes: int = 10485760
    #: ``replica.fetch.wait.max.ms``.
    fetch_wait_max_ms: int = 500
    #: ``replica.fetch.min.bytes``.
    fetch_min_bytes: int = 1
    #: ``replica.fetch.backoff.ms``.
    fetch_backoff_ms: int = 1000
    #: ``replica.socket.timeout.ms``: connect and request timeout.
    socket_timeout_ms: int = 30000
    #: ``replica.socket.receive.buffer.bytes``: kept, not applied (the OS's autotuning is
    #: left on, as Kafka's -1; a fixed 64 KiB only slows a loopback follower down).
    socket_receive_buffer_bytes: int = 65536
    #: ``inter.broker.listener.name``: the leader's endpoint to connect to.
    listener: str = "PLAINTEXT"
    #: TLS to that listener (SSL, SASL_SSL), else None.
    ssl_context: ssl.SSLContext | None = None

    @classmethod
    def from_broker_config(cls, get: Callable[[str], Any], broker_id: int) -> ReplicaFetcherConfig:
        return cls(
            broker_id=broker_id,
            num_fetchers=get("num.replica.fetchers"),
            fetch_max_bytes=get("replica.fetch.max.bytes"),
            fetch_response_max_bytes=get("replica.fetch.response.max.bytes"),
            fetch_wait_max_ms=get("replica.fetch.wait.max.ms"),
            fetch_min_bytes=get("replica.fetch.min.bytes"),
            fetch_backoff_ms=get("replica.fetch.backoff.ms"),
            socket_timeout_ms=get("replica.socket.timeout.ms"),
            socket_receive_buffer_bytes=get("replica.socket.receive.buffer.bytes"),
            # Kafka: without inter.broker.listener.name, the listener named after
            # security.inter.broker.protocol.
            listener=get("inter.broker.listener.name")
            or get("security.inter.broker.protocol")
            or "PLAINTEXT",
        )


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units, 32-bit wrap-around), signed."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def fetcher_id_for(tp: TopicPartition, num_fetchers: int) -> int:
    """Kafka's ``getFetcherId``: ``Utils.abs(31 * topic.hashCode + partition) % n``."""
    value = (31 * java_string_hash(tp.topic) + tp.partition) & 0xFFFFFFFF
    if value >= 1 << 31:
        value -= 1 << 32
    absolute = 0 if value == -(1 << 31) else abs(value)
    return absolute % num_fetchers


def whole_batches_length(records: memoryview) -> int:
    """The length of the whole batches at the start of ``records`` (a fetch response may
    end with a partial batch when a limit cut it; it comes whole in the next fetch)."""
    position = 0
    size = len(records)
    while position + _BATCH_HEADER <= size:
        length = int.from_bytes(records[position + 8 : position + 12], "big", signed=True)
        end = position + _BATCH_HEADER + length
        if length <= 0 or end > size:
            break
        position = end
    return position


def truncation_offset(
    follower: Partition, fetch_offset: int, leader_epoch: int, end_offset: int
) -> int:
    """Where a follower truncates on a ``diverging_epoch`` (``leader_epoch``, ``end_offset``)
    answer (Kafka's ``AbstractFetcherThread.getOffsetTruncationState``): an undefined end
    offset keeps the fetch offset; an undefined epoch, or one the follower never had, the
    leader's end offset; else the end of the follower's largest epoch <= the leader's, and
    when that is the leader's own epoch, no further than the leader's end of it. Never past
    the follower's LEO."""
    replica_end = follower.log_end_offset
    if end_offset == UNDEFINED_EPOCH_OFFSET:
        return fetch_offset
    if leader_epoch == UNDEFINED_EPOCH:
        return min(end_offset, replica_end)
    found = follower.end_offset_for_epoch(leader_epoch)
    if found is None:
        return min(end_offset, replica_end)
    follower_epoch, follower_end = found
    if follower_epoch != leader_epoch:
        # The follower does not know the leader's epoch: back to the end of its largest epoch
        # below it; the next fetch tells whether that is enough.
        return min(follower_end, replica_end)
    return min(follower_end, end_offset, replica_end)
