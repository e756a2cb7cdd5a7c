"""The controller's topic events (Kafka 3.9's ``KafkaController.processTopicChange``,
``processPartitionModifications``, ``onNewPartitionCreation`` and
``processIsrChangeNotification``), run by the controller's event task.

* ``TopicChange``: topics gone from ``/brokers/topics`` are forgotten; new ones are added to
  the context (a topic znode without an id gets one written) with a data watch on their znode,
  and their partitions created (New, NewReplica, Online with a state znode of epoch 0,
  OnlineReplica).
* ``PartitionModifications``: partitions added to an existing topic (CreatePartitions) are
  created the same way; none is added to a topic being deleted.
* ``IsrChangeNotification`` (brokers that changed an ISR in ZooKeeper directly, before
  AlterPartition): the named partitions are re-read, announced to every broker, and those
  being reassigned may complete (``maybeCompleteReassignment``); the notifications are
  deleted (fenced).
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from franz.controller.election import ElectionStrategy
from franz.controller.events import PartitionModifications
from franz.controller.model import TopicPartition
from franz.controller.shell.reassignment import maybe_complete_reassignment
from franz.controller.shell.zk_reads import (
    read_isr_change_notifications,
    replica_assignment,
    with_topic_id,
)
from franz.controller.states import (
    PartitionState,
    ReplicaState,
    partition_state_changes,
    replica_state_changes,
)
from franz.metadata.znodes import IsrChangeNotificationZNode, TopicAssignment, TopicZNode
from franz.metadata.zookeeper import DeleteOp

if TYPE_CHECKING:
    from franz.controller.shell.controller import Controller

__all__ = [
    "add_topic",
    "on_new_partition_creation",
    "process_isr_change_notification",
    "process_partition_modifications",
    "process_topic_change",
]

log = logging.getLogger("franz.controller.shell.controller")


async def add_topic(controller: Controller, topic: str, assignment: TopicAssignment) -> None:
    """Into the context; a topic znode without an id gets one written (Kafka's
    ``processTopicIds`` / ``setTopicIds``)."""
    topic_id = assignment.topic_id
    if topic_id is None:
        topic_id = uuid.uuid4()
        await controller.zk.set_topic_assignment(topic, with_topic_id(assignment, topic_id))
    controller.ctx.add_topic(topic, topic_id, replica_assignment(assignment))
    watch_partition_modifications(controller, topic)


def watch_partition_modifications(controller: Controller, topic: str) -> None:
    """``registerPartitionModificationsHandlers``: a data watch on ``/brokers/topics/<t>``
    (once per topic name: it keeps watching across a deletion and a re-creation)."""
    if topic in controller.watched_topics:
        return
    controller.watched_topics.add(topic)
    controller.zk.zk.watch_data(
        TopicZNode.path(topic),
        lambda data, _stat: controller.post(PartitionModifications(topic)) if data else None,
    )


async def process_topic_change(controller: Controller) -> None:
    """``processTopicChange``: forget removed topics, create new ones' partitions."""
    ctx = controller.ctx
    topics = set(await controller.zk.get_all_topics())
    new = topics - ctx.all_topics
    for topic in ctx.all_topics - topics:
        ctx.remove_topic(topic)
    if not new:
        return
    assignments = await controller.zk.get_topic_assignments(sorted(new))
    for topic, assignment in assignments.items():
        await add_topic(controller, topic, assignment)
    partitions = sorted(tp for t in assignments for tp in ctx.partitions_for_topic(t))
    if partitions:
        await on_new_partition_creation(controller, partitions)


async def process_partition_modifications(controller: Controller, topic: str) -> None:
    """``processPartitionModifications``: partitions added to an existing topic
    (CreatePartitions) are created; none may be added to a topic being deleted (Kafka
    then restores the znode's assignment; Franz logs it)."""
    ctx = controller.ctx
    if topic not in ctx.partition_assignments:
        return  # a new topic is TopicChange's business; a deleted one has no partitions
    found = await controller.zk.get_topic_assignments([topic])
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
    await on_new_partition_creation(controller, sorted(TopicPartition(topic, p) for p in added))


async def on_new_partition_creation(
    controller: Controller, partitions: list[TopicPartition]
) -> None:
    """``onNewPartitionCreation``: New, NewReplica, Online (epoch 0 state znodes, a
    LeaderAndIsr with isNew), OnlineReplica."""
    ctx = controller.ctx
    cid = controller.controller_id
    await controller.handle(
        partition_state_changes(ctx, partitions, PartitionState.NEW_PARTITION, controller_id=cid)
    )
    replicas = ctx.replicas_for_partitions(partitions)
    await controller.handle(replica_state_changes(ctx, replicas, ReplicaState.NEW_REPLICA))
    await controller.handle(
        partition_state_changes(
            ctx,
            partitions,
            PartitionState.ONLINE_PARTITION,
            ElectionStrategy.OFFLINE,
            controller_id=cid,
        )
    )
    await controller.handle(replica_state_changes(ctx, replicas, ReplicaState.ONLINE_REPLICA))


async def process_isr_change_notification(controller: Controller) -> None:
    """``processIsrChangeNotification``: re-read the named partitions, UpdateMetadata to
    every broker, reassignments that may complete, delete the notifications (fenced)."""
    ctx = controller.ctx
    epoch = controller.epoch
    assert epoch is not None
    children, partitions = await read_isr_change_notifications(controller.zk)
    try:
        known = {tp for tp in partitions if tp.topic in ctx.partition_assignments}
        if known:
            await controller.refresh_leadership(known)
            controller.send_update_metadata(ctx.live_or_shutting_down_broker_ids, known)
            for tp in sorted(known & ctx.partitions_being_reassigned):
                await maybe_complete_reassignment(controller, tp)
    finally:
        if children:
            await controller.zk.fenced_multi(
                epoch,
                [DeleteOp(f"{IsrChangeNotificationZNode.path}/{c}") for c in children],
            )
