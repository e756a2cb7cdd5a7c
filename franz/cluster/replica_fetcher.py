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
2. one Fetch for the partitions ready to fetch, in an incremental fetch session (KIP-227,
   ``franz.cluster.fetch_session_handler``: after the first, full request only the
   partitions whose position changed are sent, and the leader answers only those with
   news; a throttled partition over its quota is left out), at the version Kafka
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

Replication throttle (KIP-73, ``franz.cluster.replication_quota``): while this broker's
``follower.replication.throttled.rate`` is exceeded, a partition its topic's
``follower.replication.throttled.replicas`` lists with this broker is left out of the fetch
unless it is in sync (its lag, the leader's HW in the last response minus the fetch offset,
known and 0; Kafka's ``shouldFollowerThrottle``); a fetch session forgets it meanwhile. When
nothing is left to fetch the fetcher waits ``replica.fetch.backoff.ms`` (Kafka's empty
``buildFetch``). The data appended for throttled partitions, in sync or not, is counted.

A failed request (connection refused or lost, timeout after ``replica.socket.timeout.ms``)
closes the connection and the whole fetcher backs off ``replica.fetch.backoff.ms`` before
reconnecting, as ``handlePartitionsWithErrors`` delays every partition.

Logging: one INFO line when a fetcher starts or stops, WARN for errors at most once per
``_WARN_INTERVAL_S`` per fetcher and kind (a leader that is down for a minute is one line,
with a count of what was suppressed).

Modules: this one holds the manager (the interface the ReplicaManager uses);
``franz.cluster.fetcher_thread`` one fetcher task; ``franz.cluster.fetch_state`` the fetch
state, the config and the pure rules (fetcher ids, truncation offsets), re-exported here.

Concurrency: everything runs on the broker's event loop. Partition state is only read or
written between awaits, so a LeaderAndIsr applied while a fetch is in flight is seen when
the response is processed (the fetch offset or epoch differs: the response is dropped).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from franz.clock import SystemClock
from franz.cluster.fetch_state import (
    InitialFetchState,
    ReplicaFetcherConfig,
    fetcher_id_for,
    java_string_hash,
    truncation_offset,
    whole_batches_length,
)
from franz.cluster.fetcher_thread import ReplicaFetcher
from franz.cluster.replication_quota import ReplicationQuota
from franz.storage.files import TopicPartition

if TYPE_CHECKING:
    from franz.cluster.replica_manager import ReplicaManager
    from franz.metadata.cache import MetadataCache

__all__ = [
    "InitialFetchState",
    "ReplicaFetcher",
    "ReplicaFetcherConfig",
    "ReplicaFetcherManager",
    "fetcher_id_for",
    "java_string_hash",
    "truncation_offset",
    "whole_batches_length",
]


class ReplicaFetcherManager:
    """The fetchers of this broker, one per (leader broker, fetcher id) (Kafka's
    ``ReplicaFetcherManager``)."""

    def __init__(
        self,
        config: ReplicaFetcherConfig,
        replica_manager: ReplicaManager,
        metadata_cache: MetadataCache,
        broker_epoch: Callable[[], int],
        *,
        quota: ReplicationQuota | None = None,
    ) -> None:
        self.config = config
        #: The follower's replication throttle (``franz.cluster.replication_quota``).
        self.quota = (
            quota
            if quota is not None
            else ReplicationQuota(
                SystemClock(), config.broker_id, "follower_replication_throttled_replicas"
            )
        )
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
