"""The broker's side of ``__consumer_offsets``: create it, append the coordinator's batches,
replay it into the coordinator at startup.

Kafka creates the topic on the first FindCoordinator for a group (``offsets.topic.num.
partitions`` partitions, replication factor ``offsets.topic.replication.factor``,
``cleanup.policy=compact``, ``segment.bytes=offsets.topic.segment.bytes``,
``compression.type=producer``). In cluster mode the factor is not capped: as Kafka 3.9's
``AutoTopicCreationManager.createTopicsInZk`` (the assignment over the live brokers of the
metadata cache refuses a factor above their number, INVALID_REPLICATION_FACTOR, KIP-115),
nothing is created while fewer brokers are alive, FindCoordinator answers
COORDINATOR_NOT_AVAILABLE, and the next lookup tries again. The embedded single-node mode
creates it with factor 1, whatever the setting (its one broker is the whole cluster, as
Kafka's sample ``server.properties`` for one node sets the factor to 1).

Loading reads each partition from its log start to its log end (as Kafka) in
``offsets.load.buffer.size`` reads and replays it in offset order: transactional offset
commits are held per producer id until their transaction's marker (``offsets_topic.replay``);
those still without one stay pending in the loaded groups.

Coordinators follow the partitions' leaders (Kafka's ``onLeadershipChange``):
``on_leadership_change`` hears every LeaderAndIsr's outcome. A partition this broker now
leads is marked loading at once (its groups answer COORDINATOR_LOAD_IN_PROGRESS) and loaded
on the next event-loop turn (Kafka's ``onElection``, on its scheduler); one it stopped
leading or hosting is unloaded (``onResignation``: its groups answer NOT_COORDINATOR).
At startup ``load_into`` loads the partitions led here before the listener begins serving.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, cast

from franz.broker.internal_topics import (
    append_and_wait,
    create_internal_topic,
    iter_partition_batches,
)
from franz.coordinator.group.offsets_topic import OFFSETS_TOPIC, LoadedPartition, replay
from franz.storage.files import TopicPartition

if TYPE_CHECKING:
    from collections.abc import Sequence

    from franz.broker.topic_manager import TopicManager
    from franz.cluster.partition import Partition
    from franz.cluster.replica_manager import LeadershipListener
    from franz.config.broker import BrokerConfig
    from franz.coordinator.group.coordinator import GroupCoordinator
    from franz.storage.log import Log
    from franz.storage.verification import VerificationGuard

__all__ = ["OffsetsTopicLog"]

log = logging.getLogger(__name__)


class OffsetsTopicLog:
    """``CoordinatorLog`` over this broker's replicas of ``__consumer_offsets``."""

    def __init__(self, config: BrokerConfig, topic_manager: TopicManager) -> None:
        self._config = config
        self._topics = topic_manager

    def partition_count(self) -> int | None:
        record = self._topics.get(OFFSETS_TOPIC)
        return None if record is None else record.partition_count

    def ensure_topic(self) -> int:
        """Create ``__consumer_offsets`` if it does not exist; its partition count."""
        factor = (
            self._config.get("offsets.topic.replication.factor")
            if self._topics.cluster is not None
            else 1
        )
        return create_internal_topic(
            self._topics,
            OFFSETS_TOPIC,
            self._config.get("offsets.topic.num.partitions"),
            factor,
            {
                "cleanup.policy": "compact",
                "compression.type": "producer",
                "segment.bytes": str(self._config.get("offsets.topic.segment.bytes")),
            },
        )

    async def append(
        self, partition: int, batch: bytearray, verification_guard: object | None = None
    ) -> int:
        """Append the coordinator's ``batch``; its base offset once committed (the
        coordinator compares these for transactional commits, Kafka's ``appendedBatchOffset``).

        A TxnOffsetCommit batch is transactional (producer id and epoch, sequence -1):
        storage's coordinator-origin checks test its epoch and, with KIP-890 verification
        on, its ``verification_guard`` (a ``VerificationGuard``). Kafka's ``appendForGroup``
        with ``offsets.commit.required.acks=-1`` waits for the ISR within
        ``offsets.commit.timeout.ms`` (the coordinator maps the errors)."""
        self.ensure_topic()
        return await append_and_wait(
            self._topics.replica_manager,
            TopicPartition(OFFSETS_TOPIC, partition),
            batch,
            verification_guard=cast("VerificationGuard | None", verification_guard),
            required_acks=self._config.get("offsets.commit.required.acks"),
            timeout_ms=self._config.get("offsets.commit.timeout.ms"),
        )

    def leadership_listener(self, coordinator: GroupCoordinator) -> LeadershipListener:
        """The ``ReplicaManager`` leadership listener that moves ``coordinator``'s groups."""
        return _CoordinatorListener(self, coordinator)

    def on_leadership_change(
        self,
        coordinator: GroupCoordinator,
        leaders: list[TopicPartition],
        followers: list[TopicPartition],
    ) -> None:
        for tp in followers:
            if tp.topic == OFFSETS_TOPIC:
                unloaded = coordinator.unload_partition(tp.partition)
                if unloaded:
                    log.info("resigned as coordinator of %s: %d group(s) unloaded", tp, unloaded)
        elected = [tp.partition for tp in leaders if tp.topic == OFFSETS_TOPIC]
        if not elected:
            return
        count = self.partition_count()
        if count is not None:
            coordinator.set_offsets_topic_partitions(count)
        for partition in elected:
            coordinator.begin_loading(partition)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            for partition in elected:
                self._load_elected(coordinator, partition)
            return
        for partition in elected:
            loop.call_soon(self._load_elected, coordinator, partition)

    def _load_elected(self, coordinator: GroupCoordinator, partition: int) -> None:
        if not coordinator.is_loading(partition):
            return  # loaded at startup, or resigned meanwhile
        tp = TopicPartition(OFFSETS_TOPIC, partition)
        data_log = self._topics.replica_manager.log_manager.get_log(tp)
        loaded = (
            _load_partition(data_log, self._config.get("offsets.load.buffer.size"))
            if data_log is not None
            else LoadedPartition()
        )
        groups = coordinator.load_partition(partition, loaded)
        coordinator.arm_loaded(groups)
        if groups:
            log.info("elected coordinator of %s: %d group(s) loaded", tp, len(groups))

    def load_into(self, coordinator: GroupCoordinator) -> None:
        """Replay every partition of ``__consumer_offsets`` this broker leads into
        ``coordinator``."""
        count = self.partition_count()
        if count is None:
            return
        coordinator.set_offsets_topic_partitions(count)
        started = time.monotonic()
        groups = records = 0
        buffer_size = self._config.get("offsets.load.buffer.size")
        replicas = self._topics.replica_manager.partitions
        for partition in range(count):
            tp = TopicPartition(OFFSETS_TOPIC, partition)
            replica = replicas.get(tp)
            if replica is None or not replica.is_leader:
                continue
            loaded = _load_partition(replica.log, buffer_size)
            records += loaded.records
            groups += len(coordinator.load_partition(partition, loaded))
        if records:
            log.info(
                "loaded %d group(s) from %d record(s) of %s in %.0f ms",
                groups,
                records,
                OFFSETS_TOPIC,
                (time.monotonic() - started) * 1000,
            )


def _load_partition(data_log: Log, buffer_size: int) -> LoadedPartition:
    """Kafka's ``doLoadGroupsAndOffsets``: the partition's batches replayed in offset order."""
    loaded = LoadedPartition()
    for batch in iter_partition_batches(data_log, buffer_size):
        replay([batch], loaded)
    return loaded


class _CoordinatorListener:
    """``franz.cluster.replica_manager.LeadershipListener`` for the group coordinator: new
    leaders of ``__consumer_offsets`` partitions load them (``onElection``); partitions that
    became followers or stopped being hosted unload them (``onResignation``)."""

    def __init__(self, offsets_log: OffsetsTopicLog, coordinator: GroupCoordinator) -> None:
        self._offsets_log = offsets_log
        self._coordinator = coordinator

    def on_leadership_change(
        self, new_leaders: Sequence[Partition], new_followers: Sequence[Partition]
    ) -> None:
        self._offsets_log.on_leadership_change(
            self._coordinator,
            [p.topic_partition for p in new_leaders],
            [p.topic_partition for p in new_followers],
        )

    def on_replicas_stopped(self, stopped: Sequence[tuple[TopicPartition, int]]) -> None:
        self._offsets_log.on_leadership_change(self._coordinator, [], [tp for tp, _ in stopped])
