"""``franz.metrics.catalog`` names exactly what a broker's registry exports: a
``BrokerMetrics`` over fakes with something in every collector (a follower, a group with
committed offsets, a produced and fetched topic, a timed request, a flushed log, the
endpoint configured so that the loop's idle metrics exist) is scraped, and its sample names
are the catalog. A collector registered without its names in the catalog fails here, so the
dashboard test's list stays whole.

Every traffic sample appears in this unit test: the all-topics ``BrokerTopicMetrics`` and
``ReplicationBytes*`` samples, ``RequestQueueSize`` and ``LogFlushStats`` are exported from
the start; the per-topic samples once a topic has traffic; ``RequestMetrics`` once a request
was timed; ``kafka.log:type=Log`` per hosted log; the idle samples when ``metrics.listener``
is set (parsed here, never bound: ``render`` needs no socket). None needs a condition this
test cannot create, so none is left to the integration test alone."""

from __future__ import annotations

from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from franz.coordinator.group.model import GroupState
from franz.metrics import BrokerMetrics
from franz.metrics.catalog import EXPORTED_NAMES
from franz.metrics.traffic import LOG_FLUSH_STATS, BrokerTopicStats, RequestMetricsRegistry
from franz.metrics.traffic_collectors import TrafficSources
from franz.storage.files import TopicPartition
from tests.unit.metrics.test_collectors import (
    FakeController,
    FakeFetcherManager,
    FakeReplicaManager,
)
from tests.unit.metrics.test_groups import FakeCoordinator, _group
from tests.unit.metrics.test_replication import FakeFetcher, FakePartition, FakeState, _context
from tests.unit.metrics.test_transactions import FakeTxnCoordinator
from tests.unit.storage.test_log import TP, batch, make_log

#: sample name -> the label sets it has in the scrape.
SampleLabels = dict[str, list[dict[str, str]]]


def exported_samples(tmp_path: Path) -> SampleLabels:
    """A scrape of a broker with something in every collector (module docstring)."""
    manager = FakeReplicaManager({TopicPartition("t", 0): FakePartition(True, [1, 2], [1, 2], 1)})
    controller = FakeController(True, _context())
    fetchers = FakeFetcherManager(
        {(2, 0): FakeFetcher("ReplicaFetcherThread-0-2", {TopicPartition("u", 0): FakeState(1, 4)})}
    )
    coordinator = FakeCoordinator({"g": _group(GroupState.STABLE, 1, t_0=3)})
    topic_stats = BrokerTopicStats()
    topic_stats.appended(topic_stats.produce_request(TP.topic), 1000, 3)
    topic_stats.fetched(TP.topic, 0, 1000, follower=False)
    requests = RequestMetricsRegistry()
    requests.get("Produce").record(9, 0, 2_000_000, 1_000_000, 0)
    log = make_log(tmp_path)
    log.append_as_leader(batch(), leader_epoch=0)
    flushes = LOG_FLUSH_STATS.timer.count
    log.flush()
    assert LOG_FLUSH_STATS.timer.count == flushes + 1
    traffic = TrafficSources(
        topic_stats=lambda: topic_stats,
        request_metrics=lambda: requests,
        queue_size=lambda: 0,
        logs=lambda: {TP: log},
    )
    metrics = BrokerMetrics(
        1,
        "127.0.0.1:0",  # the endpoint on: the loop's idle metrics exist (not bound here)
        lambda: manager,
        lambda: controller,
        lambda: fetchers,
        group_coordinator=lambda: coordinator,
        high_watermark=lambda _topic, _partition: 10,
        txn_coordinator=lambda: FakeTxnCoordinator({"t1"}, set()),
        traffic=traffic,
    )
    try:
        body, _ = metrics.render()
    finally:
        log.close()
    samples: SampleLabels = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(dict(sample.labels))
    return samples


def test_the_catalog_is_what_a_broker_exports(tmp_path: Path) -> None:
    names = set(exported_samples(tmp_path))
    assert names == EXPORTED_NAMES, (sorted(names - EXPORTED_NAMES), sorted(EXPORTED_NAMES - names))


def test_the_traffic_samples_are_in_the_catalog(tmp_path: Path) -> None:
    samples = exported_samples(tmp_path)
    btm = "kafka_server_brokertopicmetrics_messagesin_total"
    assert {} in samples[btm] and {"topic": TP.topic} in samples[btm]  # all topics, per topic
    assert {"request": "Produce", "version": "9"} in samples[
        "kafka_network_requestmetrics_requests_total"
    ]
    assert {"request": "Produce", "quantile": "0.99"} in samples[
        "kafka_network_requestmetrics_totaltimems"
    ]
    assert samples["kafka_log_log_size"] == [{"topic": TP.topic, "partition": str(TP.partition)}]
    assert {
        "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count",
        "kafka_network_socketserver_networkprocessoravgidlepercent",
        "kafka_log_logflushstats_logflushrateandtimems_count",
    } <= EXPORTED_NAMES
