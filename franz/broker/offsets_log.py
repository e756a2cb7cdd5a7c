"""The broker's side of ``__consumer_offsets``: create it, append the coordinator's batches,
replay it into the coordinator at startup.

Kafka creates the topic on the first FindCoordinator for a group (``offsets.topic.num.
partitions`` partitions, replication factor ``offsets.topic.replication.factor`` capped at
the live brokers, ``cleanup.policy=compact``, ``segment.bytes=offsets.topic.segment.bytes``,
``compression.type=producer``). Loading reads each partition from its log start to its high
watermark in ``offsets.load.buffer.size`` reads and replays it in offset order.
"""

from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING

from franz.coordinator.group.offsets_topic import OFFSETS_TOPIC, LoadedPartition, replay
from franz.errors import ApiError, CoordinatorNotAvailableError, TopicAlreadyExistsError
from franz.protocol.records.batch import iter_batches, peek_batch_size
from franz.storage.files import TopicPartition

if TYPE_CHECKING:
    from franz.broker.topic_manager import TopicManager
    from franz.config.broker import BrokerConfig
    from franz.coordinator.group.coordinator import GroupCoordinator
    from franz.storage.log import Log

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
        count = self.partition_count()
        if count is not None:
            return count
        try:
            record = self._topics.create_topic(
                OFFSETS_TOPIC,
                self._config.get("offsets.topic.num.partitions"),
                1,  # offsets.topic.replication.factor, capped at the one live broker
                {
                    "cleanup.policy": "compact",
                    "compression.type": "producer",
                    "segment.bytes": str(self._config.get("offsets.topic.segment.bytes")),
                },
            )
        except TopicAlreadyExistsError:
            count = self.partition_count()
            assert count is not None
            return count
        return record.partition_count

    async def append(self, partition: int, batch: bytearray) -> None:
        self.ensure_topic()
        tp = TopicPartition(OFFSETS_TOPIC, partition)
        try:
            # The coordinator's own batches: Kafka's AppendOrigin.Coordinator skips the
            # client checks (base offset 0, keys of compacted topics), which hold by construction.
            self._topics.replica_manager.append(tp, memoryview(batch), from_client=False)
        except ApiError:
            raise
        except OSError as exc:
            raise CoordinatorNotAvailableError(f"writing {tp} failed: {exc}") from exc

    def load_into(self, coordinator: GroupCoordinator) -> None:
        """Replay every local partition of ``__consumer_offsets`` into ``coordinator``."""
        count = self.partition_count()
        if count is None:
            return
        coordinator.set_offsets_topic_partitions(count)
        started = time.monotonic()
        groups = records = 0
        buffer_size = self._config.get("offsets.load.buffer.size")
        for partition in range(count):
            tp = TopicPartition(OFFSETS_TOPIC, partition)
            data_log = self._topics.replica_manager.log_manager.get_log(tp)
            if data_log is None:
                continue
            loaded = _load_partition(data_log, buffer_size)
            records += loaded.records
            groups += coordinator.load_partition(partition, loaded)
        if records:
            log.info(
                "loaded %d group(s) from %d record(s) of %s in %.0f ms",
                groups,
                records,
                OFFSETS_TOPIC,
                (time.monotonic() - started) * 1000,
            )


def _load_partition(data_log: Log, buffer_size: int) -> LoadedPartition:
    loaded = LoadedPartition()
    offset = data_log.log_start_offset
    end = data_log.high_watermark
    while offset < end:
        info = data_log.read(offset, buffer_size, max_offset=end)
        if info.size == 0:
            break
        data = os.pread(info.fd, info.size, info.position)
        last = offset
        position = 0
        while position < len(data):
            size = peek_batch_size(data, position)
            if size is None or position + size > len(data):
                break
            for batch in iter_batches(data, position, position + size):
                replay([batch], loaded)
                last = batch.next_offset
            position += size
        if last <= offset:
            break  # no whole batch fitted (cannot happen with min_one_message reads)
        offset = last
    return loaded
