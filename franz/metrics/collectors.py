"""prometheus_client collectors of a broker's replication metrics, one per Kafka metrics
group: ``ReplicaManagerCollector`` (``kafka.server:type=ReplicaManager``),
``ControllerCollector`` (``kafka.controller:type=KafkaController`` and
``type=ControllerStats``), ``ReplicaFetcherCollector`` (``type=ReplicaFetcherManager`` and
``type=FetcherLagMetrics``).

Rules: gauges are computed when Prometheus scrapes (``collect``), from the state the event
loop owns (``franz.metrics.replication``), so nothing is maintained on the produce or fetch
path; counters are the counts of Kafka's meters, kept where the rare event happens (the
replica manager's ISR changes, the controller's elections) and only read here. Every sample
is named by the JMX exporter's rules (``franz.metrics.names``). ``collect`` runs on the
event loop (``franz.network.http_endpoint`` says why).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from franz.controller.context import ControllerContext
from franz.metrics.names import MBean, exported_sample
from franz.metrics.replication import (
    FetcherView,
    PartitionView,
    controller_gauges,
    follower_lags,
    replica_manager_gauges,
)
from franz.storage.files import TopicPartition

__all__ = [
    "ControllerCollector",
    "ControllerView",
    "KafkaMetric",
    "ReplicaFetcherCollector",
    "ReplicaFetcherManagerView",
    "ReplicaManagerCollector",
    "ReplicaManagerView",
    "family",
]


@dataclass(frozen=True, slots=True)
class KafkaMetric:
    """One exported attribute of a Kafka MBean: ``Value`` (gauge) or ``Count`` (meter,
    timer), with its help text."""

    bean: MBean
    attribute: str
    help: str


def _server(type_: str, name: str, attribute: str, help_: str, *tags: str) -> KafkaMetric:
    return KafkaMetric(MBean("kafka.server", type_, name, tags), attribute, help_)


def _controller(type_: str, name: str, attribute: str, help_: str) -> KafkaMetric:
    return KafkaMetric(MBean("kafka.controller", type_, name), attribute, help_)


_RM = "ReplicaManager"
LEADER_COUNT: Final = _server(_RM, "LeaderCount", "Value", "Partitions this broker leads")
PARTITION_COUNT: Final = _server(_RM, "PartitionCount", "Value", "Replicas this broker hosts")
OFFLINE_REPLICA_COUNT: Final = _server(
    _RM, "OfflineReplicaCount", "Value", "Replicas hosted on a failed log dir"
)
UNDER_REPLICATED: Final = _server(
    _RM,
    "UnderReplicatedPartitions",
    "Value",
    "Partitions this broker leads whose ISR is smaller than the replica set",
)
REASSIGNING: Final = _server(
    _RM,
    "ReassigningPartitions",
    "Value",
    "Partitions this broker leads whose replicas are being reassigned",
)
UNDER_MIN_ISR: Final = _server(
    _RM,
    "UnderMinIsrPartitionCount",
    "Value",
    "Partitions this broker leads whose ISR is below min.insync.replicas",
)
AT_MIN_ISR: Final = _server(
    _RM,
    "AtMinIsrPartitionCount",
    "Value",
    "Partitions this broker leads whose ISR is at min.insync.replicas",
)
ISR_EXPANDS: Final = _server(
    _RM, "IsrExpandsPerSec", "Count", "ISR expansions committed by the controller"
)
ISR_SHRINKS: Final = _server(
    _RM, "IsrShrinksPerSec", "Count", "ISR shrinks committed by the controller"
)
FAILED_ISR_UPDATES: Final = _server(
    _RM, "FailedIsrUpdatesPerSec", "Count", "ISR changes the controller refused or that failed"
)
_KC = "KafkaController"
ACTIVE_CONTROLLER_COUNT: Final = _controller(
    _KC, "ActiveControllerCount", "Value", "1 on the active controller, else 0"
)
OFFLINE_PARTITIONS: Final = _controller(
    _KC, "OfflinePartitionsCount", "Value", "Partitions without a live leader (controller only)"
)
PREFERRED_IMBALANCE: Final = _controller(
    _KC,
    "PreferredReplicaImbalanceCount",
    "Value",
    "Partitions not led by their preferred replica (controller only)",
)
GLOBAL_TOPIC_COUNT: Final = _controller(
    _KC, "GlobalTopicCount", "Value", "Topics in the cluster (controller only)"
)
GLOBAL_PARTITION_COUNT: Final = _controller(
    _KC, "GlobalPartitionCount", "Value", "Partitions with a leadership record (controller only)"
)
UNCLEAN_ELECTIONS: Final = _controller(
    "ControllerStats",
    "UncleanLeaderElectionsPerSec",
    "Count",
    "Leaders this broker's controller elected from outside the ISR",
)
LEADER_ELECTIONS: Final = _controller(
    "ControllerStats",
    "LeaderElectionRateAndTimeMs",
    "Count",
    "Broker changes (startups, failures) this broker's controller handled",
)
MAX_LAG: Final = _server(
    "ReplicaFetcherManager",
    "MaxLag",
    "Value",
    "The largest lag in messages of a partition this broker follows",
    "clientId",
)
CONSUMER_LAG: Final = _server(
    "FetcherLagMetrics",
    "ConsumerLag",
    "Value",
    "Messages this follower is behind its leader's high watermark",
    "clientId",
    "topic",
    "partition",
)


def family(metric: KafkaMetric, samples: Iterable[tuple[Sequence[str], float]]) -> Metric | None:
    """A prometheus_client family of ``metric``'s samples (``(tag values, value)``), named by
    the JMX exporter's rules; None with no sample (the exporter shows no bean then)."""
    result: Metric | None = None
    bean = metric.bean
    for tags, value in samples:
        exported = exported_sample(bean, metric.attribute, tuple(tags))
        if exported is None:
            raise ValueError(f"no JMX exporter rule names {bean.object_name(tags)}")
        if result is None:
            name, typ = exported.name, str(exported.type)
            if typ == "counter" and name.endswith("_total"):
                name = name[: -len("_total")]
            elif typ == "counter" and name.endswith("_count"):
                # The rules' emulated summary of a timer: its count, no _sum.
                name, typ = name[: -len("_count")], "summary"
            result = Metric(name, f"{metric.help} ({bean.object_name()} {metric.attribute})", typ)
        result.add_sample(exported.name, dict(exported.labels), value)
    return result


def _one(metric: KafkaMetric, value: float, tags: Sequence[str] = ()) -> Metric:
    result = family(metric, [(tags, value)])
    assert result is not None
    return result


class ReplicaManagerView(Protocol):
    """What the collectors read of ``franz.cluster.replica_manager.ReplicaManager``."""

    @property
    def partitions(self) -> Mapping[TopicPartition, PartitionView]: ...
    @property
    def isr_expands(self) -> int: ...
    @property
    def isr_shrinks(self) -> int: ...
    @property
    def failed_isr_updates(self) -> int: ...


class ReplicaFetcherManagerView(Protocol):
    @property
    def fetchers(self) -> Mapping[tuple[int, int], FetcherView]: ...


class ControllerView(Protocol):
    """The controller hosted by this broker (``Controller`` in cluster mode,
    ``LocalController`` in embedded mode)."""

    @property
    def is_active(self) -> bool: ...
    @property
    def ctx(self) -> ControllerContext: ...


class ReplicaManagerCollector(Collector):
    """``kafka.server:type=ReplicaManager``."""

    def __init__(self, replica_manager: Callable[[], ReplicaManagerView]) -> None:
        self.replica_manager = replica_manager

    def collect(self) -> Iterator[Metric]:
        manager = self.replica_manager()
        gauges = replica_manager_gauges(list(manager.partitions.values()))
        yield _one(LEADER_COUNT, gauges.leader_count)
        yield _one(PARTITION_COUNT, gauges.partition_count)
        yield _one(OFFLINE_REPLICA_COUNT, gauges.offline_replica_count)
        yield _one(UNDER_REPLICATED, gauges.under_replicated_partitions)
        yield _one(UNDER_MIN_ISR, gauges.under_min_isr_partition_count)
        yield _one(AT_MIN_ISR, gauges.at_min_isr_partition_count)
        yield _one(REASSIGNING, gauges.reassigning_partitions)
        yield _one(ISR_EXPANDS, manager.isr_expands)
        yield _one(ISR_SHRINKS, manager.isr_shrinks)
        yield _one(FAILED_ISR_UPDATES, manager.failed_isr_updates)


class ControllerCollector(Collector):
    """``kafka.controller:type=KafkaController`` and ``type=ControllerStats`` of the
    controller this broker hosts (None: none yet, every value 0)."""

    def __init__(self, controller: Callable[[], ControllerView | None]) -> None:
        self.controller = controller

    def collect(self) -> Iterator[Metric]:
        controller = self.controller()
        active = controller is not None and controller.is_active
        gauges = controller_gauges(controller.ctx if controller is not None and active else None)
        yield _one(ACTIVE_CONTROLLER_COUNT, gauges.active_controller_count)
        yield _one(OFFLINE_PARTITIONS, gauges.offline_partitions_count)
        yield _one(PREFERRED_IMBALANCE, gauges.preferred_replica_imbalance_count)
        yield _one(GLOBAL_TOPIC_COUNT, gauges.global_topic_count)
        yield _one(GLOBAL_PARTITION_COUNT, gauges.global_partition_count)
        # The embedded controller has one replica per partition: it never elects uncleanly
        # and sees no broker change; it keeps no such counts.
        unclean = getattr(controller, "unclean_leader_elections", 0)
        processed = getattr(controller, "processed", {})
        yield _one(UNCLEAN_ELECTIONS, unclean)
        yield _one(LEADER_ELECTIONS, processed.get("BrokerChange", 0))


class ReplicaFetcherCollector(Collector):
    """``kafka.server:type=ReplicaFetcherManager,name=MaxLag,clientId=Replica`` and
    ``type=FetcherLagMetrics,name=ConsumerLag`` per followed partition; MaxLag is 0 without
    fetchers (the embedded single node), as a Kafka broker with no follower shows it."""

    def __init__(self, fetcher_manager: Callable[[], ReplicaFetcherManagerView | None]) -> None:
        self.fetcher_manager = fetcher_manager

    def collect(self) -> Iterator[Metric]:
        manager = self.fetcher_manager()
        lags = follower_lags(list(manager.fetchers.values())) if manager is not None else []
        max_lag = max((lag.lag for lag in lags), default=0)
        yield _one(MAX_LAG, max_lag, ("Replica",))
        samples = [((lag.client_id, lag.topic, str(lag.partition)), lag.lag) for lag in lags]
        lag_family = family(CONSUMER_LAG, samples)
        if lag_family is not None:
            yield lag_family
