"""``listeners``, ``advertised.listeners``, ``listener.security.protocol.map`` and the
inter-broker listener, checked with Kafka 3.9's ``KafkaConfig`` messages (each message here
was read from a Kafka 3.9.2 broker started with the same properties, ``kafka.Kafka``)."""

from __future__ import annotations

import pytest

from franz.config.broker import BrokerConfig
from franz.errors import InvalidConfigurationError
from franz.network.listeners import Listener, ListenerConfig, parse_listener


def listener_config(**props: str) -> ListenerConfig:
    config = BrokerConfig({k.replace("_", "."): v for k, v in props.items()})
    return ListenerConfig.from_config(config.get, config.is_set)


def test_default_is_one_plaintext_listener() -> None:
    lc = listener_config()
    assert lc.listeners == (Listener("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"),)
    assert lc.advertised == lc.listeners
    assert (lc.inter_broker_listener, lc.inter_broker_protocol) == ("PLAINTEXT", "PLAINTEXT")


def test_several_listeners_with_the_default_protocol_map() -> None:
    lc = listener_config(listeners="PLAINTEXT://:9092,SSL://127.0.0.1:9093,SASL_SSL://[::1]:9094")
    assert [(x.name, x.host, x.port, x.security_protocol) for x in lc.listeners] == [
        ("PLAINTEXT", "", 9092, "PLAINTEXT"),
        ("SSL", "127.0.0.1", 9093, "SSL"),
        ("SASL_SSL", "::1", 9094, "SASL_SSL"),
    ]
    assert lc.listeners[2].uri() == "SASL_SSL://[::1]:9094"


def test_custom_names_map_to_protocols_and_are_upper_cased() -> None:
    lc = listener_config(
        listeners="internal://127.0.0.1:9092,EXTERNAL://127.0.0.1:9093",
        listener_security_protocol_map="INTERNAL:SSL,external:sasl_plaintext",
        inter_broker_listener_name="internal",
    )
    assert [(x.name, x.security_protocol) for x in lc.listeners] == [
        ("INTERNAL", "SSL"),
        ("EXTERNAL", "SASL_PLAINTEXT"),
    ]
    assert (lc.inter_broker_listener, lc.inter_broker_protocol) == ("INTERNAL", "SSL")


def test_security_inter_broker_protocol_names_the_listener() -> None:
    lc = listener_config(
        listeners="PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
        security_inter_broker_protocol="SSL",
    )
    assert (lc.inter_broker_listener, lc.inter_broker_protocol) == ("SSL", "SSL")


def test_advertised_listeners_replace_the_bound_ones() -> None:
    lc = listener_config(
        listeners="PLAINTEXT://0.0.0.0:9092,SSL://0.0.0.0:9093",
        advertised_listeners="PLAINTEXT://broker1:9092,SSL://broker1:9093",
    )
    assert [x.uri() for x in lc.advertised] == ["PLAINTEXT://broker1:9092", "SSL://broker1:9093"]
    assert lc.advertised_for("SSL") == Listener("SSL", "broker1", 9093, "SSL")


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {
                "listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
                "inter.broker.listener.name": "SSL",
                "security.inter.broker.protocol": "SSL",
            },
            "Only one of inter.broker.listener.name and security.inter.broker.protocol "
            "should be set.",
        ),
        (
            {"inter.broker.listener.name": "NOPE"},
            "Listener with name NOPE defined in inter.broker.listener.name not found in "
            "listener.security.protocol.map.",
        ),
        (
            {"listeners": "SSL://127.0.0.1:9093"},
            "requirement failed: inter.broker.listener.name must be a listener name defined "
            "in advertised.listeners. The valid options based on currently configured "
            "listeners are SSL",
        ),
        (
            {"listeners": "CLIENT://127.0.0.1:9093"},
            "Error creating broker listeners from 'CLIENT://127.0.0.1:9093': No security "
            "protocol defined for listener CLIENT",
        ),
        (
            {"listeners": "PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093"},
            "requirement failed: Each listener must have a different name, listeners: "
            "PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093",
        ),
        (
            {"listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.2:9092"},
            "requirement failed: If you have two listeners on the same port then one needs to "
            "be IPv4 and the other IPv6, listeners: PLAINTEXT://127.0.0.1:9092,"
            "SSL://127.0.0.2:9092, port: 9092",
        ),
        (
            {
                "listeners": "PLAINTEXT://127.0.0.1:9092",
                "advertised.listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093",
            },
            "requirement failed: advertised.listeners listener names must be equal to or a "
            "subset of the ones defined in listeners. Found PLAINTEXT,SSL. The valid options "
            "based on the current configuration are PLAINTEXT",
        ),
        (
            {"listeners": "PLAINTEXT://0.0.0.0:9092"},
            "requirement failed: advertised.listeners cannot use the nonroutable meta-address "
            "0.0.0.0. Use a routable IP address.",
        ),
        (
            {"advertised.listeners": "PLAINTEXT://0.0.0.0:9092"},
            "requirement failed: advertised.listeners cannot use the nonroutable meta-address "
            "0.0.0.0. Use a routable IP address.",
        ),
        (
            {"listeners": "PLAINTEXT:/127.0.0.1:9092"},
            "Error creating broker listeners from 'PLAINTEXT:/127.0.0.1:9092': Unable to parse "
            "PLAINTEXT:/127.0.0.1:9092 to a broker endpoint",
        ),
        (
            {"listener.security.protocol.map": "PLAINTEXT:TLS"},
            "Invalid security protocol `TLS` defined in listener.security.protocol.map",
        ),
    ],
)
def test_bad_listener_configs_are_refused_with_kafkas_messages(
    props: dict[str, str], message: str
) -> None:
    config = BrokerConfig(props)
    with pytest.raises(InvalidConfigurationError) as info:
        ListenerConfig.from_config(config.get, config.is_set)
    assert str(info.value).startswith(message)


def test_three_listeners_on_one_port_are_refused() -> None:
    config = BrokerConfig(
        {"listeners": "PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.2:9092,SASL_SSL://[::1]:9092"}
    )
    with pytest.raises(InvalidConfigurationError) as info:
        ListenerConfig.from_config(config.get, config.is_set)
    assert str(info.value) == (
        "Each listener must have a different port unless exactly one listener has an IPv4 "
        "address and the other IPv6 address, listeners: PLAINTEXT://127.0.0.1:9092,"
        "SSL://127.0.0.2:9092,SASL_SSL://[::1]:9092, port: 9092"
    )


def test_ephemeral_ports_may_repeat() -> None:
    lc = listener_config(listeners="PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0")
    assert [x.port for x in lc.listeners] == [0, 0]


def test_ipv4_and_ipv6_listeners_may_share_a_port() -> None:
    lc = listener_config(listeners="PLAINTEXT://127.0.0.1:9092,SSL://[::1]:9092")
    assert [x.port for x in lc.listeners] == [9092, 9092]


def test_parse_listener_without_a_name_is_plaintext() -> None:
    assert parse_listener("127.0.0.1:9092") == Listener("PLAINTEXT", "127.0.0.1", 9092)
