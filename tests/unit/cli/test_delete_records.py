"""Pure parts of ``franz delete-records``: Kafka's offset JSON and error text."""

from __future__ import annotations

import json

import pytest
from confluent_kafka import KafkaError, KafkaException

from franz.admin.client import java_error_text
from franz.admin.options import ToolError
from franz.cli.tools.delete_records import parse_offset_json


def test_offsets_by_partition() -> None:
    text = json.dumps(
        {
            "partitions": [
                {"topic": "a", "partition": 0, "offset": 5},
                {"topic": "a", "partition": 1, "offset": -1},
            ],
            "version": 1,
        }
    )
    assert parse_offset_json(text) == {("a", 0): 5, ("a", 1): -1}
    # version defaults to 1 (Kafka's EARLIEST_VERSION).
    assert parse_offset_json('{"partitions": []}') == {}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "The input string is not a valid JSON"),
        ('{"version": 1}', "Missing partitions field"),
        ('{"partitions": [], "version": 3}', "Not supported version field value 3"),
        ('{"partitions": [{"topic": "a", "offset": 1}]}', "No such field exists: `partition`"),
        ('{"partitions": [{"topic": "a", "partition": "0", "offset": 1}]}', "must be an integer"),
    ],
)
def test_refused(text: str, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        parse_offset_json(text)


def test_duplicates_are_named() -> None:
    entry = {"topic": "a", "partition": 2, "offset": 1}
    with pytest.raises(ToolError, match=r"duplicate topic partitions: a-2$"):
        parse_offset_json(json.dumps({"partitions": [entry, entry]}))


def test_java_error_text() -> None:
    assert java_error_text(KafkaException(KafkaError(1))) == (
        "org.apache.kafka.common.errors.OffsetOutOfRangeException: The requested offset is not "
        "within the range of offsets maintained by the server."
    )
    assert java_error_text(KafkaException(KafkaError(3))).startswith(
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
    )
    assert java_error_text(KafkaException(KafkaError(7))).startswith(
        "org.apache.kafka.common.errors.TimeoutException: "
    )
