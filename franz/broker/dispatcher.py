"""Requests in, responses out: header parsing, version checks, decoding, handler dispatch
and the one place where failures become protocol outcomes.

Per request (Kafka's ``RequestChannel`` + ``KafkaApis`` without the god class):

1. Parse the header. Unparsable: close the connection.
2. ApiVersions at a version Franz does not serve: UNSUPPORTED_VERSION in a **v0 body** listing
   the supported ranges (KIP-511), never a disconnect.
3. Unknown API key, or another API at a version above the advertised range (every advertised
   version is served, from v0): close the connection, as Kafka does when it cannot parse a
   request (no response body exists for a version Franz cannot encode). Clients never pick
   such versions: they negotiate from ApiVersions.
4. Decode the body with kio (by hand: Produce, and the versions kio lacks: Fetch v0-3,
   ListOffsets v0, OffsetCommit v0-1, OffsetForLeaderEpoch v0-1,
   ``franz.protocol.legacy_versions``; other versions
   below Kafka 4.0's floors with the next version's classes, ``franz.protocol.stand_ins``).
   Unparsable: close the connection. That includes a null (-1 count) in an array Kafka's
   schema does not declare nullable (``franz.protocol.guard``): Kafka's generated readers
   refuse it and its SocketServer closes the connection, so no handler ever sees ``None``
   where the schema promises a list.
5. Run the API's handler (``franz.broker.handlers``). Handlers report per-partition and
   per-resource failures as error codes in their responses (``franz.errors.error_code_for``);
   an exception escaping a handler is a bug: it is logged with its traceback and the
   connection is closed, so the client retries on a fresh one.

Unsupported requests (2, 3) and operations handlers refuse (``RequestContext.refused``) go to
the broker log through one ``RefusalLog``: DEBUG, and INFO the first time per client (client
id and host) and kind.
6. Encode: frame size, response header (v0, or v1 for flexible versions except
   ApiVersions), body.

Client quotas (``franz.broker.client_quotas``, Kafka's ``KafkaApis`` with ``QuotaManagers``):
while none was ever configured the only cost is one attribute test per request. Then a
Produce request's size counts against ``producer_byte_rate``, the handler's time on the
loop against ``request_percentage`` (except the inter-broker APIs and followers' fetches,
Kafka's cluster actions, and acks=0 produces), the Fetch handler counts its own bytes;
the larger throttle time goes into the response's ``throttle_time_ms`` and the connection
is muted for it once the response is ready (KIP-219, ``KafkaConnection.throttle``). A
Produce v1-2 response (hand-encoded) keeps ``throttle_time_ms`` 0; its connection is muted
all the same.

Request metrics (Kafka's ``RequestChannel.Request.updateRequestMetrics``): with the metrics
endpoint on, each request that reaches its handler is counted and timed under its API's
name (and a Fetch under ``FetchConsumer`` or ``FetchFollower`` too): the synchronous part
(decode and handler) is the local time, the wait for an awaitable result the remote time,
the encoding the send time (``franz.metrics.traffic.RequestMetrics``). Off, the cost is one
attribute test per request.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Final

from franz.broker.context import RawBody, RequestContext
from franz.broker.handlers import HANDLERS
from franz.broker.handlers.api_versions import advertised_api_keys
from franz.broker.refusals import RefusalLog
from franz.broker.sasl_gate import PASS, SASL_PROTOCOLS, SaslGate
from franz.errors import ErrorCode, InvalidRequestError
from franz.metrics.traffic import RequestMetrics, RequestMetricsRegistry, request_name
from franz.network.connection import CloseConnection, KafkaConnection, Response
from franz.protocol.api_keys import INTER_BROKER_APIS, SUPPORTED_APIS, ApiKey
from franz.protocol.fetch import FileRegion
from franz.protocol.headers import (
    RequestHeader,
    encode_response_header,
    parse_request_header,
    response_header_version,
)
from franz.protocol.legacy_versions import (
    LEGACY_FETCH_BELOW,
    decode_legacy_fetch_request,
    decode_legacy_offset_commit_request,
    decode_list_offsets_v0_request,
    decode_offset_for_leader_epoch_v0_request,
    decode_write_txn_markers_v0_request,
)
from franz.protocol.messages import build_response, decode_request, encode_response
from franz.protocol.produce import decode_produce_request
from franz.protocol.stand_ins import stand_in_for

if TYPE_CHECKING:
    from franz.broker.client_quotas import ClientQuotas
    from franz.broker.handlers import Handler
    from franz.broker.services import BrokerServices

__all__ = ["Dispatcher"]

log = logging.getLogger(__name__)

_SIZE: Final = struct.Struct(">i")

#: Kafka's cluster actions: never charged to ``request_percentage``.
_REQUEST_QUOTA_EXEMPT: Final = frozenset({
    ApiKey.LEADER_AND_ISR, ApiKey.STOP_REPLICA, ApiKey.UPDATE_METADATA,
    ApiKey.CONTROLLED_SHUTDOWN, ApiKey.WRITE_TXN_MARKERS, ApiKey.ALTER_PARTITION,
})
#: Keys of ``Dispatcher._timed_by_key`` for a consumer's and a follower's Fetch.
_FETCH_CONSUMER: Final = -1
_FETCH_FOLLOWER: Final = -2
#: ``ClientQuotaManagerConfig.NanosToPercentagePerSecond``.
_NANOS_TO_PERCENTAGE: Final = 100.0 / 1_000_000_000


def unsupported_api_versions_body(*, zk_mode: bool = False) -> bytes:
    """ApiVersions v0 body: UNSUPPORTED_VERSION and every supported range."""
    body = build_response(
        ApiKey.API_VERSIONS,
        0,
        {
            "error_code": ErrorCode.UNSUPPORTED_VERSION,
            "api_keys": advertised_api_keys(zk_mode=zk_mode),
        },
    )
    return encode_response(body)


class Dispatcher:
    """The ``RequestHandler`` the network layer calls for every frame."""

    def __init__(self, services: BrokerServices, sasl_gate: SaslGate | None = None) -> None:
        self.services = services
        self.refusals = RefusalLog()
        #: SASL listeners' authentication (``franz.broker.sasl_gate``), ahead of everything.
        self.sasl_gate = sasl_gate
        #: Kafka's ``RequestMetrics`` (``franz.metrics.traffic``), set by the broker when the
        #: metrics endpoint is on; None: requests are not timed (one test per request).
        self.request_metrics: RequestMetricsRegistry | None = None
        #: The request being handled's ``RequestMetrics`` (set by ``_handle``) and its
        #: response's encoding time (set by ``_encode``), read by ``handle`` in the same step.
        self._timed: tuple[RequestMetrics, ...] = ()
        self._timed_version = 0
        self._encode_ns = 0
        #: API key (or ``_FETCH_*``) -> its ``RequestMetrics``, so a request costs one lookup.
        self._timed_by_key: dict[int, tuple[RequestMetrics, ...]] = {}

    def handle(
        self, connection: KafkaConnection, frame: bytes | bytearray
    ) -> Response | Awaitable[Response | None] | None:
        metrics = self.request_metrics
        if metrics is None:
            return self._handle(connection, frame)
        # RequestMetrics (franz.metrics.traffic.RequestMetrics says what each time is here).
        started = time.perf_counter_ns()
        self._timed = ()
        self._encode_ns = 0
        result = self._handle(connection, frame)
        timed = self._timed
        if not timed:
            return result
        version = self._timed_version
        queue_ns = connection.queue_wait_ns  # held by a quota mute, else 0
        if isinstance(result, Awaitable):
            local_ns = time.perf_counter_ns() - started
            return self._timed_later(result, timed, version, queue_ns, local_ns)
        send_ns = self._encode_ns
        local_ns = time.perf_counter_ns() - started - send_ns
        for one in timed:
            one.record(version, queue_ns, local_ns, 0, send_ns)
        return result

    async def _timed_later(
        self,
        pending: Awaitable[Response | None],
        timed: tuple[RequestMetrics, ...],
        version: int,
        queue_ns: int,
        local_ns: int,
    ) -> Response | None:
        waiting = time.perf_counter_ns()
        response = await pending
        # ``_encode`` ran in this same step, at the end of ``pending``.
        send_ns = self._encode_ns
        remote_ns = time.perf_counter_ns() - waiting - send_ns
        for one in timed:
            one.record(version, queue_ns, local_ns, remote_ns, send_ns)
        return response

    def _time_as(
        self, header: RequestHeader, request: Any, metrics: RequestMetricsRegistry
    ) -> None:
        """The ``RequestMetrics`` ``handle`` records this request under: its API's, and a
        Fetch's ``FetchConsumer`` or ``FetchFollower`` too (``RequestChannel``)."""
        key = header.api_key
        if key == ApiKey.FETCH:
            key = _FETCH_FOLLOWER if _fetch_replica_id(request) >= 0 else _FETCH_CONSUMER
        timed = self._timed_by_key.get(key)
        if timed is None:
            if key in (_FETCH_FOLLOWER, _FETCH_CONSUMER):
                kind = "FetchFollower" if key == _FETCH_FOLLOWER else "FetchConsumer"
                timed = (metrics.get("Fetch"), metrics.get(kind))
            else:
                timed = (metrics.get(request_name(ApiKey(key).name)),)
            self._timed_by_key[key] = timed
        self._timed = timed
        self._timed_version = header.api_version

    def _refused(
        self, connection: KafkaConnection, header: RequestHeader, kind: str, reason: str
    ) -> None:
        host = connection.peer.rsplit(":", 1)[0]
        self.refusals.refused(header.client_id or "", host, kind, reason)

    def _handle(
        self, connection: KafkaConnection, frame: bytes | bytearray
    ) -> Response | Awaitable[Response | None] | None:
        if self.sasl_gate is not None and connection.security_protocol in SASL_PROTOCOLS:
            gated = self.sasl_gate.check(connection, frame)
            if gated is not PASS:
                return gated  # type: ignore[return-value]
        try:
            header = parse_request_header(frame)
        except InvalidRequestError as exc:
            log.debug("closing %s: %s", connection.peer, exc)
            raise CloseConnection from exc
        # An API is served (and advertised) only when it has a handler.
        handler = HANDLERS.get(header.api_key)
        support = SUPPORTED_APIS.get(header.api_key)  # type: ignore[call-overload]
        if support is None and self.services.zk_mode:
            support = INTER_BROKER_APIS.get(header.api_key)  # type: ignore[call-overload]
        if support is None or handler is None:
            self._refused(
                connection,
                header,
                f"API key {header.api_key}",
                f"not supported; closing {connection.peer} "
                f"(correlation id {header.correlation_id})",
            )
            raise CloseConnection
        if not support.accepts(header.api_version):
            name = ApiKey(header.api_key).name
            kind = f"{name} v{header.api_version}"
            if header.api_key == ApiKey.API_VERSIONS:
                self._refused(
                    connection,
                    header,
                    kind,
                    f"not supported; answering UNSUPPORTED_VERSION in a v0 body "
                    f"(accepted {support.min_accepted}-{support.max_version})",
                )
                return self._frame(
                    header, 0, [unsupported_api_versions_body(zk_mode=self.services.zk_mode)]
                )
            self._refused(
                connection,
                header,
                kind,
                f"not supported (accepted {support.min_accepted}-{support.max_version}); "
                f"closing {connection.peer}",
            )
            raise CloseConnection
        stand_in = stand_in_for(header.api_key, header.api_version)
        try:
            if header.api_key == ApiKey.PRODUCE:
                request: Any = decode_produce_request(header.api_version, frame, header.size)
            elif header.api_key == ApiKey.FETCH and header.api_version < LEGACY_FETCH_BELOW:
                request = decode_legacy_fetch_request(header.api_version, frame, header.size)
            elif header.api_key == ApiKey.LIST_OFFSETS and header.api_version == 0:
                request = decode_list_offsets_v0_request(frame, header.size)
            elif header.api_key == ApiKey.OFFSET_COMMIT and support.is_legacy(header.api_version):
                request = decode_legacy_offset_commit_request(
                    header.api_version, frame, header.size
                )
            elif header.api_key == ApiKey.OFFSET_FOR_LEADER_EPOCH and support.is_legacy(
                header.api_version
            ):
                request = decode_offset_for_leader_epoch_v0_request(frame, header.size)
            elif header.api_key == ApiKey.WRITE_TXN_MARKERS and support.is_legacy(
                header.api_version
            ):
                request = decode_write_txn_markers_v0_request(frame, header.size)
            elif stand_in is not None:
                request = decode_request(
                    header.api_key,
                    stand_in.kio_version,
                    stand_in.request_bytes(frame, header.size),
                    header.size,
                )
            else:
                request = decode_request(header.api_key, header.api_version, frame, header.size)
        except InvalidRequestError as exc:
            log.debug("closing %s: %s", connection.peer, exc)
            raise CloseConnection from exc
        context = RequestContext(header, connection, self.services, self.refusals)
        if self.request_metrics is not None:
            self._time_as(header, request, self.request_metrics)
        quotas = self.services.client_quotas
        if quotas.enabled:
            return self._handle_with_quotas(quotas, handler, context, request, len(frame))
        result = handler(context, request)
        if isinstance(result, Awaitable):
            return self._complete_later(header, result)
        return self._encode(header, result)

    def _handle_with_quotas(
        self,
        quotas: ClientQuotas,
        handler: Handler,
        context: RequestContext,
        request: Any,
        size: int,
    ) -> Response | Awaitable[Response | None] | None:
        """``handle`` with the client quotas recorded (module docstring)."""
        header = context.header
        connection = context.connection
        user = connection.principal.name
        client_id = header.client_id or ""
        now_ms = quotas.now_ms()
        api_key = header.api_key
        throttle_ms = 0
        if api_key == ApiKey.PRODUCE:
            throttle_ms = quotas.produce.record(user, client_id, size, now_ms)
        started = time.perf_counter_ns()
        result = handler(context, request)
        exempt = (
            api_key in _REQUEST_QUOTA_EXEMPT
            or (api_key == ApiKey.PRODUCE and result is None)
            or (api_key == ApiKey.FETCH and _fetch_replica_id(request) >= 0)
        )
        if not exempt and quotas.request.enabled:
            elapsed = time.perf_counter_ns() - started
            throttle_ms = max(
                throttle_ms,
                quotas.request.record(user, client_id, elapsed * _NANOS_TO_PERCENTAGE, now_ms),
            )
        if isinstance(result, Awaitable):
            return self._complete_later(header, result, connection, throttle_ms)
        if result is None:
            connection.throttle(throttle_ms)
            return None
        return self._encode(header, result, connection, throttle_ms)

    async def _complete_later(
        self,
        header: RequestHeader,
        pending: Awaitable[Any],
        connection: KafkaConnection | None = None,
        throttle_ms: int = 0,
    ) -> Response | None:
        return self._encode(header, await pending, connection, throttle_ms)

    def _encode(
        self,
        header: RequestHeader,
        result: Any,
        connection: KafkaConnection | None = None,
        throttle_ms: int = 0,
    ) -> Response | None:
        self._encode_ns = 0  # this request's, not a previous one's (read by ``handle``)
        if throttle_ms > 0:
            assert connection is not None
            result = _with_throttle(header, result, throttle_ms)
            connection.throttle(throttle_ms)
        if result is None:
            return None
        if self.request_metrics is None:
            return self._encoded(header, result)
        started = time.perf_counter_ns()
        response = self._encoded(header, result)
        self._encode_ns = time.perf_counter_ns() - started
        return response

    def _encoded(self, header: RequestHeader, result: Any) -> Response:
        stand_in = stand_in_for(header.api_key, header.api_version)
        if isinstance(result, RawBody):
            chunks = result.chunks
        elif stand_in is not None:
            response = build_response(header.api_key, stand_in.kio_version, result)
            encode = stand_in.encode or encode_response
            chunks = [encode(response)]
        else:
            chunks = [
                encode_response(build_response(header.api_key, header.api_version, result))
            ]
        version = response_header_version(header.api_key, header.api_version)
        return self._frame(header, version, chunks)

    @staticmethod
    def _frame(
        header: RequestHeader, header_version: int, chunks: list[bytes | FileRegion]
    ) -> Response:
        head = encode_response_header(header.correlation_id, header_version)
        size = len(head) + sum(c.size if isinstance(c, FileRegion) else len(c) for c in chunks)
        first = chunks[0] if chunks else b""
        if isinstance(first, bytes):
            return [_SIZE.pack(size) + head + first, *chunks[1:]]
        return [_SIZE.pack(size) + head, *chunks]


def _with_throttle(header: RequestHeader, result: Any, throttle_ms: int) -> Any:
    """The response with ``throttle_time_ms`` at least ``throttle_ms``: a mapping's
    ``throttle_time``, or a Fetch v1+ body's first field (hand-encoded, ``RawBody``)."""
    if isinstance(result, dict):
        result["throttle_time"] = throttle_ms
    elif (
        isinstance(result, RawBody)
        and header.api_key == ApiKey.FETCH
        and header.api_version >= 1
        and result.chunks
        and isinstance(result.chunks[0], bytes)
    ):
        first = result.chunks[0]
        (current,) = _SIZE.unpack_from(first, 0)
        if throttle_ms > current:
            result = RawBody([_SIZE.pack(throttle_ms) + first[4:], *result.chunks[1:]])
    return result


def _fetch_replica_id(request: Any) -> int:
    """A Fetch's replica id: ``replica_id`` below v15, ``replica_state.replica_id`` from v15
    (KIP-903); -1 for consumers."""
    state = getattr(request, "replica_state", None)
    if state is not None:
        return int(state.replica_id)
    return int(getattr(request, "replica_id", -1))
