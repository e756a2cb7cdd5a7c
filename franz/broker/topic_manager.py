"""Topic lifecycle in embedded single-node mode: create, auto-create, delete, add
partitions, change configs (Kafka's ``ZkAdminManager`` + ``AutoTopicCreationManager``; the
controller's part is ``franz.controller.shell.local.LocalController``, the same state
machines as cluster mode's controller, its requests delivered in process).

Every change goes to the ``MetadataStore`` first (durable), then to the controller, whose
LeaderAndIsr, StopReplica and UpdateMetadata reach this broker's replica manager and metadata
cache in process (``franz.broker.control_requests``, the code the network handlers run in
cluster mode): new partitions get their logs and leaders before the call returns, deleted
ones lose their files; config changes apply to live logs at once.
DeleteRecords moves a partition's log start offset (``delete_records``); the log manager's
``log-start-offset-checkpoint`` records it and retention deletes the segments wholly below it.

Topic configs are validated here for both creation and alteration (``validate_configs``).
``compression.type`` takes Kafka's values (``producer``, ``uncompressed``, ``gzip``,
``snappy``, ``lz4``, ``zstd``); the log recompresses batches whose codec differs
(``franz.storage.log_validator``).

A creation that fails on disk leaves nothing behind: if the store cannot be written, or a new
partition's log cannot be created (ENOSPC: its log dir goes offline), the partitions already
created are deleted, the topic is removed from the store again, and the caller gets
KAFKA_STORAGE_ERROR, so no topic without leaders is left in the metadata (in ZooKeeper-era
Kafka the controller's topic would stay, offline, with leader -1): the controller deletes it
again. CreatePartitions has the controller make the new logs before it records them, so a
failure has nothing to undo in the store (a crash in between leaves logs that the next start
adopts, completing the request); the controller forgets them (``remove_partitions``).

The metadata cache (``franz.metadata.cache.MetadataCache``, what handlers read) is filled by
the controller's UpdateMetadata: at startup, after every topic or partition change, and when
a log dir fails (``log_dir_failed``: its partitions lose their leader, leader -1 with the
leader epoch bumped, this broker offline). Topic configs are not in UpdateMetadata: they are
put in the cache here, as cluster mode's ``/config/changes`` does.

Cluster mode (``zookeeper.connect``): the store is a ``TopicMirrorStore`` (a copy of
ZooKeeper's topics) and the changes go through ``ClusterTopicAdmin``
(``franz.broker.cluster_topics``): written to ZooKeeper, turned into leaders by the
controller, whose LeaderAndIsr and UpdateMetadata reach this broker's replica manager and
metadata cache over the network (the embedded controller is not used). The ``*_async``
methods are what the admin handlers call in both modes.

Topic names follow Kafka's ``Topic.validate``: 1-249 characters of ``[a-zA-Z0-9._-]``, not
``.`` or ``..``.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from franz.broker.cluster_topics import ClusterTopicAdmin
from franz.broker.control_requests import deliver
from franz.cluster.replica_manager import ReplicaManager
from franz.config.broker import BrokerConfig
from franz.config.topic import TOPIC_CONFIG_KEYS, LogConfig
from franz.controller.assignment import (
    BrokerMetadata,
    assign_replicas_to_brokers,
    sorted_brokers,
)
from franz.controller.batch import ControlRequest
from franz.controller.model import TopicPartition as ControllerTopicPartition
from franz.controller.shell.local import LocalController
from franz.errors import (
    ErrorCode,
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from franz.metadata.cache import INTERNAL_TOPICS, MetadataCache, is_internal_topic
from franz.metadata.local import LocalMetadataStore
from franz.metadata.store import MetadataStore, TopicRecord
from franz.protocol.kafka_uuid import random_uuid
from franz.storage.files import TopicPartition

__all__ = [
    "INTERNAL_TOPICS",
    "MAX_TOPIC_NAME_LENGTH",
    "InvalidReplicaAssignmentError",
    "TopicManager",
    "validate_topic_name",
]

log = logging.getLogger(__name__)

MAX_TOPIC_NAME_LENGTH: Final = 249
_LEGAL: Final = re.compile(r"[a-zA-Z0-9._-]+")
#: DeleteRecords' "up to the high watermark" offset (``DeleteRecordsRequest.HIGH_WATERMARK``).
HIGH_WATERMARK: Final = -1


def validate_topic_name(name: str | None) -> str:
    """``name`` if Kafka would accept it, else ``InvalidTopicError`` saying why."""
    if not name:
        raise InvalidTopicError("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        raise InvalidTopicError('Topic name cannot be "." or ".."')
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise InvalidTopicError(
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME_LENGTH} characters, "
            f"topic name: {name}"
        )
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicError(
            f"Topic name is invalid: '{name}' contains one or more characters other than ASCII "
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
        metadata_cache: MetadataCache | None = None,
        cluster: ClusterTopicAdmin | None = None,
    ) -> None:
        self.config = config
        #: Cluster mode's ZooKeeper side (None: embedded single node; ``attach_cluster``).
        self.cluster: ClusterTopicAdmin | None = None
        if cluster is not None:
            self.attach_cluster(cluster)
        self._background: set[asyncio.Task[None]] = set()
        self.store = store
        self.replica_manager = replica_manager
        self.broker_id = broker_id
        self.metadata_cache = metadata_cache or MetadataCache(broker_id)
        self._default_log_config = config.log_config()
        #: Groups forget a deleted topic's offsets (the broker's ``on_topic_deleted``).
        self.on_topic_deleted: Callable[[str], None] = lambda topic: None
        #: The embedded mode's controller (unused in cluster mode: its store is a mirror).
        self.controller: LocalController | None = None
        if isinstance(store, LocalMetadataStore):
            self.controller = LocalController(
                store,
                broker_id,
                self._deliver,
                rack=config.get("broker.rack"),
                listener=_listener_name(config.get("listeners")),
            )

    def attach_cluster(self, cluster: ClusterTopicAdmin) -> None:
        """Cluster mode: topic changes go through ``cluster``; config changes other brokers
        make come back through its notifications."""
        self.cluster = cluster
        cluster.on_topic_configs = self._apply_topic_configs

    def _apply_topic_configs(self, name: str, configs: Mapping[str, str]) -> None:
        self.replica_manager.log_manager.update_topic_config(name, self.log_config(name))
        self.metadata_cache.update_topic_configs(name, configs)
        log.info("applied the configs of topic %s from ZooKeeper: %s", name, dict(configs))

    def reconfigure(self, config: BrokerConfig) -> None:
        """New broker config (dynamic broker configs changed): new topic defaults, applied
        to every live log (a topic's own overrides still win)."""
        self.config = config
        self._default_log_config = config.log_config()
        log_manager = self.replica_manager.log_manager
        for name in self.store.topics():
            log_manager.update_topic_config(name, self.log_config(name))

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
        return is_internal_topic(name)

    # -- startup ----------------------------------------------------------------------------

    def start_replicas(self) -> None:
        """Host every partition of every topic; adopt logs on disk the store does not know
        (data written by an older Franz or restored from a backup is served, not deleted).
        Cluster mode: nothing; the controller's LeaderAndIsr hosts the partitions."""
        if self.cluster is not None:
            return
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
            # Partitions are numbered 0..N-1: fill any gap up to the highest one found.
            count = max(tp.partition for tp in tps) + 1
            if record is None:
                assignment = {p: [self.broker_id] for p in range(count)}
                self.store.create_topic(TopicRecord(topic, topic_id, assignment))
            else:
                count = max(count, record.partition_count)
                assignment = {
                    p: [self.broker_id] for p in range(count) if p not in record.assignment
                }
                self.store.add_partitions(topic, assignment)
            log.info("adopted %d partition(s) of topic %s found on disk", len(tps), topic)
        for record in self.store.topics().values():
            self.metadata_cache.update_topic_configs(record.name, record.configs)
        self._local_controller().startup()

    def _local_controller(self) -> LocalController:
        controller = self.controller
        if controller is None:
            raise RuntimeError("no embedded controller: the metadata store is not local")
        return controller

    def _deliver(self, request: ControlRequest) -> dict[tuple[str, int], ErrorCode]:
        """The embedded controller's requests, into this broker (in process)."""
        return {
            (tp.topic, tp.partition): code
            for tp, code in deliver(_InProcess(self), request.request).items()
        }

    def log_dir_failed(self) -> None:
        """A log dir failed: the controller takes its partitions' leadership away (Kafka's
        ``onBrokerLogDirFailure``). Cluster mode: nothing here (the controller learns it from
        the LeaderAndIsr answers)."""
        if self.cluster is not None or self.controller is None or not self.controller.is_active:
            return
        offline = [tp for tp, p in self.replica_manager.partitions.items() if p.log.offline]
        self.controller.replicas_offline(ControllerTopicPartition(*tp) for tp in offline)

    # -- changes ----------------------------------------------------------------------------

    def validate_configs(self, configs: Mapping[str, str | None]) -> dict[str, str]:
        """Topic config overrides, checked (``InvalidConfigurationError``); None values drop.

        Unknown names and values of the wrong type or out of range (Kafka's messages) are
        refused.
        """
        clean = {k: v for k, v in configs.items() if v is not None}
        for name in clean:
            if name not in TOPIC_CONFIG_KEYS:
                raise InvalidConfigurationError(f"Unknown topic config name: {name}")
        self._default_log_config.with_overrides(clean)  # raises on a bad value
        return clean

    def _check_new_name(self, name: str) -> None:
        """A new topic's name: valid, not taken, not colliding with an existing one (Kafka's
        ``Topic.hasCollision``: '.' and '_' collide in metric names)."""
        validate_topic_name(name)
        existing = self.store.topics()
        if name in existing:
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        collision = name.replace(".", "_")
        for other in existing:
            if other.replace(".", "_") == collision:
                raise InvalidTopicError(f"Topic '{name}' collides with existing topic: {other}")

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
        self._check_new_name(name)
        if assignment:
            if num_partitions != -1 or replication_factor != -1:
                raise InvalidRequestError(
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time."
                )
            partitions = dict(assignment)
            for replicas in partitions.values():
                if self.cluster is None:
                    self._check_manual_replicas(replicas)
            if sorted(partitions) != list(range(len(partitions))):
                raise InvalidReplicaAssignmentError(
                    "partitions should be a consecutive 0-based integer sequence"
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
                raise InvalidReplicationFactorError("Replication factor must be larger than 0.")
            if self.cluster is not None:
                partitions = self._cluster_assignment(count, factor)
            elif factor > 1:
                raise InvalidReplicationFactorError(
                    f"Replication factor: {factor} larger than available brokers: 1."
                )
            else:
                partitions = {p: [self.broker_id] for p in range(count)}
        clean = self.validate_configs(configs or {})
        record = TopicRecord(name, random_uuid(), partitions, clean)
        if validate_only:
            return record
        if self.cluster is not None:
            self.store.create_topic(record)
            self.cluster.create_in_background(record)
            return record
        try:
            self.store.create_topic(record)
        except OSError as exc:
            raise KafkaStorageError(f"cannot record topic '{name}': {exc}") from exc
        self.metadata_cache.update_topic_configs(name, clean)
        failed = self._local_controller().create_topic(record)
        if failed:
            self._roll_back_creation(record)
            raise KafkaStorageError(_storage_failure(failed))
        log.info(
            "created topic %s with %d partition(s)%s",
            name,
            len(partitions),
            f" and configs {clean}" if clean else "",
        )
        return record

    def _cluster_assignment(self, count: int, factor: int) -> dict[int, list[int]]:
        """Kafka's assignment over the live brokers of the metadata cache (synchronous
        callers: auto-creation); ``ClusterTopicAdmin.assignment`` reads the registered
        brokers from ZooKeeper instead."""
        brokers = sorted_brokers(
            BrokerMetadata(b.id, b.rack) for b in self.metadata_cache.alive_brokers()
        )
        if not brokers:
            raise InvalidReplicationFactorError(
                f"Replication factor: {factor} larger than available brokers: 0."
            )
        return dict(assign_replicas_to_brokers(brokers, count, factor))

    # -- cluster mode: the admin handlers' entry points ---------------------------------------

    async def create_topic_async(
        self,
        name: str,
        num_partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str | None] | None = None,
        assignment: Mapping[int, list[int]] | None = None,
        *,
        validate_only: bool = False,
        timeout_ms: int | None = 30_000,
    ) -> TopicRecord:
        """CreateTopics: ``create_topic`` in embedded mode; in cluster mode validate, assign
        (``ClusterTopicAdmin``), write ZooKeeper and (``timeout_ms`` not None) wait for the
        leaders up to ``timeout_ms`` (``wait_for_leaders`` waits for many at once)."""
        if self.cluster is None:
            return self.create_topic(
                name,
                num_partitions,
                replication_factor,
                configs,
                assignment,
                validate_only=validate_only,
            )
        self._check_new_name(name)
        if not assignment:
            if num_partitions == -1:
                num_partitions = self.config.get("num.partitions")
            if replication_factor == -1:
                replication_factor = self.config.get("default.replication.factor")
        partitions = await self.cluster.assignment(num_partitions, replication_factor, assignment)
        clean = self.validate_configs(configs or {})
        record = TopicRecord(name, random_uuid(), partitions, clean)
        if not validate_only:
            await self.cluster.create(record, timeout_ms)
        return record

    async def wait_for_leaders(self, topics: Mapping[str, int], timeout_ms: int) -> set[str]:
        """Cluster mode: the topics (name -> partitions) still without leaders after up to
        ``timeout_ms``; embedded mode: none (creation hosts them at once)."""
        if self.cluster is None:
            return set()
        return await self.cluster.wait_for_leaders(topics, timeout_ms)

    async def delete_topic_async(self, name: str, *, timeout_ms: int = 30_000) -> None:
        if self.cluster is None:
            self.delete_topic(name)
            return
        await self.cluster.delete(name, timeout_ms)

    async def create_partitions_async(
        self,
        name: str,
        count: int,
        assignment: list[list[int]] | None = None,
        *,
        validate_only: bool = False,
        timeout_ms: int = 30_000,
    ) -> None:
        if self.cluster is None:
            self.create_partitions(name, count, assignment, validate_only=validate_only)
            return
        await self.cluster.create_partitions(
            name, count, assignment, validate_only=validate_only, timeout_ms=timeout_ms
        )

    async def refresh_topics(self, wanted: Mapping[str, Sequence[int]]) -> None:
        """Cluster mode, before a LeaderAndIsr is applied: read from ZooKeeper the topics of
        ``wanted`` (topic -> partitions) that the mirror lacks or knows fewer partitions of."""
        if self.cluster is None:
            return
        known = self.store.topics()
        stale = [
            name
            for name, partitions in wanted.items()
            if name not in known or any(p not in known[name].assignment for p in partitions)
        ]
        if stale:
            await self.cluster.refresh(stale)

    def forget_topics(self, names: Iterable[str]) -> None:
        """Cluster mode: the controller deleted these topics (UpdateMetadata)."""
        if self.cluster is None:
            return
        for name in names:
            self.store.delete_topic(name)

    def _roll_back_creation(self, record: TopicRecord) -> None:
        """Undo a creation whose logs failed: forget the topic, have the controller delete
        what was created."""
        try:
            self.store.delete_topic(record.name)
        except OSError as exc:  # the store's disk failed too; the topic is hosted at restart
            log.error("could not remove the failed topic %s from the store: %s", record.name, exc)
        else:
            log.warning("creating topic %s failed on disk: rolled back", record.name)
        self._local_controller().delete_topic(record.name)

    def maybe_auto_create(self, name: str) -> TopicRecord | None:
        """Create ``name`` with the defaults if ``auto.create.topics.enable``; else None.

        Cluster mode: the creation goes on in the background (the controller elects the
        leaders, then its UpdateMetadata fills the metadata cache) and the record is returned
        at once; a topic already recorded (created by another broker or a CreateTopics, its
        leaders not in the cache yet) returns its record too. The Metadata handler answers
        both with LEADER_NOT_AVAILABLE until the cache has the topic, as Kafka's
        ``AutoTopicCreationManager.createTopicsInZk`` turns TOPIC_ALREADY_EXISTS and the
        zero-timeout REQUEST_TIMED_OUT into LEADER_NOT_AVAILABLE."""
        if not self.config.get("auto.create.topics.enable") or self.is_internal(name):
            return None
        if self.cluster is not None:
            existing = self.store.topics().get(name)
            return existing if existing is not None else self.create_topic(name)
        return self.create_topic(name)

    def delete_topic(self, name: str) -> None:
        record = self.get(name)
        if record is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        self.store.delete_topic(name)
        self._local_controller().delete_topic(name)
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
            raise UnknownTopicOrPartitionError(f"The topic '{name}' does not exist.")
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
            for replicas in assignment:
                self._check_manual_replicas(replicas)
            if len(assignment) != added:
                raise InvalidReplicaAssignmentError(
                    f"Increasing the number of partitions by {added} but {len(assignment)} "
                    "assignments provided."
                )
        new = {current + i: [self.broker_id] for i in range(added)}
        if validate_only:
            return
        # The logs first (see the module docstring): a failure removes them, and the store
        # has nothing to undo.
        controller = self._local_controller()
        failed = controller.create_partitions(name, new)
        if failed:
            controller.remove_partitions(name, new)
            raise KafkaStorageError(_storage_failure(failed))
        try:
            self.store.add_partitions(name, new)
        except OSError as exc:
            controller.remove_partitions(name, new)
            raise KafkaStorageError(f"cannot record the partitions of '{name}': {exc}") from exc
        log.info("increased the partitions of topic %s from %d to %d", name, current, count)

    def _check_manual_replicas(self, replicas: list[int]) -> None:
        """One partition of a manual assignment (Kafka's ``validateManualPartitionAssignment``):
        not empty, only live brokers (this one), none twice."""
        if not replicas:
            raise InvalidReplicaAssignmentError(
                "The manual partition assignment includes an empty replica list."
            )
        for broker in replicas:
            if broker != self.broker_id:
                raise InvalidReplicaAssignmentError(
                    f"The manual partition assignment includes broker {broker}, but no such "
                    f"broker is registered (the only broker is {self.broker_id})."
                )
        if len(replicas) > 1:
            raise InvalidReplicaAssignmentError(
                f"The manual partition assignment includes the broker {replicas[0]} more than once."
            )

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
        if self.cluster is not None:
            self._spawn(self.cluster.set_topic_configs(name, clean))
        self.replica_manager.log_manager.update_topic_config(name, self.log_config(name))
        self.metadata_cache.update_topic_configs(name, clean)
        log.info("updated the configs of topic %s: %s", name, clean or "(defaults)")

    def pending_writes(self) -> list[asyncio.Task[None]]:
        """Cluster mode: the ZooKeeper writes started by synchronous changes (topic configs)
        and not finished yet; a handler awaits them before it answers."""
        return [task for task in self._background if not task.done()]

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        async def run() -> None:
            try:
                await work
            except Exception as exc:
                log.warning("writing to ZooKeeper failed: %s", exc)

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def delete_records(self, tp: TopicPartition, offset: int) -> int:
        """DeleteRecords on one partition (Kafka's ``Partition.deleteRecordsOnLeader``): move
        the log start offset up to ``offset`` (``-1``: the high watermark) and return the low
        watermark, the partition's log start offset afterwards.

        An offset at or below the current log start offset changes nothing. Raises
        ``UnknownTopicOrPartitionError``, ``PolicyViolationError`` when ``cleanup.policy``
        lacks ``delete`` (compacted-only topics keep their records), ``OffsetOutOfRangeError``
        for a negative offset or one above the high watermark, ``KafkaStorageError`` for an
        offline log. Segments wholly below the new start go at the next retention pass
        (``Log.delete_old_segments``); the new start is checkpointed with the others
        (``log-start-offset-checkpoint``), so it survives a restart.
        """
        partition_log = self.replica_manager.get_partition(tp).log
        if not partition_log.config.delete:
            raise PolicyViolationError(
                f"Records of partition {tp} can not be deleted due to the configured policy"
            )
        target = partition_log.high_watermark if offset == HIGH_WATERMARK else offset
        if target < 0:
            raise OffsetOutOfRangeError(f"The offset {target} for partition {tp} is not valid")
        if partition_log.maybe_increment_log_start_offset(target):
            log.info("log start offset of %s moved to %d (DeleteRecords)", tp, target)
        return partition_log.log_start_offset


@dataclass(frozen=True, slots=True)
class _InProcess:
    """What ``franz.broker.control_requests`` reaches, for the embedded controller's
    in-process delivery (the broker's ``BrokerServices`` in the network handlers)."""

    topic_manager: TopicManager

    @property
    def replica_manager(self) -> ReplicaManager:
        return self.topic_manager.replica_manager

    @property
    def metadata_cache(self) -> MetadataCache:
        return self.topic_manager.metadata_cache

    def on_topic_deleted(self, topic: str) -> None:
        self.topic_manager.on_topic_deleted(topic)


def _storage_failure(failed: Iterable[tuple[str, int]]) -> str:
    names = ", ".join(f"{t}-{p}" for t, p in sorted(failed))
    return f"cannot create the log of {names}: its log dir is offline"


def _listener_name(listeners: list[str]) -> str:
    """The name of the (one) listener: the embedded controller announces this broker's
    endpoint under it, so Metadata on that listener finds it."""
    first = listeners[0] if listeners else ""
    return first.split("://", 1)[0].upper() if "://" in first else "PLAINTEXT"
