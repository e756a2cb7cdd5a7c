"""``/cluster/id``, ``/controller``, ``/controller_epoch``, ``/brokers/ids``, ``/brokers/seqid``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from franz.metadata.znodes._json import (
    ZNodeDecodeError,
    as_object,
    get_int,
    get_str,
    jackson_bytes,
    java_hash_order,
    ordered,
    parse,
    scala_immutable_order,
    scala_mutable_order,
)


# --------------------------------------------------------------------------- cluster, controller
class ClusterIdZNode:
    """``/cluster/id``: ``{"version":"1","id":"<cluster id>"}`` (the version is a string)."""

    path: Final = "/cluster/id"

    @staticmethod
    def encode(cluster_id: str) -> bytes:
        return jackson_bytes({"version": "1", "id": cluster_id})

    @staticmethod
    def decode(data: bytes | None) -> str:
        path = ClusterIdZNode.path
        return get_str(path, as_object(path, parse(path, data)), "id")


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    broker_id: int
    timestamp_ms: int
    kraft_controller_epoch: int | None = None


class ControllerZNode:
    """``/controller`` (ephemeral, owned by the active controller's session)::

        {"version":2,"brokerid":0,"timestamp":"1700000000000","kraftControllerEpoch":-1}

    ``timestamp`` is milliseconds as a string; ``kraftControllerEpoch`` is -1 outside a
    ZooKeeper-to-KRaft migration (older writers omit it)."""

    path: Final = "/controller"

    @staticmethod
    def encode(broker_id: int, timestamp_ms: int, kraft_controller_epoch: int = -1) -> bytes:
        return jackson_bytes(
            {
                "version": 2,
                "brokerid": broker_id,
                "timestamp": str(timestamp_ms),
                "kraftControllerEpoch": kraft_controller_epoch,
            }
        )

    @staticmethod
    def decode(data: bytes | None) -> ControllerRegistration:
        path = ControllerZNode.path
        obj = as_object(path, parse(path, data))
        try:
            timestamp = int(obj.get("timestamp", "0"))
        except (TypeError, ValueError) as exc:
            raise ZNodeDecodeError(path, f"bad timestamp {obj.get('timestamp')!r}") from exc
        kraft = (
            get_int(path, obj, "kraftControllerEpoch") if "kraftControllerEpoch" in obj else None
        )
        return ControllerRegistration(get_int(path, obj, "brokerid"), timestamp, kraft)


class ControllerEpochZNode:
    """``/controller_epoch``: the epoch as a bare decimal string (``b"1"``), not JSON. Bumped
    by the new controller with a conditional set on the znode's version."""

    path: Final = "/controller_epoch"

    @staticmethod
    def encode(epoch: int) -> bytes:
        return str(epoch).encode("ascii")

    @staticmethod
    def decode(data: bytes | None) -> int:
        path = ControllerEpochZNode.path
        try:
            if data is None:
                raise ValueError("no data")
            return int(data.decode("ascii"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise ZNodeDecodeError(path, "not a decimal epoch", data) from exc


# --------------------------------------------------------------------------- brokers
class BrokerIdsZNode:
    path: Final = "/brokers/ids"


class BrokerSequenceIdZNode:
    """``/brokers/seqid``: its znode *version* hands out generated broker ids (Kafka's
    ``reserved.broker.max.id`` + version + 1); no data."""

    path: Final = "/brokers/seqid"


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A broker registration. ``endpoints`` are ``LISTENER://host:port`` strings (the
    advertised listeners, in order); ``security_protocols`` maps listener name to protocol."""

    broker_id: int
    endpoints: tuple[str, ...]
    security_protocols: Mapping[str, str]
    rack: str | None = None
    timestamp_ms: int = 0
    jmx_port: int = -1
    version: int = 5
    #: Supported features: name -> {"min_version": n, "max_version": m}; Kafka 3.9's ZooKeeper
    #: brokers register none.
    features: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def endpoint(self, listener: str) -> tuple[str, int] | None:
        """(host, port) of ``listener``, or None."""
        for ep in self.endpoints:
            name, _, rest = ep.partition("://")
            if name == listener:
                host, _, port = rest.rpartition(":")
                return host.strip("[]"), int(port)
        return None


#: Kafka's ``listener.security.protocol.map`` default.
_DEFAULT_PROTOCOL_MAP = (
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"
)


def broker_info_from_properties(props: Mapping[str, str], timestamp_ms: int) -> BrokerInfo:
    """The registration a broker writes, from Kafka's keys: ``broker.id``,
    ``advertised.listeners`` (default ``listeners``), ``listener.security.protocol.map``,
    ``broker.rack``; ``inter.broker.listener.name`` (default PLAINTEXT) must name one of
    the advertised listeners, as Kafka requires."""
    raw = props.get("advertised.listeners") or props.get("listeners") or "PLAINTEXT://:9092"
    endpoints = tuple(e.strip() for e in raw.split(",") if e.strip())
    mapping = props.get("listener.security.protocol.map", _DEFAULT_PROTOCOL_MAP)
    protocols = dict(pair.strip().split(":", 1) for pair in mapping.split(",") if pair.strip())
    names = [e.partition("://")[0] for e in endpoints]
    missing = [n for n in names if n not in protocols]
    if missing:
        raise ValueError(f"listener.security.protocol.map has no protocol for {missing}")
    inter = props.get("inter.broker.listener.name", "PLAINTEXT")
    if inter not in names:
        raise ValueError(
            f"inter.broker.listener.name must be a listener name defined in "
            f"advertised.listeners. The valid options based on currently configured listeners "
            f"are {','.join(names)}"
        )
    return BrokerInfo(
        broker_id=int(props.get("broker.id", "0")),
        endpoints=endpoints,
        security_protocols={n: protocols[n] for n in names},
        rack=props.get("broker.rack"),
        timestamp_ms=timestamp_ms,
    )


class BrokerIdZNode:
    """``/brokers/ids/<id>`` (ephemeral, owned by the broker's session), version 5::

        {"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
         "endpoints":["PLAINTEXT://localhost:9092"],"rack":"r1","jmx_port":-1,"port":9092,
         "host":"localhost","version":5,"timestamp":"1700000000000"}

    ``host``/``port`` are the first PLAINTEXT endpoint's (``null``/-1 when there is none),
    for pre-0.10 clients; ``rack`` only when ``broker.rack`` is set."""

    @staticmethod
    def path(broker_id: int) -> str:
        return f"{BrokerIdsZNode.path}/{broker_id}"

    @staticmethod
    def encode(info: BrokerInfo) -> bytes:
        host: str | None = None
        port = -1
        for ep in info.endpoints:
            name = ep.partition("://")[0]
            if info.security_protocols.get(name, name) == "PLAINTEXT":
                found = info.endpoint(name)
                assert found is not None
                host, port = found
                break
        body: dict[str, Any] = {
            "version": info.version,
            "host": host,
            "port": port,
            "endpoints": list(info.endpoints),
            "jmx_port": info.jmx_port,
            "timestamp": str(info.timestamp_ms),
        }
        if info.rack is not None and info.version >= 3:
            body["rack"] = info.rack
        if info.version >= 4:
            # advertisedEndpoints.map(...).toMap: a Scala immutable Map.
            names = [ep.partition("://")[0] for ep in info.endpoints]
            protocols = {n: info.security_protocols.get(n, n) for n in names}
            body["listener_security_protocol_map"] = ordered(
                protocols, scala_immutable_order(list(protocols))
            )
        if info.version >= 5:
            body["features"] = ordered(
                {
                    name: ordered(dict(r), java_hash_order(list(r)))
                    for name, r in info.features.items()
                },
                java_hash_order(list(info.features)),
            )
        return jackson_bytes(ordered(body, scala_mutable_order(list(body), initial=6)))

    @staticmethod
    def decode(broker_id: int, data: bytes | None) -> BrokerInfo:
        path = BrokerIdZNode.path(broker_id)
        obj = as_object(path, parse(path, data))
        version = get_int(path, obj, "version")
        if version < 1:
            raise ZNodeDecodeError(path, f"unsupported broker registration version {version}")
        if version == 1:
            endpoints: tuple[str, ...] = (
                f"PLAINTEXT://{get_str(path, obj, 'host')}:{get_int(path, obj, 'port')}",
            )
            protocols: dict[str, str] = {"PLAINTEXT": "PLAINTEXT"}
        else:
            raw = obj.get("endpoints")
            if not isinstance(raw, list) or not all(isinstance(e, str) for e in raw):
                raise ZNodeDecodeError(path, f"'endpoints' is not a list of strings: {raw!r}")
            endpoints = tuple(raw)
            lsp = obj.get("listener_security_protocol_map")
            if lsp is None:
                protocols = {e.partition("://")[0]: e.partition("://")[0] for e in endpoints}
            else:
                protocols = {
                    str(k): str(v) for k, v in as_object(path, lsp, "the protocol map").items()
                }
        rack = obj.get("rack")
        timestamp = obj.get("timestamp", "0")
        features = as_object(path, obj.get("features", {}), "'features'")
        try:
            return BrokerInfo(
                broker_id=broker_id,
                endpoints=endpoints,
                security_protocols=protocols,
                rack=rack if isinstance(rack, str) else None,
                timestamp_ms=int(timestamp),
                jmx_port=get_int(path, obj, "jmx_port"),
                version=version,
                features={
                    str(k): {str(a): int(b) for a, b in v.items()} for k, v in features.items()
                },
            )
        except (TypeError, ValueError, AttributeError) as exc:
            raise ZNodeDecodeError(path, str(exc), data) from exc
