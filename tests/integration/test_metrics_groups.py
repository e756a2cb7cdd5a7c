"""Group coordinator metrics, consumer lag and ``/health`` on an embedded broker process:
a confluent-kafka consumer group reads part of a topic and commits; the scrape's
``GroupMetadataManager`` counts and kafka_exporter's lag samples are checked against the
group's state and against the LAG column ``franz consumer-groups --describe`` prints; the
shipped Grafana dashboard's names, the traffic ones included, are in the scrape with the
labels its selectors ask for; ``/health`` answers UP."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path

from confluent_kafka import Consumer, Producer

from franz.metrics.catalog import EXPORTED_NAMES
from tests.support.broker import BrokerProcess
from tests.support.clients import consumer_groups_describe, create_topic
from tests.support.dashboard import expressions, load, metric_names, unmatched_selectors
from tests.support.metrics import Samples, metrics_url, scrape, value

TOPIC = "lagged"
PARTITIONS = 3
PER_PARTITION = 20
CONSUMED = 25
GROUP = "lag-group"
GMM = "kafka_coordinator_group_groupmetadatamanager_"
BTM = "kafka_server_brokertopicmetrics_"
STATES = ("preparingrebalance", "completingrebalance", "stable", "dead", "empty")


def describe_lags(bootstrap: str) -> dict[int, tuple[int, int]]:
    """partition -> (CURRENT-OFFSET, LAG) as ``franz consumer-groups --describe`` prints
    (partitions without a committed offset, printed ``-``, left out)."""
    return {
        int(row["PARTITION"]): (int(row["CURRENT-OFFSET"]), int(row["LAG"]))
        for row in consumer_groups_describe(bootstrap, GROUP)
        if row["TOPIC"] == TOPIC and row["CURRENT-OFFSET"] != "-"
    }


def group_samples(samples: Samples, name: str) -> dict[int, float]:
    """partition -> value of a per-partition kafka_exporter sample of GROUP on TOPIC."""
    found = {}
    for labels, v in samples.get(name, {}).items():
        label = dict(labels)
        assert set(label) == {"consumergroup", "topic", "partition"}, label
        if label["consumergroup"] == GROUP and label["topic"] == TOPIC:
            found[int(label["partition"])] = v
    return found


def state_counts(samples: Samples) -> dict[str, float]:
    return {state: value(samples, f"{GMM}numgroups{state}") for state in STATES}


def get(url: str, method: str = "GET") -> tuple[int, bytes]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.read()


def test_group_counts_and_lag_match_consumer_groups_describe(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker = broker_factory(
        tmp_path / "b",
        {"metrics.listener": "http://127.0.0.1:0", "group.initial.rebalance.delay.ms": "0"},
    ).start()
    url = metrics_url(broker)
    assert url is not None
    before = scrape(url)
    assert value(before, GMM + "numgroups") == 0
    assert value(before, GMM + "numoffsets") == 0
    assert "kafka_consumergroup_lag" not in before

    create_topic(broker.bootstrap, TOPIC, partitions=PARTITIONS)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for i in range(PARTITIONS * PER_PARTITION):
        producer.produce(TOPIC, f"record {i}".encode(), partition=i % PARTITIONS)
    assert producer.flush(30) == 0

    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.subscribe([TOPIC])
        taken = 0
        for _ in range(300):
            if taken >= CONSUMED:
                break
            message = consumer.poll(0.5)
            if message is None or message.error():
                continue
            taken += 1
            consumer.commit(message=message, asynchronous=False)
        assert taken >= CONSUMED

        samples = scrape(url)
        described = describe_lags(broker.bootstrap)
        assert described, "nothing committed"
        lags = group_samples(samples, "kafka_consumergroup_lag")
        current = group_samples(samples, "kafka_consumergroup_current_offset")
        assert lags == {p: lag for p, (_, lag) in described.items()}
        assert current == {p: offset for p, (offset, _) in described.items()}
        # Each partition's high watermark is PER_PARTITION.
        assert lags == {p: PER_PARTITION - offset for p, offset in current.items()}
        assert value(
            samples, "kafka_consumergroup_lag_sum", {"consumergroup": GROUP, "topic": TOPIC}
        ) == sum(lags.values())
        assert value(
            samples,
            "kafka_consumergroup_current_offset_sum",
            {"consumergroup": GROUP, "topic": TOPIC},
        ) == sum(current.values())
        assert value(samples, "kafka_consumergroup_members", {"consumergroup": GROUP}) == 1
        assert value(samples, GMM + "numgroups") == 1
        assert value(samples, GMM + "numoffsets") == len(described)
        assert state_counts(samples) == {s: 1 if s == "stable" else 0 for s in STATES}
        # Every name the shipped dashboard queries is exported and in this real scrape,
        # taken after a produce, a consume and requests (so the traffic names are too), and
        # every selector selects samples of it: names and labels (quantile="0.99",
        # {request,version}, per topic topic!="", all topics topic="", {topic,partition}).
        exprs = expressions(load())
        queried = {name for expr in exprs for name in metric_names(expr)}
        assert queried <= EXPORTED_NAMES, sorted(queried - EXPORTED_NAMES)
        assert queried <= set(samples), sorted(queried - set(samples))
        scraped = {name: [dict(labels) for labels in by] for name, by in samples.items()}
        assert not unmatched_selectors(exprs, scraped)
        produced = PARTITIONS * PER_PARTITION
        assert value(samples, BTM + "messagesin_total", {"topic": TOPIC}) == produced
        assert value(samples, BTM + "messagesin_total") >= produced  # + __consumer_offsets
        assert value(samples, BTM + "bytesout_total", {"topic": TOPIC}) > 0
        produce_versions = [
            dict(labels)["version"]
            for labels in samples["kafka_network_requestmetrics_requests_total"]
            if dict(labels)["request"] == "Produce"
        ]
        assert produce_versions, "no Produce in RequestsPerSec"
        assert (
            value(
                samples,
                "kafka_network_requestmetrics_totaltimems_count",
                {"request": "Produce"},
            )
            >= 1
        )
        for partition in range(PARTITIONS):
            assert (
                value(samples, "kafka_log_log_size", {"topic": TOPIC, "partition": str(partition)})
                > 0
            )
        # And every name the catalog lists, but the follower lag (no follower here).
        missing = EXPORTED_NAMES - {"kafka_server_fetcherlagmetrics_consumerlag"} - set(samples)
        assert not missing, sorted(missing)
        txn = "kafka_coordinator_transaction_transactionmarkerchannelmanager_"
        assert value(samples, txn + "unknowndestinationqueuesize") == 0
        assert value(samples, txn + "logappendretryqueuesize") == 0
    finally:
        consumer.close()

    # The member left: the group is Empty, its offsets (and so its lag) remain.
    after = scrape(url)
    assert state_counts(after) == {s: 1 if s == "empty" else 0 for s in STATES}
    assert value(after, "kafka_consumergroup_members", {"consumergroup": GROUP}) == 0
    assert group_samples(after, "kafka_consumergroup_lag") == lags
    assert describe_lags(broker.bootstrap) == described


def test_health_is_up_on_a_started_embedded_broker(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker = broker_factory(tmp_path / "b", {"metrics.listener": "127.0.0.1:0"}).start()
    url = metrics_url(broker)
    assert url is not None
    health = url.replace("/metrics", "/health")
    status, body = get(health)
    assert status == 200, body
    report = json.loads(body)
    assert report["status"] == "UP" and report["failing"] == []
    assert report["broker_id"] == 0
    assert report["checks"]["registered"] == {"ok": True, "detail": "embedded, started"}
    assert report["checks"]["caught_up"]["ok"] is True
    assert report["checks"]["serving"] == {"ok": True, "listeners": {"PLAINTEXT": True}}
    assert get(health, "HEAD") == (200, b"")
    assert get(health, "POST")[0] == 405
