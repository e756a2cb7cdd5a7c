"""SASL authentication of a connection on a ``SASL_PLAINTEXT`` or ``SASL_SSL`` listener: Kafka's
``SaslServerAuthenticator`` and the parts of ``KafkaChannel``/``Selector`` around it
(re-authentication, expired sessions, the failed-authentication delay).

The dispatcher calls ``SaslGate.check`` with every frame of such a connection before the
normal request path; it answers ``PASS`` (serve the request as usual) or the response
itself. Per connection, a ``SaslSession`` in ``KafkaConnection.authenticator`` holds the state:

==========================  ===============================================================
state                       accepted, and what follows
==========================  ===============================================================
HANDSHAKE_OR_VERSIONS       ApiVersions (served as usual; an unsupported version may be
                            retried) -> HANDSHAKE; SaslHandshake -> AUTHENTICATE (v1) or
                            RAW_TOKENS (v0)
HANDSHAKE                   SaslHandshake -> AUTHENTICATE / RAW_TOKENS
AUTHENTICATE                SaslAuthenticate v0-2 (KIP-152): its ``auth_bytes`` are the token
RAW_TOKENS                  a handshake v0 client: each frame is a bare token, answered by a
                            bare size-prefixed token (no Kafka header; KIP-43)
COMPLETE                    every request, as usual. SaslHandshake starts a re-authentication
                            (KIP-368) when the client sent a SaslAuthenticate v1+; a request
                            after the session expired closes the connection
FAILED                      nothing: frames are ignored until the failure response is sent
==========================  ===============================================================

Any other request before authentication closes the connection (Kafka throws
``InvalidRequestException`` there). During the token exchange, a request other than
SaslAuthenticate is answered, as Kafka does, with ILLEGAL_SASL_STATE where Franz can build
that API's error response (SaslHandshake; ``Unexpected Kafka request of type SASL_HANDSHAKE
during SASL authentication.``) and otherwise just closes.

Failures (Kafka's ``AuthenticationException``: a wrong password, an unknown user, a bad
SCRAM message, an unsupported mechanism): the connection stops reading at once, its failure
response (SASL_AUTHENTICATION_FAILED with Kafka's message, or the handshake's
UNSUPPORTED_SASL_MECHANISM with the enabled list) is sent after
``connection.failed.authentication.delay.ms`` (default 100, Kafka's ``Selector`` delayed
close), then the connection closes. A mechanism's own error text (which could tell which part
was wrong) goes to the DEBUG log only; the client gets ``Authentication failed during
authentication due to invalid credentials with SASL mechanism <m>``, or a
``SaslAuthenticationError``'s message (PLAIN's ``Invalid username or password``).

Before authentication a frame may hold at most ``sasl.server.max.receive.size`` bytes (Kafka's
default 524288; a larger one closes the connection, Kafka's "Failing SASL authentication due to
invalid receive size"), so an unauthenticated peer cannot make the broker buffer
``socket.request.max.bytes`` (``KafkaConnection.authenticated`` lifts the bound).

Session lifetime (KIP-368): ``connections.max.reauth.ms`` (0: no limit; per listener and
mechanism ``listener.name.<l>.<mechanism lower>.connections.max.reauth.ms``) is sent back in
the SaslAuthenticate that completes; the session expires then, and the first request after
it (other than a SaslHandshake starting a re-authentication) closes the connection, as
Kafka's ``Processor`` ("Disconnecting expired channel"). A re-authentication must keep the
mechanism (``SASL mechanism 'X' requested by client is not supported for re-authentication
of mechanism 'Y'``) and the principal (``Cannot change principals during re-authentication
from User.a: User.b``).
"""

from __future__ import annotations

import asyncio
import enum
import logging
import struct
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from franz.errors import ErrorCode, InvalidConfigurationError, InvalidRequestError
from franz.network.connection import CloseConnection, KafkaConnection, Response
from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from franz.protocol.headers import (
    RequestHeader,
    encode_response_header,
    parse_request_header,
    response_header_version,
)
from franz.protocol.messages import build_response, decode_request, encode_response
from franz.security.jaas import parse_jaas_config
from franz.security.principal import USER_TYPE, KafkaPrincipal
from franz.security.sasl_errors import SaslAuthenticationError
from franz.security.sasl_plain import PlainSaslServer, plain_users
from franz.security.scram import ScramMechanism, ScramSaslServer
from franz.security.scram_credentials import ScramCredentialCache

__all__ = ["PASS", "SASL_PROTOCOLS", "SaslGate", "SaslListenerConfig", "SaslSession"]

log = logging.getLogger(__name__)

SASL_PROTOCOLS: Final = frozenset({"SASL_PLAINTEXT", "SASL_SSL"})
#: After a failed login's error response is written, the connection is closed this much
#: later (Franz's: Kafka closes at once). Over TLS, kafka-python 3.0.12 loses a response that
#: arrives together with the close_notify and reports "socket disconnected" instead of
#: SASL_AUTHENTICATION_FAILED; the connection reads nothing meanwhile.
CLOSE_GRACE_S: Final = 0.5
SUPPORTED_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_SIZE: Final = struct.Struct(">i")
_SASL_HANDSHAKE_KEY: Final = ApiKey.SASL_HANDSHAKE.to_bytes(2, "big")


class _Pass:
    """The gate's "serve this request as usual"."""


PASS: Final = _Pass()


class SaslState(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "HANDSHAKE_OR_VERSIONS"
    HANDSHAKE = "HANDSHAKE"
    AUTHENTICATE = "AUTHENTICATE"
    RAW_TOKENS = "RAW_TOKENS"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class SaslListenerConfig:
    """One SASL listener's settings."""

    listener_name: str
    mechanisms: tuple[str, ...]
    #: PLAIN's users (``user_<name>`` of the listener's PlainLoginModule).
    plain_users: dict[str, str]
    #: ``connections.max.reauth.ms`` per mechanism (0: sessions do not expire).
    max_reauth_ms: dict[str, int]

    def __repr__(self) -> str:
        return f"SaslListenerConfig({self.listener_name}, {self.mechanisms})"

    @classmethod
    def from_config(cls, listener_name: str, get: Callable[[str], Any]) -> SaslListenerConfig:
        """From broker configs (``get`` returns None for unset keys); Kafka's lookups with
        the ``listener.name.<l>.`` prefix first. ``InvalidConfigurationError`` for a
        mechanism Franz does not implement (GSSAPI, OAUTHBEARER) or PLAIN without users."""
        prefix = f"listener.name.{listener_name.lower()}."
        raw = get(prefix + "sasl.enabled.mechanisms") or get("sasl.enabled.mechanisms")
        if isinstance(raw, str):
            raw = [m.strip() for m in raw.split(",") if m.strip()]
        mechanisms = tuple(dict.fromkeys(raw or ["GSSAPI"]))
        unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
        if unsupported:
            raise InvalidConfigurationError(
                f"sasl.enabled.mechanisms of listener {listener_name}: "
                f"{', '.join(unsupported)} not supported by Franz (supported: "
                f"{', '.join(SUPPORTED_MECHANISMS)}); set sasl.enabled.mechanisms"
            )
        users: dict[str, str] = {}
        if "PLAIN" in mechanisms:
            text = get(prefix + "plain.sasl.jaas.config")
            if not text:
                raise InvalidConfigurationError(
                    f"Could not find a '{listener_name.lower()}.KafkaServer' entry for SASL "
                    f"mechanism PLAIN: set {prefix}plain.sasl.jaas.config"
                )
            try:
                users = plain_users(parse_jaas_config(str(text)).options)
            except ValueError as exc:
                raise InvalidConfigurationError(f"{prefix}plain.sasl.jaas.config: {exc}") from exc
        reauth: dict[str, int] = {}
        for mechanism in mechanisms:
            value = get(f"{prefix}{mechanism.lower()}.connections.max.reauth.ms")
            if value is None:
                value = get("connections.max.reauth.ms")
            reauth[mechanism] = int(value or 0)
        return cls(listener_name, mechanisms, users, reauth)


class SaslSession:
    """One connection's authentication state (see the module docstring)."""

    def __init__(self, config: SaslListenerConfig) -> None:
        self.config = config
        self.state = SaslState.HANDSHAKE_OR_VERSIONS
        self.mechanism: str | None = None
        self.server: PlainSaslServer | ScramSaslServer | None = None
        #: ``connectedClientSupportsReauthentication``: a SaslAuthenticate v1+ was seen.
        self.supports_reauth = False
        #: ``time.monotonic()`` when the session expires (None: never).
        self.expires_at: float | None = None
        #: The principal before a re-authentication (None: first authentication).
        self.previous: KafkaPrincipal | None = None
        #: A re-authentication's handshake asked for another mechanism (REAUTH_BAD_MECHANISM).
        self.bad_mechanism = ""


class SaslGate:
    def __init__(
        self,
        listeners: dict[str, SaslListenerConfig],
        credentials: ScramCredentialCache,
        failed_delay_ms: int,
    ) -> None:
        self.listeners = listeners
        self.credentials = credentials
        self.failed_delay_s = failed_delay_ms / 1000

    # -- entry point ----------------------------------------------------------------------

    def check(
        self, connection: KafkaConnection, frame: bytes | bytearray
    ) -> _Pass | Response | Awaitable[Response | None] | None:
        session = connection.authenticator
        if session is None:
            config = self.listeners.get(connection.listener_name)
            if config is None:
                return PASS
            session = connection.authenticator = SaslSession(config)
        assert isinstance(session, SaslSession)
        state = session.state
        if state is SaslState.FAILED:
            return None
        if state is SaslState.RAW_TOKENS:
            return self._raw_token(connection, session, bytes(frame))
        if (
            state is SaslState.COMPLETE
            and session.expires_at is None
            and frame[:2] != _SASL_HANDSHAKE_KEY
        ):
            return PASS  # the hot path: one comparison per request once authenticated
        try:
            header = parse_request_header(frame)
        except InvalidRequestError as exc:
            log.debug("closing %s: %s", connection.peer, exc)
            raise CloseConnection from exc
        if state is SaslState.COMPLETE:
            return self._authenticated(connection, session, header, frame)
        if state is SaslState.AUTHENTICATE:
            return self._authenticate(connection, session, header, frame)
        # HANDSHAKE_OR_VERSIONS / HANDSHAKE
        if header.api_key == ApiKey.API_VERSIONS and state is SaslState.HANDSHAKE_OR_VERSIONS:
            if SUPPORTED_APIS[ApiKey.API_VERSIONS].accepts(header.api_version):
                session.state = SaslState.HANDSHAKE
            return PASS
        if header.api_key == ApiKey.SASL_HANDSHAKE:
            return self._handshake(connection, session, header, frame)
        log.debug(
            "closing %s: Unexpected Kafka request of type %s during SASL handshake.",
            connection.peer,
            _api_name(header.api_key),
        )
        raise CloseConnection

    # -- states ---------------------------------------------------------------------------

    def _handshake(
        self,
        connection: KafkaConnection,
        session: SaslSession,
        header: RequestHeader,
        frame: bytes | bytearray,
    ) -> Response | Awaitable[Response | None]:
        request = self._decode(header, frame)
        mechanism = str(request.mechanism)
        enabled = list(session.config.mechanisms)
        if mechanism not in enabled:
            log.debug("SASL mechanism '%s' requested by client is not supported", mechanism)
            body = {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": enabled}
            return self._fail(connection, session, self._response(header, body))
        if session.previous is not None and mechanism != session.mechanism:
            # REAUTH_BAD_MECHANISM: the handshake is answered, the next token fails.
            session.server = None
            session.bad_mechanism = mechanism
        else:
            session.server = self._new_server(session, mechanism)
            session.mechanism = mechanism
        session.state = SaslState.AUTHENTICATE if header.api_version >= 1 else SaslState.RAW_TOKENS
        return self._response(header, {"error_code": ErrorCode.NONE, "mechanisms": enabled})

    def _new_server(
        self, session: SaslSession, mechanism: str
    ) -> PlainSaslServer | ScramSaslServer:
        if mechanism == "PLAIN":
            return PlainSaslServer(session.config.plain_users)
        scram = ScramMechanism.for_name(mechanism)
        assert scram is not None
        cache = self.credentials
        return ScramSaslServer(scram, lambda user: cache.get(scram, user))

    def _authenticate(
        self,
        connection: KafkaConnection,
        session: SaslSession,
        header: RequestHeader,
        frame: bytes | bytearray,
    ) -> Response | Awaitable[Response | None]:
        if header.api_key != ApiKey.SASL_AUTHENTICATE:
            message = (
                f"Unexpected Kafka request of type {_api_name(header.api_key)} during SASL "
                "authentication."
            )
            log.debug("%s: %s", connection.peer, message)
            if header.api_key == ApiKey.SASL_HANDSHAKE and SUPPORTED_APIS[
                ApiKey.SASL_HANDSHAKE
            ].accepts(header.api_version):
                body = {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
                return self._fail(connection, session, self._response(header, body))
            raise CloseConnection
        if not SUPPORTED_APIS[ApiKey.SASL_AUTHENTICATE].accepts(header.api_version):
            raise CloseConnection
        request = self._decode(header, frame)
        if header.api_version > 0:
            session.supports_reauth = True
        try:
            token = self._evaluate(session, bytes(request.auth_bytes))
        except SaslAuthenticationError as exc:
            return self._auth_failed(connection, session, header, str(exc))
        except Exception as exc:
            log.debug("%s: SASL %s failed: %s", connection.peer, session.mechanism, exc)
            generic = (
                f"Authentication failed during {_text(session)} due to invalid credentials "
                f"with SASL mechanism {session.mechanism}"
            )
            return self._auth_failed(connection, session, header, generic)
        lifetime_ms = 0
        if session.server is not None and session.server.complete:
            lifetime_ms = self._complete(connection, session)
        body = {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "auth_bytes": token,
            "session_lifetime": lifetime_ms,
        }
        return self._response(header, body)

    def _raw_token(
        self, connection: KafkaConnection, session: SaslSession, token: bytes
    ) -> Response | Awaitable[Response | None]:
        try:
            reply = self._evaluate(session, token)
        except Exception as exc:
            # No Kafka header, so no error response: the connection closes (after the delay).
            log.debug("%s: SASL %s failed: %s", connection.peer, session.mechanism, exc)
            return self._fail(connection, session, None)
        if session.server is not None and session.server.complete:
            self._complete(connection, session)
        return [_SIZE.pack(len(reply)) + reply]

    def _evaluate(self, session: SaslSession, token: bytes) -> bytes:
        server = session.server
        if server is None:
            raise SaslAuthenticationError(
                f"SASL mechanism '{session.bad_mechanism}' requested by client "
                f"is not supported for re-authentication of mechanism '{session.mechanism}'"
            )
        reply = server.evaluate(token)
        if server.complete and session.previous is not None:
            principal = KafkaPrincipal(USER_TYPE, server.authorization_id or "")
            if principal != session.previous:
                raise SaslAuthenticationError(
                    "Cannot change principals during re-authentication from "
                    f"{session.previous.principal_type}.{session.previous.name}: "
                    f"{principal.principal_type}.{principal.name}"
                )
        return reply

    def _complete(self, connection: KafkaConnection, session: SaslSession) -> int:
        server = session.server
        assert server is not None and session.mechanism is not None
        connection.principal = KafkaPrincipal(USER_TYPE, server.authorization_id or "")
        connection.authenticated()
        lifetime_ms = max(0, session.config.max_reauth_ms.get(session.mechanism, 0))
        session.expires_at = time.monotonic() + lifetime_ms / 1000 if lifetime_ms else None
        session.state = SaslState.COMPLETE
        session.server = None
        log.debug(
            "%s authenticated as %s (%s)", connection.peer, connection.principal, session.mechanism
        )
        return lifetime_ms

    def _authenticated(
        self,
        connection: KafkaConnection,
        session: SaslSession,
        header: RequestHeader,
        frame: bytes | bytearray,
    ) -> _Pass | Response | Awaitable[Response | None]:
        if header.api_key == ApiKey.SASL_HANDSHAKE and session.supports_reauth:
            # KafkaChannel.maybeBeginServerReauthentication.
            session.previous = connection.principal
            return self._handshake(connection, session, header, frame)
        if session.expires_at is not None and time.monotonic() >= session.expires_at:
            log.debug(
                "Disconnecting expired channel: %s (%s)", connection.peer, _api_name(header.api_key)
            )
            raise CloseConnection
        return PASS

    # -- failures -------------------------------------------------------------------------

    def _auth_failed(
        self, connection: KafkaConnection, session: SaslSession, header: RequestHeader, message: str
    ) -> Awaitable[Response | None]:
        body = {
            "error_code": ErrorCode.SASL_AUTHENTICATION_FAILED,
            "error_message": message,
            "auth_bytes": b"",
            "session_lifetime": 0,
        }
        log.info("Failed authentication with %s (%s)", connection.peer.rsplit(":", 1)[0], message)
        return self._fail(connection, session, self._response(header, body))

    def _fail(
        self, connection: KafkaConnection, session: SaslSession, response: Response | None
    ) -> Awaitable[Response | None]:
        session.state = SaslState.FAILED
        session.server = None
        delay = self.failed_delay_s

        async def delayed() -> Response | None:
            # Queued first, so stop_reading waits for this response (then closes).
            connection.stop_reading()
            if delay > 0:
                await asyncio.sleep(delay)
            if response is None:
                connection.close()
            else:
                connection.close_grace_s = CLOSE_GRACE_S
            return response

        return delayed()

    # -- codec ----------------------------------------------------------------------------

    @staticmethod
    def _decode(header: RequestHeader, frame: bytes | bytearray) -> Any:
        try:
            return decode_request(header.api_key, header.api_version, frame, header.size)
        except InvalidRequestError as exc:
            raise CloseConnection from exc

    @staticmethod
    def _response(header: RequestHeader, body: dict[str, Any]) -> Response:
        encoded = encode_response(build_response(header.api_key, header.api_version, body))
        head = encode_response_header(
            header.correlation_id, response_header_version(header.api_key, header.api_version)
        )
        return [_SIZE.pack(len(head) + len(encoded)) + head + encoded]


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)


def _text(session: SaslSession) -> str:
    return "re-authentication" if session.previous is not None else "authentication"
