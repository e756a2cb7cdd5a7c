"""The Kafka listener: accepts connections, reaps idle ones, shuts down in order.

Graceful shutdown (uvicorn's order, Kafka's semantics): stop accepting, stop reading from
every connection, let in-flight requests finish and their responses be written (bounded by
a timeout), then close the connections. The broker flushes and checkpoints its logs after
that.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass

from franz.network.connection import KafkaConnection, RequestHandler

__all__ = ["SocketServer", "SocketServerConfig"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SocketServerConfig:
    host: str = "127.0.0.1"
    port: int = 9092
    #: ``socket.request.max.bytes``: the largest request frame read.
    socket_request_max_bytes: int = 104_857_600
    #: ``connections.max.idle.ms``: idle connections are closed after this.
    connections_max_idle_ms: int = 600_000
    #: Requests read ahead of their responses per connection before reading pauses
    #: (``queued.max.requests`` bounds Kafka's shared queue; this bounds one client).
    max_in_flight_requests: int = 100
    #: ``socket.listen.backlog.size``.
    backlog: int = 50
    #: How long shutdown waits for in-flight requests.
    shutdown_timeout_s: float = 10.0


class SocketServer:
    def __init__(self, config: SocketServerConfig, handler: RequestHandler) -> None:
        self.config = config
        self.handler = handler
        self.connections: set[KafkaConnection] = set()
        self._server: asyncio.Server | None = None
        self._reaper: asyncio.Task[None] | None = None
        self.bound_port = 0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: KafkaConnection(self),
            self.config.host,
            self.config.port,
            backlog=self.config.backlog,
            reuse_address=True,
        )
        self.bound_port = self._server.sockets[0].getsockname()[1]
        self._reaper = loop.create_task(self._reap_idle())

    def register(self, connection: KafkaConnection) -> None:
        self.connections.add(connection)

    def unregister(self, connection: KafkaConnection) -> None:
        self.connections.discard(connection)

    async def _reap_idle(self) -> None:
        max_idle = self.config.connections_max_idle_ms / 1000
        interval = min(max(max_idle / 4, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for connection in list(self.connections):
                if connection.is_idle and now - connection.last_active > max_idle:
                    log.debug("closing idle connection from %s", connection.peer)
                    connection.close()

    async def shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        connections = list(self.connections)
        for connection in connections:
            connection.stop_reading()
        if connections:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(
                    asyncio.gather(*(c.wait_flushed() for c in connections)),
                    self.config.shutdown_timeout_s,
                )
        for connection in list(self.connections):
            connection.close()
        if self._server is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), 1.0)
