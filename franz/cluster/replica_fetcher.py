"""Followers copy their leaders' logs: Kafka's ``ReplicaFetcherManager`` and
``ReplicaFetcherThread`` (``AbstractFetcherThread.scala``) as asyncio tasks.

One fetcher task per (leader broker id, fetcher id): a partition goes to fetcher
``abs(31 * topic.hashCode + partition) % num.replica.fetchers`` of its leader (Kafka's
``AbstractFetcherManager.getFetcherId``, Java's ``String.hashCode``), so a Kafka and a Franz
broker split the same partitions the same way. A task owns one ``KafkaClientConnection`` to
its leader (address from the ``MetadataCache``'s live brokers on the inter-broker listener,
looked up at every connect, so a restarted leader on a new port is found) and loops:

1. partitions *truncating* (no leader epoch in their log: Kafka's "old message format"
   path) truncate to their high watermark (the fetch offset they were added with,
   ``truncateToHighWatermark``), then fetch;
2. one full Fetch (no fetch session) for every partition ready to fetch, at the version Kafka
   3.9's ``MetadataVersion.fetchRequestVersion`` gives IBP 3.9 (17), capped by the leader's
   ApiVersions (at least 12: truncation on fetch needs ``last_fetched_epoch`` and
   ``diverging_epoch``); ``replica_id`` (v15+: ``replica_state`` with the broker epoch,
   KIP-903), ``replica.fetch.wait.max.ms``, ``replica.fetch.min.bytes``,
   ``replica.fetch.response.max.bytes`` for the request and ``replica.fetch.max.bytes`` per
   partition, READ_UNCOMMITTED, each partition with ``current_leader_epoch``, the fetch
   offset (= the follower's LEO), ``last_fetched_epoch`` (the log's latest leader epoch)
   and the follower's log start offset;
3. each partition of the response whose state did not change meanwhile (same fetch offset
   and leader epoch, as ``processFetchRequest`` checks):

   * records: appended as they are (``Partition.append_records_to_follower``: CRC and
     header checks, offsets, batches and leader epochs kept byte for byte; a trailing
     partial batch is left for the next fetch), then the follower's HW = min(leader's HW,
     LEO) and its log start offset moves up to the leader's; the partition goes last in
     the next request (Kafka's ``updateAndMoveToEnd``: no partition starves behind busy ones);
   * ``diverging_epoch`` (KIP-320 truncation on fetch): truncate to the end offset of the
     largest local epoch <= the leader's answer (``getOffsetTruncationState``), go on
     fetching from there with the new last fetched epoch; the next response says whether
     that was enough;
   * NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_*:
     the partition waits ``replica.fetch.backoff.ms`` and retries (the next LeaderAndIsr
     moves or restarts it); a FENCED_LEADER_EPOCH leaves it idle until then, as Kafka's
     ``onPartitionFenced``;
   * OFFSET_OUT_OF_RANGE: Kafka's ``fetchOffsetAndTruncate`` with ListOffsets to the leader:
     a leader LEO below ours truncates us there; a leader log start above our LEO restarts
     our log empty at it; else fetch again from our LEO;
   * KAFKA_STORAGE_ERROR from our own log (the append or truncation failed): the partition
     is marked failed and dropped from the fetcher (Kafka's ``markPartitionFailed``; the
     log dir failure handling tells the controller).

A failed request (connection refused or lost, timeout after ``replica.socket.timeout.ms``)
closes the connection and the whole fetcher backs off ``replica.fetch.backoff.ms`` before
reconnecting, as ``handlePartitionsWithErrors`` delays every partition.

Logging: one INFO line when a fetcher starts or stops, WARN for errors at most once per
``_WARN_INTERVAL_S`` per fetcher and kind (a leader that is down for a minute is one line,
with a count of what was suppressed).

Concurrency: everything runs on the broker's event loop. Partition state is only read or
written between awaits, so a LeaderAndIsr applied while a fetch is in flight is seen when
the response is processed (the fetch offset or epoch differs: the response is dropped).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from franz.errors import ErrorCode, FranzError, KafkaStorageError
from franz.network.client import ClientConnectionError, KafkaClientConnection
from franz.protocol.api_keys import ApiKey
from franz.protocol.client import ClientProtocolError
from franz.protocol.fetch_response import FetchPartitionData, FetchResponseDecodeError
from franz.protocol.messages import build, request_type
from franz.storage.files import TopicPartition

if TYPE_CHECKING:
    from franz.cluster.partition import Partition
    from franz.cluster.replica_manager import ReplicaManager
    from franz.metadata.cache import MetadataCache

__all__ = [
    "InitialFetchState",
    "ReplicaFetcherConfig",
    "ReplicaFetcherManager",
    "fetcher_id_for",
    "java_string_hash",
    "truncation_offset",
    "whole_batches_length",
]

log = logging.getLogger(__name__)

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
_WARN_INTERVAL_S: Final = 10.0
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
            listener=get("inter.broker.listener.name") or "PLAINTEXT",
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


@dataclass(slots=True)
class _FetchState:
    """One partition in a fetcher (Kafka's ``PartitionFetchState``)."""

    topic_id: uuid.UUID
    fetch_offset: int
    leader_epoch: int
    last_fetched_epoch: int | None
    truncating: bool
    #: ``time.monotonic()`` before which the partition is not fetched (errors back off).
    delay_until: float = 0.0
    #: Fenced: idle until the next LeaderAndIsr re-adds it.
    fenced: bool = False


class _RateLimitedWarnings:
    def __init__(self) -> None:
        self._last: dict[str, float] = {}
        self._suppressed: dict[str, int] = {}

    def warn(self, key: str, message: str, *args: object) -> None:
        now = time.monotonic()
        last = self._last.get(key)
        if last is not None and now - last < _WARN_INTERVAL_S:
            self._suppressed[key] = self._suppressed.get(key, 0) + 1
            return
        self._last[key] = now
        suppressed = self._suppressed.pop(key, 0)
        if suppressed:
            message += f" ({suppressed} similar warnings suppressed)"
        log.warning(message, *args)


class ReplicaFetcher:
    """One fetcher task: the partitions one leader serves this broker (module docstring)."""

    def __init__(self, manager: ReplicaFetcherManager, leader_id: int, fetcher_id: int) -> None:
        self.manager = manager
        self.config = manager.config
        self.leader_id = leader_id
        self.fetcher_id = fetcher_id
        self.name = f"ReplicaFetcherThread-{fetcher_id}-{leader_id}"
        self.partitions: dict[TopicPartition, _FetchState] = {}
        self._changed = asyncio.Event()
        self._connection: KafkaClientConnection | None = None
        self._task: asyncio.Task[None] | None = None
        self._warnings = _RateLimitedWarnings()
        #: Fetch requests answered (for tests and metrics).
        self.fetches = 0

    # -- membership ------------------------------------------------------------------------

    def add_partitions(
        self, states: Mapping[TopicPartition, tuple[uuid.UUID, InitialFetchState]]
    ) -> None:
        for tp, (topic_id, initial) in states.items():
            current = self.partitions.get(tp)
            if current is not None and current.leader_epoch == initial.leader_epoch:
                continue  # Kafka keeps the current state for the same leader epoch
            self.partitions[tp] = _FetchState(
                topic_id=topic_id,
                fetch_offset=initial.fetch_offset,
                leader_epoch=initial.leader_epoch,
                last_fetched_epoch=initial.last_fetched_epoch,
                truncating=initial.last_fetched_epoch is None,
            )
        self._changed.set()

    def remove_partitions(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            self.partitions.pop(tp, None)
        self._changed.set()

    def start(self) -> None:
        if self._task is None:
            log.info(
                "[%s] starting: broker %d fetches from broker %d",
                self.name,
                self.config.broker_id,
                self.leader_id,
            )
            self._task = asyncio.get_running_loop().create_task(self._run(), name=self.name)

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._close_connection("fetcher stopped")
        log.info("[%s] stopped", self.name)

    # -- the task --------------------------------------------------------------------------

    async def _run(self) -> None:
        backoff = self.config.fetch_backoff_ms / 1000
        while True:
            try:
                await self._do_work()
            except asyncio.CancelledError:
                raise
            except (ClientConnectionError, ClientProtocolError, FetchResponseDecodeError) as exc:
                self._warnings.warn(
                    "connection",
                    "[%s] error sending fetch request to broker %d: %s; retrying in %d ms",
                    self.name,
                    self.leader_id,
                    exc,
                    self.config.fetch_backoff_ms,
                )
                self._close_connection(str(exc))
                await asyncio.sleep(backoff)
            except Exception:
                log.exception(
                    "[%s] unexpected error; retrying in %.0f ms", self.name, backoff * 1000
                )
                self._close_connection("unexpected error")
                await asyncio.sleep(backoff)

    async def _do_work(self) -> None:
        self._truncate_to_high_watermark()
        now = time.monotonic()
        ready = {
            tp: state
            for tp, state in self.partitions.items()
            if not state.truncating and not state.fenced and state.delay_until <= now
        }
        if not ready:
            delays = [
                s.delay_until - now
                for s in self.partitions.values()
                if not s.fenced and not s.truncating
            ]
            timeout = min(delays) if delays else None
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)
            return
        connection = await self._connect()
        version = connection.version_for(ApiKey.FETCH, FETCH_VERSION, MIN_FETCH_VERSION)
        if version >= FIRST_TOPIC_ID_VERSION and any(not s.topic_id.int for s in ready.values()):
            # A partition whose LeaderAndIsr carried no topic id (v0-4): fetch by name, as
            # Kafka's fetcher does when a topic id is missing.
            version = FIRST_TOPIC_ID_VERSION - 1
        sent = {tp: (state.fetch_offset, state.leader_epoch) for tp, state in ready.items()}
        request = self._fetch_request(version, ready)
        timeout = (self.config.socket_timeout_ms + self.config.fetch_wait_max_ms) / 1000
        response = await connection.fetch(request, timeout=timeout)
        self.fetches += 1
        if response.error_code:
            self._warnings.warn(
                f"top-{response.error_code}",
                "[%s] fetch from broker %d failed with error %s",
                self.name,
                self.leader_id,
                _error_name(response.error_code),
            )
            self._delay(sent)
            await asyncio.sleep(self.config.fetch_backoff_ms / 1000)
            return
        names = {state.topic_id: tp.topic for tp, state in ready.items()}
        out_of_range: list[TopicPartition] = []
        for topic in response.responses:
            name = topic.name if version < FIRST_TOPIC_ID_VERSION else names.get(topic.topic_id, "")
            for data in topic.partitions:
                tp = TopicPartition(name, data.partition_index)
                before = sent.get(tp)
                state = self.partitions.get(tp)
                if before is None or state is None:
                    continue
                if (state.fetch_offset, state.leader_epoch) != before or state.fenced:
                    continue  # changed while the fetch was in flight
                if self._process(tp, state, data):
                    out_of_range.append(tp)
        for tp in out_of_range:
            await self._handle_out_of_range(tp)

    def _fetch_request(self, version: int, ready: Mapping[TopicPartition, _FetchState]) -> Any:
        topics: dict[str, list[dict[str, Any]]] = {}
        topic_ids: dict[str, uuid.UUID] = {}
        replica_manager = self.manager.replica_manager
        for tp, state in ready.items():
            partition = replica_manager.partitions.get(tp)
            log_start = partition.log_start_offset if partition is not None else -1
            topics.setdefault(tp.topic, []).append(
                {
                    "partition": tp.partition,
                    "current_leader_epoch": state.leader_epoch,
                    "fetch_offset": state.fetch_offset,
                    "last_fetched_epoch": (
                        UNDEFINED_EPOCH
                        if state.last_fetched_epoch is None
                        else state.last_fetched_epoch
                    ),
                    "log_start_offset": log_start,
                    "partition_max_bytes": self.config.fetch_max_bytes,
                }
            )
            topic_ids[tp.topic] = state.topic_id
        broker_id = self.config.broker_id
        return build(
            request_type(ApiKey.FETCH, version),
            {
                "replica_id": broker_id,
                "replica_state": {
                    "replica_id": broker_id,
                    "replica_epoch": self.manager.broker_epoch(),
                },
                "max_wait": self.config.fetch_wait_max_ms,
                "min_bytes": self.config.fetch_min_bytes,
                "max_bytes": self.config.fetch_response_max_bytes,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,  # FINAL_EPOCH: a full fetch, no session
                "topics": [
                    {"topic": name, "topic_id": topic_ids[name], "partitions": partitions}
                    for name, partitions in topics.items()
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )

    # -- one partition's answer ------------------------------------------------------------

    def _process(self, tp: TopicPartition, state: _FetchState, data: FetchPartitionData) -> bool:
        """Apply one partition of a response; True if it needs the out-of-range handling."""
        error = data.error_code
        partition = self.manager.replica_manager.partitions.get(tp)
        if partition is None:
            self.partitions.pop(tp, None)
            return False
        if error == ErrorCode.NONE:
            try:
                if data.diverging_epoch is not None:
                    self._truncate_on_diverging_epoch(tp, state, partition, *data.diverging_epoch)
                else:
                    self._append(tp, state, partition, data)
            except KafkaStorageError as exc:
                self._mark_failed(tp, exc)
            return False
        if error == ErrorCode.OFFSET_OUT_OF_RANGE:
            return True
        if error == ErrorCode.FENCED_LEADER_EPOCH:
            # Kafka's onPartitionFenced: this replica's epoch is older than the leader's; the
            # partition waits for the LeaderAndIsr that brings the new one.
            self._warnings.warn(
                f"fenced-{tp}",
                "[%s] partition %s has an older leader epoch (%d) than the leader's; "
                "waiting for the next LeaderAndIsr",
                self.name,
                tp,
                state.leader_epoch,
            )
            state.fenced = True
            return False
        self._warnings.warn(
            f"error-{error}",
            "[%s] error %s fetching %s from broker %d; retrying in %d ms",
            self.name,
            _error_name(error),
            tp,
            self.leader_id,
            self.config.fetch_backoff_ms,
        )
        state.delay_until = time.monotonic() + self.config.fetch_backoff_ms / 1000
        return False

    def _append(
        self, tp: TopicPartition, state: _FetchState, partition: Partition, data: FetchPartitionData
    ) -> None:
        records = data.records
        length = whole_batches_length(records) if len(records) else 0
        if length:
            if state.fetch_offset != partition.log_end_offset:
                raise FranzError(
                    f"offset mismatch for {tp}: fetched offset {state.fetch_offset}, "
                    f"log end offset {partition.log_end_offset}"
                )
            info = partition.append_records_to_follower(records[:length])
            if info.batch_count:
                state.fetch_offset = info.last_offset + 1
                state.last_fetched_epoch = partition.log.leader_epoch_cache.latest_epoch
                if state.last_fetched_epoch < 0:
                    state.last_fetched_epoch = None
                self.manager.replica_manager.wake_waiters(tp)
                # Kafka's updateAndMoveToEnd: a partition that got data goes last in the next
                # request, so one with a batch larger than its share is first in time and
                # gets it whole (the leader's min-one-message rule), never starved.
                self.partitions[tp] = self.partitions.pop(tp)
        partition.update_follower_high_watermark(data.high_watermark)
        if data.log_start_offset > partition.log_start_offset:
            partition.maybe_increment_follower_log_start_offset(data.log_start_offset)

    def _truncate_on_diverging_epoch(
        self,
        tp: TopicPartition,
        state: _FetchState,
        partition: Partition,
        leader_epoch: int,
        end_offset: int,
    ) -> None:
        """Kafka's ``truncateOnFetchResponse``."""
        replica_end = partition.log_end_offset
        offset = truncation_offset(partition, state.fetch_offset, leader_epoch, end_offset)
        log.info(
            "[%s] truncating %s to offset %d: the leader's epoch %d ends at %d (fetch offset "
            "%d, log end offset %d)",
            self.name,
            tp,
            offset,
            leader_epoch,
            end_offset,
            state.fetch_offset,
            replica_end,
        )
        partition.truncate_to(offset)
        state.fetch_offset = partition.log_end_offset
        latest = partition.log.leader_epoch_cache.latest_epoch
        state.last_fetched_epoch = latest if latest >= 0 else None

    def _truncate_to_high_watermark(self) -> None:
        """Partitions without leader epochs (Kafka's ``truncateToHighWatermark``)."""
        for tp, state in list(self.partitions.items()):
            if not state.truncating:
                continue
            partition = self.manager.replica_manager.partitions.get(tp)
            if partition is None:
                self.partitions.pop(tp, None)
                continue
            try:
                if state.fetch_offset < partition.log_end_offset:
                    log.info(
                        "[%s] truncating %s to its high watermark %d",
                        self.name,
                        tp,
                        state.fetch_offset,
                    )
                partition.truncate_to(state.fetch_offset)
            except KafkaStorageError as exc:
                self._mark_failed(tp, exc)
                continue
            state.fetch_offset = partition.log_end_offset
            state.truncating = False
            latest = partition.log.leader_epoch_cache.latest_epoch
            state.last_fetched_epoch = latest if latest >= 0 else None

    async def _handle_out_of_range(self, tp: TopicPartition) -> None:
        """Kafka's ``fetchOffsetAndTruncate`` (module docstring)."""
        state = self.partitions.get(tp)
        partition = self.manager.replica_manager.partitions.get(tp)
        if state is None or partition is None:
            return
        epoch = state.leader_epoch
        try:
            leader_end = await self._list_offset(tp, epoch, LATEST_TIMESTAMP)
            if leader_end is None:
                return
            state = self.partitions.get(tp)
            if state is None or state.leader_epoch != epoch:
                return
            replica_end = partition.log_end_offset
            if leader_end < replica_end:
                log.warning(
                    "[%s] reset fetch offset of %s from %d to the leader's log end offset %d",
                    self.name,
                    tp,
                    replica_end,
                    leader_end,
                )
                partition.truncate_to(leader_end)
                offset = leader_end
            else:
                leader_start = await self._list_offset(tp, epoch, EARLIEST_TIMESTAMP)
                if leader_start is None:
                    return
                state = self.partitions.get(tp)
                if state is None or state.leader_epoch != epoch:
                    return
                replica_end = partition.log_end_offset
                if leader_start > replica_end:
                    log.warning(
                        "[%s] %s: log end offset %d is below the leader's log start offset "
                        "%d; restarting the log there",
                        self.name,
                        tp,
                        replica_end,
                        leader_start,
                    )
                    partition.truncate_fully_and_start_at(leader_start)
                    offset = leader_start
                else:
                    offset = replica_end
        except KafkaStorageError as exc:
            self._mark_failed(tp, exc)
            return
        state.fetch_offset = offset
        latest = partition.log.leader_epoch_cache.latest_epoch
        state.last_fetched_epoch = latest if latest >= 0 else None

    async def _list_offset(
        self, tp: TopicPartition, leader_epoch: int, timestamp: int
    ) -> int | None:
        """The leader's offset for ``timestamp`` (LATEST: its LEO for a replica; EARLIEST:
        its log start offset), asked as a replica (Kafka's ``RemoteLeaderEndPoint``);
        None after an error (the partition then backs off)."""
        connection = await self._connect()
        version = connection.version_for(
            ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, MIN_LIST_OFFSETS_VERSION
        )
        request = build(
            request_type(ApiKey.LIST_OFFSETS, version),
            {
                "replica_id": self.config.broker_id,
                "isolation_level": 0,
                "topics": [
                    {
                        "name": tp.topic,
                        "partitions": [
                            {
                                "partition_index": tp.partition,
                                "current_leader_epoch": leader_epoch,
                                "timestamp": timestamp,
                            }
                        ],
                    }
                ],
            },
        )
        response = await connection.send(request, timeout=self.config.socket_timeout_ms / 1000)
        for topic in response.topics:
            for p in topic.partitions:
                if int(p.error_code) == 0:
                    return int(p.offset)
                self._warnings.warn(
                    f"list-offsets-{tp}",
                    "[%s] ListOffsets for %s failed with %s",
                    self.name,
                    tp,
                    _error_name(int(p.error_code)),
                )
        state = self.partitions.get(tp)
        if state is not None:
            state.delay_until = time.monotonic() + self.config.fetch_backoff_ms / 1000
        return None

    def _mark_failed(self, tp: TopicPartition, exc: Exception) -> None:
        log.warning("[%s] partition %s marked as failed: %s", self.name, tp, exc)
        self.partitions.pop(tp, None)
        self.manager.failed_partitions.add(tp)

    def _delay(self, sent: Mapping[TopicPartition, tuple[int, int]]) -> None:
        until = time.monotonic() + self.config.fetch_backoff_ms / 1000
        for tp in sent:
            state = self.partitions.get(tp)
            if state is not None:
                state.delay_until = until

    # -- the connection --------------------------------------------------------------------

    async def _connect(self) -> KafkaClientConnection:
        connection = self._connection
        if connection is not None and not connection.closed:
            return connection
        node = self.manager.metadata_cache.alive_broker_node(self.leader_id, self.config.listener)
        if node is None:
            raise ClientConnectionError(
                f"broker {self.leader_id} is not alive in the metadata cache"
            )
        connection = await KafkaClientConnection.connect(
            node.host,
            node.port,
            connect_timeout=self.config.socket_timeout_ms / 1000,
            client_id=f"broker-{self.config.broker_id}-fetcher-{self.fetcher_id}",
            request_timeout=self.config.socket_timeout_ms / 1000,
            max_in_flight=1,
        )
        self._connection = connection
        return connection

    def _close_connection(self, reason: str) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close(reason)


class ReplicaFetcherManager:
    """The fetchers of this broker, one per (leader broker, fetcher id) (Kafka's
    ``ReplicaFetcherManager``)."""

    def __init__(
        self,
        config: ReplicaFetcherConfig,
        replica_manager: ReplicaManager,
        metadata_cache: MetadataCache,
        broker_epoch: Callable[[], int],
    ) -> None:
        self.config = config
        self.replica_manager = replica_manager
        self.metadata_cache = metadata_cache
        self.broker_epoch = broker_epoch
        self.fetchers: dict[tuple[int, int], ReplicaFetcher] = {}
        #: Partitions whose own log failed while following (Kafka's ``failedPartitions``).
        self.failed_partitions: set[TopicPartition] = set()
        self._closed = False
        #: Idle fetchers being closed (a reference keeps their tasks alive).
        self._closing: set[asyncio.Task[None]] = set()

    def add_fetcher_for_partitions(
        self, states: Mapping[TopicPartition, InitialFetchState]
    ) -> None:
        """Follow each partition's leader from its initial state (Kafka's
        ``addFetcherForPartitions``); a partition already fetched from another leader moves."""
        if self._closed:
            return
        grouped: dict[
            tuple[int, int], dict[TopicPartition, tuple[uuid.UUID, InitialFetchState]]
        ] = {}
        for tp, initial in states.items():
            partition = self.replica_manager.partitions.get(tp)
            if partition is None:
                continue
            self.failed_partitions.discard(tp)
            key = (initial.leader_id, fetcher_id_for(tp, self.config.num_fetchers))
            for other_key, fetcher in self.fetchers.items():
                if other_key != key and tp in fetcher.partitions:
                    fetcher.remove_partitions([tp])
            grouped.setdefault(key, {})[tp] = (partition.topic_id, initial)
        for key, group in grouped.items():
            existing = self.fetchers.get(key)
            if existing is None:
                existing = self.fetchers[key] = ReplicaFetcher(self, *key)
                existing.start()
            existing.add_partitions(group)
        self._shutdown_idle_fetchers()

    def remove_fetcher_for_partitions(self, tps: Iterable[TopicPartition]) -> None:
        """Stop fetching ``tps`` (Kafka's ``removeFetcherForPartitions``)."""
        wanted = set(tps)
        if not wanted:
            return
        for fetcher in self.fetchers.values():
            if wanted & fetcher.partitions.keys():
                fetcher.remove_partitions(wanted)
        self.failed_partitions -= wanted
        self._shutdown_idle_fetchers()

    def _shutdown_idle_fetchers(self) -> None:
        """Kafka's ``shutdownIdleFetcherThreads``: a fetcher with no partition stops."""
        for key, fetcher in list(self.fetchers.items()):
            if not fetcher.partitions:
                del self.fetchers[key]
                task = asyncio.get_running_loop().create_task(fetcher.close())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)

    def fetch_state(self, tp: TopicPartition) -> tuple[int, int] | None:
        """(leader id, fetch offset) of a followed partition, for tests and metrics."""
        for (leader_id, _), fetcher in self.fetchers.items():
            state = fetcher.partitions.get(tp)
            if state is not None:
                return leader_id, state.fetch_offset
        return None

    async def shutdown(self) -> None:
        """Stop every fetcher (broker shutdown)."""
        self._closed = True
        fetchers, self.fetchers = list(self.fetchers.values()), {}
        for fetcher in fetchers:
            await fetcher.close()
        if self._closing:
            await asyncio.gather(*list(self._closing), return_exceptions=True)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
