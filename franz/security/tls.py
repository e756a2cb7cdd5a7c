"""TLS contexts from Kafka's ``ssl.*`` keys, for SSL and SASL_SSL listeners and for the
broker as a TLS client of other brokers (the inter-broker listener).

Keys and defaults (Kafka 3.9's ``SslConfigs`` / ``BrokerSecurityConfigs``), each readable
per listener as ``listener.name.<listener, lower case>.<key>`` (that wins over the plain key,
Kafka's ``ListenerName.configPrefix``):

* ``ssl.keystore.type`` (JKS): **PEM only**. ``ssl.keystore.location`` names a PEM file with
  the private key and the certificate chain; or inline ``ssl.keystore.certificate.chain`` and
  ``ssl.keystore.key`` (KIP-651); ``ssl.key.password`` decrypts the key. JKS and PKCS12 key
  stores are refused with a configuration error (Python's ``ssl`` reads PEM only, and
  ``cryptography`` is not installed here to convert them).
* ``ssl.truststore.type`` (JKS): PEM only; ``ssl.truststore.location`` (a PEM bundle) or inline
  ``ssl.truststore.certificates``. Without a trust store, the system's CAs are trusted (Java's
  default trust store).
* ``ssl.client.auth`` (none): none, requested (a certificate is asked for, its absence is
  accepted: ``User:ANONYMOUS``), required (no certificate fails the handshake). A presented
  certificate that does not verify (untrusted, expired) fails the handshake in both.
* ``ssl.enabled.protocols`` (TLSv1.2,TLSv1.3) bound the versions; ``ssl.protocol`` (TLSv1.3)
  is the newest one (Java's ``SSLContext.getInstance``); TLS means no cap.
* ``ssl.cipher.suites`` (all): Java/IANA names (``TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384``)
  or OpenSSL names; they restrict TLS 1.2 suites only: Python 3.11 cannot restrict TLS 1.3's
  (OpenSSL's defaults stay on; a warning says so).
* ``ssl.endpoint.identification.algorithm`` (https): as a client, check the broker's host name
  against its certificate; empty turns the check off.
* ``ssl.principal.mapping.rules`` (DEFAULT): ``franz.security.tls_principal``.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import ssl
import tempfile
from collections.abc import Callable, Iterator
from typing import Any, Final

from franz.errors import InvalidConfigurationError
from franz.security.tls_principal import SslPrincipalMapper

__all__ = ["SSL_DEFAULTS", "TlsSettings", "client_context", "server_context"]

log = logging.getLogger(__name__)

#: Kafka's defaults for the keys read here.
SSL_DEFAULTS: Final[dict[str, str | None]] = {
    "ssl.protocol": "TLSv1.3",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.keystore.type": "JKS",
    "ssl.keystore.location": None,
    "ssl.keystore.password": None,
    "ssl.keystore.certificate.chain": None,
    "ssl.keystore.key": None,
    "ssl.key.password": None,
    "ssl.truststore.type": "JKS",
    "ssl.truststore.location": None,
    "ssl.truststore.password": None,
    "ssl.truststore.certificates": None,
    "ssl.client.auth": "none",
    "ssl.cipher.suites": None,
    "ssl.endpoint.identification.algorithm": "https",
    "ssl.principal.mapping.rules": "DEFAULT",
}

_VERSIONS: Final = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
_CLIENT_AUTH: Final = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


class TlsSettings:
    """The ``ssl.*`` keys of one listener: the listener-prefixed value, else the plain one,
    else Kafka's default (module docstring)."""

    def __init__(self, get: Callable[[str], Any], listener_name: str | None = None) -> None:
        self._get = get
        self.prefix = f"listener.name.{listener_name.lower()}." if listener_name else ""

    def get(self, key: str) -> str | None:
        for name in ((self.prefix + key) if self.prefix else None, key):
            if name is None:
                continue
            value = self._get(name)
            if value is not None:
                if isinstance(value, list | tuple):
                    return ",".join(str(v) for v in value)
                return str(value).strip()
        return SSL_DEFAULTS.get(key)

    def principal_mapper(self) -> SslPrincipalMapper:
        return SslPrincipalMapper(self.get("ssl.principal.mapping.rules") or "DEFAULT")

    @property
    def client_auth(self) -> str:
        value = (self.get("ssl.client.auth") or "none").lower()
        if value not in _CLIENT_AUTH:
            raise InvalidConfigurationError(
                f"Invalid value {value} for configuration {self.prefix}ssl.client.auth: "
                "String must be one of: required, requested, none"
            )
        return value


def _protocols(settings: TlsSettings, context: ssl.SSLContext) -> None:
    enabled_raw = settings.get("ssl.enabled.protocols") or ""
    enabled = [p.strip() for p in enabled_raw.split(",") if p.strip()]
    unknown = [p for p in enabled if p not in _VERSIONS]
    if unknown or not enabled:
        raise InvalidConfigurationError(
            f"ssl.enabled.protocols={enabled_raw}: expected some of {', '.join(_VERSIONS)}"
        )
    versions = sorted(_VERSIONS[p] for p in enabled)
    protocol = settings.get("ssl.protocol") or "TLSv1.3"
    maximum = versions[-1]
    if protocol in _VERSIONS:
        maximum = min(maximum, _VERSIONS[protocol])
    elif protocol not in ("TLS", "TLSv1.3"):
        raise InvalidConfigurationError(
            f"ssl.protocol={protocol}: expected TLS, {', '.join(_VERSIONS)}"
        )
    if maximum < versions[0]:
        raise InvalidConfigurationError(
            f"ssl.protocol={protocol} allows none of ssl.enabled.protocols={enabled_raw}"
        )
    context.minimum_version = versions[0]
    context.maximum_version = maximum


_IANA_KX: Final = {
    "ECDHE_RSA": "ECDHE-RSA-",
    "ECDHE_ECDSA": "ECDHE-ECDSA-",
    "DHE_RSA": "DHE-RSA-",
    "RSA": "",
}


def openssl_cipher_name(name: str) -> str:
    """A Java/IANA TLS 1.2 suite name as OpenSSL's (``TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256``
    -> ``ECDHE-RSA-AES128-GCM-SHA256``); an OpenSSL name is returned as is."""
    match = re.fullmatch(r"TLS_(\w+?)_WITH_(AES_(128|256)_GCM|CHACHA20_POLY1305)_(SHA\d+)", name)
    if match is None or match.group(1) not in _IANA_KX:
        return name
    kx = _IANA_KX[match.group(1)]
    if match.group(2).startswith("AES"):
        return f"{kx}AES{match.group(3)}-GCM-{match.group(4)}"
    return f"{kx}CHACHA20-POLY1305"


def _ciphers(settings: TlsSettings, context: ssl.SSLContext) -> None:
    raw = settings.get("ssl.cipher.suites")
    if not raw:
        return
    names = [n.strip() for n in raw.split(",") if n.strip()]
    tls13 = [n for n in names if n.startswith(("TLS_AES_", "TLS_CHACHA20_"))]
    tls12 = [openssl_cipher_name(n) for n in names if n not in tls13]
    if tls13:
        log.warning(
            "ssl.cipher.suites: TLS 1.3 suites %s cannot be restricted by Python's ssl; "
            "OpenSSL's default TLS 1.3 suites stay enabled",
            ",".join(tls13),
        )
    if tls12:
        try:
            context.set_ciphers(":".join(tls12))
        except ssl.SSLError as exc:
            raise InvalidConfigurationError(
                f"ssl.cipher.suites={raw}: no cipher suite OpenSSL knows ({exc})"
            ) from exc


@contextlib.contextmanager
def _pem_file(text: str) -> Iterator[str]:
    """Inline PEM (KIP-651) as a private temporary file for ``load_cert_chain``."""
    fd, path = tempfile.mkstemp(prefix="franz-pem-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text.replace("\\n", "\n"))
        yield path
    finally:
        os.unlink(path)


def _keystore(settings: TlsSettings, context: ssl.SSLContext, *, required: bool) -> None:
    kind = (settings.get("ssl.keystore.type") or "JKS").upper()
    location = settings.get("ssl.keystore.location")
    chain = settings.get("ssl.keystore.certificate.chain")
    key = settings.get("ssl.keystore.key")
    password = settings.get("ssl.key.password")
    if (chain or key) and kind != "PEM":
        raise InvalidConfigurationError(
            f"SSL private key can be specified only for PEM, but key store type is {kind}."
        )
    if location and kind != "PEM":
        raise InvalidConfigurationError(
            f"{settings.prefix}ssl.keystore.type={kind}: Franz reads PEM key stores only "
            "(set ssl.keystore.type=PEM with a PEM file of the key and its certificate chain)"
        )
    if location and (chain or key):
        raise InvalidConfigurationError(
            "Both ssl.keystore.location and ssl.keystore.key/ssl.keystore.certificate.chain "
            "are set: only one key store may be given"
        )
    try:
        if location:
            context.load_cert_chain(location, password=password)
        elif chain and key:
            with _pem_file(f"{key.strip()}\n{chain.strip()}\n") as path:
                context.load_cert_chain(path, password=password)
        elif chain or key:
            raise InvalidConfigurationError(
                "ssl.keystore.certificate.chain and ssl.keystore.key must be set together"
            )
        elif required:
            raise InvalidConfigurationError(
                f"{settings.prefix}ssl.keystore.location (or ssl.keystore.certificate.chain "
                "and ssl.keystore.key) is required on an SSL listener"
            )
    except (OSError, ssl.SSLError) as exc:
        raise InvalidConfigurationError(
            f"Failed to load SSL keystore {location or '(inline PEM)'} of type PEM: {exc}"
        ) from exc


def _truststore(settings: TlsSettings, context: ssl.SSLContext, purpose: ssl.Purpose) -> None:
    kind = (settings.get("ssl.truststore.type") or "JKS").upper()
    location = settings.get("ssl.truststore.location")
    certificates = settings.get("ssl.truststore.certificates")
    if (location or certificates) and kind != "PEM":
        raise InvalidConfigurationError(
            f"{settings.prefix}ssl.truststore.type={kind}: Franz reads PEM trust stores only "
            "(set ssl.truststore.type=PEM)"
        )
    try:
        if location:
            context.load_verify_locations(cafile=location)
        elif certificates:
            context.load_verify_locations(cadata=certificates.replace("\\n", "\n"))
        else:
            context.load_default_certs(purpose)
    except (OSError, ssl.SSLError) as exc:
        raise InvalidConfigurationError(
            f"Failed to load SSL truststore {location or '(inline PEM)'} of type PEM: {exc}"
        ) from exc


def server_context(settings: TlsSettings) -> ssl.SSLContext:
    """The context of an SSL or SASL_SSL listener (raises ``InvalidConfigurationError``)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _protocols(settings, context)
    _ciphers(settings, context)
    _keystore(settings, context, required=True)
    context.verify_mode = _CLIENT_AUTH[settings.client_auth]
    if context.verify_mode != ssl.CERT_NONE:
        _truststore(settings, context, ssl.Purpose.CLIENT_AUTH)
    # The principal mapping rules are checked now rather than at the first client.
    settings.principal_mapper()
    return context


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """The context of this broker as a TLS client of another broker's listener."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _protocols(settings, context)
    _ciphers(settings, context)
    _keystore(settings, context, required=False)
    _truststore(settings, context, ssl.Purpose.SERVER_AUTH)
    algorithm = (settings.get("ssl.endpoint.identification.algorithm") or "").lower()
    context.check_hostname = algorithm == "https"
    context.verify_mode = ssl.CERT_REQUIRED
    return context
