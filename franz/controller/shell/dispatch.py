"""The controller's event table (Kafka 3.9's ``KafkaController.process`` match and the events'
``preempt``): which coroutine processes each event, and how an event carrying a request is
answered when it cannot be processed.

* ``HANDLERS``: event class -> ``handler(controller, event)``. An event not listed is logged
  as not handled (``BrokerModifications``, ``AllocateProducerIds``, ...).
* ``refuse(event, code)``: an event with a ``reply`` (a request from a broker or an admin
  client) is answered ``code`` for everything it asked: NOT_CONTROLLER when the controller
  resigned before answering (queued, or cancelled mid-way: Kafka's ``preempt`` and
  ``ControllerMovedException``), UNKNOWN_SERVER_ERROR when processing failed. An answer given
  already stands (the reply futures take the first answer only).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

from franz.controller.events import (
    AlterPartitionReceived,
    ApiPartitionReassignment,
    AutoPreferredReplicaLeaderElection,
    BrokerChange,
    ControlledShutdown,
    IsrChangeNotification,
    LeaderAndIsrResponseReceived,
    ListPartitionReassignments,
    LogDirEventNotification,
    PartitionModifications,
    PartitionReassignmentIsrChange,
    ReplicaLeaderElection,
    TopicChange,
    TopicDeletion,
    TopicDeletionStopReplicaResponseReceived,
    TopicUncleanLeaderElectionEnable,
    UncleanLeaderElectionEnable,
    UpdateMetadataResponseReceived,
    ZkPartitionReassignment,
)
from franz.controller.shell import brokers, reassignment, topics
from franz.controller.shell.alter_partition import AlterPartitionResult, process_alter_partition
from franz.controller.shell.alter_partition import answer as answer_alter_partition
from franz.controller.shell.controlled_shutdown import (
    ControlledShutdownResult,
    process_controlled_shutdown,
)
from franz.controller.shell.controlled_shutdown import answer as answer_controlled_shutdown
from franz.controller.shell.replica_election import answer as answer_election
from franz.controller.shell.replica_election import answer_all, process_replica_election
from franz.errors import ErrorCode

if TYPE_CHECKING:
    from franz.controller.shell.controller import Controller

__all__ = ["HANDLERS", "Handler", "refuse"]

log = logging.getLogger("franz.controller.shell.controller")

Handler = Callable[["Controller", Any], Awaitable[None]]


async def _controlled_shutdown(c: Controller, event: ControlledShutdown) -> None:
    answer_controlled_shutdown(event, await process_controlled_shutdown(c, event))


async def _replica_leader_election(c: Controller, event: ReplicaLeaderElection) -> None:
    answer_election(event, await process_replica_election(c, event))


async def _alter_partition(c: Controller, event: AlterPartitionReceived) -> None:
    """``processAlterPartition``: answer, then the reassignments the ISR changes may end."""
    result = await process_alter_partition(c, event)
    answer_alter_partition(event, result)
    for tp in sorted(result.accepted):
        await reassignment.maybe_complete_reassignment(c, tp)


async def _api_partition_reassignment(c: Controller, event: ApiPartitionReassignment) -> None:
    reassignment.answer_alter(
        event, await reassignment.process_api_partition_reassignment(c, event)
    )


async def _list_partition_reassignments(c: Controller, event: ListPartitionReassignments) -> None:
    reassignment.answer_list(event, reassignment.process_list_partition_reassignments(c, event))


async def _zk_partition_reassignment(c: Controller, _event: ZkPartitionReassignment) -> None:
    await reassignment.process_zk_partition_reassignment(c)


async def _reassignment_isr_change(c: Controller, event: PartitionReassignmentIsrChange) -> None:
    await reassignment.maybe_complete_reassignment(c, event.partition)


async def _auto_rebalance(c: Controller, _event: AutoPreferredReplicaLeaderElection) -> None:
    await c.auto_rebalance.process()


async def _topic_deletion(c: Controller, _event: TopicDeletion) -> None:
    await c.deletion.process_topic_deletion()


async def _stop_replica_response(
    c: Controller, event: TopicDeletionStopReplicaResponseReceived
) -> None:
    await c.deletion.process_stop_replica_response(event)


async def _topic_unclean(c: Controller, event: TopicUncleanLeaderElectionEnable) -> None:
    log.info("Unclean leader election has been enabled for topic %s", event.topic)
    await c.trigger_online_partition_state_change(event.topic)


async def _unclean(c: Controller, _event: UncleanLeaderElectionEnable) -> None:
    log.info("Unclean leader election has been enabled by default")
    await c.trigger_online_partition_state_change()


async def _update_metadata_response(c: Controller, event: UpdateMetadataResponseReceived) -> None:
    if event.error_code != ErrorCode.NONE:
        log.warning(
            "UpdateMetadata to broker %d failed: %s", event.broker_id, event.error_code.name
        )


HANDLERS: Final[dict[type, Handler]] = {
    ControlledShutdown: _controlled_shutdown,
    ReplicaLeaderElection: _replica_leader_election,
    AutoPreferredReplicaLeaderElection: _auto_rebalance,
    AlterPartitionReceived: _alter_partition,
    BrokerChange: lambda c, _: brokers.process_broker_change(c),
    TopicChange: lambda c, _: topics.process_topic_change(c),
    PartitionModifications: lambda c, e: topics.process_partition_modifications(c, e.topic),
    TopicDeletion: _topic_deletion,
    TopicDeletionStopReplicaResponseReceived: _stop_replica_response,
    IsrChangeNotification: lambda c, _: topics.process_isr_change_notification(c),
    LogDirEventNotification: lambda c, _: brokers.process_log_dir_event_notification(c),
    LeaderAndIsrResponseReceived: brokers.process_leader_and_isr_response,
    TopicUncleanLeaderElectionEnable: _topic_unclean,
    UncleanLeaderElectionEnable: _unclean,
    UpdateMetadataResponseReceived: _update_metadata_response,
    ApiPartitionReassignment: _api_partition_reassignment,
    ListPartitionReassignments: _list_partition_reassignments,
    ZkPartitionReassignment: _zk_partition_reassignment,
    PartitionReassignmentIsrChange: _reassignment_isr_change,
}

_REFUSALS: Final[dict[type, Callable[[Any, ErrorCode], None]]] = {
    ControlledShutdown: lambda e, code: answer_controlled_shutdown(
        e, ControlledShutdownResult(code)
    ),
    ReplicaLeaderElection: answer_all,
    AlterPartitionReceived: lambda e, code: answer_alter_partition(e, AlterPartitionResult(code)),
    ApiPartitionReassignment: reassignment.refuse_alter,
    ListPartitionReassignments: reassignment.refuse_list,
}


def refuse(event: object, code: ErrorCode) -> None:
    """Answer ``code`` to an event carrying a request (module docstring); others: nothing."""
    refusal = _REFUSALS.get(type(event))
    if refusal is not None:
        refusal(event, code)
