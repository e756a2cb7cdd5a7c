"""The batch job: a topic's retained history into Parquet, for offline analysis.

Usage::

    python -m pipelines.history_batch --bootstrap-server HOST:PORT --output DIR
        [--topic user-activity] [--starting-offsets earliest] [--ending-offsets latest]
        [--format franz|kafka]

``spark.read.format("franz")`` with ``startingOffsets=earliest`` and ``endingOffsets=latest``
reads every record the topic retains now (the end offsets are fixed when the job plans), and
writes them to ``DIR`` (overwriting it), partitioned by ``date`` (the UTC date of the record's
Kafka timestamp, so malformed records have one too). Columns: the source's ``topic``,
``partition``, ``offset``, ``timestamp``, ``timestampType``, ``key``, ``value`` (raw bytes),
the event's fields as the streaming job parses them (``event_id`` ... ``user_agent``,
``event_time``) and ``error`` / ``error_detail`` (null for a valid event), so the history keeps
the malformed records and says why they are malformed. It prints the row counts.
``--format kafka`` reads with Spark's own Kafka connector instead (same options).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pipelines.activity_stream import parse_activity
from pipelines.common import CONNECTORS, EVENTS_TOPIC

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["HistoryRun", "main", "run_history_batch"]


@dataclass
class HistoryRun:
    """Row counts of the Parquet the job wrote (read back from it)."""

    rows: int = 0
    valid: int = 0
    by_date: dict[str, int] = field(default_factory=dict)
    by_event_type: dict[str, int] = field(default_factory=dict)
    by_error: dict[str, int] = field(default_factory=dict)
    by_partition: dict[int, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        def fmt(counts: dict[str, int] | dict[int, int]) -> str:
            return ", ".join(f"{key} {value}" for key, value in sorted(counts.items()))

        return [
            f"{self.rows} rows ({self.valid} valid events, {self.rows - self.valid} malformed)",
            f"by date: {fmt(self.by_date)}",
            f"by partition: {fmt(self.by_partition)}",
            f"valid by event type: {fmt(self.by_event_type)}",
            f"malformed by reason: {fmt(self.by_error)}",
        ]


def run_history_batch(
    spark: SparkSession,
    bootstrap: str,
    output: str | Path,
    *,
    topic: str = EVENTS_TOPIC,
    starting_offsets: str = "earliest",
    ending_offsets: str = "latest",
    connector: str = "franz",
) -> HistoryRun:
    """Read the topic's history between the offsets and write it to ``output`` as Parquet,
    with ``connector`` (``franz`` or Spark's ``kafka``)."""
    from pyspark.sql import functions as F

    raw = (
        spark.read.format(connector)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", starting_offsets)
        .option("endingOffsets", ending_offsets)
        .load()
    )
    history = parse_activity(raw).withColumn("date", F.to_date("timestamp"))
    history.write.mode("overwrite").partitionBy("date").parquet(str(output))

    written = spark.read.parquet(str(output))
    run = HistoryRun()
    for row in written.groupBy("date", "partition", "event_type", "error").count().collect():
        count = int(row["count"])
        run.rows += count
        date = str(row["date"])
        run.by_date[date] = run.by_date.get(date, 0) + count
        run.by_partition[row["partition"]] = run.by_partition.get(row["partition"], 0) + count
        if row["error"] is None:
            run.valid += count
            run.by_event_type[row["event_type"]] = (
                run.by_event_type.get(row["event_type"], 0) + count
            )
        else:
            run.by_error[row["error"]] = run.by_error.get(row["error"], 0) + count
    return run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.history_batch",
        description="Batch job: load a topic's retained history into Parquet (by date).",
    )
    parser.add_argument("--bootstrap-server", required=True, help="HOST:PORT of a broker")
    parser.add_argument("--topic", default=EVENTS_TOPIC)
    parser.add_argument("--output", required=True, type=Path, help="Parquet directory (replaced)")
    parser.add_argument("--starting-offsets", default="earliest", help="earliest or JSON")
    parser.add_argument("--ending-offsets", default="latest", help="latest or JSON")
    parser.add_argument(
        "--format",
        choices=CONNECTORS,
        default="franz",
        help="the connector: franz (Franz's data source) or kafka (Spark's own)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from pipelines.common import build_session

    spark = build_session("franz-history-batch", connector=args.format)
    try:
        run = run_history_batch(
            spark,
            args.bootstrap_server,
            args.output,
            topic=args.topic,
            starting_offsets=args.starting_offsets,
            ending_offsets=args.ending_offsets,
            connector=args.format,
        )
    finally:
        spark.stop()
    for line in run.lines():
        print(line)
    print(f"Parquet: {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
