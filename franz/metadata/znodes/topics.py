"""``/brokers/topics/<t>``, its partition state znodes, ``/config/<type>/<name>`` and
``/config/changes``."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from franz.metadata.znodes._json import (
    ZNodeDecodeError,
    as_object,
    get_int,
    get_str,
    int_list,
    jackson_bytes,
    java_hash_order,
    ordered,
    parse,
    scala_immutable_order,
    scala_mutable_order,
)
from franz.protocol.kafka_uuid import uuid_from_str, uuid_to_str


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
            return ordered(plain, scala_mutable_order(list(plain)))

        body: dict[str, Any] = {
            "version": 3,
            "partitions": replica_map(assignment.partitions, True),
            "adding_replicas": replica_map(assignment.adding_replicas, False),
            "removing_replicas": replica_map(assignment.removing_replicas, False),
        }
        if assignment.topic_id is not None:
            body["topic_id"] = uuid_to_str(assignment.topic_id)
        return jackson_bytes(ordered(body, scala_mutable_order(list(body), initial=4)))

    @staticmethod
    def decode(topic: str, data: bytes | None) -> TopicAssignment:
        path = TopicZNode.path(topic)
        obj = as_object(path, parse(path, data))

        def replica_map(key: str) -> dict[int, list[int]]:
            raw = as_object(path, obj.get(key, {}), repr(key))
            try:
                return {int(p): int_list(path, r, f"{key}[{p}]") for p, r in raw.items()}
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
        return jackson_bytes(ordered(body, scala_immutable_order(list(body))))

    @staticmethod
    def decode(
        topic: str, partition: int, data: bytes | None, zk_version: int = -1
    ) -> PartitionState:
        path = TopicPartitionStateZNode.path(topic, partition)
        obj = as_object(path, parse(path, data))
        recovery = (
            get_int(path, obj, "leader_recovery_state") if "leader_recovery_state" in obj else 0
        )
        return PartitionState(
            leader=get_int(path, obj, "leader"),
            leader_epoch=get_int(path, obj, "leader_epoch"),
            isr=tuple(int_list(path, obj.get("isr"), "'isr'")),
            controller_epoch=get_int(path, obj, "controller_epoch"),
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
        return jackson_bytes({"version": 1, "config": ordered(plain, java_hash_order(list(plain)))})

    @staticmethod
    def decode(path: str, data: bytes | None) -> dict[str, str]:
        if data is None:
            return {}
        obj = as_object(path, parse(path, data))
        config = as_object(path, obj.get("config", {}), "'config'")
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
        return get_str(path, as_object(path, parse(path, data)), "entity_path")
