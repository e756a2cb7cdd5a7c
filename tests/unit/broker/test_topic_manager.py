"""Topic names (Kafka's ``Topic.validate``) and the topic lifecycle in embedded mode.

The lifecycle tests wire a real ``LocalMetadataStore``, ``LogManager`` and ``ReplicaManager``
in a temporary log dir the way ``Broker`` does (store loaded first, the log manager asking the
topic manager for each topic's config), and "restart" by building new objects over the same
directory.
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from franz.broker.topic_manager import (
    MAX_TOPIC_NAME_LENGTH,
    InvalidReplicaAssignmentError,
    TopicManager,
    validate_topic_name,
)
from franz.clock import ManualClock
from franz.cluster.replica_manager import ReplicaManager
from franz.config.broker import BrokerConfig
from franz.config.topic import LogConfig
from franz.errors import (
    ErrorCode,
    InvalidConfigurationError,
    InvalidPartitionsError,
    InvalidReplicationFactorError,
    InvalidRequestError,
    InvalidTopicError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
    error_code_for,
)
from franz.metadata.local import METADATA_FILE, LocalMetadataStore
from franz.protocol.records.inflated import RecordBatchBuilder
from franz.storage.files import TopicPartition
from franz.storage.leader_epoch import EpochEntry
from franz.storage.log_manager import LogManager

LEGAL_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
#: Small files so that every test creates little on disk.
SMALL = {"log.segment.bytes": "1048576", "log.index.size.max.bytes": "4096"}

# -- topic names -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    [
        "a",
        "orders",
        "orders.v1",
        "my_topic",
        "my-topic",
        "__consumer_offsets",
        "A.b_C-9",
        "...",
        ".hidden",
        "-starts-with-dash",
        "x" * MAX_TOPIC_NAME_LENGTH,
    ],
)
def test_legal_names(name: str) -> None:
    assert validate_topic_name(name) == name


@pytest.mark.parametrize("name", ["", None])
def test_empty_name(name: str | None) -> None:
    with pytest.raises(InvalidTopicError, match="can't be empty"):
        validate_topic_name(name)


@pytest.mark.parametrize("name", [".", ".."])
def test_dot_and_dot_dot(name: str) -> None:
    with pytest.raises(InvalidTopicError, match=r'cannot be "\." or "\.\."'):
        validate_topic_name(name)


def test_longer_than_249_characters() -> None:
    assert MAX_TOPIC_NAME_LENGTH == 249
    with pytest.raises(InvalidTopicError, match="longer than 249"):
        validate_topic_name("x" * 250)


@pytest.mark.parametrize(
    "name",
    [
        "with space",
        "slash/topic",
        "back\\slash",
        "colon:topic",
        "star*",
        "comma,topic",
        "tab\t",
        "newline\n",
        "trailing-newline\n",
        "ümlaut",
        "emoji-🙂",
        "fullwidth-\uff41",
        "arabic-digit-٣",
        "nul\x00",
    ],
)
def test_illegal_characters(name: str) -> None:
    with pytest.raises(InvalidTopicError, match="contains one or more characters other than ASCII"):
        validate_topic_name(name)


@given(st.text(alphabet=LEGAL_CHARS, min_size=1, max_size=MAX_TOPIC_NAME_LENGTH))
def test_any_legal_name_is_accepted(name: str) -> None:
    if name in (".", ".."):
        with pytest.raises(InvalidTopicError):
            validate_topic_name(name)
    else:
        assert validate_topic_name(name) == name


@given(st.text(min_size=1, max_size=20).filter(lambda s: any(c not in LEGAL_CHARS for c in s)))
def test_any_other_character_is_refused(name: str) -> None:
    with pytest.raises(InvalidTopicError):
        validate_topic_name(name)


def test_invalid_topic_maps_to_kafkas_code() -> None:
    with pytest.raises(InvalidTopicError) as info:
        validate_topic_name("")
    assert error_code_for(info.value) == ErrorCode.INVALID_TOPIC_EXCEPTION


# -- the lifecycle -----------------------------------------------------------------------------


@dataclass
class Node:
    """One broker's topic machinery over ``directory`` (Broker's wiring, minus the network)."""

    directory: Path
    config: BrokerConfig
    store: LocalMetadataStore
    log_manager: LogManager
    replica_manager: ReplicaManager
    topics: TopicManager

    def log_config_of(self, topic: str, partition: int = 0) -> LogConfig:
        log = self.log_manager.get_log(TopicPartition(topic, partition))
        assert log is not None
        return log.config

    def hosted(self, topic: str) -> list[int]:
        return sorted(tp.partition for tp in self.replica_manager.partitions if tp.topic == topic)

    def logs(self, topic: str) -> list[int]:
        return sorted(tp.partition for tp in self.log_manager.logs if tp.topic == topic)

    def dirs(self, topic: str) -> list[str]:
        return sorted(p.name for p in self.directory.iterdir() if p.name.startswith(f"{topic}-"))


NodeFactory = Callable[..., Node]


@pytest.fixture
def start_node(tmp_path: Path) -> Iterator[NodeFactory]:
    """``start_node(directory=tmp_path/"data", start_replicas=True, **broker_config)``."""
    started: list[Node] = []

    def factory(
        directory: Path | None = None, *, start_replicas: bool = True, **overrides: str
    ) -> Node:
        directory = directory or tmp_path / "data"
        directory.mkdir(parents=True, exist_ok=True)
        values = {"broker.id": "0", "log.dirs": str(directory), **SMALL}
        values.update({k.replace("_", "."): v for k, v in overrides.items()})
        config = BrokerConfig(values)
        store = LocalMetadataStore(directory)
        store.load()
        holder: list[TopicManager] = []
        log_manager = LogManager(
            [directory],
            default_config=config.log_config(),
            clock=ManualClock(1_700_000_000_000),
            broker_id=0,
            topic_config=lambda topic: holder[0].log_config(topic),
        )
        replica_manager = ReplicaManager(log_manager, 0)
        topics = TopicManager(config, store, replica_manager, broker_id=0)
        holder.append(topics)
        log_manager.startup()  # loading existing logs asks the topic manager for configs
        node = Node(directory, config, store, log_manager, replica_manager, topics)
        started.append(node)
        if start_replicas:
            topics.start_replicas()
        return node

    yield factory
    for node in started:
        node.log_manager.close_without_shutdown()


def restart(node: Node, factory: NodeFactory, **overrides: str) -> Node:
    node.log_manager.shutdown()
    return factory(node.directory, **overrides)


def one_batch(*values: bytes) -> bytearray:
    """Keyed records (compacted topics refuse keyless ones), key = value."""
    builder = RecordBatchBuilder()
    for i, value in enumerate(values):
        builder.append(1_700_000_000_000 + i, value, value)
    return builder.build()


def test_create_with_the_broker_defaults(start_node: NodeFactory) -> None:
    node = start_node(num_partitions="3")
    record = node.topics.create_topic("events")
    assert record.partition_count == 3
    assert record.assignment == {0: [0], 1: [0], 2: [0]}
    assert record.configs == {}
    assert record.topic_id != uuid.UUID(int=0)
    assert node.topics.get("events") is not None
    assert node.topics.by_id(record.topic_id) is node.topics.get("events")
    assert node.hosted("events") == node.logs("events") == [0, 1, 2]
    assert node.dirs("events") == ["events-0", "events-1", "events-2"]
    # The logs carry the topic id (partition.metadata) and the partition leads here.
    for p in range(3):
        partition = node.replica_manager.get_partition(TopicPartition("events", p))
        assert partition.topic_id == record.topic_id
        assert partition.log.topic_id == record.topic_id
        assert partition.leader_id == 0


def test_create_with_explicit_counts(start_node: NodeFactory) -> None:
    node = start_node()
    record = node.topics.create_topic("t", num_partitions=5, replication_factor=1)
    assert record.partition_count == 5
    assert node.hosted("t") == [0, 1, 2, 3, 4]


def test_create_with_a_manual_assignment(start_node: NodeFactory) -> None:
    node = start_node()
    record = node.topics.create_topic("t", assignment={0: [0], 1: [0]})
    assert record.assignment == {0: [0], 1: [0]}
    assert node.hosted("t") == [0, 1]


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"replication_factor": 2}, InvalidReplicationFactorError),
        ({"replication_factor": 0}, InvalidReplicationFactorError),
        ({"num_partitions": 0}, InvalidPartitionsError),
        ({"assignment": {0: [1]}}, InvalidReplicaAssignmentError),
        ({"assignment": {0: [0, 0]}}, InvalidReplicaAssignmentError),
        ({"assignment": {0: []}}, InvalidReplicaAssignmentError),
        ({"assignment": {1: [0]}}, InvalidReplicaAssignmentError),
        ({"assignment": {0: [0], 2: [0]}}, InvalidReplicaAssignmentError),
        ({"assignment": {0: [0]}, "num_partitions": 1}, InvalidRequestError),
        ({"configs": {"no.such.config": "1"}}, InvalidConfigurationError),
        ({"configs": {"retention.ms": "soon"}}, InvalidConfigurationError),
        ({"configs": {"compression.type": "brotli"}}, InvalidConfigurationError),
    ],
)
def test_refused_creations_change_nothing(
    start_node: NodeFactory, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    node = start_node()
    with pytest.raises(error):
        node.topics.create_topic("t", **kwargs)
    assert node.topics.get("t") is None
    assert node.logs("t") == node.dirs("t") == []
    assert not (node.directory / METADATA_FILE).exists()


def test_replication_factor_above_the_broker_count(start_node: NodeFactory) -> None:
    node = start_node()
    with pytest.raises(InvalidReplicationFactorError, match="larger than available brokers: 1"):
        node.topics.create_topic("t", num_partitions=1, replication_factor=2)
    assert error_code_for(InvalidReplicationFactorError("x")) == (
        ErrorCode.INVALID_REPLICATION_FACTOR
    )


def test_default_replication_factor_above_one_is_refused(start_node: NodeFactory) -> None:
    node = start_node(default_replication_factor="3")
    with pytest.raises(InvalidReplicationFactorError):
        node.topics.create_topic("t")


def test_already_exists(start_node: NodeFactory) -> None:
    node = start_node()
    first = node.topics.create_topic("t", num_partitions=1)
    with pytest.raises(TopicAlreadyExistsError, match="Topic 't' already exists"):
        node.topics.create_topic("t", num_partitions=4)
    assert node.topics.get("t") == first
    assert node.hosted("t") == [0]


def test_invalid_name_is_refused(start_node: NodeFactory) -> None:
    node = start_node()
    with pytest.raises(InvalidTopicError):
        node.topics.create_topic("bad name")
    assert node.topics.topics() == {}


@pytest.mark.parametrize(("existing", "new"), [("metrics.cpu", "metrics_cpu"), ("a_b.c", "a.b_c")])
def test_names_colliding_on_dot_and_underscore_are_refused(
    start_node: NodeFactory, existing: str, new: str
) -> None:
    # Kafka's Topic.hasCollision: '.' and '_' are the same character in metric names.
    node = start_node()
    node.topics.create_topic(existing, num_partitions=1)
    for validate_only in (True, False):
        with pytest.raises(InvalidTopicError, match=f"collides with existing topic: {existing}"):
            node.topics.create_topic(new, num_partitions=1, validate_only=validate_only)
    assert set(node.topics.topics()) == {existing}
    assert node.dirs(new) == []


def test_manual_assignment_errors_map_to_invalid_replica_assignment() -> None:
    assert (
        error_code_for(InvalidReplicaAssignmentError("x")) == ErrorCode.INVALID_REPLICA_ASSIGNMENT
    )


def test_validate_only_create_changes_nothing(start_node: NodeFactory) -> None:
    node = start_node()
    record = node.topics.create_topic(
        "t", num_partitions=2, configs={"retention.ms": "1000"}, validate_only=True
    )
    assert (record.name, record.partition_count, record.configs) == (
        "t",
        2,
        {"retention.ms": "1000"},
    )
    assert node.topics.get("t") is None
    assert node.hosted("t") == node.logs("t") == node.dirs("t") == []
    assert not (node.directory / METADATA_FILE).exists()
    # ... and still checks everything a real creation checks.
    with pytest.raises(InvalidReplicationFactorError):
        node.topics.create_topic("t", replication_factor=2, validate_only=True)
    node.topics.create_topic("u", num_partitions=1)
    with pytest.raises(TopicAlreadyExistsError):
        node.topics.create_topic("u", validate_only=True)


def test_delete_removes_the_logs(start_node: NodeFactory) -> None:
    node = start_node()
    node.topics.create_topic("t", num_partitions=2)
    node.replica_manager.append(TopicPartition("t", 0), one_batch(b"gone"))
    node.topics.create_topic("keep", num_partitions=1)
    node.topics.delete_topic("t")
    assert node.topics.get("t") is None
    assert node.hosted("t") == node.logs("t") == []
    assert not any(p.name.startswith("t-") for p in node.directory.iterdir())  # no "-delete"
    assert node.hosted("keep") == [0]
    with pytest.raises(UnknownTopicOrPartitionError):
        node.replica_manager.get_partition(TopicPartition("t", 0))
    restarted = restart(node, start_node)
    assert set(restarted.topics.topics()) == {"keep"}
    assert restarted.logs("t") == []


def test_delete_then_create_again_starts_empty(start_node: NodeFactory) -> None:
    node = start_node()
    old = node.topics.create_topic("t", num_partitions=1)
    node.replica_manager.append(TopicPartition("t", 0), one_batch(b"a", b"b"))
    node.topics.delete_topic("t")
    new = node.topics.create_topic("t", num_partitions=1)
    assert new.topic_id != old.topic_id
    partition = node.replica_manager.get_partition(TopicPartition("t", 0))
    assert partition.log_end_offset == 0
    assert partition.log.topic_id == new.topic_id


def test_delete_unknown_topic(start_node: NodeFactory) -> None:
    node = start_node()
    with pytest.raises(UnknownTopicOrPartitionError, match="Topic 'nope' does not exist"):
        node.topics.delete_topic("nope")


def test_create_partitions_increase(start_node: NodeFactory) -> None:
    node = start_node()
    node.topics.create_topic("t", num_partitions=2)
    node.replica_manager.append(TopicPartition("t", 0), one_batch(b"kept"))
    node.topics.create_partitions("t", 5)
    record = node.topics.get("t")
    assert record is not None
    assert record.assignment == {p: [0] for p in range(5)}
    assert node.hosted("t") == node.logs("t") == [0, 1, 2, 3, 4]
    assert node.replica_manager.get_partition(TopicPartition("t", 0)).log_end_offset == 1
    assert node.replica_manager.get_partition(TopicPartition("t", 4)).topic_id == record.topic_id
    assert restart(node, start_node).hosted("t") == [0, 1, 2, 3, 4]


def test_create_partitions_with_an_assignment(start_node: NodeFactory) -> None:
    node = start_node()
    node.topics.create_topic("t", num_partitions=1)
    node.topics.create_partitions("t", 3, [[0], [0]])
    assert node.hosted("t") == [0, 1, 2]


@pytest.mark.parametrize(
    ("count", "assignment", "error", "message"),
    [
        (1, None, InvalidPartitionsError, "higher than the requested 1"),
        (2, None, InvalidPartitionsError, "already has 2 partitions"),
        (4, [[0]], InvalidReplicaAssignmentError, "by 2 but 1 assignments"),
        (3, [[1]], InvalidReplicaAssignmentError, "includes broker 1, but no such broker"),
        (3, [[]], InvalidReplicaAssignmentError, "empty replica list"),
        (3, [[0, 0]], InvalidReplicaAssignmentError, "more than once"),
    ],
)
def test_create_partitions_refused(
    start_node: NodeFactory,
    count: int,
    assignment: list[list[int]] | None,
    error: type[Exception],
    message: str,
) -> None:
    node = start_node()
    node.topics.create_topic("t", num_partitions=2)
    with pytest.raises(error, match=message):
        node.topics.create_partitions("t", count, assignment)
    assert node.hosted("t") == [0, 1]
    assert LocalMetadataStore(node.directory).path.exists()
    assert restart(node, start_node).hosted("t") == [0, 1]


def test_create_partitions_of_an_unknown_topic(start_node: NodeFactory) -> None:
    node = start_node()
    with pytest.raises(UnknownTopicOrPartitionError):
        node.topics.create_partitions("nope", 3)


def test_create_partitions_validate_only(start_node: NodeFactory) -> None:
    node = start_node()
    node.topics.create_topic("t", num_partitions=1)
    node.topics.create_partitions("t", 4, validate_only=True)
    record = node.topics.get("t")
    assert record is not None and record.partition_count == 1
    assert node.hosted("t") == node.logs("t") == [0]
    with pytest.raises(InvalidPartitionsError):
        node.topics.create_partitions("t", 1, validate_only=True)


# -- configs -----------------------------------------------------------------------------------


def test_create_with_configs_applies_them_to_the_logs(start_node: NodeFactory) -> None:
    node = start_node()
    record = node.topics.create_topic(
        "t",
        num_partitions=2,
        configs={"retention.ms": "60000", "cleanup.policy": "compact", "segment.bytes": None},
    )
    assert record.configs == {"retention.ms": "60000", "cleanup.policy": "compact"}
    for p in (0, 1):
        config = node.log_config_of("t", p)
        assert config.retention_ms == 60000
        assert config.cleanup_policy == ("compact",)
        assert config.segment_bytes == 1048576  # broker default
    assert node.topics.log_config("t").retention_ms == 60000
    assert node.topics.log_config("other") == node.topics.default_log_config


def test_set_topic_configs_applies_to_live_logs_and_persists(start_node: NodeFactory) -> None:
    node = start_node()
    node.topics.create_topic("t", num_partitions=2, configs={"retention.ms": "60000"})
    node.topics.create_topic("u", num_partitions=1)
    node.topics.set_topic_configs("t", {"retention.bytes": "4096", "max.message.bytes": "2048"})
    for p in (0, 1):
        config = node.log_config_of("t", p)
        # Replaced, not merged: retention.ms is back to the broker default.
        assert config.retention_bytes == 4096
        assert config.max_message_bytes == 2048
        assert config.retention_ms == node.topics.default_log_config.retention_ms
    assert node.log_config_of("u") == node.topics.default_log_config
    restarted = restart(node, start_node)
    record = restarted.topics.get("t")
    assert record is not None
    assert record.configs == {"retention.bytes": "4096", "max.message.bytes": "2048"}
    assert restarted.log_config_of("t", 1).retention_bytes == 4096
    assert restarted.log_config_of("u") == restarted.topics.default_log_config


@pytest.mark.parametrize(
    "configs", [{"retention.ms": "x"}, {"unknown.key": "1"}, {"cleanup.policy": "shred"}]
)
def test_bad_configs_are_refused_and_change_nothing(
    start_node: NodeFactory, configs: Mapping[str, str]
) -> None:
    node = start_node()
    node.topics.create_topic("t", num_partitions=1, configs={"retention.ms": "60000"})
    with pytest.raises(InvalidConfigurationError):
        node.topics.set_topic_configs("t", configs)
    record = node.topics.get("t")
    assert record is not None and record.configs == {"retention.ms": "60000"}
    assert node.log_config_of("t").retention_ms == 60000


def test_set_topic_configs_validate_only(start_node: NodeFactory) -> None:
    node = start_node()
    node.topics.create_topic("t", num_partitions=1)
    node.topics.set_topic_configs("t", {"retention.ms": "1"}, validate_only=True)
    record = node.topics.get("t")
    assert record is not None and record.configs == {}
    assert node.log_config_of("t") == node.topics.default_log_config
    with pytest.raises(InvalidConfigurationError):
        node.topics.set_topic_configs("t", {"retention.ms": "x"}, validate_only=True)


def test_set_configs_of_an_unknown_topic(start_node: NodeFactory) -> None:
    node = start_node()
    with pytest.raises(UnknownTopicOrPartitionError):
        node.topics.set_topic_configs("nope", {})


def test_broker_level_defaults_reach_new_topics(start_node: NodeFactory) -> None:
    node = start_node(log_retention_hours="2")
    node.topics.create_topic("t", num_partitions=1)
    assert node.log_config_of("t").retention_ms == 2 * 3_600_000


def test_compression_type_takes_kafkas_codecs_and_refuses_others(start_node: NodeFactory) -> None:
    # Kafka's BrokerCompressionType: the log recompresses to the codec (log_validator).
    node = start_node()
    node.topics.create_topic("t", num_partitions=1, configs={"compression.type": "producer"})
    for codec in ("gzip", "snappy", "lz4", "zstd", "uncompressed", "producer"):
        node.topics.set_topic_configs("t", {"compression.type": codec})
        assert node.log_config_of("t").compression_type == codec
    with pytest.raises(InvalidConfigurationError, match=r"compression\.type: String must be"):
        node.topics.set_topic_configs("t", {"compression.type": "none"})
    record = node.topics.get("t")
    assert record is not None and record.configs == {"compression.type": "producer"}


# -- DeleteRecords -----------------------------------------------------------------------------


def produce(node: Node, tp: TopicPartition, batches: int) -> None:
    for i in range(batches):
        node.replica_manager.append(tp, one_batch(b"%d" % i))


def test_delete_records_moves_the_log_start_offset(start_node: NodeFactory) -> None:
    node = start_node()
    node.topics.create_topic("t", num_partitions=1)
    tp = TopicPartition("t", 0)
    produce(node, tp, 5)
    assert node.topics.delete_records(tp, 3) == 3
    partition = node.replica_manager.get_partition(tp)
    assert (partition.log_start_offset, partition.log_end_offset) == (3, 5)
    assert node.topics.delete_records(tp, 1) == 3  # at or below the start: nothing changes
    assert node.topics.delete_records(tp, -1) == 5  # -1: up to the high watermark
    restarted = restart(node, start_node)
    assert restarted.replica_manager.get_partition(tp).log_start_offset == 5


@pytest.mark.parametrize("offset", [-2, 6])
def test_delete_records_out_of_range(start_node: NodeFactory, offset: int) -> None:
    node = start_node()
    node.topics.create_topic("t", num_partitions=1)
    tp = TopicPartition("t", 0)
    produce(node, tp, 5)
    with pytest.raises(OffsetOutOfRangeError):
        node.topics.delete_records(tp, offset)
    assert node.replica_manager.get_partition(tp).log_start_offset == 0


def test_delete_records_of_a_compacted_topic_is_a_policy_violation(start_node: NodeFactory) -> None:
    node = start_node()
    node.topics.create_topic("t", num_partitions=1, configs={"cleanup.policy": "compact"})
    tp = TopicPartition("t", 0)
    produce(node, tp, 2)
    with pytest.raises(PolicyViolationError):
        node.topics.delete_records(tp, 1)
    node.topics.create_topic("both", num_partitions=1, configs={"cleanup.policy": "compact,delete"})
    produce(node, TopicPartition("both", 0), 2)
    assert node.topics.delete_records(TopicPartition("both", 0), 1) == 1


def test_delete_records_of_an_unknown_partition(start_node: NodeFactory) -> None:
    node = start_node()
    node.topics.create_topic("t", num_partitions=1)
    with pytest.raises(UnknownTopicOrPartitionError):
        node.topics.delete_records(TopicPartition("t", 1), 0)


# -- auto-creation -----------------------------------------------------------------------------


def test_auto_create(start_node: NodeFactory) -> None:
    node = start_node(num_partitions="2")
    record = node.topics.maybe_auto_create("auto")
    assert record is not None and record.partition_count == 2
    assert node.hosted("auto") == [0, 1]


def test_auto_create_disabled(start_node: NodeFactory) -> None:
    node = start_node(auto_create_topics_enable="false")
    assert node.topics.maybe_auto_create("auto") is None
    assert node.topics.get("auto") is None


def test_internal_topics_are_never_auto_created(start_node: NodeFactory) -> None:
    node = start_node()
    for name in ("__consumer_offsets", "__transaction_state"):
        assert node.topics.is_internal(name)
        assert node.topics.maybe_auto_create(name) is None
    assert not node.topics.is_internal("events")
    assert node.topics.topics() == {}


# -- restart and adoption ----------------------------------------------------------------------


def test_restart_finds_the_topics_and_their_data(start_node: NodeFactory) -> None:
    node = start_node()
    a = node.topics.create_topic("a", num_partitions=2, configs={"retention.ms": "123456"})
    b = node.topics.create_topic("b", num_partitions=1)
    node.replica_manager.append(TopicPartition("a", 1), one_batch(b"x", b"y", b"z"))
    restarted = restart(node, start_node)
    assert {
        name: (r.topic_id, r.assignment, r.configs) for name, r in restarted.topics.topics().items()
    } == {
        "a": (a.topic_id, {0: [0], 1: [0]}, {"retention.ms": "123456"}),
        "b": (b.topic_id, {0: [0]}, {}),
    }
    assert restarted.hosted("a") == [0, 1]
    assert restarted.hosted("b") == [0]
    partition = restarted.replica_manager.get_partition(TopicPartition("a", 1))
    assert partition.log_end_offset == partition.high_watermark == 3
    assert partition.topic_id == partition.log.topic_id == a.topic_id
    assert restarted.log_config_of("a").retention_ms == 123456


def test_start_replicas_recreates_missing_logs(start_node: NodeFactory) -> None:
    # The store is the source of truth: a partition whose dir vanished is hosted again, empty.
    node = start_node()
    node.topics.create_topic("t", num_partitions=2)
    node.log_manager.shutdown()
    shutil.rmtree(node.directory / "t-1")
    restarted = start_node(node.directory)
    assert restarted.hosted("t") == [0, 1]


def make_orphans(
    factory: NodeFactory, directory: Path, tps: list[TopicPartition], topic_id: uuid.UUID | None
) -> None:
    """Logs on disk the metadata store does not know (restored data, an older Franz)."""
    node = factory(directory, start_replicas=False)
    for tp in tps:
        node.log_manager.get_or_create_log(tp, topic_id=topic_id)
    node.log_manager.shutdown()
    (directory / METADATA_FILE).unlink(missing_ok=True)


def test_orphan_logs_are_adopted(start_node: NodeFactory, tmp_path: Path) -> None:
    directory = tmp_path / "data"
    topic_id = uuid.UUID("6a1d7e7c-7a2e-4d40-9d1b-8b8c1a2f3e4d")
    make_orphans(
        start_node, directory, [TopicPartition("old", 0), TopicPartition("old", 1)], topic_id
    )
    node = start_node(directory)
    record = node.topics.get("old")
    assert record is not None
    assert record.topic_id == topic_id  # from partition.metadata
    assert record.assignment == {0: [0], 1: [0]}
    assert node.hosted("old") == [0, 1]
    # Adopted for good: written to the store.
    assert LocalMetadataStore(directory).path.exists()
    again = restart(node, start_node)
    adopted = again.topics.get("old")
    assert adopted is not None and adopted.topic_id == topic_id


def test_orphan_partitions_with_a_gap_fill_the_gap(start_node: NodeFactory, tmp_path: Path) -> None:
    directory = tmp_path / "data"
    make_orphans(start_node, directory, [TopicPartition("old", 0), TopicPartition("old", 2)], None)
    node = start_node(directory)
    record = node.topics.get("old")
    assert record is not None
    assert record.assignment == {0: [0], 1: [0], 2: [0]}
    assert record.topic_id != uuid.UUID(int=0)
    assert node.hosted("old") == [0, 1, 2]


def test_orphan_partition_of_a_known_topic_is_added(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    directory = tmp_path / "data"
    node = start_node(directory)
    record = node.topics.create_topic("t", num_partitions=2)
    node.log_manager.get_or_create_log(TopicPartition("t", 2), topic_id=record.topic_id)
    node = restart(node, start_node)
    adopted = node.topics.get("t")
    assert adopted is not None
    assert adopted.topic_id == record.topic_id
    assert adopted.assignment == {0: [0], 1: [0], 2: [0]}
    assert node.hosted("t") == [0, 1, 2]


def test_orphan_partition_beyond_a_gap_of_a_known_topic(
    start_node: NodeFactory, tmp_path: Path
) -> None:
    directory = tmp_path / "data"
    node = start_node(directory)
    record = node.topics.create_topic("t", num_partitions=1)
    node.log_manager.get_or_create_log(TopicPartition("t", 3), topic_id=record.topic_id)
    node = restart(node, start_node)
    adopted = node.topics.get("t")
    assert adopted is not None
    assert sorted(adopted.assignment) == list(range(adopted.partition_count))
    assert 3 in node.hosted("t")


def test_leadership_writes_the_epoch_checkpoint_before_any_produce(
    start_node: NodeFactory,
) -> None:
    """As Kafka's ``Partition.makeLeader``: the leader epoch starts at the log end when the
    partition is created, so the first produce request pays no checkpoint fsync."""
    node = start_node(num_partitions="2")
    node.topics.create_topic("epochs")
    for p in range(2):
        checkpoint = node.directory / f"epochs-{p}" / "leader-epoch-checkpoint"
        assert checkpoint.read_text().splitlines() == ["0", "1", "0 0"]
    partition = node.replica_manager.get_partition(TopicPartition("epochs", 0))
    before = (node.directory / "epochs-0" / "leader-epoch-checkpoint").stat().st_mtime_ns
    partition.append_records_to_leader(one_batch(b"a", b"b"))
    assert partition.log.leader_epoch_cache.entries == [EpochEntry(0, 0)]
    after = (node.directory / "epochs-0" / "leader-epoch-checkpoint").stat().st_mtime_ns
    assert after == before  # not rewritten by the append
