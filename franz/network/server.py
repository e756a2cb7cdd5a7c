"""The Kafka listener: accepts connections within their quotas, reaps idle and stalled ones,
shuts down in order.

Graceful shutdown (uvicorn's order, Kafka's semantics): stop accepting, stop reading from
every connection, let in-flight requests finish and their responses be written (bounded by
a timeout), then close the connections. The broker flushes and checkpoints its logs after
that.

Limits (Kafka's ``SocketServer``/``Acceptor``/``ConnectionQuotas``; see ``franz.network.limits``):

* ``max.connections``: at the limit the acceptor stops accepting until a connection closes
  (Kafka's acceptor blocks in ``waitForConnectionSlot``); new clients wait in the listen
  backlog, none is refused. Franz runs its own accept loop (``loop.sock_accept``) for this:
  ``asyncio.Server`` cannot pause accepting.
* ``max.connections.per.ip`` / ``.overrides``: a connection over its address's limit is
  closed at once with Kafka's log line ("Rejected connection from ...").
* ``queued.max.request.bytes``: one ``MemoryPool`` shared by every connection; a connection
  refused memory is muted and queued here, and resumed in order as memory is released.
* TLS (SSL and SASL_SSL listeners, ``franz.security.tls``): the handshake runs in a task of
  its own per connection (``ssl.handshake`` bounded by ``TLS_HANDSHAKE_TIMEOUT_S``), so a
  slow or hostile peer never holds the acceptor; a failed handshake (no certificate where
  one is required, an untrusted or expired one) closes that socket only, logged as Kafka's
  "Failed authentication with ... (SSL handshake failed)".
* Several listeners (``listeners``) are several ``SocketServer``s sharing one
  ``ConnectionQuotas`` (``max.connections`` is broker-wide, as Kafka's); each has its own
  ``MemoryPool`` (``queued.max.request.bytes`` then bounds each listener, not the broker).
* ``connections.max.idle.ms`` closes connections with nothing in flight and nothing
  received for that long; ``socket.request.receive.timeout.ms`` (Franz's key: Kafka has no
  such bound) closes a connection whose request started arriving longer ago than that, so a
  peer that trickles a request byte by byte (which resets any idle timer) is closed too.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import logging
import socket
import ssl
import time
from dataclasses import dataclass, field

from franz.network.connection import KafkaConnection, RequestHandler
from franz.network.limits import ConnectionQuotas, MemoryPool
from franz.security.tls_principal import SslPrincipalMapper

__all__ = ["SocketServer", "SocketServerConfig"]

log = logging.getLogger(__name__)

#: How long the acceptor rests after accept() fails (EMFILE, ENFILE...), as asyncio's own.
ACCEPT_RETRY_DELAY_S = 1.0
#: How long a TLS handshake may take (Python's default is 60 s; Kafka bounds it by
#: ``connections.max.idle.ms``, which the reaper cannot see before the handshake is done).
TLS_HANDSHAKE_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class SocketServerConfig:
    host: str = "127.0.0.1"
    port: int = 9092
    #: ``socket.request.max.bytes``: the largest request frame read.
    socket_request_max_bytes: int = 104_857_600
    #: ``connections.max.idle.ms``: idle connections are closed after this.
    connections_max_idle_ms: int = 600_000
    #: ``socket.request.receive.timeout.ms`` (Franz): a request must arrive within this.
    request_receive_timeout_ms: int = 60_000
    #: Requests read ahead of their responses per connection before reading pauses
    #: (``queued.max.requests`` bounds Kafka's shared queue; this bounds one client).
    max_in_flight_requests: int = 100
    #: ``queued.max.request.bytes``: bytes of requests being received (<= 0: unbounded).
    queued_max_request_bytes: int = -1
    #: ``max.connections``.
    max_connections: int = 2**31 - 1
    #: ``max.connections.per.ip``.
    max_connections_per_ip: int = 2**31 - 1
    #: ``max.connections.per.ip.overrides``, parsed: {ip: limit}.
    max_connections_per_ip_overrides: dict[str, int] = field(default_factory=dict)
    #: ``socket.listen.backlog.size``.
    backlog: int = 50
    #: How long shutdown waits for in-flight requests.
    shutdown_timeout_s: float = 10.0
    #: The listener's name and its security protocol (``listener.security.protocol.map``).
    listener_name: str = "PLAINTEXT"
    security_protocol: str = "PLAINTEXT"
    #: SASL listeners: the largest frame read before authentication
    #: (``sasl.server.max.receive.size``, Kafka's 524288; None: no separate bound).
    unauthenticated_max_request_bytes: int | None = None


class SocketServer:
    def __init__(
        self,
        config: SocketServerConfig,
        handler: RequestHandler,
        *,
        ssl_context: ssl.SSLContext | None = None,
        principal_mapper: SslPrincipalMapper | None = None,
        quotas: ConnectionQuotas | None = None,
    ) -> None:
        self.config = config
        self.handler = handler
        #: TLS listeners: the context and ``ssl.principal.mapping.rules``.
        self.ssl_context = ssl_context
        self.principal_mapper = principal_mapper or SslPrincipalMapper()
        self.connections: set[KafkaConnection] = set()
        self.memory_pool = MemoryPool(config.queued_max_request_bytes)
        self.quotas = quotas or ConnectionQuotas(
            config.max_connections,
            config.max_connections_per_ip,
            config.max_connections_per_ip_overrides,
        )
        #: The servers sharing ``quotas`` (this one included): a slot freed here wakes them.
        self.siblings: list[SocketServer] = [self]
        self._handshakes: set[asyncio.Task[None]] = set()
        #: Connections muted until the memory pool has room, in the order they asked.
        self._waiting_for_memory: collections.OrderedDict[KafkaConnection, None] = (
            collections.OrderedDict()
        )
        self._slot_freed = asyncio.Event()
        self._socket: socket.socket | None = None
        self._acceptor: asyncio.Task[None] | None = None
        self._reaper: asyncio.Task[None] | None = None
        self.bound_port = 0

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        host = self.config.host
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.create_server(
            (host, self.config.port), family=family, backlog=self.config.backlog
        )
        sock.setblocking(False)
        self._socket = sock
        self.bound_port = sock.getsockname()[1]
        self._acceptor = loop.create_task(self._accept_loop(sock))
        self._reaper = loop.create_task(self._reap())

    @property
    def accepting(self) -> bool:
        """Listening, with its accept loop running (the readiness check's "serving")."""
        return self._acceptor is not None and not self._acceptor.done()

    # -- accepting ------------------------------------------------------------------------

    async def _accept_loop(self, sock: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if not self.quotas.slot_available():
                log.info(
                    "max.connections=%d reached: accepting again when a connection closes",
                    self.quotas.max_connections,
                )
                while not self.quotas.slot_available():
                    self._slot_freed.clear()
                    await self._slot_freed.wait()
            try:
                client, address = await loop.sock_accept(sock)
            except OSError as exc:
                log.warning("accepting a connection failed: %s; retrying in 1 s", exc)
                await asyncio.sleep(ACCEPT_RETRY_DELAY_S)
                continue
            ip = str(address[0])
            if not self.quotas.inc(ip):
                log.info(
                    "Rejected connection from %s, address already has the configured maximum "
                    "of %d connections.",
                    ip,
                    self.quotas.max_for(ip),
                )
                client.close()
                continue
            if self.ssl_context is not None:
                task = loop.create_task(self._set_up(client, ip))
                self._handshakes.add(task)
                task.add_done_callback(self._handshakes.discard)
                continue
            await self._set_up(client, ip)

    async def _set_up(self, client: socket.socket, ip: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            if self.ssl_context is None:
                await loop.connect_accepted_socket(
                    functools.partial(KafkaConnection, self, ip), client
                )
            else:
                await loop.connect_accepted_socket(
                    functools.partial(KafkaConnection, self, ip),
                    client,
                    ssl=self.ssl_context,
                    ssl_handshake_timeout=TLS_HANDSHAKE_TIMEOUT_S,
                )
        except Exception as exc:  # one peer's failure must not stop the acceptor
            if self.ssl_context is not None:
                log.info(
                    "Failed authentication with /%s (SSL handshake failed) on listener %s: %s",
                    ip,
                    self.config.listener_name,
                    exc,
                )
            else:
                log.info("setting up the connection from %s failed: %r", ip, exc)
            self.quotas.dec(ip)
            self._wake_acceptors()
            client.close()

    def _wake_acceptors(self) -> None:
        for server in self.siblings:
            server._slot_freed.set()

    def register(self, connection: KafkaConnection) -> None:
        self.connections.add(connection)

    def unregister(self, connection: KafkaConnection) -> None:
        if connection in self.connections:
            self.connections.discard(connection)
            self.quotas.dec(connection.peer_ip)
            self._wake_acceptors()
        self._waiting_for_memory.pop(connection, None)

    # -- request memory -------------------------------------------------------------------

    def wait_for_memory(self, connection: KafkaConnection) -> None:
        """``connection`` was refused memory: it is muted until ``release_memory``."""
        self._waiting_for_memory[connection] = None

    def release_memory(self, size: int) -> None:
        """Give ``size`` reserved bytes back; resume muted connections while memory lasts."""
        pool = self.memory_pool
        pool.release(size)
        waiting = self._waiting_for_memory
        while waiting and not pool.is_out_of_memory:
            connection, _ = waiting.popitem(last=False)
            connection.memory_available()

    # -- reaping --------------------------------------------------------------------------

    async def _reap(self) -> None:
        max_idle = self.config.connections_max_idle_ms / 1000
        max_receive = self.config.request_receive_timeout_ms / 1000
        interval = min(max(min(max_idle, max_receive) / 4, 0.05), 30.0)
        while True:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for connection in list(self.connections):
                if connection.is_idle and now - connection.last_active > max_idle:
                    log.debug("closing idle connection from %s", connection.peer)
                    connection.close()
                    continue
                started = connection.request_started
                if started is not None and now - started > max_receive:
                    log.info(
                        "closing the connection from %s: its request was not received "
                        "within socket.request.receive.timeout.ms=%d (%d bytes received, "
                        "size announced %d)",
                        connection.peer,
                        self.config.request_receive_timeout_ms,
                        connection.pending_request_bytes,
                        connection.pending_request_size,
                    )
                    connection.close()

    async def shutdown(self) -> None:
        for task in (self._acceptor, self._reaper, *self._handshakes):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if self._socket is not None:
            self._socket.close()
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
        # Let the transports finish closing (connection_lost) before the broker goes on.
        for _ in range(100):
            if not self.connections:
                break
            await asyncio.sleep(0.01)
