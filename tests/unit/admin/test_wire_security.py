"""``franz.admin.wire_security``: the ``--command-config`` keys it reads, and its SASL
exchange against Franz's own SCRAM server object (``ScramSaslServer``, sans-IO) standing in
for the broker's SaslHandshake/SaslAuthenticate handlers."""

from __future__ import annotations

from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any

import pytest

from franz.admin.options import ToolError
from franz.admin.wire_security import SASL_AUTHENTICATE, SASL_HANDSHAKE, WireSecurity
from franz.security.scram import ScramMechanism, ScramSaslServer, credential_from_password


def test_plaintext_by_default() -> None:
    security = WireSecurity.from_config({})
    assert (security.protocol, security.tls, security.mechanism) == ("PLAINTEXT", None, None)


def test_sasl_credentials_from_librdkafka_keys_or_the_jaas_config() -> None:
    librdkafka = WireSecurity.from_config(
        {
            "security.protocol": "sasl_plaintext",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "alice",
            "sasl.password": "secret",
        }
    )
    assert (librdkafka.protocol, librdkafka.mechanism) == ("SASL_PLAINTEXT", "SCRAM-SHA-512")
    assert (librdkafka.username, librdkafka.password) == ("alice", "secret")
    java = WireSecurity.from_config(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            'required username="admin" password="admin-secret";',
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    assert (java.username, java.password, java.mechanism) == ("admin", "admin-secret", "PLAIN")
    assert java.tls is not None and not java.tls.check_hostname


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"security.protocol": "SASL_PLAINTEXT"}, "sasl.mechanism=GSSAPI"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "OAUTHBEARER"}, "OAUTHBEARER"),
        ({"security.protocol": "TLS"}, "security.protocol=TLS"),
    ],
)
def test_unsupported_settings_are_tool_errors(config: dict[str, str], message: str) -> None:
    with pytest.raises(ToolError, match=message):
        WireSecurity.from_config(config)


class _Broker:
    """SaslHandshake and SaslAuthenticate answered by a ``ScramSaslServer``."""

    def __init__(self, password: str) -> None:
        credential = credential_from_password(ScramMechanism.SCRAM_SHA_256, password, 4096)
        self.server = ScramSaslServer(
            ScramMechanism.SCRAM_SHA_256, lambda user: credential if user == "alice" else None
        )

    def request(self, api_key: int, data: Mapping[str, Any], _version: int) -> Any:
        if api_key == SASL_HANDSHAKE:
            ok = data["mechanism"] == "SCRAM-SHA-256"
            return SimpleNamespace(error_code=0 if ok else 33, mechanisms=["SCRAM-SHA-256"])
        assert api_key == SASL_AUTHENTICATE
        try:
            token = self.server.evaluate(bytes(data["auth_bytes"]))
        except Exception:
            return SimpleNamespace(
                error_code=58,
                error_message="Authentication failed during authentication due to invalid "
                "credentials with SASL mechanism SCRAM-SHA-256",
                auth_bytes=b"",
            )
        return SimpleNamespace(error_code=0, error_message=None, auth_bytes=token)


def _scram(password: str) -> WireSecurity:
    return WireSecurity.from_config(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": password,
        }
    )


def test_scram_exchange_completes_and_checks_the_server_signature() -> None:
    broker = _Broker("alice-secret")
    _scram("alice-secret").authenticate(broker.request, "b:1")
    assert broker.server.complete and broker.server.authorization_id == "alice"


def test_a_wrong_password_is_the_brokers_message_without_the_password() -> None:
    with pytest.raises(ToolError) as refused:
        _scram("wrong-one").authenticate(_Broker("alice-secret").request, "b:1")
    assert "Authentication failed" in str(refused.value)
    assert "wrong-one" not in str(refused.value)


def test_an_unoffered_mechanism_names_what_the_broker_offers() -> None:
    security = WireSecurity.from_config(
        {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "a"}
    )
    with pytest.raises(ToolError, match=r"refused SASL mechanism PLAIN .* SCRAM-SHA-256"):
        security.authenticate(_Broker("x").request, "b:1")
