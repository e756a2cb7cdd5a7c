"""The controller's side of a controlled shutdown (Kafka 3.9's
``KafkaController.controlledShutdown`` and ``doControlledShutdown``, ZooKeeper mode).

A broker about to stop sends ControlledShutdown (API 7) to the controller; its handler calls
``Controller.controlled_shutdown``, which queues a ``ControlledShutdown`` event whose ``reply``
future the handler awaits. Processing it, in Kafka's order:

1. A request with a broker epoch (v2+) older than the broker's registration (the czxid of
   ``/brokers/ids/<id>``): STALE_BROKER_EPOCH, nothing else happens. -1 (v0-v1) is never
   stale.
2. A broker that is not registered: BROKER_NOT_AVAILABLE.
3. The broker joins ``shutting_down_broker_ids``: from now on it is "live or shutting down"
   but not "live", so no election (offline, preferred, new partition, controlled shutdown)
   picks it as a leader and no new ISR includes it.
4. Of the partitions with a replica on it, more than one assigned replica, a leader, and a
   topic not queued for deletion: those it leads move to OnlinePartition under the
   controlled-shutdown election (first assigned replica that is live, in the ISR and not
   shutting down; the ISR loses the shutting-down brokers; LeaderAndIsr to the assigned
   replicas still registered, UpdateMetadata to every broker); those it follows get a
   StopReplica without delete, then its replica moves to OfflineReplica (it leaves the ISR in
   ZooKeeper, the other replicas get a LeaderAndIsr).
5. The answer: NONE and the partitions it still leads (``partitionLeadersOnBroker``: more than
   one replica but no other eligible ISR member). A partition with a single replica is never
   "remaining", as in Kafka: nothing could take it over, so waiting would not help.

A controller that is not active answers NOT_CONTROLLER at once (Kafka processes the event and
``doControlledShutdown`` throws ``ControllerMovedException``); a request queued or being
processed when the controller resigns is answered NOT_CONTROLLER too (Kafka's
``handlePreempt``). Any other failure is UNKNOWN_SERVER_ERROR (``Errors.forException``).

Difference from Kafka: a request with a broker epoch for a broker that is not registered gets
BROKER_NOT_AVAILABLE; Kafka looks the epoch up first and answers UNKNOWN_SERVER_ERROR from the
``NoSuchElementException``.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from franz.controller.election import ElectionStrategy
from franz.controller.events import ControlledShutdown
from franz.controller.model import PartitionAndReplica, TopicPartition
from franz.controller.states import (
    AddStopReplica,
    PartitionState,
    ReplicaState,
    partition_state_changes,
    replica_state_changes,
)
from franz.errors import ErrorCode

if TYPE_CHECKING:
    from franz.controller.shell.controller import Controller

__all__ = [
    "NO_BROKER_EPOCH",
    "ControlledShutdownResult",
    "answer",
    "process_controlled_shutdown",
]

log = logging.getLogger("franz.controller.shell.controller")

#: ``AbstractControlRequest.UNKNOWN_BROKER_EPOCH``: ControlledShutdown v0-v1 carry no epoch.
NO_BROKER_EPOCH = -1


@dataclass(frozen=True, slots=True)
class ControlledShutdownResult:
    """What the ControlledShutdown response carries."""

    error_code: ErrorCode
    remaining_partitions: frozenset[TopicPartition] = field(default_factory=frozenset)


def answer(event: ControlledShutdown, result: ControlledShutdownResult) -> None:
    """Resolve the event's reply future (once; a caller that gave up is ignored)."""
    reply = event.reply
    if isinstance(reply, asyncio.Future) and not reply.done():
        reply.set_result(result)


async def process_controlled_shutdown(
    controller: Controller, event: ControlledShutdown
) -> ControlledShutdownResult:
    """``doControlledShutdown`` (module docstring)."""
    ctx = controller.ctx
    broker_id = event.broker_id
    if event.broker_epoch != NO_BROKER_EPOCH:
        cached = ctx.live_broker_epochs().get(broker_id)
        if cached is not None and event.broker_epoch < cached:
            log.info(
                "Received controlled shutdown request from an old broker epoch %d for broker "
                "%d. Current broker epoch is %d.",
                event.broker_epoch,
                broker_id,
                cached,
            )
            return ControlledShutdownResult(ErrorCode.STALE_BROKER_EPOCH)
    log.info("Shutting down broker %d", broker_id)
    if broker_id not in ctx.live_or_shutting_down_broker_ids:
        log.info("Broker id %d does not exist.", broker_id)
        return ControlledShutdownResult(ErrorCode.BROKER_NOT_AVAILABLE)
    ctx.shutting_down_broker_ids.add(broker_id)
    log.debug("All shutting down brokers: %s", sorted(ctx.shutting_down_broker_ids))
    to_act_on = [
        tp
        for tp in sorted(ctx.partitions_on_broker(broker_id))
        if len(ctx.partition_replica_assignment(tp)) > 1
        and tp in ctx.partition_leadership_info
        and not ctx.is_topic_queued_up_for_deletion(tp.topic)
    ]
    led = [
        tp
        for tp in to_act_on
        if ctx.partition_leadership_info[tp].leader_and_isr.leader == broker_id
    ]
    followed = [tp for tp in to_act_on if tp not in set(led)]
    if led:
        await controller.refresh_leadership(led)
        await controller.handle(
            partition_state_changes(
                ctx,
                led,
                PartitionState.ONLINE_PARTITION,
                ElectionStrategy.CONTROLLED_SHUTDOWN,
                controller_id=controller.controller_id,
            )
        )
    if followed:
        controller.batch.new_batch(ctx)
        try:
            controller.batch.add(
                AddStopReplica((broker_id,), tp, delete_partition=False) for tp in followed
            )
            controller.send_batch()
        finally:
            controller.batch.clear()
        await controller.refresh_leadership(followed)
        await controller.handle(
            replica_state_changes(
                ctx,
                [PartitionAndReplica(tp, broker_id) for tp in followed],
                ReplicaState.OFFLINE_REPLICA,
            )
        )
    remaining = frozenset(ctx.partition_leaders_on_broker(broker_id))
    log.info(
        "controller %d: broker %d is shutting down; moved the leadership of %d partition(s), "
        "%d remaining",
        controller.controller_id,
        broker_id,
        len(led) - len(remaining & set(led)),
        len(remaining),
    )
    return ControlledShutdownResult(ErrorCode.NONE, remaining)
