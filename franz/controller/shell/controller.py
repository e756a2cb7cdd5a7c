"""The controller: one asyncio task draining one event queue (Kafka 3.9's ``KafkaController``
with its ``ControllerEventManager``), driving the pure core and applying its outputs.

Concurrency rules:

* ``Controller`` lives on the broker's loop. Only its event task reads or writes the
  ``ControllerContext`` and the request batch. ZooKeeper watches and broker responses only
  *post* events (``post``), which are dropped while this broker is not the controller.
* Election belongs to ``franz.metadata.zk_session.ZkBrokerSession``: the owner wires
  ``on_elected=controller.elected`` and ``on_resign=controller.resign``. ``elected(epoch)``
  queues the failover; ``resign()`` stops acting **at once**, synchronously: the queue is
  cleared, the event being processed is cancelled (its remaining writes never happen; one in
  flight is fenced by the epoch anyway), the channel stops posting and is closed, the context
  is dropped (Kafka's ``onControllerResignation`` after ``clearAndPut(Expire)``).
* A write refused because ``/controller_epoch`` moved (``ControllerMovedError``: another
  controller was elected) resigns through ``on_fenced`` (``ZkBrokerSession.resign``), as
  Kafka's ``ControllerMovedException`` triggers ``maybeResign``.

How a state change is applied (the order ``franz.controller.states`` requires): a new batch;
the znode writes of the ``StateChange`` in order, each fenced by the controller epoch's
zkVersion (``KafkaZkClient.fenced_multi``); partitions whose conditional write lost the race
(BADVERSION, or a state znode that already exists) are dropped from the change with
``without`` and their cached state re-read (Kafka retries their election; Franz leaves them
for the next event and says so in the log); then ``apply`` to the context; then the requests
into the batch; then the batch is sent through the channel. One batch per state-machine call,
as Kafka's ``handleStateChanges`` does.

Handled events (``franz.controller.shell.dispatch``'s table): failover, ``BrokerChange``
(startup, failure, bounce: ``brokers.py``), ``ControlledShutdown`` (``controlled_shutdown.py``;
its answer is NOT_CONTROLLER when preempted), ``ReplicaLeaderElection``
(``replica_election.py``), ``AutoPreferredReplicaLeaderElection`` (``auto_rebalance.py``),
``AlterPartitionReceived`` (``alter_partition.py``: a leader's ISR change, likewise),
``TopicChange`` (new topics), ``PartitionModifications`` (partitions added to a topic),
``IsrChangeNotification`` (``topics.py``), ``TopicDeletion`` and its StopReplica answers
(``deletion.py``), ``LogDirEventNotification`` (a broker's log dir failed: LeaderAndIsr for all
its replicas), ``LeaderAndIsrResponseReceived`` (KAFKA_STORAGE_ERROR marks the replica
offline), ``UpdateMetadataResponseReceived`` (logged), ``TopicUncleanLeaderElectionEnable`` and
``UncleanLeaderElectionEnable`` (a topic's ``unclean.leader.election.enable`` override, or
the broker default, turned on: its, or every, offline partition is elected again at once,
uncleanly where no ISR member is live), ``ApiPartitionReassignment``,
``ListPartitionReassignments``, ``ZkPartitionReassignment`` and
``PartitionReassignmentIsrChange`` (``reassignment.py``: KIP-455's partition reassignment).
The other events of ``franz.controller.events`` are logged as not handled yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from franz.controller.alter_partition import AlterPartitionRequestData
from franz.controller.batch import ControllerBrokerRequestBatch
from franz.controller.context import ControllerContext
from franz.controller.events import (
    AlterPartitionReceived,
    ApiPartitionReassignment,
    BrokerChange,
    ControlledShutdown,
    ControllerEvent,
    ElectionTrigger,
    ElectionType,
    IsrChangeNotification,
    ListPartitionReassignments,
    LogDirEventNotification,
    ReplicaLeaderElection,
    TopicChange,
    TopicDeletion,
    TopicUncleanLeaderElectionEnable,
    UncleanLeaderElectionEnable,
)
from franz.controller.model import PartitionAndReplica, TopicPartition
from franz.controller.reassignment import AlterReassignmentsResult, ListReassignmentsResult
from franz.controller.shell.alter_partition import AlterPartitionResult
from franz.controller.shell.auto_rebalance import AutoLeaderRebalance, AutoRebalanceConfig
from franz.controller.shell.brokers import delete_log_dir_event_notifications
from franz.controller.shell.channel import ControllerChannelManager
from franz.controller.shell.controlled_shutdown import ControlledShutdownResult
from franz.controller.shell.deletion import TopicDeletionManager
from franz.controller.shell.dispatch import HANDLERS, refuse
from franz.controller.shell.reassignment import (
    initialize_partition_reassignments,
    watch_reassign_partitions,
)
from franz.controller.shell.replica_election import (
    ElectionOutcome,
    resume_preferred_replica_elections,
    watch_preferred_replica_election,
)
from franz.controller.shell.topics import add_topic
from franz.controller.shell.zk_reads import (
    read_brokers_and_epochs,
    read_leadership,
    state_from_leadership,
)
from franz.controller.states import (
    CreatePartitionState,
    PartitionState,
    ReplicaState,
    StateChange,
    replica_state_changes,
    trigger_online_partition_state_change,
)
from franz.errors import ErrorCode
from franz.metadata.kafka_zk_client import ControllerEpoch, ControllerMovedError, KafkaZkClient
from franz.metadata.znodes import (
    BrokerIdsZNode,
    DeleteTopicsZNode,
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
    TopicsZNode,
)
from franz.metadata.zookeeper import BadVersionError, NodeExistsZkError, ZooKeeperError
from franz.network.sender import SenderConfig

__all__ = ["Controller"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class _Elected:
    """This broker won ``/controller`` with ``epoch`` (what ``elect`` hands to
    ``onControllerFailover``)."""

    epoch: ControllerEpoch


class Controller:
    """Kafka's ``KafkaController`` (module docstring)."""

    def __init__(
        self,
        zk: KafkaZkClient,
        controller_id: int,
        *,
        sender_config: SenderConfig | None = None,
        inter_broker_listener: str = "PLAINTEXT",
        on_fenced: Callable[[], None] | None = None,
        auto_rebalance: AutoRebalanceConfig | None = None,
    ) -> None:
        self.zk = zk
        self.controller_id = controller_id
        self.sender_config = sender_config
        self.inter_broker_listener = inter_broker_listener
        self.on_fenced = on_fenced
        self.batch = ControllerBrokerRequestBatch(
            controller_id, inter_broker_listener=inter_broker_listener
        )
        self.deletion = TopicDeletionManager(self)
        self.auto_rebalance = AutoLeaderRebalance(self, auto_rebalance)
        #: A topic's effective ``unclean.leader.election.enable`` (its override, else the
        #: broker default): Kafka's ``collectUncleanLeaderElectionState`` reads the topic
        #: configs for partitions with no live ISR member; the broker's config cache holds
        #: the same values (kept current by ``/config/changes``).
        self.unclean_leader_election_enabled: Callable[[str], bool] = lambda topic: False
        self._queue: asyncio.Queue[ControllerEvent | _Elected] = asyncio.Queue()
        self._ctx: ControllerContext | None = None
        self._epoch: ControllerEpoch | None = None
        self._channel: ControllerChannelManager | None = None
        self._task: asyncio.Task[None] | None = None
        self._current: asyncio.Task[None] | None = None
        self._watching = False
        #: Topics whose znode is watched (``topics.add_topic``: once per name).
        self.watched_topics: set[str] = set()
        self._closing: set[asyncio.Task[None]] = set()
        #: ``_delete_controller`` tasks (``_trigger_controller_move``).
        self._moving: set[asyncio.Task[None]] = set()
        #: Events processed, by class name (tests and metrics).
        self.processed: dict[str, int] = {}
        #: Kafka's ControllerStats UncleanLeaderElectionsPerSec (its count): partitions this
        #: controller gave a leader from outside their ISR.
        self.unclean_leader_elections = 0

    # -- lifecycle ------------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self._epoch is not None

    @property
    def epoch(self) -> ControllerEpoch | None:
        return self._epoch

    @property
    def ctx(self) -> ControllerContext:
        if self._ctx is None:
            raise RuntimeError(f"broker {self.controller_id} is not the controller")
        return self._ctx

    @property
    def channel(self) -> ControllerChannelManager:
        if self._channel is None:
            raise RuntimeError(f"broker {self.controller_id} is not the controller")
        return self._channel

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"controller-event-thread-{self.controller_id}"
            )

    async def stop(self) -> None:
        """Resign (if active), stop the event task, wait for the channel to close."""
        self.resign()
        for moving in list(self._moving):
            moving.cancel()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._closing:
            await asyncio.gather(*self._closing, return_exceptions=True)

    async def drain(self, timeout_s: float) -> bool:
        """Before this broker stops: wait until the requests the controller queued to the
        brokers are answered, at most ``timeout_s``; True when not active or all were.

        A controller shutting its own broker down has just queued the LeaderAndIsr and
        UpdateMetadata of its controlled shutdown; resigning drops what is queued (Kafka's
        ``ControllerChannelManager.shutdown`` too). Kafka stops its controller last in
        ``KafkaServer.shutdown``, after the replica and log managers, which in practice
        leaves its request threads the time to deliver them; a leader that missed its ISR
        shrink waited for the stopped broker until the next controller's failover, and a
        follower fenced meanwhile backed off ``replica.fetch.backoff.ms``."""
        channel = self._channel
        if channel is None:
            return True
        return await channel.drain(timeout_s)

    def elected(self, epoch: ControllerEpoch) -> None:
        """``ZkBrokerSession``'s ``on_elected``: queue the failover."""
        self._queue.put_nowait(_Elected(epoch))

    def _request(self, event: Any, reply: asyncio.Future[_T]) -> asyncio.Future[_T]:
        """Queue an event carrying a request; refused NOT_CONTROLLER at once when this broker
        is not the controller (``dispatch.refuse``)."""
        if self._epoch is None:
            refuse(event, ErrorCode.NOT_CONTROLLER)
        else:
            self._queue.put_nowait(event)
        return reply

    def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> asyncio.Future[ControlledShutdownResult]:
        """Kafka's ``controlledShutdown``: the future is the ``ControlledShutdown`` answer."""
        reply: asyncio.Future[ControlledShutdownResult] = asyncio.get_running_loop().create_future()
        return self._request(ControlledShutdown(broker_id, broker_epoch, reply=reply), reply)

    def elect_leaders(
        self, partitions: frozenset[TopicPartition], election_type: ElectionType
    ) -> asyncio.Future[dict[TopicPartition, ElectionOutcome]]:
        """Kafka's ``electLeaders``: a ``ReplicaLeaderElection`` (AdminClientTriggered); the
        future is the per-partition answer."""
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[dict[TopicPartition, ElectionOutcome]] = loop.create_future()
        trigger = ElectionTrigger.ADMIN_CLIENT_TRIGGERED
        event = ReplicaLeaderElection(partitions, election_type, trigger, reply=reply)
        return self._request(event, reply)

    def alter_partition(
        self, request: AlterPartitionRequestData
    ) -> asyncio.Future[AlterPartitionResult]:
        """Kafka's ``alterPartitions``: the future is the ``AlterPartitionReceived`` answer."""
        reply: asyncio.Future[AlterPartitionResult] = asyncio.get_running_loop().create_future()
        return self._request(AlterPartitionReceived(request, reply=reply), reply)

    def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartition, Sequence[int] | None]
    ) -> asyncio.Future[AlterReassignmentsResult]:
        """Kafka's ``alterPartitionReassignments``: an ``ApiPartitionReassignment`` (None
        cancels); the future is the answer."""
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[AlterReassignmentsResult] = loop.create_future()
        targets = {tp: None if r is None else tuple(r) for tp, r in reassignments.items()}
        return self._request(ApiPartitionReassignment(targets, reply=reply), reply)

    def list_partition_reassignments(
        self, partitions: frozenset[TopicPartition] | None
    ) -> asyncio.Future[ListReassignmentsResult]:
        """Kafka's ``listPartitionReassignments`` (None: every ongoing one)."""
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[ListReassignmentsResult] = loop.create_future()
        return self._request(ListPartitionReassignments(partitions, reply=reply), reply)

    def on_topic_configs(self, topic: str, configs: Mapping[str, str]) -> None:
        """A ``/config/changes`` notification applied ``topic``'s overrides: Kafka's
        ``TopicConfigHandler.processConfigChanges`` calls ``enableTopicUncleanLeaderElection``
        when ``unclean.leader.election.enable`` is "true" (Scala's ``toBoolean``; anything
        else counts as false), which queues a ``TopicUncleanLeaderElectionEnable`` when this
        broker is the controller."""
        if configs.get("unclean.leader.election.enable", "").lower() == "true":
            self.post(TopicUncleanLeaderElectionEnable(topic))

    def enable_default_unclean_leader_election(self) -> None:
        """Kafka's ``enableDefaultUncleanLeaderElection`` (``DynamicLogConfig.reconfigure``,
        the broker default turned from false to true): queue an
        ``UncleanLeaderElectionEnable`` (acted on only by an active controller)."""
        self.post(UncleanLeaderElectionEnable())

    def post(self, event: ControllerEvent) -> None:
        """Queue an event (from a watch, a response, a request); dropped when not active."""
        if self._epoch is not None:
            self._queue.put_nowait(event)

    def resign(self) -> None:
        """Stop acting at once (module docstring): ``onControllerResignation``."""
        while not self._queue.empty():
            refuse(self._queue.get_nowait(), ErrorCode.NOT_CONTROLLER)  # Kafka's preempt
        current, self._current = self._current, None
        if current is not None and current is not asyncio.current_task():
            current.cancel()
        if self._epoch is not None:
            log.info("controller %d resigns (epoch %d)", self.controller_id, self._epoch.epoch)
        self._epoch = None
        self._ctx = None
        self.auto_rebalance.cancel()
        self.batch.clear()
        channel, self._channel = self._channel, None
        if channel is not None:
            channel.stop_posting()
            task = asyncio.get_running_loop().create_task(channel.close())
            self._closing.add(task)
            task.add_done_callback(self._closing.discard)

    # -- the event task -------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            task = asyncio.get_running_loop().create_task(self._process(event))
            task.add_done_callback(functools.partial(self._answer_if_never_run, event))
            self._current = task
            # wait() does not raise when resign() cancels the handler: the loop goes on.
            await asyncio.wait({task})
            if self._current is task:
                self._current = None

    def _answer_if_never_run(
        self, event: ControllerEvent | _Elected, task: asyncio.Task[None]
    ) -> None:
        """A resignation that cancels the event's task before its first step skips
        ``_process`` (and its ``finally``) altogether: answer the request here, or its
        sender waits without end (a leader's AlterPartition stalled its ISR changes until
        the resigned controller's broker closed the connection, 10 s, CI). Answering is
        idempotent, so a task cancelled later is answered once."""
        if task.cancelled():
            refuse(event, ErrorCode.NOT_CONTROLLER)

    async def _process(self, event: ControllerEvent | _Elected) -> None:
        name = type(event).__name__
        try:
            if isinstance(event, _Elected):
                await self._on_controller_failover(event.epoch)
            elif self._epoch is None:
                return  # queued before a resignation: nothing to act on
            else:
                handler = HANDLERS.get(type(event))
                if handler is None:
                    log.warning("controller %d does not handle %s yet", self.controller_id, name)
                    return
                await handler(self, event)
            self.processed[name] = self.processed.get(name, 0) + 1
        except ControllerMovedError as exc:
            log.warning("controller %d was fenced during %s: %s", self.controller_id, name, exc)
            if self.on_fenced is not None:
                self.on_fenced()
            self.resign()
        except asyncio.CancelledError:
            raise
        except Exception:
            # Kafka's ControllerEventManager logs and goes on with the next event.
            log.exception("controller %d failed to process %s", self.controller_id, name)
            self.batch.clear()
            if isinstance(event, _Elected) and self._epoch is event.epoch:
                self._trigger_controller_move(event.epoch)
        finally:
            # An answer not given yet: fenced or cancelled by a resignation (Kafka's
            # ControllerMovedException: NOT_CONTROLLER), or failed (UNKNOWN_SERVER_ERROR).
            failed = ErrorCode.UNKNOWN_SERVER_ERROR
            refuse(event, ErrorCode.NOT_CONTROLLER if self._epoch is None else failed)

    def _trigger_controller_move(self, epoch: ControllerEpoch) -> None:
        """Kafka's ``triggerControllerMove``: a failover that failed half-way (ZooKeeper
        lost meanwhile) leaves no usable context, so resign and delete ``/controller``: every
        broker runs the election again (this one may win it and start over)."""
        log.warning("controller %d moves the controller seat away", self.controller_id)
        if self.on_fenced is not None:
            self.on_fenced()
        self.resign()
        task = asyncio.get_running_loop().create_task(self._delete_controller(epoch))
        self._moving.add(task)
        task.add_done_callback(self._moving.discard)

    async def _delete_controller(self, epoch: ControllerEpoch) -> None:
        """Until done: another election (or this session's expiry) made it moot, or the
        znode is deleted; ``stop`` cancels it."""
        delay_s = 0.1
        while True:
            try:
                await self.zk.delete_controller(epoch)
                return
            except ControllerMovedError:
                return
            except ZooKeeperError as exc:
                log.warning(
                    "controller %d: deleting /controller failed: %s", self.controller_id, exc
                )
            await asyncio.sleep(delay_s)
            delay_s = min(2 * delay_s, 2.0)

    # -- applying the core's outputs ------------------------------------------------------

    async def handle(self, change: StateChange) -> StateChange:
        """Write, apply, batch and send one ``StateChange`` (module docstring)."""
        ctx = self.ctx
        epoch = self._epoch
        assert epoch is not None
        for item, message in change.failures.items():
            log.error("controller %d: %s (%s)", self.controller_id, message, item)
        failed: set[TopicPartition] = set()
        for write in change.writes():
            tp = write.topic_partition
            if tp in failed:
                continue
            try:
                if isinstance(write, CreatePartitionState):
                    state = state_from_leadership(write.leader_isr_and_controller_epoch, -1)
                    await self.zk.create_partition_states(epoch, tp.topic, {tp.partition: state})
                else:
                    state = state_from_leadership(
                        write.leader_isr_and_controller_epoch, write.expected_zk_version
                    )
                    await self.zk.update_partition_state(epoch, tp.topic, tp.partition, state)
            except (BadVersionError, NodeExistsZkError) as exc:
                log.warning(
                    "controller %d lost the race writing %s: %s", self.controller_id, tp, exc
                )
                failed.add(tp)
        if failed:
            change = change.without(failed)
            ctx.partition_leadership_info.update(await read_leadership(self.zk, failed))
        for tp in sorted(change.unclean):
            previous = ctx.partition_leadership_info.get(tp)
            log.warning(
                "controller %d: unclean leader election for partition %s: broker %d, not in "
                "the ISR %s, leads from its own log; records only the ISR had are lost",
                self.controller_id,
                tp,
                change.leadership[tp].leader_and_isr.leader,
                list(previous.leader_and_isr.isr) if previous is not None else [],
            )
        change.apply(ctx)
        self.unclean_leader_elections += len(change.unclean)
        self.batch.new_batch(ctx)
        try:
            self.batch.add(change.requests())
            self.send_batch()
        finally:
            self.batch.clear()
        return change

    def send_batch(self) -> None:
        requests = self.batch.send_requests_to_brokers(self.ctx.epoch)
        self.channel.send(requests)

    def send_update_metadata(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] = ()
    ) -> None:
        """``sendUpdateMetadataRequest``: no partitions means the live brokers only."""
        self.batch.new_batch(self.ctx)
        try:
            self.batch.add_update_metadata_request_for_brokers(sorted(broker_ids), partitions)
            self.send_batch()
        finally:
            self.batch.clear()

    async def refresh_leadership(self, partitions: Iterable[TopicPartition]) -> None:
        """Re-read the partitions' state znodes into the context before an election (Kafka's
        ``electLeaderForPartitions`` and ``removeReplicasFromIsr`` read ZooKeeper first)."""
        self.ctx.partition_leadership_info.update(await read_leadership(self.zk, partitions))

    async def trigger_online_partition_state_change(self, topic: str | None = None) -> StateChange:
        """``triggerOnlinePartitionStateChange``: every New or Offline partition (of
        ``topic``, if given) to Online under the offline election."""
        ctx = self.ctx
        candidates = [
            tp
            for tp, s in ctx.partition_states.items()
            if s in (PartitionState.NEW_PARTITION, PartitionState.OFFLINE_PARTITION)
            and (topic is None or tp.topic == topic)
        ]
        await self.refresh_leadership(candidates)
        return await self.handle(
            trigger_online_partition_state_change(
                ctx,
                controller_id=self.controller_id,
                topic=topic,
                unclean_leader_election_enabled=self.unclean_leader_election_enabled,
            )
        )

    # -- failover -------------------------------------------------------------------------

    async def _on_controller_failover(self, epoch: ControllerEpoch) -> None:
        """``onControllerFailover``: read everything, then tell every broker."""
        log.info("controller %d starting failover, epoch %d", self.controller_id, epoch.epoch)
        self.resign()  # a previous seat's leftovers, if any
        self._epoch = epoch
        ctx = self._ctx = ControllerContext(epoch=epoch.epoch, epoch_zk_version=epoch.zk_version)
        self._register_watches()
        # Kafka's deleteLogDirEventNotifications: the LeaderAndIsr every replica gets below
        # finds the replicas on failed log dirs anyway.
        await delete_log_dir_event_notifications(
            self, await self.zk.zk.get_children(LogDirEventNotificationZNode.path)
        )
        self._channel = ControllerChannelManager(
            self.post, self.sender_config, inter_broker_listener=self.inter_broker_listener
        )
        # initializeControllerContext
        brokers = await read_brokers_and_epochs(self.zk)
        ctx.add_live_brokers(brokers.values())
        for assignment_topic, assignment in (await self.zk.get_topic_assignments()).items():
            await add_topic(self, assignment_topic, assignment)
        ctx.partitions_being_reassigned = {
            tp
            for tp in ctx.all_partitions()
            if ctx.partition_full_replica_assignment(tp).is_being_reassigned
        }
        await self.refresh_leadership(ctx.all_partitions())
        for broker in brokers.values():
            self.channel.add_broker(broker)
        await self.deletion.init(set(await self.zk.zk.get_children(DeleteTopicsZNode.path)))
        # "Sending update metadata request": the live brokers, before any LeaderAndIsr.
        self.send_update_metadata(ctx.live_or_shutting_down_broker_ids)
        # replicaStateMachine.startup
        online: list[PartitionAndReplica] = []
        offline: list[PartitionAndReplica] = []
        for tp in sorted(ctx.all_partitions()):
            for r in ctx.partition_replica_assignment(tp):
                replica = PartitionAndReplica(tp, r)
                if ctx.is_replica_online(r, tp):
                    ctx.replica_states[replica] = ReplicaState.ONLINE_REPLICA
                    online.append(replica)
                else:
                    ctx.replica_states[replica] = ReplicaState.REPLICA_DELETION_INELIGIBLE
                    offline.append(replica)
        await self.handle(replica_state_changes(ctx, online, ReplicaState.ONLINE_REPLICA))
        await self.handle(replica_state_changes(ctx, offline, ReplicaState.OFFLINE_REPLICA))
        # partitionStateMachine.startup
        for tp in ctx.all_partitions():
            info = ctx.partition_leadership_info.get(tp)
            if info is None:
                ctx.partition_states[tp] = PartitionState.NEW_PARTITION
            elif ctx.is_replica_online(info.leader_and_isr.leader, tp):
                ctx.partition_states[tp] = PartitionState.ONLINE_PARTITION
            else:
                ctx.partition_states[tp] = PartitionState.OFFLINE_PARTITION
        await self.trigger_online_partition_state_change()
        await initialize_partition_reassignments(self)
        await self.deletion.try_topic_deletion()
        await resume_preferred_replica_elections(self)
        self.auto_rebalance.start()
        log.info("controller %d is active, epoch %d", self.controller_id, epoch.epoch)

    def _register_watches(self) -> None:
        """Once per Controller: kazoo's watches cannot be removed, so they outlive a seat and
        their events are dropped by ``post`` while not active."""
        if self._watching:
            return
        self._watching = True
        self.zk.watch_children(BrokerIdsZNode.path, lambda _: self.post(BrokerChange()))
        self.zk.watch_children(TopicsZNode.path, lambda _: self.post(TopicChange()))
        self.zk.watch_children(DeleteTopicsZNode.path, lambda _: self.post(TopicDeletion()))
        self.zk.watch_children(
            IsrChangeNotificationZNode.path,
            lambda children: self.post(IsrChangeNotification()) if children else None,
        )
        self.zk.watch_children(
            LogDirEventNotificationZNode.path,
            lambda children: self.post(LogDirEventNotification()) if children else None,
        )
        watch_preferred_replica_election(self)
        watch_reassign_partitions(self)
