"""The controller's side of AlterPartition (Kafka 3.9's ``KafkaController.alterPartitions``
and ``processAlterPartition``, ZooKeeper mode).

The AlterPartition handler calls ``Controller.alter_partition``, which queues an
``AlterPartitionReceived`` event whose ``reply`` future the handler awaits. Processing it:

1. ``franz.controller.alter_partition.plan_alter_partition`` (pure): the broker epoch check,
   topic ids, and per partition an answer or a state to write.
2. Each accepted state is written to ``/brokers/topics/<t>/partitions/<p>/state`` with a
   ``setData`` conditional on the partition epoch the leader sent (its zk version), fenced by
   the controller epoch (Kafka's ``updateLeaderAndIsr``), the controller epoch in the JSON
   being this controller's. A write that loses the race (BADVERSION) answers
   INVALID_UPDATE_VERSION; any other ZooKeeper failure answers UNKNOWN_SERVER_ERROR for that
   partition (Kafka's ``Errors.forException``). A fenced write (``/controller_epoch`` moved)
   ends the event: the controller resigns and the request is answered NOT_CONTROLLER.
3. The context takes each written state, with the znode's new version as partition epoch
   (Kafka re-reads the znodes it wrote, ``updateLeaderAndIsrCache``; the values are the same).
4. UpdateMetadata for every partition asked about to every live or shutting-down broker (so
   every broker's Metadata shows the new ISR).
5. The answer: per partition NONE with the state now in ZooKeeper (leader, leader epoch, ISR,
   recovery state, partition epoch = zk version), or its error.

A controller that is not active answers NOT_CONTROLLER (top level, no topics) at once; so does
a request queued or being processed when the controller resigns (Kafka's ``preempt``). Any
other failure of the event is UNKNOWN_SERVER_ERROR at top level.

Then (``franz.controller.shell.dispatch``, after the answer, as Kafka's
``processAlterPartition``) each partition answered NONE that is being reassigned (KIP-455) may
complete its move: its new ISR may hold every target replica
(``franz.controller.shell.reassignment.maybe_complete_reassignment``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from franz.controller.alter_partition import (
    TOPIC_ID_VERSION,
    AlterPartitionPlan,
    PartitionOutcome,
    plan_alter_partition,
)
from franz.controller.events import AlterPartitionReceived
from franz.controller.model import LeaderIsrAndControllerEpoch, TopicPartition
from franz.controller.shell.zk_reads import state_from_leadership
from franz.errors import ErrorCode
from franz.metadata.zookeeper import BadVersionError, ZooKeeperError

if TYPE_CHECKING:
    from franz.controller.shell.controller import Controller

__all__ = ["AlterPartitionResult", "answer", "group_outcomes", "process_alter_partition"]

log = logging.getLogger("franz.controller.shell.controller")


@dataclass(frozen=True, slots=True)
class AlterPartitionResult:
    """What the AlterPartition response carries: a top-level error, or per topic (keyed as
    the request named it: ``(name, None)`` for v0-v1, ``(None, id)`` for v2+) the partitions'
    outcomes."""

    error: ErrorCode
    topics: dict[tuple[str | None, uuid.UUID | None], dict[int, PartitionOutcome]] = field(
        default_factory=dict
    )
    #: The partitions answered NONE (not sent: what ``maybeCompleteReassignment`` looks at).
    accepted: frozenset[TopicPartition] = frozenset()


def answer(event: AlterPartitionReceived, result: AlterPartitionResult) -> None:
    """Resolve the event's reply future (once; a caller that gave up is ignored)."""
    reply = event.reply
    if isinstance(reply, asyncio.Future) and not reply.done():
        reply.set_result(result)


async def process_alter_partition(
    controller: Controller, event: AlterPartitionReceived
) -> AlterPartitionResult:
    """``processAlterPartition`` (module docstring)."""
    ctx = controller.ctx
    request = event.request
    plan = plan_alter_partition(ctx, request)
    if plan.error != ErrorCode.NONE:
        log.info(
            "Ignoring AlterPartition from broker %d: %s (broker epoch %d, registered %s)",
            request.broker_id,
            plan.error.name,
            request.broker_epoch,
            ctx.live_broker_epochs().get(request.broker_id),
        )
        return AlterPartitionResult(plan.error)
    outcomes = dict(plan.outcomes)
    for tp, outcome in plan.outcomes.items():
        if outcome.error not in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            log.info(
                "Rejecting AlterPartition from broker %d for %s: %s",
                request.broker_id,
                tp,
                outcome.error.name,
            )
    epoch = controller.epoch
    assert epoch is not None
    for tp, new in plan.to_write.items():
        info = LeaderIsrAndControllerEpoch(new, ctx.epoch)
        try:
            written = await controller.zk.update_partition_state(
                epoch, tp.topic, tp.partition, state_from_leadership(info, new.partition_epoch)
            )
        except BadVersionError:
            log.info("Failed to update ISR to %s for partition %s, bad ZK version.", new.isr, tp)
            outcomes[tp] = PartitionOutcome(ErrorCode.INVALID_UPDATE_VERSION)
            continue
        except ZooKeeperError as exc:
            log.error("Failed to update ISR for partition %s: %s", tp, exc)
            outcomes[tp] = PartitionOutcome(ErrorCode.UNKNOWN_SERVER_ERROR)
            continue
        updated = new.with_partition_epoch(written.zk_version)
        ctx.partition_leadership_info[tp] = LeaderIsrAndControllerEpoch(updated, ctx.epoch)
        outcomes[tp] = PartitionOutcome(ErrorCode.NONE, updated)
        log.info(
            "ISR for partition %s updated to %s and zkVersion updated to version %d",
            tp,
            ",".join(str(r) for r in updated.isr),
            updated.partition_epoch,
        )
    if plan.partitions:
        controller.send_update_metadata(ctx.live_or_shutting_down_broker_ids, plan.partitions)
    result = group_outcomes(request.version, plan, outcomes, ctx.topic_ids)
    accepted = frozenset(tp for tp, o in outcomes.items() if o.error == ErrorCode.NONE)
    return dataclasses.replace(result, accepted=accepted)


def group_outcomes(
    version: int,
    plan: AlterPartitionPlan,
    outcomes: dict[TopicPartition, PartitionOutcome],
    topic_ids: dict[str, uuid.UUID],
) -> AlterPartitionResult:
    """Group the outcomes per topic as the request named them (v2+: by the id it sent)."""
    result = AlterPartitionResult(ErrorCode.NONE)
    for topic_id, partitions in plan.unknown_topic_ids.items():
        result.topics[(None, topic_id)] = {
            p: PartitionOutcome(ErrorCode.UNKNOWN_TOPIC_ID) for p in partitions
        }
    for tp, outcome in outcomes.items():
        if version >= TOPIC_ID_VERSION:
            key: tuple[str | None, uuid.UUID | None] = (None, topic_ids.get(tp.topic))
        else:
            key = (tp.topic, None)
        result.topics.setdefault(key, {})[tp.partition] = outcome
    return result
