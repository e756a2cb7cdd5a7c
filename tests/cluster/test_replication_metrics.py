"""Replication metrics (issue 17 item 7; issue 21's "a stopped broker shows up as
under-replicated partitions on the others") scraped over HTTP from three ``franz broker``
processes with ``metrics.listener`` set, checked against the cluster state in ZooKeeper.

The killed broker's ISR membership is taken away by its leaders once records arrive that it
does not fetch (as in Kafka, a follower that had everything stays caught up on an idle
partition): ``replica.lag.time.max.ms`` is 2 s, shorter than the ZooKeeper session (10 s,
the most the test server's ``tickTime`` of 500 ms grants). Those leader-side shrinks are what
Kafka counts in IsrShrinksPerSec. When the session expires the controller moves the dead
broker's leaderships; when it comes back its leaders add it to the ISR again
(IsrExpandsPerSec).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.cluster import Cluster, eventually, new_chroot, produce_all, start_cluster
from tests.support.metrics import Samples, metrics_url, scrape, value
from tests.support.zookeeper import ZooKeeperServer

TOPIC = "metered"
PARTITIONS = 6
LAG_MS = 2000
SESSION_MS = 10000
RM = "kafka_server_replicamanager_"
KC = "kafka_controller_kafkacontroller_"
LAG = "kafka_server_fetcherlagmetrics_consumerlag"
MAX_LAG = "kafka_server_replicafetchermanager_maxlag"


@pytest.fixture
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("replication-metrics"))
    props = {
        "metrics.listener": "http://127.0.0.1:0",
        "replica.lag.time.max.ms": str(LAG_MS),
        "zookeeper.session.timeout.ms": str(SESSION_MS),
    }
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def partition_states(cluster: Cluster) -> dict[int, dict[str, Any]]:
    return {
        p: cluster.json(f"/brokers/topics/{TOPIC}/partitions/{p}/state") for p in range(PARTITIONS)
    }


def scrape_live(cluster: Cluster) -> dict[int, Samples]:
    scraped = {}
    for broker_id, broker in cluster.brokers.items():
        if broker.proc is not None:
            url = metrics_url(broker)
            assert url is not None, broker.output()
            scraped[broker_id] = scrape(url)
    return scraped


def counts(scraped: dict[int, Samples], name: str) -> dict[int, float]:
    return {broker_id: value(samples, name) for broker_id, samples in scraped.items()}


def led_by(states: dict[int, dict[str, Any]]) -> dict[int, int]:
    """Broker id -> partitions it leads per ZooKeeper."""
    led: dict[int, int] = {}
    for state in states.values():
        led[state["leader"]] = led.get(state["leader"], 0) + 1
    return led


def produce_acks_1(bootstrap: str, partitions: list[int]) -> None:
    """One record to each of ``partitions``, acks=1 (not waiting for the dead follower)."""
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "1"})
    for p in partitions:
        producer.produce(
            TOPIC,
            b"after",
            partition=p,
            on_delivery=lambda e, _m: errors.append(str(e)) if e else None,
        )
    assert producer.flush(60) == 0
    assert errors == []


def waiting_for(check: Any, timeout_s: float, what: str) -> None:
    """``eventually`` with a scrape that may fail while a broker starts or stops."""
    last: list[str] = []

    def attempt() -> bool:
        try:
            return bool(check())
        except (OSError, KeyError, AssertionError) as exc:
            last[:] = [repr(exc)]
            return False

    try:
        eventually(attempt, timeout_s, what)
    except AssertionError as exc:
        raise AssertionError(f"{exc}; last error: {last}") from None


def test_a_stopped_broker_shows_up_as_under_replicated_partitions(cluster: Cluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, replication_factor=3)])[TOPIC].result(60)
    eventually(
        lambda: all(len(s["isr"]) == 3 for s in partition_states(cluster).values()),
        60,
        "every ISR complete",
    )
    produce_all(cluster.bootstrap(), [(TOPIC, i % PARTITIONS, b"x" * 100) for i in range(120)])
    controller = cluster.controller_id()
    assert controller is not None

    # -- all up: leaders sum to the partitions, nothing under-replicated, one controller --
    def settled() -> bool:
        scraped = scrape_live(cluster)
        led = led_by(partition_states(cluster))
        assert counts(scraped, RM + "leadercount") == {b: led.get(b, 0) for b in scraped}
        assert counts(scraped, RM + "partitioncount") == dict.fromkeys(scraped, PARTITIONS)
        assert set(counts(scraped, RM + "underreplicatedpartitions").values()) == {0}
        # Each follower has caught up with its leader's high watermark.
        lags = {b: s.get(LAG, {}) for b, s in scraped.items()}
        assert all(len(partitions) == 4 for partitions in lags.values()), lags
        assert {v for partitions in lags.values() for v in partitions.values()} == {0}
        return True

    waiting_for(settled, 60, "replication settled")
    scraped = scrape_live(cluster)
    assert counts(scraped, KC + "activecontrollercount") == {
        b: 1 if b == controller else 0 for b in scraped
    }
    assert value(scraped[controller], KC + "globaltopiccount") == 1
    assert value(scraped[controller], KC + "globalpartitioncount") == PARTITIONS
    assert value(scraped[controller], KC + "offlinepartitionscount") == 0
    for broker_id, samples in scraped.items():
        assert value(samples, MAX_LAG, {"clientId": "Replica"}) == 0
        assert value(samples, RM + "atminisrpartitioncount") == 0  # min.insync.replicas=1
        if broker_id != controller:
            assert value(samples, KC + "globalpartitioncount") == 0  # controller only
    shrinks_before = counts(scraped, RM + "isrshrinks_total")
    expands_before = counts(scraped, RM + "isrexpands_total")

    # -- a follower dies: its leaders shrink their ISRs before its session expires --------
    victim_id = next(b for b in cluster.brokers if b != controller)
    victim = cluster.brokers[victim_id]
    states_at_kill = partition_states(cluster)
    led_at_kill = led_by(states_at_kill)
    survivors = [b for b in cluster.brokers if b != victim_id]
    victim.kill()
    # Records the victim does not fetch: it falls behind on the partitions it follows.
    produce_acks_1(
        cluster.bootstrap(),
        [p for p, state in states_at_kill.items() if state["leader"] != victim_id],
    )

    def shrunk() -> bool:
        scraped = scrape_live(cluster)
        for b in survivors:
            # RF=3 on three brokers: every partition it leads had a replica on the victim,
            # and each had its ISR shrunk by this leader (once: a counter, it stays so).
            shrinks = value(scraped[b], RM + "isrshrinks_total") - shrinks_before[b]
            assert shrinks == led_at_kill.get(b, 0)
            leads = value(scraped[b], RM + "leadercount")
            assert value(scraped[b], RM + "underreplicatedpartitions") == leads
        return True

    waiting_for(shrunk, 30, "the survivors' leaders shrank their ISRs")

    # -- its session expires: the controller moves its leaderships ---------------------------
    eventually(
        lambda: cluster.kazoo.exists(f"/brokers/ids/{victim_id}") is None,
        SESSION_MS / 1000 + 30,
        f"broker {victim_id}'s registration gone",
    )

    def moved() -> bool:
        states = partition_states(cluster)
        assert all(s["leader"] in survivors and victim_id not in s["isr"] for s in states.values())
        led = led_by(states)
        scraped = scrape_live(cluster)
        for b in survivors:
            assert value(scraped[b], RM + "leadercount") == led.get(b, 0)
            assert value(scraped[b], RM + "underreplicatedpartitions") == led.get(b, 0)
        assert sum(counts(scraped, KC + "activecontrollercount").values()) == 1
        assert value(scraped[controller], KC + "offlinepartitionscount") == 0  # RF=3
        return True

    waiting_for(moved, 60, "leaderships moved off the dead broker")
    scraped = scrape_live(cluster)
    assert sum(counts(scraped, RM + "underreplicatedpartitions").values()) == PARTITIONS
    # The quiet log line (franz.metrics, checked every 5 s) on each leader of URPs.
    for b in survivors:
        eventually(
            lambda b=b: "under-replicated partition(s) (was 0)" in cluster.brokers[b].output(),
            20,
            f"broker {b} logs its under-replicated partitions",
        )

    # -- it comes back: its leaders add it to the ISR again -----------------------------------
    victim.start()

    def recovered() -> bool:
        states = partition_states(cluster)
        assert all(len(s["isr"]) == 3 for s in states.values())
        scraped = scrape_live(cluster)
        assert set(counts(scraped, RM + "underreplicatedpartitions").values()) == {0}
        assert sum(counts(scraped, RM + "leadercount").values()) == PARTITIONS
        expands = {
            b: value(scraped[b], RM + "isrexpands_total") - expands_before[b] for b in survivors
        }
        assert sum(expands.values()) == PARTITIONS, expands
        assert value(scraped[victim_id], RM + "isrexpands_total") == 0  # a new process
        assert sum(counts(scraped, KC + "activecontrollercount").values()) == 1
        return True

    waiting_for(recovered, 60, f"broker {victim_id} back in every ISR")
    scraped = scrape_live(cluster)
    assert value(scraped[victim_id], RM + "partitioncount") == PARTITIONS
    # The victim's former leaderships stay where they went (no rebalance within the test):
    # the controller counts them as not led by their preferred replica.
    assignment = cluster.json(f"/brokers/topics/{TOPIC}")["partitions"]
    states = partition_states(cluster)
    imbalanced = sum(1 for p, s in states.items() if s["leader"] != assignment[str(p)][0])
    assert imbalanced > 0
    active = next(b for b, v in counts(scraped, KC + "activecontrollercount").items() if v == 1)
    assert value(scraped[active], KC + "preferredreplicaimbalancecount") == imbalanced
