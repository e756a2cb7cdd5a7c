"""The metrics endpoint (``metrics.listener``) of an embedded single-node broker process: off
by default (the broker listens on its Kafka port only), on when set (Prometheus' text format,
Kafka's names as the JMX exporter gives them, the embedded controller's counts), and bad
requests answered without disturbing the endpoint or the broker."""

from __future__ import annotations

import re
import socket
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.broker import BrokerProcess
from tests.support.clients import create_topic
from tests.support.metrics import listening_ports, metrics_url, scrape, value

RM = "kafka_server_replicamanager_"
KC = "kafka_controller_kafkacontroller_"


def test_the_endpoint_is_off_by_default(broker: BrokerProcess) -> None:
    assert metrics_url(broker) is None
    assert "metrics http" not in broker.output()
    assert listening_ports(broker.pid) == {broker.port}


def _raw(url: str, data: bytes) -> bytes:
    host, port = url.split("//")[1].split("/")[0].rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_the_endpoint_serves_kafkas_names(
    broker_factory: type[BrokerProcess], tmp_path: Path
) -> None:
    broker = broker_factory(tmp_path / "b", {"metrics.listener": "http://127.0.0.1:0"}).start()
    url = metrics_url(broker)
    assert url is not None and url.startswith("http://127.0.0.1:")
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    assert port != broker.port
    assert listening_ports(broker.pid) == {broker.port, port}

    before = scrape(url)
    assert value(before, RM + "leadercount") == 0
    assert value(before, KC + "activecontrollercount") == 1  # the embedded controller
    create_topic(broker.bootstrap, "metered", partitions=3)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for i in range(30):
        producer.produce("metered", f"record {i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0

    samples = scrape(url)
    expected = {
        RM + "leadercount": 3,
        RM + "partitioncount": 3,
        RM + "offlinereplicacount": 0,
        RM + "underreplicatedpartitions": 0,
        RM + "underminisrpartitioncount": 0,
        RM + "atminisrpartitioncount": 3,  # RF=1: the ISR is the effective min ISR
        RM + "isrexpands_total": 0,
        RM + "isrshrinks_total": 0,
        RM + "failedisrupdates_total": 0,
        KC + "activecontrollercount": 1,
        KC + "offlinepartitionscount": 0,
        KC + "preferredreplicaimbalancecount": 0,
        KC + "globaltopiccount": 1,
        KC + "globalpartitioncount": 3,
        "kafka_controller_controllerstats_uncleanleaderelections_total": 0,
        "kafka_controller_controllerstats_leaderelectionrateandtimems_count": 0,
    }
    assert {name: value(samples, name) for name in expected} == expected
    maxlag = "kafka_server_replicafetchermanager_maxlag"
    assert samples[maxlag] == {(("clientId", "Replica"),): 0}
    assert "kafka_server_fetcherlagmetrics_consumerlag" not in samples  # no follower

    # Bad input: another path, another method, garbage, a half request; the endpoint and the
    # broker go on.
    with pytest.raises(urllib.error.HTTPError) as not_found:
        urllib.request.urlopen(url.replace("/metrics", "/nothing"), timeout=10)
    assert not_found.value.code == 404
    not_found.value.close()
    post = urllib.request.Request(url, data=b"x=1", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(post, timeout=10)
    assert refused.value.code == 405
    assert refused.value.headers["Allow"] == "GET, HEAD"
    refused.value.close()
    assert _raw(url, b"\x16\x03\x01\x00\xa5garbage\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    head = _raw(url, b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK") and head.endswith(b"\r\n\r\n")
    with socket.create_connection(("127.0.0.1", port), timeout=10) as half:
        half.sendall(b"GET /metr")
    producer.produce("metered", b"after", partition=0)
    assert producer.flush(30) == 0
    assert value(scrape(url), RM + "leadercount") == 3
    assert broker.proc is not None and broker.proc.poll() is None


def test_a_bad_metrics_listener_stops_the_start(tmp_path: Path) -> None:
    broker = BrokerProcess(tmp_path / "b", {"metrics.listener": "https://127.0.0.1:0"})
    with pytest.raises(RuntimeError, match=re.escape("metrics.listener=https://127.0.0.1:0")):
        broker.start(timeout=30)
    broker.stop()
