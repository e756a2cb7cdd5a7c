"""``franz.spark.read``: the Arrow form ``read()`` yields is exactly the one Spark checks."""

from __future__ import annotations

import pickle

import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from franz.spark.read import FranzInputPartition, arrow_schema, data_loss_message
from franz.spark.source import source_schema


@pytest.mark.parametrize("headers", [False, True])
def test_arrow_schema_equals_sparks_conversion(headers: bool) -> None:
    expected = to_arrow_schema(source_schema(headers), timezone="UTC")
    assert arrow_schema(headers).equals(expected)


def test_input_partition_pickles() -> None:
    part = FranzInputPartition("t", 3, 10, 20)
    assert pickle.loads(pickle.dumps(part)) == part


def test_data_loss_messages_say_what_the_option_does() -> None:
    assert "set the source option 'failOnDataLoss' to 'false'" in data_loss_message("x", True)
    assert "set the source option 'failOnDataLoss' to 'true'" in data_loss_message("x", False)
