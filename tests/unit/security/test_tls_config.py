"""TLS contexts from Kafka's ``ssl.*`` keys (``franz.security.tls``): PEM key stores from a
file or inline (KIP-651), listener-prefixed keys, client auth, protocol bounds, and the
configuration errors (JKS/PKCS12, a key store missing or half given)."""

from __future__ import annotations

import re
import ssl

import pytest

from franz.config.broker import BrokerConfig
from franz.errors import InvalidConfigurationError
from franz.security.tls import TlsSettings, client_context, openssl_cipher_name, server_context
from tests.support.tls import Pki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def settings(props: dict[str, str], listener: str | None = "SSL") -> TlsSettings:
    return TlsSettings(BrokerConfig(props).get, listener)


def test_listener_prefixed_keys_win_over_plain_ones(pki: Pki) -> None:
    s = settings({"ssl.client.auth": "none", "listener.name.ssl.ssl.client.auth": "required"})
    assert s.client_auth == "required"
    assert settings({"ssl.client.auth": "requested"}).client_auth == "requested"
    assert settings({}).get("ssl.enabled.protocols") == "TLSv1.2,TLSv1.3"


def test_server_context_from_a_pem_file(pki: Pki) -> None:
    context = server_context(settings(pki.broker_ssl_props(**{"ssl.client.auth": "required"})))
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.minimum_version == ssl.TLSVersion.TLSv1_2
    assert context.maximum_version == ssl.TLSVersion.TLSv1_3


def test_server_context_from_inline_pem(pki: Pki) -> None:
    props = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": (pki / "broker.crt").read_text(),
        "ssl.keystore.key": (pki / "broker.key").read_text(),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": (pki / "ca.pem").read_text(),
        "ssl.client.auth": "requested",
    }
    assert server_context(settings(props)).verify_mode == ssl.CERT_OPTIONAL


def test_protocols_are_bounded_by_ssl_protocol_and_enabled_protocols(pki: Pki) -> None:
    props = pki.broker_ssl_props(**{"ssl.protocol": "TLSv1.2"})
    context = server_context(settings(props))
    assert context.maximum_version == ssl.TLSVersion.TLSv1_2
    props = pki.broker_ssl_props(**{"ssl.enabled.protocols": "TLSv1.3"})
    assert server_context(settings(props)).minimum_version == ssl.TLSVersion.TLSv1_3


def test_client_context_checks_host_names_unless_turned_off(pki: Pki) -> None:
    assert client_context(settings(pki.broker_ssl_props())).check_hostname
    props = pki.broker_ssl_props(**{"ssl.endpoint.identification.algorithm": ""})
    assert not client_context(settings(props)).check_hostname


def test_iana_cipher_names_become_openssl_names(pki: Pki) -> None:
    assert (
        openssl_cipher_name("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384")
        == "ECDHE-RSA-AES256-GCM-SHA384"
    )
    assert openssl_cipher_name("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256") == (
        "ECDHE-ECDSA-CHACHA20-POLY1305"
    )
    props = pki.broker_ssl_props(**{"ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"})
    names = {c["name"] for c in server_context(settings(props)).get_ciphers()}
    assert "ECDHE-ECDSA-AES128-GCM-SHA256" in names
    assert "ECDHE-ECDSA-AES256-GCM-SHA384" not in names


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"ssl.keystore.type": "PEM"},
         "ssl.keystore.location (or ssl.keystore.certificate.chain and ssl.keystore.key) is "
         "required on an SSL listener"),
        ({"ssl.keystore.location": "/x.jks"}, "Franz reads PEM key stores only"),
        ({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": "/x.p12"},
         "Franz reads PEM key stores only"),
        ({"ssl.keystore.key": "k"},
         "SSL private key can be specified only for PEM, but key store type is JKS."),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.key": "k"},
         "ssl.keystore.certificate.chain and ssl.keystore.key must be set together"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/nonexistent.pem"},
         "Failed to load SSL keystore /nonexistent.pem of type PEM"),
        ({"ssl.client.auth": "maybe"}, "Invalid value maybe for configuration ssl.client.auth"),
        ({"ssl.enabled.protocols": "SSLv3"}, "ssl.enabled.protocols=SSLv3"),
        ({"ssl.principal.mapping.rules": "RULE:x"}, "Invalid rule"),
    ],
)  # fmt: skip
def test_bad_tls_configs_are_refused(pki: Pki, props: dict[str, str], message: str) -> None:
    if not any(key.startswith("ssl.keystore") for key in props):
        props = {**pki.broker_ssl_props(), **props}
    with pytest.raises(InvalidConfigurationError, match=re.escape(message)):
        server_context(settings(props, None))
