"""``metrics.listener`` parsing, the endpoint's routing and formats, the under-replicated
log line's rate limit."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from franz.errors import InvalidConfigurationError
from franz.metrics.broker_metrics import (
    BrokerMetrics,
    UnderReplicatedLog,
    parse_metrics_listener,
)
from franz.network.http_endpoint import HttpRequestHead
from franz.storage.files import TopicPartition
from tests.unit.metrics.test_collectors import FakeReplicaManager
from tests.unit.metrics.test_replication import FakePartition


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://127.0.0.1:9404", ("127.0.0.1", 9404)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("HTTP://localhost:9404/metrics", ("localhost", 9404)),
        ("http://0.0.0.0:9404/", ("0.0.0.0", 9404)),
        ("9404", ("127.0.0.1", 9404)),
        (":9404", ("127.0.0.1", 9404)),
        (" http://[::1]:9404 ", ("::1", 9404)),
    ],
)
def test_parse_metrics_listener(text: str, expected: tuple[str, int]) -> None:
    assert parse_metrics_listener(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "https://127.0.0.1:9404",
        "PLAINTEXT://127.0.0.1:9404",
        "127.0.0.1",
        "127.0.0.1:port",
        "127.0.0.1:70000",
        "http://127.0.0.1:9404/other",
        "::1:9404",
        "",
    ],
)
def test_bad_metrics_listener_names_the_key(text: str) -> None:
    with pytest.raises(InvalidConfigurationError, match=r"metrics\.listener"):
        parse_metrics_listener(text)


def test_under_replicated_log_on_change_at_most_once_per_interval() -> None:
    urp = UnderReplicatedLog(2, min_interval_s=30)
    assert urp.observe(0, 0.0) is None  # 0 at start: nothing to say
    assert urp.observe(3, 5.0) == "broker 2 leads 3 under-replicated partition(s) (was 0)"
    assert urp.observe(3, 10.0) is None
    assert urp.observe(0, 20.0) is None  # changed, but too soon after the last line
    assert urp.observe(0, 35.0) == "broker 2 leads 0 under-replicated partition(s) (was 3)"
    assert urp.observe(1, 50.0) is None
    assert urp.observe(0, 70.0) is None  # back to the logged value: nothing to say


def _metrics(partitions: dict[TopicPartition, FakePartition]) -> BrokerMetrics:
    manager = FakeReplicaManager(partitions)
    return BrokerMetrics(1, None, lambda: manager, lambda: None, lambda: None)


def _get(path: str, method: str = "GET", accept: str = "") -> HttpRequestHead:
    headers = {"accept": accept} if accept else {}
    return HttpRequestHead(method, path, "HTTP/1.1", headers)


def test_routes_and_formats() -> None:
    metrics = _metrics({TopicPartition("t", 0): FakePartition(True, [1, 2], [1])})
    assert metrics.address is None and metrics.url is None  # off unless set
    assert metrics.under_replicated_count() == 1
    response = metrics.handle(_get("/metrics"))
    assert response.status == 200
    assert response.content_type.startswith("text/plain; version=0.0.4")
    families = {f.name: f for f in text_string_to_metric_families(response.body.decode())}
    urp = families["kafka_server_replicamanager_underreplicatedpartitions"]
    assert [s.value for s in urp.samples] == [1]
    openmetrics = metrics.handle(
        _get("/metrics", accept="application/openmetrics-text; version=1.0.0")
    )
    assert openmetrics.content_type.startswith("application/openmetrics-text")
    assert openmetrics.body.endswith(b"# EOF\n")
    assert metrics.handle(_get("/")).status == 404
    assert metrics.handle(_get("/metrics/x")).status == 404
    refused = metrics.handle(_get("/metrics", method="POST"))
    assert refused.status == 405 and ("Allow", "GET, HEAD") in refused.headers
    assert metrics.handle(_get("/metrics", method="HEAD")).status == 200


def test_registries_are_per_broker() -> None:
    one = _metrics({TopicPartition("t", 0): FakePartition(True, [1], [1])})
    two = _metrics({})
    assert one.registry is not two.registry
    assert b"kafka_server_replicamanager_leadercount 1.0" in one.render()[0]
    assert b"kafka_server_replicamanager_leadercount 0.0" in two.render()[0]
