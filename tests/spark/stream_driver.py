"""A Structured Streaming driver in a process of its own, for tests that kill it.

``python -m tests.spark.stream_driver --bootstrap B --topic T --checkpoint C --output O
[--max-offsets N] [--trigger available-now|continuous-ms]`` streams ``T`` from the earliest
offset into a Parquet sink at ``O`` with its checkpoint at ``C``, prints ``started`` once the
query runs and ``done`` when an availableNow run ends. Killed with SIGKILL, it leaves exactly
what a crashed driver leaves: a checkpoint whose last ``offsets/N`` may have no ``commits/N``,
and Parquet files of an unfinished batch that the sink's ``_spark_metadata`` log does not list.

With ``--sink-topic S`` (instead of ``--output``) it writes to topic ``S`` through the
``franz`` sink with ``exactlyOnce`` (``--exactly-once false`` for the marker-only sink): key
``<partition>:<offset>`` of the input record, its value. Killed, it leaves open transactions
of the batch's write tasks as well.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tests.spark.conftest import build_session


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="stream_driver")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--checkpoint", required=True)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--output", help="a Parquet sink's path")
    target.add_argument("--sink-topic", help="a topic, through the franz sink")
    parser.add_argument("--exactly-once", choices=("true", "false"), default="true")
    parser.add_argument("--max-offsets", type=int, default=0)
    parser.add_argument(
        "--trigger-ms",
        type=int,
        default=-1,
        help="processing-time trigger interval; -1 (default) runs availableNow",
    )
    args = parser.parse_args(argv)

    spark = build_session("franz-stream-driver")
    reader = (
        spark.readStream.format("franz")
        .option("kafka.bootstrap.servers", args.bootstrap)
        .option("subscribe", args.topic)
        .option("startingOffsets", "earliest")
    )
    if args.max_offsets:
        reader = reader.option("maxOffsetsPerTrigger", str(args.max_offsets))
    if args.sink_topic is None:
        writer = (
            reader.load()
            .select("partition", "offset", "key", "value")
            .writeStream.format("parquet")
            .option("path", args.output)
        )
    else:
        writer = (
            reader.load()
            .selectExpr("concat(partition, ':', offset) as key", "value")
            .writeStream.format("franz")
            .option("kafka.bootstrap.servers", args.bootstrap)
            .option("topic", args.sink_topic)
            .option("exactlyOnce", args.exactly_once)
        )
    writer = writer.option("checkpointLocation", args.checkpoint)
    if args.trigger_ms >= 0:
        writer = writer.trigger(processingTime=f"{args.trigger_ms} milliseconds")
    else:
        writer = writer.trigger(availableNow=True)
    query = writer.start()
    print("started", flush=True)
    query.awaitTermination()
    print("done", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
