"""What the console's topic pages read from the cluster and the actions they take.

Functions over a ``ConsoleCluster`` (``franz.console.cluster``); each page makes a bounded
number of round trips whatever the number of topics:

* the list (``topic_list``): one Metadata (librdkafka's ``list_topics``), one ListOffsets
  round for the earliest and one for the latest offsets of every partition (librdkafka
  batches them per leader), one DescribeLogDirs per broker (``franz.admin``'s wire client);
* a topic (``topic_detail``): DescribeTopics (a Metadata request that never auto-creates),
  ListOffsets as above, DescribeLogDirs per broker for this topic only, DescribeConfigs, and
  ListGroups plus one OffsetFetch per group (``list_consumer_group_offsets`` takes one group
  per call) for the groups that committed offsets on it.

Sizes are those of the **leader** replicas (DescribeLogDirs' ``partition_size`` on the
broker leading the partition, the current replica rather than a future one of a log-dir
move), so a replicated topic is not counted once per replica; a broker that does not answer
DescribeLogDirs (or does not serve it) leaves the size unknown (``None``) rather than
failing the page. The message count is the sum of high watermark minus log start offset
(Kafka UIs' "messages": exact for topics that are neither compacted nor transactional).

Actions (``create_topic``, ``delete_topic``, ``add_partitions``, ``delete_records``,
``alter_config``) return what was done as a sentence for the OK banner, or raise
``ActionFailed`` with Kafka's error name and message (e.g. ``TOPIC_ALREADY_EXISTS``). The
long ones return only once the cluster's metadata shows the change ("long operations show
progress": the page answers when it is done), waiting at most the console's timeout.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin._config import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
)
from confluent_kafka.admin._listoffsets import OffsetSpec  # not re-exported for mypy
from confluent_kafka.admin._resource import ResourceType
from confluent_kafka.cimpl import NewPartitions, NewTopic

from franz.admin.options import ToolError
from franz.console.cluster import ClusterUnavailable, ConsoleCluster
from franz.console.topics_forms import INTERNAL_TOPICS, total_lag

__all__ = [
    "ActionFailed",
    "ConfigRow",
    "GroupLag",
    "PartitionRow",
    "TopicDetail",
    "TopicRow",
    "add_partitions",
    "alter_config",
    "create_topic",
    "delete_records",
    "delete_topic",
    "describe_configs",
    "partition_ids",
    "topic_configs",
    "topic_detail",
    "topic_groups",
    "topic_list",
]

T = TypeVar("T")
TP = tuple[str, int]
#: Between two looks at the metadata while waiting for an action to show.
_POLL_S: Final = 0.1


class ActionFailed(Exception):
    """An action the cluster refused: Kafka's error ``name`` and its ``message``."""

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        self.message = message
        super().__init__(f"{name}: {message}")


@dataclass(frozen=True)
class TopicRow:
    name: str
    internal: bool
    partitions: int
    replication_factor: int
    under_replicated: int
    size: int | None  # None: a leader's broker did not answer DescribeLogDirs
    messages: int | None  # None: a partition's offsets are unknown (no leader)


@dataclass(frozen=True)
class PartitionRow:
    id: int
    leader: int  # -1: none
    replicas: list[int]
    isr: list[int]
    low: int | None  # log start offset (ListOffsets earliest)
    high: int | None  # high watermark (ListOffsets latest)
    size: int | None

    @property
    def under_replicated(self) -> bool:
        return len(self.isr) < len(self.replicas)

    @property
    def messages(self) -> int | None:
        return None if self.low is None or self.high is None else self.high - self.low


@dataclass(frozen=True)
class TopicDetail:
    name: str
    internal: bool
    topic_id: str | None
    partitions: list[PartitionRow]

    @property
    def replication_factor(self) -> int:
        return len(self.partitions[0].replicas) if self.partitions else 0

    @property
    def under_replicated(self) -> int:
        return sum(p.under_replicated for p in self.partitions)

    @property
    def messages(self) -> int | None:
        counts = [p.messages for p in self.partitions]
        return None if None in counts else sum(c for c in counts if c is not None)

    @property
    def size(self) -> int | None:
        sizes = [p.size for p in self.partitions]
        return None if None in sizes else sum(s for s in sizes if s is not None)


@dataclass(frozen=True)
class ConfigRow:
    """One topic config from DescribeConfigs: ``source`` is Kafka's ``ConfigSource`` name
    (``DYNAMIC_TOPIC_CONFIG`` for a topic override, ``DEFAULT_CONFIG``, ...)."""

    name: str
    value: str | None
    source: str
    read_only: bool
    sensitive: bool

    @property
    def overridden(self) -> bool:
        """Not Kafka's default: set on the topic, the broker or the cluster."""
        return self.source != ConfigSource.DEFAULT_CONFIG.name


@dataclass(frozen=True)
class GroupLag:
    """A consumer group's committed offsets on the topic; ``lag`` sums, over the
    partitions it committed, high watermark minus committed offset (Kafka's
    ``ConsumerGroupCommand`` LAG, not clamped at 0 either)."""

    group: str
    partitions: dict[int, int]  # partition -> committed offset
    lag: int | None

    def partition_lag(self, partition: int, high: int | None) -> int | None:
        """This partition's LAG given its high watermark (None: unknown)."""
        return total_lag({partition: self.partitions[partition]}, {partition: high})


# -- waiting on librdkafka's futures -------------------------------------------------------


def _outcomes(futures: Mapping[T, concurrent.futures.Future[Any]], timeout: float) -> dict[T, Any]:
    """Each future's result or its ``KafkaError`` (a failed partition is a value, not a
    failed page); ``TimeoutError`` when they are not all done in ``timeout``."""
    _done, pending = concurrent.futures.wait(list(futures.values()), timeout)
    if pending:
        raise TimeoutError
    out: dict[T, Any] = {}
    for key, future in futures.items():
        try:
            out[key] = future.result()
        except KafkaException as exc:
            out[key] = exc.args[0] if exc.args else KafkaError(KafkaError._FAIL)
    return out


async def _all(cluster: ConsoleCluster, call: Callable[[], Mapping[T, Any]]) -> dict[T, Any]:
    """``call()`` (an admin call returning futures) and its outcomes, off the loop."""
    return await cluster.run(lambda: _outcomes(call(), cluster.timeout_s))


def _failed(error: Any) -> ActionFailed:
    if isinstance(error, KafkaError):
        return ActionFailed(str(error.name()), str(error.str()))
    return ActionFailed("ERROR", str(error))


async def _offsets(cluster: ConsoleCluster, partitions: list[TP]) -> dict[TP, tuple[int, int]]:
    """(log start offset, high watermark) of each partition that answered: two batched
    ListOffsets rounds (earliest, latest), run at the same time."""
    if not partitions:
        return {}

    def ask(spec: OffsetSpec) -> Callable[[], Mapping[TopicPartition, Any]]:
        tps = {TopicPartition(t, p): spec for t, p in partitions}
        return lambda: cluster.admin.list_offsets(tps, request_timeout=cluster.timeout_s)

    earliest, latest = await asyncio.gather(
        _all(cluster, ask(OffsetSpec.earliest())),  # type: ignore[no-untyped-call]
        _all(cluster, ask(OffsetSpec.latest())),  # type: ignore[no-untyped-call]
    )
    low = {(tp.topic, tp.partition): r for tp, r in earliest.items()}
    out: dict[TP, tuple[int, int]] = {}
    for tp, r in latest.items():
        first = low.get((tp.topic, tp.partition))
        if isinstance(r, KafkaError) or first is None or isinstance(first, KafkaError):
            continue
        out[(tp.topic, tp.partition)] = (int(first.offset), int(r.offset))
    return out


async def _leader_sizes(
    cluster: ConsoleCluster, leaders: Mapping[TP, int], topics: Mapping[str, list[int]] | None
) -> dict[TP, int]:
    """Size of each partition's leader replica, from one DescribeLogDirs per leading
    broker (in parallel)."""
    brokers = sorted({b for b in leaders.values() if b >= 0})

    def one(broker: int) -> dict[TP, int]:
        try:
            request = None if topics is None else dict(topics)
            dirs = cluster.wire.describe_log_dirs(broker, request)
        except (OSError, ToolError):
            return {}
        return {
            tp: info.size for d in dirs.values() for tp, info in d.replicas if not info.is_future
        }

    answers = await asyncio.gather(*(cluster.run(one, b) for b in brokers))
    by_broker = dict(zip(brokers, answers, strict=True))
    return {
        tp: by_broker[b][tp] for tp, b in leaders.items() if b >= 0 and tp in by_broker.get(b, {})
    }


# -- reading ---------------------------------------------------------------------------------


async def topic_list(
    cluster: ConsoleCluster, select: Callable[[list[str]], list[str]] | None = None
) -> tuple[list[TopicRow], int]:
    """(rows, number of topics in the cluster): the topics ``select`` picks from every
    topic's name (all of them, unsorted, when None; the list page passes its search and
    page). One Metadata for every name; ListOffsets and DescribeLogDirs only for the picked
    topics' partitions, so a page of 100 costs the same on a cluster of 10,000 topics."""
    metadata = await cluster.run(cluster.admin.list_topics, timeout=cluster.timeout_s)
    topics: dict[str, list[Any]] = {
        str(name): sorted(t.partitions.values(), key=lambda p: int(p.id))
        for name, t in metadata.topics.items()
    }
    total = len(topics)
    if select is not None:
        topics = {name: topics[name] for name in select(list(topics))}
    leaders = {(name, int(p.id)): int(p.leader) for name, ps in topics.items() for p in ps}
    wanted = (
        None if select is None else {name: [int(p.id) for p in ps] for name, ps in topics.items()}
    )
    offsets, sizes = await asyncio.gather(
        _offsets(cluster, list(leaders)), _leader_sizes(cluster, leaders, wanted)
    )
    rows = []
    for name, parts in topics.items():
        tps = [(name, int(p.id)) for p in parts]
        known_sizes = [sizes[tp] for tp in tps if tp in sizes]
        known_offsets = [offsets[tp] for tp in tps if tp in offsets]
        rows.append(
            TopicRow(
                name=name,
                internal=name in INTERNAL_TOPICS,
                partitions=len(parts),
                replication_factor=len(parts[0].replicas) if parts else 0,
                under_replicated=sum(1 for p in parts if len(p.isrs) < len(p.replicas)),
                size=sum(known_sizes) if len(known_sizes) == len(tps) else None,
                messages=(
                    sum(high - low for low, high in known_offsets)
                    if len(known_offsets) == len(tps)
                    else None
                ),
            )
        )
    return rows, total


async def _describe(cluster: ConsoleCluster, name: str) -> Any | None:
    """DescribeTopics of ``name`` (a Metadata request that never auto-creates it); None
    when the topic does not exist (UNKNOWN_TOPIC_OR_PART)."""
    outcome = await _all(
        cluster,
        lambda: cluster.admin.describe_topics(
            TopicCollection([name]), request_timeout=cluster.timeout_s
        ),
    )
    result = outcome[name]
    if isinstance(result, KafkaError):
        if result.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        raise ClusterUnavailable(str(result.str()))
    return result


async def topic_detail(cluster: ConsoleCluster, name: str) -> TopicDetail | None:
    """The topic's partitions with leaders, replicas, ISR, offsets and leader sizes; None
    when it does not exist."""
    described = await _describe(cluster, name)
    if described is None:
        return None
    parts = sorted(described.partitions, key=lambda p: int(p.id))
    ids = [int(p.id) for p in parts]
    leaders = {(name, int(p.id)): (int(p.leader.id) if p.leader is not None else -1) for p in parts}
    offsets, sizes = await asyncio.gather(
        _offsets(cluster, list(leaders)), _leader_sizes(cluster, leaders, {name: ids})
    )
    rows = [
        PartitionRow(
            id=int(p.id),
            leader=leaders[(name, int(p.id))],
            replicas=[int(n.id) for n in p.replicas],
            isr=[int(n.id) for n in p.isr],
            low=offsets[(name, int(p.id))][0] if (name, int(p.id)) in offsets else None,
            high=offsets[(name, int(p.id))][1] if (name, int(p.id)) in offsets else None,
            size=sizes.get((name, int(p.id))),
        )
        for p in parts
    ]
    topic_id = str(described.topic_id) if getattr(described, "topic_id", None) else None
    return TopicDetail(name, bool(described.is_internal), topic_id, rows)


async def topic_configs(cluster: ConsoleCluster, name: str) -> list[ConfigRow]:
    """DescribeConfigs(TOPIC ``name``): non-default configs first, each part by name."""
    return await describe_configs(cluster, ConfigResource(ResourceType.TOPIC, name))


async def describe_configs(cluster: ConsoleCluster, resource: ConfigResource) -> list[ConfigRow]:
    """DescribeConfigs of one resource (a topic, a broker): non-default configs first, each
    part by name; ``ActionFailed`` with the resource's error."""
    outcome = await _all(
        cluster,
        lambda: cluster.admin.describe_configs([resource], request_timeout=cluster.timeout_s),
    )
    entries = next(iter(outcome.values()))
    if isinstance(entries, KafkaError):
        raise _failed(entries)
    rows = [
        ConfigRow(
            name=e.name,
            value=e.value,
            source=ConfigSource(e.source).name,
            read_only=bool(e.is_read_only),
            sensitive=bool(e.is_sensitive),
        )
        for e in entries.values()
    ]
    return sorted(rows, key=lambda r: (not r.overridden, r.name))


async def topic_groups(
    cluster: ConsoleCluster, name: str, high: Mapping[int, int | None]
) -> list[GroupLag]:
    """The groups with committed offsets on topic ``name`` (ListGroups, then one
    OffsetFetch per group for this topic's partitions ``high``: partition -> high
    watermark), by group id."""
    if not high:
        return []
    listed = await cluster.result(
        cluster.admin.list_consumer_groups(request_timeout=cluster.timeout_s)
    )
    groups = sorted(g.group_id for g in listed.valid)
    if not groups:
        return []

    def fetch(group: str) -> Any:
        request = ConsumerGroupTopicPartitions(group, [TopicPartition(name, p) for p in high])
        futures = cluster.admin.list_consumer_group_offsets(
            [request], request_timeout=cluster.timeout_s
        )
        return _outcomes(futures, cluster.timeout_s)[group]

    answers = await asyncio.gather(*(cluster.run(fetch, g) for g in groups))
    out = []
    for group, answer in zip(groups, answers, strict=True):
        if isinstance(answer, KafkaError):
            continue
        committed = {
            int(tp.partition): int(tp.offset)
            for tp in answer.topic_partitions
            if tp.topic == name and int(tp.offset) >= 0 and tp.error is None
        }
        if not committed:
            continue
        out.append(GroupLag(group, dict(sorted(committed.items())), total_lag(committed, high)))
    return out


# -- actions ---------------------------------------------------------------------------------


async def _wait_for(cluster: ConsoleCluster, check: Callable[[], Any]) -> bool:
    """``await check()`` until truthy, for at most the console's timeout."""
    deadline = time.monotonic() + cluster.timeout_s
    while True:
        if await check():
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(_POLL_S)


async def partition_ids(cluster: ConsoleCluster, name: str) -> list[int]:
    """The topic's partition ids from DescribeTopics ([] when it does not exist)."""
    described = await _describe(cluster, name)
    return [] if described is None else sorted(int(p.id) for p in described.partitions)


async def _partition_count(cluster: ConsoleCluster, name: str) -> int | None:
    """Partitions with a leader in the metadata; None while the topic is unknown."""
    described = await _describe(cluster, name)
    if described is None:
        return None
    return sum(1 for p in described.partitions if p.leader is not None)


async def create_topic(
    cluster: ConsoleCluster,
    name: str,
    partitions: int,
    replication_factor: int,
    configs: Mapping[str, str],
) -> str:
    """CreateTopics, then wait until every partition has a leader."""
    topic = NewTopic(
        name,
        num_partitions=partitions,
        replication_factor=replication_factor,
        config=dict(configs),
    )
    outcome = await _all(
        cluster,
        lambda: cluster.admin.create_topics(
            [topic], operation_timeout=cluster.timeout_s, request_timeout=cluster.timeout_s
        ),
    )
    if outcome[name] is not None:
        raise _failed(outcome[name])

    async def ready() -> bool:
        return await _partition_count(cluster, name) == partitions

    shown = await _wait_for(cluster, ready)
    extra = f" and {len(configs)} config(s)" if configs else ""
    text = f"Created topic {name} with {partitions} partition(s), replication factor "
    text += f"{replication_factor}{extra}"
    return text if shown else text + " (not yet in every broker's metadata)"


async def delete_topic(cluster: ConsoleCluster, name: str) -> str:
    """DeleteTopics, then wait until the metadata no longer has it."""
    outcome = await _all(
        cluster,
        lambda: cluster.admin.delete_topics(
            [name], operation_timeout=cluster.timeout_s, request_timeout=cluster.timeout_s
        ),
    )
    if outcome[name] is not None:
        raise _failed(outcome[name])

    async def gone() -> bool:
        return await _describe(cluster, name) is None

    shown = await _wait_for(cluster, gone)
    return f"Deleted topic {name}" + ("" if shown else " (still in the metadata)")


async def add_partitions(cluster: ConsoleCluster, name: str, total: int) -> str:
    """CreatePartitions to ``total`` partitions, then wait until all have a leader."""
    before = await _partition_count(cluster, name)
    outcome = await _all(
        cluster,
        lambda: cluster.admin.create_partitions(
            [NewPartitions(name, total)],
            operation_timeout=cluster.timeout_s,
            request_timeout=cluster.timeout_s,
        ),
    )
    if outcome[name] is not None:
        raise _failed(outcome[name])

    async def ready() -> bool:
        return await _partition_count(cluster, name) == total

    shown = await _wait_for(cluster, ready)
    text = f"Topic {name} now has {total} partitions (was {before})"
    return text if shown else text + " (not yet in the metadata)"


async def delete_records(cluster: ConsoleCluster, name: str, before: Mapping[int, int]) -> str:
    """DeleteRecords up to ``before`` (partition -> offset, -1: the high watermark)."""
    tps = [TopicPartition(name, p, o) for p, o in sorted(before.items())]
    outcome = await _all(
        cluster,
        lambda: cluster.admin.delete_records(
            tps, operation_timeout=cluster.timeout_s, request_timeout=cluster.timeout_s
        ),
    )
    lows: dict[int, int] = {}
    for tp, result in outcome.items():
        if isinstance(result, KafkaError):
            failure = _failed(result)
            raise ActionFailed(failure.name, f"partition {tp.partition}: {failure.message}")
        lows[int(tp.partition)] = int(result.low_watermark)
    shown = ", ".join(f"{p}: {lows[p]}" for p in sorted(lows))
    return f"Deleted records of {name}; low watermark now {shown}"


async def alter_config(cluster: ConsoleCluster, name: str, key: str, value: str | None) -> str:
    """IncrementalAlterConfigs of one key: SET to ``value``, or DELETE (back to the
    default) when ``value`` is None."""
    op = AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
    entry = ConfigEntry(key, value, incremental_operation=op)
    resource = ConfigResource(ResourceType.TOPIC, name, incremental_configs=[entry])
    outcome = await _all(
        cluster,
        lambda: cluster.admin.incremental_alter_configs(
            [resource], request_timeout=cluster.timeout_s
        ),
    )
    result = next(iter(outcome.values()))
    if result is not None:
        raise _failed(result)
    if value is None:
        return f"Removed {key} from {name} (back to its default)"
    return f"Set {key}={value} on {name}"
