"""The group coordinator's gauges and kafka_exporter's consumer lag over fakes of the
coordinator's groups and of the hosted replicas: names, labels, values, and the samples left
out where the broker does not know a high watermark."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from franz.coordinator.group.model import GroupState
from franz.metrics.groups import (
    ConsumerLagCollector,
    GroupCoordinatorCollector,
    group_counts,
    known_high_watermarks,
)
from franz.storage.files import TopicPartition
from tests.unit.metrics.test_collectors import scrape


@dataclass
class FakeSnapshot:
    state: enum.Enum
    members: dict[str, object] = field(default_factory=dict)


@dataclass
class FakeCommitted:
    offset: int


@dataclass
class FakeGroup:
    snapshot: FakeSnapshot
    offsets: dict[tuple[str, int], FakeCommitted] = field(default_factory=dict)


@dataclass
class FakeCoordinator:
    groups: dict[str, FakeGroup]


@dataclass
class FakeLog:
    offline: bool = False


@dataclass
class FakeReplica:
    is_leader: bool
    high_watermark: int
    log: FakeLog = field(default_factory=FakeLog)


@dataclass
class FakeInfo:
    isr: tuple[int, ...]


@dataclass
class FakeMetadata:
    infos: dict[tuple[str, int], FakeInfo]

    def partition_info(self, topic: str, partition: int) -> FakeInfo | None:
        return self.infos.get((topic, partition))


def _group(state: GroupState, members: int = 0, **offsets: int) -> FakeGroup:
    return FakeGroup(
        FakeSnapshot(state, {f"m{i}": object() for i in range(members)}),
        {
            (k.rsplit("_", 1)[0], int(k.rsplit("_", 1)[1])): FakeCommitted(v)
            for k, v in offsets.items()
        },
    )


COORDINATOR = FakeCoordinator(
    {
        "stable": _group(GroupState.STABLE, 2, t_0=5, t_1=7, u_0=1),
        "empty": _group(GroupState.EMPTY, 0, t_0=9),
        "joining": _group(GroupState.PREPARING_REBALANCE, 1),
        "syncing": _group(GroupState.COMPLETING_REBALANCE, 1),
        "dead": _group(GroupState.DEAD, 0, t_0=3),
    }
)


def test_group_counts_follow_kafkas_group_metadata_manager() -> None:
    counts = group_counts(COORDINATOR.groups.values())
    assert counts.num_groups == 5
    assert counts.num_offsets == 5
    assert counts.by_state == {s.value: 1 for s in GroupState}
    prefix = "kafka_coordinator_group_groupmetadatamanager_"
    samples = scrape(GroupCoordinatorCollector(lambda: COORDINATOR))
    assert samples == {
        (prefix + "numoffsets", ()): ("gauge", 5),
        (prefix + "numgroups", ()): ("gauge", 5),
        (prefix + "numgroupspreparingrebalance", ()): ("gauge", 1),
        (prefix + "numgroupscompletingrebalance", ()): ("gauge", 1),
        (prefix + "numgroupsstable", ()): ("gauge", 1),
        (prefix + "numgroupsdead", ()): ("gauge", 1),
        (prefix + "numgroupsempty", ()): ("gauge", 1),
    }


def test_lag_is_the_known_high_watermark_minus_the_committed_offset() -> None:
    replicas = {
        TopicPartition("t", 0): FakeReplica(True, 10),  # led here
        TopicPartition("t", 1): FakeReplica(False, 8),  # followed, in the ISR
        TopicPartition("u", 0): FakeReplica(False, 4),  # followed, out of the ISR
    }
    metadata = FakeMetadata({("t", 1): FakeInfo((2, 1)), ("u", 0): FakeInfo((2,))})
    hw = known_high_watermarks(1, lambda: replicas, metadata)
    assert (hw("t", 0), hw("t", 1), hw("u", 0), hw("v", 0)) == (10, 8, None, None)
    replicas[TopicPartition("t", 0)].log.offline = True
    assert hw("t", 0) is None
    replicas[TopicPartition("t", 0)].log.offline = False

    samples = scrape(ConsumerLagCollector(lambda: COORDINATOR, hw))

    def labels(group: str, topic: str, partition: int | None = None) -> tuple[tuple[str, str], ...]:
        pairs = {"consumergroup": group, "topic": topic}
        if partition is not None:
            pairs["partition"] = str(partition)
        return tuple(sorted(pairs.items()))

    members = "kafka_consumergroup_members"
    assert {k: v for k, v in samples.items() if k[0] == members} == {
        (members, (("consumergroup", g),)): ("gauge", n)
        for g, n in {"stable": 2, "empty": 0, "joining": 1, "syncing": 1}.items()
    }
    current = "kafka_consumergroup_current_offset"
    lag = "kafka_consumergroup_lag"
    rest = {k: v for k, v in samples.items() if k[0] != members}
    assert rest == {
        (current, labels("stable", "t", 0)): ("gauge", 5),
        (current, labels("stable", "t", 1)): ("gauge", 7),
        (current, labels("stable", "u", 0)): ("gauge", 1),
        (current, labels("empty", "t", 0)): ("gauge", 9),
        (lag, labels("stable", "t", 0)): ("gauge", 5),
        (lag, labels("stable", "t", 1)): ("gauge", 1),
        (lag, labels("empty", "t", 0)): ("gauge", 1),
        # u-0 is out of this broker's ISR: no lag, no lag_sum for the topic.
        (current + "_sum", labels("stable", "t")): ("gauge", 12),
        (current + "_sum", labels("stable", "u")): ("gauge", 1),
        (current + "_sum", labels("empty", "t")): ("gauge", 9),
        (lag + "_sum", labels("stable", "t")): ("gauge", 6),
        (lag + "_sum", labels("empty", "t")): ("gauge", 1),
    }


def test_no_consumer_samples_without_live_groups() -> None:
    coordinator = FakeCoordinator({"dead": _group(GroupState.DEAD, 0, t_0=1)})
    assert scrape(ConsumerLagCollector(lambda: coordinator, lambda _t, _p: 5)) == {}


def test_a_committed_offset_past_the_high_watermark_reads_negative() -> None:
    coordinator = FakeCoordinator({"g": _group(GroupState.EMPTY, 0, t_0=12)})
    samples = scrape(ConsumerLagCollector(lambda: coordinator, lambda _t, _p: 10))
    key = (("consumergroup", "g"), ("partition", "0"), ("topic", "t"))
    assert samples[("kafka_consumergroup_lag", key)] == ("gauge", -2)
