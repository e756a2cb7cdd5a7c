"""Replication throttles (KIP-73): Kafka 3.9's ``ReplicationQuotaManager``, one for the leader
side and one for the follower side of a broker, and one for the moves between its log dirs
(``replica.alter.log.dirs.io.max.bytes.per.second``, Kafka's ``QuotaType.AlterLogDirsReplication``,
KIP-113: every byte a future replica copies counts and every copy waits while the rate is
exceeded, ``franz.cluster.alter_log_dirs``). Sans-IO: values in, decisions out, time from an
injected ``Clock``.

Kafka's rules, followed here:

* **Measured, not reserved.** Bytes are recorded after the fact (``record``): on the leader
  the throttled partitions' data of every response to a follower, 0 bytes too (``KafkaApis``'
  ``sizeOfThrottledPartitions``), on the follower the data of each throttled partition in a
  response, 0 bytes too (``ReplicaFetcherThread.processPartitionData``). In-sync replicas'
  bytes count too, so that the whole replication traffic of the throttled replicas stays
  under the bound. Since every follower fetch records, a leader's samples run without gaps,
  and a follower that starts catching up finds a window of ~11 s behind it: a leader-side
  throttle lets it take up to ``bound`` x that window at once, then holds the average (as
  Kafka's does); a follower's quota starts its first sample when it first fetches a
  throttled partition, so the follower side holds the rate from the start.
* **Throttled once exceeded.** While the measured rate is above the bound
  (``isQuotaExceeded``), a leader answers a follower's fetch of a throttled partition with
  no records, unless that follower is in the ISR (``ReplicaManager.shouldLeaderThrottle``);
  a follower leaves its throttled partitions that are not in sync (lag > 0 or not known yet)
  out of its fetch (``ReplicaFetcherThread.shouldFollowerThrottle``).
* **The rate** is Kafka's ``SimpleRate`` over ``replication.quota.window.num`` (11) samples
  of ``replication.quota.window.size.seconds`` (1 s): the bytes of the retained samples
  divided by the time since the oldest one started, at least one window. A new sample starts
  when the current one is a window old; the stat keeps one sample more than configured; a
  sample whose last event is ``num * size`` old is reset; the first measurement or record
  starts the first sample. The bound is exceeded when the rate is strictly above it
  (``Quota.acceptable``: ``value <= bound``).
* **Which partitions**: ``is_throttled`` reads the partition's topic's throttled-replica list
  (``leader.replication.throttled.replicas`` or ``follower.replication.throttled.replicas``)
  from the log's live ``LogConfig``, which every topic config change updates (Kafka's
  ``TopicConfigHandler`` calls ``markThrottled`` / ``removeThrottle``); the list is parsed
  once per topic and value (``franz.config.quota.throttled_partitions``).
* **The bound** (``update_quota``) comes from the dynamic broker configs, applied live
  (``ReplicationQuotas.reconfigure``, Kafka's ``BrokerConfigHandler``); ``Long.MAX_VALUE``
  means unbounded and is never exceeded.

Hot path: an unbounded quota answers ``is_quota_exceeded`` with one comparison, so a broker
with no rate set does no rate arithmetic; an empty replica list answers ``is_throttled``
with one truth test; an unbounded leader records only throttled bytes, not the 0 of every
follower response (the samples those would start matter only once a rate is set, and
follower fetches start them then).

Differences: Kafka's leader counts the whole encoded size of the throttled partitions'
response entries (headers included); Franz counts their records, some 40 bytes fewer per
partition and response. Kafka drops an idle quota sensor after an hour; Franz keeps it.
Time is the clock's monotonic reading (Kafka's ``Time.milliseconds``, wall time).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from franz.clock import Clock
from franz.config.defs import LONG_MAX
from franz.config.quota import (
    FOLLOWER_REPLICATION_THROTTLED_RATE,
    LEADER_REPLICATION_THROTTLED_RATE,
    REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND,
    AllReplicas,
    replication_quota_bound,
    throttled_partitions,
)
from franz.config.topic import LogConfig
from franz.storage.files import TopicPartition

__all__ = ["ReplicationQuota", "ReplicationQuotas", "SampledRate"]

#: ``replication.quota.window.num`` / ``replication.quota.window.size.seconds`` defaults.
DEFAULT_SAMPLES: Final = 11
DEFAULT_WINDOW_SECONDS: Final = 1


@dataclass(slots=True)
class _Sample:
    """One sample (Kafka's ``SampledStat.Sample``) of a ``WindowedSum``."""

    start_ms: int
    last_event_ms: int
    value: float = 0.0
    events: int = 0

    def reset(self, now_ms: int) -> None:
        self.start_ms = self.last_event_ms = now_ms
        self.value = 0.0
        self.events = 0


class SampledRate:
    """Kafka's ``SimpleRate`` (a ``Rate`` over a ``WindowedSum``) per second, in one object:
    ``record`` adds a value at a time, ``measure`` is the rate at a time (module docstring).
    Times are milliseconds and never go backwards."""

    __slots__ = ("_current", "_samples", "num_samples", "window_ms")

    def __init__(self, num_samples: int, window_ms: int) -> None:
        if num_samples < 1 or window_ms < 1:
            raise ValueError("a rate needs at least one sample of at least 1 ms")
        self.num_samples = num_samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            sample = self._advance(now_ms)
        sample.value += value
        sample.events += 1
        sample.last_event_ms = now_ms

    def measure(self, now_ms: int) -> float:
        """Units per second at ``now_ms``."""
        self._purge_obsolete(now_ms)
        total = sum(sample.value for sample in self._samples)
        if not self._samples:  # Kafka's oldest(): the first measure starts a sample
            self._samples.append(_Sample(now_ms, now_ms))
        oldest = min(sample.start_ms for sample in self._samples)
        window_ms = max(now_ms - oldest, self.window_ms)
        return total / (window_ms / 1000.0)

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms, now_ms))
        return self._samples[self._current]

    def _advance(self, now_ms: int) -> _Sample:
        # One sample more than configured: the oldest may still overlap the window.
        self._current = (self._current + 1) % (self.num_samples + 1)
        if self._current >= len(self._samples):
            sample = _Sample(now_ms, now_ms)
            self._samples.append(sample)
            return sample
        sample = self._samples[self._current]
        sample.reset(now_ms)
        return sample

    def _purge_obsolete(self, now_ms: int) -> None:
        expire_ms = self.num_samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire_ms:
                sample.reset(now_ms)


class ReplicationQuota:
    """One side's throttle (Kafka's ``ReplicationQuotaManager`` and ``ReplicaQuota``)."""

    __slots__ = ("_clock", "_parsed", "_rate", "bound", "broker_id", "replicas_attr")

    def __init__(
        self,
        clock: Clock,
        broker_id: int,
        replicas_attr: str,
        *,
        num_samples: int = DEFAULT_SAMPLES,
        window_seconds: int = DEFAULT_WINDOW_SECONDS,
    ) -> None:
        self._clock = clock
        self.broker_id = broker_id
        #: The ``LogConfig`` attribute holding this side's throttled-replica list.
        self.replicas_attr = replicas_attr
        #: The quota in bytes/s (``LONG_MAX``: unbounded).
        self.bound = LONG_MAX
        self._rate = SampledRate(num_samples, window_seconds * 1000)
        #: topic -> (the list as last seen, the partitions it throttles on this broker).
        self._parsed: dict[str, tuple[tuple[str, ...], frozenset[int] | AllReplicas]] = {}

    def update_quota(self, bound: int) -> None:
        self.bound = bound

    @property
    def bounded(self) -> bool:
        """A rate is set (below ``Long.MAX_VALUE``)."""
        return self.bound < LONG_MAX

    def is_quota_exceeded(self) -> bool:
        if self.bound >= LONG_MAX:
            return False
        return self._rate.measure(self._now_ms()) > self.bound

    def record(self, value: int) -> None:
        """Count ``value`` bytes of throttled replication (even above the bound)."""
        self._rate.record(value, self._now_ms())

    def rate(self) -> float:
        """The measured bytes/s (Kafka's ``byte-rate`` metric of this quota)."""
        return self._rate.measure(self._now_ms())

    def is_throttled(self, tp: TopicPartition, log_config: LogConfig) -> bool:
        """Whether ``tp`` is throttled on this broker, by its topic's live ``log_config``."""
        replicas: tuple[str, ...] = getattr(log_config, self.replicas_attr)
        if not replicas:
            return False
        parsed = self._parsed.get(tp.topic)
        if parsed is None or (parsed[0] is not replicas and parsed[0] != replicas):
            parsed = self._parsed[tp.topic] = (
                replicas,
                throttled_partitions(replicas, self.broker_id),
            )
        return tp.partition in parsed[1]

    def _now_ms(self) -> int:
        return self._clock.monotonic_ns() // 1_000_000


class ReplicationQuotas:
    """A broker's replication quotas (Kafka's ``QuotaManagers.leader`` / ``.follower`` /
    ``.alterLogDirs``). The last throttles every future replica: its ``is_throttled`` is
    never asked."""

    __slots__ = ("alter_log_dirs", "follower", "leader")

    def __init__(
        self,
        clock: Clock,
        broker_id: int,
        *,
        num_samples: int = DEFAULT_SAMPLES,
        window_seconds: int = DEFAULT_WINDOW_SECONDS,
    ) -> None:
        self.leader = ReplicationQuota(
            clock,
            broker_id,
            "leader_replication_throttled_replicas",
            num_samples=num_samples,
            window_seconds=window_seconds,
        )
        self.follower = ReplicationQuota(
            clock,
            broker_id,
            "follower_replication_throttled_replicas",
            num_samples=num_samples,
            window_seconds=window_seconds,
        )
        self.alter_log_dirs = ReplicationQuota(
            clock, broker_id, "", num_samples=num_samples, window_seconds=window_seconds
        )

    def reconfigure(
        self, dynamic_broker: Mapping[str, Any], dynamic_default: Mapping[str, Any]
    ) -> None:
        """The dynamic broker configs changed: new bounds (Kafka's ``BrokerConfigHandler``)."""
        self.leader.update_quota(
            replication_quota_bound(
                LEADER_REPLICATION_THROTTLED_RATE, dynamic_broker, dynamic_default
            )
        )
        self.follower.update_quota(
            replication_quota_bound(
                FOLLOWER_REPLICATION_THROTTLED_RATE, dynamic_broker, dynamic_default
            )
        )
        self.alter_log_dirs.update_quota(
            replication_quota_bound(
                REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND, dynamic_broker, dynamic_default
            )
        )
