"""The outbound edge: one asyncio connection from this broker to another Kafka broker.

``KafkaClientConnection`` is the thin I/O shell around the sans-IO ``ClientCodec``
(``franz.protocol.client``): it writes the frames the codec builds and feeds it what the
socket reads. The controller's channel and the replica fetcher send through it.

Rules this file keeps (Kafka's ``NetworkClient`` and ``Selector`` are the model):

* **Connect** within ``connect_timeout`` (Kafka's ``socket.connection.setup.timeout.ms``,
  10 s), then optionally the ApiVersions handshake: the first request, sent at the newest
  version Franz knows; a broker that refuses it (UNSUPPORTED_VERSION, answered in a v0 body
  that lists its ranges) is asked again at the newest version it listed, as Kafka's clients do
  (KIP-511). ``version_for`` then picks, per API, the highest version both sides support,
  capped by what the caller can send.
* **Pipelining.** Up to ``max_in_flight`` requests wait for their responses
  (``max.in.flight.requests.per.connection``, 5); more senders wait for a slot. A slot is held
  until the response arrives or the connection fails, even if the caller stopped waiting.
* **In order.** Responses are matched to requests by correlation id, oldest first; a mismatch
  closes the connection (``CorrelationIdMismatchError``), as does any bytes that do not frame.
* **Request timeout** (``request.timeout.ms`` 30 s; the controller's channel uses
  ``controller.socket.timeout.ms``, also 30 s): a request unanswered in time fails with
  ``RequestTimeoutError`` and closes the connection, failing every other request in flight
  with ``ConnectionClosedError`` (``NetworkClient.handleTimedOutRequests`` disconnects the
  node: later responses on that socket could not be trusted to be read in order anyway).
* **Close** fails every pending request at once with ``ConnectionClosedError`` naming the
  reason; ``wait_closed`` returns when the transport is gone. No task is left behind: the
  connection creates none (timers are ``call_later`` handles, cancelled on completion).
* **TLS**: ``ssl`` (the inter-broker listener's client context, ``franz.security.tls``)
  wraps the connection; the handshake counts against ``connect_timeout`` and a failed one
  is a ``ClientConnectionError`` like any other connect failure.
* **Failures are exceptions** of ``ClientConnectionError``: the caller (``BrokerSender``)
  decides to reconnect and retry. Error codes inside responses are not looked at here.
* **SASL** (issue 20): when the broker's inter-broker listener is SASL
  (``sasl.mechanism.inter.broker.protocol``, the listener's JAAS ``username``/``password``),
  ``KafkaClientConnection.inter_broker_sasl`` is set once at start and every connection
  authenticates after connecting (SaslHandshake v1, SaslAuthenticate v2: PLAIN or SCRAM, the
  server signature checked), before any other request. Every outbound connection of a broker
  goes to another broker's inter-broker listener, hence one process-wide setting. A refusal
  is a ``ClientConnectionError`` like any failed connect.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import logging
import secrets
import socket
import ssl as _ssl
from dataclasses import dataclass
from typing import Any, Final

from franz import __version__
from franz.errors import FranzError
from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from franz.protocol.client import (
    ClientCodec,
    ClientProtocolError,
    ClientResponse,
    decode_body,
    encode_body,
    negotiate_version,
)
from franz.protocol.fetch_response import FetchResponseData, decode_fetch_response
from franz.protocol.framing import FramingError
from franz.protocol.messages import request_type
from franz.security.scram import ScramMechanism, client_final_message

__all__ = [
    "ClientConnectionError",
    "ConnectTimeoutError",
    "ConnectionClosedError",
    "KafkaClientConnection",
    "RequestTimeoutError",
    "SaslClientCredentials",
    "UnsupportedApiVersionError",
]

log = logging.getLogger(__name__)

#: ``socket.connection.setup.timeout.ms`` (10 s) and ``request.timeout.ms`` (30 s).
DEFAULT_CONNECT_TIMEOUT: Final = 10.0
DEFAULT_REQUEST_TIMEOUT: Final = 30.0
#: ``max.in.flight.requests.per.connection``.
DEFAULT_MAX_IN_FLIGHT: Final = 5
#: Largest response accepted: Kafka's clients have no limit (``Integer.MAX_VALUE``); a
#: follower's fetch is bounded by ``replica.fetch.response.max.bytes`` (10 MiB) anyway.
DEFAULT_MAX_RESPONSE_SIZE: Final = 2**31 - 1
_UNSUPPORTED_VERSION: Final = 35


class ClientConnectionError(FranzError):
    """The request may or may not have reached the broker; reconnect and retry."""


class ConnectionClosedError(ClientConnectionError):
    """The connection closed (locally, by the peer, or after a protocol error) before the
    response arrived."""


class ConnectTimeoutError(ClientConnectionError):
    """The TCP connection (or the ApiVersions handshake) did not complete in time."""


class RequestTimeoutError(ClientConnectionError):
    """No response within the request timeout; the connection was closed."""


class UnsupportedApiVersionError(FranzError):
    """The broker and Franz share no version of an API (Kafka's UnsupportedVersionException)."""


@dataclass(frozen=True, slots=True)
class SaslClientCredentials:
    """The broker's own SASL identity towards other brokers."""

    mechanism: str
    username: str
    password: str

    def __repr__(self) -> str:
        return f"SaslClientCredentials({self.mechanism}, {self.username})"


class KafkaClientConnection(asyncio.Protocol):
    """One TCP connection to one broker (module docstring). Create with ``connect``."""

    #: Set by the broker when its inter-broker listener is SASL (module docstring).
    inter_broker_sasl: SaslClientCredentials | None = None

    def __init__(
        self,
        address: str,
        *,
        client_id: str | None = "franz",
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_response_size: int = DEFAULT_MAX_RESPONSE_SIZE,
    ) -> None:
        self.address = address
        self.request_timeout = request_timeout
        self._codec = ClientCodec(client_id, max_response_size)
        self._slots = asyncio.Semaphore(max_in_flight)
        self._transport: asyncio.Transport | None = None
        #: Requests awaiting a response, by correlation id (insertion order = send order).
        self._pending: collections.OrderedDict[
            int, tuple[asyncio.Future[ClientResponse], asyncio.TimerHandle | None, str]
        ] = collections.OrderedDict()
        self._writable: asyncio.Event = asyncio.Event()
        self._writable.set()
        self._closed_reason: str | None = None
        self._lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        #: The broker's ApiVersions ranges (None: no handshake was made).
        self.api_versions: dict[int, tuple[int, int]] | None = None

    # -- opening ------------------------------------------------------------------------

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        handshake: bool = True,
        ssl: _ssl.SSLContext | None = None,
        **options: Any,
    ) -> KafkaClientConnection:
        """Open a connection (and make the ApiVersions handshake unless ``handshake`` is
        False, as Kafka's controller does not: it sends at the versions its
        ``inter.broker.protocol.version`` fixes)."""
        loop = asyncio.get_running_loop()
        address = f"{host}:{port}"
        connection = cls(address, **options)
        try:
            async with asyncio.timeout(connect_timeout):
                if ssl is None:
                    await loop.create_connection(lambda: connection, host, port)
                else:
                    await loop.create_connection(
                        lambda: connection, host, port, ssl=ssl, server_hostname=host
                    )
                if handshake:
                    await connection._handshake()
                if cls.inter_broker_sasl is not None:
                    await connection._sasl_authenticate(cls.inter_broker_sasl)
        except TimeoutError:
            connection.close("connect timeout")
            raise ConnectTimeoutError(
                f"connecting to {address} took longer than {connect_timeout * 1000:.0f} ms"
            ) from None
        except OSError as exc:
            connection.close(str(exc))
            raise ClientConnectionError(f"could not connect to {address}: {exc}") from exc
        except BaseException:
            connection.close("connect failed")
            raise
        return connection

    async def _handshake(self) -> None:
        version = SUPPORTED_APIS[ApiKey.API_VERSIONS].max_version
        while True:
            cls: Any = request_type(ApiKey.API_VERSIONS, version)
            request = (
                cls(client_software_name="franz", client_software_version=__version__)
                if version >= 3
                else cls()
            )
            response = await self.send_raw(ApiKey.API_VERSIONS, version, encode_body(request))
            # An UNSUPPORTED_VERSION answer is a v0 body whatever the version asked (KIP-511).
            error = int.from_bytes(response.body[:2], "big", signed=True)
            if error == _UNSUPPORTED_VERSION:
                decoded = decode_body(ApiKey.API_VERSIONS, 0, response.body)
                ranges = {
                    int(k.api_key): (int(k.min_version), int(k.max_version))
                    for k in decoded.api_keys
                }
                broker_max = ranges.get(ApiKey.API_VERSIONS, (0, 0))[1]
                if broker_max >= version:
                    raise ClientProtocolError(
                        f"{self.address} refused ApiVersions v{version} but lists v{broker_max}"
                    )
                version = broker_max
                continue
            decoded = decode_body(ApiKey.API_VERSIONS, version, response.body)
            if error:
                raise ClientProtocolError(f"{self.address} answered ApiVersions with error {error}")
            self.api_versions = {
                int(k.api_key): (int(k.min_version), int(k.max_version)) for k in decoded.api_keys
            }
            return

    async def _sasl_authenticate(self, creds: SaslClientCredentials) -> None:
        """SaslHandshake v1 then SaslAuthenticate v2 tokens (module docstring)."""
        handshake = request_type(ApiKey.SASL_HANDSHAKE, 1)(mechanism=creds.mechanism)
        response = await self.send_raw(ApiKey.SASL_HANDSHAKE, 1, encode_body(handshake))
        decoded = decode_body(ApiKey.SASL_HANDSHAKE, 1, response.body)
        if decoded.error_code:
            raise ClientConnectionError(
                f"{self.address} refused SASL mechanism {creds.mechanism} "
                f"(error {decoded.error_code}; enabled: {', '.join(decoded.mechanisms)})"
            )
        if creds.mechanism == "PLAIN":
            await self._sasl_token(f"\0{creds.username}\0{creds.password}".encode())
            return
        mechanism = ScramMechanism.for_name(creds.mechanism)
        if mechanism is None:
            raise ClientConnectionError(f"SASL mechanism {creds.mechanism} is not supported")
        name = creds.username.replace("=", "=3D").replace(",", "=2C")
        bare = f"n={name},r={secrets.token_urlsafe(24)}"
        server_first = (await self._sasl_token(f"n,,{bare}".encode())).decode()
        final, signature = client_final_message(mechanism, creds.password, bare, server_first)
        server_final = await self._sasl_token(final.encode())
        if server_final != b"v=" + base64.b64encode(signature):
            raise ClientConnectionError(f"{self.address} sent an invalid SCRAM server signature")

    async def _sasl_token(self, token: bytes) -> bytes:
        request = request_type(ApiKey.SASL_AUTHENTICATE, 2)(auth_bytes=token)
        response = await self.send_raw(ApiKey.SASL_AUTHENTICATE, 2, encode_body(request))
        decoded = decode_body(ApiKey.SASL_AUTHENTICATE, 2, response.body)
        if decoded.error_code:
            raise ClientConnectionError(
                f"SASL authentication with {self.address} failed: {decoded.error_message}"
            )
        return bytes(decoded.auth_bytes)

    def version_for(self, api_key: int, client_max: int, client_min: int = 0) -> int:
        """The version of ``api_key`` to send: the highest both sides support, at most
        ``client_max``. Needs the handshake; ``UnsupportedApiVersionError`` if none fits."""
        if self.api_versions is None:
            raise RuntimeError("version_for needs the ApiVersions handshake (handshake=True)")
        version = negotiate_version(api_key, self.api_versions.get(api_key), client_max, client_min)
        if version is None:
            raise UnsupportedApiVersionError(
                f"{self.address} supports api {api_key} at "
                f"{self.api_versions.get(api_key)}, Franz sends v{client_min}-v{client_max}"
            )
        return version

    # -- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        sock: socket.socket | None = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._closed_reason is None:
            self._closed_reason = f"closed by the peer{f': {exc}' if exc else ''}"
        self._fail_pending()
        self._writable.set()
        if not self._lost.done():
            self._lost.set_result(None)

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def data_received(self, data: bytes) -> None:
        if self._closed_reason is not None:
            return
        try:
            responses = self._codec.receive(data)
        except (FramingError, ClientProtocolError) as exc:
            log.warning("closing the connection to %s: %s", self.address, exc)
            self.close(str(exc))
            return
        for response in responses:
            entry = self._pending.pop(response.correlation_id, None)
            if entry is None:  # sent with expect_response=False never lands here
                continue
            future, timer, _ = entry
            if timer is not None:
                timer.cancel()
            self._slots.release()
            if not future.done():
                future.set_result(response)

    def eof_received(self) -> bool | None:
        return None  # close the transport: a broker never half-closes

    # -- requests -----------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._closed_reason is not None

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    async def send_raw(
        self,
        api_key: int,
        api_version: int,
        body: bytes | bytearray | memoryview,
        *,
        timeout: float | None = None,
    ) -> ClientResponse:
        """Send a request body (already encoded) and wait for its response body."""
        future = await self._write(api_key, api_version, body, timeout, expect_response=True)
        assert future is not None
        return await future

    async def send_oneway(
        self, api_key: int, api_version: int, body: bytes | bytearray | memoryview
    ) -> None:
        """Send a request that gets no response (Produce with acks=0)."""
        await self._write(api_key, api_version, body, None, expect_response=False)

    async def send(self, request: Any, *, timeout: float | None = None) -> Any:
        """Send a kio request entity; return kio's response entity (None for acks=0)."""
        api_key = int(request.__api_key__)
        version = int(request.__version__)
        body = encode_body(request)
        if api_key == ApiKey.PRODUCE and int(request.acks) == 0:
            await self.send_oneway(api_key, version, body)
            return None
        response = await self.send_raw(api_key, version, body, timeout=timeout)
        return decode_body(api_key, version, response.body)

    async def fetch(self, request: Any, *, timeout: float | None = None) -> FetchResponseData:
        """Send a kio FetchRequest; decode the response by hand, records left as views."""
        version = int(request.__version__)
        response = await self.send_raw(ApiKey.FETCH, version, encode_body(request), timeout=timeout)
        return decode_fetch_response(version, response.body)

    async def _write(
        self,
        api_key: int,
        api_version: int,
        body: bytes | bytearray | memoryview,
        timeout: float | None,
        *,
        expect_response: bool,
    ) -> asyncio.Future[ClientResponse] | None:
        self._check_open()
        if expect_response:
            await self._slots.acquire()
        try:
            if not self._writable.is_set():
                await self._writable.wait()
            self._check_open()
            transport = self._transport
            assert transport is not None
            correlation_id, frame = self._codec.encode_request(
                api_key, api_version, body, expect_response=expect_response
            )
        except BaseException:
            if expect_response:
                self._slots.release()
            raise
        # From here on nothing awaits or raises: the frame and its pending entry go together.
        transport.write(frame)
        if not expect_response:
            return None
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ClientResponse] = loop.create_future()
        seconds = self.request_timeout if timeout is None else timeout
        timer = loop.call_later(seconds, self._timed_out, correlation_id, seconds)
        self._pending[correlation_id] = (future, timer, f"api {api_key} v{api_version}")
        return future

    def _check_open(self) -> None:
        if self._closed_reason is not None:
            raise ConnectionClosedError(
                f"connection to {self.address} is closed ({self._closed_reason})"
            )
        if self._transport is None:
            raise ConnectionClosedError(f"connection to {self.address} is not open")

    def _timed_out(self, correlation_id: int, seconds: float) -> None:
        entry = self._pending.pop(correlation_id, None)
        if entry is None:
            return
        future, _, what = entry
        self._slots.release()
        message = (
            f"request {what} (correlation id {correlation_id}) to {self.address} timed out "
            f"after {seconds * 1000:.0f} ms"
        )
        if not future.done():
            future.set_exception(RequestTimeoutError(message))
        log.info("%s; closing the connection", message)
        self.close(f"request {what} timed out")

    # -- closing ------------------------------------------------------------------------

    def close(self, reason: str = "closed by Franz") -> None:
        """Close now; every pending request fails with ``ConnectionClosedError``."""
        if self._closed_reason is None:
            self._closed_reason = reason
        transport = self._transport
        if transport is not None and not transport.is_closing():
            transport.close()
        elif transport is None and not self._lost.done():
            self._lost.set_result(None)
        self._fail_pending()
        self._writable.set()

    async def wait_closed(self) -> None:
        await asyncio.shield(self._lost)

    def _fail_pending(self) -> None:
        pending, self._pending = self._pending, collections.OrderedDict()
        for correlation_id, (future, timer, what) in pending.items():
            if timer is not None:
                timer.cancel()
            self._slots.release()
            if not future.done():
                future.set_exception(
                    ConnectionClosedError(
                        f"connection to {self.address} closed ({self._closed_reason}) before "
                        f"the response to {what} (correlation id {correlation_id})"
                    )
                )
