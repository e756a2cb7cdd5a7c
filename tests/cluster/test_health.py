"""``GET /health`` (the readiness check on ``metrics.listener``) on three ``franz broker``
processes with a real ZooKeeper: every broker is up once the cluster settles; a broker that
restarts behind its leader (a replication throttle on it keeps the catch-up long enough to
watch) answers 503 naming ``caught_up`` and the partition until its leader takes it back
into the ISR, then 200; a SIGSTOPped broker does not answer at all, and once resumed
(its ZooKeeper session expired meanwhile, a backlog and a throttle behind it) answers 503
(``registered`` until it registers again, ``caught_up`` until back in the ISR), then 200,
while the others stay up throughout."""

from __future__ import annotations

import json
import os
import signal
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from tests.support.cluster import Cluster, eventually, new_chroot, start_cluster
from tests.support.metrics import metrics_url
from tests.support.zookeeper import ZooKeeperServer

pytestmark = pytest.mark.timeout(300)

TOPIC = "healthy"
VALUE = b"v" * 10_000
BACKLOG = 3_000_000
RATE = 250_000  # bytes/s: a catch-up of ~12 s


@pytest.fixture
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("health"))
    props = {"metrics.listener": "http://127.0.0.1:0", "replica.lag.time.max.ms": "2000"}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def health(cluster: Cluster, broker_id: int, timeout: float = 5.0) -> tuple[int, dict[str, Any]]:
    url = metrics_url(cluster.brokers[broker_id])
    assert url is not None
    try:
        with urllib.request.urlopen(url.replace("/metrics", "/health"), timeout=timeout) as r:
            assert r.headers["Content-Type"] == "application/json"
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())


def isr(cluster: Cluster) -> list[int]:
    return list(cluster.json(f"/brokers/topics/{TOPIC}/partitions/0/state")["isr"])


def alter(cluster: Cluster, kind: str, name: str, sets: dict[str, str]) -> None:
    entries = [
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in sets.items()
    ]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    for future in admin.incremental_alter_configs(
        [ConfigResource(kind, name, incremental_configs=entries)]
    ).values():
        future.result(30)


def produce(cluster: Cluster, size: int, acks: str = "all") -> None:
    producer = Producer({"bootstrap.servers": cluster.bootstrap(), "acks": acks, "linger.ms": 20})
    errors: list[str] = []
    for _ in range(size // len(VALUE)):
        while True:
            try:
                producer.produce(
                    TOPIC,
                    VALUE,
                    partition=0,
                    on_delivery=lambda e, _m: errors.append(str(e)) if e else None,
                )
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    assert errors == []


def all_up(cluster: Cluster, ids: tuple[int, ...] = (1, 2, 3)) -> bool:
    return all(health(cluster, b)[0] == 200 for b in ids)


def test_health_follows_registration_and_catch_up(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    topic = NewTopic(TOPIC, 1, replica_assignment=[[1, 2, 3]])
    admin.create_topics([topic], operation_timeout=30)[TOPIC].result(60)
    eventually(lambda: isr(cluster) == [1, 2, 3], 60, "the ISR complete")
    eventually(lambda: all_up(cluster), 60, "every broker up")
    status, report = health(cluster, 2)
    assert status == 200
    assert report["status"] == "UP" and report["failing"] == [] and report["broker_id"] == 2
    registered = report["checks"]["registered"]
    assert registered["ok"] is True and registered["detail"].startswith("/brokers/ids/2, ")
    assert report["checks"]["serving"] == {"ok": True, "listeners": {"PLAINTEXT": True}}

    # -- restarted behind its leader: 503 (caught_up) until back in the ISR, then 200 --
    alter(cluster, "BROKER", "3", {"follower.replication.throttled.rate": str(RATE)})
    assert cluster.brokers[3].stop() == 0
    eventually(lambda: 3 not in isr(cluster), 30, "broker 3 leaves the ISR")
    produce(cluster, BACKLOG)
    alter(cluster, "TOPIC", TOPIC, {"follower.replication.throttled.replicas": "0:3"})
    cluster.brokers[3].start()
    seen: list[tuple[int, list[str], list[str]]] = []

    def caught_up() -> bool:
        status, report = health(cluster, 3)
        seen.append((status, report["failing"], report["checks"]["caught_up"]["partitions"]))
        return status == 200

    took = eventually(caught_up, 120, "broker 3 up again")
    assert 3 in isr(cluster)
    assert (503, ["caught_up"], [f"{TOPIC}-0"]) in seen, seen
    assert all(status == 503 for status, _, _ in seen[:-1]) and seen[-1][0] == 200, seen
    assert took >= 2.0, f"caught up in {took:.1f} s: the throttle did not hold the catch-up"
    assert all_up(cluster, (1, 2))


def test_health_of_a_sigstopped_broker(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    topic = NewTopic(TOPIC, 1, replica_assignment=[[1, 2, 3]])
    admin.create_topics([topic], operation_timeout=30)[TOPIC].result(60)
    eventually(lambda: isr(cluster) == [1, 2, 3], 60, "the ISR complete")
    eventually(lambda: all_up(cluster), 60, "every broker up")

    # A throttle on broker 2 keeps its catch-up after the pause long enough to watch.
    alter(cluster, "BROKER", "2", {"follower.replication.throttled.rate": str(RATE)})
    alter(cluster, "TOPIC", TOPIC, {"follower.replication.throttled.replicas": "0:2"})
    pid = cluster.brokers[2].pid
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises((TimeoutError, urllib.error.URLError)):
            health(cluster, 2, timeout=2.0)
        produce(cluster, BACKLOG, acks="1")  # the leader drops 2 from the ISR after 2 s
        eventually(lambda: 2 not in isr(cluster), 30, "broker 2 leaves the ISR")
        # Its ZooKeeper session expires (4 s): the registration is gone.
        eventually(
            lambda: cluster.kazoo.exists("/brokers/ids/2") is None, 30, "broker 2's session ends"
        )
        assert all_up(cluster, (1, 3))
    finally:
        os.kill(pid, signal.SIGCONT)
    seen: list[tuple[int, list[str]]] = []

    def up() -> bool:
        status, report = health(cluster, 2)
        seen.append((status, report["failing"]))
        # The first answers after the pause may still come from the state before it (the
        # broker has not yet learnt that its session expired): up means up and true.
        return (
            status == 200
            and cluster.kazoo.exists("/brokers/ids/2") is not None
            and 2 in isr(cluster)
        )

    eventually(up, 120, "broker 2 up again")
    assert (503, ["caught_up"]) in seen, seen
    # What it waited for was its registration or its catch-up, never the listeners.
    for status, failing in seen:
        assert status == 200 or set(failing) <= {"registered", "caught_up"}, seen
    assert all_up(cluster)
