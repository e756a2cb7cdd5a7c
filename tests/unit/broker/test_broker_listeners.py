"""The broker's socket servers per listener (``franz.broker.listeners``): names, protocols,
TLS contexts, the shared connection quotas and the inter-broker client context."""

from __future__ import annotations

import asyncio
import ssl

import pytest

from franz.broker.listeners import BrokerListeners
from franz.config.broker import BrokerConfig
from franz.network.listeners import Listener
from tests.support.tls import Pki, make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


class _NoHandler:
    def handle(self, connection: object, frame: bytes | bytearray) -> None:
        return None


def listeners(props: dict[str, str]) -> BrokerListeners:
    return BrokerListeners(BrokerConfig(props), _NoHandler(), -1)


def test_one_server_per_listener_with_its_protocol_and_tls(pki: Pki) -> None:
    bl = listeners(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0,"
            "SASL_PLAINTEXT://127.0.0.1:0",
            **pki.broker_ssl_props(),
        }
    )
    servers = bl.servers
    assert list(servers) == ["PLAINTEXT", "SSL", "SASL_SSL", "SASL_PLAINTEXT"]
    assert [(s.config.listener_name, s.config.security_protocol) for s in servers.values()] == [
        ("PLAINTEXT", "PLAINTEXT"),
        ("SSL", "SSL"),
        ("SASL_SSL", "SASL_SSL"),
        ("SASL_PLAINTEXT", "SASL_PLAINTEXT"),
    ]
    assert servers["PLAINTEXT"].ssl_context is None
    assert servers["SASL_PLAINTEXT"].ssl_context is None
    assert isinstance(servers["SSL"].ssl_context, ssl.SSLContext)
    assert isinstance(servers["SASL_SSL"].ssl_context, ssl.SSLContext)
    # max.connections is broker-wide: one ConnectionQuotas for every listener.
    assert len({id(s.quotas) for s in servers.values()}) == 1
    assert bl.inter_broker_listener == "PLAINTEXT"
    assert bl.inter_broker_ssl_context is None


def test_an_ssl_inter_broker_listener_gets_a_client_context(pki: Pki) -> None:
    bl = listeners(
        {
            "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SSL",
            "inter.broker.listener.name": "INTERNAL",
            **pki.broker_ssl_props("INTERNAL"),
        }
    )
    context = bl.inter_broker_ssl_context
    assert context is not None and context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED


def test_advertised_endpoints_take_the_bound_ports_and_a_routable_host() -> None:
    bl = listeners(
        {
            "listeners": "PLAINTEXT://:0,OTHER://127.0.0.1:0",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
        }
    )

    async def run() -> list[Listener]:
        await bl.start()
        try:
            return bl.advertised()
        finally:
            await bl.shutdown()

    advertised = asyncio.run(run())
    ports = [bl.servers[name].bound_port for name in ("PLAINTEXT", "OTHER")]
    assert all(port > 0 for port in ports) and ports[0] != ports[1]
    assert advertised == [
        Listener("PLAINTEXT", "localhost", ports[0], "PLAINTEXT"),
        Listener("OTHER", "127.0.0.1", ports[1], "PLAINTEXT"),
    ]
    assert bl.uris() == f"PLAINTEXT://:{ports[0]},OTHER://127.0.0.1:{ports[1]}"


def test_advertised_listeners_override_the_bound_ones(pki: Pki) -> None:
    bl = listeners(
        {
            "listeners": "PLAINTEXT://:0,SSL://127.0.0.1:0",
            "advertised.listeners": "PLAINTEXT://broker1:9092,SSL://broker1:9093",
            **pki.broker_ssl_props(),
        }
    )
    assert bl.advertised() == [
        Listener("PLAINTEXT", "broker1", 9092, "PLAINTEXT"),
        Listener("SSL", "broker1", 9093, "SSL"),
    ]
    unadvertised = listeners({"listeners": "PLAINTEXT://:0"})
    assert unadvertised.advertised() == [Listener("PLAINTEXT", "localhost", 0, "PLAINTEXT")]
