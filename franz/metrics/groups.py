"""The group coordinator's metrics and consumer lag, computed at scrape time from the groups
this broker coordinates.

**Group counts** (Kafka 3.9's ``GroupMetadataManager`` gauges,
``kafka.coordinator.group:type=GroupMetadataManager,name=...``; the JMX exporter's
``kafka.coordinator.(\\w+)<type=(.+), name=(.+)><>Value`` rule names them
``kafka_coordinator_group_groupmetadatamanager_<name>``): over the groups in the coordinator's
cache, i.e. the groups of the ``__consumer_offsets`` partitions this broker leads (Kafka's
``groupMetadataCache``), ``NumGroups`` all of them, ``NumGroupsPreparingRebalance``,
``...CompletingRebalance``, ``...Stable``, ``...Dead``, ``...Empty`` those in each state,
``NumOffsets`` their committed offsets (``GroupMetadata.numOffsets``: pending transactional
offsets not counted). Kafka drops a Dead group from its cache at once; Franz keeps one until
its id is used again, so it counts in ``NumGroups`` and ``NumGroupsDead`` meanwhile.

**Consumer lag** (Kafka leaves it to separate exporters; the names and labels are
danielqsj/kafka_exporter's, which the Grafana dashboards for Kafka query):
``kafka_consumergroup_members{consumergroup}`` (members of each group, Dead ones left out,
as ListGroups does), ``kafka_consumergroup_current_offset{consumergroup,topic,partition}``
(each committed offset), ``kafka_consumergroup_lag{...}`` (the partition's high watermark
minus the committed offset), ``kafka_consumergroup_current_offset_sum{consumergroup,topic}``
and ``kafka_consumergroup_lag_sum{consumergroup,topic}``.

* **High watermark, not LSO**: kafka_exporter and ``kafka-consumer-groups --describe`` (its
  LOG-END-OFFSET) both ask ListOffsets for the latest offset at READ_UNCOMMITTED, which is the
  high watermark; the lag here is the same number. A ``read_committed`` consumer's lag over
  an open transaction is thus counted up to the HW, as those tools count it.
* **Only where the broker knows the HW**: the coordinator of a group need not lead the
  partitions it consumes. The lag is given when this broker leads the partition (its HW is
  the one ListOffsets answers) or follows it while in the ISR its metadata cache holds (a
  follower's HW trails the leader's by at most one fetch); otherwise (not hosted, out of the
  ISR, offline log dir) the lag sample is left out rather than guessed, as Kafka's own
  metrics leave out what a broker does not know. The committed offset is always given. A
  ``lag_sum`` is given only when every committed partition of the topic has a lag.
* The lag is not clamped: a committed offset past the HW (after a truncation) reads
  negative, as ``--describe`` prints it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from franz.metrics.collectors import KafkaMetric, family
from franz.metrics.names import MBean
from franz.storage.files import TopicPartition

__all__ = [
    "CONSUMER_LAG_NAMES",
    "GROUP_METADATA_MANAGER",
    "ConsumerLagCollector",
    "GroupCoordinatorCollector",
    "GroupCounts",
    "GroupLag",
    "group_counts",
    "group_lags",
    "known_high_watermarks",
]


def _gmm(name: str, help_: str) -> KafkaMetric:
    return KafkaMetric(
        MBean("kafka.coordinator.group", "GroupMetadataManager", name), "Value", help_
    )


NUM_GROUPS: Final = _gmm("NumGroups", "Groups this broker coordinates")
NUM_OFFSETS: Final = _gmm("NumOffsets", "Committed offsets of the groups this broker coordinates")
#: The classic group states by Kafka's names (``ClassicGroupState``; the values of
#: ``franz.coordinator.group.model.GroupState``, which this package may not import).
PREPARING_REBALANCE: Final = "PreparingRebalance"
COMPLETING_REBALANCE: Final = "CompletingRebalance"
STABLE: Final = "Stable"
DEAD: Final = "Dead"
EMPTY: Final = "Empty"
_BY_STATE: Final = {
    PREPARING_REBALANCE: _gmm(
        "NumGroupsPreparingRebalance", "Coordinated groups in PreparingRebalance"
    ),
    COMPLETING_REBALANCE: _gmm(
        "NumGroupsCompletingRebalance", "Coordinated groups in CompletingRebalance"
    ),
    STABLE: _gmm("NumGroupsStable", "Coordinated groups in Stable"),
    DEAD: _gmm("NumGroupsDead", "Coordinated groups in Dead"),
    EMPTY: _gmm("NumGroupsEmpty", "Coordinated groups in Empty"),
}
#: Every ``GroupMetadataManager`` gauge Kafka 3.9 registers, in its order.
GROUP_METADATA_MANAGER: Final[tuple[KafkaMetric, ...]] = (
    NUM_OFFSETS,
    NUM_GROUPS,
    *_BY_STATE.values(),
)

MEMBERS: Final = "kafka_consumergroup_members"
CURRENT_OFFSET: Final = "kafka_consumergroup_current_offset"
CURRENT_OFFSET_SUM: Final = "kafka_consumergroup_current_offset_sum"
LAG: Final = "kafka_consumergroup_lag"
LAG_SUM: Final = "kafka_consumergroup_lag_sum"
#: kafka_exporter's consumer group sample names exported here.
CONSUMER_LAG_NAMES: Final = (MEMBERS, CURRENT_OFFSET, CURRENT_OFFSET_SUM, LAG, LAG_SUM)


class _State(Protocol):
    @property
    def value(self) -> str: ...


class _Snapshot(Protocol):
    @property
    def state(self) -> _State: ...
    @property
    def members(self) -> Mapping[str, object]: ...


class GroupView(Protocol):
    """What is read of a ``franz.coordinator.group.group.Group``."""

    @property
    def snapshot(self) -> _Snapshot: ...
    @property
    def offsets(self) -> Mapping[tuple[str, int], _Committed]: ...


class _Committed(Protocol):
    @property
    def offset(self) -> int: ...


class GroupCoordinatorView(Protocol):
    @property
    def groups(self) -> Mapping[str, GroupView]: ...


#: (topic, partition) -> the high watermark this broker knows for it, None when it does not.
HighWatermarks = Callable[[str, int], int | None]


class _Log(Protocol):
    @property
    def offline(self) -> bool: ...


class HostedReplica(Protocol):
    """What is read of a ``franz.cluster.partition.Partition``."""

    @property
    def is_leader(self) -> bool: ...
    @property
    def high_watermark(self) -> int: ...
    @property
    def log(self) -> _Log: ...


class _PartitionInfo(Protocol):
    @property
    def isr(self) -> tuple[int, ...]: ...


class MetadataView(Protocol):
    def partition_info(self, topic: str, partition: int) -> _PartitionInfo | None: ...


def known_high_watermarks(
    broker_id: int,
    replicas: Callable[[], Mapping[TopicPartition, HostedReplica]],
    metadata: MetadataView,
) -> HighWatermarks:
    """The HW of a partition as this broker knows it (module docstring): led here, or
    followed here from inside the ISR of the metadata cache; else None."""

    def high_watermark(topic: str, partition: int) -> int | None:
        replica = replicas().get(TopicPartition(topic, partition))
        if replica is None or replica.log.offline:
            return None
        if replica.is_leader:
            return replica.high_watermark
        info = metadata.partition_info(topic, partition)
        if info is None or broker_id not in info.isr:
            return None
        return replica.high_watermark

    return high_watermark


@dataclass(frozen=True, slots=True)
class GroupCounts:
    num_groups: int
    num_offsets: int
    by_state: Mapping[str, int]


def group_counts(groups: Iterable[GroupView]) -> GroupCounts:
    """The ``GroupMetadataManager`` gauges over the coordinator's groups (module docstring)."""
    by_state = dict.fromkeys(_BY_STATE, 0)
    num_groups = num_offsets = 0
    for group in groups:
        num_groups += 1
        num_offsets += len(group.offsets)
        by_state[group.snapshot.state.value] += 1
    return GroupCounts(num_groups, num_offsets, by_state)


@dataclass(frozen=True, slots=True)
class GroupLag:
    """One committed offset of one group; ``lag`` None when the HW is not known here."""

    group: str
    topic: str
    partition: int
    current_offset: int
    lag: int | None


def group_lags(groups: Mapping[str, GroupView], high_watermark: HighWatermarks) -> list[GroupLag]:
    """Every committed offset of every live group, with its lag where the HW is known, in
    (group, topic, partition) order."""
    rows: list[GroupLag] = []
    for group_id in sorted(groups):
        group = groups[group_id]
        if group.snapshot.state.value == DEAD:
            continue
        for (topic, partition), committed in sorted(group.offsets.items()):
            hw = high_watermark(topic, partition)
            lag = None if hw is None else hw - committed.offset
            rows.append(GroupLag(group_id, topic, partition, committed.offset, lag))
    return rows


class GroupCoordinatorCollector(Collector):
    """``kafka.coordinator.group:type=GroupMetadataManager`` (module docstring)."""

    def __init__(self, coordinator: Callable[[], GroupCoordinatorView]) -> None:
        self.coordinator = coordinator

    def collect(self) -> Iterator[Metric]:
        counts = group_counts(self.coordinator().groups.values())
        values = {NUM_GROUPS: counts.num_groups, NUM_OFFSETS: counts.num_offsets}
        values.update({metric: counts.by_state[state] for state, metric in _BY_STATE.items()})
        for metric in GROUP_METADATA_MANAGER:
            result = family(metric, [((), values[metric])])
            assert result is not None
            yield result


class ConsumerLagCollector(Collector):
    """kafka_exporter's consumer group samples (module docstring); none without groups."""

    def __init__(
        self, coordinator: Callable[[], GroupCoordinatorView], high_watermark: HighWatermarks
    ) -> None:
        self.coordinator = coordinator
        self.high_watermark = high_watermark

    def collect(self) -> Iterator[Metric]:
        groups = self.coordinator().groups
        live = {g: group for g, group in groups.items() if group.snapshot.state.value != DEAD}
        if not live:
            return
        members = GaugeMetricFamily(
            MEMBERS, "Members of a consumer group", labels=["consumergroup"]
        )
        for group_id in sorted(live):
            members.add_metric([group_id], len(live[group_id].snapshot.members))
        yield members
        rows = group_lags(live, self.high_watermark)
        labels = ["consumergroup", "topic", "partition"]
        current = GaugeMetricFamily(
            CURRENT_OFFSET, "Committed offset of a consumer group at a partition", labels=labels
        )
        lag = GaugeMetricFamily(
            LAG,
            "High watermark minus the committed offset of a consumer group at a partition",
            labels=labels,
        )
        current_sum = GaugeMetricFamily(
            CURRENT_OFFSET_SUM,
            "Committed offsets of a consumer group at a topic, summed over its partitions",
            labels=["consumergroup", "topic"],
        )
        lag_sum = GaugeMetricFamily(
            LAG_SUM,
            "Lag of a consumer group at a topic, summed over its partitions",
            labels=["consumergroup", "topic"],
        )
        sums: dict[tuple[str, str], tuple[int, int | None]] = {}
        for row in rows:
            current.add_metric([row.group, row.topic, str(row.partition)], row.current_offset)
            if row.lag is not None:
                lag.add_metric([row.group, row.topic, str(row.partition)], row.lag)
            offset_sum, lag_total = sums.get((row.group, row.topic), (0, 0))
            lag_total = None if lag_total is None or row.lag is None else lag_total + row.lag
            sums[(row.group, row.topic)] = (offset_sum + row.current_offset, lag_total)
        for (group_id, topic), (offset_sum, lag_total) in sums.items():
            current_sum.add_metric([group_id, topic], offset_sum)
            if lag_total is not None:
                lag_sum.add_metric([group_id, topic], lag_total)
        for metric in (current, current_sum, lag, lag_sum):
            if metric.samples:
                yield metric
