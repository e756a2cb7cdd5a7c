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
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Final

from franz.broker.context import RawBody, RequestContext
from franz.broker.handlers import HANDLERS
from franz.broker.handlers.api_versions import advertised_api_keys
from franz.broker.refusals import RefusalLog
from franz.broker.sasl_gate import PASS, SASL_PROTOCOLS, SaslGate
from franz.errors import ErrorCode, InvalidRequestError
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
    from franz.broker.services import BrokerServices

__all__ = ["Dispatcher"]

log = logging.getLogger(__name__)

_SIZE: Final = struct.Struct(">i")


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

    def _refused(
        self, connection: KafkaConnection, header: RequestHeader, kind: str, reason: str
    ) -> None:
        host = connection.peer.rsplit(":", 1)[0]
        self.refusals.refused(header.client_id or "", host, kind, reason)

    def handle(
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
                    frame + stand_in.request_suffix,
                    header.size,
                )
            else:
                request = decode_request(header.api_key, header.api_version, frame, header.size)
        except InvalidRequestError as exc:
            log.debug("closing %s: %s", connection.peer, exc)
            raise CloseConnection from exc
        context = RequestContext(header, connection, self.services, self.refusals)
        result = handler(context, request)
        if isinstance(result, Awaitable):
            return self._complete_later(header, result)
        return self._encode(header, result)

    async def _complete_later(
        self, header: RequestHeader, pending: Awaitable[Any]
    ) -> Response | None:
        return self._encode(header, await pending)

    def _encode(self, header: RequestHeader, result: Any) -> Response | None:
        if result is None:
            return None
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
