"""Spark bench: issue 6's figure, rows/s from a Franz topic into a streaming aggregation.

Run ``python -m bench.spark_bench [--quick] [--runs N] [--records N] [--batch N]``.

Two sources feed the same Structured Streaming query in one local[2] SparkSession, back to
back, their order rotating every run:

- ``franz``: ``readStream.format("franz")`` over a 2-partition topic of ``--records`` 100 B
  records with 1,000 distinct keys (produced once, untimed), ``maxOffsetsPerTrigger`` =
  ``--batch``, ``trigger(availableNow=True)``: the run ends when the backlog is read.
- ``rate``: Spark's built-in ``rate-micro-batch`` source (JVM, generates rows in memory),
  ``rowsPerBatch`` = ``--batch`` in 2 partitions, the key made with the same 1,000 values;
  stopped once it has produced as many rows.

Both run ``groupBy("key").count()`` in update mode into the ``noop`` sink. The figure is
rows / the sum of the micro-batches' ``triggerExecution`` times (Spark's own progress
reports), so both sides are timed the same way, without query start-up; for franz the wall
rate (start to end of the availableNow run) is shown too. The broker's CPU seconds per run
come from ``/proc/<pid>/stat``. The first query of each source in the session is a warm-up
(Spark starts its Python workers then, ~8 s) and is not counted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.broker_clients import parse_proc_stat, register
from bench.harness import git_commit, rotate, run_suite
from bench.report import Findings, ratios_of, render_markdown_table, summarize

__all__ = ["Settings", "main", "parse_args", "rate_from_progress"]

KEYS = 1_000
VALUE_SIZE = 100
TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True, slots=True)
class Settings:
    mode: str
    runs: int
    records: int
    batch: int
    results_dir: Path
    scenarios: Sequence[str] = ("aggregate",)
    run_timeout: float = 300.0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.spark_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1 run of 300,000 records")
    parser.add_argument("--runs", type=int, help="runs per source (default 3, quick 1)")
    parser.add_argument("--records", type=int, help="records per run (default 2,000,000)")
    parser.add_argument("--batch", type=int, help="rows per micro-batch (default 500,000)")
    parser.add_argument("--results-dir", type=Path, default=Path("bench/results"))
    return parser.parse_args(argv)


def settings_from_args(args: argparse.Namespace) -> Settings:
    quick = bool(args.quick)
    return Settings(
        mode="quick" if quick else "full",
        runs=args.runs or (1 if quick else 3),
        records=args.records or (300_000 if quick else 2_000_000),
        batch=args.batch or (100_000 if quick else 500_000),
        results_dir=args.results_dir,
    )


def rate_from_progress(progress: Sequence[dict[str, Any]]) -> tuple[int, float]:
    """``(rows, seconds)`` over the micro-batches that read rows: the sum of ``numInputRows``
    and of ``durationMs.triggerExecution`` (ms) of Spark's progress reports."""
    rows, millis = 0, 0
    for report in progress:
        n = int(report.get("numInputRows", 0))
        if n:
            rows += n
            millis += int(report.get("durationMs", {}).get("triggerExecution", 0))
    return rows, millis / 1000


@dataclass(slots=True)
class Measured:
    rows: int
    seconds: float
    wall_s: float
    broker_cpu_s: float = 0.0

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0


@dataclass
class Results(Findings):
    runs: dict[str, list[Measured]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        Findings.__init__(self)

    def add(self, source: str, run: Measured) -> None:
        self.runs.setdefault(source, []).append(run)

    def markdown(self) -> str:
        rows: list[list[str]] = []
        rate = {s: [m.rate for m in runs] for s, runs in self.runs.items() if runs}
        for source, runs in self.runs.items():
            if not runs:
                continue
            stats = summarize(rate[source])
            ratio = "-"
            if source != "rate" and rate.get("rate"):
                pairs = ratios_of(rate[source], rate["rate"])
                ratio = f"{statistics.median(pairs):.2f}x" if pairs else "-"
            wall = statistics.median(m.rows / m.wall_s for m in runs if m.wall_s)
            cpu = statistics.median(m.broker_cpu_s for m in runs)
            rows.append(
                [
                    source,
                    f"{stats['median']:,.0f}",
                    f"{stats['min']:,.0f}-{stats['max']:,.0f}",
                    f"{wall:,.0f}" if source == "franz" else "-",
                    f"{cpu:.2f}" if source == "franz" else "-",
                    ratio,
                    str(len(runs)),
                ]
            )
        table = render_markdown_table(
            [
                "source",
                "rows/s (median)",
                "min-max",
                "wall rows/s",
                "broker CPU-s",
                "vs rate",
                "runs",
            ],
            rows,
            "lrrrrrr",
        )
        return "\n".join(
            ["## Streaming groupBy(key).count(), local[2]", "", table, *self.findings_lines()]
        )


class Bench:
    def __init__(self, cfg: Settings, base: Path, results: Results) -> None:
        self.cfg = cfg
        self.base = base
        self.results = results
        self.broker: Any = None
        self.spark: Any = None
        self.topic = "spark-bench"

    # -- set-up ---------------------------------------------------------------------------

    def _start(self) -> None:
        from tests.spark.conftest import build_session
        from tests.support.broker import BrokerProcess

        self.broker = BrokerProcess(self.base / "broker").start()
        register(self.broker.pid, self.broker)
        self._produce()
        print("starting a local[2] SparkSession ...", flush=True)
        self.spark = build_session("franz-spark-bench")

    def _produce(self) -> None:
        from confluent_kafka import Producer
        from confluent_kafka.admin import AdminClient, NewTopic

        bootstrap = self.broker.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(self.topic, 2, 1)])[self.topic].result(30)
        producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1_000_000}
        )
        value = b"x" * VALUE_SIZE
        keys = [f"k{i}".encode() for i in range(KEYS)]
        started = time.perf_counter()
        for i in range(self.cfg.records):
            while True:
                try:
                    producer.produce(self.topic, value, keys[i % KEYS], partition=i % 2)
                    break
                except BufferError:
                    producer.poll(0.05)
        if producer.flush(120):
            raise RuntimeError("the producer could not deliver the bench records")
        took = time.perf_counter() - started
        print(f"produced {self.cfg.records:,} records in {took:.1f} s", flush=True)

    # -- the two sources ------------------------------------------------------------------

    def _broker_cpu(self) -> float:
        user, system = parse_proc_stat(Path(f"/proc/{self.broker.pid}/stat").read_text())
        return (user + system) / TICK

    def _franz(self, limit: int | None = None) -> Measured:
        checkpoint = self.base / f"ckpt-{time.monotonic_ns()}"
        reader = (
            self.spark.readStream.format("franz")
            .option("kafka.bootstrap.servers", self.broker.bootstrap)
            .option("subscribe", self.topic)
            .option("startingOffsets", "earliest")
            .option("maxOffsetsPerTrigger", str(limit or self.cfg.batch))
        )
        cpu0, started = self._broker_cpu(), time.perf_counter()
        query = (
            reader.load()
            .groupBy("key")
            .count()
            .writeStream.outputMode("update")
            .format("noop")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        if not query.awaitTermination(self.cfg.run_timeout):
            query.stop()
            self.results.warn("a franz run hit its time limit; its figure is partial")
        wall = time.perf_counter() - started
        if query.exception() is not None:
            raise RuntimeError(f"the franz query failed: {query.exception()}")
        rows, seconds = rate_from_progress(query.recentProgress)
        shutil.rmtree(checkpoint, ignore_errors=True)
        return Measured(rows, seconds, wall, self._broker_cpu() - cpu0)

    def _rate(self, rows_wanted: int) -> Measured:
        from pyspark.sql import functions as F

        checkpoint = self.base / f"ckpt-{time.monotonic_ns()}"
        source = (
            self.spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", str(self.cfg.batch))
            .option("numPartitions", "2")
            .load()
        )
        key = F.concat(F.lit("k"), (F.col("value") % KEYS).cast("string")).cast("binary")
        started = time.perf_counter()
        query = (
            source.select(key.alias("key"))
            .groupBy("key")
            .count()
            .writeStream.outputMode("update")
            .format("noop")
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="0 seconds")
            .start()
        )
        deadline = started + self.cfg.run_timeout
        try:
            while time.perf_counter() < deadline:
                rows, _ = rate_from_progress(query.recentProgress)
                if rows >= rows_wanted or query.exception() is not None:
                    break
                time.sleep(0.05)
            else:
                self.results.warn("a rate run hit its time limit; its figure is partial")
        finally:
            query.stop()
        wall = time.perf_counter() - started
        if query.exception() is not None:
            raise RuntimeError(f"the rate query failed: {query.exception()}")
        rows, seconds = rate_from_progress(query.recentProgress)
        shutil.rmtree(checkpoint, ignore_errors=True)
        return Measured(rows, seconds, wall)

    # -- the suite ------------------------------------------------------------------------

    def run(self) -> None:
        self._start()
        print("warming up both sources (not counted) ...", flush=True)
        self._franz(limit=max(self.cfg.records // 4, 1))
        self._rate(self.cfg.batch)
        for i in range(self.cfg.runs):
            for source in rotate(["franz", "rate"], i):
                run = self._franz() if source == "franz" else self._rate(self.cfg.records)
                self.results.add(source, run)
                print(
                    f"run {i + 1}/{self.cfg.runs} {source}: {run.rows:,} rows, "
                    f"{run.rate:,.0f} rows/s (triggerExecution), wall {run.wall_s:.1f} s",
                    flush=True,
                )

    def close(self) -> None:
        if self.spark is not None:
            self.spark.stop()
        if self.broker is not None:
            self.broker.stop()


def header(cfg: Settings, machine: dict[str, Any], stamp: str) -> str:
    return "\n".join(
        [
            f"# franz spark bench, {stamp} ({cfg.mode})",
            "",
            f"commit {git_commit()}; {machine.get('cpus')} CPUs; load at start "
            f"{machine.get('loadavg_start')}; {cfg.records:,} records of {VALUE_SIZE} B per run, "
            f"{KEYS:,} keys, {cfg.batch:,} rows per micro-batch, {cfg.runs} run(s) per source",
        ]
    )


CAVEATS = [
    "rows/s is rows over the sum of the micro-batches' triggerExecution times (Spark's "
    "progress): query start-up and the gaps between batches are not in it, for either source",
    "the rate source generates rows inside the JVM: it is the aggregation's ceiling here, "
    "not a Kafka reader; franz's rows cross a socket, librdkafka and Arrow",
    "one shared 2-core VM: the Spark JVM, its Python workers and the broker compete for "
    "the same 2 cores; single figures are +-30 %",
]


def main(argv: Sequence[str] | None = None) -> int:
    cfg = settings_from_args(parse_args(argv))
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    return run_suite("spark", cfg, Results(), Bench, header, CAVEATS)


if __name__ == "__main__":
    sys.exit(main())
