"""Embedded single-node metadata: one JSON file under the first log dir.

File ``<log.dir>/franz-metadata.json``, rewritten atomically (write to ``.tmp``, fsync,
rename, fsync the dir) on every change::

    {"version": 1,
     "next_producer_id": 1000,
     "topics": {"events": {"topic_id": "<base64url uuid>",
                           "partitions": {"0": [0], "1": [0]},
                           "configs": {"retention.ms": "3600000"}}},
     "broker_configs": {"<default>": {"log.retention.ms": "3600000"},
                        "0": {"max.connections": "100"}}}

Topic ids use Kafka's base64url text form. ``broker_configs`` holds the dynamic broker
configs by entity exactly as Kafka's ``/config/brokers/<entity>`` znodes hold them
(``<default>`` for the cluster-wide defaults, else a broker id; a file without the key has
none). The ZooKeeper store keeps the same records in
Kafka's znodes; both satisfy ``MetadataStore``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Final

from franz.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError
from franz.metadata.store import TopicRecord
from franz.protocol.kafka_uuid import uuid_from_str, uuid_to_str

__all__ = ["METADATA_FILE", "LocalMetadataStore"]

METADATA_FILE: Final = "franz-metadata.json"
_VERSION: Final = 1


#: Sorted keys, no indent: ``json``'s C encoder (``_encode``).
_ENCODER: Final = json.JSONEncoder(sort_keys=True)


def _encode(data: dict[str, Any]) -> str:
    """The file's text: sorted keys, one line per top-level key and per topic.

    Each line is encoded by ``json``'s C encoder; ``indent=`` would select its pure-Python
    encoder, whose cost per rewrite (one per topic created) grew with the topics already
    there until it dominated CreateTopics on a broker with a few thousand partitions
    (issue 16).
    """
    lines = []
    for key in sorted(data):
        value = data[key]
        if key == "topics" and value:
            topics = ",\n".join(
                f"  {_ENCODER.encode(name)}: {_ENCODER.encode(body)}"
                for name, body in sorted(value.items())
            )
            lines.append(f" {_ENCODER.encode(key)}: {{\n{topics}\n }}")
        else:
            lines.append(f" {_ENCODER.encode(key)}: {_ENCODER.encode(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


class LocalMetadataStore:
    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / METADATA_FILE
        self._topics: dict[str, TopicRecord] = {}
        self._next_producer_id = 0
        self._broker_configs: dict[str, dict[str, str]] = {}

    def load(self) -> None:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            self._topics = {}
            self._next_producer_id = 0
            self._broker_configs = {}
            return
        if data.get("version") != _VERSION:
            raise ValueError(f"{self.path}: unsupported metadata version {data.get('version')}")
        self._next_producer_id = int(data.get("next_producer_id", 0))
        self._topics = {
            name: TopicRecord(
                name=name,
                topic_id=uuid_from_str(body["topic_id"]),
                assignment={int(p): list(r) for p, r in body["partitions"].items()},
                configs=dict(body.get("configs", {})),
            )
            for name, body in data.get("topics", {}).items()
        }
        self._broker_configs = {
            str(entity): {str(k): str(v) for k, v in configs.items()}
            for entity, configs in data.get("broker_configs", {}).items()
        }

    def _commit(
        self,
        topics: dict[str, TopicRecord],
        next_producer_id: int,
        broker_configs: dict[str, dict[str, str]] | None = None,
    ) -> None:
        """Write the new state, then adopt it: a failed write leaves memory as it was."""
        if broker_configs is None:
            broker_configs = self._broker_configs
        self._save(topics, next_producer_id, broker_configs)
        self._topics = topics
        self._next_producer_id = next_producer_id
        self._broker_configs = broker_configs

    def _save(
        self,
        topics: dict[str, TopicRecord],
        next_producer_id: int,
        broker_configs: dict[str, dict[str, str]],
    ) -> None:
        data: dict[str, Any] = {
            "version": _VERSION,
            "next_producer_id": next_producer_id,
            "topics": {
                name: {
                    "topic_id": uuid_to_str(record.topic_id),
                    "partitions": {str(p): r for p, r in sorted(record.assignment.items())},
                    "configs": record.configs,
                }
                for name, record in sorted(topics.items())
            },
        }
        if broker_configs:
            data["broker_configs"] = broker_configs
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with tmp.open("w") as f:
                f.write(_encode(data))
                f.flush()
                os.fsync(f.fileno())
        except OSError:
            tmp.unlink(missing_ok=True)  # a full disk keeps no partial copy
            raise
        os.replace(tmp, self.path)
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def topics(self) -> dict[str, TopicRecord]:
        return self._topics

    def create_topic(self, record: TopicRecord) -> None:
        if record.name in self._topics:
            raise TopicAlreadyExistsError(f"Topic '{record.name}' already exists.")
        self._commit({**self._topics, record.name: record}, self._next_producer_id)

    def delete_topic(self, name: str) -> None:
        self._require(name)
        topics = {n: r for n, r in self._topics.items() if n != name}
        self._commit(topics, self._next_producer_id)

    def add_partitions(self, name: str, assignment: dict[int, list[int]]) -> None:
        record = self._require(name)
        changed = dataclasses.replace(record, assignment={**record.assignment, **assignment})
        self._commit({**self._topics, name: changed}, self._next_producer_id)

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        record = self._require(name)
        changed = dataclasses.replace(record, configs=dict(configs))
        self._commit({**self._topics, name: changed}, self._next_producer_id)

    def broker_configs(self, entity: str) -> dict[str, str]:
        return dict(self._broker_configs.get(entity, {}))

    def set_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        changed = {e: c for e, c in self._broker_configs.items() if e != entity}
        if configs:
            changed[entity] = dict(configs)
        self._commit(self._topics, self._next_producer_id, changed)

    def allocate_producer_ids(self, count: int) -> int:
        first = self._next_producer_id
        self._commit(self._topics, first + count)
        return first

    def _require(self, name: str) -> TopicRecord:
        record = self._topics.get(name)
        if record is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        return record
