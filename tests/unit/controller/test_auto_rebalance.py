"""``franz.controller.shell.auto_rebalance``: the timer of the automatic preferred leader
rebalance is armed only while the controller is active, posts an event (never runs the check
itself), re-arms after each check, and is disarmed by a resignation. The controller here is a
stand-in exposing what the scheduler reads (``is_active``, ``ctx``, ``post``); the elections
themselves run against real brokers in ``tests/cluster/test_preferred_election.py``."""

from __future__ import annotations

import asyncio

from franz.config.broker import BrokerConfig
from franz.controller.context import Broker, ControllerContext
from franz.controller.events import AutoPreferredReplicaLeaderElection, ControllerEvent
from franz.controller.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from franz.controller.shell.auto_rebalance import (
    FIRST_CHECK_DELAY_S,
    AutoLeaderRebalance,
    AutoRebalanceConfig,
)


class Seat:
    """What ``AutoLeaderRebalance`` sees of the ``Controller``."""

    def __init__(self) -> None:
        self.is_active = True
        self.posted: list[ControllerEvent] = []
        self.ctx = ControllerContext(epoch=1)
        self.ctx.add_live_brokers([Broker(1, 10), Broker(2, 11)])
        tp = TopicPartition("t", 0)
        self.ctx.update_partition_replica_assignment(tp, (1, 2))
        self.ctx.partition_leadership_info[tp] = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(1, (1, 2)), 1
        )

    def post(self, event: ControllerEvent) -> None:
        if self.is_active:
            self.posted.append(event)


def test_the_keys_and_kafkas_defaults() -> None:
    assert AutoRebalanceConfig.from_broker_config(BrokerConfig({}).get) == AutoRebalanceConfig(
        enable=True, check_interval_seconds=300, imbalance_per_broker_percentage=10
    )
    config = BrokerConfig(
        {
            "auto.leader.rebalance.enable": "false",
            "leader.imbalance.check.interval.seconds": "7",
            "leader.imbalance.per.broker.percentage": "25",
        }
    )
    assert AutoRebalanceConfig.from_broker_config(config.get) == AutoRebalanceConfig(False, 7, 25)


def test_first_check_five_seconds_after_failover_and_cancelled_on_resignation() -> None:
    asyncio.run(_test_first_check_five_seconds_after_failover_and_cancelled_on_resignation())


async def _test_first_check_five_seconds_after_failover_and_cancelled_on_resignation() -> None:
    seat = Seat()
    task = AutoLeaderRebalance(seat, AutoRebalanceConfig())  # type: ignore[arg-type]
    loop = asyncio.get_running_loop()
    task.start()
    assert task.scheduled
    assert task._timer is not None
    assert abs(task._timer.when() - (loop.time() + FIRST_CHECK_DELAY_S)) < 1
    task.cancel()
    assert not task.scheduled
    await asyncio.sleep(0)
    assert seat.posted == []


def test_disabled_never_schedules() -> None:
    asyncio.run(_test_disabled_never_schedules())


async def _test_disabled_never_schedules() -> None:
    task = AutoLeaderRebalance(Seat(), AutoRebalanceConfig(enable=False))  # type: ignore[arg-type]
    task.start()
    assert not task.scheduled


def test_a_check_rearms_the_timer_which_posts_the_event() -> None:
    asyncio.run(_test_a_check_rearms_the_timer_which_posts_the_event())


async def _test_a_check_rearms_the_timer_which_posts_the_event() -> None:
    seat = Seat()
    task = AutoLeaderRebalance(seat, AutoRebalanceConfig(check_interval_seconds=0))  # type: ignore[arg-type]
    await task.process()  # balanced: nothing to elect, no ZooKeeper touched
    assert task.scheduled
    for _ in range(100):
        if seat.posted:
            break
        await asyncio.sleep(0.01)
    assert seat.posted == [AutoPreferredReplicaLeaderElection()]
    assert not task.scheduled


def test_an_inactive_controller_neither_checks_nor_rearms() -> None:
    asyncio.run(_test_an_inactive_controller_neither_checks_nor_rearms())


async def _test_an_inactive_controller_neither_checks_nor_rearms() -> None:
    seat = Seat()
    seat.is_active = False
    task = AutoLeaderRebalance(seat, AutoRebalanceConfig(check_interval_seconds=0))  # type: ignore[arg-type]
    await task.process()
    assert not task.scheduled
