"""The partitions this broker hosts, appends to them and long-poll wake-ups
(Kafka's ``ReplicaManager`` with its fetch purgatory).

Leadership comes from the controller: ``become_leader_or_follower`` applies a LeaderAndIsr
request's partition states (Kafka's ``becomeLeaderOrFollower``), creating the replica and its
log where needed, then ``Partition.make_leader`` or ``make_follower``. Both modes use it: the
embedded single node's own controller (``franz.controller.shell.local``, delivering in
process) and, in cluster mode, the LeaderAndIsr requests of the ZooKeeper-elected
controller.

Delayed fetches (Kafka's fetch purgatory, keyed by partition): a Fetch that found fewer than
``min_bytes`` waits on the partitions it reads (``watch_appends`` in the step of its read, as
Kafka's ``tryCompleteElseWatch``, then ``wait_for_appends``). A follower's wakes on
every append to a partition it replicates; a consumer's when the partition's high watermark
advances (on the append itself when the ISR is this broker alone, so a long-polling consumer
sees a record within one event-loop turn of its append; else when a follower's fetch or an
ISR change moves it).

Delayed produce (Kafka's ``DelayedProduce``): an acks=all Produce whose batches are not yet
below the high watermark waits in ``wait_for_replication`` until each partition's HW reaches
its required offset (``Partition.check_enough_replicas_reach_offset``: NONE, or
NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below ``min.insync.replicas``), the
request's timeout (REQUEST_TIMED_OUT) or the loss of leadership (NOT_LEADER_OR_FOLLOWER).
Produces that are complete at once (ISR = {self}) create nothing. They are tried again
whenever the HW may have moved: a follower's fetch, an append, an ISR change or a refused
one (``Partition``), and an UpdateMetadata that drops a follower's broker
(``on_brokers_not_alive``).

ISR expiration (Kafka's ``isr-expiration`` task): every ``replica.lag.time.max.ms / 2`` the
leaders with followers look for out-of-sync ones (``Partition.maybe_shrink_isr``) and, unlike
Kafka, at their HW again (``maybe_shrink_isrs`` says why), ``run_isr_expiration``.

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
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from franz.clock import Clock, SystemClock
from franz.cluster.partition import (
    DEFAULT_REPLICA_LAG_TIME_MAX_MS,
    AlterPartitionSubmitter,
    LeaderAndIsrPartitionState,
    Partition,
)
from franz.cluster.replica_fetcher import InitialFetchState, ReplicaFetcherManager
from franz.errors import (
    ApiError,
    ErrorCode,
    KafkaStorageError,
    NotLeaderOrFollowerError,
    StaleControllerEpochError,
    UnknownTopicOrPartitionError,
    error_code_for,
)
from franz.metrics.traffic import BrokerTopicStats
from franz.storage.files import TopicPartition
from franz.storage.log import LogAppendInfo
from franz.storage.log_manager import LogManager
from franz.storage.verification import VerificationGuard

if TYPE_CHECKING:
    from franz.cluster.alter_log_dirs import ReplicaAlterLogDirsManager

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
        self,
        log_manager: LogManager,
        broker_id: int,
        *,
        clock: Clock | None = None,
        replica_lag_time_max_ms: int = DEFAULT_REPLICA_LAG_TIME_MAX_MS,
        alter_partition_manager: AlterPartitionSubmitter | None = None,
        is_replica_isr_eligible: Callable[[int], bool] | None = None,
    ) -> None:
        self.log_manager = log_manager
        self.broker_id = broker_id
        self.clock: Clock = clock or SystemClock()
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        #: Set by the broker in cluster mode (i-alter's ``AlterPartitionManager``).
        self.alter_partition_manager = alter_partition_manager
        self.is_replica_isr_eligible = is_replica_isr_eligible
        #: Followers' delayed fetches, woken by appends.
        self._follower_waiters: dict[TopicPartition, list[asyncio.Future[None]]] = {}
        #: Delayed acks=all produces: per partition, (required offset, future of the error).
        self._delayed_produce: dict[
            TopicPartition, list[tuple[int, asyncio.Future[ErrorCode]]]
        ] = {}
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
        #: Log-dir moves (``franz.cluster.alter_log_dirs``), set by the broker.
        self.alter_log_dirs_manager: ReplicaAlterLogDirsManager | None = None
        #: The counts of Kafka's IsrExpandsPerSec, IsrShrinksPerSec and FailedIsrUpdatesPerSec
        #: meters (this broker's ISR changes as a leader; ``franz.metrics`` exports them).
        self.isr_expands = 0
        self.isr_shrinks = 0
        self.failed_isr_updates = 0
        #: Kafka's ``BrokerTopicStats`` (``franz.metrics.traffic``): leader appends count here.
        self.topic_stats = BrokerTopicStats()

    def mark_isr_expand(self) -> None:
        self.isr_expands += 1

    def mark_isr_shrink(self) -> None:
        self.isr_shrinks += 1

    def mark_failed(self) -> None:
        self.failed_isr_updates += 1

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
        applied: list[Partition] = []
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
            applied.append(partition)
            if state.leader == self.broker_id:
                epoch_before = partition.leader_epoch
                if partition.make_leader(state) or state.leader_epoch != epoch_before:
                    new_leaders.append(partition)
                # Kafka's makeLeader then tryCompleteDelayedRequests: the controller's new ISR
                # (a dead follower removed) may let the HW, and acks=all produces, move on.
                self.on_high_watermark_increment(partition)
            else:
                if partition.make_follower(state):
                    new_followers.append(partition)
                self._complete_delayed_produce(tp)
                self._wake(tp)
        self._update_fetchers(new_leaders, new_followers)
        if self.alter_log_dirs_manager is not None:
            self.alter_log_dirs_manager.maybe_add_log_dir_fetchers(applied)
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
            clock=self.clock,
            replica_lag_time_max_ms=self.replica_lag_time_max_ms,
            alter_partition_manager=self.alter_partition_manager,
            is_replica_isr_eligible=self.is_replica_isr_eligible,
        )
        partition.on_high_watermark_increment = self.on_high_watermark_increment
        partition.alter_partition_listener = self
        self.partitions[tp] = partition
        return partition

    def remove_partition(self, tp: TopicPartition, *, delete: bool, leader_epoch: int = -2) -> None:
        """Stop hosting ``tp`` (``delete``: remove its log too) and tell the leadership
        listeners."""
        partition = self.partitions.pop(tp, None)
        if self.replica_fetcher_manager is not None:
            self.replica_fetcher_manager.remove_fetcher_for_partitions([tp])
        if self.alter_log_dirs_manager is not None:
            self.alter_log_dirs_manager.forget(tp)
        self._wake(tp)
        self._complete_delayed_produce(tp)
        if delete:
            self.log_manager.delete_log(tp)
            # Kafka's maybeRemoveTopicMetrics: the topic's meters go with its last partition
            # here (the scan only for a topic that has any).
            if tp.topic in self.topic_stats.topics and not any(
                t.topic == tp.topic for t in self.partitions
            ):
                self.topic_stats.remove_topic(tp.topic)
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
            if self.alter_log_dirs_manager is not None:
                self.alter_log_dirs_manager.remove_fetcher_for_partitions([tp])
            if delete:
                try:
                    if partition is not None:
                        self.remove_partition(tp, delete=True, leader_epoch=leader_epoch)
                    elif (
                        self.log_manager.get_log(tp) is not None
                        or self.log_manager.get_future_log(tp) is not None
                    ):
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
        self,
        tp: TopicPartition,
        records: bytes | memoryview,
        *,
        from_client: bool = True,
        required_acks: int = 1,
        verification_guard: VerificationGuard | None = None,
    ) -> LogAppendInfo:
        """Append to the leader replica; wake followers waiting on ``tp``, and consumers and
        delayed produces if the HW moved. ``verification_guard``: KIP-890's, from
        ``maybe_start_transaction_verification``."""
        stats = self.topic_stats.produce_request(tp.topic)
        try:
            partition = self.get_partition(tp)
            hw = partition.log.high_watermark
            info = partition.append_records_to_leader(
                records,
                from_client=from_client,
                required_acks=required_acks,
                verification_guard=verification_guard,
            )
        except Exception as exc:
            # Kafka's appendToLocalLog / processFailedRecord (franz.metrics.traffic).
            code = error_code_for(exc)
            if code == ErrorCode.MESSAGE_TOO_LARGE:
                self.topic_stats.rejected(stats, len(records))
            self.topic_stats.produce_failed(stats, code)
            raise
        if info.first_offset >= 0:
            # LogAppendInfo.numMessages: a retried duplicate counts again, as in Kafka.
            self.topic_stats.appended(stats, len(records), info.last_offset - info.first_offset + 1)
        if info.batch_count:
            if self._follower_waiters:
                self._wake_followers(tp)
            if partition.log.high_watermark != hw:
                # Kafka's appendRecordsToLeader: tryCompleteDelayedRequests when the HW moved
                # (a follower no longer caught up stops holding it: its produces are done).
                self.on_high_watermark_increment(partition)
        return info

    def maybe_start_transaction_verification(
        self, tp: TopicPartition, producer_id: int, sequence: int, epoch: int
    ) -> VerificationGuard:
        """KIP-890 (Kafka's ``Partition.maybeStartTransactionVerification``): the guard for
        a transactional append to ``tp`` (``SENTINEL``: the producer's transaction is already
        ongoing there). ``UnknownTopicOrPartitionError`` / ``NotLeaderOrFollowerError``."""
        return self.get_partition(tp).log.maybe_start_transaction_verification(
            producer_id, sequence, epoch
        )

    def wake_waiters(self, tp: TopicPartition) -> None:
        """A follower appended to ``tp``: its delayed fetches read again."""
        self._wake(tp)

    def on_high_watermark_increment(self, partition: Partition) -> None:
        """The HW of ``partition`` moved outside an append: wake its consumers and try its
        delayed produces (Kafka's ``tryCompleteDelayedRequests``)."""
        tp = partition.topic_partition
        self._wake(tp)
        self._try_complete_delayed_produce(partition)

    def on_brokers_not_alive(self, broker_ids: Collection[int]) -> None:
        """An UpdateMetadata no longer lists ``broker_ids`` among the live brokers: the
        leaders they follow look at their HW again, and wake what waits on it.

        A follower that is caught up but not in the ISR holds the HW while its broker is
        alive (``Partition.maybe_increment_leader_hw``, Kafka's
        ``shouldWaitForReplicaToJoinIsr``, ``isReplicaIsrEligible`` being ``hasAliveBroker``
        in ZooKeeper mode). A broker that stopped after a controlled shutdown is such a
        follower of the partitions it led: it fetched from their new leaders until it stopped
        its fetchers. Kafka 3.9 computes the HW again only on a follower's fetch that moves
        its log end offset, an append or an ISR change, not on UpdateMetadata; when every
        in-flight produce of a producer waits for that HW and the other followers are caught
        up, none of these comes, and the produces would wait out their timeout
        (``request.timeout.ms``, 30 s). Here the leaders look at once (a Franz addition)."""
        gone = frozenset(broker_ids)
        for partition in list(self.partitions.values()):
            if (
                partition.is_leader
                and not gone.isdisjoint(partition.remote_replicas)
                and partition.maybe_increment_leader_hw()
            ):
                self.on_high_watermark_increment(partition)

    def update_follower_fetch_state(
        self,
        partition: Partition,
        replica_id: int,
        fetch_offset: int,
        log_start_offset: int,
        leader_end_offset: int,
        broker_epoch: int = -1,
    ) -> None:
        """A follower's fetch of ``partition`` (the Fetch handler's follower path)."""
        if partition.update_follower_fetch_state(
            replica_id,
            fetch_offset,
            log_start_offset,
            self.clock.wall_ms(),
            leader_end_offset,
            broker_epoch,
        ):
            self.on_high_watermark_increment(partition)

    # -- delayed produce -------------------------------------------------------------------

    def replication_done(self, tp: TopicPartition, required_offset: int) -> ErrorCode | None:
        """The outcome of an acks=all append of ``tp`` up to ``required_offset`` (last
        offset + 1) if already decided, else None (the produce must wait)."""
        partition = self.partitions.get(tp)
        if partition is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        done, error = partition.check_enough_replicas_reach_offset(required_offset)
        return error if done else None

    async def wait_for_replication(
        self, required: Mapping[TopicPartition, int], timeout_ms: int
    ) -> dict[TopicPartition, ErrorCode]:
        """Wait for each partition's HW to reach its required offset (module docstring);
        partitions still waiting after ``timeout_ms`` get REQUEST_TIMED_OUT."""
        loop = asyncio.get_running_loop()
        futures: dict[TopicPartition, asyncio.Future[ErrorCode]] = {}
        for tp, offset in required.items():
            future: asyncio.Future[ErrorCode] = loop.create_future()
            futures[tp] = future
            self._delayed_produce.setdefault(tp, []).append((offset, future))
            # The HW may have moved between the append and now.
            outcome = self.replication_done(tp, offset)
            if outcome is not None:
                future.set_result(outcome)
        try:
            pending = [f for f in futures.values() if not f.done()]
            if pending and not self.shutting_down:
                await asyncio.wait(pending, timeout=max(timeout_ms, 0) / 1000)
        finally:
            for tp, future in futures.items():
                entries = self._delayed_produce.get(tp)
                if entries is not None:
                    entries[:] = [e for e in entries if e[1] is not future]
                    if not entries:
                        del self._delayed_produce[tp]
        return {
            tp: future.result() if future.done() else ErrorCode.REQUEST_TIMED_OUT
            for tp, future in futures.items()
        }

    def _try_complete_delayed_produce(self, partition: Partition) -> None:
        entries = self._delayed_produce.get(partition.topic_partition)
        if not entries:
            return
        for offset, future in entries:
            if future.done():
                continue
            done, error = partition.check_enough_replicas_reach_offset(offset)
            if done:
                future.set_result(error)

    def _complete_delayed_produce(
        self, tp: TopicPartition, error: ErrorCode = ErrorCode.NOT_LEADER_OR_FOLLOWER
    ) -> None:
        for _offset, future in self._delayed_produce.get(tp, ()):
            if not future.done():
                future.set_result(error)

    # -- ISR expiration --------------------------------------------------------------------

    def maybe_shrink_isrs(self) -> None:
        """One round of Kafka's ``maybeShrinkIsr`` over the leaders with followers, and of
        ``maybeIncrementLeaderHW``.

        The second is Franz's: the HW also waits for a follower outside the ISR that is
        caught up (within ``replica.lag.time.max.ms``) and ISR-eligible (alive), and both
        lapse with time or an UpdateMetadata, events on which Kafka computes nothing. Kafka
        looks at the HW again on the next append or follower fetch; an idempotent client
        with one produce in flight per partition (kafka-python, aiokafka) sends no further
        append while it waits, so without this its acks=all produce would wait for its
        timeout after such a follower stopped (a broker shutting down). The HW rule is
        Kafka's; only when it is applied differs."""
        now = self.clock.wall_ms()
        for partition in list(self.partitions.values()):
            if partition.remote_replicas and partition.is_leader:
                try:
                    partition.maybe_shrink_isr(now)
                    if partition.maybe_increment_leader_hw(now):
                        self.on_high_watermark_increment(partition)
                except Exception:
                    log.exception("ISR shrink check of %s failed", partition.topic_partition)

    async def run_isr_expiration(self) -> None:
        """Kafka's ``isr-expiration`` task: ``maybe_shrink_isrs`` every half lag time, until
        cancelled."""
        interval_s = max(self.replica_lag_time_max_ms / 2, 1) / 1000
        while not self.shutting_down:
            await asyncio.sleep(interval_s)
            self.maybe_shrink_isrs()

    # -- delayed fetch ---------------------------------------------------------------------

    def _wake(self, tp: TopicPartition) -> None:
        waiters = self._waiters.pop(tp, None)
        if waiters:
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def _wake_followers(self, tp: TopicPartition) -> None:
        waiters = self._follower_waiters.pop(tp, None)
        if waiters:
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def begin_shutdown(self) -> None:
        """Answer every delayed fetch now (graceful shutdown must not wait out long polls)."""
        self.shutting_down = True
        for tp in list(self._waiters):
            self._wake(tp)
        for tp in list(self._follower_waiters):
            self._wake_followers(tp)
        for tp in list(self._delayed_produce):
            self._complete_delayed_produce(tp)

    def watch_appends(
        self, tps: Iterable[TopicPartition], *, follower: bool = False
    ) -> asyncio.Future[None]:
        """Register a waiter on ``tps`` now (``follower``: woken by any append, else by an HW
        move); pass it to ``wait_for_appends``. Kafka's ``tryCompleteElseWatch`` watches in
        the same step as its check: a fetch that read nothing must be watching before any
        other request runs, or an append in between is missed and the fetch waits out its
        ``max_wait_ms`` (a follower's: the leader's acks=all produces wait with it)."""
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self.shutting_down:
            waiter.set_result(None)
            return waiter
        waiting = self._follower_waiters if follower else self._waiters
        for tp in tps:
            waiting.setdefault(tp, []).append(waiter)
        return waiter

    async def wait_for_appends(
        self,
        tps: Iterable[TopicPartition],
        timeout_s: float,
        *,
        follower: bool = False,
        waiter: asyncio.Future[None] | None = None,
    ) -> bool:
        """Wait until the HW of one of ``tps`` advances (``follower``: until one gets an
        append), or ``timeout_s``; True if woken. ``waiter``: one ``watch_appends`` gave for
        the same ``tps`` and ``follower`` (watching since then)."""
        keys = list(tps)
        if waiter is None:
            if timeout_s <= 0 or self.shutting_down:
                return False
            waiter = self.watch_appends(keys, follower=follower)
        waiting = self._follower_waiters if follower else self._waiters
        try:
            if waiter.done():
                return True
            if timeout_s <= 0:
                return False
            async with asyncio.timeout(timeout_s):  # not wait_for: see fetcher_thread
                await waiter
            return True
        except TimeoutError:
            return False
        finally:
            for tp in keys:
                waiters = waiting.get(tp)
                if waiters is not None:
                    with contextlib.suppress(ValueError):
                        waiters.remove(waiter)
                    if not waiters:
                        del waiting[tp]
