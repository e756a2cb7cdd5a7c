"""``TopicManager`` as the admin APIs use it, on real files: the config checks CreateTopics
and AlterConfigs share, and DeleteRecords (the log start offset, its checkpoint, retention,
a restart). The topic lifecycle itself is covered in ``test_topic_manager.py``."""

from __future__ import annotations

import pytest

from franz.errors import (
    ErrorCode,
    InvalidConfigurationError,
    OffsetOutOfRangeError,
    PolicyViolationError,
    UnknownTopicOrPartitionError,
    error_code_for,
)
from franz.storage.checkpoints import LOG_START_OFFSET_CHECKPOINT
from franz.storage.files import TopicPartition
from tests.support.kafka_format import parse_checkpoint
from tests.unit.broker.conftest import produce
from tests.unit.storage.conftest import BATCHES_PER_SEGMENT, RECORDS_PER_BATCH

SMALL_SEGMENTS = {"segment.bytes": "4096", "index.interval.bytes": "600"}
RECORDS_PER_SEGMENT = BATCHES_PER_SEGMENT * RECORDS_PER_BATCH


# -- configs ---------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd", "uncompressed"])
def test_compression_codecs_are_accepted_on_create_and_alter(node, codec):
    node.topics.create_topic("t", 1, 1, {"compression.type": codec})
    assert node.topics.get("t").configs == {"compression.type": codec}
    node.topics.set_topic_configs("t", {"compression.type": "producer"})
    node.topics.set_topic_configs("t", {"compression.type": codec})
    assert node.topics.get("t").configs == {"compression.type": codec}


@pytest.mark.parametrize("value", ["none", "GZIP", "brotli", ""])
def test_unknown_compression_type_is_invalid_config_on_create_and_alter(node, value):
    with pytest.raises(InvalidConfigurationError, match="String must be one of") as info:
        node.topics.create_topic("t", 1, 1, {"compression.type": value})
    assert error_code_for(info.value) == ErrorCode.INVALID_CONFIG
    assert node.topics.get("t") is None
    node.topics.create_topic("t", 1, 1, {"compression.type": "producer"})
    with pytest.raises(InvalidConfigurationError, match="String must be one of"):
        node.topics.set_topic_configs("t", {"compression.type": value})
    assert node.topics.get("t").configs == {"compression.type": "producer"}


def test_bad_values_and_unknown_names_are_invalid_config(node):
    node.topics.create_topic("t", 1, 1)
    for configs, message in [
        ({"retention.ms": "soon"}, "Not a number of type LONG"),
        ({"segment.bytes": "1"}, "Value must be at least 14"),
        ({"no.such.config": "1"}, "Unknown topic config name: no.such.config"),
    ]:
        with pytest.raises(InvalidConfigurationError, match=message) as info:
            node.topics.set_topic_configs("t", configs)
        assert error_code_for(info.value) == ErrorCode.INVALID_CONFIG
    assert node.topics.get("t").configs == {}


# -- DeleteRecords ---------------------------------------------------------------------------


def test_delete_records_to_an_offset_and_to_the_high_watermark(node):
    tp = TopicPartition("t", 0)
    node.topics.create_topic("t", 1, 1)
    produce(node, tp, 4)
    assert node.topics.delete_records(tp, 5) == 5
    assert node.topics.delete_records(tp, 2) == 5  # never moves back
    assert node.topics.delete_records(tp, -1) == 4 * RECORDS_PER_BATCH
    assert node.topics.replica_manager.partitions[tp].log_start_offset == 4 * RECORDS_PER_BATCH


@pytest.mark.parametrize("offset", [4 * RECORDS_PER_BATCH + 1, -2])
def test_delete_records_outside_the_log_is_offset_out_of_range(node, offset):
    tp = TopicPartition("t", 0)
    node.topics.create_topic("t", 1, 1)
    produce(node, tp, 4)
    with pytest.raises(OffsetOutOfRangeError):
        node.topics.delete_records(tp, offset)
    assert node.topics.replica_manager.partitions[tp].log_start_offset == 0


def test_delete_records_is_refused_on_compacted_topics(node):
    node.topics.create_topic("t", 1, 1, {"cleanup.policy": "compact"})
    with pytest.raises(PolicyViolationError) as info:
        node.topics.delete_records(TopicPartition("t", 0), -1)
    assert error_code_for(info.value) == ErrorCode.POLICY_VIOLATION
    node.topics.create_topic("u", 1, 1, {"cleanup.policy": "compact,delete"})
    assert node.topics.delete_records(TopicPartition("u", 0), -1) == 0


def test_delete_records_of_an_unknown_partition(node):
    node.topics.create_topic("t", 1, 1)
    for tp in (TopicPartition("t", 1), TopicPartition("nope", 0)):
        with pytest.raises(UnknownTopicOrPartitionError):
            node.topics.delete_records(tp, 0)


def test_deleted_records_are_checkpointed_retired_by_retention_and_kept_on_restart(cluster, node):
    tp = TopicPartition("t", 0)
    node.topics.create_topic("t", 1, 1, SMALL_SEGMENTS)
    produce(node, tp, 3 * BATCHES_PER_SEGMENT + 1)
    partition_log = node.log_manager.get_log(tp)
    assert len(partition_log.segments) == 4
    target = 2 * RECORDS_PER_SEGMENT + 5
    node.topics.delete_records(tp, target)

    node.log_manager.checkpoint_log_start_offsets()
    checkpoint = (cluster.root / LOG_START_OFFSET_CHECKPOINT).read_text()
    assert parse_checkpoint(checkpoint)[("t", 0)] == target

    assert node.log_manager.cleanup_logs() == 2  # the segments wholly below the new start
    assert [s.base_offset for s in partition_log.segments] == [
        2 * RECORDS_PER_SEGMENT,
        3 * RECORDS_PER_SEGMENT,
    ]
    assert partition_log.log_start_offset == target

    cluster.stop()
    node = cluster.start()
    assert node.topics.replica_manager.partitions[tp].log_start_offset == target
