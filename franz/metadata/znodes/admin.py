"""Notifications (``/isr_change_notification``, ``/log_dir_event_notification``), admin
requests (``/admin/...``), ``/latest_producer_id_block`` and ``/feature``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
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
    scala_mutable_order,
)


# --------------------------------------------------------------------------- notifications
def _encode_partitions(version: int, partitions: Iterable[tuple[str, int]]) -> bytes:
    return jackson_bytes(
        {"version": version, "partitions": [{"topic": t, "partition": p} for t, p in partitions]}
    )


def _decode_partitions(path: str, data: bytes | None) -> list[tuple[str, int]]:
    obj = as_object(path, parse(path, data))
    items = obj.get("partitions")
    if not isinstance(items, list):
        raise ZNodeDecodeError(path, "'partitions' is not a list")
    out: list[tuple[str, int]] = []
    for item in items:
        entry = as_object(path, item, "a partition")
        out.append((get_str(path, entry, "topic"), get_int(path, entry, "partition")))
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


class LogDirEventNotificationZNode:
    """``/log_dir_event_notification``: brokers announce failed log dirs here (KIP-112)."""

    path: Final = "/log_dir_event_notification"


class LogDirEventNotificationSequenceZNode:
    """``/log_dir_event_notification/log_dir_event_<seq>`` (persistent sequential), written by
    a broker one of whose log dirs failed (``KafkaZkClient.propagateLogDirEvent``)::

    {"version":1,"broker":1,"event":1}

    ``event`` 1 is ``LogDirFailureEvent``, the only kind. Kafka reads only ``broker``."""

    prefix: Final = "log_dir_event_"
    create_path: Final = f"{LogDirEventNotificationZNode.path}/{prefix}"
    LOG_DIR_FAILURE_EVENT: Final = 1

    @staticmethod
    def encode(broker_id: int) -> bytes:
        return jackson_bytes(
            {
                "version": 1,
                "broker": broker_id,
                "event": LogDirEventNotificationSequenceZNode.LOG_DIR_FAILURE_EVENT,
            }
        )

    @staticmethod
    def decode(path: str, data: bytes | None) -> int:
        """The broker id the notification names."""
        return get_int(path, as_object(path, parse(path, data)), "broker")


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
        obj = as_object(path, parse(path, data))
        items = obj.get("partitions")
        if not isinstance(items, list):
            raise ZNodeDecodeError(path, "'partitions' is not a list")
        out: dict[tuple[str, int], list[int]] = {}
        for item in items:
            entry = as_object(path, item, "a partition")
            key = (get_str(path, entry, "topic"), get_int(path, entry, "partition"))
            out[key] = int_list(path, entry.get("replicas"), "'replicas'")
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
        obj = as_object(path, parse(path, data))
        try:
            start = int(get_str(path, obj, "block_start"))
            end = int(get_str(path, obj, "block_end"))
        except ValueError as exc:
            raise ZNodeDecodeError(path, "block bounds are not decimal strings", data) from exc
        return ProducerIdBlock(get_int(path, obj, "broker"), start, end - start + 1)


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
            "features": ordered(
                {k: {"max_version_level": v} for k, v in features.items()},
                java_hash_order(list(features)),
            ),
        }
        return jackson_bytes(ordered(body, scala_mutable_order(list(body), initial=3)))

    @staticmethod
    def decode(data: bytes | None) -> tuple[int, dict[str, int]]:
        """(status, finalized feature -> max version level)."""
        path = FeatureZNode.path
        obj = as_object(path, parse(path, data))
        version = get_int(path, obj, "version")
        if version not in (1, 2):
            raise ZNodeDecodeError(path, f"unsupported feature znode version {version}")
        status = get_int(path, obj, "status")
        features = as_object(path, obj.get("features"), "'features'")
        out: dict[str, int] = {}
        for name, levels in features.items():
            out[name] = get_int(path, as_object(path, levels, repr(name)), "max_version_level")
        return status, out


#: Persistent paths every Kafka broker ensures at startup (``ZkData.PersistentZkPaths``,
#: without the old consumer path), plus the ``/config/<type>`` parents Franz uses.
