"""A broker's listeners, as Kafka's ``KafkaConfig`` reads and checks them (sans-IO).

Keys (Kafka 3.9, ZooKeeper mode):

* ``listeners``: ``NAME://host:port`` URIs, comma separated (an empty host binds every
  interface; port 0 an ephemeral port). Names are upper-cased (``ListenerName.normalised``).
* ``listener.security.protocol.map``: ``NAME:PROTOCOL`` pairs; default
  ``PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL``.
* ``advertised.listeners``: what clients and other brokers are told (default: ``listeners``);
  its names must be among ``listeners``'; ``0.0.0.0`` may not be advertised (nor bound
  without ``advertised.listeners``, as Kafka 3.9); an empty host binds every interface and
  is advertised as ``localhost``.
* ``inter.broker.listener.name`` or ``security.inter.broker.protocol`` (default PLAINTEXT:
  the listener named after the protocol), never both; it must be an advertised listener.

``ListenerConfig.from_config`` raises ``InvalidConfigurationError`` with Kafka's messages
(``KafkaConfig.validateValues``, ``CoreUtils.listenerListToEndPoints``,
``EndPoint.createEndPoint``); Kafka's ``require`` failures carry its "requirement failed: "
prefix.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from franz.errors import InvalidConfigurationError

__all__ = [
    "DEFAULT_PROTOCOL_MAP",
    "SECURITY_PROTOCOLS",
    "Listener",
    "ListenerConfig",
    "parse_listener",
    "parse_protocol_map",
]

#: ``SecurityProtocol`` (Kafka's enum; ids are the wire ids of UpdateMetadata v1+).
SECURITY_PROTOCOLS: Final = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}

#: Kafka's ``listener.security.protocol.map`` default.
DEFAULT_PROTOCOL_MAP: Final = (
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
)

_URI = re.compile(r"^(?:(?P<name>[A-Za-z0-9_]+)://)?(?P<host>\[[^\]]*\]|[^:]*):(?P<port>\d+)$")


@dataclass(frozen=True, slots=True)
class Listener:
    """One endpoint (Kafka's ``EndPoint``): listener name, host, port, security protocol."""

    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"

    def uri(self, port: int | None = None) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port if port is None else port}"

    @property
    def is_ssl(self) -> bool:
        """TLS on the wire (SSL and SASL_SSL)."""
        return self.security_protocol in ("SSL", "SASL_SSL")


def parse_protocol_map(text: str) -> dict[str, str]:
    """``listener.security.protocol.map`` -> {NAME: PROTOCOL} (names upper-cased)."""
    mapping: dict[str, str] = {}
    for pair in text.split(","):
        pair = pair.strip()
        if not pair:
            continue
        name, sep, protocol = pair.partition(":")
        if not sep or not name.strip():
            # Kafka's message here is Java's substring failure; this one names the entry.
            raise InvalidConfigurationError(
                "Error parsing configuration property 'listener.security.protocol.map': "
                f"'{pair}' is not NAME:PROTOCOL"
            )
        protocol = protocol.strip()
        if protocol.upper() not in SECURITY_PROTOCOLS:
            raise InvalidConfigurationError(
                f"Invalid security protocol `{protocol}` defined in listener.security.protocol.map"
            )
        protocol = protocol.upper()
        mapping[name.strip().upper()] = protocol
    return mapping


def parse_listener(text: str, protocols: dict[str, str] | None = None) -> Listener:
    """``NAME://host:port`` (Kafka's ``EndPoint.createEndPoint``; no name: PLAINTEXT)."""
    match = _URI.match(text.strip())
    if not match:
        raise InvalidConfigurationError(f"Unable to parse {text} to a broker endpoint")
    name = (match.group("name") or "PLAINTEXT").upper()
    mapping = parse_protocol_map(DEFAULT_PROTOCOL_MAP) if protocols is None else protocols
    protocol = mapping.get(name)
    if protocol is None:
        raise InvalidConfigurationError(f"No security protocol defined for listener {name}")
    return Listener(name, match.group("host").strip("[]"), int(match.group("port")), protocol)


def _endpoints(key: str, values: Sequence[str], protocols: dict[str, str]) -> list[Listener]:
    text = ",".join(v.strip() for v in values)
    try:
        listeners = [parse_listener(v, protocols) for v in values if v.strip()]
    except InvalidConfigurationError as exc:
        raise InvalidConfigurationError(
            f"Error creating broker listeners from '{text}': {exc}"
        ) from exc
    names = [listener.name for listener in listeners]
    if len(set(names)) != len(names):
        raise InvalidConfigurationError(
            f"requirement failed: Each listener must have a different name, {key}: {text}"
        )
    if key == "listeners":
        by_port: dict[int, list[Listener]] = {}
        for listener in listeners:
            if listener.port != 0:
                by_port.setdefault(listener.port, []).append(listener)
        for port, same in by_port.items():
            v6 = [entry for entry in same if ":" in entry.host]
            if len(same) > 2:
                raise InvalidConfigurationError(
                    "Each listener must have a different port unless exactly one listener has "
                    f"an IPv4 address and the other IPv6 address, listeners: {text}, port: {port}"
                )
            if len(same) == 2 and len(v6) != 1:
                raise InvalidConfigurationError(
                    "requirement failed: If you have two listeners on the same port then one "
                    f"needs to be IPv4 and the other IPv6, listeners: {text}, port: {port}"
                )
    return listeners


@dataclass(frozen=True, slots=True)
class ListenerConfig:
    """The checked listener keys of one broker (module docstring)."""

    listeners: tuple[Listener, ...]
    advertised: tuple[Listener, ...]
    protocols: dict[str, str]
    inter_broker_listener: str
    inter_broker_protocol: str

    @classmethod
    def from_config(
        cls, get: Callable[[str], Any], is_set: Callable[[str], bool]
    ) -> ListenerConfig:
        """From a broker config's ``get`` and ``is_set`` (``BrokerConfig``)."""
        protocols = parse_protocol_map(
            str(get("listener.security.protocol.map") or DEFAULT_PROTOCOL_MAP)
        )
        raw_listeners = _as_list(get("listeners"))
        listeners = _endpoints("listeners", raw_listeners, protocols)
        if not listeners:
            raise InvalidConfigurationError("listeners: at least one listener is required")
        raw_advertised = _as_list(get("advertised.listeners"))
        advertised = (
            _endpoints("advertised.listeners", raw_advertised, protocols)
            if raw_advertised
            else listeners
        )
        names = [listener.name for listener in listeners]
        advertised_names = [listener.name for listener in advertised]
        if not set(advertised_names) <= set(names):
            raise InvalidConfigurationError(
                "requirement failed: advertised.listeners listener names must be equal to or "
                f"a subset of the ones defined in listeners. Found "
                f"{','.join(advertised_names)}. The valid options based on the current "
                f"configuration are {','.join(names)}"
            )
        # Also when advertised.listeners is not set (Kafka 3.9 refuses listeners on 0.0.0.0
        # then: the effective advertised listeners are the listeners).
        if any(listener.host == "0.0.0.0" for listener in advertised):
            raise InvalidConfigurationError(
                "requirement failed: advertised.listeners cannot use the nonroutable "
                "meta-address 0.0.0.0. Use a routable IP address."
            )
        inter_name = get("inter.broker.listener.name")
        if inter_name:
            if is_set("security.inter.broker.protocol"):
                raise InvalidConfigurationError(
                    "Only one of inter.broker.listener.name and "
                    "security.inter.broker.protocol should be set."
                )
            inter_name = str(inter_name).upper()
            inter_protocol = protocols.get(inter_name)
            if inter_protocol is None:
                raise InvalidConfigurationError(
                    f"Listener with name {inter_name} defined in inter.broker.listener.name "
                    "not found in listener.security.protocol.map."
                )
        else:
            inter_protocol = str(get("security.inter.broker.protocol") or "PLAINTEXT").upper()
            if inter_protocol not in SECURITY_PROTOCOLS:
                raise InvalidConfigurationError(
                    f"Invalid value {inter_protocol} for configuration "
                    "security.inter.broker.protocol: String must be one of: "
                    f"{', '.join(SECURITY_PROTOCOLS)}"
                )
            inter_name = inter_protocol
        if inter_name not in advertised_names:
            raise InvalidConfigurationError(
                "requirement failed: inter.broker.listener.name must be a listener name "
                "defined in advertised.listeners. The valid options based on currently "
                f"configured listeners are {','.join(advertised_names)}"
            )
        return cls(tuple(listeners), tuple(advertised), protocols, inter_name, inter_protocol)

    def advertised_for(self, name: str) -> Listener | None:
        for listener in self.advertised:
            if listener.name == name:
                return listener
        return None


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v for v in value.split(",") if v.strip()]
    return [str(v) for v in value if str(v).strip()]
