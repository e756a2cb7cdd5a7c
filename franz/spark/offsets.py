"""Offsets as the connector plans with them: specs, the checkpoint JSON, and range planning.

Pure logic, no I/O (the driver-side lookups live in :mod:`franz.spark.admin`).

Glossary (Spark's Kafka source names):

- *offset spec*: what an option like ``startingOffsets`` asks for before it is resolved
  against a cluster: :class:`Earliest`, :class:`Latest`, :class:`SpecificOffsets` (a JSON map
  whose ``-2`` means earliest and ``-1`` latest, Kafka's ``ListOffsets`` sentinels),
  :class:`SpecificTimestamps` (``...ByTimestamp``) or :class:`GlobalTimestamp`
  (``startingTimestamp`` / ``endingTimestamp``).
- *partition offsets*: ``{TopicPartition: offset}`` once resolved; in a checkpoint the JSON
  ``{"topic": {"partition": offset}}``. Spark compares the offsets of two micro-batches **as
  JSON text**, so :func:`offsets_to_json` always emits one canonical form: topics sorted,
  partitions sorted numerically, partition keys as strings (any other order makes Spark see
  "new data" forever and run empty batches).
- *offset range*: ``[start, end)`` of one topic-partition, one Spark input partition.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from franz.spark.config import OptionError

__all__ = [
    "EARLIEST",
    "LATEST",
    "Earliest",
    "GlobalTimestamp",
    "Latest",
    "OffsetRange",
    "OffsetSpec",
    "SpecificOffsets",
    "SpecificTimestamps",
    "TopicPartition",
    "offsets_from_json",
    "offsets_to_json",
    "parse_assign",
    "parse_partition_offsets",
    "parse_partition_timestamps",
    "rate_limit",
    "split_ranges",
]

#: Kafka's ``ListOffsets`` sentinels, used by Spark's offset JSON too.
EARLIEST = -2
LATEST = -1


class TopicPartition(NamedTuple):
    """A topic-partition (Kafka's ``TopicPartition``; orders by topic, then partition)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class Earliest:
    """The log start offset of every partition."""


@dataclass(frozen=True)
class Latest:
    """The end offset (high watermark, or the LSO when reading committed) of every partition."""


@dataclass(frozen=True)
class SpecificOffsets:
    """Per-partition offsets; ``EARLIEST`` / ``LATEST`` resolve against the cluster."""

    offsets: Mapping[TopicPartition, int]


@dataclass(frozen=True)
class SpecificTimestamps:
    """Per-partition timestamps (ms): the first offset whose timestamp is >= it."""

    timestamps: Mapping[TopicPartition, int]


@dataclass(frozen=True)
class GlobalTimestamp:
    """One timestamp (ms) for every partition."""

    timestamp: int


OffsetSpec = Earliest | Latest | SpecificOffsets | SpecificTimestamps | GlobalTimestamp


class OffsetRange(NamedTuple):
    """``[start, end)`` of one topic-partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


# -- JSON --------------------------------------------------------------------------------------

_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_TIMESTAMPS_EXAMPLE = '{"topicA":{"0":1700000000000,"1":1700000000000},"topicB":{"0":-1}}'
_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[2,4]}'


def _load_object(raw: str, option: str, example: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except ValueError:
        value = None
    if not isinstance(value, dict) or not value:
        raise OptionError(f"Option '{option}': expected e.g. {example}, got {raw}")
    return value


def _int_value(value: object, option: str, example: str, raw: str) -> int:
    # bool is an int in Python; JSON true/false is not an offset.
    if isinstance(value, bool) or not isinstance(value, int):
        raise OptionError(f"Option '{option}': expected e.g. {example}, got {raw}")
    return value


def _partition_map(raw: str, option: str, example: str) -> dict[TopicPartition, int]:
    result: dict[TopicPartition, int] = {}
    for topic, parts in _load_object(raw, option, example).items():
        if not isinstance(parts, dict):
            raise OptionError(f"Option '{option}': expected e.g. {example}, got {raw}")
        for key, value in parts.items():
            try:
                partition = int(key)
            except ValueError:
                raise OptionError(
                    f"Option '{option}': partition {key!r} of topic {topic!r} is not a number; "
                    f"expected e.g. {example}"
                ) from None
            result[TopicPartition(topic, partition)] = _int_value(value, option, example, raw)
    return result


def parse_partition_offsets(raw: str, option: str) -> dict[TopicPartition, int]:
    """``{"t":{"0":23,"1":-1}}`` (Spark's ``JsonUtils.partitionOffsets``); offsets must be
    >= 0 or one of the sentinels -1 (latest) and -2 (earliest)."""
    offsets = _partition_map(raw, option, _OFFSETS_EXAMPLE)
    for tp, offset in offsets.items():
        if offset < EARLIEST:
            raise OptionError(
                f"Option '{option}': offset {offset} for {tp} is invalid; use an offset >= 0, "
                "-1 for latest or -2 for earliest"
            )
    return offsets


def parse_partition_timestamps(raw: str, option: str) -> dict[TopicPartition, int]:
    """``{"t":{"0":1700000000000}}`` (ms since the epoch, Spark's
    ``JsonUtils.partitionTimestamps``)."""
    return _partition_map(raw, option, _TIMESTAMPS_EXAMPLE)


def parse_assign(raw: str) -> tuple[TopicPartition, ...]:
    """The ``assign`` option, ``{"t":[0,1]}``, as sorted topic-partitions."""
    option = "assign"
    parts: set[TopicPartition] = set()
    for topic, partitions in _load_object(raw, option, _ASSIGN_EXAMPLE).items():
        if not isinstance(partitions, list):
            raise OptionError(f"Option '{option}': expected e.g. {_ASSIGN_EXAMPLE}, got {raw}")
        for p in partitions:
            number = _int_value(p, option, _ASSIGN_EXAMPLE, raw)
            if number < 0:
                raise OptionError(f"Option '{option}': partition {number} of {topic!r} is < 0")
            parts.add(TopicPartition(topic, number))
    if not parts:
        raise OptionError(
            f"No topicpartitions to assign as specified value for option 'assign' is '{raw}'"
        )
    return tuple(sorted(parts))


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The canonical checkpoint form: topics sorted, partitions sorted numerically, as
    ``{"topic": {"partition": offset}}`` with string partition keys (see the module docs)."""
    result: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        result.setdefault(tp.topic, {})[str(tp.partition)] = int(offsets[tp])
    return result


def offsets_from_json(value: Mapping[str, Any]) -> dict[TopicPartition, int]:
    """The inverse of :func:`offsets_to_json` (a checkpoint's offsets, as Spark hands them
    back: a dict, or its JSON text)."""
    if isinstance(value, str):
        value = json.loads(value)
    result: dict[TopicPartition, int] = {}
    for topic, parts in value.items():
        for key, offset in parts.items():
            result[TopicPartition(str(topic), int(key))] = int(offset)
    return result


# -- planning ----------------------------------------------------------------------------------


def rate_limit(
    limit: int,
    start: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
) -> dict[TopicPartition, int]:
    """The end offsets of a micro-batch that reads at most ``limit`` records in all.

    ``latest`` holds the available end offsets; ``start`` the batch's start offsets (a
    partition missing from it is new and starts at offset 0, where the stream reader's
    ``partitions()`` starts it). As Spark's
    ``KafkaMicroBatchStream.rateLimit``, each partition gets a share of ``limit`` in proportion
    to its backlog, and a partition with a backlog is not starved while the limit allows it.
    Unlike Spark (which rounds every share below 1 up, so a batch may exceed the limit by up to
    the number of partitions), the total never exceeds ``limit``: shares are rounded down,
    and the records left over go one each first to partitions that got nothing, then to the
    largest fractional parts (ties by topic-partition), so the total is exactly
    ``min(limit, backlog)``. Partitions with no backlog keep their ``latest`` offset.
    """
    begin = {tp: start.get(tp, 0) for tp in latest}
    sizes = {tp: end - begin[tp] for tp, end in latest.items() if end - begin[tp] > 0}
    total = sum(sizes.values())
    if total <= limit:
        return dict(latest)
    shares = {tp: limit * size / total for tp, size in sizes.items()}
    taken = {tp: min(sizes[tp], math.floor(share)) for tp, share in shares.items()}
    left = limit - sum(taken.values())
    order = sorted(
        sizes,
        key=lambda tp: (taken[tp] > 0, -(shares[tp] - math.floor(shares[tp])), tp),
    )
    for tp in order:
        if left <= 0:
            break
        if taken[tp] < sizes[tp]:
            taken[tp] += 1
            left -= 1
    result = dict(latest)
    for tp, count in taken.items():
        result[tp] = begin[tp] + count
    return result


def _part_count(size: int, total: int, min_parts: int) -> int:
    # Scala's math.round rounds half up; Python's round() rounds half to even.
    return max(math.floor(size / total * min_parts + 0.5), 1)


def split_ranges(
    ranges: Iterable[OffsetRange],
    min_partitions: int | None = None,
    max_records_per_partition: int | None = None,
) -> list[OffsetRange]:
    """The input partitions for ``ranges``: empty ranges dropped, big ranges split.

    ``minPartitions`` follows Spark's ``KafkaOffsetRangeCalculator``: with fewer non-empty
    ranges than ``min_partitions``, each range whose share of the records would round to more
    than one part is split into ``round(size / splitTotal * (minPartitions - unsplit))`` nearly
    equal parts (the last takes the remainder), so there are about ``min_partitions`` in all.
    ``maxRecordsPerPartition`` (Spark 4.0) then splits any range still bigger than it into
    equal parts of at most that many offsets. The result is sorted by (topic, partition,
    start) and depends only on the arguments (a replayed micro-batch plans the same tasks).
    """
    nonempty = sorted(r for r in ranges if r.size > 0)
    result = nonempty
    if min_partitions is not None and len(nonempty) < min_partitions:
        total = sum(r.size for r in nonempty)
        unsplit = [r for r in nonempty if _part_count(r.size, total, min_partitions) == 1]
        split_total = total - sum(r.size for r in unsplit)
        split_min = max(min_partitions - len(unsplit), 1)
        unsplit_set = set(unsplit)
        result = []
        for r in nonempty:
            parts = 1 if r in unsplit_set else _part_count(r.size, split_total, split_min)
            result.extend(_even_split(r, parts))
    if max_records_per_partition is not None:
        result = [
            piece
            for r in result
            for piece in _even_split(r, -(-r.size // max_records_per_partition))
        ]
    return sorted(p for p in result if p.size > 0)


def _even_split(r: OffsetRange, parts: int) -> list[OffsetRange]:
    pieces = []
    remaining = r.size
    start = r.start
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        end = min(start + this, r.end)
        pieces.append(OffsetRange(r.topic, r.partition, start, end))
        start = end
    return pieces
