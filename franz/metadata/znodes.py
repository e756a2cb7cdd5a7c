"""Kafka 3.9's ZooKeeper znodes: one class per znode, its path(s) and its JSON (sans-IO).

Mirrors ``core/src/main/scala/kafka/zk/ZkData.scala`` (Kafka 3.9). Kafka writes every JSON
znode with Jackson (``kafka.utils.Json.encodeAsBytes``): compact, no spaces, UTF-8, non-ASCII
not escaped, control characters as ``\\u00XX`` with upper-case hex. The *field order* is the
iteration order of the Scala/Java map Kafka hands to Jackson, so it is reproduced here:

* ``Map(a, b, c, d)`` (at most 4 entries) keeps insertion order (Scala's ``Map1``..``Map4``);
* ``Map(...)`` with 5+ entries is Scala 2.13's CHAMP ``immutable.HashMap``: keys ordered by
  the low 5 bits of ``Hashing.improve(key.hashCode)``;
* ``mutable.Map(...)`` is Scala 2.13's ``mutable.HashMap``: buckets ``h & (len - 1)`` with
  ``h = hashCode ^ (hashCode >>> 16)``, each bucket sorted by ``h``;
* ``java.util.HashMap`` (feature maps) and ``Properties`` (config maps): buckets as above, each
  bucket in insertion order.

Examples, byte for byte what a Kafka 3.9 ZooKeeper-mode cluster writes::

    /brokers/ids/0        {"features":{},
                           "listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},
                           "endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,
                           "port":9092,"host":"localhost","version":5,
                           "timestamp":"1700000000000"}
    /brokers/topics/t     {"partitions":{"0":[0,1]},"topic_id":"<22 chars>",
                           "adding_replicas":{},"removing_replicas":{},"version":3}
    .../partitions/0/state {"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,
                           "isr":[0,1]}
    /controller           {"version":2,"brokerid":0,"timestamp":"1700000000000",
                           "kraftControllerEpoch":-1}
    /controller_epoch     1                       (a bare decimal, not JSON)
    /cluster/id           {"version":"1","id":"<22 chars>"}
    /config/topics/t      {"version":1,"config":{"retention.ms":"1000"}}
    /config/changes/config_change_0000000000
                          {"version":2,"entity_path":"topics/t"}
    /latest_producer_id_block
                          {"version":1,"broker":0,"block_start":"0","block_end":"999"}

(line breaks above are for reading; the znodes hold one line).

Every ``decode`` raises ``ZNodeDecodeError`` (carrying the znode path) on bytes that are not
the expected JSON shape, where Kafka would throw a ``KafkaException``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from franz.errors import FranzError
from franz.protocol.kafka_uuid import uuid_from_str, uuid_to_str

__all__ = [
    "PERSISTENT_PATHS",
    "BrokerIdZNode",
    "BrokerIdsZNode",
    "BrokerInfo",
    "BrokerSequenceIdZNode",
    "ClusterIdZNode",
    "ConfigEntityChangeNotificationSequenceZNode",
    "ConfigEntityChangeNotificationZNode",
    "ConfigEntityZNode",
    "ControllerEpochZNode",
    "ControllerRegistration",
    "ControllerZNode",
    "DeleteTopicsTopicZNode",
    "DeleteTopicsZNode",
    "FeatureZNode",
    "IsrChangeNotificationSequenceZNode",
    "IsrChangeNotificationZNode",
    "PartitionState",
    "PreferredReplicaElectionZNode",
    "ProducerIdBlock",
    "ProducerIdBlockZNode",
    "ReassignPartitionsZNode",
    "TopicAssignment",
    "TopicPartitionStateZNode",
    "TopicZNode",
    "TopicsZNode",
    "ZNodeDecodeError",
    "broker_info_from_properties",
    "jackson_bytes",
]


class ZNodeDecodeError(FranzError):
    """A znode's bytes are not the JSON Kafka writes there; ``path`` names the znode."""

    def __init__(self, path: str, reason: str, data: bytes | None = None) -> None:
        shown = "" if data is None else f": {data[:200]!r}"
        super().__init__(f"malformed znode {path}: {reason}{shown}")
        self.path = path


# --------------------------------------------------------------------------- Jackson + order
_ESCAPE: Final = re.compile(r"\\u00([0-9a-f]{2})")


def jackson_bytes(value: Any) -> bytes:
    """Serialize like Kafka's ``Json.encodeAsBytes`` (Jackson's defaults); dicts keep their
    order, so callers order keys with the helpers below."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return _ESCAPE.sub(lambda m: "\\u00" + m.group(1).upper(), text).encode("utf-8")


def _i32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def _java_hash(s: str) -> int:
    """``String.hashCode`` over UTF-16 code units."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = _i32(31 * h + ((data[i] << 8) | data[i + 1]))
    return h


def _spread(h: int) -> int:
    return _i32(h ^ ((h & 0xFFFFFFFF) >> 16))


def _scala_improve(h: int) -> int:
    h = _i32(h + ~_i32(h << 9))
    h = _i32(h ^ ((h & 0xFFFFFFFF) >> 14))
    h = _i32(h + _i32(h << 4))
    return _i32(h ^ ((h & 0xFFFFFFFF) >> 10))


def _table_size_for(capacity: int) -> int:
    return 1 << max(capacity - 1, 4).bit_length()


def scala_immutable_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of Scala 2.13 ``Map(k -> v, ...)`` (CHAMP with 5+ entries)."""
    if len(keys) <= 4:
        return list(keys)
    masks = {k: _scala_improve(_java_hash(k)) & 0x1F for k in keys}
    if len(set(masks.values())) != len(keys):  # pragma: no cover - no Kafka key set collides
        raise AssertionError(f"CHAMP sub-node ordering not modelled for {keys}")
    return sorted(keys, key=masks.__getitem__)


def scala_mutable_order(keys: Sequence[str], initial: int | None = None) -> list[str]:
    """Iteration order of a Scala 2.13 ``mutable.HashMap`` built from ``initial`` entries
    (``mutable.Map(a, b)``, sized from the known count) and grown by ``+=`` of the rest;
    ``initial=None`` means ``mutable.Map()`` (16 slots)."""
    length = _table_size_for(16 if not initial else int((initial + 1) / 0.75))
    threshold = int(length * 0.75)
    for size in range(len(keys)):
        if size + 1 >= threshold:
            length *= 2
            threshold = int(length * 0.75)
    hashes = {k: _spread(_java_hash(k)) for k in keys}
    return sorted(keys, key=lambda k: (hashes[k] & (length - 1), hashes[k]))


def java_hash_order(keys: Sequence[str]) -> list[str]:
    """Iteration order of a ``java.util.HashMap`` (or ``Properties``) with these keys put in
    this order (16 slots, doubling when the size exceeds 3/4; bins keep insertion order)."""
    length = 16
    while len(keys) > length * 3 // 4:
        length *= 2
    return sorted(keys, key=lambda k: _spread(_java_hash(k)) & (length - 1))


def _ordered(mapping: Mapping[str, Any], order: list[str]) -> dict[str, Any]:
    return {k: mapping[k] for k in order}


# --------------------------------------------------------------------------- decoding helpers
def _parse(path: str, data: bytes | None) -> Any:
    if data is None:
        raise ZNodeDecodeError(path, "no data")
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ZNodeDecodeError(path, f"not JSON ({exc})", data) from exc


def _obj(path: str, value: Any, what: str = "the znode") -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ZNodeDecodeError(path, f"{what} is not a JSON object")
    return value


def _int(path: str, obj: Mapping[str, Any], key: str) -> int:
    value = obj.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZNodeDecodeError(path, f"{key!r} is not an integer: {value!r}")
    return value


def _str(path: str, obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise ZNodeDecodeError(path, f"{key!r} is not a string: {value!r}")
    return value


def _int_list(path: str, value: Any, what: str) -> list[int]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise ZNodeDecodeError(path, f"{what} is not a list of integers: {value!r}")
    return list(value)


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
        return _str(path, _obj(path, _parse(path, data)), "id")


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
        obj = _obj(path, _parse(path, data))
        try:
            timestamp = int(obj.get("timestamp", "0"))
        except (TypeError, ValueError) as exc:
            raise ZNodeDecodeError(path, f"bad timestamp {obj.get('timestamp')!r}") from exc
        kraft = _int(path, obj, "kraftControllerEpoch") if "kraftControllerEpoch" in obj else None
        return ControllerRegistration(_int(path, obj, "brokerid"), timestamp, kraft)


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
            body["listener_security_protocol_map"] = _ordered(
                protocols, scala_immutable_order(list(protocols))
            )
        if info.version >= 5:
            body["features"] = _ordered(
                {
                    name: _ordered(dict(r), java_hash_order(list(r)))
                    for name, r in info.features.items()
                },
                java_hash_order(list(info.features)),
            )
        return jackson_bytes(_ordered(body, scala_mutable_order(list(body), initial=6)))

    @staticmethod
    def decode(broker_id: int, data: bytes | None) -> BrokerInfo:
        path = BrokerIdZNode.path(broker_id)
        obj = _obj(path, _parse(path, data))
        version = _int(path, obj, "version")
        if version < 1:
            raise ZNodeDecodeError(path, f"unsupported broker registration version {version}")
        if version == 1:
            endpoints: tuple[str, ...] = (
                f"PLAINTEXT://{_str(path, obj, 'host')}:{_int(path, obj, 'port')}",
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
                protocols = {str(k): str(v) for k, v in _obj(path, lsp, "the protocol map").items()}
        rack = obj.get("rack")
        timestamp = obj.get("timestamp", "0")
        features = _obj(path, obj.get("features", {}), "'features'")
        try:
            return BrokerInfo(
                broker_id=broker_id,
                endpoints=endpoints,
                security_protocols=protocols,
                rack=rack if isinstance(rack, str) else None,
                timestamp_ms=int(timestamp),
                jmx_port=_int(path, obj, "jmx_port"),
                version=version,
                features={
                    str(k): {str(a): int(b) for a, b in v.items()} for k, v in features.items()
                },
            )
        except (TypeError, ValueError, AttributeError) as exc:
            raise ZNodeDecodeError(path, str(exc), data) from exc


# --------------------------------------------------------------------------- topics
class TopicsZNode:
    path: Final = "/brokers/topics"


@dataclass(frozen=True, slots=True)
class TopicAssignment:
    """``/brokers/topics/<t>``'s content: the topic id and the replicas of each partition
    (``adding``/``removing``: an ongoing reassignment's replicas, KIP-455)."""

    topic_id: uuid.UUID | None
    partitions: Mapping[int, Sequence[int]]
    adding_replicas: Mapping[int, Sequence[int]] = field(default_factory=dict)
    removing_replicas: Mapping[int, Sequence[int]] = field(default_factory=dict)


class TopicZNode:
    """``/brokers/topics/<topic>`` (persistent), version 3::

        {"partitions":{"0":[0,1],"1":[1,0]},"topic_id":"<22 chars>","adding_replicas":{},
         "removing_replicas":{},"version":3}

    Kafka 3.9 reads a missing ``topic_id`` (a topic created before 2.8) as "no id yet" and the
    controller then writes one."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{TopicsZNode.path}/{topic}"

    @staticmethod
    def partitions_path(topic: str) -> str:
        return f"{TopicsZNode.path}/{topic}/partitions"

    @staticmethod
    def encode(assignment: TopicAssignment) -> bytes:
        def replica_map(m: Mapping[int, Sequence[int]], all_: bool) -> dict[str, list[int]]:
            # Kafka lists every partition, but adding/removing replicas only when non-empty.
            plain = {str(p): list(r) for p, r in m.items() if all_ or r}
            return _ordered(plain, scala_mutable_order(list(plain)))

        body: dict[str, Any] = {
            "version": 3,
            "partitions": replica_map(assignment.partitions, True),
            "adding_replicas": replica_map(assignment.adding_replicas, False),
            "removing_replicas": replica_map(assignment.removing_replicas, False),
        }
        if assignment.topic_id is not None:
            body["topic_id"] = uuid_to_str(assignment.topic_id)
        return jackson_bytes(_ordered(body, scala_mutable_order(list(body), initial=4)))

    @staticmethod
    def decode(topic: str, data: bytes | None) -> TopicAssignment:
        path = TopicZNode.path(topic)
        obj = _obj(path, _parse(path, data))

        def replica_map(key: str) -> dict[int, list[int]]:
            raw = _obj(path, obj.get(key, {}), repr(key))
            try:
                return {int(p): _int_list(path, r, f"{key}[{p}]") for p, r in raw.items()}
            except ValueError as exc:
                raise ZNodeDecodeError(path, f"bad partition number in {key!r}") from exc

        raw_id = obj.get("topic_id")
        try:
            topic_id = None if raw_id is None else uuid_from_str(str(raw_id))
        except ValueError as exc:
            raise ZNodeDecodeError(path, f"bad topic_id {raw_id!r}") from exc
        return TopicAssignment(
            topic_id=topic_id,
            partitions=replica_map("partitions"),
            adding_replicas=replica_map("adding_replicas"),
            removing_replicas=replica_map("removing_replicas"),
        )


@dataclass(frozen=True, slots=True)
class PartitionState:
    """Kafka's ``LeaderIsrAndControllerEpoch`` plus the znode's version (``zk_version``),
    against which the next conditional write is made."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int
    #: Kafka's ``LeaderRecoveryState``: 0 RECOVERED, 1 RECOVERING (KIP-704).
    leader_recovery_state: int = 0
    zk_version: int = -1


class TopicPartitionStateZNode:
    """``/brokers/topics/<t>/partitions/<p>/state``::

        {"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0,1]}

    with ``"leader_recovery_state":1`` (after ``version``) only when not RECOVERED."""

    @staticmethod
    def path(topic: str, partition: int) -> str:
        return f"{TopicZNode.partitions_path(topic)}/{partition}/state"

    @staticmethod
    def encode(state: PartitionState) -> bytes:
        body: dict[str, Any] = {
            "version": 1,
            "leader": state.leader,
            "leader_epoch": state.leader_epoch,
            "controller_epoch": state.controller_epoch,
            "isr": list(state.isr),
        }
        if state.leader_recovery_state != 0:
            body["leader_recovery_state"] = state.leader_recovery_state
        return jackson_bytes(_ordered(body, scala_immutable_order(list(body))))

    @staticmethod
    def decode(
        topic: str, partition: int, data: bytes | None, zk_version: int = -1
    ) -> PartitionState:
        path = TopicPartitionStateZNode.path(topic, partition)
        obj = _obj(path, _parse(path, data))
        recovery = _int(path, obj, "leader_recovery_state") if "leader_recovery_state" in obj else 0
        return PartitionState(
            leader=_int(path, obj, "leader"),
            leader_epoch=_int(path, obj, "leader_epoch"),
            isr=tuple(_int_list(path, obj.get("isr"), "'isr'")),
            controller_epoch=_int(path, obj, "controller_epoch"),
            leader_recovery_state=recovery,
            zk_version=zk_version,
        )


# --------------------------------------------------------------------------- configs
class ConfigEntityZNode:
    """``/config/<type>/<name>`` (``type`` ``topics`` or ``brokers``; a broker id or
    ``<default>``)::

        {"version":1,"config":{"retention.ms":"1000"}}

    ``config`` is a ``java.util.Properties`` for Jackson: all values strings, hash order."""

    @staticmethod
    def path(entity_type: str, entity_name: str) -> str:
        return f"/config/{entity_type}/{entity_name}"

    @staticmethod
    def encode(config: Mapping[str, str]) -> bytes:
        plain = {str(k): str(v) for k, v in config.items()}
        return jackson_bytes(
            {"version": 1, "config": _ordered(plain, java_hash_order(list(plain)))}
        )

    @staticmethod
    def decode(path: str, data: bytes | None) -> dict[str, str]:
        if data is None:
            return {}
        obj = _obj(path, _parse(path, data))
        config = _obj(path, obj.get("config", {}), "'config'")
        out: dict[str, str] = {}
        for key, value in config.items():
            if not isinstance(value, str):
                raise ZNodeDecodeError(path, f"config {key!r} is not a string: {value!r}")
            out[key] = value
        return out


class ConfigEntityChangeNotificationZNode:
    path: Final = "/config/changes"


class ConfigEntityChangeNotificationSequenceZNode:
    """``/config/changes/config_change_<10-digit sequence>`` (persistent sequential)::

    {"version":2,"entity_path":"topics/t"}"""

    prefix: Final = "config_change_"
    create_path: Final = f"{ConfigEntityChangeNotificationZNode.path}/{prefix}"

    @staticmethod
    def encode(entity_path: str) -> bytes:
        return jackson_bytes({"version": 2, "entity_path": entity_path})

    @staticmethod
    def decode(path: str, data: bytes | None) -> str:
        return _str(path, _obj(path, _parse(path, data)), "entity_path")


# --------------------------------------------------------------------------- notifications
def _encode_partitions(version: int, partitions: Iterable[tuple[str, int]]) -> bytes:
    return jackson_bytes(
        {"version": version, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    )


def _decode_partitions(path: str, data: bytes | None) -> list[tuple[str, int]]:
    obj = _obj(path, _parse(path, data))
    items = obj.get("partitions")
    if not isinstance(items, list):
        raise ZNodeDecodeError(path, "'partitions' is not a list")
    out: list[tuple[str, int]] = []
    for item in items:
        entry = _obj(path, item, "a partition")
        out.append((_str(path, entry, "topic"), _int(path, entry, "partition")))
    return out


class IsrChangeNotificationZNode:
    path: Final = "/isr_change_notification"


class IsrChangeNotificationSequenceZNode:
    """``/isr_change_notification/isr_change_<seq>``::

    {"version":1,"partitions":[{"topic":"t","partition":0}]}"""

    prefix: Final = "isr_change_"
    create_path: Final = f"{IsrChangeNotificationZNode.path}/{prefix}"

    @staticmethod
    def encode(partitions: Iterable[tuple[str, int]]) -> bytes:
        return _encode_partitions(1, partitions)

    @staticmethod
    def decode(path: str, data: bytes | None) -> list[tuple[str, int]]:
        return _decode_partitions(path, data)


class PreferredReplicaElectionZNode:
    """``/admin/preferred_replica_election``::

    {"version":1,"partitions":[{"topic":"t","partition":0}]}"""

    path: Final = "/admin/preferred_replica_election"

    @staticmethod
    def encode(partitions: Iterable[tuple[str, int]]) -> bytes:
        return _encode_partitions(1, partitions)

    @staticmethod
    def decode(data: bytes | None) -> list[tuple[str, int]]:
        return _decode_partitions(PreferredReplicaElectionZNode.path, data)


class ReassignPartitionsZNode:
    """``/admin/reassign_partitions`` (legacy, Jackson bean order)::

    {"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2]}]}"""

    path: Final = "/admin/reassign_partitions"

    @staticmethod
    def encode(reassignment: Mapping[tuple[str, int], Sequence[int]]) -> bytes:
        return jackson_bytes(
            {
                "version": 1,
                "partitions": [
                    {"topic": t, "partition": p, "replicas": list(r)}
                    for (t, p), r in reassignment.items()
                ],
            }
        )

    @staticmethod
    def decode(data: bytes | None) -> dict[tuple[str, int], list[int]]:
        path = ReassignPartitionsZNode.path
        obj = _obj(path, _parse(path, data))
        items = obj.get("partitions")
        if not isinstance(items, list):
            raise ZNodeDecodeError(path, "'partitions' is not a list")
        out: dict[tuple[str, int], list[int]] = {}
        for item in items:
            entry = _obj(path, item, "a partition")
            key = (_str(path, entry, "topic"), _int(path, entry, "partition"))
            out[key] = _int_list(path, entry.get("replicas"), "'replicas'")
        return out


class DeleteTopicsZNode:
    path: Final = "/admin/delete_topics"


class DeleteTopicsTopicZNode:
    """``/admin/delete_topics/<topic>``: a marker, no data; the controller deletes the topic."""

    @staticmethod
    def path(topic: str) -> str:
        return f"{DeleteTopicsZNode.path}/{topic}"


# --------------------------------------------------------------------------- producer ids, features
@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    broker_id: int
    first: int
    size: int

    @property
    def last(self) -> int:
        return self.first + self.size - 1


class ProducerIdBlockZNode:
    """``/latest_producer_id_block`` (Kafka's ``ProducerIdsBlock``), updated by a conditional
    set::

        {"version":1,"broker":0,"block_start":"0","block_end":"999"}

    ``block_start``/``block_end`` are inclusive and written as strings (64-bit values)."""

    path: Final = "/latest_producer_id_block"

    @staticmethod
    def encode(block: ProducerIdBlock) -> bytes:
        return jackson_bytes(
            {
                "version": 1,
                "broker": block.broker_id,
                "block_start": str(block.first),
                "block_end": str(block.last),
            }
        )

    @staticmethod
    def decode(data: bytes | None) -> ProducerIdBlock:
        path = ProducerIdBlockZNode.path
        obj = _obj(path, _parse(path, data))
        try:
            start = int(_str(path, obj, "block_start"))
            end = int(_str(path, obj, "block_end"))
        except ValueError as exc:
            raise ZNodeDecodeError(path, "block bounds are not decimal strings", data) from exc
        return ProducerIdBlock(_int(path, obj, "broker"), start, end - start + 1)


class FeatureZNode:
    """``/feature`` (KIP-584), version 2 (Kafka 3.3+)::

        {"features":{"metadata.version":{"max_version_level":7}},"version":2,"status":1}

    ``status`` 1 Enabled, 0 Disabled."""

    path: Final = "/feature"

    @staticmethod
    def encode(features: Mapping[str, int], status: int = 1) -> bytes:
        body: dict[str, Any] = {
            "version": 2,
            "status": status,
            "features": _ordered(
                {k: {"max_version_level": v} for k, v in features.items()},
                java_hash_order(list(features)),
            ),
        }
        return jackson_bytes(_ordered(body, scala_mutable_order(list(body), initial=3)))

    @staticmethod
    def decode(data: bytes | None) -> tuple[int, dict[str, int]]:
        """(status, finalized feature -> max version level)."""
        path = FeatureZNode.path
        obj = _obj(path, _parse(path, data))
        version = _int(path, obj, "version")
        if version not in (1, 2):
            raise ZNodeDecodeError(path, f"unsupported feature znode version {version}")
        status = _int(path, obj, "status")
        features = _obj(path, obj.get("features"), "'features'")
        out: dict[str, int] = {}
        for name, levels in features.items():
            out[name] = _int(path, _obj(path, levels, repr(name)), "max_version_level")
        return status, out


#: Persistent paths every Kafka broker ensures at startup (``ZkData.PersistentZkPaths``,
#: without the old consumer path), plus the ``/config/<type>`` parents Franz uses.
PERSISTENT_PATHS: Final = (
    BrokerIdsZNode.path,
    TopicsZNode.path,
    ConfigEntityChangeNotificationZNode.path,
    DeleteTopicsZNode.path,
    BrokerSequenceIdZNode.path,
    IsrChangeNotificationZNode.path,
    ProducerIdBlockZNode.path,
    "/log_dir_event_notification",
    "/config/topics",
    "/config/clients",
    "/config/users",
    "/config/brokers",
    "/config/ips",
)
