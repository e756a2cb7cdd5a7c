"""What a handler gets besides its request: the header, the connection and the broker's
services (``franz.broker.services.BrokerServices``, never the ``Broker`` itself)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from franz.broker.refusals import RefusalLog
from franz.protocol.fetch import FileRegion
from franz.protocol.headers import RequestHeader
from franz.security.principal import KafkaPrincipal

if TYPE_CHECKING:
    from franz.broker.services import BrokerServices
    from franz.network.connection import KafkaConnection

__all__ = ["PLAINTEXT_LISTENER", "RawBody", "RequestContext", "request_timeout_ms"]

#: The name of Franz's one listener (TLS and SASL listeners are not served yet).
PLAINTEXT_LISTENER = "PLAINTEXT"


@dataclass(frozen=True, slots=True)
class RequestContext:
    header: RequestHeader
    connection: KafkaConnection
    services: BrokerServices
    #: The dispatcher's (one per broker); a fresh one only where a context is made alone.
    refusals: RefusalLog = field(default_factory=RefusalLog)

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str:
        return self.header.client_id or ""

    @property
    def listener_name(self) -> str:
        """The listener the request came in on (Kafka's ``RequestContext.listenerName``):
        the endpoints answered (Metadata, DescribeCluster, FindCoordinator) are of this
        listener (``KafkaConnection.listener_name``, set by the listener that accepted it).
        """
        return self.connection.listener_name

    @property
    def principal(self) -> KafkaPrincipal:
        """Who sent the request (Kafka's ``RequestContext.principal``)."""
        return self.connection.principal

    @property
    def client_host(self) -> str:
        return self.connection.peer.rsplit(":", 1)[0]

    def refused(self, kind: str, reason: str) -> None:
        """Log a refused operation (``franz.broker.refusals``): INFO the first time for this
        client and ``kind``, DEBUG afterwards."""
        self.refusals.refused(self.client_id, self.client_host, kind, reason)


@dataclass(frozen=True, slots=True)
class RawBody:
    """A response body a handler encoded itself (Fetch, for ``sendfile``)."""

    chunks: list[bytes | FileRegion]


def request_timeout_ms(request: Any, default_ms: int = 30_000) -> int:
    """A request's ``timeout_ms`` field (kio's ``timeout``, a ``timedelta``), in ms."""
    value = getattr(request, "timeout", None)
    if value is None:
        return default_ms
    if isinstance(value, timedelta):
        return int(value.total_seconds() * 1000)
    return int(value)


#: What a handler returns: a mapping of Kafka field names (built into the response version
#: by ``franz.protocol.messages.build``), a ``RawBody``, or None when no response is sent.
HandlerResult = dict[str, Any] | RawBody | None
