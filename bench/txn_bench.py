"""Transactions bench: issue 19's figures, Franz and Apache Kafka 3.9 in the same run.

``python -m bench.txn_bench [--quick] [--runs N] [--records N] [--systems franz,kafka]``

Scenarios, per system (one broker each, embedded defaults for Franz, Kafka 3.9's shipped
``server.properties`` for Kafka; a fresh 1-partition topic per run; confluent-kafka, i.e.
librdkafka, as the client of both (kcat for the reads); values of 100 random bytes, no key):

1. ``produce``: ``--records`` records through
   - the idempotent producer without transactions (``enable.idempotence=true``), and
   - a transactional producer committing every 100 records, then every 10,000
     (``begin_transaction`` / ``produce`` x n / ``commit_transaction``);
   measured from the first ``produce`` to the last acknowledgement (``flush`` or the last
   ``commit_transaction``), after one untimed record (or transaction of one record) that
   gets the producer id and the topic's metadata: records/s. The figure of the issue is the
   transactional rate as a share of the idempotent one (target >= 90 % at 10,000 per
   transaction).
2. ``consume``: a topic holding ``--consume-records`` records (1,000,000) committed in
   transactions of 1,000 (plus their markers), read from offset 0 to its end by one consumer
   with ``isolation.level=read_uncommitted`` and one with ``read_committed`` (kcat ``-e``,
   the whole process timed, its ~10 ms start included): records/s; the figure is
   read_committed as a share of read_uncommitted (target >= 95 %).

Each figure is the median of ``--runs`` runs (the systems alternate, their order rotating),
after an untimed warm-up of each broker.
Every process started is stopped by PID at the end, also on an exception or Ctrl-C.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from bench.harness import rotate

VALUE_SIZE = 100
TXN_SIZES = (100, 10_000)


@dataclass
class Figures:
    """records/s per (system, case), one list entry per run."""

    rates: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def add(self, system: str, case: str, rate: float) -> None:
        self.rates.setdefault((system, case), []).append(rate)

    def median(self, system: str, case: str) -> float | None:
        runs = self.rates.get((system, case))
        return statistics.median(runs) if runs else None


def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        topics = admin.list_topics(topic, timeout=10).topics
        meta = topics.get(topic)
        partition = None if meta is None or meta.error else meta.partitions.get(0)
        if partition is not None and partition.leader >= 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"{topic} has no leader after 30 s")


def _produce(producer: Producer, topic: str, value: bytes) -> None:
    while True:
        try:
            producer.produce(topic, value=value)
            return
        except BufferError:
            producer.poll(0.05)


def produce_idempotent(bootstrap: str, topic: str, records: int, value: bytes) -> float:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5}
    )
    # Untimed: the producer id and the topic's metadata (the transactional producer gets
    # both in init_transactions and its first transaction, which are not timed either).
    _produce(producer, topic, value)
    if producer.flush(60) != 0:
        raise RuntimeError("idempotent producer: the warm-up record was not acknowledged")
    started = time.perf_counter()
    for _ in range(records):
        _produce(producer, topic, value)
    if producer.flush(120) != 0:
        raise RuntimeError("idempotent producer: records left unacknowledged")
    return records / (time.perf_counter() - started)


def produce_transactional(
    bootstrap: str, topic: str, records: int, value: bytes, per_txn: int
) -> float:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"bench-{uuid.uuid4().hex[:8]}",
            "linger.ms": 5,
        }
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    _produce(producer, topic, value)
    producer.commit_transaction(60)
    started = time.perf_counter()
    sent = 0
    while sent < records:
        n = min(per_txn, records - sent)
        producer.begin_transaction()
        for _ in range(n):
            _produce(producer, topic, value)
        producer.commit_transaction(120)
        sent += n
    return records / (time.perf_counter() - started)


def consume(bootstrap: str, topic: str, records: int, isolation: str) -> float:
    """kcat reads the topic from its start to its end (``-e``) at ``isolation``: records/s.

    kcat (librdkafka, C) rather than a Python consumer: confluent-kafka's per-message Python
    objects cap a Python loop near 200 k records/s, whatever the broker does. ``-f x`` prints
    one byte per record; the count of those bytes checks that every record came.
    """
    args = ["kcat", "-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning", "-e",
            "-q", "-f", "x", "-X", f"isolation.level={isolation}",
            "-X", "fetch.max.bytes=52428800"]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(args, capture_output=True, timeout=300, check=False)
    elapsed = time.perf_counter() - started
    got = done.stdout.count(b"x")
    if done.returncode != 0 or got != records:
        raise RuntimeError(
            f"kcat {isolation}: exit {done.returncode}, {got} of {records} records: "
            f"{done.stderr.decode(errors='replace')[-500:]}"
        )
    return records / elapsed


class _Systems:
    """The brokers of the run, started once, stopped by PID at the end."""

    def __init__(self, base: Path, names: Sequence[str]) -> None:
        self.base = base
        self.bootstraps: dict[str, str] = {}
        self._stop: list[Callable[[], object]] = []
        self.names = list(names)

    def __enter__(self) -> _Systems:
        try:
            for name in self.names:
                self.bootstraps[name] = self._start(name)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self, name: str) -> str:
        if name == "franz":
            from tests.support.broker import BrokerProcess

            broker = BrokerProcess(self.base / "franz")
            self._stop.append(broker.stop)
            broker.start(timeout=60.0)
            return broker.bootstrap
        from bench.kafka_peer import KafkaPeer, ZooKeeperPeer, kafka_libs

        libs = kafka_libs()
        zookeeper = ZooKeeperPeer(self.base / "zookeeper", libs)
        self._stop.append(zookeeper.stop)
        zookeeper.start(60.0)
        kafka = KafkaPeer(
            self.base / "kafka", libs, zookeeper.address, chroot="txn-bench", partitions=1
        )
        self._stop.append(kafka.stop)
        kafka.start()
        return kafka.address

    def __exit__(self, *_: object) -> None:
        for stop in reversed(self._stop):
            try:
                stop()
            except Exception as exc:  # keep stopping the others
                print(f"stopping: {exc}", file=sys.stderr)
        self._stop.clear()


def run(
    systems: _Systems, runs: int, records: int, scenarios: Sequence[str], consume_records: int
) -> Figures:
    figures = Figures()
    value = os.urandom(VALUE_SIZE)
    for name, bootstrap in systems.bootstraps.items():
        # Untimed warm-up of each broker (the JVM's JIT, the first segments and connections):
        # without it the first case measured pays for it.
        topic = f"txn-bench-warm-{uuid.uuid4().hex[:8]}"
        _create_topic(bootstrap, topic)
        produce_transactional(bootstrap, topic, min(records, 50_000), value, 1_000)
        produce_idempotent(bootstrap, topic, min(records, 50_000), value)
        # Each producer wrote one untimed record before its records.
        consume(bootstrap, topic, 2 * min(records, 50_000) + 2, "read_committed")
        print(f"{name}: warmed up", flush=True)
    for i in range(runs):
        for name in rotate(systems.names, i):
            bootstrap = systems.bootstraps[name]
            if "produce" in scenarios:
                cases: list[tuple[str, int]] = [("idempotent", 0)]
                cases += [(f"txn {n:,}", n) for n in TXN_SIZES]
                for case, per_txn in rotate(cases, i):
                    topic = f"txn-bench-{uuid.uuid4().hex[:8]}"
                    _create_topic(bootstrap, topic)
                    rate = (
                        produce_transactional(bootstrap, topic, records, value, per_txn)
                        if per_txn
                        else produce_idempotent(bootstrap, topic, records, value)
                    )
                    figures.add(name, case, rate)
                    print(f"run {i + 1} {name:6} produce {case:16} {rate:12,.0f} records/s")
            if "consume" in scenarios:
                topic = f"txn-bench-{uuid.uuid4().hex[:8]}"
                _create_topic(bootstrap, topic)
                produce_transactional(bootstrap, topic, consume_records, value, 1_000)
                for isolation in rotate(["read_uncommitted", "read_committed"], i):
                    # + the untimed one-record transaction of produce_transactional.
                    rate = consume(bootstrap, topic, consume_records + 1, isolation)
                    figures.add(name, isolation, rate)
                    print(
                        f"run {i + 1} {name:6} consume {isolation:16} {rate:12,.0f} records/s",
                        flush=True,
                    )
    return figures


def report(figures: Figures, names: Sequence[str]) -> str:
    lines = [
        "| system | case | records/s (median) | share of the baseline |",
        "|---|---|---:|---:|",
    ]
    for name in names:
        for case, baseline in [
            ("idempotent", "idempotent"),
            *((f"txn {n:,}", "idempotent") for n in TXN_SIZES),
            ("read_uncommitted", "read_uncommitted"),
            ("read_committed", "read_uncommitted"),
        ]:
            rate, base = figures.median(name, case), figures.median(name, baseline)
            if rate is None:
                continue
            share = f"{rate / base:.0%}" if base else "-"
            lines.append(f"| {name} | {case} | {rate:,.0f} | {share} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.txn_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1 run of 20,000 records")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument(
        "--consume-records",
        type=int,
        default=1_000_000,
        help="records of the consume scenario's topic (a read takes ~1 s, not ~0.2 s)",
    )
    parser.add_argument("--systems", default="franz,kafka")
    parser.add_argument("--scenarios", default="produce,consume")
    args = parser.parse_args(argv)
    runs, records = (1, 20_000) if args.quick else (args.runs, args.records)
    consume_records = 100_000 if args.quick else args.consume_records
    names = [n for n in args.systems.split(",") if n]
    scenarios = [s for s in args.scenarios.split(",") if s]
    with (
        tempfile.TemporaryDirectory(prefix="franz-txn-bench-") as tmp,
        _Systems(Path(tmp), names) as systems,
    ):
        figures = run(systems, runs, records, scenarios, consume_records)
    print()
    print(report(figures, names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
