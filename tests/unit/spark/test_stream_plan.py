"""``FranzStreamReader``'s planning: pure functions of (start, end), no broker needed."""

from __future__ import annotations

import pickle

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows

from franz.spark.read import DataLossError, FranzInputPartition
from franz.spark.source import source_schema
from franz.spark.stream_reader import FranzStreamReader

OPTIONS = {"kafka.bootstrap.servers": "127.0.0.1:1", "subscribe": "t"}


def reader(**extra: str) -> FranzStreamReader:
    return FranzStreamReader(
        {**OPTIONS, **{k.lower(): v for k, v in extra.items()}}, source_schema(False)
    )


def test_partitions_depend_only_on_start_and_end() -> None:
    one = reader(minPartitions="4")
    start = {"t": {"0": 10, "1": 0}}
    end = {"t": {"0": 1010, "1": 5, "2": 7}}
    planned = one.partitions(start, end)
    assert planned == one.partitions(start, end)
    # A fresh copy (a restarted query's runner) plans the same tasks.
    other = pickle.loads(pickle.dumps(one))
    assert other.partitions(start, end) == planned
    assert all(isinstance(p, FranzInputPartition) for p in planned)
    covered = sorted((p.partition, o) for p in planned for o in range(p.start, p.end))
    # t-2 is new: read from offset 0.
    expected = [(0, o) for o in range(10, 1010)] + [(1, o) for o in range(5)]
    expected += [(2, o) for o in range(7)]
    assert covered == sorted(expected)


def test_vanished_and_shrunk_partitions_are_data_loss() -> None:
    with pytest.raises(DataLossError, match=r"t-1 are gone.*failOnDataLoss' to 'false'"):
        reader().partitions({"t": {"0": 0, "1": 5}}, {"t": {"0": 3}})
    with pytest.raises(DataLossError, match="offset was changed from 5 to 2"):
        reader().partitions({"t": {"0": 5}}, {"t": {"0": 2}})
    lenient = reader(failOnDataLoss="false")
    assert lenient.partitions({"t": {"0": 0, "1": 5}}, {"t": {"0": 3}}) == [
        FranzInputPartition("t", 0, 0, 3)
    ]
    assert lenient.partitions({"t": {"0": 5}}, {"t": {"0": 2}}) == []


def test_read_limit_and_pickling_drop_the_client() -> None:
    assert isinstance(reader().getDefaultReadLimit(), ReadAllAvailable)
    assert reader(maxOffsetsPerTrigger="300").getDefaultReadLimit() == ReadMaxRows(300)
    r = reader()
    _ = r.offset_reader  # created lazily; no connection until a lookup
    assert pickle.loads(pickle.dumps(r))._offsets is None
    r.commit({"t": {"0": 1}})  # advisory: nothing to do, must not fail


def test_a_custom_schema_is_refused() -> None:
    from pyspark.sql.types import StringType, StructField, StructType

    from franz.spark.batch_reader import FranzBatchReader
    from franz.spark.config import OptionError

    custom = StructType([StructField("value", StringType())])
    with pytest.raises(OptionError, match="fixed schema"):
        FranzStreamReader(dict(OPTIONS), custom)
    with pytest.raises(OptionError, match="fixed schema"):
        FranzBatchReader(dict(OPTIONS), source_schema(True))
    FranzBatchReader({**OPTIONS, "includeheaders": "true"}, source_schema(True))
