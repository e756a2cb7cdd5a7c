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

Handled events: failover, ``BrokerChange`` (startup, failure, bounce), ``ControlledShutdown``
(``controlled_shutdown.py``; its answer is NOT_CONTROLLER when preempted),
``ReplicaLeaderElection`` (``replica_election.py``), ``AutoPreferredReplicaLeaderElection``
(``auto_rebalance.py``),
``AlterPartitionReceived`` (``alter_partition.py``: a leader's ISR change, likewise),
``TopicChange`` (new topics), ``PartitionModifications`` (partitions added to a topic),
``TopicDeletion`` and its StopReplica answers (``deletion.py``), ``IsrChangeNotification``,
``LogDirEventNotification`` (a broker's log dir failed: LeaderAndIsr for all its replicas),
``LeaderAndIsrResponseReceived`` (KAFKA_STORAGE_ERROR marks the replica offline),
``UpdateMetadataResponseReceived`` (logged), ``TopicUncleanLeaderElectionEnable`` and
``UncleanLeaderElectionEnable`` (a topic's ``unclean.leader.election.enable`` override, or
the broker default, turned on: its, or every, offline partition is elected again at once,
uncleanly where no ISR member is live). The other events of ``franz.controller.events``
are logged as not handled yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from franz.controller.alter_partition import AlterPartitionRequestData
from franz.controller.batch import ControllerBrokerRequestBatch
from franz.controller.context import ControllerContext
from franz.controller.election import ElectionStrategy
from franz.controller.events import (
    AlterPartitionReceived,
    AutoPreferredReplicaLeaderElection,
    BrokerChange,
    ControlledShutdown,
    ControllerEvent,
    ElectionTrigger,
    ElectionType,
    IsrChangeNotification,
    LeaderAndIsrResponseReceived,
    LogDirEventNotification,
    PartitionModifications,
    ReplicaLeaderElection,
    TopicChange,
    TopicDeletion,
    TopicDeletionStopReplicaResponseReceived,
    TopicUncleanLeaderElectionEnable,
    UncleanLeaderElectionEnable,
    UpdateMetadataResponseReceived,
)
from franz.controller.model import PartitionAndReplica, TopicPartition
from franz.controller.shell.alter_partition import AlterPartitionResult, process_alter_partition
from franz.controller.shell.alter_partition import answer as answer_alter_partition
from franz.controller.shell.auto_rebalance import AutoLeaderRebalance, AutoRebalanceConfig
from franz.controller.shell.channel import ControllerChannelManager
from franz.controller.shell.controlled_shutdown import (
    ControlledShutdownResult,
    answer,
    process_controlled_shutdown,
)
from franz.controller.shell.deletion import TopicDeletionManager
from franz.controller.shell.replica_election import (
    ElectionOutcome,
    answer_all,
    process_replica_election,
    resume_preferred_replica_elections,
    watch_preferred_replica_election,
)
from franz.controller.shell.replica_election import answer as answer_election
from franz.controller.shell.zk_reads import (
    read_brokers_and_epochs,
    read_isr_change_notifications,
    read_leadership,
    read_log_dir_event_notifications,
    replica_assignment,
    state_from_leadership,
    with_topic_id,
)
from franz.controller.states import (
    CreatePartitionState,
    PartitionState,
    ReplicaState,
    StateChange,
    partition_state_changes,
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
    TopicAssignment,
    TopicsZNode,
    TopicZNode,
)
from franz.metadata.zookeeper import BadVersionError, DeleteOp, NodeExistsZkError, ZooKeeperError
from franz.network.sender import SenderConfig

__all__ = ["Controller"]

log = logging.getLogger(__name__)


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
        self._watched_topics: set[str] = set()
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

    def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> asyncio.Future[ControlledShutdownResult]:
        """Kafka's ``controlledShutdown``: queue the event; the future is its answer
        (NOT_CONTROLLER at once when this broker is not the controller)."""
        reply: asyncio.Future[ControlledShutdownResult] = asyncio.get_running_loop().create_future()
        event = ControlledShutdown(broker_id, broker_epoch, reply=reply)
        if self._epoch is None:
            answer(event, ControlledShutdownResult(ErrorCode.NOT_CONTROLLER))
        else:
            self._queue.put_nowait(event)
        return reply

    def elect_leaders(
        self, partitions: frozenset[TopicPartition], election_type: ElectionType
    ) -> asyncio.Future[dict[TopicPartition, ElectionOutcome]]:
        """Kafka's ``electLeaders``: queue a ``ReplicaLeaderElection`` (AdminClientTriggered);
        the future is the per-partition answer (NOT_CONTROLLER for every partition at once
        when this broker is not the controller)."""
        loop = asyncio.get_running_loop()
        reply: asyncio.Future[dict[TopicPartition, ElectionOutcome]] = loop.create_future()
        event = ReplicaLeaderElection(
            partitions, election_type, ElectionTrigger.ADMIN_CLIENT_TRIGGERED, reply=reply
        )
        if self._epoch is None:
            answer_all(event, ErrorCode.NOT_CONTROLLER)
        else:
            self._queue.put_nowait(event)
        return reply

    def alter_partition(
        self, request: AlterPartitionRequestData
    ) -> asyncio.Future[AlterPartitionResult]:
        """Kafka's ``alterPartitions``: queue an ``AlterPartitionReceived``; the future is the
        answer (NOT_CONTROLLER at once when this broker is not the controller)."""
        reply: asyncio.Future[AlterPartitionResult] = asyncio.get_running_loop().create_future()
        event = AlterPartitionReceived(request, reply=reply)
        if self._epoch is None:
            answer_alter_partition(event, AlterPartitionResult(ErrorCode.NOT_CONTROLLER))
        else:
            self._queue.put_nowait(event)
        return reply

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
            queued = self._queue.get_nowait()
            if isinstance(queued, ControlledShutdown):  # Kafka's handlePreempt
                answer(queued, ControlledShutdownResult(ErrorCode.NOT_CONTROLLER))
            elif isinstance(queued, ReplicaLeaderElection):
                answer_all(queued, ErrorCode.NOT_CONTROLLER)
            elif isinstance(queued, AlterPartitionReceived):
                answer_alter_partition(queued, AlterPartitionResult(ErrorCode.NOT_CONTROLLER))
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
            self._current = task
            # wait() does not raise when resign() cancels the handler: the loop goes on.
            await asyncio.wait({task})
            if self._current is task:
                self._current = None

    async def _process(self, event: ControllerEvent | _Elected) -> None:
        name = type(event).__name__
        try:
            if isinstance(event, _Elected):
                await self._on_controller_failover(event.epoch)
            elif self._epoch is None:
                return  # queued before a resignation: nothing to act on
            elif isinstance(event, ControlledShutdown):
                answer(event, await process_controlled_shutdown(self, event))
            elif isinstance(event, ReplicaLeaderElection):
                answer_election(event, await process_replica_election(self, event))
            elif isinstance(event, AutoPreferredReplicaLeaderElection):
                await self.auto_rebalance.process()
            elif isinstance(event, AlterPartitionReceived):
                answer_alter_partition(event, await process_alter_partition(self, event))
            elif isinstance(event, BrokerChange):
                await self._process_broker_change()
            elif isinstance(event, TopicChange):
                await self._process_topic_change()
            elif isinstance(event, PartitionModifications):
                await self._process_partition_modifications(event.topic)
            elif isinstance(event, TopicDeletion):
                await self.deletion.process_topic_deletion()
            elif isinstance(event, TopicDeletionStopReplicaResponseReceived):
                await self.deletion.process_stop_replica_response(event)
            elif isinstance(event, IsrChangeNotification):
                await self._process_isr_change_notification()
            elif isinstance(event, LogDirEventNotification):
                await self._process_log_dir_event_notification()
            elif isinstance(event, LeaderAndIsrResponseReceived):
                await self._process_leader_and_isr_response(event)
            elif isinstance(event, TopicUncleanLeaderElectionEnable):
                log.info("Unclean leader election has been enabled for topic %s", event.topic)
                await self.trigger_online_partition_state_change(event.topic)
            elif isinstance(event, UncleanLeaderElectionEnable):
                log.info("Unclean leader election has been enabled by default")
                await self.trigger_online_partition_state_change()
            elif isinstance(event, UpdateMetadataResponseReceived):
                if event.error_code != ErrorCode.NONE:
                    log.warning(
                        "UpdateMetadata to broker %d failed: %s",
                        event.broker_id,
                        event.error_code.name,
                    )
            else:
                log.warning("controller %d does not handle %s yet", self.controller_id, name)
                return
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
            if isinstance(event, ControlledShutdown):
                failed = ErrorCode.UNKNOWN_SERVER_ERROR
                code = ErrorCode.NOT_CONTROLLER if self._epoch is None else failed
                answer(event, ControlledShutdownResult(code))
            elif isinstance(event, ReplicaLeaderElection):
                failed = ErrorCode.UNKNOWN_SERVER_ERROR
                answer_all(event, ErrorCode.NOT_CONTROLLER if self._epoch is None else failed)
            elif isinstance(event, AlterPartitionReceived):
                failed = ErrorCode.UNKNOWN_SERVER_ERROR
                code = ErrorCode.NOT_CONTROLLER if self._epoch is None else failed
                answer_alter_partition(event, AlterPartitionResult(code))

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
        await self._delete_log_dir_event_notifications(
            await self.zk.zk.get_children(LogDirEventNotificationZNode.path)
        )
        self._channel = ControllerChannelManager(
            self.post, self.sender_config, inter_broker_listener=self.inter_broker_listener
        )
        # initializeControllerContext
        brokers = await read_brokers_and_epochs(self.zk)
        ctx.add_live_brokers(brokers.values())
        for assignment_topic, assignment in (await self.zk.get_topic_assignments()).items():
            await self._add_topic(assignment_topic, assignment)
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

    async def _add_topic(self, topic: str, assignment: TopicAssignment) -> None:
        """Into the context; a topic znode without an id gets one written (Kafka's
        ``processTopicIds`` / ``setTopicIds``)."""
        topic_id = assignment.topic_id
        if topic_id is None:
            topic_id = uuid.uuid4()
            await self.zk.set_topic_assignment(topic, with_topic_id(assignment, topic_id))
        self.ctx.add_topic(topic, topic_id, replica_assignment(assignment))
        self._watch_partition_modifications(topic)

    def _watch_partition_modifications(self, topic: str) -> None:
        """``registerPartitionModificationsHandlers``: a data watch on ``/brokers/topics/<t>``
        (once per topic name: it keeps watching across a deletion and a re-creation)."""
        if topic in self._watched_topics:
            return
        self._watched_topics.add(topic)
        self.zk.zk.watch_data(
            TopicZNode.path(topic),
            lambda data, _stat: self.post(PartitionModifications(topic)) if data else None,
        )

    # -- brokers --------------------------------------------------------------------------

    async def _process_broker_change(self) -> None:
        """``processBrokerChange``: new, dead and bounced (newer czxid) brokers."""
        ctx = self.ctx
        current = await read_brokers_and_epochs(self.zk)
        known = ctx.live_or_shutting_down_broker_ids
        epochs = ctx.live_broker_epochs()
        new = sorted(set(current) - known)
        dead = sorted(known - set(current))
        bounced = sorted(b for b in set(current) & known if current[b].epoch > epochs[b])
        log.info(
            "controller %d: new brokers %s, dead %s, bounced %s",
            self.controller_id,
            new,
            dead,
            bounced,
        )
        for b in new:
            self.channel.add_broker(current[b])
        for b in bounced:
            await self.channel.remove_broker(b)
            self.channel.add_broker(current[b])
        for b in dead:
            await self.channel.remove_broker(b)
        if new:
            ctx.add_live_brokers(current[b] for b in new)
            await self._on_broker_startup(new)
        if bounced:
            ctx.remove_live_brokers(bounced)
            await self._on_broker_failure(bounced)
            ctx.add_live_brokers(current[b] for b in bounced)
            await self._on_broker_startup(bounced)
        if dead:
            ctx.remove_live_brokers(dead)
            await self._on_broker_failure(dead)

    async def _on_broker_startup(self, new: list[int]) -> None:
        """``onBrokerStartup``: metadata to all, replicas online, offline partitions elected."""
        ctx = self.ctx
        for b in new:
            ctx.replicas_on_offline_dirs.pop(b, None)
        self.send_update_metadata(ctx.live_or_shutting_down_broker_ids - set(new))
        with_leaders = {
            tp
            for tp in ctx.partition_leadership_info
            if not ctx.is_topic_queued_up_for_deletion(tp.topic)
        }
        self.send_update_metadata(new, with_leaders)
        replicas = ctx.replicas_on_brokers(new)
        await self.handle(replica_state_changes(ctx, replicas, ReplicaState.ONLINE_REPLICA))
        await self.trigger_online_partition_state_change()
        to_delete = {r.topic_partition.topic for r in replicas} & ctx.topics_to_be_deleted
        if to_delete:
            await self.deletion.resume_deletion_for_topics(to_delete)

    async def _on_broker_failure(self, dead: list[int]) -> None:
        """``onBrokerFailure``."""
        ctx = self.ctx
        for b in dead:
            ctx.replicas_on_offline_dirs.pop(b, None)
        await self.on_replicas_become_offline(ctx.replicas_on_brokers(dead))

    async def on_replicas_become_offline(self, replicas: set[PartitionAndReplica]) -> None:
        """``onReplicasBecomeOffline``: elect where the leader went, shrink ISRs."""
        ctx = self.ctx
        for_deletion = {
            r for r in replicas if ctx.is_topic_queued_up_for_deletion(r.topic_partition.topic)
        }
        not_for_deletion = replicas - for_deletion
        offline_leader = sorted(ctx.partitions_with_offline_leader())
        await self.handle(
            partition_state_changes(
                ctx,
                offline_leader,
                PartitionState.OFFLINE_PARTITION,
                controller_id=self.controller_id,
            )
        )
        online = await self.trigger_online_partition_state_change()
        await self.refresh_leadership({r.topic_partition for r in not_for_deletion})
        await self.handle(
            replica_state_changes(ctx, not_for_deletion, ReplicaState.OFFLINE_REPLICA)
        )
        if for_deletion:
            await self.handle(
                replica_state_changes(ctx, for_deletion, ReplicaState.REPLICA_DELETION_INELIGIBLE)
            )
            await self.deletion.fail_replica_deletion(for_deletion)
        if not not_for_deletion and not online.leadership:
            self.send_update_metadata(ctx.live_or_shutting_down_broker_ids)

    # -- topics ---------------------------------------------------------------------------

    async def _process_topic_change(self) -> None:
        """``processTopicChange``: forget removed topics, create new ones' partitions."""
        ctx = self.ctx
        topics = set(await self.zk.get_all_topics())
        new = topics - ctx.all_topics
        for topic in ctx.all_topics - topics:
            ctx.remove_topic(topic)
        if not new:
            return
        assignments = await self.zk.get_topic_assignments(sorted(new))
        for topic, assignment in assignments.items():
            await self._add_topic(topic, assignment)
        partitions = sorted(tp for t in assignments for tp in ctx.partitions_for_topic(t))
        if partitions:
            await self._on_new_partition_creation(partitions)

    async def _process_partition_modifications(self, topic: str) -> None:
        """``processPartitionModifications``: partitions added to an existing topic
        (CreatePartitions) are created; none may be added to a topic being deleted (Kafka
        then restores the znode's assignment; Franz logs it)."""
        ctx = self.ctx
        if topic not in ctx.partition_assignments:
            return  # a new topic is TopicChange's business; a deleted one has no partitions
        found = await self.zk.get_topic_assignments([topic])
        if topic not in found:
            return
        added = {
            p: a
            for p, a in replica_assignment(found[topic]).items()
            if not ctx.partition_replica_assignment(TopicPartition(topic, p))
        }
        if not added:
            return
        if ctx.is_topic_queued_up_for_deletion(topic):
            log.warning(
                "skipping adding partitions %s for topic %s since it is being deleted",
                sorted(added),
                topic,
            )
            return
        for p, a in added.items():
            ctx.update_partition_full_replica_assignment(TopicPartition(topic, p), a)
        await self._on_new_partition_creation(sorted(TopicPartition(topic, p) for p in added))

    async def _on_new_partition_creation(self, partitions: list[TopicPartition]) -> None:
        """``onNewPartitionCreation``: New, NewReplica, Online (epoch 0 state znodes, a
        LeaderAndIsr with isNew), OnlineReplica."""
        ctx = self.ctx
        cid = self.controller_id
        await self.handle(
            partition_state_changes(
                ctx, partitions, PartitionState.NEW_PARTITION, controller_id=cid
            )
        )
        replicas = ctx.replicas_for_partitions(partitions)
        await self.handle(replica_state_changes(ctx, replicas, ReplicaState.NEW_REPLICA))
        await self.handle(
            partition_state_changes(
                ctx,
                partitions,
                PartitionState.ONLINE_PARTITION,
                ElectionStrategy.OFFLINE,
                controller_id=cid,
            )
        )
        await self.handle(replica_state_changes(ctx, replicas, ReplicaState.ONLINE_REPLICA))

    # -- ISR changes and responses --------------------------------------------------------

    async def _process_isr_change_notification(self) -> None:
        """``processIsrChangeNotification``: re-read the named partitions, UpdateMetadata to
        every broker, delete the notifications (fenced)."""
        ctx = self.ctx
        epoch = self._epoch
        assert epoch is not None
        children, partitions = await read_isr_change_notifications(self.zk)
        try:
            known = {tp for tp in partitions if tp.topic in ctx.partition_assignments}
            if known:
                await self.refresh_leadership(known)
                self.send_update_metadata(ctx.live_or_shutting_down_broker_ids, known)
        finally:
            if children:
                await self.zk.fenced_multi(
                    epoch,
                    [DeleteOp(f"{IsrChangeNotificationZNode.path}/{c}") for c in children],
                )

    async def _process_log_dir_event_notification(self) -> None:
        """``processLogDirEventNotification``: for every broker named, ``onBrokerLogDirFailure``
        (its replicas -> OnlineReplica: a LeaderAndIsr for each, so that the broker answers
        KAFKA_STORAGE_ERROR for those on the failed dir; ``_process_leader_and_isr_response``
        takes them offline), then delete the notifications (fenced)."""
        ctx = self.ctx
        children, brokers = await read_log_dir_event_notifications(self.zk)
        try:
            live = [b for b in brokers if b in ctx.live_or_shutting_down_broker_ids]
            if live:
                log.info(
                    "controller %d: handling log directory failure for brokers %s",
                    self.controller_id,
                    ",".join(str(b) for b in live),
                )
                replicas = ctx.replicas_on_brokers(live)
                await self.handle(replica_state_changes(ctx, replicas, ReplicaState.ONLINE_REPLICA))
        finally:
            await self._delete_log_dir_event_notifications(children)

    async def _delete_log_dir_event_notifications(self, children: list[str]) -> None:
        epoch = self._epoch
        assert epoch is not None
        if children:
            await self.zk.fenced_multi(
                epoch, [DeleteOp(f"{LogDirEventNotificationZNode.path}/{c}") for c in children]
            )

    async def _process_leader_and_isr_response(self, event: LeaderAndIsrResponseReceived) -> None:
        """``processLeaderAndIsrResponseReceived``: KAFKA_STORAGE_ERROR partitions are on a
        failed log dir of that broker (KIP-112): their replicas go offline."""
        ctx = self.ctx
        if event.error_code != ErrorCode.NONE:
            log.error(
                "LeaderAndIsr to broker %d failed: %s", event.broker_id, event.error_code.name
            )
            return
        offline = {
            tp for tp, e in event.partition_errors.items() if e == ErrorCode.KAFKA_STORAGE_ERROR
        }
        known = ctx.replicas_on_offline_dirs.setdefault(event.broker_id, set())
        fresh = offline - known
        known.update(offline)
        if fresh:
            await self.on_replicas_become_offline(
                {PartitionAndReplica(tp, event.broker_id) for tp in fresh}
            )
