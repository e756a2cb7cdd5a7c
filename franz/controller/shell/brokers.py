"""The controller's broker events (Kafka 3.9's ``KafkaController.processBrokerChange``,
``onBrokerStartup``, ``onBrokerFailure``, ``onReplicasBecomeOffline``,
``processLogDirEventNotification`` and ``processLeaderAndIsrResponseReceived``), run by the
controller's event task.

* ``BrokerChange``: new, dead and bounced brokers (a bounce: a newer czxid of
  ``/brokers/ids/<id>``, handled as a failure then a startup). A new broker gets the full
  metadata, its replicas go OnlineReplica (LeaderAndIsr), offline partitions are elected, and
  the reassignments with a target replica on it resume (``maybeResumeReassignments``), as a
  deletion waiting for its replicas.
* A dead broker's replicas go offline: partitions it led are elected again, it leaves the
  ISRs (``on_replicas_become_offline``).
* ``LogDirEventNotification`` (KIP-112): LeaderAndIsr for every replica of the brokers named,
  whose KAFKA_STORAGE_ERROR answers (``LeaderAndIsrResponseReceived``) take those replicas
  offline.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from franz.controller.events import LeaderAndIsrResponseReceived
from franz.controller.model import PartitionAndReplica
from franz.controller.shell.reassignment import maybe_resume_reassignments
from franz.controller.shell.zk_reads import (
    read_brokers_and_epochs,
    read_log_dir_event_notifications,
)
from franz.controller.states import (
    PartitionState,
    ReplicaState,
    partition_state_changes,
    replica_state_changes,
)
from franz.errors import ErrorCode
from franz.metadata.znodes import LogDirEventNotificationZNode
from franz.metadata.zookeeper import DeleteOp

if TYPE_CHECKING:
    from franz.controller.shell.controller import Controller

__all__ = [
    "delete_log_dir_event_notifications",
    "on_replicas_become_offline",
    "process_broker_change",
    "process_leader_and_isr_response",
    "process_log_dir_event_notification",
]

log = logging.getLogger("franz.controller.shell.controller")


async def process_broker_change(controller: Controller) -> None:
    """``processBrokerChange``: new, dead and bounced (newer czxid) brokers."""
    ctx = controller.ctx
    current = await read_brokers_and_epochs(controller.zk)
    known = ctx.live_or_shutting_down_broker_ids
    epochs = ctx.live_broker_epochs()
    new = sorted(set(current) - known)
    dead = sorted(known - set(current))
    bounced = sorted(b for b in set(current) & known if current[b].epoch > epochs[b])
    log.info(
        "controller %d: new brokers %s, dead %s, bounced %s",
        controller.controller_id,
        new,
        dead,
        bounced,
    )
    for b in new:
        controller.channel.add_broker(current[b])
    for b in bounced:
        await controller.channel.remove_broker(b)
        controller.channel.add_broker(current[b])
    for b in dead:
        await controller.channel.remove_broker(b)
    if new:
        ctx.add_live_brokers(current[b] for b in new)
        await on_broker_startup(controller, new)
    if bounced:
        ctx.remove_live_brokers(bounced)
        await on_broker_failure(controller, bounced)
        ctx.add_live_brokers(current[b] for b in bounced)
        await on_broker_startup(controller, bounced)
    if dead:
        ctx.remove_live_brokers(dead)
        await on_broker_failure(controller, dead)


async def on_broker_startup(controller: Controller, new: list[int]) -> None:
    """``onBrokerStartup``: metadata to all, replicas online, offline partitions elected."""
    ctx = controller.ctx
    for b in new:
        ctx.replicas_on_offline_dirs.pop(b, None)
    controller.send_update_metadata(ctx.live_or_shutting_down_broker_ids - set(new))
    with_leaders = {
        tp
        for tp in ctx.partition_leadership_info
        if not ctx.is_topic_queued_up_for_deletion(tp.topic)
    }
    controller.send_update_metadata(new, with_leaders)
    replicas = ctx.replicas_on_brokers(new)
    await controller.handle(replica_state_changes(ctx, replicas, ReplicaState.ONLINE_REPLICA))
    await controller.trigger_online_partition_state_change()
    new_brokers = set(new)
    await maybe_resume_reassignments(
        controller, lambda _, a: any(r in new_brokers for r in a.target_replicas)
    )
    to_delete = {r.topic_partition.topic for r in replicas} & ctx.topics_to_be_deleted
    if to_delete:
        await controller.deletion.resume_deletion_for_topics(to_delete)


async def on_broker_failure(controller: Controller, dead: list[int]) -> None:
    """``onBrokerFailure``."""
    ctx = controller.ctx
    for b in dead:
        ctx.replicas_on_offline_dirs.pop(b, None)
    await on_replicas_become_offline(controller, ctx.replicas_on_brokers(dead))


async def on_replicas_become_offline(
    controller: Controller, replicas: set[PartitionAndReplica]
) -> None:
    """``onReplicasBecomeOffline``: elect where the leader went, shrink ISRs."""
    ctx = controller.ctx
    for_deletion = {
        r for r in replicas if ctx.is_topic_queued_up_for_deletion(r.topic_partition.topic)
    }
    not_for_deletion = replicas - for_deletion
    offline_leader = sorted(ctx.partitions_with_offline_leader())
    await controller.handle(
        partition_state_changes(
            ctx,
            offline_leader,
            PartitionState.OFFLINE_PARTITION,
            controller_id=controller.controller_id,
        )
    )
    online = await controller.trigger_online_partition_state_change()
    await controller.refresh_leadership({r.topic_partition for r in not_for_deletion})
    await controller.handle(
        replica_state_changes(ctx, not_for_deletion, ReplicaState.OFFLINE_REPLICA)
    )
    if for_deletion:
        await controller.handle(
            replica_state_changes(ctx, for_deletion, ReplicaState.REPLICA_DELETION_INELIGIBLE)
        )
        await controller.deletion.fail_replica_deletion(for_deletion)
    if not not_for_deletion and not online.leadership:
        controller.send_update_metadata(ctx.live_or_shutting_down_broker_ids)


async def process_log_dir_event_notification(controller: Controller) -> None:
    """``processLogDirEventNotification``: for every broker named, ``onBrokerLogDirFailure``
    (its replicas -> OnlineReplica: a LeaderAndIsr for each, so that the broker answers
    KAFKA_STORAGE_ERROR for those on the failed dir; ``process_leader_and_isr_response``
    takes them offline), then delete the notifications (fenced)."""
    ctx = controller.ctx
    children, brokers = await read_log_dir_event_notifications(controller.zk)
    try:
        live = [b for b in brokers if b in ctx.live_or_shutting_down_broker_ids]
        if live:
            log.info(
                "controller %d: handling log directory failure for brokers %s",
                controller.controller_id,
                ",".join(str(b) for b in live),
            )
            replicas = ctx.replicas_on_brokers(live)
            await controller.handle(
                replica_state_changes(ctx, replicas, ReplicaState.ONLINE_REPLICA)
            )
    finally:
        await delete_log_dir_event_notifications(controller, children)


async def delete_log_dir_event_notifications(controller: Controller, children: list[str]) -> None:
    epoch = controller.epoch
    assert epoch is not None
    if children:
        await controller.zk.fenced_multi(
            epoch, [DeleteOp(f"{LogDirEventNotificationZNode.path}/{c}") for c in children]
        )


async def process_leader_and_isr_response(
    controller: Controller, event: LeaderAndIsrResponseReceived
) -> None:
    """``processLeaderAndIsrResponseReceived``: KAFKA_STORAGE_ERROR partitions are on a
    failed log dir of that broker (KIP-112): their replicas go offline."""
    ctx = controller.ctx
    if event.error_code != ErrorCode.NONE:
        log.error("LeaderAndIsr to broker %d failed: %s", event.broker_id, event.error_code.name)
        return
    offline = {tp for tp, e in event.partition_errors.items() if e == ErrorCode.KAFKA_STORAGE_ERROR}
    known = ctx.replicas_on_offline_dirs.setdefault(event.broker_id, set())
    fresh = offline - known
    known.update(offline)
    if fresh:
        await on_replicas_become_offline(
            controller, {PartitionAndReplica(tp, event.broker_id) for tp in fresh}
        )
