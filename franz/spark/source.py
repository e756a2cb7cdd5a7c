"""``FranzDataSource``: the ``franz`` format, with Spark's Kafka source schema and options.

The class itself is light: Spark pickles it (with its options) to planner and worker
processes, which then ask it for a reader or a writer. Readers and writers are imported
lazily, so the process that only plans a write never loads the reader's code and vice versa.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql.datasource import DataSource
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

if TYPE_CHECKING:
    from pyspark.sql.datasource import (
        DataSourceReader,
        DataSourceStreamReader,
        DataSourceStreamWriter,
        DataSourceWriter,
    )

__all__ = ["HEADERS_TYPE", "FranzDataSource", "source_schema"]

#: ``headers``: Spark's Kafka source type, ``array<struct<key:string,value:binary>>``.
HEADERS_TYPE = ArrayType(
    StructType([StructField("key", StringType(), True), StructField("value", BinaryType(), True)]),
    True,
)


def source_schema(include_headers: bool) -> StructType:
    """The columns Spark's Kafka source yields, in its order (``headers`` last, if asked)."""
    fields = [
        StructField("key", BinaryType(), True),
        StructField("value", BinaryType(), True),
        StructField("topic", StringType(), True),
        StructField("partition", IntegerType(), True),
        StructField("offset", LongType(), True),
        StructField("timestamp", TimestampType(), True),
        StructField("timestampType", IntegerType(), True),
    ]
    if include_headers:
        fields.append(StructField("headers", HEADERS_TYPE, True))
    return StructType(fields)


class FranzDataSource(DataSource):
    """Read and write Kafka-protocol topics: ``spark.read.format("franz")``."""

    @classmethod
    def name(cls) -> str:
        return "franz"

    def _options(self) -> dict[str, str]:
        """The options as a plain dict with lowercased keys (Spark's option names are
        case-insensitive, and every value arrives as a string)."""
        return {str(key).lower(): str(value) for key, value in self.options.items()}

    def schema(self) -> StructType:
        value = self._options().get("includeheaders", "false").strip().lower()
        return source_schema(value == "true")

    def reader(self, schema: StructType) -> DataSourceReader:
        from franz.spark.batch_reader import FranzBatchReader

        return FranzBatchReader(self._options(), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        from franz.spark.stream_reader import FranzStreamReader

        return FranzStreamReader(self._options(), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from franz.spark.writer import FranzBatchWriter

        return FranzBatchWriter(self._options(), schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from franz.spark.writer import FranzStreamWriter

        return FranzStreamWriter(self._options(), schema, overwrite)
