"""Helpers for the partition reassignment tests (``tests/cluster/test_reassignment*.py``):
AlterPartitionReassignments and ListPartitionReassignments sent as raw requests to the active
controller (no Python client has them), the topic znode's assignment, the replicas' log
bytes, and an acks=all producer whose acknowledged records are checked afterwards.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from franz.protocol.api_keys import ApiKey
from tests.support.cluster import Cluster, eventually
from tests.support.wire import WireClient, request_at

__all__ = [
    "Traffic",
    "alter_reassignments",
    "create_topic",
    "dirs_of",
    "list_reassignments",
    "log_bytes",
    "read_all",
    "topic_znode",
    "wait_until_reassigned",
]

Moves = Mapping[tuple[str, int], Sequence[int] | None]


def _controller_call(cluster: Cluster, api: ApiKey, data: Mapping[str, Any]) -> Any:
    """Send to the active controller; retried (bounded) while there is none or it moved."""
    deadline = time.monotonic() + 60
    while True:
        controller = cluster.controller_id()
        broker = None if controller is None else cluster.brokers.get(controller)
        if broker is not None and broker.proc is not None:
            try:
                with WireClient.connect(broker.bootstrap, timeout=60) as client:
                    response = request_at(client, api, 0, data)
            except OSError:
                response = None
            if response is not None and int(response.error_code) != 41:  # NOT_CONTROLLER
                return response
        if time.monotonic() > deadline:
            raise AssertionError(f"no controller answered {api.name} within 60 s")
        time.sleep(0.2)


def alter_reassignments(
    cluster: Cluster, moves: Moves
) -> dict[tuple[str, int], tuple[int, str | None]]:
    """AlterPartitionReassignments (None cancels); (error code, message) per partition."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), replicas in moves.items():
        by_topic.setdefault(topic, []).append(
            {"partition_index": partition, "replicas": None if replicas is None else list(replicas)}
        )
    response = _controller_call(
        cluster,
        ApiKey.ALTER_PARTITION_REASSIGNMENTS,
        {
            "timeout": 30_000,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        },
    )
    assert int(response.error_code) == 0, response
    return {
        (t.name, p.partition_index): (int(p.error_code), p.error_message)
        for t in response.responses
        for p in t.partitions
    }


def list_reassignments(
    cluster: Cluster, partitions: Sequence[tuple[str, int]] | None = None
) -> dict[tuple[str, int], tuple[list[int], list[int], list[int]]]:
    """ListPartitionReassignments: (replicas, adding, removing) per partition moving."""
    topics: list[dict[str, Any]] | None = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in partitions:
            by_topic.setdefault(topic, []).append(partition)
        topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
    response = _controller_call(
        cluster, ApiKey.LIST_PARTITION_REASSIGNMENTS, {"timeout": 30_000, "topics": topics}
    )
    assert int(response.error_code) == 0, response
    return {
        (t.name, p.partition_index): (
            list(p.replicas),
            list(p.adding_replicas),
            list(p.removing_replicas),
        )
        for t in response.topics
        for p in t.partitions
    }


def wait_until_reassigned(cluster: Cluster, topic: str, timeout_s: float) -> float:
    """Until no partition of ``topic`` is listed as moving and its znode says so too."""

    def done() -> bool:
        if any(t == topic for t, _ in list_reassignments(cluster)):
            return False
        znode = topic_znode(cluster, topic)
        return not znode.get("adding_replicas") and not znode.get("removing_replicas")

    return eventually(done, timeout_s, f"the reassignment of {topic} completes")


def topic_znode(cluster: Cluster, topic: str) -> dict[str, Any]:
    return cluster.json(f"/brokers/topics/{topic}")


def create_topic(
    cluster: Cluster,
    topic: str,
    assignment: Mapping[int, Sequence[int]],
    config: Mapping[str, str] | None = None,
) -> None:
    """Create ``topic`` with an explicit assignment and wait until every ISR is whole."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    new = NewTopic(
        topic,
        len(assignment),
        replica_assignment=[list(assignment[p]) for p in sorted(assignment)],
        config=dict(config or {}),
    )
    admin.create_topics([new], operation_timeout=30)[topic].result(60)

    def whole() -> bool:
        for p, replicas in assignment.items():
            path = f"/brokers/topics/{topic}/partitions/{p}/state"
            if cluster.kazoo.exists(path) is None:
                return False
            if sorted(cluster.json(path)["isr"]) != sorted(replicas):
                return False
        return True

    eventually(whole, 60, f"every ISR of {topic} is whole")


def dirs_of(cluster: Cluster, broker_id: int, topic: str) -> list[str]:
    """The log dirs of ``topic`` on one broker, ``-delete`` ones included."""
    logs = cluster.brokers[broker_id].data_dir / "logs"
    if not logs.exists():
        return []
    return sorted(d.name for d in logs.iterdir() if d.name.startswith(f"{topic}-"))


def log_bytes(cluster: Cluster, broker_id: int, topic: str, partition: int) -> bytes:
    """The partition's ``.log`` segments on one broker, concatenated in offset order."""
    directory = cluster.brokers[broker_id].data_dir / "logs" / f"{topic}-{partition}"
    return b"".join(path.read_bytes() for path in sorted(directory.glob("*.log")))


def read_all(bootstrap: str, topic: str, partition: int) -> dict[int, bytes]:
    """Every record of a partition below its high watermark: offset -> value."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{uuid.uuid4().hex[:8]}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 8 * 1024 * 1024,
        }
    )
    try:
        low, high = consumer.get_watermark_offsets(
            KafkaTopicPartition(topic, partition), timeout=30
        )
        consumer.assign([KafkaTopicPartition(topic, partition, low)])
        out: dict[int, bytes] = {}
        deadline = time.monotonic() + 120
        while len(out) < high - low and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            out[message.offset()] = bytes(message.value())
        assert len(out) == high - low, f"{topic}-{partition}: read {len(out)} of {high - low}"
        return out
    finally:
        consumer.close()


class Traffic:
    """An idempotent acks=all producer on a thread of its own, sending numbered records of
    ``value_size`` bytes round-robin to ``partitions`` partitions, as fast as it can (or
    ``rate`` records per second); ``acked`` maps partition -> offset -> value."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        *,
        value_size: int = 1000,
        rate: float | None = None,
        batch_size: int = 16384,
    ) -> None:
        self.topic = topic
        self.partitions = partitions
        self.value_size = value_size
        self.rate = rate
        self.acked: dict[int, dict[int, bytes]] = {p: {} for p in range(partitions)}
        self.delivery_errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "batch.size": batch_size,
                "message.timeout.ms": 300000,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        self._thread = threading.Thread(target=self._produce, daemon=True)
        self._thread.start()

    @property
    def acked_count(self) -> int:
        with self._lock:
            return sum(len(v) for v in self.acked.values())

    def _on_delivery(self, err: Any, message: Any) -> None:
        with self._lock:
            if err is not None:
                self.delivery_errors.append(f"{message.partition()}: {err}")
            else:
                self.acked[message.partition()][message.offset()] = bytes(message.value())

    def _produce(self) -> None:
        n = 0
        started = time.monotonic()
        while not self._stop.is_set():
            if self.rate is not None and n >= self.rate * (time.monotonic() - started):
                self._producer.poll(0.01)
                continue
            value = f"{n:012d}".encode().ljust(self.value_size, b".")
            try:
                self._producer.produce(
                    self.topic, value, partition=n % self.partitions, on_delivery=self._on_delivery
                )
            except BufferError:  # the local queue is full: wait for deliveries
                self._producer.poll(0.05)
                continue
            n += 1
            if n % 100 == 0:
                self._producer.poll(0)
        self._producer.flush(240)

    def wait_acked(self, count: int, timeout_s: float) -> None:
        eventually(lambda: self.acked_count >= count, timeout_s, f"{count} records acknowledged")

    def stop(self) -> int:
        """Stop sending, wait for every delivery report; how many are still unreported."""
        self._stop.set()
        self._thread.join(300)
        return len(self._producer)
