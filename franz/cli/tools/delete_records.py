"""Delete records of partitions up to an offset (Kafka's ``kafka-delete-records.sh``).

    franz delete-records --bootstrap-server HOST:PORT --offset-json-file FILE
                         [--command-config FILE] [--timeout MS]

The JSON file names the new log start offset of each partition (records below it are
deleted; -1 means the high watermark, i.e. everything)::

    {"partitions": [{"topic": "foo", "partition": 1, "offset": 1}], "version": 1}

Output, as Kafka 3.9's ``DeleteRecordsCommand`` (one line per partition, tab-separated)::

    Executing records delete operation
    Records delete operation completed:
    partition: foo-1<TAB>low_watermark: 1
    partition: foo-2<TAB>error: org.apache.kafka.common.errors.OffsetOutOfRangeException: ...

A partition's failure is reported on its line (exit 0, as Kafka). A file that is not valid
JSON, lacks ``partitions``, has a ``version`` other than 1 or names a partition twice is an
error (exit 1, Kafka's messages); so is a cluster that does not answer.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from franz.admin.client import java_error_text, make_admin, tp_name, wait
from franz.admin.options import ToolError, add_connection_options

__all__ = ["add_arguments", "parse_offset_json", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser)
    parser.add_argument(
        "--offset-json-file",
        required=True,
        metavar="FILE",
        help='REQUIRED: the JSON file with the offset per partition: {"partitions": '
        '[{"topic": "foo", "partition": 1, "offset": 1}], "version": 1}',
    )


def _field(entry: dict[str, Any], name: str, kind: type) -> Any:
    if name not in entry:
        raise ToolError(f"No such field exists: `{name}` in {json.dumps(entry)}")
    value = entry[name]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ToolError(f"`{name}` must be an integer, not {json.dumps(value)}")
    if kind is str and not isinstance(value, str):
        raise ToolError(f"`{name}` must be a string, not {json.dumps(value)}")
    return value


def parse_offset_json(text: str) -> dict[tuple[str, int], int]:
    """Kafka's ``parseOffsetJsonStringWithoutDedup`` then the duplicate check:
    {(topic, partition): offset}."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise ToolError("The input string is not a valid JSON") from None
    if not isinstance(data, dict):
        raise ToolError("The input string is not a JSON object")
    version = data.get("version", 1)
    if version != 1:
        raise ToolError(f"Not supported version field value {version}")
    if "partitions" not in data:
        raise ToolError("Missing partitions field")
    if not isinstance(data["partitions"], list):
        raise ToolError("partitions must be a JSON array")
    seen: dict[tuple[str, int], list[int]] = {}
    for entry in data["partitions"]:
        if not isinstance(entry, dict):
            raise ToolError(f"a partitions entry must be a JSON object, not {json.dumps(entry)}")
        key = (_field(entry, "topic", str), _field(entry, "partition", int))
        seen.setdefault(key, []).append(_field(entry, "offset", int))
    duplicates = [tp_name(*key) for key, offsets in seen.items() if len(offsets) > 1]
    if duplicates:
        raise ToolError(
            f"Offset json file contains duplicate topic partitions: {','.join(duplicates)}"
        )
    return {key: offsets[0] for key, offsets in seen.items()}


def run(args: argparse.Namespace) -> int:
    path = Path(args.offset_json_file)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ToolError(f"cannot read --offset-json-file {path}: {exc.strerror or exc}") from None
    offsets = parse_offset_json(text)
    admin = make_admin(args)
    print("Executing records delete operation", flush=True)
    futures = admin.delete_records(
        [TopicPartition(t, p, offset) for (t, p), offset in offsets.items()],
        request_timeout=args.timeout_ms / 1000,
        operation_timeout=args.timeout_ms / 1000,
    )
    by_key = {(tp.topic, tp.partition): f for tp, f in futures.items()}
    lines = []
    for topic, partition in sorted(offsets):
        name = tp_name(topic, partition)
        try:
            result = wait(by_key[(topic, partition)], args)
        except KafkaException as exc:
            lines.append(f"partition: {name}\terror: {java_error_text(exc)}")
            continue
        lines.append(f"partition: {name}\tlow_watermark: {result.low_watermark}")
    print("Records delete operation completed:")
    for line in lines:
        print(line)
    return 0
