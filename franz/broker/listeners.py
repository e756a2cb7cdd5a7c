"""The broker's listeners: one ``SocketServer`` per entry of ``listeners`` (Kafka's
``SocketServer`` holds one acceptor per listener), and the inter-broker TLS client context.

``listeners`` / ``advertised.listeners`` / ``listener.security.protocol.map`` /
``inter.broker.listener.name`` / ``security.inter.broker.protocol`` are read and checked by
``franz.network.listeners.ListenerConfig``. SSL and SASL_SSL listeners get a TLS context
from their ``ssl.*`` keys (``listener.name.<name>.ssl.*`` first: ``franz.security.tls``);
SASL listeners authenticate in the dispatcher's gate (``franz.broker.sasl_gate``; each
connection carries its ``security_protocol``).

Every server shares one ``ConnectionQuotas`` (``max.connections`` and
``max.connections.per.ip`` are broker-wide in Kafka); each keeps its own request memory pool.

Advertised endpoints: ``advertised.listeners`` where set, else each listener with its bound
port (port 0 binds an ephemeral one) and ``localhost`` for an empty host.
When the inter-broker listener is SSL or SASL_SSL, this broker is a TLS client of the others
with that listener's ``ssl.*`` keys (``inter_broker_ssl_context``).
"""

from __future__ import annotations

import asyncio
import logging
import ssl

from franz.config.broker import BrokerConfig
from franz.network.connection import RequestHandler
from franz.network.limits import ConnectionQuotas, parse_per_ip_overrides
from franz.network.listeners import SECURITY_PROTOCOLS, Listener, ListenerConfig
from franz.network.server import SocketServer, SocketServerConfig
from franz.security.tls import TlsSettings, client_context, server_context

__all__ = ["BrokerListeners"]

log = logging.getLogger(__name__)


class BrokerListeners:
    """The socket servers of every listener (module docstring)."""

    def __init__(
        self, config: BrokerConfig, handler: RequestHandler, queued_max_request_bytes: int
    ) -> None:
        self.config = ListenerConfig.from_config(config.get, config.is_set)
        quotas = ConnectionQuotas(
            config.get("max.connections"),
            config.get("max.connections.per.ip"),
            parse_per_ip_overrides(config.get("max.connections.per.ip.overrides")),
        )
        self.servers: dict[str, SocketServer] = {}
        siblings: list[SocketServer] = []
        for listener in self.config.listeners:
            ssl_context = mapper = None
            if listener.is_ssl:
                settings = TlsSettings(config.get, listener.name)
                ssl_context = server_context(settings)
                mapper = settings.principal_mapper()
            server = SocketServer(
                SocketServerConfig(
                    host=listener.host or "0.0.0.0",
                    port=listener.port,
                    socket_request_max_bytes=config.get("socket.request.max.bytes"),
                    connections_max_idle_ms=config.get("connections.max.idle.ms"),
                    request_receive_timeout_ms=config.get("socket.request.receive.timeout.ms"),
                    max_in_flight_requests=config.get("queued.max.requests"),
                    queued_max_request_bytes=queued_max_request_bytes,
                    max_connections=config.get("max.connections"),
                    max_connections_per_ip=config.get("max.connections.per.ip"),
                    backlog=config.get("socket.listen.backlog.size"),
                    listener_name=listener.name,
                    security_protocol=listener.security_protocol,
                    unauthenticated_max_request_bytes=config.get("sasl.server.max.receive.size"),
                ),
                handler,
                ssl_context=ssl_context,
                principal_mapper=mapper,
                quotas=quotas,
            )
            server.siblings = siblings
            siblings.append(server)
            self.servers[listener.name] = server
        #: This broker as a TLS client of the inter-broker listener, else None.
        self.inter_broker_ssl_context: ssl.SSLContext | None = None
        if self.config.inter_broker_protocol in ("SSL", "SASL_SSL"):
            self.inter_broker_ssl_context = client_context(
                TlsSettings(config.get, self.config.inter_broker_listener)
            )

    @property
    def first(self) -> SocketServer:
        """The first listener's server (the one older single-listener code knew)."""
        return self.servers[self.config.listeners[0].name]

    @property
    def inter_broker_listener(self) -> str:
        return self.config.inter_broker_listener

    async def start(self) -> None:
        started: list[SocketServer] = []
        try:
            for server in self.servers.values():
                await server.start()
                started.append(server)
        except BaseException:
            for server in started:
                await server.shutdown()
            raise

    async def shutdown(self) -> None:
        await asyncio.gather(*(server.shutdown() for server in self.servers.values()))

    def bound(self) -> list[Listener]:
        """The listeners with the ports they bound."""
        return [
            Listener(
                listener.name,
                listener.host,
                self.servers[listener.name].bound_port or listener.port,
                listener.security_protocol,
            )
            for listener in self.config.listeners
        ]

    def advertised(self) -> list[Listener]:
        """The endpoints clients and brokers are told (module docstring)."""
        bound = {listener.name: listener for listener in self.bound()}
        out = []
        for listener in self.config.advertised:
            port = listener.port
            if port == 0 and listener.name in bound:
                port = bound[listener.name].port
            host = listener.host or "localhost"
            out.append(Listener(listener.name, host, port, listener.security_protocol))
        return out

    def uris(self) -> str:
        """``NAME://host:port`` of every listener as bound, comma separated (start line)."""
        return ",".join(listener.uri() for listener in self.bound())

    @staticmethod
    def protocol_id(listener: Listener) -> int:
        """Kafka's ``SecurityProtocol`` id of ``listener`` (UpdateMetadata's field)."""
        return SECURITY_PROTOCOLS[listener.security_protocol]
