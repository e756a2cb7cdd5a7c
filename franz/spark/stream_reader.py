"""``FranzStreamReader``: ``spark.readStream.format("franz")``, as Spark's
``KafkaMicroBatchStream``.

Offsets in the checkpoint are ``{"topic": {"partition": next offset}}`` in canonical form
(:func:`franz.spark.offsets.offsets_to_json`). The engine's calls, and where they run:

- Driver, in the query's long-lived streaming runner process (one reader instance for the
  run; it keeps one admin client, created lazily and never pickled):
  ``prepareForTriggerAvailableNow`` (pins the latest offsets: an availableNow run stops
  there), ``getDefaultReadLimit`` (``ReadMaxRows(maxOffsetsPerTrigger)``),
  ``initialOffset`` (only for a new checkpoint: resolves ``startingOffsets`` /
  by-timestamp to concrete offsets, so a restart never re-resolves ``latest``),
  ``latestOffset(start, limit)`` (the end of the next micro-batch: the current end offsets,
  including partitions and pattern-matched topics created since, cut down to the limit as
  Spark's ``rateLimit``), ``partitions(start, end)`` and ``commit(end)``.
- Executors: ``read(partition)`` on a fresh unpickled copy (:mod:`franz.spark.read`).

Determinism: ``partitions(start, end)`` depends only on its arguments (plus the options), so
a micro-batch that was planned but not committed before a crash is replayed with the same
tasks. A partition absent from ``start`` is new and is read from offset 0, as Spark's source
does (it reports data loss when a new partition does not start at 0; here ``read()`` does,
when offset 0 is gone). A partition in ``start`` but not in ``end`` vanished (its topic was
deleted), and an end below the start means the topic was recreated: both are data loss,
handled per ``failOnDataLoss``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from franz.spark.admin import OffsetReader
from franz.spark.offsets import (
    OffsetRange,
    TopicPartition,
    offsets_from_json,
    offsets_to_json,
    rate_limit,
    split_ranges,
)
from franz.spark.options import ReadOptions, check_schema, parse_read_options
from franz.spark.read import FranzInputPartition, read_range, report_data_loss

__all__ = ["FranzStreamReader"]

log = logging.getLogger(__name__)

Offsets = dict[str, dict[str, int]]


class FranzStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming read of Kafka-protocol topics (options checked at construction)."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options: ReadOptions = parse_read_options(options, streaming=True)
        check_schema(schema, self.options.include_headers)
        self.schema = schema
        self._offsets: OffsetReader | None = None
        #: The latest offsets pinned by ``prepareForTriggerAvailableNow``.
        self._pinned: dict[TopicPartition, int] | None = None
        #: The true latest offsets seen by the last ``latestOffset`` (for the progress).
        self._latest: dict[TopicPartition, int] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_offsets"] = None
        return state

    @property
    def offset_reader(self) -> OffsetReader:
        if self._offsets is None:
            self._offsets = OffsetReader(self.options)
        return self._offsets

    # -- planning (driver) ----------------------------------------------------------------

    def initialOffset(self) -> Offsets:
        reader = self.offset_reader
        tps = reader.checked_topic_partitions()
        start = reader.resolve(self.options.starting, tps, starting=True)
        log.info("franz source: initial offsets %s", start)
        return offsets_to_json(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        limit = self.options.max_offsets_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def prepareForTriggerAvailableNow(self) -> None:
        reader = self.offset_reader
        self._pinned = reader.latest(reader.topic_partitions())
        log.info("franz source: availableNow stops at %s", self._pinned)

    def _fetch_latest(self) -> dict[TopicPartition, int]:
        reader = self.offset_reader
        return reader.latest(reader.topic_partitions())

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        begin = offsets_from_json(start)
        if self._pinned is not None:
            # Spark calls prepareForTriggerAvailableNow before initialOffset: a start resolved
            # (``latest``) after the pin may be past it. That is not data loss, only nothing
            # to read in this run.
            latest = {tp: max(o, begin.get(tp, o)) for tp, o in self._pinned.items()}
            self._latest = None
        else:
            latest = self._latest = self._fetch_latest()
        end = dict(latest)
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(limit.max_rows, begin, latest)
        return offsets_to_json(end)

    def reportLatestOffset(self) -> Offsets | None:
        latest = self._latest
        if latest is None:
            latest = self._fetch_latest()
        return offsets_to_json(latest)

    def plan(self, start: Offsets, end: Offsets) -> list[OffsetRange]:
        """The offset ranges of the micro-batch ``(start, end]`` (Spark's
        ``planInputPartitions``), data loss reported per ``failOnDataLoss``."""
        begin = offsets_from_json(start)
        until = offsets_from_json(end)
        fail = self.options.fail_on_data_loss
        gone = sorted(set(begin) - set(until))
        if gone:
            names = ", ".join(str(tp) for tp in gone)
            report_data_loss(f"{names} are gone", fail)
        ranges = []
        for tp in sorted(until):
            first = begin.get(tp, 0)
            last = until[tp]
            if last < first:
                report_data_loss(
                    f"Partition {tp}'s offset was changed from {first} to {last}, some data "
                    "may have been missed",
                    fail,
                )
                continue
            ranges.append(OffsetRange(tp.topic, tp.partition, first, last))
        return ranges

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        pieces = split_ranges(
            self.plan(start, end),
            self.options.min_partitions,
            self.options.max_records_per_partition,
        )
        return [FranzInputPartition(r.topic, r.partition, r.start, r.end) for r in pieces]

    def commit(self, end: Offsets) -> None:
        """Nothing to do: progress lives in Spark's checkpoint, which is the only source of
        truth for restarts. Spark's Kafka source commits nothing either (offsets committed to
        a consumer group would be advisory at best, one batch late, since Spark calls
        ``commit`` only when it plans the next batch)."""

    # -- reading (executors) --------------------------------------------------------------

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, FranzInputPartition):
            # Spark reads one InputPartition(None) when partitions() planned none.
            return iter(())
        return read_range(partition, self.options)
