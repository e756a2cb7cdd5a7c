"""Topic deletion (Kafka 3.9's ``TopicDeletionManager``), run by the controller's event task.

The steps, Kafka's: a topic named under ``/admin/delete_topics`` is *queued*; when eligible
(not started, not ineligible) its partitions go Offline then NonExistent, every broker gets an
UpdateMetadata announcing leader -2 for them, the replicas on live brokers go
OfflineReplica (StopReplica without delete) then ReplicaDeletionStarted (StopReplica with
``deletePartition``), replicas on dead brokers go ReplicaDeletionIneligible and the topic is
marked ineligible until they come back. Each StopReplica answer moves the replica to
ReplicaDeletionSuccessful (error NONE) or back to ReplicaDeletionIneligible (retried by the
next ``resume_deletions``). When every replica of the topic succeeded: NonExistentReplica,
then the znodes ``/brokers/topics/<t>``, ``/config/topics/<t>`` and the marker are deleted and
the topic is forgotten (``completeDeleteTopic``). ``delete.topic.enable`` is taken as true
(Kafka's default).

Reassignments (KIP-455), as Kafka 3.9: a topic queued for deletion when one of its partitions
starts moving again (failover, a broker starting, an ISR change) or found queued on failover
with a partition moving is ineligible until that move completes; a topic marked while one of
its partitions moves is *not* halted (``processTopicDeletion`` marks reassigning topics
ineligible before it queues them, and only queued topics can be marked): it is deleted, the
whole replica set of the move included, and the move is forgotten with the topic.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

from franz.controller.events import TopicDeletionStopReplicaResponseReceived
from franz.controller.model import PartitionAndReplica
from franz.controller.states import PartitionState, ReplicaState, partition_state_changes
from franz.controller.states import replica_state_changes as rsc
from franz.errors import ErrorCode
from franz.metadata.znodes import DeleteTopicsTopicZNode
from franz.metadata.zookeeper import DeleteOp, NoNodeZkError

if TYPE_CHECKING:
    from franz.controller.shell.controller import Controller

__all__ = ["TopicDeletionManager"]

log = logging.getLogger(__name__)

R = ReplicaState


class TopicDeletionManager:
    def __init__(self, controller: Controller) -> None:
        self.controller = controller

    # -- the context's replica-state queries (Kafka's ControllerContext helpers) ----------

    def _replicas_in_state(self, topic: str, state: ReplicaState) -> set[PartitionAndReplica]:
        ctx = self.controller.ctx
        return {r for r in ctx.replicas_for_topic(topic) if ctx.replica_states.get(r) is state}

    def _all_in_state(self, topic: str, state: ReplicaState) -> bool:
        ctx = self.controller.ctx
        return all(ctx.replica_states.get(r) is state for r in ctx.replicas_for_topic(topic))

    # -- entry points ---------------------------------------------------------------------

    async def init(self, queued: set[str]) -> None:
        """On failover (``initializeControllerContext`` + ``TopicDeletionManager.init``):
        queue the marked topics that exist, drop markers of topics that do not; topics with
        a replica on a dead broker or a partition being reassigned are ineligible
        (``fetchTopicDeletionsInProgress``)."""
        ctx = self.controller.ctx
        await self._delete_markers(queued - ctx.all_topics)
        queued &= ctx.all_topics
        ctx.queue_topic_deletion(queued)
        reassigning = {tp.topic for tp in ctx.partitions_being_reassigned}
        for topic in queued:
            if topic in reassigning or any(
                not ctx.is_replica_online(r.replica, r.topic_partition)
                for r in ctx.replicas_for_topic(topic)
            ):
                ctx.topics_ineligible_for_deletion.add(topic)

    async def try_topic_deletion(self) -> None:
        await self.resume_deletions()

    async def process_topic_deletion(self) -> None:
        """``processTopicDeletion``: children of ``/admin/delete_topics`` changed."""
        ctx = self.controller.ctx
        marked = set(await self.controller.zk.zk.get_children("/admin/delete_topics"))
        await self._delete_markers(marked - ctx.all_topics)
        marked &= ctx.all_topics
        # Kafka marks the reassigning ones before queueing: only those queued already halt
        # (a topic marked while one of its partitions moves is deleted, its move dropped).
        reassigning = {tp.topic for tp in ctx.partitions_being_reassigned}
        self.mark_topic_ineligible_for_deletion(
            marked & reassigning, "topic reassignment in progress"
        )
        fresh = marked - ctx.topics_to_be_deleted
        if not fresh:
            return
        ctx.queue_topic_deletion(fresh)
        await self.resume_deletions()

    async def process_stop_replica_response(
        self, event: TopicDeletionStopReplicaResponseReceived
    ) -> None:
        """``processTopicDeletionStopReplicaResponseReceived`` (with the callback's filter on
        topics whose deletion is in progress)."""
        ctx = self.controller.ctx
        errors = {
            tp: e
            for tp, e in event.partition_errors.items()
            if ctx.is_topic_deletion_in_progress(tp.topic)
        }
        if not errors:
            return
        if event.request_error != ErrorCode.NONE:
            in_error = set(errors)
        else:
            in_error = {tp for tp, e in errors.items() if e != ErrorCode.NONE}
        await self.fail_replica_deletion(
            {PartitionAndReplica(tp, event.replica_id) for tp in in_error}
        )
        deleted = set(errors) - in_error
        if deleted:
            await self.complete_replica_deletion(
                {PartitionAndReplica(tp, event.replica_id) for tp in deleted}
            )

    # -- Kafka's TopicDeletionManager -----------------------------------------------------

    def mark_topic_ineligible_for_deletion(self, topics: set[str], reason: str) -> None:
        ctx = self.controller.ctx
        halted = topics & ctx.topics_to_be_deleted
        if halted:
            ctx.topics_ineligible_for_deletion.update(halted)
            log.info("halted deletion of topics %s due to %s", sorted(halted), reason)

    async def resume_deletion_for_topics(self, topics: set[str]) -> None:
        ctx = self.controller.ctx
        resume = topics & ctx.topics_to_be_deleted
        if resume:
            ctx.topics_ineligible_for_deletion.difference_update(resume)
            await self.resume_deletions()

    async def fail_replica_deletion(self, replicas: set[PartitionAndReplica]) -> None:
        ctx = self.controller.ctx
        failed = {
            r for r in replicas if ctx.is_topic_queued_up_for_deletion(r.topic_partition.topic)
        }
        if failed:
            await self.controller.handle(rsc(ctx, failed, R.REPLICA_DELETION_INELIGIBLE))
            self.mark_topic_ineligible_for_deletion(
                {r.topic_partition.topic for r in failed}, "replica deletion failure"
            )
            await self.resume_deletions()

    async def complete_replica_deletion(self, replicas: set[PartitionAndReplica]) -> None:
        ctx = self.controller.ctx
        done = {r for r in replicas if ctx.is_topic_queued_up_for_deletion(r.topic_partition.topic)}
        await self.controller.handle(rsc(ctx, done, R.REPLICA_DELETION_SUCCESSFUL))
        await self.resume_deletions()

    async def resume_deletions(self) -> None:
        ctx = self.controller.ctx
        retry: set[str] = set()
        eligible: set[str] = set()
        for topic in sorted(ctx.topics_to_be_deleted):
            if self._all_in_state(topic, R.REPLICA_DELETION_SUCCESSFUL):
                await self._complete_delete_topic(topic)
                continue
            if not self._replicas_in_state(topic, R.REPLICA_DELETION_STARTED) and (
                self._replicas_in_state(topic, R.REPLICA_DELETION_INELIGIBLE)
            ):
                retry.add(topic)
            if ctx.is_topic_eligible_for_deletion(topic):
                eligible.add(topic)
        if retry:  # retryDeletionForIneligibleReplicas
            failed = set().union(
                *(self._replicas_in_state(t, R.REPLICA_DELETION_INELIGIBLE) for t in retry)
            )
            await self.controller.handle(rsc(ctx, failed, R.OFFLINE_REPLICA))
        if eligible:
            await self._on_topic_deletion(eligible)

    async def _on_topic_deletion(self, topics: set[str]) -> None:
        controller = self.controller
        ctx = controller.ctx
        unseen = topics - ctx.topics_with_deletion_started
        if unseen:
            partitions = sorted(tp for t in unseen for tp in ctx.partitions_for_topic(t))
            for target in (PartitionState.OFFLINE_PARTITION, PartitionState.NON_EXISTENT_PARTITION):
                await controller.handle(
                    partition_state_changes(
                        ctx, partitions, target, controller_id=controller.controller_id
                    )
                )
            ctx.begin_topic_deletion(unseen)
        controller.send_update_metadata(
            ctx.live_or_shutting_down_broker_ids,
            {tp for t in topics for tp in ctx.partitions_for_topic(t)},
        )
        await self._on_partition_deletion(topics)

    async def _on_partition_deletion(self, topics: set[str]) -> None:
        ctx = self.controller.ctx
        dead: set[PartitionAndReplica] = set()
        retry: set[PartitionAndReplica] = set()
        ineligible: set[str] = set()
        for topic in topics:
            replicas = ctx.replicas_for_topic(topic)
            alive = {r for r in replicas if ctx.is_replica_online(r.replica, r.topic_partition)}
            dead_here = replicas - alive
            retry |= alive - self._replicas_in_state(topic, R.REPLICA_DELETION_SUCCESSFUL)
            dead |= dead_here
            if dead_here:
                ineligible.add(topic)
        await self.controller.handle(rsc(ctx, dead, R.REPLICA_DELETION_INELIGIBLE))
        await self.controller.handle(rsc(ctx, retry, R.OFFLINE_REPLICA))
        await self.controller.handle(rsc(ctx, retry, R.REPLICA_DELETION_STARTED))
        if ineligible:
            self.mark_topic_ineligible_for_deletion(ineligible, "offline replicas")

    async def _complete_delete_topic(self, topic: str) -> None:
        ctx = self.controller.ctx
        done = self._replicas_in_state(topic, R.REPLICA_DELETION_SUCCESSFUL)
        await self.controller.handle(rsc(ctx, done, R.NON_EXISTENT_REPLICA))
        await self.controller.zk.delete_topic_znodes(topic)
        ctx.remove_topic(topic)
        log.info("deletion of topic %s successfully completed", topic)

    async def _delete_markers(self, topics: set[str]) -> None:
        """``deleteTopicDeletions``, fenced by the controller epoch."""
        epoch = self.controller.epoch
        assert epoch is not None
        for topic in sorted(topics):
            with contextlib.suppress(NoNodeZkError):
                await self.controller.zk.fenced_multi(
                    epoch, [DeleteOp(DeleteTopicsTopicZNode.path(topic))]
                )
