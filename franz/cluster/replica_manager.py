"""The partitions this broker hosts, appends to them and long-poll wake-ups
(Kafka's ``ReplicaManager`` with its fetch purgatory).

Leadership comes from the controller: ``become_leader_or_follower`` applies a LeaderAndIsr
request's partition states (Kafka's ``becomeLeaderOrFollower``), creating the replica and its
log where needed, then ``Partition.make_leader`` or ``make_follower``. Both modes use it: the
embedded single node's own controller (``franz.controller.shell.local``, delivering in
process) and, in cluster mode, the LeaderAndIsr requests of the ZooKeeper-elected
controller.

Delayed fetches: a Fetch that found fewer than ``min_bytes`` waits on the partitions it reads
(``wait_for_appends``); every append to a partition wakes its waiters at once, so a
long-polling consumer sees a record within one event-loop turn of its append.

Leadership listeners (Kafka's ``onLeadershipChange`` callback of ``becomeLeaderOrFollower``,
and the ``groupCoordinator.onResignation`` calls of ``handleStopReplicaRequest``): objects
added with ``add_leadership_listener`` hear, after every LeaderAndIsr application, the
partitions this broker became leader of and those it became follower of (only those whose
leader or leader epoch changed), and, after StopReplica, the partitions it stopped hosting.
The group coordinator loads ``__consumer_offsets`` partitions it now leads and unloads the
others through it. Listeners run on the loop, synchronously; an exception is logged, never
propagated (one listener cannot fail a LeaderAndIsr).

Concurrency: owned by the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from franz.cluster.partition import LeaderAndIsrPartitionState, Partition
from franz.cluster.replica_fetcher import InitialFetchState, ReplicaFetcherManager
from franz.errors import (
    ApiError,
    ErrorCode,
    KafkaStorageError,
    NotLeaderOrFollowerError,
    StaleControllerEpochError,
    UnknownTopicOrPartitionError,
)
from franz.storage.files import TopicPartition
from franz.storage.log import LogAppendInfo
from franz.storage.log_manager import LogManager

__all__ = ["LeadershipListener", "ReplicaManager"]

log = logging.getLogger(__name__)


class LeadershipListener(Protocol):
    """Hears leadership changes of this broker's replicas (module docstring)."""

    def on_leadership_change(
        self, new_leaders: Sequence[Partition], new_followers: Sequence[Partition]
    ) -> None:
        """After a LeaderAndIsr: the partitions that became (or changed epoch as) leader
        here, and those that became followers (leader or epoch changed)."""
        ...

    def on_replicas_stopped(self, stopped: Sequence[tuple[TopicPartition, int]]) -> None:
        """After a StopReplica (or a deleted topic): each partition no longer hosted or
        no longer led here, with the request's leader epoch (-2: none given, as Kafka's
        ``EpochDuringDelete``; -1: no epoch)."""
        ...


class ReplicaManager:
    def __init__(
        self, log_manager: LogManager, broker_id: int, *, followers_fetch: bool = True
    ) -> None:
        self.log_manager = log_manager
        self.broker_id = broker_id
        #: False in cluster mode until replication lands: no replica fetcher, so leaders'
        #: high watermarks do not wait for followers (``Partition``'s docstring).
        self.followers_fetch = followers_fetch
        self.partitions: dict[TopicPartition, Partition] = {}
        self._waiters: dict[TopicPartition, list[asyncio.Future[None]]] = {}
        #: Set at shutdown: delayed fetches answer at once with what they have.
        self.shutting_down = False
        self._listeners: list[LeadershipListener] = []
        #: The epoch of the newest controller heard from (Kafka's
        #: ``ReplicaManager.controllerEpoch``, starting at ``InitialControllerEpoch``):
        #: requests of an older controller get STALE_CONTROLLER_EPOCH.
        self.controller_epoch = 0
        #: Cluster mode: the followers' fetchers (``franz.cluster.replica_fetcher``), set by
        #: the broker; None in embedded mode (no followers).
        self.replica_fetcher_manager: ReplicaFetcherManager | None = None

    def accept_controller_epoch(self, controller_epoch: int) -> bool:
        """Kafka's controller fencing of LeaderAndIsr, UpdateMetadata and StopReplica: False
        for an epoch older than the newest seen (the request is refused as a whole with
        STALE_CONTROLLER_EPOCH); else remember it and True."""
        if controller_epoch < self.controller_epoch:
            return False
        self.controller_epoch = controller_epoch
        return True

    def add_leadership_listener(self, listener: LeadershipListener) -> None:
        """Tell ``listener`` about every leadership change from now on."""
        self._listeners.append(listener)

    def _notify_leadership(
        self, new_leaders: Sequence[Partition], new_followers: Sequence[Partition]
    ) -> None:
        if not (new_leaders or new_followers):
            return
        for listener in list(self._listeners):
            try:
                listener.on_leadership_change(new_leaders, new_followers)
            except Exception:
                log.exception("leadership listener %r failed", listener)

    def _notify_stopped(self, stopped: Sequence[tuple[TopicPartition, int]]) -> None:
        if not stopped:
            return
        for listener in list(self._listeners):
            try:
                listener.on_replicas_stopped(stopped)
            except Exception:
                log.exception("leadership listener %r failed", listener)

    def become_leader_or_follower(
        self,
        states: Iterable[LeaderAndIsrPartitionState],
        topic_ids: Mapping[str, uuid.UUID],
    ) -> dict[TopicPartition, ApiError]:
        """Apply LeaderAndIsr partition states (Kafka's ``becomeLeaderOrFollower``); return
        the partitions that failed, each with its error (the response's non-NONE codes).

        Per partition, as Kafka: a replica whose log dir failed gets KAFKA_STORAGE_ERROR
        first (``HostedPartition.Offline``; the controller then takes it offline); then a
        leader epoch older than the replica's, or equal to it,
        gets STALE_CONTROLLER_EPOCH and is not applied (Kafka 3.9's controller bumps the
        leader epoch with every leader or ISR change it sends; a new controller re-sending
        the current state is ignored); then a state that does not list this broker among its
        replicas gets UNKNOWN_TOPIC_OR_PARTITION; a log that cannot be created (every log dir
        offline, ENOSPC) KAFKA_STORAGE_ERROR, and its replica is not created. The others
        become leader (``state.leader`` is this broker) or follower. The request's controller
        epoch is checked before, by the caller (``accept_controller_epoch``).

        ``topic_ids``: the topic id of each topic in ``states`` (LeaderAndIsr v5+), kept in
        the log's ``partition.metadata``; the zero UUID (v0-4 carry none) writes none, as
        Kafka's ``topicIdFromRequest``. The log's config is the log manager's for the
        topic (``LogManager.topic_config``).
        """
        errors: dict[TopicPartition, ApiError] = {}
        new_leaders: list[Partition] = []
        new_followers: list[Partition] = []
        for state in states:
            tp = TopicPartition(state.topic_name, state.partition_index)
            partition = self.partitions.get(tp)
            if partition is not None and partition.log.offline:
                # Kafka's HostedPartition.Offline, checked before anything else: the
                # controller learns from this code that the replica's log dir failed.
                errors[tp] = KafkaStorageError(
                    f"the log dir of {tp} ({partition.log.dir.parent}) is offline"
                )
                continue
            if partition is not None and state.leader_epoch <= partition.leader_epoch:
                errors[tp] = StaleControllerEpochError(
                    f"LeaderAndIsr for {tp} with leader epoch {state.leader_epoch}, not newer "
                    f"than the current {partition.leader_epoch}"
                )
                continue
            if self.broker_id not in state.replicas:
                errors[tp] = UnknownTopicOrPartitionError(
                    f"broker {self.broker_id} is not a replica of {tp}: {list(state.replicas)}"
                )
                continue
            if partition is None:
                try:
                    partition = self._create_partition(tp, topic_ids[state.topic_name])
                except KafkaStorageError as exc:
                    errors[tp] = exc
                    continue
            if state.leader == self.broker_id:
                epoch_before = partition.leader_epoch
                if partition.make_leader(state) or state.leader_epoch != epoch_before:
                    new_leaders.append(partition)
            elif partition.make_follower(state):
                new_followers.append(partition)
        self._update_fetchers(new_leaders, new_followers)
        self._notify_leadership(new_leaders, new_followers)
        return errors

    def _update_fetchers(
        self, new_leaders: Sequence[Partition], new_followers: Sequence[Partition]
    ) -> None:
        """Kafka's ``makeLeaders`` / ``makeFollowers``: a new leader stops fetching; a new
        follower (leader or epoch changed) restarts its fetcher from its LEO, or from its HW
        when its log has no leader epoch (it truncates there first: ``initialFetchOffset``).
        Its old fetch state is replaced at once (a response to a fetch in flight is dropped:
        its epoch differs), so there is no separate removal first as in Kafka."""
        fetchers = self.replica_fetcher_manager
        if fetchers is None:
            return
        if new_leaders:
            fetchers.remove_fetcher_for_partitions(p.topic_partition for p in new_leaders)
        if not new_followers:
            return
        for partition in new_followers:
            self._wake(partition.topic_partition)  # delayed fetches answer the change now
        if self.shutting_down:
            return
        states: dict[TopicPartition, InitialFetchState] = {}
        for partition in new_followers:
            if partition.leader_id < 0:
                continue  # no leader (offline): nothing to fetch until the next LeaderAndIsr
            latest = partition.log.leader_epoch_cache.latest_epoch
            states[partition.topic_partition] = InitialFetchState(
                leader_id=partition.leader_id,
                leader_epoch=partition.leader_epoch,
                fetch_offset=partition.log_end_offset if latest >= 0 else partition.high_watermark,
                last_fetched_epoch=latest if latest >= 0 else None,
            )
        fetchers.add_fetcher_for_partitions(states)

    def _create_partition(self, tp: TopicPartition, topic_id: uuid.UUID) -> Partition:
        partition_log = self.log_manager.get_or_create_log(
            tp, topic_id=topic_id if topic_id.int else None
        )
        if partition_log.offline:
            raise KafkaStorageError(f"the log dir of {tp} ({partition_log.dir.parent}) is offline")
        partition = Partition(
            tp,
            topic_id,
            partition_log,
            broker_id=self.broker_id,
            followers_fetch=self.followers_fetch,
        )
        self.partitions[tp] = partition
        return partition

    def remove_partition(self, tp: TopicPartition, *, delete: bool, leader_epoch: int = -2) -> None:
        """Stop hosting ``tp`` (``delete``: remove its log too) and tell the leadership
        listeners."""
        partition = self.partitions.pop(tp, None)
        if self.replica_fetcher_manager is not None:
            self.replica_fetcher_manager.remove_fetcher_for_partitions([tp])
        self._wake(tp)
        if delete:
            self.log_manager.delete_log(tp)
        if partition is not None:
            self._notify_stopped([(tp, leader_epoch)])

    def stop_replicas(
        self, partitions: Mapping[TopicPartition, tuple[int, bool]]
    ) -> dict[TopicPartition, ErrorCode]:
        """Apply a StopReplica's partitions (Kafka's ``ReplicaManager.stopReplicas``), each
        ``tp -> (leader_epoch, delete_partition)``, after the controller epoch was accepted.

        Per partition, as Kafka: a request leader epoch of -2 (``EpochDuringDelete``), -1
        (``NoEpoch``), equal to the replica's or newer stops it (the controller's StopReplica
        of a follower at controlled shutdown carries the current epoch); an older one is
        FENCED_LEADER_EPOCH. A partition not hosted here is stopped all the same (its log,
        if any, deleted when asked): NONE. Without ``delete_partition`` the replica stays
        hosted and only its fetcher stops, as Kafka. A log that
        cannot be deleted (its dir failed): KAFKA_STORAGE_ERROR.
        """
        errors: dict[TopicPartition, ErrorCode] = {}
        for tp, (leader_epoch, delete) in partitions.items():
            partition = self.partitions.get(tp)
            if partition is not None and 0 <= leader_epoch < partition.leader_epoch:
                log.info(
                    "ignoring StopReplica for %s: leader epoch %d is older than %d",
                    tp,
                    leader_epoch,
                    partition.leader_epoch,
                )
                errors[tp] = ErrorCode.FENCED_LEADER_EPOCH
                continue
            if self.replica_fetcher_manager is not None:
                self.replica_fetcher_manager.remove_fetcher_for_partitions([tp])
            if delete:
                try:
                    if partition is not None:
                        self.remove_partition(tp, delete=True, leader_epoch=leader_epoch)
                    elif self.log_manager.get_log(tp) is not None:
                        self.log_manager.delete_log(tp)
                except OSError as exc:
                    log.error("StopReplica could not delete %s: %s", tp, exc)
                    errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
                    continue
            errors[tp] = ErrorCode.NONE
        return errors

    def get_partition(self, tp: TopicPartition) -> Partition:
        """The hosted partition, or ``UnknownTopicOrPartitionError``."""
        partition = self.partitions.get(tp)
        if partition is None:
            raise UnknownTopicOrPartitionError(
                f"This server does not host this topic-partition: {tp}"
            )
        if not partition.is_leader:
            raise NotLeaderOrFollowerError(f"broker {self.broker_id} is not the leader of {tp}")
        return partition

    def append(
        self, tp: TopicPartition, records: bytes | memoryview, *, from_client: bool = True
    ) -> LogAppendInfo:
        """Append to the leader replica and wake fetchers waiting on ``tp``."""
        info = self.get_partition(tp).append_records_to_leader(records, from_client=from_client)
        if info.batch_count:
            self._wake(tp)
        return info

    def wake_waiters(self, tp: TopicPartition) -> None:
        """A follower appended to ``tp``: its delayed fetches read again."""
        self._wake(tp)

    def _wake(self, tp: TopicPartition) -> None:
        waiters = self._waiters.pop(tp, None)
        if waiters:
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def begin_shutdown(self) -> None:
        """Answer every delayed fetch now (graceful shutdown must not wait out long polls)."""
        self.shutting_down = True
        for tp in list(self._waiters):
            self._wake(tp)

    async def wait_for_appends(self, tps: Iterable[TopicPartition], timeout_s: float) -> bool:
        """Wait until one of ``tps`` gets an append, or ``timeout_s``; True if woken."""
        if timeout_s <= 0 or self.shutting_down:
            return False
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        keys = list(tps)
        for tp in keys:
            self._waiters.setdefault(tp, []).append(waiter)
        try:
            await asyncio.wait_for(waiter, timeout_s)
            return True
        except TimeoutError:
            return False
        finally:
            for tp in keys:
                waiters = self._waiters.get(tp)
                if waiters is not None:
                    with contextlib.suppress(ValueError):
                        waiters.remove(waiter)
                    if not waiters:
                        del self._waiters[tp]
