"""The read options of the ``franz`` source, parsed and checked once, as Spark's Kafka source does.

Spark hands the options over as strings with lowercased keys; :func:`parse_read_options`
turns them into a frozen :class:`ReadOptions` and raises :class:`OptionError` (naming the
option) for anything Spark's ``KafkaSourceProvider`` would refuse, with Spark's wording where
it has one. Supported (Spark's names; see the "Structured Streaming + Kafka Integration Guide"):

=====================================  =========================================================
``subscribe`` / ``subscribePattern`` /  exactly one: a comma list of topics; a regex matched
``assign``                              against the whole topic name (Python ``re.fullmatch``,
                                        which agrees with Java's ``Pattern.matches`` for
                                        ordinary patterns); ``{"t":[0,1]}``
``startingOffsets``                     ``earliest``, ``latest`` or ``{"t":{"0":23,"1":-2}}``
                                        (-2 earliest, -1 latest); streaming default ``latest``,
                                        batch ``earliest`` (batch refuses latest)
``endingOffsets``                       batch only: ``latest`` (default) or JSON (-1 latest;
                                        earliest refused)
``startingOffsetsByTimestamp`` /        ``{"t":{"0":<ms>}}`` / one ``<ms>`` for every partition;
``startingTimestamp``                   precedence: startingTimestamp, then ...ByTimestamp,
                                        then startingOffsets (as Spark)
``endingOffsetsByTimestamp`` /          batch only, as the starting ones
``endingTimestamp``
``startingOffsetsByTimestampStrategy``  ``error`` (default) or ``latest``: what a starting
                                        timestamp with no offset at or after it means
``maxOffsetsPerTrigger``                records per micro-batch (``ReadMaxRows``)
``minPartitions`` /                     split big offset ranges into more Spark tasks
``maxRecordsPerPartition``
``failOnDataLoss``                      default true
``includeHeaders``                      default false
``kafkaConsumer.pollTimeoutMs``         executor fetch timeout, default 120000
``fetchOffset.numRetries`` /            driver offset lookups: retries (3), pause (10 ms)
``fetchOffset.retryIntervalMs``
``groupIdPrefix``, ``kafka.group.id``   the (never committed) consumer group id
``kafka.*``                             librdkafka settings (:func:`client_config`)
=====================================  =========================================================

Refused with a clear error: ``minOffsetsPerTrigger`` / ``maxTriggerDelay`` (Spark's Python
data source API has no composite read limit to express them).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from franz.spark.config import OptionError, client_config, parse_bool, parse_int
from franz.spark.offsets import (
    EARLIEST,
    LATEST,
    Earliest,
    GlobalTimestamp,
    Latest,
    OffsetSpec,
    SpecificOffsets,
    SpecificTimestamps,
    TopicPartition,
    parse_assign,
    parse_partition_offsets,
    parse_partition_timestamps,
)

__all__ = ["ReadOptions", "Strategy", "check_schema", "parse_read_options"]

STRATEGY_KEYS = ("subscribe", "subscribepattern", "assign")
_STRATEGY_NAMES = "subscribe, subscribePattern, assign"

#: Spark's ``kafkaConsumer.pollTimeoutMs`` default when ``spark.network.timeout`` is unset.
DEFAULT_POLL_TIMEOUT_MS = 120_000


@dataclass(frozen=True)
class Strategy:
    """Which topic-partitions to read (Spark's ``ConsumerStrategy``)."""

    kind: str  # "subscribe", "subscribePattern" or "assign"
    topics: tuple[str, ...] = ()
    pattern: str = ""
    partitions: tuple[TopicPartition, ...] = ()

    def matches(self, topic: str) -> bool:
        """Whether a topic of the cluster is read (for ``assign``: one of its topics)."""
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribePattern":
            return re.fullmatch(self.pattern, topic) is not None
        return any(tp.topic == topic for tp in self.partitions)


@dataclass(frozen=True)
class ReadOptions:
    """Everything a reader needs, checked (picklable: Spark ships readers to executors)."""

    client: Mapping[str, str]
    strategy: Strategy
    starting: OffsetSpec
    ending: OffsetSpec | None
    starting_strategy_latest: bool = False
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    fetch_retries: int = 3
    fetch_retry_interval_ms: int = 10
    group_id: str = field(default="")


def _strategy(options: Mapping[str, str]) -> Strategy:
    given = [key for key in STRATEGY_KEYS if key in options]
    if not given:
        raise OptionError(
            "One of the following options must be specified for Kafka source: "
            f"{_STRATEGY_NAMES}. See the docs for more details."
        )
    if len(given) > 1:
        raise OptionError(
            "Only one of the following options can be specified for Kafka source: "
            f"{_STRATEGY_NAMES}. See the docs for more details."
        )
    key = given[0]
    raw = options[key]
    if key == "subscribe":
        topics = tuple(dict.fromkeys(t.strip() for t in raw.split(",") if t.strip()))
        if not topics:
            raise OptionError(
                f"No topics to subscribe to as specified value for option 'subscribe' is '{raw}'"
            )
        return Strategy("subscribe", topics=topics)
    if key == "subscribepattern":
        pattern = raw.strip()
        if not pattern:
            raise OptionError(
                "Pattern to subscribe is empty as specified value for option "
                f"'subscribePattern' is '{raw}'"
            )
        try:
            re.compile(pattern)
        except re.error as exc:
            raise OptionError(f"Option 'subscribePattern' is not a valid regex: {exc}") from None
        return Strategy("subscribePattern", pattern=pattern)
    return Strategy("assign", partitions=parse_assign(raw))


def _timestamp(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name.lower())
    if raw is None:
        return None
    try:
        value = int(raw.strip())
    except ValueError:
        raise OptionError(f"Option '{name}' must be a timestamp in ms, got {raw!r}") from None
    if value < 0:
        raise OptionError(f"Option '{name}' must be a timestamp >= 0, got {value}")
    return value


def _offset_spec(options: Mapping[str, str], prefix: str, default: OffsetSpec) -> OffsetSpec:
    """``<prefix>Timestamp`` > ``<prefix>OffsetsByTimestamp`` > ``<prefix>Offsets``."""
    ts = _timestamp(options, f"{prefix}Timestamp")
    if ts is not None:
        return GlobalTimestamp(ts)
    by_ts = options.get(f"{prefix}offsetsbytimestamp")
    if by_ts is not None:
        name = f"{prefix}OffsetsByTimestamp"
        timestamps = parse_partition_timestamps(by_ts, name)
        for tp, value in timestamps.items():
            if value < 0:
                raise OptionError(f"Option '{name}': timestamp {value} for {tp} must be >= 0")
        return SpecificTimestamps(timestamps)
    raw = options.get(f"{prefix}offsets")
    if raw is None:
        return default
    text = raw.strip()
    if text.lower() == "earliest":
        return Earliest()
    if text.lower() == "latest":
        return Latest()
    return SpecificOffsets(parse_partition_offsets(text, f"{prefix}Offsets"))


def _check_batch(starting: OffsetSpec, ending: OffsetSpec) -> None:
    """Spark's ``validateBatchOptions``."""
    if isinstance(starting, Latest):
        raise OptionError(
            "Option 'startingOffsets': starting offset can't be latest for batch queries on Kafka"
        )
    if isinstance(starting, SpecificOffsets):
        for tp, offset in starting.offsets.items():
            if offset == LATEST:
                raise OptionError(
                    f"Option 'startingOffsets': starting offsets for {tp} can't be latest for "
                    "batch queries on Kafka"
                )
    if isinstance(ending, Earliest):
        raise OptionError(
            "Option 'endingOffsets': ending offset can't be earliest for batch queries on Kafka"
        )
    if isinstance(ending, SpecificOffsets):
        for tp, offset in ending.offsets.items():
            if offset == EARLIEST:
                raise OptionError(
                    f"Option 'endingOffsets': ending offset for {tp} can't be earliest for "
                    "batch queries on Kafka"
                )


def parse_read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """Parse and check ``options`` (lowercased keys, string values) for a batch or a
    streaming read; raises :class:`OptionError` naming the offending option."""
    client = client_config(options)
    strategy = _strategy(options)
    if streaming:
        for key, what in (
            ("endingOffsets", "ending offset"),
            ("endingOffsetsByTimestamp", "ending timestamp"),
            ("endingTimestamp", "ending timestamp"),
        ):
            if key.lower() in options:
                raise OptionError(f"Option '{key}': {what} not valid in streaming queries")
        starting = _offset_spec(options, "starting", Latest())
        ending: OffsetSpec | None = None
    else:
        starting = _offset_spec(options, "starting", Earliest())
        ending = _offset_spec(options, "ending", Latest())
        _check_batch(starting, ending)
    for name in ("minOffsetsPerTrigger", "maxTriggerDelay"):
        if name.lower() in options:
            raise OptionError(
                f"Option '{name}' is not supported by the franz source: Spark's Python data "
                "source API has no composite read limit (use maxOffsetsPerTrigger)"
            )
    strategy_raw = options.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy_raw not in ("error", "latest"):
        raise OptionError(
            "Option 'startingOffsetsByTimestampStrategy' must be 'error' or 'latest', "
            f"got {strategy_raw!r}"
        )
    group_id = client.pop("group.id", "")
    if not group_id:
        prefix = options.get("groupidprefix", "spark-kafka-source")
        group_id = f"{prefix}-{uuid.uuid4()}"
    retries = parse_int(options, "fetchOffset.numRetries", minimum=0)
    interval = parse_int(options, "fetchOffset.retryIntervalMs", minimum=0)
    poll_timeout = parse_int(options, "kafkaConsumer.pollTimeoutMs")
    return ReadOptions(
        client=client,
        strategy=strategy,
        starting=starting,
        ending=ending,
        starting_strategy_latest=strategy_raw == "latest",
        max_offsets_per_trigger=parse_int(options, "maxOffsetsPerTrigger"),
        min_partitions=parse_int(options, "minPartitions"),
        max_records_per_partition=parse_int(options, "maxRecordsPerPartition"),
        fail_on_data_loss=parse_bool(options, "failOnDataLoss", True),
        include_headers=parse_bool(options, "includeHeaders", False),
        poll_timeout_ms=DEFAULT_POLL_TIMEOUT_MS if poll_timeout is None else poll_timeout,
        fetch_retries=3 if retries is None else retries,
        fetch_retry_interval_ms=10 if interval is None else interval,
        group_id=group_id,
    )


def check_schema(schema: object, include_headers: bool) -> None:
    """Refuse a user-specified schema (``spark.read.schema(...)``): the source's columns are
    fixed, as Spark's Kafka source says."""
    from franz.spark.source import source_schema

    if schema != source_schema(include_headers):
        raise OptionError(
            "Kafka source has a fixed schema and cannot be set with a custom one "
            f"(got {schema}; set 'includeHeaders' for the headers column)"
        )
