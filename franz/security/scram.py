"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), sans-IO: Kafka's
``ScramFormatter``, ``ScramCredential``/``ScramCredentialUtils``, ``ScramMessages`` and the
server side of the exchange, ``ScramSaslServer``.

Credentials (what the broker keeps; never the password)::

    SaltedPassword = Hi(password, salt, i)          PBKDF2 with HMAC-H
    StoredKey      = H(HMAC(SaltedPassword, "Client Key"))
    ServerKey      = HMAC(SaltedPassword, "Server Key")

stored as Kafka's ``ScramCredentialUtils.credentialToString``:
``salt=<b64>,stored_key=<b64>,server_key=<b64>,iterations=<i>`` (the value of the
``SCRAM-SHA-256``/``SCRAM-SHA-512`` key of ``/config/users/<user>``).

The exchange (``ScramSaslServer``): client-first ``n,[a=authzid],n=user,r=cnonce[,ext]``
(gs2 header ``n`` only: channel binding is refused, as Kafka's pattern does; the only
extension Kafka knows, ``tokenauth``, names delegation tokens, which Franz does not serve,
so a client asking for it fails like an unknown user), server-first
``r=cnonce+snonce,s=salt,i=iterations``, client-final ``c=biws,r=nonce,p=proof``, server-final
``v=signature``. The nonce must end with the server-first nonce (Kafka 3.9's check, which
tolerates old librdkafka's doubled client nonce) and the proof must give the stored key;
every failure is a ``ScramError`` whose text never reaches the client (the authenticator
answers with Kafka's generic message), except a differing authorization id, which Kafka
reports as is.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from franz.security.sasl_errors import SaslAuthenticationError

__all__ = [
    "MAX_ITERATIONS",
    "ScramCredential",
    "ScramError",
    "ScramMechanism",
    "ScramSaslServer",
    "client_final_message",
    "client_key",
    "credential_from_password",
    "salted_password",
    "server_key",
    "stored_key",
]

#: ``ZkAdminManager.alterUserScramCredentials``' ``maxIterations``.
MAX_ITERATIONS: Final = 16384


class ScramMechanism(enum.Enum):
    """Kafka's ``ScramMechanism``: (mechanism name, hash, wire type of the admin APIs, min
    iterations 4096 for both)."""

    SCRAM_SHA_256 = ("SCRAM-SHA-256", "sha256", 1)
    SCRAM_SHA_512 = ("SCRAM-SHA-512", "sha512", 2)

    @property
    def mechanism_name(self) -> str:
        return self.value[0]

    @property
    def hash_name(self) -> str:
        return self.value[1]

    @property
    def type_id(self) -> int:
        return self.value[2]

    @property
    def min_iterations(self) -> int:
        return 4096

    @classmethod
    def for_name(cls, name: str) -> ScramMechanism | None:
        for m in cls:
            if m.mechanism_name == name:
                return m
        return None

    @classmethod
    def for_type(cls, type_id: int) -> ScramMechanism | None:
        for m in cls:
            if m.type_id == type_id:
                return m
        return None


class ScramError(Exception):
    """A failed SCRAM exchange (Kafka's ``SaslException``): the message is for the log."""


def _hmac(mechanism: ScramMechanism, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, mechanism.hash_name).digest()


def salted_password(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> bytes:
    """``Hi(normalize(password), salt, i)`` (Kafka does no SASLprep beyond UTF-8)."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def client_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return _hmac(mechanism, salted, b"Client Key")


def stored_key(mechanism: ScramMechanism, key: bytes) -> bytes:
    return hashlib.new(mechanism.hash_name, key).digest()


def server_key(mechanism: ScramMechanism, salted: bytes) -> bytes:
    return _hmac(mechanism, salted, b"Server Key")


@dataclass(frozen=True, slots=True)
class ScramCredential:
    """Kafka's ``ScramCredential``: what the broker needs to check a proof."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:  # keys stay out of logs
        return f"ScramCredential(iterations={self.iterations})"

    @classmethod
    def from_salted_password(
        cls, mechanism: ScramMechanism, salt: bytes, salted: bytes, iterations: int
    ) -> ScramCredential:
        """``ScramFormatter.generateCredential(salt, saltedPassword, iterations)``."""
        return cls(
            salt,
            stored_key(mechanism, client_key(mechanism, salted)),
            server_key(mechanism, salted),
            iterations,
        )

    def to_config_value(self) -> str:
        """``ScramCredentialUtils.credentialToString``."""
        b64 = base64.b64encode
        return (
            f"salt={b64(self.salt).decode()},stored_key={b64(self.stored_key).decode()},"
            f"server_key={b64(self.server_key).decode()},iterations={self.iterations}"
        )

    @classmethod
    def from_config_value(cls, text: str) -> ScramCredential:
        """``ScramCredentialUtils.credentialFromString``; ``ValueError`` when malformed."""
        fields = dict(part.split("=", 1) for part in text.split(",") if "=" in part)
        try:
            return cls(
                base64.b64decode(fields["salt"], validate=True),
                base64.b64decode(fields["stored_key"], validate=True),
                base64.b64decode(fields["server_key"], validate=True),
                int(fields["iterations"]),
            )
        except (KeyError, ValueError) as exc:
            raise ValueError("Invalid credential") from exc


def credential_from_password(
    mechanism: ScramMechanism, password: str, iterations: int, salt: bytes | None = None
) -> ScramCredential:
    """A new credential with a random salt (``ScramFormatter.generateCredential``)."""
    salt = secrets.token_bytes(32) if salt is None else salt
    salted = salted_password(mechanism, password, salt, iterations)
    return ScramCredential.from_salted_password(mechanism, salt, salted, iterations)


# -- messages (``ScramMessages``' patterns) ------------------------------------------------

_VALUE = r"[\x01-\x7F&&[^=,]]+"
_SASLNAME = r"(?:[\x01-\x2B\x2D-\x3C\x3E-\x7F]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2B\x2D-\x7E]+"
_B64 = r"(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?"
_EXT = r"(?:,[a-zA-Z]+=[\x01-\x2B\x2D-\x7F]+)*"
_CLIENT_FIRST = re.compile(
    rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?:m=[\x01-\x2B\x2D-\x7F]+,)?"
    rf"n=(?P<saslname>{_SASLNAME}),r=(?P<nonce>{_PRINTABLE})(?P<extensions>{_EXT})"
)
_CLIENT_FINAL = re.compile(
    rf"c=(?P<channel>{_B64}),r=(?P<nonce>{_PRINTABLE}){_EXT},p=(?P<proof>{_B64})"
)


def sasl_name_to_username(sasl_name: str) -> str:
    """``ScramFormatter.username``: ``=2C`` is a comma, ``=3D`` an equals sign."""
    return sasl_name.replace("=2C", ",").replace("=3D", "=")


def client_final_message(
    mechanism: ScramMechanism,
    password: str,
    client_first_bare: str,
    server_first: str,
    gs2_header: str = "n,,",
) -> tuple[str, bytes]:
    """A client's final message and the server signature it should get back (what a client
    computes; used by the inter-broker client, the bench and the tests)."""
    fields = dict(p.split("=", 1) for p in server_first.split(",") if "=" in p)
    salt = base64.b64decode(fields["s"])
    iterations = int(fields["i"])
    salted = salted_password(mechanism, password, salt, iterations)
    ckey = client_key(mechanism, salted)
    without_proof = f"c={base64.b64encode(gs2_header.encode()).decode()},r={fields['r']}"
    auth_message = f"{client_first_bare},{server_first},{without_proof}".encode()
    signature = _hmac(mechanism, stored_key(mechanism, ckey), auth_message)
    proof = bytes(a ^ b for a, b in zip(ckey, signature, strict=True))
    server_signature = _hmac(mechanism, server_key(mechanism, salted), auth_message)
    return f"{without_proof},p={base64.b64encode(proof).decode()}", server_signature


class ScramSaslServer:
    """One SCRAM exchange, server side (Kafka's ``ScramSaslServer``): two ``evaluate`` calls,
    then ``complete`` and ``authorization_id``.

    ``lookup(username)`` returns the user's credential for this mechanism, or None.
    ``nonce`` makes the server nonce (tests fix it; RFC 7677's vector).
    """

    def __init__(
        self,
        mechanism: ScramMechanism,
        lookup: Callable[[str], ScramCredential | None],
        nonce: str | None = None,
    ) -> None:
        self.mechanism = mechanism
        self._lookup = lookup
        self._server_nonce = nonce
        self._state = "RECEIVE_CLIENT_FIRST_MESSAGE"
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._gs2_header = ""
        self._credential: ScramCredential | None = None
        self.authorization_id: str | None = None

    @property
    def complete(self) -> bool:
        return self._state == "COMPLETE"

    def evaluate(self, token: bytes) -> bytes:
        try:
            if self._state == "RECEIVE_CLIENT_FIRST_MESSAGE":
                return self._client_first(token)
            if self._state == "RECEIVE_CLIENT_FINAL_MESSAGE":
                return self._client_final(token)
            raise ScramError(f"Unexpected challenge in Sasl server state {self._state}")
        except Exception:
            self._state = "FAILED"
            self._credential = None
            raise

    def _client_first(self, token: bytes) -> bytes:
        try:
            message = token.decode()
        except UnicodeDecodeError as exc:
            raise ScramError("Invalid SCRAM client first message format") from exc
        match = _CLIENT_FIRST.fullmatch(message)
        if match is None:
            raise ScramError(f"Invalid SCRAM client first message format: {message!r}")
        extensions = match.group("extensions")
        ext_keys = {kv.split("=", 1)[0] for kv in extensions.split(",") if kv}
        if "tokenauth" in ext_keys:
            # Delegation tokens (KIP-48) are not served: no token can match.
            raise ScramError("Token Authentication failed: delegation tokens are not supported")
        username = sasl_name_to_username(match.group("saslname"))
        credential = self._lookup(username)
        if credential is None:
            raise ScramError("Authentication failed: Invalid user credentials")
        authzid = match.group("authzid") or ""
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        if credential.iterations < self.mechanism.min_iterations:
            raise ScramError(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{self.mechanism.min_iterations} for {self.mechanism.mechanism_name}"
            )
        server_nonce = self._server_nonce or secrets.token_urlsafe(24)
        self._nonce = match.group("nonce") + server_nonce
        self._gs2_header = f"n,{authzid and 'a=' + match.group('authzid')},"
        # The bare message as the client sent it (extensions included): RFC 5802's
        # AuthMessage is over the exact bytes.
        self._client_first_bare = message[len(self._gs2_header) :]
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        self._credential = credential
        self.authorization_id = username
        self._state = "RECEIVE_CLIENT_FINAL_MESSAGE"
        return self._server_first.encode()

    def _client_final(self, token: bytes) -> bytes:
        try:
            message = token.decode()
        except UnicodeDecodeError as exc:
            raise ScramError("Invalid SCRAM client final message format") from exc
        match = _CLIENT_FINAL.fullmatch(message)
        if match is None:
            raise ScramError("Invalid SCRAM client final message format")
        # Kafka 3.8.1+ (CVE-2024-56128): the nonce must end with the server-first nonce;
        # "ends with", not "equals", because librdkafka before 2.6.1 (KIP-none, its PR #4895)
        # prepends the client nonce once more (kcat 1.7.1 with librdkafka 2.0.2 does).
        if not match.group("nonce").endswith(self._nonce):
            raise ScramError("Invalid client nonce in the final client message.")
        # RFC 5802 5.1: c= is the gs2 header (no channel binding data: "n" was required).
        if base64.b64decode(match.group("channel")) != self._gs2_header.encode():
            raise ScramError("Invalid channel binding in the final client message.")
        credential = self._credential
        assert credential is not None
        without_proof = message[: message.rindex(",p=")]
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        mechanism = self.mechanism
        signature = _hmac(mechanism, credential.stored_key, auth_message)
        proof = base64.b64decode(match.group("proof"))
        if len(proof) != len(signature):
            raise ScramError("Invalid client credentials")
        computed = stored_key(
            mechanism, bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        )
        if not hmac.compare_digest(computed, credential.stored_key):
            raise ScramError("Invalid client credentials")
        server_signature = _hmac(mechanism, credential.server_key, auth_message)
        self._credential = None
        self._state = "COMPLETE"
        return b"v=" + base64.b64encode(server_signature)
