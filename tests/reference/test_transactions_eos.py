"""Exactly once through SIGKILLs: a consume-transform-produce loop, on Kafka and on Franz.

Issue 19's acceptance: 100,000 input records over 3 partitions; a confluent-kafka worker
process (``tests.support.eos_worker``: read_committed consumer, transactional producer,
``send_offsets_to_transaction``) is SIGKILLed a moment after each of its first commits and
started again, ``KILLS`` times, then left to finish. The output topic, read committed, must
hold each input's result exactly once, and the group's committed offsets must be the input's
end offsets. The same test runs against Apache Kafka 3.9 (which proves the test) and Franz.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.support.clients import create_topic
from tests.support.kafka_ref import HasBootstrap

PARTITIONS = 3
RECORDS = 100_000
KILLS = 5
ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow


def _produce_input(bootstrap: str, topic: str) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all", "log_level": 2}
    )
    for i in range(RECORDS):
        while True:
            try:
                producer.produce(topic, value=str(i).encode(), partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0


class _Worker:
    def __init__(self, bootstrap: str, args: list[str], log: Path) -> None:
        self._out = log.open("ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.eos_worker", bootstrap, *args],
            cwd=ROOT,
            stdout=self._out,
            stderr=subprocess.STDOUT,
        )
        self.log = log

    def commits(self) -> int:
        return sum(1 for line in self.log.read_text().splitlines() if line.startswith("committed"))

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(30)
        self._out.close()


def _read_committed(bootstrap: str, topic: str, deadline: float) -> list[tuple[bytes, bytes]]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "enable.partition.eof": True,
        }
    )
    tps = [TopicPartition(topic, p, 0) for p in range(PARTITIONS)]
    consumer.assign(tps)
    out: list[tuple[bytes, bytes]] = []
    at_end: set[int] = set()
    try:
        while len(at_end) < PARTITIONS and time.monotonic() < deadline:
            for m in consumer.consume(1000, timeout=1.0):
                if m.error() is not None:
                    if m.error().code() == -191:  # _PARTITION_EOF: at the LSO
                        at_end.add(m.partition())
                    continue
                at_end.discard(m.partition())
                out.append((m.key(), m.value()))
    finally:
        consumer.close()
    assert len(at_end) == PARTITIONS, f"read_committed did not reach the end of {topic}"
    return out


@pytest.mark.parametrize("name", ["kafka", "franz"])
def test_consume_transform_produce_killed_repeatedly_is_exactly_once(
    request: pytest.FixtureRequest, name: str, tmp_path: Path
) -> None:
    broker: HasBootstrap = request.getfixturevalue(name)
    bootstrap = broker.bootstrap
    tag = uuid.uuid4().hex[:8]
    source, sink, group, txn_id = (f"{k}-{tag}" for k in ("eos-in", "eos-out", "eos", "eos-tx"))
    create_topic(bootstrap, source, PARTITIONS)
    create_topic(bootstrap, sink, PARTITIONS)
    _produce_input(bootstrap, source)
    rng = random.Random(tag)
    args = [source, sink, group, txn_id]
    log = tmp_path / "worker.log"
    deadline = time.monotonic() + 400
    for kill in range(KILLS + 1):
        worker = _Worker(bootstrap, args, log)
        try:
            before = worker.commits()
            if kill == KILLS:  # the last one runs to the end (idle polls after the input)
                assert worker.proc.wait(max(1.0, deadline - time.monotonic())) == 0, (
                    log.read_text()[-3000:]
                )
                break
            # Kill it a moment after it commits (so each instance makes progress), often
            # in the middle of its next transaction. The moment is short: Franz commits a
            # transaction of 500 in a few ms, and a longer one let an instance finish the
            # whole input before the last kill.
            while worker.commits() == before and time.monotonic() < deadline:
                assert worker.proc.poll() is None, log.read_text()[-3000:]
                time.sleep(0.05)
            time.sleep(rng.uniform(0.0, 0.2))
            os.kill(worker.proc.pid, signal.SIGKILL)
        finally:
            worker.close()
        with log.open("a") as f:
            f.write(f"-- SIGKILL {kill + 1}\n")
    else:  # pragma: no cover - the loop always breaks
        raise AssertionError("unreachable")

    output = _read_committed(bootstrap, sink, deadline + 60)
    keys = Counter(key for key, _ in output)
    repeated = [k for k, n in keys.items() if n > 1]
    assert not repeated, f"{len(repeated)} inputs written twice, e.g. {repeated[:5]}"
    assert len(output) == RECORDS, f"{len(output)} results for {RECORDS} inputs"
    # Each result is its input's: input i went to partition i % PARTITIONS at offset
    # i // PARTITIONS (one producer, acks=all, in order).
    for key, value in output:
        partition, offset = map(int, key.split(b":"))
        assert value == b"out-%d" % (offset * PARTITIONS + partition), (key, value)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        committed = consumer.committed(
            [TopicPartition(source, p) for p in range(PARTITIONS)], timeout=30
        )
    finally:
        consumer.close()
    per_partition = RECORDS // PARTITIONS
    expected = {p: per_partition + (1 if p < RECORDS % PARTITIONS else 0) for p in range(3)}
    assert {tp.partition: tp.offset for tp in committed} == expected
