"""Kafka MBeans named as the Prometheus JMX exporter's kafka-2_0_0.yml rules name them."""

from __future__ import annotations

import pytest

from franz.metrics.names import ExportedSample, MBean, exported_sample, safe_name


@pytest.mark.parametrize(
    ("bean", "attribute", "tags", "expected"),
    [
        (
            MBean("kafka.server", "ReplicaManager", "UnderReplicatedPartitions"),
            "Value",
            (),
            ExportedSample("kafka_server_replicamanager_underreplicatedpartitions", (), "gauge"),
        ),
        (
            MBean("kafka.server", "ReplicaManager", "IsrShrinksPerSec"),
            "Count",
            (),
            ExportedSample("kafka_server_replicamanager_isrshrinks_total", (), "counter"),
        ),
        (
            MBean("kafka.server", "ReplicaManager", "FailedIsrUpdatesPerSec"),
            "Count",
            (),
            ExportedSample("kafka_server_replicamanager_failedisrupdates_total", (), "counter"),
        ),
        (
            MBean("kafka.controller", "KafkaController", "ActiveControllerCount"),
            "Value",
            (),
            ExportedSample("kafka_controller_kafkacontroller_activecontrollercount", (), "gauge"),
        ),
        (
            MBean("kafka.controller", "ControllerStats", "UncleanLeaderElectionsPerSec"),
            "Count",
            (),
            ExportedSample(
                "kafka_controller_controllerstats_uncleanleaderelections_total", (), "counter"
            ),
        ),
        (
            MBean("kafka.controller", "ControllerStats", "LeaderElectionRateAndTimeMs"),
            "Count",
            (),
            ExportedSample(
                "kafka_controller_controllerstats_leaderelectionrateandtimems_count", (), "counter"
            ),
        ),
        (
            MBean("kafka.controller", "ControllerStats", "LeaderElectionRateAndTimeMs"),
            "99thPercentile",
            (),
            ExportedSample(
                "kafka_controller_controllerstats_leaderelectionrateandtimems",
                (("quantile", "0.99"),),
                "gauge",
            ),
        ),
        (
            MBean("kafka.server", "ReplicaFetcherManager", "MaxLag", ("clientId",)),
            "Value",
            ("Replica",),
            ExportedSample(
                "kafka_server_replicafetchermanager_maxlag", (("clientId", "Replica"),), "gauge"
            ),
        ),
        (
            MBean(
                "kafka.server",
                "FetcherLagMetrics",
                "ConsumerLag",
                ("clientId", "topic", "partition"),
            ),
            "Value",
            ("ReplicaFetcherThread-0-1", "orders.eu", "7"),
            ExportedSample(
                "kafka_server_fetcherlagmetrics_consumerlag",
                (
                    ("clientId", "ReplicaFetcherThread-0-1"),
                    ("topic", "orders.eu"),
                    ("partition", "7"),
                ),
                "gauge",
            ),
        ),
        # The shapes of the other rules (metrics Franz does not export yet).
        (
            MBean("kafka.server", "BrokerTopicMetrics", "BytesInPerSec", ("topic",)),
            "Count",
            ("orders",),
            ExportedSample(
                "kafka_server_brokertopicmetrics_bytesin_total", (("topic", "orders"),), "counter"
            ),
        ),
        (
            MBean("kafka.network", "RequestMetrics", "RequestsPerSec", ("request", "version")),
            "Count",
            ("Produce", "9"),
            ExportedSample(
                "kafka_network_requestmetrics_requests_total",
                (("request", "Produce"), ("version", "9")),
                "counter",
            ),
        ),
        (
            MBean(
                "kafka.server",
                "FetcherStats",
                "BytesPerSec",
                ("clientId", "brokerHost", "brokerPort"),
            ),
            "Value",
            ("ReplicaFetcherThread-0-2", "10.0.0.2", "9092"),
            ExportedSample(
                "kafka_server_fetcherstats_bytespersec",
                (("clientId", "ReplicaFetcherThread-0-2"), ("broker", "10.0.0.2:9092")),
                "gauge",
            ),
        ),
        (
            MBean("kafka.coordinator.group", "GroupMetadataManager", "NumGroups"),
            "Value",
            (),
            ExportedSample("kafka_coordinator_group_groupmetadatamanager_numgroups", (), "gauge"),
        ),
    ],
)
def test_exported_sample_follows_the_jmx_exporter_rules(
    bean: MBean, attribute: str, tags: tuple[str, ...], expected: ExportedSample
) -> None:
    assert exported_sample(bean, attribute, tags) == expected


def test_an_attribute_no_rule_matches_is_not_exported() -> None:
    bean = MBean("kafka.server", "ReplicaManager", "LeaderCount")
    assert exported_sample(bean, "MeanRate") is None


def test_object_name_is_kafkas() -> None:
    bean = MBean("kafka.server", "FetcherLagMetrics", "ConsumerLag", ("clientId", "topic"))
    assert bean.object_name(("Replica", "t")) == (
        "kafka.server:type=FetcherLagMetrics,name=ConsumerLag,clientId=Replica,topic=t"
    )
    assert bean.object_name() == (
        "kafka.server:type=FetcherLagMetrics,name=ConsumerLag,clientId=*,topic=*"
    )


def test_safe_name_replaces_and_collapses() -> None:
    assert safe_name("kafka_server_a-b__c.d") == "kafka_server_a_b_c_d"
