"""Per-broker request queues that retry until answered: the controller channel's transport.

``BrokerSender`` is Kafka's ``RequestSendThread`` (``ControllerChannelManager.scala``) as one
asyncio task: it takes the requests queued for one destination broker **one at a time, in
order**, and keeps sending each one until a response arrives or the broker is removed:

* not connected: connect (``KafkaClientConnection.connect``), waiting
  ``reconnect.backoff.ms`` (50 ms) doubling up to ``reconnect.backoff.max.ms`` (1 s), with
  Kafka's 20 % jitter (``ExponentialBackoff``), between failed attempts; a connection that
  works resets the backoff;
* the send fails (connection closed, request timed out after ``controller.socket.timeout.ms``
  = 30 s): close the connection, back off the same way, reconnect, send the same request again.

One request at a time, not pipelined, as Kafka's controller does: a LeaderAndIsr and the
UpdateMetadata after it must reach the broker in that order even across a reconnect, and a
retried request must not overtake the one behind it. Error codes inside a response are the
caller's business (the channel's callback); a response is a success here.

Each request gets an ``asyncio.Future`` resolved with its ``ClientResponse``; removing the
broker (``close``) fails the queued ones with ``BrokerRemovedError``, and a caller that
cancels its future withdraws the request (dropped when its turn comes; if it is being sent,
it is not retried). ``update_address`` takes a broker's new endpoint (a restart that bound
another port): the current connection is dropped and the next attempt goes there.

``OutboundChannel`` holds one sender per destination broker id (``addBroker``/
``removeBroker``/``sendRequest`` of ``ControllerChannelManager``).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import random
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from franz.errors import FranzError
from franz.network.client import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_REQUEST_TIMEOUT,
    ClientConnectionError,
    KafkaClientConnection,
)
from franz.protocol.client import ClientProtocolError, ClientResponse

__all__ = [
    "BrokerRemovedError",
    "BrokerSender",
    "OutboundChannel",
    "SenderConfig",
    "reconnect_backoff",
]

log = logging.getLogger(__name__)

#: Kafka's ``CommonClientConfigs.RECONNECT_BACKOFF_JITTER``.
BACKOFF_JITTER: Final = 0.2


class BrokerRemovedError(FranzError):
    """The destination broker was removed before the request was answered."""


def reconnect_backoff(
    attempts: int, initial: float, maximum: float, rand: Callable[[], float] = random.random
) -> float:
    """Seconds to wait after ``attempts`` consecutive failures (0: the first failure).

    ``initial * 2**attempts`` capped at ``maximum``, times a uniform factor in [0.8, 1.2]
    (Kafka's ``ExponentialBackoff.backoff``; the jitter keeps brokers that lost the same peer
    from reconnecting in lockstep), and never above ``maximum`` times that factor.
    """
    base = initial if maximum <= initial else min(initial * 2 ** min(attempts, 62), maximum)
    factor = 1.0 - BACKOFF_JITTER + 2 * BACKOFF_JITTER * rand()
    return float(base * factor)


@dataclass(frozen=True, slots=True)
class SenderConfig:
    """How a ``BrokerSender`` connects (Kafka's keys; seconds, not ms)."""

    client_id: str = "franz"
    #: ``controller.socket.timeout.ms`` (30 s).
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    #: ``socket.connection.setup.timeout.ms`` (10 s).
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    #: ``reconnect.backoff.ms`` (50 ms) and ``reconnect.backoff.max.ms`` (1 s).
    reconnect_backoff: float = 0.05
    reconnect_backoff_max: float = 1.0
    #: The controller fixes versions itself (no ApiVersions), as Kafka's does.
    handshake: bool = False
    #: TLS to the inter-broker listener (SSL, SASL_SSL), else None.
    ssl_context: ssl.SSLContext | None = None


@dataclass(slots=True)
class _Queued:
    api_key: int
    api_version: int
    body: bytes
    future: asyncio.Future[ClientResponse]


class BrokerSender:
    """The queue and sender task of one destination broker (module docstring)."""

    def __init__(
        self,
        broker_id: int,
        host: str,
        port: int,
        config: SenderConfig | None = None,
        *,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.broker_id = broker_id
        self.address: tuple[str, int] = (host, port)
        self.config = config or SenderConfig()
        self._rand = rand
        self._queue: collections.deque[_Queued] = collections.deque()
        self._wakeup = asyncio.Event()
        self._connection: KafkaClientConnection | None = None
        self._failures = 0
        self._current: _Queued | None = None
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        #: Attempts that failed (connect or send), for tests and metrics.
        self.failed_attempts = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"broker-sender-{self.broker_id}"
            )

    @property
    def queue_size(self) -> int:
        return len(self._queue) + (self._current is not None)

    @property
    def connection(self) -> KafkaClientConnection | None:
        return self._connection

    def pending(self) -> list[asyncio.Future[ClientResponse]]:
        """The futures of the requests queued or in flight now."""
        items = list(self._queue)
        if self._current is not None:
            items.insert(0, self._current)
        return [item.future for item in items if not item.future.done()]

    def enqueue(
        self, api_key: int, api_version: int, body: bytes
    ) -> asyncio.Future[ClientResponse]:
        """Queue a request; its future resolves with the response (module docstring)."""
        if self._closed:
            raise BrokerRemovedError(f"broker {self.broker_id} was removed")
        future: asyncio.Future[ClientResponse] = asyncio.get_running_loop().create_future()
        self._queue.append(_Queued(api_key, api_version, body, future))
        self._wakeup.set()
        return future

    def update_address(self, host: str, port: int) -> None:
        """The broker is now at ``host:port``: drop the connection to the old address."""
        if (host, port) == self.address:
            return
        self.address = (host, port)
        self._failures = 0
        connection = self._connection
        if connection is not None:
            connection.close(f"broker {self.broker_id} moved to {host}:{port}")

    async def close(self) -> None:
        """Remove the broker: stop the task, close the connection, fail what is queued."""
        self._closed = True
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close(f"broker {self.broker_id} removed")
            await connection.wait_closed()
        items = list(self._queue)
        if self._current is not None:
            items.insert(0, self._current)
        self._queue.clear()
        self._current = None
        for item in items:
            if not item.future.done():
                item.future.set_exception(
                    BrokerRemovedError(
                        f"broker {self.broker_id} was removed before api {item.api_key} "
                        f"v{item.api_version} was answered"
                    )
                )

    # -- the sender task ------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            while not self._queue:
                self._wakeup.clear()
                await self._wakeup.wait()
            item = self._queue.popleft()
            self._current = item
            while not item.future.done():
                response = await self._attempt(item)
                if response is not None and not item.future.done():
                    item.future.set_result(response)
            self._current = None

    async def _attempt(self, item: _Queued) -> ClientResponse | None:
        """One try: connect if needed, send, await the response. None after a failure
        (already backed off)."""
        host, port = self.address
        connection = self._connection
        try:
            if connection is None or connection.closed:
                connection = self._connection = None
                connection = await KafkaClientConnection.connect(
                    host,
                    port,
                    connect_timeout=self.config.connect_timeout,
                    handshake=self.config.handshake,
                    ssl=self.config.ssl_context,
                    client_id=self.config.client_id,
                    request_timeout=self.config.request_timeout,
                    max_in_flight=1,
                )
                self._connection = connection
                self._failures = 0
            return await connection.send_raw(item.api_key, item.api_version, item.body)
        except Exception as exc:
            # Anything but a connection or protocol failure is a bug, but the queue must not
            # stall on it: Kafka's RequestSendThread also logs any Throwable and retries.
            if not isinstance(exc, ClientConnectionError | ClientProtocolError):
                log.exception("unexpected error sending to broker %d", self.broker_id)
            self.failed_attempts += 1
            delay = reconnect_backoff(
                self._failures,
                self.config.reconnect_backoff,
                self.config.reconnect_backoff_max,
                self._rand,
            )
            self._failures += 1
            log.info(
                "sending api %d v%d to broker %d at %s:%d failed (%s); retrying in %.0f ms",
                item.api_key,
                item.api_version,
                self.broker_id,
                host,
                port,
                exc,
                delay * 1000,
            )
            if connection is not None:
                connection.close(str(exc))
                await connection.wait_closed()
            self._connection = None
            await asyncio.sleep(delay)
            return None


class OutboundChannel:
    """One ``BrokerSender`` per destination broker id (module docstring)."""

    def __init__(self, config: SenderConfig | None = None, **sender_options: Any) -> None:
        self.config = config or SenderConfig()
        self._sender_options = sender_options
        self._senders: dict[int, BrokerSender] = {}

    @property
    def broker_ids(self) -> list[int]:
        return sorted(self._senders)

    def sender(self, broker_id: int) -> BrokerSender | None:
        return self._senders.get(broker_id)

    def add_broker(self, broker_id: int, host: str, port: int) -> None:
        """Start sending to a broker, or take its new address if it is known."""
        sender = self._senders.get(broker_id)
        if sender is not None:
            sender.update_address(host, port)
            return
        sender = BrokerSender(broker_id, host, port, self.config, **self._sender_options)
        self._senders[broker_id] = sender
        sender.start()

    async def remove_broker(self, broker_id: int) -> None:
        sender = self._senders.pop(broker_id, None)
        if sender is not None:
            await sender.close()

    def send(
        self, broker_id: int, api_key: int, api_version: int, body: bytes
    ) -> asyncio.Future[ClientResponse]:
        """Queue a request for a broker; ``BrokerRemovedError`` if it is not added (Kafka
        logs and drops such a request: the caller decides here)."""
        sender = self._senders.get(broker_id)
        if sender is None:
            raise BrokerRemovedError(f"broker {broker_id} is not in the channel")
        return sender.enqueue(api_key, api_version, body)

    async def drain(self, timeout_s: float) -> bool:
        """Wait until every request queued now (to any broker) is answered or dropped, at
        most ``timeout_s``; whether they all were."""
        pending = [f for sender in self._senders.values() for f in sender.pending()]
        if not pending:
            return True
        _done, not_done = await asyncio.wait(pending, timeout=timeout_s)
        return not not_done

    async def close(self) -> None:
        senders, self._senders = list(self._senders.values()), {}
        for sender in senders:
            await sender.close()
