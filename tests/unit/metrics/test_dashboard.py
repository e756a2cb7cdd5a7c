"""The shipped Grafana dashboard (``deploy/grafana/franz-kafka.json``): a Grafana 10+
dashboard on a Prometheus data source variable whose every query selects metric names
Franz exports (``franz.metrics.catalog``) with labels they have (a broker's scrape), never
counts a BrokerTopicMetrics meter twice, and covers what issue 21 asks a dashboard to show."""

from __future__ import annotations

from pathlib import Path

from franz.metrics.catalog import EXPORTED_NAMES
from franz.metrics.names import MBean, exported_sample
from franz.metrics.traffic_collectors import TOPIC_METERS
from tests.support.dashboard import (
    expressions,
    load,
    metric_names,
    selectors,
    unmatched_selectors,
)
from tests.unit.metrics.test_catalog import exported_samples


def _name(domain: str, type_: str, name: str, attribute: str, **tags: str) -> str:
    sample = exported_sample(
        MBean(domain, type_, name, tuple(tags)), attribute, tuple(tags.values())
    )
    assert sample is not None
    return sample.name


def dashboard_names() -> set[str]:
    return {name for expr in expressions(load()) for name in metric_names(expr)}


def test_every_name_the_dashboard_queries_is_exported() -> None:
    unknown = dashboard_names() - EXPORTED_NAMES
    assert not unknown, f"the dashboard queries names Franz does not export: {sorted(unknown)}"


def test_every_selector_selects_samples_a_broker_exports(tmp_path: Path) -> None:
    """Names and labels: each selector of the dashboard (its variables on "All") selects
    samples of the scrape ``test_catalog`` takes of a broker with something in every
    collector (``{request, quantile="0.99"}``, ``{topic!=""}``, ``{topic=""}``...)."""
    samples = exported_samples(tmp_path)
    assert not unmatched_selectors(expressions(load()), samples)


def test_a_selector_that_selects_nothing_is_reported() -> None:
    samples = {"kafka_x": [{"topic": "t"}], "kafka_y": [{}]}
    exprs = [
        'sum(kafka_x{instance=~"$instance",topic=~"$topic"})',
        'kafka_x{topic=""}',  # only the per-topic series exists
        'kafka_y{quantile="0.99"}',
        "kafka_z",
    ]
    assert unmatched_selectors(exprs, samples) == [
        'kafka_x{topic=""}',
        'kafka_y{quantile="0.99"}',
        "kafka_z{}",
    ]


#: BrokerTopicMetrics names exported both for all topics (no label) and per topic.
PER_TOPIC_METERS = frozenset(
    _name("kafka.server", "BrokerTopicMetrics", name, "Count", topic="t")
    for _, name, _ in TOPIC_METERS
)


def test_brokertopicmetrics_are_never_counted_twice() -> None:
    """The all-topics series (no ``topic`` label) holds the sum of the per-topic ones, and
    ``topic=~"$topic"`` on "All" (``.*``) matches it too: every selector of a meter exported
    both ways picks one kind, per topic (``topic!=""``) or all topics (``topic=""``), and the
    totals use the all-topics series."""
    kinds = set()
    for expr in expressions(load()):
        if expr.startswith("label_values("):
            continue  # the topic variable's values: series with a topic label only
        for name, matchers in selectors(expr):
            if name not in PER_TOPIC_METERS:
                continue
            per_topic = ("topic", "!=", "") in matchers
            all_topics = ("topic", "=", "") in matchers
            assert per_topic != all_topics, expr
            if per_topic:
                assert "by (topic)" in expr, expr
            kinds.add("per topic" if per_topic else "all topics")
    assert kinds == {"per topic", "all topics"}


def test_the_dashboard_shows_what_issue_21_asks() -> None:
    names = dashboard_names()
    wanted = {
        "kafka_server_brokertopicmetrics_messagesin_total",
        "kafka_server_brokertopicmetrics_bytesin_total",
        "kafka_server_brokertopicmetrics_bytesout_total",
        "kafka_network_requestmetrics_requests_total",
        "kafka_network_requestmetrics_totaltimems",
        "kafka_server_replicamanager_underreplicatedpartitions",
        "kafka_controller_kafkacontroller_offlinepartitionscount",
        "kafka_server_replicamanager_underminisrpartitioncount",
        "kafka_server_replicamanager_isrshrinks_total",
        "kafka_server_replicamanager_isrexpands_total",
        "kafka_controller_kafkacontroller_activecontrollercount",
        "kafka_server_replicamanager_leadercount",
        "kafka_server_replicamanager_partitioncount",
        "kafka_log_log_size",
        "kafka_consumergroup_lag",
        "kafka_coordinator_group_groupmetadatamanager_numgroups",
    }
    assert wanted <= names, sorted(wanted - names)
    exprs = expressions(load())
    assert any('quantile="0.99"' in e and "totaltimems" in e for e in exprs)


def test_it_is_a_grafana_10_dashboard_on_a_prometheus_datasource_variable() -> None:
    dashboard = load()
    assert dashboard["schemaVersion"] >= 38  # Grafana 10.0
    assert dashboard["uid"] and dashboard["title"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    ids = []
    for panel in dashboard["panels"]:
        ids.append(panel["id"])
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == "${datasource}"
            assert target["expr"].strip()
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24
    assert len(ids) == len(set(ids))
    for name in ("instance", "topic", "consumergroup"):
        assert variables[name]["datasource"]["uid"] == "${datasource}"


def test_metric_names_parses_promql() -> None:
    expr = (
        'sum by (topic) (rate(kafka_a_total{instance=~"$instance",topic!="x{y}"}'
        "[$__rate_interval]))"
        " / on (topic) group_left max without (partition) (kafka_b)"
    )
    assert metric_names(expr) == {"kafka_a_total", "kafka_b"}
    assert metric_names("label_values(kafka_c, consumergroup)") == {"kafka_c"}
