"""Replication's chaos test (issue 17, "Faults"): leaders SIGKILLed under an idempotent
acks=all producer and a consumer group, and nothing acknowledged is lost.

Its own cluster (three ``franz broker`` processes on a chroot of their own). A topic of 6
partitions, replication factor 3, ``min.insync.replicas=2``. For ``CHAOS_S`` seconds a
confluent-kafka producer (``enable.idempotence``, acks=all) sends numbered records, record
``n`` to partition ``n % 6``, while a loop SIGKILLs the leader of a partition, restarts it
once its ZooKeeper session has expired, waits (bounded) until every ISR is whole again, and
goes on, one kill every 5-10 s. A consumer group (confluent-kafka, automatic commits) reads
all the while.

Afterwards:

* the producer reported no delivery error (an idempotent producer's errors after lost data
  are fatal: OUT_OF_ORDER_SEQUENCE_NUMBER, UNKNOWN_PRODUCER_ID);
* every acknowledged record is in the log exactly once, at one offset, and each partition
  holds its records in the order they were sent;
* every replica's log is byte-identical to its leader's (the ``.log`` segments read from
  each broker's directory, once the followers have caught up);
* the consumer group saw every offset from 0 up to where it stopped, per partition, and
  each record it saw is the one the log holds at that offset (no gap, nothing that was
  later truncated).
"""

from __future__ import annotations

import random
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

from tests.support.cluster import (
    Cluster,
    eventually,
    isrs_whole,
    log_bytes,
    new_chroot,
    partition_state,
    start_cluster,
)
from tests.support.zookeeper import ZooKeeperServer

TOPIC = "chaos"
PARTITIONS = 6
REPLICAS = (1, 2, 3)
CHAOS_S = 60.0
#: Short, so a restarted broker rejoins the ISRs (and a stopped one leaves them) quickly.
LAG_MS = 4000


@pytest.fixture(scope="module")
def chaos_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("replication-chaos"))
    props = {
        "replica.lag.time.max.ms": str(LAG_MS),
        "offsets.topic.replication.factor": "3",
    }
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        admin = AdminClient({"bootstrap.servers": c.bootstrap()})
        topic = NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"})
        admin.create_topics([topic], operation_timeout=30)[TOPIC].result(60)
        eventually(
            lambda: isrs_whole(c, TOPIC, PARTITIONS),
            60,
            "every partition has its 3 replicas in the ISR",
        )
        yield c


class Traffic:
    """The idempotent producer and the consumer group, each on a thread of its own."""

    def __init__(self, bootstrap: str) -> None:
        self.acked: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
        self.delivery_errors: list[str] = []
        self.sent = 0
        #: partition -> offset -> value, as the consumer group saw them.
        self.consumed: dict[int, dict[int, int]] = {p: {} for p in range(PARTITIONS)}
        self.consumer_errors: list[str] = []
        self._lock = threading.Lock()
        self._stop_producing = threading.Event()
        self._stop_consuming = threading.Event()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "message.timeout.ms": 300000,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"chaos-{uuid.uuid4().hex[:8]}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": True,
                "auto.commit.interval.ms": 500,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        self._consumer.subscribe([TOPIC])
        self._producer_thread = threading.Thread(target=self._produce, daemon=True)
        self._consumer_thread = threading.Thread(target=self._consume, daemon=True)
        self._producer_thread.start()
        self._consumer_thread.start()

    def _on_delivery(self, err: Any, message: Any) -> None:
        with self._lock:
            if err is not None:
                self.delivery_errors.append(f"{message.partition()}: {err}")
            else:
                self.acked[message.partition()].append(int(message.value()))

    def _produce(self) -> None:
        n = 0
        while not self._stop_producing.is_set():
            for _ in range(PARTITIONS * 5):
                try:
                    self._producer.produce(
                        TOPIC,
                        str(n).encode(),
                        partition=n % PARTITIONS,
                        on_delivery=self._on_delivery,
                    )
                except BufferError:  # the local queue is full while leaders move: wait
                    self._producer.poll(0.1)
                    continue
                n += 1
            self.sent = n
            self._producer.poll(0.01)
        self._producer.flush(240)

    def _consume(self) -> None:
        while not self._stop_consuming.is_set():
            message = self._consumer.poll(0.2)
            if message is None:
                continue
            if message.error() is not None:
                with self._lock:
                    self.consumer_errors.append(str(message.error()))
                continue
            with self._lock:
                self.consumed[message.partition()][message.offset()] = int(message.value())

    def stop_producing(self) -> int:
        """Stop sending, wait for every delivery report; how many records are unreported."""
        self._stop_producing.set()
        self._producer_thread.join(300)
        return len(self._producer)

    def stop_consuming(self) -> None:
        self._stop_consuming.set()
        self._consumer_thread.join(60)
        self._consumer.close()


def read_partition(bootstrap: str, partition: int) -> list[tuple[int, int]]:
    """Every (offset, value) of a partition below its high watermark, from the leader."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
        }
    )
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(TOPIC, partition), timeout=30)
        consumer.assign([TopicPartition(TOPIC, partition, 0)])
        out: list[tuple[int, int]] = []
        deadline = time.monotonic() + 120
        while (not out or out[-1][0] < high - 1) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            out.append((message.offset(), int(message.value())))
        assert out == [] or out[-1][0] == high - 1, f"partition {partition}: read to {out[-1][0]}"
        return out
    finally:
        consumer.close()


def test_leader_kills_under_acks_all_lose_nothing(chaos_cluster: Cluster) -> None:
    cluster = chaos_cluster
    rng = random.Random(17)
    traffic = Traffic(cluster.bootstrap())
    kills = 0
    try:
        eventually(lambda: traffic.sent > 0, 30, "the producer runs")
        start = time.monotonic()
        while time.monotonic() - start < CHAOS_S:
            state = partition_state(cluster, TOPIC, rng.randrange(PARTITIONS))
            assert state is not None
            victim = cluster.brokers[int(state["leader"])]
            killed_at = time.monotonic()
            victim.kill()
            kills += 1
            # As Kafka, a broker cannot register while its dead predecessor's ephemeral
            # znode lives: restart once the session expired.
            path = f"/brokers/ids/{state['leader']}"
            eventually(
                lambda path=path: cluster.kazoo.exists(path) is None, 60, "the session expires"
            )
            time.sleep(rng.uniform(0.0, 2.0))
            victim.start()
            eventually(
                lambda: isrs_whole(cluster, TOPIC, PARTITIONS),
                90,
                f"the ISRs are whole after kill {kills}",
            )
            time.sleep(max(0.0, killed_at + rng.uniform(5.0, 10.0) - time.monotonic()))
        unreported = traffic.stop_producing()
    except BaseException:
        traffic.stop_producing()
        traffic.stop_consuming()
        raise
    assert kills >= 4
    assert unreported == 0
    assert traffic.delivery_errors == []
    acked_total = sum(len(v) for v in traffic.acked.values())
    assert acked_total > 1000

    # Every replica caught up with its leader, byte for byte.
    eventually(lambda: isrs_whole(cluster, TOPIC, PARTITIONS), 60, "the ISRs are whole at the end")

    def replicas_identical() -> bool:
        return all(
            len({log_bytes(cluster.brokers[b], TOPIC, p) for b in REPLICAS}) == 1
            for p in range(PARTITIONS)
        )

    eventually(replicas_identical, 60, "every replica's log is byte-identical to its leader's")

    bootstrap = cluster.bootstrap()
    logs = {p: read_partition(bootstrap, p) for p in range(PARTITIONS)}
    for p, records in logs.items():
        values = [value for _, value in records]
        assert [offset for offset, _ in records] == list(range(len(records))), p
        assert len(values) == len(set(values)), f"partition {p} holds a record twice"
        assert values == sorted(values), f"partition {p} holds records out of order"
        assert all(value % PARTITIONS == p for value in values)
        missing = set(traffic.acked[p]) - set(values)
        assert not missing, f"partition {p} lost {len(missing)} acknowledged records"

    # The consumer group read on through the kills: let it catch up, then check it saw
    # every offset it passed, each holding what the log holds.
    def group_caught_up() -> bool:
        with traffic._lock:
            return all(len(traffic.consumed[p]) >= len(logs[p]) for p in range(PARTITIONS))

    eventually(group_caught_up, 120, "the consumer group read every record")
    traffic.stop_consuming()
    assert traffic.consumer_errors == []
    for p in range(PARTITIONS):
        seen = traffic.consumed[p]
        assert sorted(seen) == list(range(len(logs[p]))), f"partition {p}: the group skipped"
        assert all(logs[p][offset][1] == value for offset, value in seen.items()), p
