"""A rolling restart under acks=all (issue 17, "Acceptance"): each of three brokers in turn
is stopped with SIGTERM (Kafka's controlled shutdown moves its leaderships first) and started
again, while an idempotent confluent-kafka producer sends at acks=all to a topic with
replication factor 3 and ``min.insync.replicas=2``.

Nothing acknowledged is lost or duplicated, no delivery fails, and every partition keeps
being acknowledged through each restart: the longest pause between two acknowledgements of a
partition is printed (the figure itself is ``bench.replication_bench``'s; here only a bound
that a stalled partition would break).
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.cluster import Cluster, eventually, new_chroot, start_cluster
from tests.support.zookeeper import ZooKeeperServer

TOPIC = "rolling-restart"
PARTITIONS = 6
#: A partition that no acknowledgement reaches for this long has stalled (a controlled
#: shutdown moves leaders in well under a second on an idle machine; CI machines are busy).
STALL_S = 15.0


@pytest.fixture
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("replication-rolling"))
    props = {"replica.lag.time.max.ms": "3000"}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap()})
        topic = NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})
        admin.create_topics([topic], operation_timeout=30)[TOPIC].result(60)
        yield c


def isrs_whole(cluster: Cluster) -> bool:
    for p in range(PARTITIONS):
        path = f"/brokers/topics/{TOPIC}/partitions/{p}/state"
        if cluster.kazoo.exists(path) is None:
            return False
        if sorted(cluster.json(path)["isr"]) != [1, 2, 3]:
            return False
    return True


class AckedProducer:
    """Numbered records, ``n`` to partition ``n % PARTITIONS``; acknowledgement times kept."""

    def __init__(self, bootstrap: str) -> None:
        self.acked: dict[int, list[tuple[float, int]]] = {p: [] for p in range(PARTITIONS)}
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on_delivery(self, err: Any, message: Any) -> None:
        with self._lock:
            if err is not None:
                self.errors.append(f"{message.partition()}: {err}")
            else:
                self.acked[message.partition()].append((time.monotonic(), int(message.value())))

    def _run(self) -> None:
        n = 0
        while not self._stop.is_set():
            for _ in range(PARTITIONS):
                try:
                    self._producer.produce(
                        TOPIC,
                        str(n).encode(),
                        partition=n % PARTITIONS,
                        on_delivery=self._on_delivery,
                    )
                    n += 1
                except BufferError:
                    break
            self._producer.poll(0.005)
        self._producer.flush(120)

    def acked_count(self) -> int:
        with self._lock:
            return sum(len(v) for v in self.acked.values())

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(150)
        return len(self._producer)


def read_values(bootstrap: str, partition: int) -> list[int]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"verify-{uuid.uuid4().hex[:8]}"}
    )
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=30)
        consumer.assign([TopicPartition(TOPIC, partition, 0)])
        out: list[tuple[int, int]] = []
        deadline = time.monotonic() + 120
        while len(out) < high and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                out.append((message.offset(), int(message.value())))
        assert [offset for offset, _ in out] == list(range(high)), partition
        return [value for _, value in out]
    finally:
        consumer.close()


def test_rolling_restart_under_acks_all_loses_nothing(cluster: Cluster) -> None:
    eventually(lambda: isrs_whole(cluster), 60, "every ISR is whole")
    producer = AckedProducer(cluster.bootstrap())
    try:
        eventually(lambda: producer.acked_count() > 600, 60, "records acknowledged")
        rolling_started = time.monotonic()
        for broker_id in sorted(cluster.brokers):
            eventually(lambda: isrs_whole(cluster), 90, f"every ISR is whole before {broker_id}")
            assert cluster.brokers[broker_id].stop() == 0
            assert "Controlled shutdown request returned successfully" in (
                cluster.brokers[broker_id].output()
            )
            cluster.brokers[broker_id].start()
        eventually(lambda: isrs_whole(cluster), 90, "every ISR is whole after the restarts")
        rolling_ended = time.monotonic()
        time.sleep(1.0)
    finally:
        unreported = producer.stop()
    assert unreported == 0
    assert producer.errors == []

    pauses = {}
    for p in range(PARTITIONS):
        times = [t for t, _ in producer.acked[p] if rolling_started <= t <= rolling_ended + 1]
        assert times, f"partition {p}: nothing acknowledged during the rolling restart"
        edges = [rolling_started, *times]
        pauses[p] = max(b - a for a, b in itertools.pairwise(edges))
    print(f"longest pause between acknowledgements per partition (s): {pauses}")
    assert max(pauses.values()) < STALL_S, pauses

    for p in range(PARTITIONS):
        values = read_values(cluster.bootstrap(), p)
        assert len(values) == len(set(values)), f"partition {p} holds a record twice"
        assert values == sorted(values), f"partition {p} holds records out of order"
        missing = {v for _, v in producer.acked[p]} - set(values)
        assert not missing, f"partition {p} lost {len(missing)} acknowledged records"
