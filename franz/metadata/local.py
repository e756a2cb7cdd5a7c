"""Embedded single-node metadata: one JSON file under the first log dir.

File ``<log.dir>/franz-metadata.json``, rewritten atomically (write to ``.tmp``, fsync,
rename, fsync the dir) on every change; sorted keys, one line per topic::

    {
     "broker_configs": {"<default>": {"log.retention.ms": "3600000"}},
     "controller_epoch": 3,
     "next_producer_id": 1000,
     "partition_states": {"events": {"0": {"controller_epoch": 1, "isr": [0], "leader": 0, ...}}},
     "topics": {
      "events": {"configs": {}, "partitions": {"0": [0], "1": [0]}, "topic_id": "<base64url>"}
     },
     "version": 1
    }

Client quotas (``client_quotas``, optional) are kept by entity path, ``users/alice``,
``clients/x``, ``users/alice/clients/x`` (names sanitized, ``<default>`` the default), each
with its configs as Kafka's ``/config/users`` and ``/config/clients`` znodes hold them
(``franz.metadata.client_quota_store``).

Topic ids use Kafka's base64url text form. ``broker_configs`` holds the dynamic broker
configs by entity exactly as Kafka's ``/config/brokers/<entity>`` znodes hold them
(``<default>`` for the cluster-wide defaults, else a broker id; a file without the key has
none). ``entity_configs`` holds the other dynamic config entities by type and name as Kafka's
``/config/<type>/<name>`` znodes (``{"users": {"alice": {"SCRAM-SHA-256": "salt=..."}}}``:
SCRAM credentials, never passwords; optional). The ZooKeeper store keeps the same records in
Kafka's znodes; both satisfy ``MetadataStore``.

The embedded controller's state (``franz.controller.shell.local``) is here too, as Kafka's
controller keeps it in ZooKeeper: ``controller_epoch`` (``/controller_epoch``, one more at
every start, written with the next change) and per partition its leader, leader epoch, ISR and
controller epoch (``/brokers/topics/<t>/partitions/<p>/state``, with ``leader_recovery_state``
only when not 0), ``partition_epoch`` standing for the znode's version. Both keys are optional:
a file written before they existed loads with controller epoch 0 and no partition states, and
the controller then elects every partition as new (leader epoch 0, as before). States of topics
the file does not hold are dropped.

``acls`` (optional) holds the ``AclAuthorizer``'s ACLs as Kafka keeps them in ZooKeeper: by
znode path (``/kafka-acl/Topic/orders``, ``/kafka-acl-extended/prefixed/Group/bill``) the
znode's JSON (``franz.security.acl_store``).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from franz.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError
from franz.metadata.store import TopicRecord
from franz.metadata.znodes import PartitionState
from franz.protocol.kafka_uuid import uuid_from_str, uuid_to_str

__all__ = ["METADATA_FILE", "LocalMetadataStore"]

METADATA_FILE: Final = "franz-metadata.json"
_VERSION: Final = 1


#: Sorted keys, no indent: ``json``'s C encoder (``_topic_line``, ``_encode``).
_ENCODER: Final = json.JSONEncoder(sort_keys=True)


def _topic_line(record: TopicRecord) -> str:
    """One topic's line of the file (its key and body)."""
    body = {
        "topic_id": uuid_to_str(record.topic_id),
        "partitions": {str(p): r for p, r in sorted(record.assignment.items())},
        "configs": record.configs,
    }
    return f"  {_ENCODER.encode(record.name)}: {_ENCODER.encode(body)}"


def _encode(fields: dict[str, Any], topic_lines: list[str]) -> str:
    """The file's text: sorted keys, one line per top-level key and per topic (``topic_lines``,
    sorted by name).

    Each line is encoded by ``json``'s C encoder; ``indent=`` would select its pure-Python
    encoder, whose cost per rewrite (one per topic created) grew with the topics already
    there until it dominated CreateTopics on a broker with a few thousand partitions
    (issue 16).
    """
    lines = []
    for key in sorted([*fields, "topics"]):
        if key != "topics":
            lines.append(f" {_ENCODER.encode(key)}: {_ENCODER.encode(fields[key])}")
        elif topic_lines:
            lines.append(' "topics": {\n' + ",\n".join(topic_lines) + "\n }")
        else:
            lines.append(' "topics": {}')
    return "{\n" + ",\n".join(lines) + "\n}\n"


class LocalMetadataStore:
    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / METADATA_FILE
        self._topics: dict[str, TopicRecord] = {}
        self._next_producer_id = 0
        self._broker_configs: dict[str, dict[str, str]] = {}
        #: Each topic's line of the file: a rewrite encodes only the topic that changed
        #: (records are replaced, never changed in place).
        self._lines: dict[str, str] = {}
        self._controller_epoch = 0
        self._partition_states: dict[str, dict[int, PartitionState]] = {}
        #: Client quota configs by entity path (``users/alice/clients/x``; Kafka's
        #: ``/config/users`` and ``/config/clients`` znodes, ``franz.metadata.client_quota_store``).
        self._client_quotas: dict[str, dict[str, str]] = {}
        self._acl_nodes: dict[str, bytes] = {}
        self._entity_configs: dict[str, dict[str, dict[str, str]]] = {}

    def load(self) -> None:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            self._topics = {}
            self._next_producer_id = 0
            self._broker_configs = {}
            self._lines = {}
            self._controller_epoch = 0
            self._partition_states = {}
            self._client_quotas = {}
            self._acl_nodes = {}
            self._entity_configs = {}
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
        self._client_quotas = {
            str(path): {str(k): str(v) for k, v in configs.items()}
            for path, configs in data.get("client_quotas", {}).items()
        }
        self._entity_configs = {
            str(kind): {
                str(name): {str(k): str(v) for k, v in configs.items()}
                for name, configs in entities.items()
            }
            for kind, entities in data.get("entity_configs", {}).items()
        }
        self._lines = {name: _topic_line(record) for name, record in self._topics.items()}
        self._controller_epoch = int(data.get("controller_epoch", 0))
        self._partition_states = {
            name: {int(p): _decode_state(body) for p, body in parts.items()}
            for name, parts in data.get("partition_states", {}).items()
            if name in self._topics
        }
        self._acl_nodes = {
            str(path): json.dumps(body, separators=(",", ":")).encode()
            for path, body in data.get("acls", {}).items()
        }

    def _commit(
        self,
        topics: dict[str, TopicRecord],
        next_producer_id: int,
        broker_configs: dict[str, dict[str, str]] | None = None,
        *,
        changed: str | None = None,
        controller_epoch: int | None = None,
        partition_states: dict[str, dict[int, PartitionState]] | None = None,
        acl_nodes: dict[str, bytes] | None = None,
    ) -> None:
        """Write the new state, then adopt it: a failed write leaves memory as it was.
        ``changed``: the one topic whose record differs from the current state."""
        if broker_configs is None:
            broker_configs = self._broker_configs
        if controller_epoch is None:
            controller_epoch = self._controller_epoch
        if partition_states is None:
            partition_states = self._partition_states
        partition_states = {n: s for n, s in partition_states.items() if n in topics}
        if acl_nodes is None:
            acl_nodes = self._acl_nodes
        lines = dict(self._lines)
        if changed is not None:
            record = topics.get(changed)
            if record is None:
                lines.pop(changed, None)
            else:
                lines[changed] = _topic_line(record)
        self._save(
            lines, next_producer_id, broker_configs, controller_epoch, partition_states, acl_nodes
        )
        self._lines = lines
        self._topics = topics
        self._next_producer_id = next_producer_id
        self._broker_configs = broker_configs
        self._controller_epoch = controller_epoch
        self._partition_states = partition_states
        self._acl_nodes = acl_nodes

    def _save(
        self,
        lines: dict[str, str],
        next_producer_id: int,
        broker_configs: dict[str, dict[str, str]],
        controller_epoch: int,
        partition_states: dict[str, dict[int, PartitionState]],
        acl_nodes: dict[str, bytes] | None = None,
    ) -> None:
        fields: dict[str, Any] = {"version": _VERSION, "next_producer_id": next_producer_id}
        if broker_configs:
            fields["broker_configs"] = broker_configs
        if self._client_quotas:
            fields["client_quotas"] = self._client_quotas
        if controller_epoch:
            fields["controller_epoch"] = controller_epoch
        if self._entity_configs:
            fields["entity_configs"] = self._entity_configs
        if partition_states:
            fields["partition_states"] = {
                name: {str(p): _encode_state(s) for p, s in sorted(parts.items())}
                for name, parts in partition_states.items()
            }
        if acl_nodes:
            fields["acls"] = {path: json.loads(data) for path, data in sorted(acl_nodes.items())}
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with tmp.open("w") as f:
                f.write(_encode(fields, [lines[name] for name in sorted(lines)]))
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
        self._commit(
            {**self._topics, record.name: record}, self._next_producer_id, changed=record.name
        )

    def delete_topic(self, name: str) -> None:
        self._require(name)
        topics = {n: r for n, r in self._topics.items() if n != name}
        self._commit(topics, self._next_producer_id, changed=name)

    def add_partitions(self, name: str, assignment: dict[int, list[int]]) -> None:
        record = self._require(name)
        changed = dataclasses.replace(record, assignment={**record.assignment, **assignment})
        self._commit({**self._topics, name: changed}, self._next_producer_id, changed=name)

    def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        record = self._require(name)
        changed = dataclasses.replace(record, configs=dict(configs))
        self._commit({**self._topics, name: changed}, self._next_producer_id, changed=name)

    def broker_configs(self, entity: str) -> dict[str, str]:
        return dict(self._broker_configs.get(entity, {}))

    def set_broker_configs(self, entity: str, configs: dict[str, str]) -> None:
        changed = {e: c for e, c in self._broker_configs.items() if e != entity}
        if configs:
            changed[entity] = dict(configs)
        self._commit(self._topics, self._next_producer_id, changed)

    def client_quota_configs(self) -> dict[str, dict[str, str]]:
        """Client quota configs by entity path (read only)."""
        return self._client_quotas

    def set_client_quota_configs(self, entity_path: str, configs: dict[str, str]) -> None:
        """Replace one entity's client quota configs (empty: remove the entity)."""
        previous = self._client_quotas
        changed = {p: c for p, c in previous.items() if p != entity_path}
        if configs:
            changed[entity_path] = dict(configs)
        self._client_quotas = changed
        try:
            self._commit(self._topics, self._next_producer_id)
        except BaseException:
            self._client_quotas = previous
    def entity_configs(self, entity_type: str, name: str) -> dict[str, str]:
        """``/config/<entity_type>/<name>``'s configs (``users``, ``clients``); empty when none."""
        return dict(self._entity_configs.get(entity_type, {}).get(name, {}))

    def all_entity_configs(self, entity_type: str) -> dict[str, dict[str, str]]:
        return {n: dict(c) for n, c in self._entity_configs.get(entity_type, {}).items()}

    def set_entity_configs(self, entity_type: str, name: str, configs: dict[str, str]) -> None:
        """Replace one entity's configs (empty: remove it); durable when it returns."""
        before = self._entity_configs
        entities = {n: c for n, c in before.get(entity_type, {}).items() if n != name}
        if configs:
            entities[name] = dict(configs)
        changed = {k: v for k, v in before.items() if k != entity_type}
        if entities:
            changed[entity_type] = entities
        self._entity_configs = changed
        try:
            self._commit(self._topics, self._next_producer_id)
        except BaseException:
            self._entity_configs = before
            raise

    def allocate_producer_ids(self, count: int) -> int:
        first = self._next_producer_id
        self._commit(self._topics, first + count)
        return first

    def acl_nodes(self) -> dict[str, bytes]:
        """The ACL znodes' data by path (module docstring)."""
        return dict(self._acl_nodes)

    def set_acl_node(self, path: str, data: bytes | None) -> None:
        """Write (None: remove) one ACL znode's data."""
        nodes = {p: d for p, d in self._acl_nodes.items() if p != path}
        if data is not None:
            nodes[path] = data
        self._commit(self._topics, self._next_producer_id, acl_nodes=nodes)

    # -- the embedded controller's state ----------------------------------------------------

    @property
    def controller_epoch(self) -> int:
        return self._controller_epoch

    def increment_controller_epoch(self) -> int:
        """One more controller epoch (a new controller: this broker started). Kept in memory
        and written with the next change, so a start that changes nothing writes nothing."""
        self._controller_epoch += 1
        return self._controller_epoch

    def partition_states(self) -> dict[tuple[str, int], PartitionState]:
        """``(topic, partition) -> state`` of every partition that has one."""
        return {
            (name, p): state
            for name, parts in self._partition_states.items()
            for p, state in parts.items()
        }

    def set_partition_states(self, states: Mapping[tuple[str, int], PartitionState | None]) -> None:
        """Write (None: remove) partition states, in one durable write; states of topics not
        in the store are ignored."""
        changed = {name: dict(parts) for name, parts in self._partition_states.items()}
        for (name, p), state in states.items():
            if name not in self._topics:
                continue
            if state is None:
                changed.get(name, {}).pop(p, None)
            else:
                changed.setdefault(name, {})[p] = state
        changed = {name: parts for name, parts in changed.items() if parts}
        if changed != self._partition_states:
            self._commit(self._topics, self._next_producer_id, partition_states=changed)

    def _require(self, name: str) -> TopicRecord:
        record = self._topics.get(name)
        if record is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        return record


def _encode_state(state: PartitionState) -> dict[str, Any]:
    body: dict[str, Any] = {
        "controller_epoch": state.controller_epoch,
        "isr": list(state.isr),
        "leader": state.leader,
        "leader_epoch": state.leader_epoch,
        "partition_epoch": state.zk_version,
    }
    if state.leader_recovery_state:
        body["leader_recovery_state"] = state.leader_recovery_state
    return body


def _decode_state(body: Mapping[str, Any]) -> PartitionState:
    return PartitionState(
        leader=int(body["leader"]),
        leader_epoch=int(body["leader_epoch"]),
        isr=tuple(int(r) for r in body["isr"]),
        controller_epoch=int(body["controller_epoch"]),
        leader_recovery_state=int(body.get("leader_recovery_state", 0)),
        zk_version=int(body.get("partition_epoch", 0)),
    )
