"""Franz's metrics, named as Kafka's: the Kafka MBeans users watch, exported on an HTTP
endpoint with the names the Prometheus JMX exporter's standard Kafka rules give them, so
Grafana dashboards made for Kafka work unchanged.

Modules: ``names`` (MBean -> Prometheus name, the JMX exporter's rules), ``replication``
(the replication gauges as Kafka computes them, pure), ``collectors`` (prometheus_client
collectors reading the broker's state at scrape time), ``groups`` (the group coordinator's
gauges and kafka_exporter's consumer lag), ``transactions`` (the transaction coordinator's
marker gauges), ``health`` (the ``/health`` readiness check),
``catalog`` (every exported name: what the shipped Grafana dashboard may query),
``broker_metrics`` (a broker's registry, the ``metrics.listener`` endpoint and the
under-replicated log line). The HTTP server itself is ``franz.network.http_endpoint``.

Exported so far (issue 17's replication metrics; the README's "Metrics" section lists the
Prometheus names): ``kafka.server:type=ReplicaManager`` LeaderCount, PartitionCount,
OfflineReplicaCount, UnderReplicatedPartitions, UnderMinIsrPartitionCount,
AtMinIsrPartitionCount, ReassigningPartitions, IsrExpandsPerSec, IsrShrinksPerSec,
FailedIsrUpdatesPerSec;
``kafka.controller:type=KafkaController`` ActiveControllerCount, OfflinePartitionsCount,
PreferredReplicaImbalanceCount, GlobalTopicCount, GlobalPartitionCount;
``kafka.controller:type=ControllerStats`` UncleanLeaderElectionsPerSec,
LeaderElectionRateAndTimeMs (count); ``kafka.server:type=ReplicaFetcherManager,name=MaxLag,
clientId=Replica``; ``kafka.server:type=FetcherLagMetrics,name=ConsumerLag`` per followed
partition; ``kafka.coordinator.group:type=GroupMetadataManager`` NumGroups, NumOffsets,
NumGroupsPreparingRebalance, NumGroupsCompletingRebalance, NumGroupsStable, NumGroupsDead,
NumGroupsEmpty; ``kafka.coordinator.transaction:type=TransactionMarkerChannelManager``
UnknownDestinationQueueSize, LogAppendRetryQueueSize; kafka_exporter's
``kafka_consumergroup_*`` (members, current offset, lag).
partition.

Issue 21's traffic metrics (``traffic``: the counts, kept where traffic happens;
``histogram``: Kafka's histograms over a sliding window; ``traffic_collectors``;
``exposition``: the text format written faster, the same bytes):
``kafka.server:type=BrokerTopicMetrics`` (all topics and per topic),
``kafka.network:type=RequestMetrics`` per request name, ``type=RequestChannel``
RequestQueueSize, ``type=SocketServer`` NetworkProcessorAvgIdlePercent,
``kafka.server:type=KafkaRequestHandlerPool`` RequestHandlerAvgIdlePercent,
``kafka.log:type=Log`` per partition and ``type=LogFlushStats``.
"""

from franz.metrics.broker_metrics import BrokerMetrics, parse_metrics_listener

__all__ = ["BrokerMetrics", "parse_metrics_listener"]
