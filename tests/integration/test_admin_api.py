"""Admin APIs through real admin clients: confluent-kafka's ``AdminClient`` (librdkafka) and
kafka-python's ``KafkaAdminClient``.

APIs covered: CreateTopics (19), DeleteTopics (20), CreatePartitions (37), DescribeConfigs
(32), AlterConfigs (33), IncrementalAlterConfigs (44), DeleteRecords (21), DescribeCluster
(60), DescribeLogDirs (35), and Metadata for listing. Data is written and read with the raw
wire client (``tests.support.wire``) where the exact error code matters, and with real
producers/consumers where client behaviour is the point (partition discovery, offset reset).

Expected behaviour is Kafka 3.9's (the release whose API ranges Franz advertises), with a
single broker whose id is 0:

* topic configs: DescribeConfigs lists every topic config Kafka has, with Kafka's default
  values; a value comes from the topic override (source DYNAMIC_TOPIC_CONFIG), else from the
  broker's static config for its synonym (STATIC_BROKER_CONFIG), else the built-in default
  (DEFAULT_CONFIG); topic configs are never read-only or sensitive;
* legacy AlterConfigs replaces a topic's whole override set; IncrementalAlterConfigs
  SET/DELETE/APPEND/SUBTRACT touch only the keys named (APPEND/SUBTRACT only on list configs);
* overrides apply at once and survive a restart; bad values are INVALID_CONFIG (40);
* DeleteRecords moves the log start offset (the low watermark), which ListOffsets(earliest)
  returns and which fetches below it hit as OFFSET_OUT_OF_RANGE.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_END,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from franz.errors import ErrorCode
from tests.support.broker import BrokerProcess
from tests.support.wire import (
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    WireClient,
    batch,
    fetch,
    fetch_all,
    list_offsets,
    metadata,
    produce,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.errors as kafka_errors
    from kafka import TopicPartition as KafkaPythonTopicPartition
    from kafka.admin import ConfigResource as KafkaPythonConfigResource
    from kafka.admin import ConfigResourceType, KafkaAdminClient

TIMEOUT = 30.0

#: Every topic config of Kafka 3.9 (``LogConfig``) and its default on a broker with no
#: overrides of the synonyms: DescribeConfigs must list each, with this value.
KAFKA_TOPIC_CONFIG_DEFAULTS: dict[str, str] = {
    "cleanup.policy": "delete",
    "compression.gzip.level": "-1",
    "compression.lz4.level": "9",
    "compression.type": "producer",
    "compression.zstd.level": "3",
    "delete.retention.ms": "86400000",
    "file.delete.delay.ms": "60000",
    "flush.messages": "9223372036854775807",
    "flush.ms": "9223372036854775807",
    "follower.replication.throttled.replicas": "",
    "index.interval.bytes": "4096",
    "leader.replication.throttled.replicas": "",
    "local.retention.bytes": "-2",
    "local.retention.ms": "-2",
    "max.compaction.lag.ms": "9223372036854775807",
    "max.message.bytes": "1048588",
    "message.downconversion.enable": "true",
    "message.format.version": "3.0-IV1",
    "message.timestamp.after.max.ms": "9223372036854775807",
    "message.timestamp.before.max.ms": "9223372036854775807",
    "message.timestamp.difference.max.ms": "9223372036854775807",
    "message.timestamp.type": "CreateTime",
    "min.cleanable.dirty.ratio": "0.5",
    "min.compaction.lag.ms": "0",
    "min.insync.replicas": "1",
    "preallocate": "false",
    "remote.log.copy.disable": "false",
    "remote.log.delete.on.disable": "false",
    "remote.storage.enable": "false",
    "retention.bytes": "-1",
    "retention.ms": "604800000",
    "segment.bytes": "1073741824",
    "segment.index.bytes": "10485760",
    "segment.jitter.ms": "0",
    "segment.ms": "604800000",
    "unclean.leader.election.enable": "false",
}


# -- clients and helpers --------------------------------------------------------------------


@pytest.fixture
def admin(broker: BrokerProcess) -> AdminClient:
    return confluent_admin(broker)


@pytest.fixture
def kp_admin(broker: BrokerProcess) -> Iterator[KafkaAdminClient]:
    client = kafka_python_admin(broker)
    yield client
    client.close()


def confluent_admin(broker: BrokerProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": broker.bootstrap, "broker.address.family": "v4"})


def kafka_python_admin(broker: BrokerProcess) -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=broker.bootstrap, client_id="franz-tests", request_timeout_ms=30000
    )


def result(future: Future) -> Any:
    return future.result(timeout=TIMEOUT)


def error_code(future: Future) -> int:
    """The Kafka error code a confluent-kafka admin future failed with (0: it succeeded)."""
    try:
        future.result(timeout=TIMEOUT)
    except KafkaException as exc:
        return int(exc.args[0].code())
    return 0


def create(admin: AdminClient, *topics: NewTopic, **kwargs: Any) -> None:
    for name, future in admin.create_topics(list(topics), **kwargs).items():
        assert error_code(future) == 0, f"creating {name}: {future.exception()}"
    if not kwargs.get("validate_only"):
        for topic in topics:
            wait_for_topic(admin, topic.topic)


def wait_for_topic(admin: AdminClient, topic: str, partitions: int | None = None) -> None:
    deadline = time.monotonic() + TIMEOUT
    while True:
        described = admin.list_topics(topic, timeout=TIMEOUT).topics.get(topic)
        if (
            described is not None
            and described.error is None
            and described.partitions
            and (partitions is None or len(described.partitions) == partitions)
            and all(p.leader == 0 for p in described.partitions.values())
        ):
            return
        assert time.monotonic() < deadline, f"{topic} not ready: {described}"
        time.sleep(0.1)


def topic_names(admin: AdminClient) -> set[str]:
    return set(admin.list_topics(timeout=TIMEOUT).topics)


def partition_dirs(broker: BrokerProcess, topic: str) -> list[Path]:
    """The live partition directories of ``topic`` (``<topic>-<n>``), not ones marked deleted."""
    logs = broker.data_dir / "logs"
    return sorted(
        p
        for p in logs.iterdir()
        if p.is_dir() and p.name.rpartition("-")[0] == topic and p.name.rpartition("-")[2].isdigit()
    )


def source(entry: ConfigEntry) -> ConfigSource:
    raw = entry.source
    return raw if isinstance(raw, ConfigSource) else ConfigSource(int(raw))


def describe_topic(admin: AdminClient, topic: str) -> dict[str, ConfigEntry]:
    [future] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
    return result(future)


def describe_broker(admin: AdminClient) -> dict[str, ConfigEntry]:
    [future] = admin.describe_configs([ConfigResource(ResourceType.BROKER, "0")]).values()
    return result(future)


def assert_config(
    entries: dict[str, ConfigEntry], name: str, value: str | None, config_source: ConfigSource
) -> None:
    entry = entries.get(name)
    assert entry is not None, f"{name} missing from DescribeConfigs"
    assert (entry.value, source(entry)) == (value, config_source), (
        f"{name}: got {entry.value!r} from {source(entry).name}, "
        f"expected {value!r} from {config_source.name}"
    )
    assert entry.is_default == (config_source == ConfigSource.DEFAULT_CONFIG), entry


def incremental(
    admin: AdminClient, topic: str, *ops: tuple[str, str | None, AlterConfigOpType], **kw: Any
) -> int:
    resource = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=op) for name, value, op in ops
        ],
    )
    [future] = admin.incremental_alter_configs([resource], **kw).values()
    return error_code(future)


def legacy_alter(admin: AdminClient, topic: str, configs: dict[str, str], **kw: Any) -> int:
    """AlterConfigs (key 33), which replaces the resource's whole override set."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # "use incremental_alter_configs"
        futures = admin.alter_configs([ConfigResource(ResourceType.TOPIC, topic, configs)], **kw)
    [future] = futures.values()
    return error_code(future)


def produce_values(broker: BrokerProcess, topic: str, partition: int, values: list[bytes]) -> int:
    """Produce one batch per value over the wire (key = value: compacted topics refuse
    keyless records); returns the first offset."""
    with WireClient.connect(broker.bootstrap) as client:
        first = None
        for value in values:
            response = produce(client, topic, partition, batch((value, value)))
            assert response.error_code == ErrorCode.NONE, response
            first = response.base_offset if first is None else first
    assert first is not None
    return first


def offsets(broker: BrokerProcess, topic: str, partition: int = 0) -> tuple[int, int]:
    """(log start offset, high watermark) from ListOffsets earliest/latest."""
    with WireClient.connect(broker.bootstrap) as client:
        start = list_offsets(client, topic, partition, EARLIEST_TIMESTAMP)
        end = list_offsets(client, topic, partition, LATEST_TIMESTAMP)
    assert start.error_code == end.error_code == ErrorCode.NONE, (start, end)
    return int(start.offset), int(end.offset)


def restart(broker: BrokerProcess) -> None:
    code = broker.stop()
    assert code == 0, f"broker exited with {code}:\n{broker.output()}"
    broker.start()


# -- CreateTopics ---------------------------------------------------------------------------


def test_create_topics_with_partitions_replication_factor_and_configs(broker, admin):
    create(
        admin,
        NewTopic("orders", 3, 1, config={"retention.ms": "3600000", "cleanup.policy": "compact"}),
    )
    described = admin.list_topics("orders", timeout=TIMEOUT).topics["orders"]
    assert sorted(described.partitions) == [0, 1, 2]
    for partition in described.partitions.values():
        assert (partition.leader, partition.replicas, partition.isrs) == (0, [0], [0])
    assert [p.name for p in partition_dirs(broker, "orders")] == [
        "orders-0",
        "orders-1",
        "orders-2",
    ]
    configs = describe_topic(admin, "orders")
    assert_config(configs, "retention.ms", "3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert_config(configs, "cleanup.policy", "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert_config(configs, "segment.ms", "604800000", ConfigSource.DEFAULT_CONFIG)
    for partition in range(3):
        assert produce_values(broker, "orders", partition, [b"x"]) == 0


def test_create_topics_with_kafka_python(broker, kp_admin):
    response = kp_admin.create_topics(
        {
            "kp-topic": {
                "num_partitions": 2,
                "replication_factor": 1,
                "configs": {"retention.ms": "60000"},
            }
        }
    )
    [topic] = response["topics"]
    assert (topic["name"], topic["error_code"]) == ("kp-topic", 0), response
    kp_admin.wait_for_topics(["kp-topic"])
    [described] = kp_admin.describe_topics(["kp-topic"])
    assert len(described["partitions"]) == 2
    configs = kp_admin.describe_configs(
        [KafkaPythonConfigResource(ConfigResourceType.TOPIC, "kp-topic")], config_filter="all"
    )
    entry = configs["topic"]["kp-topic"]["retention.ms"]
    assert (entry["value"], entry["config_source"]) == ("60000", "DYNAMIC_TOPIC_CONFIG")
    with pytest.raises(kafka_errors.TopicAlreadyExistsError):
        kp_admin.create_topics({"kp-topic": {"num_partitions": 1, "replication_factor": 1}})


def test_create_topics_without_counts_uses_the_broker_defaults(broker_factory, tmp_path):
    """KIP-464 (CreateTopics v4+): -1 partitions / replication factor means the broker's
    ``num.partitions`` / ``default.replication.factor``."""
    broker = broker_factory(tmp_path / "b", {"num.partitions": "4"}).start()
    admin = confluent_admin(broker)
    create(admin, NewTopic("defaults"))
    described = admin.list_topics("defaults", timeout=TIMEOUT).topics["defaults"]
    assert sorted(described.partitions) == [0, 1, 2, 3]
    assert all(p.replicas == [0] for p in described.partitions.values())
    assert broker.stop() == 0


def test_validate_only_creates_nothing(broker, admin):
    futures = admin.create_topics([NewTopic("dry-run", 2, 1)], validate_only=True)
    assert error_code(futures["dry-run"]) == 0
    # An invalid topic is still reported by a validate-only request.
    futures = admin.create_topics([NewTopic("dry-run-rf", 1, 3)], validate_only=True)
    assert error_code(futures["dry-run-rf"]) == ErrorCode.INVALID_REPLICATION_FACTOR
    time.sleep(0.5)
    assert not {"dry-run", "dry-run-rf"} & topic_names(admin)
    assert partition_dirs(broker, "dry-run") == []
    create(admin, NewTopic("dry-run", 2, 1))
    assert len(partition_dirs(broker, "dry-run")) == 2


def test_duplicate_topic_is_topic_already_exists(broker, admin):
    create(admin, NewTopic("twice", 2, 1, config={"retention.ms": "1000"}))
    produce_values(broker, "twice", 0, [b"kept"])
    futures = admin.create_topics([NewTopic("twice", 5, 1)])
    assert error_code(futures["twice"]) == ErrorCode.TOPIC_ALREADY_EXISTS
    # The existing topic is untouched: partitions, configs and data.
    assert len(admin.list_topics("twice", timeout=TIMEOUT).topics["twice"].partitions) == 2
    assert describe_topic(admin, "twice")["retention.ms"].value == "1000"
    assert offsets(broker, "twice") == (0, 1)


def test_replication_factor_above_the_broker_count(broker, admin):
    futures = admin.create_topics([NewTopic("rf3", 1, 3)])
    assert error_code(futures["rf3"]) == ErrorCode.INVALID_REPLICATION_FACTOR
    assert "rf3" not in topic_names(admin)
    assert partition_dirs(broker, "rf3") == []


def test_zero_partitions_is_invalid_partitions(broker, admin):
    futures = admin.create_topics([NewTopic("none", 0, 1)])
    assert error_code(futures["none"]) == ErrorCode.INVALID_PARTITIONS
    assert "none" not in topic_names(admin)


@pytest.mark.parametrize(
    "config",
    [
        {"retention.ms": "abc"},
        {"retention.ms": "-5"},
        {"cleanup.policy": "bogus"},
        {"min.cleanable.dirty.ratio": "1.5"},
        {"message.timestamp.type": "WallClock"},
        {"no.such.config": "1"},
    ],
    ids=lambda c: "=".join(next(iter(c.items()))),
)
def test_invalid_config_on_create_is_invalid_config(broker, admin, config):
    futures = admin.create_topics([NewTopic("bad-config", 1, 1, config=config)])
    assert error_code(futures["bad-config"]) == ErrorCode.INVALID_CONFIG
    assert "bad-config" not in topic_names(admin)
    assert partition_dirs(broker, "bad-config") == []


# -- DeleteTopics ---------------------------------------------------------------------------


def test_delete_topics(broker, admin):
    create(admin, NewTopic("doomed", 2, 1, config={"retention.ms": "1000"}), NewTopic("kept", 1, 1))
    produce_values(broker, "doomed", 0, [b"a", b"b"])
    produce_values(broker, "kept", 0, [b"c"])
    assert len(partition_dirs(broker, "doomed")) == 2

    futures = admin.delete_topics(["doomed"], operation_timeout=TIMEOUT)
    assert error_code(futures["doomed"]) == 0
    deadline = time.monotonic() + TIMEOUT
    while "doomed" in topic_names(admin) or partition_dirs(broker, "doomed"):
        assert time.monotonic() < deadline, (
            f"doomed still listed or on disk: {partition_dirs(broker, 'doomed')}"
        )
        time.sleep(0.1)
    # Kafka renames a deleted partition's directory to <topic>-<p>.<id>-delete, then removes it.
    leftovers = [
        p.name for p in (broker.data_dir / "logs").iterdir() if p.name.startswith("doomed-")
    ]
    assert all(name.endswith("-delete") for name in leftovers), leftovers
    with WireClient.connect(broker.bootstrap) as client:
        response = produce(client, "doomed", 0, batch((None, b"late")))
        assert response.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, response
    assert offsets(broker, "kept") == (0, 1)

    # The name can be reused, and the new topic starts empty with default configs.
    create(admin, NewTopic("doomed", 1, 1))
    assert offsets(broker, "doomed") == (0, 0)
    assert_config(
        describe_topic(admin, "doomed"), "retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG
    )

    # A deleted topic stays deleted across a restart (its leftovers are not reloaded).
    assert error_code(admin.delete_topics(["doomed"], operation_timeout=TIMEOUT)["doomed"]) == 0
    restart(broker)
    admin = confluent_admin(broker)
    assert "doomed" not in topic_names(admin)
    assert "kept" in topic_names(admin)
    assert offsets(broker, "kept") == (0, 1)


def test_delete_topics_with_kafka_python(broker, admin, kp_admin):
    create(admin, NewTopic("kp-doomed", 1, 1))
    response = kp_admin.delete_topics(["kp-doomed"])
    assert [(t["name"], t["error_code"]) for t in response["topics"]] == [("kp-doomed", 0)]
    deadline = time.monotonic() + TIMEOUT
    while "kp-doomed" in kp_admin.list_topics():
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_delete_unknown_topic(broker, admin, kp_admin):
    futures = admin.delete_topics(["never-was"], operation_timeout=TIMEOUT)
    assert error_code(futures["never-was"]) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    with pytest.raises(kafka_errors.UnknownTopicOrPartitionError):
        kp_admin.delete_topics(["never-was"])


# -- CreatePartitions -----------------------------------------------------------------------


def test_create_partitions_then_produce_to_a_new_one(broker, admin):
    create(admin, NewTopic("grow", 3, 1))
    produce_values(broker, "grow", 0, [b"before"])
    futures = admin.create_partitions([NewPartitions("grow", 5)])
    assert error_code(futures["grow"]) == 0
    wait_for_topic(admin, "grow", 5)
    assert len(partition_dirs(broker, "grow")) == 5

    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "topic.metadata.refresh.interval.ms": 500}
    )
    delivered: list[Any] = []
    producer.produce(
        "grow", b"to-p4", partition=4, on_delivery=lambda e, m: delivered.append((e, m))
    )
    assert producer.flush(TIMEOUT) == 0
    [(err, message)] = delivered
    assert err is None, err
    assert (message.partition(), message.offset()) == (4, 0)
    with WireClient.connect(broker.bootstrap) as client:
        assert [r.value for r in fetch_all(client, "grow", 4)] == [b"to-p4"]
        assert [r.value for r in fetch_all(client, "grow", 0)] == [b"before"]


@pytest.mark.parametrize("count", [2, 3])
def test_create_partitions_cannot_shrink_or_stay(broker, admin, count):
    create(admin, NewTopic("fixed", 3, 1))
    futures = admin.create_partitions([NewPartitions("fixed", count)])
    assert error_code(futures["fixed"]) == ErrorCode.INVALID_PARTITIONS
    assert len(admin.list_topics("fixed", timeout=TIMEOUT).topics["fixed"].partitions) == 3


def test_create_partitions_validate_only_and_unknown_topic(broker, admin):
    create(admin, NewTopic("maybe", 1, 1))
    futures = admin.create_partitions([NewPartitions("maybe", 4)], validate_only=True)
    assert error_code(futures["maybe"]) == 0
    time.sleep(0.5)
    assert len(admin.list_topics("maybe", timeout=TIMEOUT).topics["maybe"].partitions) == 1
    assert len(partition_dirs(broker, "maybe")) == 1
    futures = admin.create_partitions([NewPartitions("no-such", 4)])
    assert error_code(futures["no-such"]) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_create_partitions_with_kafka_python(broker, admin, kp_admin):
    create(admin, NewTopic("kp-grow", 1, 1))
    response = kp_admin.create_partitions({"kp-grow": 3})
    assert [(r.name, r.error_code) for r in response.results] == [("kp-grow", 0)], response
    wait_for_topic(admin, "kp-grow", 3)
    with pytest.raises(kafka_errors.InvalidPartitionsError):
        kp_admin.create_partitions({"kp-grow": 2})


# -- DescribeConfigs ------------------------------------------------------------------------


def test_describe_topic_configs_lists_every_kafka_topic_config(broker, admin, kp_admin):
    create(admin, NewTopic("described", 1, 1, config={"retention.ms": "123456"}))
    configs = describe_topic(admin, "described")
    missing = sorted(set(KAFKA_TOPIC_CONFIG_DEFAULTS) - set(configs))
    assert not missing, f"topic configs Kafka 3.9 lists and Franz does not: {missing}"
    expected = {**KAFKA_TOPIC_CONFIG_DEFAULTS, "retention.ms": "123456"}
    wrong = {
        name: (configs[name].value, value)
        for name, value in expected.items()
        if configs[name].value != value
    }
    assert not wrong, f"(Franz, Kafka) values that differ: {wrong}"
    for name, entry in configs.items():
        want = (
            ConfigSource.DYNAMIC_TOPIC_CONFIG
            if name == "retention.ms"
            else ConfigSource.DEFAULT_CONFIG
        )
        assert source(entry) == want, f"{name}: {source(entry).name}"
        assert entry.is_default == (want == ConfigSource.DEFAULT_CONFIG), entry
        assert not entry.is_read_only, f"{name} is read-only; no topic config is"
        assert not entry.is_sensitive, f"{name} is sensitive; no topic config is"

    # kafka-python (DescribeConfigs at its newest version) sees the same values.
    described = kp_admin.describe_configs(
        [KafkaPythonConfigResource(ConfigResourceType.TOPIC, "described")], config_filter="all"
    )["topic"]["described"]
    assert {name: entry["value"] for name, entry in described.items()} == {
        name: entry.value for name, entry in configs.items()
    }
    assert described["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert described["segment.ms"]["config_source"] == "DEFAULT_CONFIG"


def test_describe_configs_of_an_unknown_topic(broker, admin):
    [future] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "ghost")]).values()
    assert error_code(future) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_topic_config_defaults_follow_the_broker_static_config(broker_factory, tmp_path):
    """A broker-level synonym set in server.properties is the topic's value, with source
    STATIC_BROKER_CONFIG (``log.retention.ms`` -> ``retention.ms``)."""
    broker = broker_factory(
        tmp_path / "b", {"log.retention.ms": "3600000", "message.max.bytes": "5000"}
    ).start()
    admin = confluent_admin(broker)
    create(admin, NewTopic("inherits", 1, 1))
    configs = describe_topic(admin, "inherits")
    assert_config(configs, "retention.ms", "3600000", ConfigSource.STATIC_BROKER_CONFIG)
    assert_config(configs, "max.message.bytes", "5000", ConfigSource.STATIC_BROKER_CONFIG)
    assert_config(configs, "segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG)
    assert broker.stop() == 0


def test_describe_broker_configs(broker, admin, kp_admin):
    configs = describe_broker(admin)
    assert configs["broker.id"].value == "0" and configs["broker.id"].is_read_only
    log_dirs = str(broker.data_dir / "logs")
    assert_config(configs, "log.dirs", log_dirs, ConfigSource.STATIC_BROKER_CONFIG)
    assert_config(configs, "num.partitions", "1", ConfigSource.DEFAULT_CONFIG)
    assert_config(configs, "message.max.bytes", "1048588", ConfigSource.DEFAULT_CONFIG)
    assert_config(configs, "auto.create.topics.enable", "true", ConfigSource.DEFAULT_CONFIG)
    assert_config(configs, "log.retention.hours", "168", ConfigSource.DEFAULT_CONFIG)
    assert_config(configs, "log.segment.bytes", "1073741824", ConfigSource.DEFAULT_CONFIG)
    assert_config(configs, "socket.request.max.bytes", "104857600", ConfigSource.DEFAULT_CONFIG)
    for name, entry in configs.items():
        if name.endswith(".password"):
            assert entry.is_sensitive and entry.value is None, entry
    described = kp_admin.describe_configs(
        [KafkaPythonConfigResource(ConfigResourceType.BROKER, "0")], config_filter="all"
    )["broker"]["0"]
    assert described["log.dirs"]["value"] == log_dirs
    assert described["num.partitions"]["config_source"] == "DEFAULT_CONFIG"


# -- AlterConfigs and IncrementalAlterConfigs ----------------------------------------------


def test_legacy_alter_configs_replaces_the_whole_override_set(broker, admin):
    create(
        admin,
        NewTopic("replaced", 1, 1, config={"retention.ms": "1000", "cleanup.policy": "compact"}),
    )
    assert legacy_alter(admin, "replaced", {"segment.ms": "7200000"}) == 0
    configs = describe_topic(admin, "replaced")
    assert_config(configs, "segment.ms", "7200000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert_config(configs, "retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG)
    assert_config(configs, "cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG)
    # validate_only checks without applying.
    assert legacy_alter(admin, "replaced", {"retention.ms": "5"}, validate_only=True) == 0
    assert legacy_alter(admin, "replaced", {"retention.ms": "x"}, validate_only=True) == 40
    assert_config(
        describe_topic(admin, "replaced"),
        "segment.ms",
        "7200000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
    )
    # An empty set removes every override.
    assert legacy_alter(admin, "replaced", {}) == 0
    assert all(
        source(e) == ConfigSource.DEFAULT_CONFIG for e in describe_topic(admin, "replaced").values()
    )


def test_incremental_alter_configs_set_delete_append_subtract(broker, admin):
    create(admin, NewTopic("tuned", 1, 1, config={"segment.ms": "7200000"}))
    SET, DELETE, APPEND, SUBTRACT = (
        AlterConfigOpType.SET,
        AlterConfigOpType.DELETE,
        AlterConfigOpType.APPEND,
        AlterConfigOpType.SUBTRACT,
    )
    assert incremental(admin, "tuned", ("retention.ms", "86400000", SET)) == 0
    configs = describe_topic(admin, "tuned")
    assert_config(configs, "retention.ms", "86400000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert_config(configs, "segment.ms", "7200000", ConfigSource.DYNAMIC_TOPIC_CONFIG)

    assert incremental(admin, "tuned", ("retention.ms", None, DELETE)) == 0
    configs = describe_topic(admin, "tuned")
    assert_config(configs, "retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG)
    assert_config(configs, "segment.ms", "7200000", ConfigSource.DYNAMIC_TOPIC_CONFIG)

    # APPEND to a list config starts from its current value (the default "delete").
    assert incremental(admin, "tuned", ("cleanup.policy", "compact", APPEND)) == 0
    assert_config(
        describe_topic(admin, "tuned"),
        "cleanup.policy",
        "delete,compact",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
    )
    assert incremental(admin, "tuned", ("cleanup.policy", "delete", SUBTRACT)) == 0
    assert_config(
        describe_topic(admin, "tuned"),
        "cleanup.policy",
        "compact",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
    )
    # APPEND/SUBTRACT on a config that is not a list is INVALID_CONFIG, and changes nothing.
    assert incremental(admin, "tuned", ("retention.ms", "5", APPEND)) == ErrorCode.INVALID_CONFIG
    assert incremental(admin, "tuned", ("segment.ms", "5", SUBTRACT)) == ErrorCode.INVALID_CONFIG
    configs = describe_topic(admin, "tuned")
    assert_config(configs, "retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG)
    assert_config(configs, "segment.ms", "7200000", ConfigSource.DYNAMIC_TOPIC_CONFIG)

    # Several operations in one request apply together; validate_only applies none.
    assert incremental(admin, "tuned", ("retention.ms", "1", SET), validate_only=True) == 0
    assert describe_topic(admin, "tuned")["retention.ms"].value == "604800000"
    assert (
        incremental(admin, "tuned", ("retention.ms", "120000", SET), ("segment.ms", None, DELETE))
        == 0
    )
    configs = describe_topic(admin, "tuned")
    assert_config(configs, "retention.ms", "120000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert_config(configs, "segment.ms", "604800000", ConfigSource.DEFAULT_CONFIG)


def test_incremental_alter_configs_with_kafka_python(broker, admin, kp_admin):
    create(admin, NewTopic("kp-tuned", 1, 1))
    response = kp_admin.alter_configs(
        [
            KafkaPythonConfigResource(
                ConfigResourceType.TOPIC, "kp-tuned", {"retention.ms": "99000"}
            )
        ],
        incremental=True,
    )
    assert response == {"topic": {"kp-tuned": "OK"}}, response
    assert_config(
        describe_topic(admin, "kp-tuned"),
        "retention.ms",
        "99000",
        ConfigSource.DYNAMIC_TOPIC_CONFIG,
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("retention.ms", "abc"),
        ("segment.bytes", "1"),
        ("min.cleanable.dirty.ratio", "2"),
        ("cleanup.policy", "shred"),
        ("unclean.leader.election.enable", "maybe"),
        ("no.such.config", "1"),
    ],
)
def test_invalid_config_values_are_invalid_config(broker, admin, name, value):
    create(admin, NewTopic("strict", 1, 1, config={"retention.ms": "777000"}))
    assert (
        incremental(admin, "strict", (name, value, AlterConfigOpType.SET))
        == ErrorCode.INVALID_CONFIG
    )
    assert legacy_alter(admin, "strict", {name: value}) == ErrorCode.INVALID_CONFIG
    # Nothing changed: the earlier override is still there, the bad key is not.
    configs = describe_topic(admin, "strict")
    assert_config(configs, "retention.ms", "777000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    if name != "retention.ms" and name in configs:
        assert source(configs[name]) == ConfigSource.DEFAULT_CONFIG


def test_alter_configs_of_an_unknown_topic(broker, admin):
    code = incremental(admin, "ghost", ("retention.ms", "1000", AlterConfigOpType.SET))
    assert code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_config_changes_apply_live(broker, admin):
    create(admin, NewTopic("live", 1, 1))
    produce_values(broker, "live", 0, [b"x" * 1000])
    assert incremental(admin, "live", ("max.message.bytes", "200", AlterConfigOpType.SET)) == 0
    with WireClient.connect(broker.bootstrap) as client:
        rejected = produce(client, "live", 0, batch((None, b"x" * 1000)))
        assert rejected.error_code == ErrorCode.MESSAGE_TOO_LARGE, rejected
        accepted = produce(client, "live", 0, batch((None, b"y" * 50)))
        assert accepted.error_code == ErrorCode.NONE, accepted
        assert accepted.base_offset == 1
    # A real producer sees the same error.
    producer = Producer({"bootstrap.servers": broker.bootstrap, "retries": 0})
    delivered: list[Any] = []
    producer.produce("live", b"z" * 1000, partition=0, on_delivery=lambda e, m: delivered.append(e))
    producer.flush(TIMEOUT)
    [err] = delivered
    assert err is not None and err.code() == KafkaError.MSG_SIZE_TOO_LARGE, err
    # Deleting the override restores the default limit.
    assert incremental(admin, "live", ("max.message.bytes", None, AlterConfigOpType.DELETE)) == 0
    assert produce_values(broker, "live", 0, [b"x" * 1000]) == 2


def test_config_overrides_survive_a_restart(broker, admin):
    create(admin, NewTopic("durable", 1, 1, config={"cleanup.policy": "compact"}))
    create(admin, NewTopic("durable-legacy", 1, 1, config={"retention.ms": "1000"}))
    assert incremental(admin, "durable", ("retention.ms", "3600000", AlterConfigOpType.SET)) == 0
    assert incremental(admin, "durable", ("max.message.bytes", "200", AlterConfigOpType.SET)) == 0
    assert legacy_alter(admin, "durable-legacy", {"segment.ms": "7200000"}) == 0
    restart(broker)
    admin = confluent_admin(broker)
    configs = describe_topic(admin, "durable")
    assert_config(configs, "cleanup.policy", "compact", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert_config(configs, "retention.ms", "3600000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert_config(configs, "max.message.bytes", "200", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    legacy = describe_topic(admin, "durable-legacy")
    assert_config(legacy, "segment.ms", "7200000", ConfigSource.DYNAMIC_TOPIC_CONFIG)
    assert_config(legacy, "retention.ms", "604800000", ConfigSource.DEFAULT_CONFIG)
    with WireClient.connect(broker.bootstrap) as client:
        rejected = produce(client, "durable", 0, batch((b"k", b"x" * 1000)))
        assert rejected.error_code == ErrorCode.MESSAGE_TOO_LARGE, rejected


# -- DeleteRecords --------------------------------------------------------------------------


def test_delete_records_moves_the_low_watermark(broker, admin):
    create(admin, NewTopic("trimmed", 2, 1))
    produce_values(broker, "trimmed", 0, [f"v{i}".encode() for i in range(10)])
    produce_values(broker, "trimmed", 1, [b"untouched"])

    futures = admin.delete_records([TopicPartition("trimmed", 0, 4)])
    [deleted] = [result(f) for f in futures.values()]
    assert deleted.low_watermark == 4
    assert offsets(broker, "trimmed", 0) == (4, 10)
    assert offsets(broker, "trimmed", 1) == (0, 1)
    earliest = admin.list_offsets({TopicPartition("trimmed", 0): OffsetSpec.earliest()})
    assert [result(f).offset for f in earliest.values()] == [4]

    with WireClient.connect(broker.bootstrap) as client:
        below = fetch(client, "trimmed", 0, 0)
        assert below.error_code == ErrorCode.OFFSET_OUT_OF_RANGE, below
        at_start = fetch_all(client, "trimmed", 0, 4)
        assert [r.value for r in at_start] == [f"v{i}".encode() for i in range(4, 10)]
        assert fetch(client, "trimmed", 0, 4).log_start_offset == 4

    # A consumer asking for offset 0 is reset to the new start (auto.offset.reset=earliest),
    # or told its offset is out of range (auto.offset.reset=error).
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "g", "auto.offset.reset": "earliest"}
    )
    consumer.assign([TopicPartition("trimmed", 0, 0)])
    message = consumer.poll(TIMEOUT)
    consumer.close()
    assert message is not None and message.error() is None, message and message.error()
    assert (message.offset(), message.value()) == (4, b"v4")
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": "g", "auto.offset.reset": "error"}
    )
    consumer.assign([TopicPartition("trimmed", 0, 0)])
    message = consumer.poll(TIMEOUT)
    consumer.close()
    assert message is not None and message.error() is not None, message
    assert message.error().code() == KafkaError._AUTO_OFFSET_RESET, message.error()

    # Deleting below the current start is a no-op; beyond the high watermark is out of range;
    # OFFSET_END (-1) deletes up to the high watermark.
    [deleted] = [
        result(f) for f in admin.delete_records([TopicPartition("trimmed", 0, 2)]).values()
    ]
    assert deleted.low_watermark == 4
    [future] = admin.delete_records([TopicPartition("trimmed", 0, 11)]).values()
    assert error_code(future) == ErrorCode.OFFSET_OUT_OF_RANGE
    [deleted] = [
        result(f) for f in admin.delete_records([TopicPartition("trimmed", 0, OFFSET_END)]).values()
    ]
    assert deleted.low_watermark == 10
    assert offsets(broker, "trimmed", 0) == (10, 10)

    # The log start offset is durable (log-start-offset-checkpoint).
    restart(broker)
    assert offsets(broker, "trimmed", 0) == (10, 10)
    assert offsets(broker, "trimmed", 1) == (0, 1)
    assert produce_values(broker, "trimmed", 0, [b"after"]) == 10


def test_delete_records_with_kafka_python(broker, admin, kp_admin):
    create(admin, NewTopic("kp-trimmed", 1, 1))
    produce_values(broker, "kp-trimmed", 0, [b"a", b"b", b"c"])
    response = kp_admin.delete_records({KafkaPythonTopicPartition("kp-trimmed", 0): 2})
    [(tp, info)] = response.items()
    assert (tp.topic, tp.partition) == ("kp-trimmed", 0)
    assert info["low_watermark"] == 2, response
    assert offsets(broker, "kp-trimmed") == (2, 3)


@pytest.mark.parametrize(("topic", "partition"), [("small", 5), ("no-such-topic", 0)])
def test_delete_records_of_an_unknown_partition(broker, admin, kp_admin, topic, partition):
    """Sent to broker 0 directly: librdkafka (and kafka-python without a leader id) refuse
    unknown partitions client-side, from their metadata, without asking the broker."""
    create(admin, NewTopic("small", 1, 1))
    with pytest.raises(kafka_errors.UnknownTopicOrPartitionError):
        kp_admin.delete_records(
            {KafkaPythonTopicPartition(topic, partition): 0}, partition_leader_id=0
        )
    assert "no-such-topic" not in topic_names(admin)


# -- DescribeCluster, DescribeLogDirs, listing ----------------------------------------------


def _cluster_id(broker: BrokerProcess) -> str:
    for line in (broker.data_dir / "logs" / "meta.properties").read_text().splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "cluster.id":
            return value.strip()
    raise AssertionError("meta.properties has no cluster.id")


def test_describe_cluster(broker, admin, kp_admin):
    described = kp_admin.describe_cluster()
    assert described["cluster_id"] == _cluster_id(broker)
    assert described["controller_id"] == 0
    assert [(b["broker_id"], b["host"], b["port"]) for b in described["brokers"]] == [
        (0, "127.0.0.1", broker.port)
    ]
    cluster = result(admin.describe_cluster())
    assert cluster.cluster_id == _cluster_id(broker)
    assert cluster.controller.id == 0
    assert [(n.id, n.host, n.port) for n in cluster.nodes] == [(0, "127.0.0.1", broker.port)]
    with WireClient.connect(broker.bootstrap) as client:
        response = metadata(client, [])
    assert (response.cluster_id, response.controller_id) == (_cluster_id(broker), 0)


def test_describe_log_dirs(broker, admin, kp_admin):
    create(admin, NewTopic("sized", 2, 1))
    produce_values(broker, "sized", 0, [b"x" * 100, b"y" * 100])
    [per_broker] = kp_admin.describe_log_dirs()
    assert per_broker["broker"] == 0
    [log_dir] = per_broker["log_dirs"]
    assert log_dir["error_code"] == 0, log_dir
    assert Path(log_dir["log_dir"]) == (broker.data_dir / "logs").resolve()
    sizes = {
        (topic["name"], p["partition_index"]): p["partition_size"]
        for topic in log_dir["topics"]
        for p in topic["partitions"]
    }
    on_disk = sum(f.stat().st_size for f in (broker.data_dir / "logs" / "sized-0").glob("*.log"))
    assert sizes[("sized", 0)] == on_disk > 200, (sizes, on_disk)
    assert sizes[("sized", 1)] == 0, sizes
    for topic in log_dir["topics"]:
        for partition in topic["partitions"]:
            assert partition["offset_lag"] == 0 and not partition["is_future_key"], partition
    # Only some partitions, by name.
    [per_broker] = kp_admin.describe_log_dirs(topic_partitions={"sized": [1]})
    [log_dir] = per_broker["log_dirs"]
    assert [
        (t["name"], [p["partition_index"] for p in t["partitions"]]) for t in log_dir["topics"]
    ] == [("sized", [1])]


def test_list_topics(broker, admin, kp_admin):
    create(admin, NewTopic("alpha", 1, 1), NewTopic("beta", 3, 1))
    kp_admin.create_topics({"gamma": {"num_partitions": 2, "replication_factor": 1}})
    wait_for_topic(admin, "gamma", 2)

    def user_topics(names: Callable[[], Any]) -> set[str]:
        return {n for n in names() if not n.startswith("__")}

    assert user_topics(kp_admin.list_topics) == {"alpha", "beta", "gamma"}
    assert user_topics(lambda: topic_names(admin)) == {"alpha", "beta", "gamma"}
    with WireClient.connect(broker.bootstrap) as client:
        response = metadata(client, None)
    listed = {t.name: len(t.partitions) for t in response.topics if not t.name.startswith("__")}
    assert listed == {"alpha": 1, "beta": 3, "gamma": 2}
    assert all(t.topic_id is not None and t.topic_id.int != 0 for t in response.topics)
