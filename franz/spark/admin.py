"""Driver-side lookups: which topic-partitions a read covers and where their offsets are.

Spark's Kafka source does this in ``KafkaOffsetReaderAdmin``; here it is one
confluent-kafka ``AdminClient`` (librdkafka): ``list_topics`` for the topic-partitions and
``list_offsets`` (Kafka's ``ListOffsets``) for earliest, latest and by-timestamp offsets.
"Latest" honours the consumer's ``isolation.level`` (librdkafka's default ``read_committed``:
the last stable offset, so a micro-batch never ends inside an open transaction that the
executors, reading committed data, could not finish).

The client is created lazily and dropped when pickled: the stream reader lives for a whole
query in Spark's streaming runner process and reuses one connection there, while copies
pickled to other processes open their own when they need one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from confluent_kafka import IsolationLevel, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec as KafkaOffsetSpec  # mypy: private

from franz.spark.config import OptionError
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
)
from franz.spark.options import ReadOptions

__all__ = ["INTERNAL_TOPICS", "OffsetReader"]

log = logging.getLogger(__name__)

#: Kafka's internal topics, which a pattern never matches (the Java consumer's
#: ``exclude.internal.topics=true``).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})

#: How long one metadata or ListOffsets request may take (the Java admin client's
#: ``default.api.timeout.ms``).
REQUEST_TIMEOUT_S = 60.0

T = TypeVar("T")

_EARLIEST_SPEC: KafkaOffsetSpec = KafkaOffsetSpec.earliest()  # type: ignore[no-untyped-call]
_LATEST_SPEC: KafkaOffsetSpec = KafkaOffsetSpec.latest()  # type: ignore[no-untyped-call]


class OffsetReader:
    """Topic-partitions and offsets for one read's options (driver side only)."""

    def __init__(self, options: ReadOptions) -> None:
        self.options = options
        self._admin: AdminClient | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_admin"] = None
        return state

    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            config: dict[str, Any] = dict(self.options.client)
            config.setdefault("log_level", 2)
            try:
                self._admin = AdminClient(config)
            except KafkaException as exc:
                raise OptionError(f"Invalid 'kafka.*' client settings: {exc}") from None
        return self._admin

    @property
    def isolation_level(self) -> IsolationLevel:
        value = self.options.client.get("isolation.level", "read_committed").strip().lower()
        if value == "read_uncommitted":
            return IsolationLevel.READ_UNCOMMITTED
        return IsolationLevel.READ_COMMITTED

    def _retry(self, what: str, call: Callable[[], T]) -> T:
        """``call`` with Spark's ``fetchOffset.numRetries`` / ``retryIntervalMs``."""
        attempts = self.options.fetch_retries + 1
        for attempt in range(attempts):
            try:
                return call()
            except (KafkaException, TimeoutError) as exc:
                if attempt + 1 >= attempts:
                    raise RuntimeError(
                        f"franz source: {what} failed after {attempts} attempt(s) against "
                        f"{self.options.client.get('bootstrap.servers')}: {exc}"
                    ) from exc
                log.warning("franz source: %s failed (%s); retrying", what, exc)
                time.sleep(self.options.fetch_retry_interval_ms / 1000)
        raise AssertionError("unreachable")

    # -- topic-partitions --------------------------------------------------------------------

    def cluster_partitions(self) -> dict[str, set[int]]:
        """Every topic of the cluster with its partition ids."""

        def call() -> dict[str, set[int]]:
            metadata = self.admin.list_topics(timeout=REQUEST_TIMEOUT_S)
            return {
                name: set(topic.partitions)
                for name, topic in metadata.topics.items()
                if topic.error is None
            }

        return self._retry("listing topics", call)

    def topic_partitions(self) -> set[TopicPartition]:
        """The topic-partitions the read covers now (``assign``: those of them that exist)."""
        strategy = self.options.strategy
        cluster = self.cluster_partitions()
        if strategy.kind == "assign":
            return {tp for tp in strategy.partitions if tp.partition in cluster.get(tp.topic, ())}
        result: set[TopicPartition] = set()
        for topic, partitions in cluster.items():
            if strategy.kind == "subscribePattern" and topic in INTERNAL_TOPICS:
                continue
            if strategy.matches(topic):
                result.update(TopicPartition(topic, p) for p in partitions)
        return result

    def checked_topic_partitions(self) -> set[TopicPartition]:
        """:meth:`topic_partitions`, refusing an ``assign`` that names partitions the cluster
        doesn't have (a first resolution must know every partition it starts from)."""
        found = self.topic_partitions()
        if self.options.strategy.kind == "assign":
            missing = sorted(set(self.options.strategy.partitions) - found)
            if missing:
                names = ", ".join(str(tp) for tp in missing)
                raise OptionError(
                    f"Option 'assign': topic-partition(s) {names} do not exist on the cluster"
                )
        return found

    # -- offsets -----------------------------------------------------------------------------

    def _list_offsets(
        self, what: str, specs: Mapping[TopicPartition, KafkaOffsetSpec]
    ) -> dict[TopicPartition, int]:
        if not specs:
            return {}

        def call() -> dict[TopicPartition, int]:
            request = {KafkaTopicPartition(tp.topic, tp.partition): s for tp, s in specs.items()}
            futures = self.admin.list_offsets(
                request,
                isolation_level=self.isolation_level,
                request_timeout=REQUEST_TIMEOUT_S,
            )
            return {
                TopicPartition(ktp.topic, ktp.partition): int(future.result().offset)
                for ktp, future in futures.items()
            }

        return self._retry(what, call)

    def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Log start offsets."""
        return self._list_offsets("fetching earliest offsets", {tp: _EARLIEST_SPEC for tp in tps})

    def latest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """End offsets (the LSO when reading committed data, else the high watermark)."""
        return self._list_offsets("fetching latest offsets", {tp: _LATEST_SPEC for tp in tps})

    def for_timestamps(self, timestamps: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
        """The first offset whose timestamp is >= the given one, or -1 where there is none."""
        specs = {tp: KafkaOffsetSpec.for_timestamp(ts) for tp, ts in timestamps.items()}
        return self._list_offsets("fetching offsets by timestamp", specs)

    def resolve(
        self, spec: OffsetSpec, tps: set[TopicPartition], *, starting: bool
    ) -> dict[TopicPartition, int]:
        """Concrete offsets for ``spec`` over ``tps`` (as Spark's ``fetchPartitionOffsets`` /
        ``fetchSpecificTimestampBasedOffsets``). A JSON spec must name exactly ``tps``."""
        option = "startingOffsets" if starting else "endingOffsets"
        if isinstance(spec, Earliest):
            return self.earliest(tps)
        if isinstance(spec, Latest):
            return self.latest(tps)
        if isinstance(spec, SpecificOffsets):
            _check_all_named(spec.offsets, tps, option)
            result = dict(spec.offsets)
            earliest = self.earliest(tp for tp, o in result.items() if o == EARLIEST)
            latest = self.latest(tp for tp, o in result.items() if o == LATEST)
            result.update(earliest)
            result.update(latest)
            return result
        if isinstance(spec, SpecificTimestamps):
            _check_all_named(spec.timestamps, tps, option + "ByTimestamp")
            timestamps = dict(spec.timestamps)
        else:
            assert isinstance(spec, GlobalTimestamp)
            timestamps = {tp: spec.timestamp for tp in tps}
        found = self.for_timestamps(timestamps)
        unmatched = sorted(tp for tp, offset in found.items() if offset < 0)
        if unmatched and starting and not self.options.starting_strategy_latest:
            tp = unmatched[0]
            raise OptionError(
                f"No offset matched from request of topic-partition {tp} and timestamp "
                f"{timestamps[tp]} (option '{option}ByTimestamp' / 'startingTimestamp'). Set "
                "'startingOffsetsByTimestampStrategy' to 'latest' to start from the latest "
                "offset in that case."
            )
        found.update(self.latest(unmatched))
        return found

    def close(self) -> None:
        self._admin = None


def _check_all_named(
    given: Mapping[TopicPartition, int], tps: set[TopicPartition], option: str
) -> None:
    if set(given) != tps:
        specified = ", ".join(str(tp) for tp in sorted(given))
        assigned = ", ".join(str(tp) for tp in sorted(tps))
        raise OptionError(
            f"Option '{option}': if it contains specific offsets, you must specify all "
            "TopicPartitions. Use -1 for latest, -2 for earliest. "
            f"Specified: [{specified}] Assigned: [{assigned}]"
        )
