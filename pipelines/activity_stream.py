"""The streaming job: user-activity events in, per-minute page stats and dead letters out.

Usage::

    python -m pipelines.activity_stream --bootstrap-server HOST:PORT --checkpoint DIR
        --output DIR [--topic user-activity] [--trigger availableNow|<processing-time ms>]
        [--max-offsets-per-trigger N] [--timeout S] [--format franz|kafka]

It reads ``user-activity`` with ``readStream.format("franz")`` (Spark's Kafka source options;
``--format kafka``: Spark's own Kafka connector, same options, see ``pipelines.common``) and
writes both topics with the same connector. It runs three queries on the same parsed stream,
each with its own checkpoint (``<checkpoint>/<query name>``):

``page-stats-parquet``
    valid events -> ``withWatermark("event_time", "120 seconds")`` ->
    ``groupBy(window(event_time, "1 minute"), page, event_type).count()``, append mode (only
    windows the watermark has finalised), to Parquet in ``<output>/page_stats`` with columns
    ``window_start``, ``window_end`` (timestamps), ``page``, ``event_type``, ``count``.
``page-stats-topic``
    the same counts to the ``page-stats`` topic: key
    ``<window_start>|<page>|<event_type>``, value JSON ``{"window_start":
    "2026-01-01T00:01:00.000Z", "window_end": ..., "page": ..., "event_type": ...,
    "count": n}``.
``dead-letters``
    every malformed record to ``user-activity-dlq``, never dropped silently: the original key
    and value bytes, and headers ``error.reason`` (``invalid_json``, ``missing_field``,
    ``unknown_event_type``, ``bad_timestamp``), ``error.detail``, ``source.topic``,
    ``source.partition``, ``source.offset``, ``source.timestamp`` (epoch ms).

Events that are valid but later than the watermark are dropped by the aggregation, as Spark
does (``pipelines.oracle`` states the rules exactly). Each query prints one line per
micro-batch. The two aggregating queries compute the same counts independently (the same input,
the same rules); a single ``foreachBatch`` writing both sinks would lose the sinks'
exactly-once commit protocols.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from pipelines.common import CONNECTORS, DLQ_TOPIC, EVENTS_TOPIC, STATS_TOPIC, watermark_delay
from pipelines.events import EVENT_TYPES, REQUIRED_FIELDS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

__all__ = [
    "QUERY_NAMES",
    "QueryRun",
    "StreamRun",
    "event_schema",
    "main",
    "parse_activity",
    "run_activity_stream",
    "source_options",
]

QUERY_NAMES: Final = ("page-stats-parquet", "page-stats-topic", "dead-letters")
OPTIONAL_FIELDS: Final = ("element", "query", "referrer", "user_agent")
#: ``ts``: ISO-8601 UTC with milliseconds (``X`` accepts the ``Z``).
TS_FORMAT: Final = "yyyy-MM-dd'T'HH:mm:ss.SSSX"
TS_REGEX: Final = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"
#: How the outputs print timestamps (always UTC, whatever the session's time zone).
JSON_OPTIONS: Final = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'", "timeZone": "UTC"}
_CORRUPT: Final = "_corrupt_record"


def event_schema() -> Any:
    """Every field as a string (a number where a string belongs is kept as its text and then
    judged by the rules), plus the corrupt-record column that tells invalid JSON apart."""
    from pyspark.sql.types import StringType, StructField, StructType

    names = (*REQUIRED_FIELDS, *OPTIONAL_FIELDS, _CORRUPT)
    return StructType([StructField(name, StringType(), True) for name in names])


def parse_activity(raw: DataFrame) -> DataFrame:
    """The source's columns plus the event's fields, ``event_time`` (timestamp) and ``error``
    / ``error_detail`` (null for a valid event). Validation order, first match wins:
    ``invalid_json``, ``missing_field``, ``unknown_event_type``, ``bad_timestamp``."""
    from pyspark.sql import functions as F

    options = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT}
    parsed = raw.withColumn(
        "_event", F.from_json(F.col("value").cast("string"), event_schema(), options)
    )
    event = F.col("_event")
    invalid = event.isNull() | event[_CORRUPT].isNotNull()
    missing = F.concat_ws(",", *[F.when(event[f].isNull(), F.lit(f)) for f in REQUIRED_FIELDS])
    type_missing = F.when(
        (event["event_type"] == "click") & event["element"].isNull(), F.lit("element")
    ).when((event["event_type"] == "search") & event["query"].isNull(), F.lit("query"))
    # The regex keeps Spark as strict as the schema (UTC, 'Z', milliseconds): the pattern
    # alone would also take offsets such as +01:00.
    event_time = F.when(
        event["ts"].rlike(TS_REGEX), F.try_to_timestamp(event["ts"], F.lit(TS_FORMAT))
    )
    known = event["event_type"].isin(*EVENT_TYPES)
    error: Column = (
        F.when(invalid, F.lit("invalid_json"))
        .when(missing != "", F.lit("missing_field"))
        .when(~known, F.lit("unknown_event_type"))
        .when(type_missing.isNotNull(), F.lit("missing_field"))
        .when(event_time.isNull(), F.lit("bad_timestamp"))
    )
    detail: Column = (
        F.when(invalid, F.lit("not a JSON object"))
        .when(missing != "", F.concat(F.lit("missing or null: "), missing))
        .when(~known, F.concat(F.lit("event_type: "), event["event_type"]))
        .when(type_missing.isNotNull(), F.concat(F.lit("missing or null: "), type_missing))
        .when(event_time.isNull(), F.concat(F.lit("ts: "), event["ts"]))
    )
    fields = [event[name].alias(name) for name in (*REQUIRED_FIELDS, *OPTIONAL_FIELDS)]
    return parsed.select(
        *[c for c in raw.columns],
        *fields,
        event_time.alias("event_time"),
        error.alias("error"),
        detail.alias("error_detail"),
    )


def page_stats(parsed: DataFrame) -> DataFrame:
    """Per-minute counts per page and event type of the valid events, with the watermark."""
    from pyspark.sql import functions as F

    valid = parsed.where(F.col("error").isNull()).select("event_time", "page", "event_type")
    counts = (
        valid.withWatermark("event_time", watermark_delay())
        .groupBy(F.window("event_time", "1 minute"), "page", "event_type")
        .count()
    )
    return counts.select(
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        "page",
        "event_type",
        "count",
    )


def stats_records(stats: DataFrame) -> DataFrame:
    """``page_stats`` rows as ``page-stats`` records (key, value)."""
    from pyspark.sql import functions as F

    value = F.to_json(F.struct(*stats.columns), JSON_OPTIONS)
    keyed = stats.select(value.alias("value"))
    key = F.concat_ws(
        "|",
        F.get_json_object("value", "$.window_start"),
        F.get_json_object("value", "$.page"),
        F.get_json_object("value", "$.event_type"),
    )
    return keyed.select(key.cast("binary").alias("key"), F.col("value").cast("binary"))


def dead_letters(parsed: DataFrame) -> DataFrame:
    """Malformed records as dead letters: original key and value, headers saying why."""
    from pyspark.sql import functions as F

    def header(name: str, value: Column) -> Column:
        return F.struct(
            F.lit(name).alias("key"), value.cast("string").cast("binary").alias("value")
        )

    headers = F.array(
        header("error.reason", F.col("error")),
        header("error.detail", F.coalesce(F.col("error_detail"), F.lit(""))),
        header("source.topic", F.col("topic")),
        header("source.partition", F.col("partition")),
        header("source.offset", F.col("offset")),
        header("source.timestamp", F.unix_millis(F.col("timestamp"))),
    )
    return parsed.where(F.col("error").isNotNull()).select("key", "value", headers.alias("headers"))


def source_options(
    bootstrap: str, topic: str = EVENTS_TOPIC, max_offsets_per_trigger: int | None = None
) -> dict[str, str]:
    options = {
        "kafka.bootstrap.servers": bootstrap,
        "subscribe": topic,
        "startingOffsets": "earliest",
    }
    if max_offsets_per_trigger is not None:
        options["maxOffsetsPerTrigger"] = str(max_offsets_per_trigger)
    return options


@dataclass
class QueryRun:
    """One query's micro-batches in this run (from its progress reports)."""

    name: str
    batches: int = 0
    input_rows: int = 0
    watermark_ms: int | None = None
    state_rows: int | None = None


@dataclass
class StreamRun:
    """What a run of the job did, per query name."""

    queries: dict[str, QueryRun] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def watermark_ms(self) -> int | None:
        """The aggregation's watermark at the end of the run (from ``page-stats-parquet``)."""
        return self.queries[QUERY_NAMES[0]].watermark_ms


def _iso_ms(text: str | None) -> int | None:
    if not text:
        return None
    moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    return round(moment.timestamp() * 1000)


def _progress_line(progress: Any) -> str:
    watermark = (progress.eventTime or {}).get("watermark")
    state = progress.stateOperators[0].numRowsTotal if progress.stateOperators else None
    parts = [
        f"[{progress.name}] batch {progress.batchId}: {progress.numInputRows} input rows",
        f"{progress.durationMs.get('triggerExecution', 0)} ms",
    ]
    if watermark:
        parts.append(f"watermark {watermark}")
    if state is not None:
        parts.append(f"{state} windows in state")
    return ", ".join(parts)


#: How long a query may take to initialize its source before the next query starts anyway.
_INITIALIZE_TIMEOUT_S: Final = 120.0
#: ``StreamExecution``'s status messages until its sources exist (then the first batch).
_INITIALIZING: Final = ("Initializing StreamExecution", "Initializing sources")


def _await_initialized(query: StreamingQuery) -> None:
    """Wait (bounded) until ``query`` has initialized its source, so the queries start one
    after another: a Python data source's source starts a Python worker, which must connect
    back to the JVM within Spark's fixed 10 s (``PythonWorkerFactory.createSimpleWorker``),
    and three of them starting at once on a loaded 2-core machine do not ("Python worker
    failed to connect back")."""
    deadline = time.monotonic() + _INITIALIZE_TIMEOUT_S
    while (
        query.isActive and query.status["message"] in _INITIALIZING and time.monotonic() < deadline
    ):
        time.sleep(0.1)


def _start_queries(
    spark: SparkSession,
    bootstrap: str,
    checkpoint: Path,
    output: Path,
    *,
    topic: str,
    trigger: dict[str, Any],
    max_offsets_per_trigger: int | None,
    connector: str,
    one_by_one: bool,
    timeout: float | None,
) -> list[StreamingQuery]:
    """Start the three queries. ``one_by_one`` (availableNow): each runs to its end before
    the next starts (they are independent: the same offsets, their own checkpoints and
    sinks), so at most one query's Python workers start at a time; else each starts once the
    previous one has initialized its source. Raises ``TimeoutError`` if a query does not end
    within ``timeout`` (from now) under ``one_by_one``."""
    deadline = None if timeout is None else time.monotonic() + timeout
    reader = spark.readStream.format(connector)
    for key, value in source_options(bootstrap, topic, max_offsets_per_trigger).items():
        reader = reader.option(key, value)
    parsed = parse_activity(reader.load())
    stats = page_stats(parsed)
    writers = {
        "page-stats-parquet": stats.writeStream.format("parquet")
        .option("path", str(output / "page_stats"))
        .outputMode("append"),
        "page-stats-topic": stats_records(stats)
        .writeStream.format(connector)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", STATS_TOPIC)
        .outputMode("append"),
        "dead-letters": dead_letters(parsed)
        .writeStream.format(connector)
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", DLQ_TOPIC)
        .outputMode("append"),
    }
    queries: list[StreamingQuery] = []
    try:
        for name in QUERY_NAMES:
            writer = (
                writers[name]
                .queryName(name)
                .option("checkpointLocation", str(checkpoint / name))
                .trigger(**trigger)
            )
            query = writer.start()
            queries.append(query)
            if not one_by_one:
                _await_initialized(query)
            elif deadline is None:
                query.awaitTermination()
            elif not query.awaitTermination(max(1, round(deadline - time.monotonic()))):
                raise TimeoutError(f"query {name} did not end within {timeout} s")
    except BaseException:
        for query in queries:
            query.stop()
        raise
    return queries


def run_activity_stream(
    spark: SparkSession,
    bootstrap: str,
    checkpoint: str | Path,
    output: str | Path,
    *,
    topic: str = EVENTS_TOPIC,
    trigger_ms: int | None = None,
    max_offsets_per_trigger: int | None = None,
    timeout: float | None = 600.0,
    report: Callable[[str], object] | None = print,
    connector: str = "franz",
) -> StreamRun:
    """Run the job's three queries until they end: with ``availableNow`` (``trigger_ms`` None)
    once everything in the topic now has been processed (one query after another); with a
    processing-time trigger until ``timeout`` (None: until interrupted). ``connector``:
    ``franz`` or ``kafka`` (Spark's, whose jars the session must have been built with). A
    query that fails stops the others and raises; not ending within ``timeout`` under
    availableNow raises ``TimeoutError``."""
    from pyspark.sql.streaming.listener import StreamingQueryListener

    reported: set[tuple[str, int]] = set()

    class Progress(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            pass

        def onQueryProgress(self, event: Any) -> None:
            progress = event.progress
            if progress.name in QUERY_NAMES:
                reported.add((progress.name, progress.batchId))
                if report is not None:
                    report(_progress_line(progress))

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            pass

    trigger: dict[str, Any] = (
        {"availableNow": True}
        if trigger_ms is None
        else {"processingTime": f"{trigger_ms} milliseconds"}
    )
    listener = Progress()
    spark.streams.addListener(listener)
    started = time.monotonic()
    queries: list[StreamingQuery] = []
    try:
        queries = _start_queries(
            spark,
            bootstrap,
            Path(checkpoint),
            Path(output),
            topic=topic,
            trigger=trigger,
            max_offsets_per_trigger=max_offsets_per_trigger,
            connector=connector,
            one_by_one=trigger_ms is None,
            timeout=timeout,
        )
        deadline = None if timeout is None else started + timeout
        for query in queries:
            if deadline is None:
                query.awaitTermination()
            elif not query.awaitTermination(max(1, round(deadline - time.monotonic()))):
                if trigger_ms is None:
                    raise TimeoutError(f"query {query.name} did not end within {timeout} s")
                break
    finally:
        for query in queries:
            if query.isActive:
                query.stop()
        # The listener bus is asynchronous: let the last progress lines out before leaving.
        expected = {(q.name, p.batchId) for q in queries for p in q.recentProgress}
        settle = time.monotonic() + 5.0
        while not expected <= reported and time.monotonic() < settle:
            time.sleep(0.05)
        spark.streams.removeListener(listener)
    run = StreamRun(seconds=time.monotonic() - started)
    for query in queries:
        info = QueryRun(query.name)
        seen: set[int] = set()
        for progress in query.recentProgress:
            # Idle reports (no batch ran) carry no addBatch time; count each batch once.
            if "addBatch" not in progress.durationMs or progress.batchId in seen:
                continue
            seen.add(progress.batchId)
            info.batches += 1
            info.input_rows += progress.numInputRows
            info.watermark_ms = _iso_ms((progress.eventTime or {}).get("watermark"))
            if progress.stateOperators:
                info.state_rows = progress.stateOperators[0].numRowsTotal
        run.queries[query.name] = info
    return run


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pipelines.activity_stream",
        description="Streaming job: parse user-activity events, dead-letter the malformed "
        "ones, write per-minute page stats (with a watermark) to Parquet and a topic.",
    )
    parser.add_argument("--bootstrap-server", required=True, help="HOST:PORT of a broker")
    parser.add_argument("--checkpoint", required=True, type=Path, help="checkpoint directory")
    parser.add_argument("--output", required=True, type=Path, help="Parquet output directory")
    parser.add_argument("--topic", default=EVENTS_TOPIC)
    parser.add_argument(
        "--trigger",
        default="availableNow",
        help="availableNow (process what is there, then stop) or a processing-time interval "
        "in ms (run until --timeout or Ctrl-C)",
    )
    parser.add_argument("--max-offsets-per-trigger", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=None, help="seconds")
    parser.add_argument(
        "--format",
        choices=CONNECTORS,
        default="franz",
        help="the connector: franz (Franz's data source) or kafka (Spark's own)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    trigger_ms: int | None = None
    if args.trigger != "availableNow":
        try:
            trigger_ms = int(args.trigger)
        except ValueError:
            parser.error("--trigger: availableNow or an interval in milliseconds")
    from pipelines.common import build_session

    spark = build_session("franz-activity-stream", connector=args.format)
    try:
        run = run_activity_stream(
            spark,
            args.bootstrap_server,
            args.checkpoint,
            args.output,
            topic=args.topic,
            trigger_ms=trigger_ms,
            max_offsets_per_trigger=args.max_offsets_per_trigger,
            timeout=args.timeout
            if args.timeout is not None
            else (600.0 if trigger_ms is None else None),
            connector=args.format,
        )
    except KeyboardInterrupt:
        print("interrupted: queries stopped", file=sys.stderr)
        return 130
    finally:
        spark.stop()
    for info in run.queries.values():
        print(f"{info.name}: {info.batches} batches, {info.input_rows} input rows")
    print(f"done in {run.seconds:.1f} s; Parquet: {args.output / 'page_stats'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
