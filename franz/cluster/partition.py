"""One partition replica on this broker (Kafka's ``Partition``).

Single-node mode: this broker is the leader and the only replica, so the ISR is ``{self}``
and the high watermark follows the log end offset on every append (Kafka's
``maybeIncrementLeaderHW`` with one ISR member). Replication (followers, ISR shrink/expand
through the controller) extends this class in cluster mode.

Concurrency: owned by the event loop; every method runs on it.
"""

from __future__ import annotations

import uuid

from franz.storage.files import TopicPartition
from franz.storage.log import FetchDataInfo, Log, LogAppendInfo

__all__ = ["Partition"]


class Partition:
    def __init__(
        self,
        tp: TopicPartition,
        topic_id: uuid.UUID,
        log: Log,
        *,
        broker_id: int,
        replicas: list[int],
        leader_epoch: int = 0,
    ) -> None:
        self.topic_partition = tp
        self.topic_id = topic_id
        self.log = log
        self.broker_id = broker_id
        self.replicas = replicas
        self.isr = [broker_id]
        self.leader_id = broker_id
        self.leader_epoch = leader_epoch
        # Becoming leader with ISR = {self}: everything in the log is committed.
        log.update_high_watermark(log.log_end_offset)
        # As Kafka's ``Partition.makeLeader``: the new epoch starts at the log end now, so the
        # leader-epoch checkpoint (a write and two fsyncs) is written when leadership is taken,
        # not by the first produce request (which made a first write to 1,000 new partitions
        # spend a third of its time in fsync).
        log.leader_epoch_cache.assign(leader_epoch, log.log_end_offset)

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def append_records_to_leader(
        self, records: bytes | memoryview, *, from_client: bool = True
    ) -> LogAppendInfo:
        """Append as leader and advance the HW (the ISR is this broker alone).
        ``from_client=False``: the broker's own records (a coordinator's), Kafka's
        ``AppendOrigin.Coordinator``."""
        info = self.log.append_as_leader(records, self.leader_epoch, from_client=from_client)
        self.log.update_high_watermark(self.log.log_end_offset)
        return info

    def read(self, offset: int, max_bytes: int, *, min_one_message: bool) -> FetchDataInfo:
        """Committed batches (below the HW) from ``offset``, for a consumer."""
        return self.log.read(
            offset, max_bytes, max_offset=self.log.high_watermark, min_one_message=min_one_message
        )
