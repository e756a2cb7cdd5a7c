"""The SCRAM server (``franz.security.scram``) against RFC 7677's test vector and against a
client computed independently here (``hashlib``/``hmac`` from the RFC's formulas)."""

from __future__ import annotations

import base64
import hashlib
import hmac

import pytest

from franz.security.sasl_errors import SaslAuthenticationError
from franz.security.scram import (
    ScramCredential,
    ScramError,
    ScramMechanism,
    ScramSaslServer,
    credential_from_password,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SHA512 = ScramMechanism.SCRAM_SHA_512

# RFC 7677 section 3.
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def _server(
    creds: dict[str, ScramCredential], mechanism: ScramMechanism = SHA256, nonce: str | None = None
) -> ScramSaslServer:
    return ScramSaslServer(mechanism, creds.get, nonce=nonce)


def test_rfc7677_vector_is_answered_byte_for_byte() -> None:
    cred = credential_from_password(SHA256, "pencil", 4096, salt=RFC_SALT)
    server = _server({"user": cred}, nonce=RFC_SERVER_NONCE)
    assert server.evaluate(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert server.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete
    assert server.authorization_id == "user"


def test_credential_string_round_trips_as_kafka_writes_it() -> None:
    cred = credential_from_password(SHA256, "pencil", 4096, salt=RFC_SALT)
    text = cred.to_config_value()
    assert text.startswith("salt=W22ZaJ0SNY7soEsUEjb6gQ==,stored_key=")
    assert text.endswith(",iterations=4096")
    assert ScramCredential.from_config_value(text) == cred
    assert "pencil" not in text and "pencil" not in repr(cred)


class _Client:
    """An independent SCRAM client (RFC 5802 section 3), not using franz's helpers."""

    def __init__(
        self, name: str, user: str, password: str, nonce: str = "fyko+d2lbbFgONRv9qkxdawL"
    ) -> None:
        self.hash = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}[name]
        self.user, self.password, self.nonce = user, password, nonce
        self.first_bare = f"n={user},r={nonce}"

    def first(self) -> bytes:
        return ("n,," + self.first_bare).encode()

    def final(
        self, server_first: bytes, *, nonce: str | None = None, wrong: bool = False
    ) -> tuple[bytes, bytes]:
        fields = dict(p.split("=", 1) for p in server_first.decode().split(","))
        salted = hashlib.pbkdf2_hmac(
            self.hash, self.password.encode(), base64.b64decode(fields["s"]), int(fields["i"])
        )
        client_key = hmac.new(salted, b"Client Key", self.hash).digest()
        stored = hashlib.new(self.hash, client_key).digest()
        without = f"c=biws,r={nonce or fields['r']}"
        auth = f"{self.first_bare},{server_first.decode()},{without}".encode()
        sig = hmac.new(stored, auth, self.hash).digest()
        proof = bytes(a ^ b for a, b in zip(client_key, sig, strict=True))
        if wrong:
            proof = bytes([proof[0] ^ 1]) + proof[1:]
        server_key = hmac.new(salted, b"Server Key", self.hash).digest()
        expected = b"v=" + base64.b64encode(hmac.new(server_key, auth, self.hash).digest())
        return f"{without},p={base64.b64encode(proof).decode()}".encode(), expected


@pytest.mark.parametrize("mechanism", [SHA256, SHA512])
def test_independent_client_authenticates_and_verifies_the_server(
    mechanism: ScramMechanism,
) -> None:
    cred = credential_from_password(mechanism, "alice-secret", 8192)
    server = _server({"alice": cred}, mechanism)
    client = _Client(mechanism.mechanism_name, "alice", "alice-secret")
    server_first = server.evaluate(client.first())
    assert b",i=8192" in server_first
    final, expected = client.final(server_first)
    assert server.evaluate(final) == expected
    assert server.complete and server.authorization_id == "alice"


def test_wrong_password_fails_at_the_proof() -> None:
    server = _server({"alice": credential_from_password(SHA256, "alice-secret", 4096)})
    client = _Client("SCRAM-SHA-256", "alice", "not-the-password")
    final, _ = client.final(server.evaluate(client.first()))
    with pytest.raises(ScramError):
        server.evaluate(final)
    assert not server.complete


def test_tampered_proof_fails() -> None:
    server = _server({"alice": credential_from_password(SHA256, "alice-secret", 4096)})
    client = _Client("SCRAM-SHA-256", "alice", "alice-secret")
    final, _ = client.final(server.evaluate(client.first()), wrong=True)
    with pytest.raises(ScramError, match="Invalid client credentials"):
        server.evaluate(final)


def test_tampered_nonce_fails() -> None:
    server = _server({"alice": credential_from_password(SHA256, "alice-secret", 4096)})
    client = _Client("SCRAM-SHA-256", "alice", "alice-secret")
    server_first = server.evaluate(client.first())
    fields = dict(p.split("=", 1) for p in server_first.decode().split(","))
    final, _ = client.final(server_first, nonce=fields["r"] + "x")
    with pytest.raises(ScramError, match="Invalid client nonce"):
        server.evaluate(final)


def test_unknown_user_fails_at_the_first_message() -> None:
    server = _server({})
    with pytest.raises(ScramError, match="Invalid user credentials"):
        server.evaluate(b"n,,n=mallory,r=abc")


@pytest.mark.parametrize(
    "first",
    [b"y,,n=alice,r=abc", b"p=tls-unique,,n=alice,r=abc", b"garbage", b"\xff\xfe", b""],
)
def test_channel_binding_and_garbage_are_refused(first: bytes) -> None:
    server = _server({"alice": credential_from_password(SHA256, "s", 4096)})
    with pytest.raises(ScramError):
        server.evaluate(first)


def test_different_authorization_id_is_reported_as_is() -> None:
    server = _server({"alice": credential_from_password(SHA256, "s", 4096)})
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        server.evaluate(b"n,a=bob,n=alice,r=abc")


def test_token_auth_extension_is_refused_without_delegation_tokens() -> None:
    server = _server({"alice": credential_from_password(SHA256, "s", 4096)})
    with pytest.raises(ScramError):
        server.evaluate(b"n,,n=alice,r=abc,tokenauth=true")


def test_credential_below_minimum_iterations_is_refused() -> None:
    weak = credential_from_password(SHA256, "s", 1024)
    server = _server({"alice": weak})
    with pytest.raises(ScramError, match="less than the minimum 4096"):
        server.evaluate(b"n,,n=alice,r=abc")


def test_a_third_message_is_refused() -> None:
    cred = credential_from_password(SHA256, "pencil", 4096, salt=RFC_SALT)
    server = _server({"user": cred}, nonce=RFC_SERVER_NONCE)
    server.evaluate(RFC_CLIENT_FIRST)
    server.evaluate(RFC_CLIENT_FINAL)
    with pytest.raises(ScramError):
        server.evaluate(RFC_CLIENT_FINAL)


def test_old_librdkafka_doubled_client_nonce_is_accepted_as_kafka_3_9_does() -> None:
    """librdkafka < 2.6.1 sends r=<client nonce><server-first nonce>; Kafka 3.8.1+ checks
    that the nonce ends with the server-first nonce (CVE-2024-56128's fix)."""
    cred = credential_from_password(SHA256, "alice-secret", 4096)
    server = _server({"alice": cred})
    client = _Client("SCRAM-SHA-256", "alice", "alice-secret")
    server_first = server.evaluate(client.first())
    fields = dict(p.split("=", 1) for p in server_first.decode().split(","))
    final, expected = client.final(server_first, nonce=client.nonce + fields["r"])
    assert server.evaluate(final) == expected
