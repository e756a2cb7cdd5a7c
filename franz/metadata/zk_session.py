"""A broker's life in ZooKeeper: its registration and its bid for the controller seat.

``ZkBrokerSession`` owns the broker's ephemerals and the election, on the broker's loop:

* ``start``: register ``/brokers/ids/<id>``, watch ``/controller``, run the election.
* ``/controller`` deleted (the controller's session ended): run the election again; the first
  broker whose multi-op creates ``/controller`` wins (``KafkaZkClient``).
* Session ``EXPIRED``: ephemerals are gone, so a controller stops acting *at once*
  (``is_controller`` turns False and ``on_resign`` runs before anything else is processed on
  the loop). When kazoo's new session is ``CONNECTED``, the broker re-registers and re-runs
  the election (Kafka's ``KafkaController.processExpire`` then ``processRegisterBrokerAndReelect``).

Callbacks run on the loop: ``on_elected(epoch)`` once per seat won, ``on_resign()`` once per
seat lost (expiry, or another controller fencing this one, reported by ``resign``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from franz.metadata.kafka_zk_client import ControllerEpoch, ControllerMovedError, KafkaZkClient
from franz.metadata.znodes import BrokerInfo, ControllerRegistration
from franz.metadata.zookeeper import SessionState, ZooKeeperError

__all__ = ["ZkBrokerSession"]

log = logging.getLogger(__name__)


class ZkBrokerSession:
    def __init__(
        self,
        client: KafkaZkClient,
        info: BrokerInfo,
        *,
        on_elected: Callable[[ControllerEpoch], None] | None = None,
        on_resign: Callable[[], None] | None = None,
        clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self.client = client
        self.info = info
        self._on_elected = on_elected
        self._on_resign = on_resign
        self._clock_ms = clock_ms
        #: The seat held, or None: the only source of truth for "am I the controller".
        self.controller_epoch: ControllerEpoch | None = None
        #: The broker epoch (czxid of the registration), renewed with each registration.
        self.broker_epoch = -1
        #: The controller as last seen in ``/controller``.
        self.active_controller: int = -1
        self._expired = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopped = False
        self._electing = False
        self._rerun = False

    @property
    def is_controller(self) -> bool:
        return self.controller_epoch is not None

    async def start(self) -> None:
        self.client.zk.add_state_listener(self._on_state)
        await self.client.ensure_persistent_paths()
        self.broker_epoch = await self.client.register_broker(self.info)
        self.client.watch_controller(self._on_controller_change)
        await self.elect()

    async def stop(self) -> None:
        self._stopped = True
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, ZooKeeperError):
                await task

    # ------------------------------------------------------------------ election
    async def elect(self) -> None:
        """Kafka's ``KafkaController.elect``: stand by when someone holds ``/controller``,
        else try to take it. Re-entrant calls while one runs are folded into one re-run."""
        if self._electing:
            self._rerun = True
            return
        self._electing = True
        try:
            while True:
                self._rerun = False
                await self._elect_once()
                if not self._rerun or self._stopped:
                    return
        finally:
            self._electing = False

    async def _elect_once(self) -> None:
        if self.is_controller or self._stopped or self._expired:
            return
        current = await self.client.get_controller()
        if current is not None:
            self.active_controller = current.broker_id
            return
        try:
            epoch = await self.client.register_controller_and_increment_epoch(
                self.info.broker_id, self._clock_ms()
            )
        except ControllerMovedError as exc:
            log.info("broker %d did not win the election: %s", self.info.broker_id, exc)
            return
        if self._expired:  # the session died while the write was in flight
            return
        self.controller_epoch = epoch
        self.active_controller = self.info.broker_id
        log.info(
            "broker %d is the controller, epoch %d (zkVersion %d)",
            self.info.broker_id,
            epoch.epoch,
            epoch.zk_version,
        )
        if self._on_elected is not None:
            self._on_elected(epoch)

    def resign(self) -> None:
        """Stop acting as the controller (expiry, or a write fenced by a newer controller)."""
        if self.controller_epoch is None:
            return
        log.info("broker %d resigns as controller", self.info.broker_id)
        self.controller_epoch = None
        if self._on_resign is not None:
            self._on_resign()

    # ------------------------------------------------------------------ events (on the loop)
    def _spawn(self, coro_fn: Callable[[], object]) -> None:
        if self._stopped:
            return

        async def run() -> None:
            try:
                await coro_fn()  # type: ignore[misc]
            except ZooKeeperError as exc:
                log.warning("ZooKeeper request failed: %s", exc)

        task = asyncio.get_running_loop().create_task(run())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _on_controller_change(self, registration: ControllerRegistration | None) -> None:
        self.active_controller = -1 if registration is None else registration.broker_id
        if registration is None:
            self._spawn(self.elect)
        elif self.is_controller and registration.broker_id != self.info.broker_id:
            self.resign()

    def _on_state(self, state: SessionState) -> None:
        if state is SessionState.EXPIRED:
            self._expired = True
            self.broker_epoch = -1
            self.resign()
        elif state is SessionState.CONNECTED and self._expired:
            self._expired = False
            self._spawn(self._reregister_and_reelect)

    async def _reregister_and_reelect(self) -> None:
        """Register again and re-run the election, retrying while ZooKeeper fails (a broker
        that gave up here would stay unregistered, and with no ``/controller`` change left
        to watch, possibly no controller would be elected at all), until this session
        expires too (the next CONNECTED starts over) or the broker stops."""
        delay_s = 0.1
        while not self._stopped and not self._expired:
            try:
                if self.broker_epoch < 0:
                    self.broker_epoch = await self.client.register_broker(self.info)
                await self.elect()
                return
            except ZooKeeperError as exc:
                log.warning(
                    "broker %d: registration or election after a new ZooKeeper session "
                    "failed, retrying in %.1f s: %s",
                    self.info.broker_id,
                    delay_s,
                    exc,
                )
            await asyncio.sleep(delay_s)
            delay_s = min(2 * delay_s, 2.0)
