"""TLS and SASL for ``franz.admin.wire``'s blocking connections, from a tool's
``--command-config``.

The tools that speak APIs librdkafka lacks (DescribeAcls' top-level error for ``franz acls
--list``, Describe/AlterClientQuotas for ``franz configs``) send them over
``franz.admin.wire``; this module lets that client reach SSL, SASL_PLAINTEXT and SASL_SSL
listeners with the same ``--command-config`` the librdkafka-based commands read.

Keys read (librdkafka's names, which the other commands pass to librdkafka as they are, and
Kafka's Java names where a PEM file does the same)::

    security.protocol         PLAINTEXT | SSL | SASL_PLAINTEXT | SASL_SSL
    sasl.mechanism(s)         PLAIN | SCRAM-SHA-256 | SCRAM-SHA-512 (default GSSAPI: refused)
    sasl.username / sasl.password, or sasl.jaas.config's username="..." password="..."
    ssl.ca.location           (or ssl.truststore.location with ssl.truststore.type=PEM)
    ssl.certificate.location / ssl.key.location / ssl.key.password   (mutual TLS)
    ssl.endpoint.identification.algorithm   https (default) checks the host name; none not

The exchange (Kafka's ``SaslClientAuthenticator``): ApiVersions (sent by the connection
first, allowed before authentication), SaslHandshake v1 naming the mechanism, then the
mechanism's tokens in SaslAuthenticate (v0-2); PLAIN is one token
``authzid NUL user NUL password``, SCRAM (RFC 5802) a client-first and a client-final
message, the server's signature checked. A refusal is a ``ToolError`` carrying the broker's
``error_message`` (Kafka's ``SaslAuthenticationException`` text), never the password.
"""

from __future__ import annotations

import base64
import re
import secrets
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from franz.admin.options import ToolError
from franz.security.scram import ScramMechanism, client_final_message

__all__ = ["WireSecurity"]

SASL_HANDSHAKE: Final = 17
SASL_AUTHENTICATE: Final = 36
_PROTOCOLS: Final = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_JAAS_OPTION: Final = re.compile(r'(\w+)\s*=\s*"([^"]*)"')

#: ``request(api_key, data, max_version)`` of the connection being authenticated.
Requester = Callable[[int, Mapping[str, Any], int], Any]


@dataclass(frozen=True)
class WireSecurity:
    """How to secure one connection: ``protocol``, a TLS context (SSL, SASL_SSL) and the
    SASL mechanism and credentials (SASL_*). The default is PLAINTEXT."""

    protocol: str = "PLAINTEXT"
    tls: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = ""

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> WireSecurity:
        protocol = str(config.get("security.protocol", "PLAINTEXT")).upper()
        if protocol not in _PROTOCOLS:
            raise ToolError(f"security.protocol={protocol}: not one of {', '.join(_PROTOCOLS)}")
        tls = _tls_context(config) if protocol.endswith("SSL") else None
        if not protocol.startswith("SASL_"):
            return cls(protocol, tls)
        mechanism = str(config.get("sasl.mechanism", config.get("sasl.mechanisms", "GSSAPI")))
        mechanism = mechanism.upper()
        if mechanism != "PLAIN" and ScramMechanism.for_name(mechanism) is None:
            raise ToolError(
                f"sasl.mechanism={mechanism}: this tool authenticates with PLAIN, "
                "SCRAM-SHA-256 or SCRAM-SHA-512 only"
            )
        jaas = dict(_JAAS_OPTION.findall(str(config.get("sasl.jaas.config", ""))))
        username = str(config.get("sasl.username", jaas.get("username", "")))
        password = str(config.get("sasl.password", jaas.get("password", "")))
        return cls(protocol, tls, mechanism, username, password)

    def wrap(self, sock: socket.socket, host: str) -> socket.socket:
        """``sock`` under TLS (SSL, SASL_SSL; the handshake done), else as it is."""
        if self.tls is None:
            return sock
        server_hostname = host if self.tls.check_hostname else None
        return self.tls.wrap_socket(sock, server_hostname=server_hostname)

    def authenticate(self, request: Requester, address: str) -> None:
        """The SASL exchange over a connection whose ApiVersions is done (SASL_* only)."""
        if self.mechanism is None:
            return
        handshake = request(SASL_HANDSHAKE, {"mechanism": self.mechanism}, 1)
        if int(handshake.error_code) != 0:
            raise ToolError(
                f"{address} refused SASL mechanism {self.mechanism} (error "
                f"{int(handshake.error_code)}); it offers {', '.join(handshake.mechanisms)}"
            )
        scram = ScramMechanism.for_name(self.mechanism)
        if scram is None:
            token = f"\0{self.username}\0{self.password}".encode()
            self._token(request, address, token)
            return
        bare = f"n={_saslname(self.username)},r={secrets.token_urlsafe(24)}"
        server_first = self._token(request, address, f"n,,{bare}".encode()).decode()
        final, signature = client_final_message(scram, self.password, bare, server_first)
        server_final = self._token(request, address, final.encode()).decode()
        if server_final != f"v={base64.b64encode(signature).decode()}":
            raise ToolError(f"{address}: the SCRAM server signature does not match")

    def _token(self, request: Requester, address: str, token: bytes) -> bytes:
        response = request(SASL_AUTHENTICATE, {"auth_bytes": token}, 2)
        if int(response.error_code) != 0:
            raise ToolError(f"{address}: {response.error_message or 'SASL authentication failed'}")
        return bytes(response.auth_bytes)


def _saslname(username: str) -> str:
    """RFC 5802's ``saslname``: ``,`` and ``=`` escaped as ``=2C`` and ``=3D``."""
    return username.replace("=", "=3D").replace(",", "=2C")


def _tls_context(config: Mapping[str, Any]) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    ca = config.get("ssl.ca.location") or config.get("ssl.truststore.location")
    if ca:
        context.load_verify_locations(cafile=str(ca))
    identification = str(config.get("ssl.endpoint.identification.algorithm", "https"))
    context.check_hostname = identification.lower() == "https"
    certificate = config.get("ssl.certificate.location")
    if certificate:
        key = config.get("ssl.key.location")
        password = config.get("ssl.key.password")
        context.load_cert_chain(
            str(certificate), str(key) if key else None, str(password) if password else None
        )
    return context
