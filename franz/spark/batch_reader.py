"""``FranzBatchReader``: ``spark.read.format("franz")``, as Spark's ``KafkaRelation``.

Planning (driver side, in Spark's planner process): resolve the topic-partitions
(``subscribe`` / ``subscribePattern`` / ``assign``), the starting offsets
(``startingOffsets`` default ``earliest``, or by timestamp) and the ending offsets
(``endingOffsets`` default ``latest``, or by timestamp), then one input partition per
non-empty ``[start, end)`` (more with ``minPartitions`` / ``maxRecordsPerPartition``).
Reading (executors): :func:`franz.spark.read.read_range`, which handles offsets deleted
meanwhile per ``failOnDataLoss``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from franz.spark.admin import OffsetReader
from franz.spark.offsets import OffsetRange, split_ranges
from franz.spark.options import ReadOptions, check_schema, parse_read_options
from franz.spark.read import FranzInputPartition, read_range

__all__ = ["FranzBatchReader"]


class FranzBatchReader(DataSourceReader):
    """A batch read of Kafka-protocol topics (options checked at construction)."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options: ReadOptions = parse_read_options(options, streaming=False)
        check_schema(schema, self.options.include_headers)
        self.schema = schema

    def plan(self) -> list[OffsetRange]:
        """The offset ranges to read, before splitting (Spark's ``KafkaRelation.buildScan``)."""
        assert self.options.ending is not None
        offsets = OffsetReader(self.options)
        try:
            tps = offsets.checked_topic_partitions()
            start = offsets.resolve(self.options.starting, tps, starting=True)
            end = offsets.resolve(self.options.ending, tps, starting=False)
        finally:
            offsets.close()
        ranges = []
        for tp in sorted(end):
            begin = start[tp]
            if begin > end[tp]:
                raise ValueError(
                    f"Beginning offset {begin} is after the ending offset {end[tp]} for topic "
                    f"{tp.topic} partition {tp.partition}. You either provided an invalid "
                    "fromOffset, or the Kafka topic has been damaged"
                )
            ranges.append(OffsetRange(tp.topic, tp.partition, begin, end[tp]))
        return ranges

    def partitions(self) -> Sequence[InputPartition]:
        pieces = split_ranges(
            self.plan(), self.options.min_partitions, self.options.max_records_per_partition
        )
        return [FranzInputPartition(r.topic, r.partition, r.start, r.end) for r in pieces]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, FranzInputPartition):
            # Spark reads one InputPartition(None) when partitions() planned none.
            return iter(())
        return read_range(partition, self.options)
