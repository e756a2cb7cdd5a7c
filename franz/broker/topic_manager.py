"""Topic lifecycle in embedded single-node mode: create, auto-create, delete, add
partitions, change configs (Kafka's ``ZkAdminManager`` + ``AutoTopicCreationManager``, with
the controller's part done in process).

Every change goes to the ``MetadataStore`` first (durable), then to the replicas: new
partitions get their logs, deleted ones lose them, config changes apply to live logs at once.

Topic names follow Kafka's ``Topic.validate``: 1-249 characters of ``[a-zA-Z0-9._-]``, not
``.`` or ``..``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Final

from franz.cluster.replica_manager import ReplicaManager
from franz.config.broker import BrokerConfig
from franz.config.topic import TOPIC_CONFIG_KEYS, LogConfig
from franz.errors import (
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from franz.metadata.store import MetadataStore, TopicRecord
from franz.protocol.kafka_uuid import random_uuid
from franz.storage.files import TopicPartition

__all__ = ["MAX_TOPIC_NAME_LENGTH", "TopicManager", "validate_topic_name"]

log = logging.getLogger(__name__)

MAX_TOPIC_NAME_LENGTH: Final = 249
_LEGAL: Final = re.compile(r"[a-zA-Z0-9._-]+")
#: Kafka's internal topics (issue 4 adds ``__consumer_offsets``).
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state"})


def validate_topic_name(name: str | None) -> str:
    """``name`` if Kafka would accept it, else ``InvalidTopicError`` saying why."""
    if not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError("Topic name cannot be \".\" or \"..\"")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, "
            f"topic name: {name}"
        )
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicError(
            f"Topic name \"{name}\" is illegal, it contains a character other than ASCII "
            "alphanumerics, '.', '_' and '-'"
        )
    return name


class TopicManager:
    def __init__(
        self,
        config: BrokerConfig,
        store: MetadataStore,
        replica_manager: ReplicaManager,
        *,
        broker_id: int,
    ) -> None:
        self.config = config
        self.store = store
        self.replica_manager = replica_manager
        self.broker_id = broker_id
        self._default_log_config = config.log_config()

    # -- reading ----------------------------------------------------------------------------

    def topics(self) -> dict[str, TopicRecord]:
        return self.store.topics()

    def get(self, name: str) -> TopicRecord | None:
        return self.store.topics().get(name)

    def by_id(self, topic_id: object) -> TopicRecord | None:
        for record in self.store.topics().values():
            if record.topic_id == topic_id:
                return record
        return None

    @property
    def default_log_config(self) -> LogConfig:
        return self._default_log_config

    def log_config(self, name: str) -> LogConfig:
        """The topic's effective log config: broker defaults, then its overrides."""
        record = self.get(name)
        if record is None or not record.configs:
            return self._default_log_config
        return self._default_log_config.with_overrides(record.configs)

    def is_internal(self, name: str) -> bool:
        return name in INTERNAL_TOPICS

    # -- startup ----------------------------------------------------------------------------

    def start_replicas(self) -> None:
        """Host every partition of every topic; adopt logs on disk the store does not know
        (data written by an older Franz or restored from a backup is served, not deleted)."""
        topics = self.store.topics()
        orphans: dict[str, list[TopicPartition]] = {}
        for tp in self.replica_manager.log_manager.logs:
            record = topics.get(tp.topic)
            if record is None or tp.partition not in record.assignment:
                orphans.setdefault(tp.topic, []).append(tp)
        for topic, tps in orphans.items():
            existing_log = self.replica_manager.log_manager.get_log(tps[0])
            topic_id = (existing_log.topic_id if existing_log else None) or random_uuid()
            record = topics.get(topic)
            assignment = {tp.partition: [self.broker_id] for tp in tps}
            if record is None:
                count = max(tp.partition for tp in tps) + 1
                assignment = {p: [self.broker_id] for p in range(count)}
                self.store.create_topic(TopicRecord(topic, topic_id, assignment))
            else:
                self.store.add_partitions(topic, assignment)
            log.info("adopted %d partition(s) of topic %s found on disk", len(tps), topic)
        for record in self.store.topics().values():
            self._host(record, record.assignment)

    def _host(self, record: TopicRecord, assignment: Mapping[int, list[int]]) -> None:
        config = self.log_config(record.name)
        for partition, replicas in sorted(assignment.items()):
            if self.broker_id in replicas:
                self.replica_manager.make_leader(
                    TopicPartition(record.name, partition), record.topic_id, config, replicas
                )

    # -- changes ----------------------------------------------------------------------------

    def validate_configs(self, configs: Mapping[str, str | None]) -> dict[str, str]:
        """Topic config overrides, checked (``InvalidConfigurationError``); None values drop."""
        clean = {k: v for k, v in configs.items() if v is not None}
        for name in clean:
            if name not in TOPIC_CONFIG_KEYS:
                raise InvalidConfigurationError(f"Unknown topic config name: {name}")
        self._default_log_config.with_overrides(clean)  # raises on a bad value
        return clean

    def create_topic(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
        assignment: Mapping[int, list[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> TopicRecord:
        """Create (or with ``validate_only`` just check) a topic; -1 means the broker default
        (``num.partitions``, ``default.replication.factor``, KIP-464)."""
        validate_topic_name(name)
        if name in self.store.topics():
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        if assignment:
            if num_partitions != -1 or replication_factor != -1:
                raise InvalidRequestError(
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time."
                )
            partitions = dict(assignment)
            if sorted(partitions) != list(range(len(partitions))):
                raise InvalidPartitionsError(
                    "Partitions should be numbered 0 to N-1 in a manual assignment"
                )
            for replicas in partitions.values():
                if not replicas or any(r != self.broker_id for r in replicas):
                    raise InvalidReplicationFactorError(
                        f"Replica assignment {replicas} names brokers that do not exist; the "
                        f"only live broker is {self.broker_id}"
                    )
                if len(set(replicas)) != len(replicas):
                    raise InvalidReplicationFactorError(
                        f"Duplicate brokers in the replica assignment {replicas}"
                    )
        else:
            count = self.config.get("num.partitions") if num_partitions == -1 else num_partitions
            factor = (
                self.config.get("default.replication.factor")
                if replication_factor == -1
                else replication_factor
            )
            if count < 1:
                raise InvalidPartitionsError("Number of partitions must be larger than 0.")
            if factor < 1:
                raise InvalidReplicationFactorError(
                    "Replication factor must be larger than 0."
                )
            if factor > 1:
                raise InvalidReplicationFactorError(
                    f"Replication factor: {factor} larger than available brokers: 1."
                )
            partitions = {p: [self.broker_id] for p in range(count)}
        clean = self.validate_configs(configs or {})
        record = TopicRecord(name, random_uuid(), partitions, clean)
        if validate_only:
            return record
        self.store.create_topic(record)
        self._host(record, record.assignment)
        log.info(
            "created topic %s with %d partition(s)%s",
            name,
            len(partitions),
            f" and configs {clean}" if clean else "",
        )
        return record

    def maybe_auto_create(self, name: str) -> TopicRecord | None:
        """Create ``name`` with the defaults if ``auto.create.topics.enable``; else None."""
        if not self.config.get("auto.create.topics.enable") or self.is_internal(name):
            return None
        return self.create_topic(name)

    def delete_topic(self, name: str) -> None:
        record = self.get(name)
        if record is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        self.store.delete_topic(name)
        for partition in record.assignment:
            self.replica_manager.remove_partition(TopicPartition(name, partition), delete=True)
        log.info("deleted topic %s", name)

    def create_partitions(
        self,
        name: str,
        count: int,
        assignment: list[list[int]] | None = None,
        *,
        validate_only: bool = False,
    ) -> None:
        record = self.get(name)
        if record is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        current = record.partition_count
        if count < current:
            raise InvalidPartitionsError(
                f"Topic currently has {current} partitions, which is higher than the requested "
                f"{count}."
            )
        if count == current:
            raise InvalidPartitionsError(f"Topic already has {current} partitions.")
        added = count - current
        if assignment is not None:
            if len(assignment) != added:
                raise InvalidRequestError(
                    f"Increasing the number of partitions by {added} but {len(assignment)} "
                    "assignments provided."
                )
            for replicas in assignment:
                if any(r != self.broker_id for r in replicas) or not replicas:
                    raise InvalidReplicationFactorError(
                        f"Replica assignment {replicas} names brokers that do not exist"
                    )
        new = {current + i: [self.broker_id] for i in range(added)}
        if validate_only:
            return
        self.store.add_partitions(name, new)
        self._host(record, new)
        log.info("increased the partitions of topic %s from %d to %d", name, current, count)

    def set_topic_configs(
        self, name: str, configs: Mapping[str, str | None], *, validate_only: bool = False
    ) -> None:
        """Replace the topic's overrides (validated) and apply them to its live logs."""
        if self.get(name) is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        clean = self.validate_configs(configs)
        if validate_only:
            return
        self.store.set_topic_configs(name, clean)
        self.replica_manager.log_manager.update_topic_config(name, self.log_config(name))
        log.info("updated the configs of topic %s: %s", name, clean or "(defaults)")
