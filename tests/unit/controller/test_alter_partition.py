"""AlterPartition's validation in the controller core (``franz.controller.alter_partition``,
Kafka 3.9's ``processAlterPartition`` in ZooKeeper mode): every answer it gives without
touching ZooKeeper. The writes, UpdateMetadata and the wire are
``tests/cluster/test_replication_alter_partition.py``."""

from __future__ import annotations

import asyncio
import uuid
from typing import cast

import pytest

from franz.controller.alter_partition import (
    AlterPartitionData,
    AlterPartitionRequestData,
    AlterPartitionTopicData,
    PartitionOutcome,
    check_broker_epoch,
    equals_allow_stale_partition_epoch,
    plan_alter_partition,
    validate_partition,
)
from franz.controller.context import Broker, ControllerContext
from franz.controller.model import (
    LeaderAndIsr,
    LeaderIsrAndControllerEpoch,
    LeaderRecoveryState,
    TopicPartition,
)
from franz.controller.shell.alter_partition import AlterPartitionResult
from franz.controller.shell.controller import Controller
from franz.errors import ErrorCode
from franz.metadata.kafka_zk_client import ControllerEpoch, KafkaZkClient

TOPIC_ID = uuid.UUID(int=7)
#: Led by 1 at leader epoch 4, partition epoch (zk version) 9, ISR [1, 2, 3].
TP = TopicPartition("t", 0)
#: Led by 1 after an unclean election: RECOVERING, ISR [1].
RECOVERING = TopicPartition("t", 1)
CURRENT = LeaderAndIsr(1, (1, 2, 3), leader_epoch=4, partition_epoch=9)


def context() -> ControllerContext:
    ctx = ControllerContext(epoch=5)
    ctx.add_live_brokers(Broker(b, epoch=100 + b) for b in (1, 2, 3, 4))
    ctx.add_topic("t", TOPIC_ID, {})
    ctx.update_partition_replica_assignment(TP, (1, 2, 3, 4))
    ctx.update_partition_replica_assignment(RECOVERING, (1, 2))
    ctx.partition_leadership_info[TP] = LeaderIsrAndControllerEpoch(CURRENT, 5)
    recovering = LeaderAndIsr(
        1, (1,), leader_epoch=2, leader_recovery_state=LeaderRecoveryState.RECOVERING
    )
    ctx.partition_leadership_info[RECOVERING] = LeaderIsrAndControllerEpoch(recovering, 5)
    return ctx


def proposal(
    isr: tuple[int, ...],
    leader_epoch: int = 4,
    partition_epoch: int = 9,
    recovery: LeaderRecoveryState = LeaderRecoveryState.RECOVERED,
    leader: int = 1,
) -> LeaderAndIsr:
    return LeaderAndIsr(leader, isr, leader_epoch, recovery, partition_epoch)


def request(
    *partitions: AlterPartitionData,
    version: int = 3,
    broker_id: int = 1,
    broker_epoch: int = 101,
    topic_id: uuid.UUID | None = TOPIC_ID,
    topic_name: str | None = "t",
) -> AlterPartitionRequestData:
    topic = AlterPartitionTopicData(
        topic_name if version < 2 else None, topic_id if version >= 2 else None, partitions
    )
    return AlterPartitionRequestData(version, broker_id, broker_epoch, (topic,))


def data(
    index: int, isr: tuple[int, ...], leader_epoch: int = 4, partition_epoch: int = 9
) -> AlterPartitionData:
    return AlterPartitionData(index, leader_epoch, isr, 0, partition_epoch)


# -- the broker epoch (whole request) ------------------------------------------------------


@pytest.mark.parametrize(
    ("broker_id", "epoch", "expected"),
    [
        (1, 101, ErrorCode.NONE),
        (1, 100, ErrorCode.STALE_BROKER_EPOCH),  # older registration
        (1, 102, ErrorCode.STALE_BROKER_EPOCH),  # not exactly the registered one either
        (1, -1, ErrorCode.STALE_BROKER_EPOCH),
        (9, 109, ErrorCode.STALE_BROKER_EPOCH),  # not registered at all
    ],
)
def test_broker_epoch_must_be_the_registered_one(
    broker_id: int, epoch: int, expected: ErrorCode
) -> None:
    assert check_broker_epoch(context(), broker_id, epoch) == expected


def test_a_broker_in_controlled_shutdown_may_still_alter() -> None:
    ctx = context()
    ctx.shutting_down_broker_ids.add(1)
    assert check_broker_epoch(ctx, 1, 101) == ErrorCode.NONE


def test_stale_broker_epoch_answers_the_whole_request() -> None:
    plan = plan_alter_partition(context(), request(data(0, (1, 2)), broker_epoch=99))
    assert plan.error == ErrorCode.STALE_BROKER_EPOCH
    assert (plan.outcomes, plan.to_write, plan.unknown_topic_ids) == ({}, {}, {})


# -- per partition -----------------------------------------------------------------------------


def test_a_shrink_is_accepted_with_the_sender_as_leader() -> None:
    assert validate_partition(context(), TP, proposal((1, 2)), 3) is None
    plan = plan_alter_partition(context(), request(data(0, (1, 2))))
    assert plan.error == ErrorCode.NONE
    assert plan.to_write == {TP: proposal((1, 2))}
    assert plan.partitions == {TP}


def test_an_expansion_is_accepted() -> None:
    assert validate_partition(context(), TP, proposal((1, 2, 3, 4)), 3) is None


def test_unknown_partition() -> None:
    unknown = TopicPartition("t", 5)
    assert validate_partition(context(), unknown, proposal((1,)), 3) == PartitionOutcome(
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    )


@pytest.mark.parametrize(
    ("leader_epoch", "partition_epoch", "expected"),
    [
        (5, 9, ErrorCode.NOT_CONTROLLER),  # newer leader epoch than this controller knows
        (4, 10, ErrorCode.NOT_CONTROLLER),  # newer partition epoch
        (3, 9, ErrorCode.FENCED_LEADER_EPOCH),
        (3, 8, ErrorCode.FENCED_LEADER_EPOCH),
        (4, 8, ErrorCode.INVALID_UPDATE_VERSION),
    ],
)
def test_epochs(leader_epoch: int, partition_epoch: int, expected: ErrorCode) -> None:
    new = proposal((1, 2), leader_epoch, partition_epoch)
    assert validate_partition(context(), TP, new, 3) == PartitionOutcome(expected)


def test_the_current_state_is_answered_even_with_a_stale_partition_epoch() -> None:
    """Idempotence: a retried request whose first copy was applied gets the state back."""
    for partition_epoch in (9, 3):
        new = proposal((1, 2, 3), partition_epoch=partition_epoch)
        assert validate_partition(context(), TP, new, 3) == PartitionOutcome(
            ErrorCode.NONE, CURRENT
        )


def test_same_members_in_another_order_is_a_change() -> None:
    assert not equals_allow_stale_partition_epoch(proposal((1, 3, 2)), CURRENT)
    assert validate_partition(context(), TP, proposal((1, 3, 2), partition_epoch=8), 3) == (
        PartitionOutcome(ErrorCode.INVALID_UPDATE_VERSION)
    )


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        (0, ErrorCode.OPERATION_NOT_ATTEMPTED),
        (1, ErrorCode.OPERATION_NOT_ATTEMPTED),
        (2, ErrorCode.INELIGIBLE_REPLICA),
        (3, ErrorCode.INELIGIBLE_REPLICA),
    ],
)
def test_ineligible_replicas(version: int, expected: ErrorCode) -> None:
    """KIP-841: every new ISR member must be a live broker, not one shutting down."""
    ctx = context()
    ctx.shutting_down_broker_ids.add(3)
    ctx.remove_live_brokers([4])
    for isr in ((1, 3), (1, 2, 4), (1, 9)):
        assert validate_partition(ctx, TP, proposal(isr), version) == PartitionOutcome(expected)
    assert validate_partition(ctx, TP, proposal((1, 2)), version) is None


def test_leader_recovery_rules() -> None:
    """KIP-704: a RECOVERING leader's ISR is itself only; RECOVERED never goes back."""
    ctx = context()
    recovered = LeaderRecoveryState.RECOVERED
    recovering = LeaderRecoveryState.RECOVERING
    invalid = PartitionOutcome(ErrorCode.INVALID_REQUEST)
    # Back to RECOVERING from RECOVERED, even with an ISR of one.
    assert validate_partition(ctx, TP, proposal((1,), recovery=recovering), 3) == invalid
    # RECOVERING with more than one replica.
    grow = LeaderAndIsr(1, (1, 2), 2, recovering, 0)
    assert validate_partition(ctx, RECOVERING, grow, 3) == invalid
    # Done recovering: RECOVERED, and the ISR may grow with it.
    done = LeaderAndIsr(1, (1, 2), 2, recovered, 0)
    assert validate_partition(ctx, RECOVERING, done, 3) is None


def test_an_unknown_recovery_state_is_an_invalid_request() -> None:
    bad = AlterPartitionData(0, 4, (1, 2), 7, 9)
    plan = plan_alter_partition(context(), request(bad))
    assert plan.outcomes == {TP: PartitionOutcome(ErrorCode.INVALID_REQUEST)}
    assert plan.to_write == {}


# -- topics ------------------------------------------------------------------------------------


def test_unknown_topic_id_answers_each_of_its_partitions() -> None:
    other = uuid.UUID(int=8)
    plan = plan_alter_partition(
        context(), request(data(0, (1,)), data(3, (1,)), topic_id=other, version=2)
    )
    assert plan.unknown_topic_ids == {other: (0, 3)}
    assert (plan.outcomes, plan.to_write) == ({}, {})


def test_v0_v1_name_topics() -> None:
    plan = plan_alter_partition(context(), request(data(0, (1, 2)), version=1))
    assert plan.to_write == {TP: proposal((1, 2))}
    unknown = plan_alter_partition(
        context(), request(data(0, (1, 2)), version=0, topic_name="nope")
    )
    assert unknown.outcomes == {
        TopicPartition("nope", 0): PartitionOutcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    }
    assert unknown.unknown_topic_ids == {}


def test_mixed_request() -> None:
    plan = plan_alter_partition(
        context(),
        request(data(0, (1, 2)), data(1, (1,), leader_epoch=1, partition_epoch=0), data(7, (1,))),
    )
    assert plan.to_write == {TP: proposal((1, 2))}
    assert plan.outcomes == {
        RECOVERING: PartitionOutcome(ErrorCode.FENCED_LEADER_EPOCH),
        TopicPartition("t", 7): PartitionOutcome(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
    }


# -- the shell's answers when it is not (or no longer) the controller --------------------------


def test_not_controller_at_once_and_on_resignation() -> None:
    """Kafka's ``handleAlterPartitionRequest`` answers NOT_CONTROLLER when not active, and
    ``AlterPartitionReceived.preempt`` when the controller resigns with it queued."""

    async def main() -> tuple[AlterPartitionResult, AlterPartitionResult, bool]:
        # No ZooKeeper is touched on these paths: the event task is never started.
        controller = Controller(cast(KafkaZkClient, None), 1)
        inactive = controller.alter_partition(request(data(0, (1, 2))))
        controller._epoch = ControllerEpoch(5, 4)  # as if elected, the event still queued
        queued = controller.alter_partition(request(data(0, (1, 2))))
        waiting = not queued.done()
        controller.resign()
        return inactive.result(), queued.result(), waiting

    inactive, queued, waiting = asyncio.run(main())
    assert waiting
    assert inactive == queued == AlterPartitionResult(ErrorCode.NOT_CONTROLLER)


def test_a_request_whose_event_task_is_cancelled_before_it_runs_is_answered() -> None:
    """The event task picked the request from the queue, and the controller resigned before
    that task's first step: ``_process`` never ran, yet the request is answered NOT_CONTROLLER
    (it used to wait without end: a leader's ISR change stalled until the resigned
    controller's broker closed the connection)."""

    async def main() -> AlterPartitionResult:
        controller = Controller(cast(KafkaZkClient, None), 1)
        controller._epoch = ControllerEpoch(5, 4)
        controller._task = asyncio.get_running_loop().create_task(controller._run())
        pending = controller.alter_partition(request(data(0, (1, 2))))
        await asyncio.sleep(0)  # the event task takes it and creates its handler task
        assert controller._current is not None and not pending.done()
        controller.resign()  # cancels that handler task before its first step
        try:
            async with asyncio.timeout(5):
                return await pending
        finally:
            await controller.stop()

    assert asyncio.run(main()) == AlterPartitionResult(ErrorCode.NOT_CONTROLLER)
