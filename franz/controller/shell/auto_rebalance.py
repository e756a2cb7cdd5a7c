"""The controller's automatic preferred leader rebalance (Kafka 3.9's
``scheduleAutoLeaderRebalanceTask``, ``processAutoPreferredReplicaLeaderElection`` and
``checkAndTriggerAutoLeaderRebalance``, ZooKeeper mode).

Keys (Kafka's, read-only as in Kafka):

* ``auto.leader.rebalance.enable`` (true): run the check at all.
* ``leader.imbalance.check.interval.seconds`` (300): the time between two checks.
* ``leader.imbalance.per.broker.percentage`` (10): the leader imbalance a broker may have
  (``franz.controller.leader_imbalance``) before its partitions get a preferred election.

Scheduling, as Kafka's ``kafkaScheduler``: only while this broker is the active controller.
``start`` (end of the failover) arms a timer for 5 s later; when it fires it only *posts* an
``AutoPreferredReplicaLeaderElection`` event, so the check runs on the controller's event task
like any other event; processing it checks, then (in any case, as Kafka's ``finally``) arms the
timer again for the interval. ``cancel`` (the controller's resignation) disarms it; an event
already queued is dropped by the resignation with the rest of the queue.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from franz.controller.events import (
    AutoPreferredReplicaLeaderElection,
    ElectionTrigger,
    ElectionType,
)
from franz.controller.leader_imbalance import auto_rebalance_candidates, leader_imbalance
from franz.controller.shell.replica_election import on_replica_election

if TYPE_CHECKING:
    from franz.controller.shell.controller import Controller

__all__ = ["FIRST_CHECK_DELAY_S", "AutoLeaderRebalance", "AutoRebalanceConfig"]

log = logging.getLogger("franz.controller.shell.controller")

#: ``scheduleAutoLeaderRebalanceTask(delay = 5, unit = TimeUnit.SECONDS)`` at failover.
FIRST_CHECK_DELAY_S: Final = 5.0


@dataclass(frozen=True, slots=True)
class AutoRebalanceConfig:
    """The keys of the module docstring; the defaults are Kafka's."""

    enable: bool = True
    check_interval_seconds: int = 300
    imbalance_per_broker_percentage: int = 10

    @classmethod
    def from_broker_config(cls, get: Callable[[str], Any]) -> AutoRebalanceConfig:
        return cls(
            enable=get("auto.leader.rebalance.enable"),
            check_interval_seconds=get("leader.imbalance.check.interval.seconds"),
            imbalance_per_broker_percentage=get("leader.imbalance.per.broker.percentage"),
        )


class AutoLeaderRebalance:
    """The timer and the check for one ``Controller`` (module docstring)."""

    def __init__(self, controller: Controller, config: AutoRebalanceConfig | None) -> None:
        """``config`` None: disabled (the broker passes its keys; tests of the controller
        alone need no timer)."""
        self.controller = controller
        self.config = config or AutoRebalanceConfig(enable=False)
        self._timer: asyncio.TimerHandle | None = None

    @property
    def scheduled(self) -> bool:
        """A check is armed (tests)."""
        return self._timer is not None

    def start(self) -> None:
        """At the end of the failover: the first check in 5 s, if enabled."""
        if self.config.enable:
            self._schedule(FIRST_CHECK_DELAY_S)

    def cancel(self) -> None:
        """At resignation (``kafkaScheduler.shutdown``)."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()

    def _schedule(self, delay_s: float) -> None:
        self.cancel()
        self._timer = asyncio.get_running_loop().call_later(delay_s, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self.controller.post(AutoPreferredReplicaLeaderElection())

    async def process(self) -> None:
        """``processAutoPreferredReplicaLeaderElection``."""
        if not self.controller.is_active:
            return
        try:
            log.info("Processing automatic preferred replica leader election")
            await self.check_and_trigger()
        finally:
            if self.controller.is_active:
                self._schedule(self.config.check_interval_seconds)

    async def check_and_trigger(self) -> None:
        """``checkAndTriggerAutoLeaderRebalance``: one preferred election per broker above
        the allowed imbalance (``auto_rebalance_candidates``)."""
        ctx = self.controller.ctx
        if log.isEnabledFor(logging.DEBUG):
            for broker_id, imbalance in sorted(leader_imbalance(ctx).items()):
                log.debug(
                    "Leader imbalance ratio for broker %d is %.3f (%s not led by it)",
                    broker_id,
                    imbalance.ratio,
                    ",".join(str(tp) for tp in sorted(imbalance.not_led)),
                )
        percentage = self.config.imbalance_per_broker_percentage
        for partitions in auto_rebalance_candidates(ctx, percentage).values():
            await on_replica_election(
                self.controller, partitions, ElectionType.PREFERRED, ElectionTrigger.AUTO_TRIGGERED
            )
