"""One replica fetcher task (Kafka's ``ReplicaFetcherThread``): the partitions one leader
serves this broker, fetched over one connection (``franz.cluster.replica_fetcher`` has the
rules and the Kafka behaviour followed).

Concurrency: runs on the broker's event loop; partition state is read and written between
awaits only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from franz.cluster.fetch_session_handler import (
    FetchRequestData,
    FetchSessionHandler,
    PartitionData,
)
from franz.cluster.fetch_state import (
    EARLIEST_TIMESTAMP,
    FETCH_VERSION,
    FIRST_TOPIC_ID_VERSION,
    LATEST_TIMESTAMP,
    LIST_OFFSETS_VERSION,
    MIN_FETCH_VERSION,
    MIN_LIST_OFFSETS_VERSION,
    UNDEFINED_EPOCH,
    InitialFetchState,
    truncation_offset,
    whole_batches_length,
)
from franz.errors import ErrorCode, FranzError, KafkaStorageError
from franz.network.client import ClientConnectionError, KafkaClientConnection
from franz.protocol.api_keys import ApiKey
from franz.protocol.client import ClientProtocolError
from franz.protocol.fetch_response import FetchPartitionData, FetchResponseDecodeError
from franz.protocol.messages import build, request_type
from franz.storage.files import TopicPartition

if TYPE_CHECKING:
    from franz.cluster.partition import Partition
    from franz.cluster.replica_fetcher import ReplicaFetcherManager

__all__ = ["ReplicaFetcher"]

log = logging.getLogger("franz.cluster.replica_fetcher")

_WARN_INTERVAL_S: Final = 10.0


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
    #: The leader's HW in the last response appended from (-1: none yet); the follower's
    #: lag (Kafka's FetcherLagMetrics ConsumerLag) is computed from it when scraped.
    leader_high_watermark: int = -1


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
        #: Set by ``close`` before it cancels the task: the loop ends even if a cancel is lost.
        self._stopping = False
        self._warnings = _RateLimitedWarnings()
        #: The incremental fetch session with the leader (KIP-227).
        self._session = FetchSessionHandler()
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
        self._stopping = True
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._close_connection("fetcher stopped")
        log.info("[%s] stopped", self.name)

    # -- the task --------------------------------------------------------------------------

    async def _run(self) -> None:
        backoff = self.config.fetch_backoff_ms / 1000
        while not self._stopping:
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
        throttled = self._throttled(ready)
        if throttled:
            ready = {tp: state for tp, state in ready.items() if tp not in throttled}
        request_data = self._session.build(
            {tp: self._partition_data(tp, state) for tp, state in ready.items()}
        )
        if not request_data.session_partitions and not request_data.to_forget:
            # Kafka's buildFetch: nothing to fetch and nothing to forget, no request.
            delays = [
                s.delay_until - now
                for tp, s in self.partitions.items()
                if not s.fenced and not s.truncating and tp not in throttled
            ]
            if throttled:
                delays.append(self.config.fetch_backoff_ms / 1000)
            timeout = min(delays) if delays else None
            self._changed.clear()
            # asyncio.timeout, not wait_for: Python 3.11's wait_for returns the result and
            # swallows a cancel that lands as the event is set (remove_partitions then close):
            # the fetcher then waited forever and its broker's SIGTERM hung (CI, load ~10).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._changed.wait()
            return
        connection = await self._connect()
        version = connection.version_for(ApiKey.FETCH, FETCH_VERSION, MIN_FETCH_VERSION)
        if version >= FIRST_TOPIC_ID_VERSION and not request_data.can_use_topic_ids:
            # A partition whose LeaderAndIsr carried no topic id (v0-4): fetch by name, as
            # Kafka's fetcher does when a topic id is missing.
            version = FIRST_TOPIC_ID_VERSION - 1
        sent = {
            tp: (data.fetch_offset, data.current_leader_epoch)
            for tp, data in request_data.session_partitions.items()
        }
        request = self._fetch_request(version, request_data)
        timeout = (self.config.socket_timeout_ms + self.config.fetch_wait_max_ms) / 1000
        response = await connection.fetch(request, timeout=timeout)
        self.fetches += 1
        names = self._session.session_topic_names
        by_name = version < FIRST_TOPIC_ID_VERSION
        partitions = [
            (TopicPartition(name, p.partition_index), p)
            for topic in response.responses
            for name in (topic.name if by_name else names.get(topic.topic_id, ""),)
            for p in topic.partitions
        ]
        if not self._session.handle_response(
            response.error_code,
            response.session_id,
            (tp for tp, _ in partitions),
            () if by_name else (topic.topic_id for topic in response.responses),
        ):
            await self._on_session_refused(response.error_code, sent)
            return
        out_of_range: list[TopicPartition] = []
        for tp, data in partitions:
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

    async def _on_session_refused(
        self, error_code: int, sent: Mapping[TopicPartition, tuple[int, int]]
    ) -> None:
        """A response not processed (``FetchSessionHandler.handle_response`` said no): a
        session error starts a new session at once (Kafka's fetcher gets an empty answer
        and fetches again); any other top-level error backs the fetcher off
        ``replica.fetch.backoff.ms``; a response that does not match the session is
        dropped, and the next request is a full one."""
        if error_code in (
            ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
            ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        ):
            log.info(
                "[%s] broker %d answered %s; starting a new fetch session",
                self.name,
                self.leader_id,
                _error_name(error_code),
            )
            return
        if error_code:
            self._warnings.warn(
                f"top-{error_code}",
                "[%s] fetch from broker %d failed with error %s",
                self.name,
                self.leader_id,
                _error_name(error_code),
            )
            self._delay(sent)
            await asyncio.sleep(self.config.fetch_backoff_ms / 1000)
            return
        log.info(
            "[%s] broker %d sent a fetch response that does not match the fetch session; "
            "the next fetch is a full one",
            self.name,
            self.leader_id,
        )

    def _throttled(self, ready: Mapping[TopicPartition, _FetchState]) -> frozenset[TopicPartition]:
        """The ready partitions the follower's replication throttle leaves out now (Kafka's
        ``shouldFollowerThrottle``: quota exceeded, throttled here, not in sync)."""
        quota = self.manager.quota
        if not ready or not quota.is_quota_exceeded():
            return frozenset()
        partitions = self.manager.replica_manager.partitions
        return frozenset(
            tp
            for tp, state in ready.items()
            if not 0 <= state.leader_high_watermark <= state.fetch_offset
            and (partition := partitions.get(tp)) is not None
            and quota.is_throttled(tp, partition.log.config)
        )

    def _partition_data(self, tp: TopicPartition, state: _FetchState) -> PartitionData:
        partition = self.manager.replica_manager.partitions.get(tp)
        return PartitionData(
            topic_id=state.topic_id,
            fetch_offset=state.fetch_offset,
            log_start_offset=partition.log_start_offset if partition is not None else -1,
            max_bytes=self.config.fetch_max_bytes,
            current_leader_epoch=state.leader_epoch,
            last_fetched_epoch=(
                UNDEFINED_EPOCH if state.last_fetched_epoch is None else state.last_fetched_epoch
            ),
        )

    def _fetch_request(self, version: int, data: FetchRequestData) -> Any:
        """The kio Fetch request for ``data`` (the session's metadata, the partitions to
        send and to forget)."""
        by_name = version < FIRST_TOPIC_ID_VERSION
        topics: dict[tuple[str, uuid.UUID], list[dict[str, Any]]] = {}
        for tp, p in data.to_send.items():
            topics.setdefault((tp.topic, p.topic_id), []).append(
                {
                    "partition": tp.partition,
                    "current_leader_epoch": p.current_leader_epoch,
                    "fetch_offset": p.fetch_offset,
                    "last_fetched_epoch": p.last_fetched_epoch,
                    "log_start_offset": p.log_start_offset,
                    "partition_max_bytes": p.max_bytes,
                }
            )
        forgotten: dict[tuple[str, uuid.UUID], list[int]] = {}
        for tp, topic_id in data.to_forget:
            forgotten.setdefault((tp.topic, topic_id), []).append(tp.partition)
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
                "session_id": data.metadata.session_id,
                "session_epoch": data.metadata.epoch,
                "topics": [
                    {"topic": name, "topic_id": topic_id, "partitions": partitions}
                    for (name, topic_id), partitions in topics.items()
                ],
                "forgotten_topics_data": [
                    {"topic": name if by_name else "", "topic_id": topic_id, "partitions": ps}
                    for (name, topic_id), ps in forgotten.items()
                ],
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
            # Kafka's ReplicaFetcherThread.processPartitionData: ReplicationBytesInPerSec.
            self.manager.replica_manager.topic_stats.replication_bytes_in += length
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
        state.leader_high_watermark = data.high_watermark
        partition.update_follower_high_watermark(data.high_watermark)
        if data.log_start_offset > partition.log_start_offset:
            partition.maybe_increment_follower_log_start_offset(data.log_start_offset)
        if self.manager.quota.is_throttled(tp, partition.log.config):
            self.manager.quota.record(len(records))  # Kafka's processPartitionData

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
            ssl=self.config.ssl_context,
            client_id=f"broker-{self.config.broker_id}-fetcher-{self.fetcher_id}",
            request_timeout=self.config.socket_timeout_ms / 1000,
            max_in_flight=1,
        )
        self._connection = connection
        return connection

    def _close_connection(self, reason: str) -> None:
        # A request may have been lost with the connection: its session epoch is unknown,
        # so the next request closes the session and starts a new one (Kafka's handleError).
        self._session.handle_error()
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close(reason)


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
