"""The admin APIs against a real broker: every accepted version on the wire (kio requests,
exact error codes), then the admin clients people use (confluent-kafka's and kafka-python's).

Wire requests are built version-agnostically from mappings of Kafka field names
(``franz.protocol.messages.build`` fills what a version lacks), so one test body runs at
every version the broker accepts.
"""

from __future__ import annotations

import time
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as CKTopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
)
from confluent_kafka.admin import ResourceType as CKResourceType

from franz.protocol.api_keys import ApiKey
from tests.support.broker import BrokerProcess
from tests.support.wire import (
    WireClient,
    accepted_versions,
    api_versions,
    batch,
    list_offsets,
    produce,
    request_at,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.admin import ConfigResource as KPConfigResource
    from kafka.admin import ConfigResourceType as KPConfigResourceType
    from kafka.admin import KafkaAdminClient
    from kafka.admin import NewPartitions as KPNewPartitions
    from kafka.admin import NewTopic as KPNewTopic
    from kafka.structs import TopicPartition as KPTopicPartition

NONE = 0
OFFSET_OUT_OF_RANGE = 1
UNKNOWN_TOPIC_OR_PARTITION = 3
INVALID_TOPIC_EXCEPTION = 17
TOPIC_ALREADY_EXISTS = 36
INVALID_PARTITIONS = 37
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_CONFIG = 40
INVALID_REQUEST = 42
POLICY_VIOLATION = 44
TOPIC_DELETION_DISABLED = 73
UNKNOWN_TOPIC_ID = 100
MISMATCHED_ENDPOINT_TYPE = 114

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
ZERO_UUID = uuid.UUID(int=0)
LATEST, EARLIEST = -1, -2


versions = accepted_versions
call = request_at


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """One broker for the wire tests of this module (each test uses its own topic names)."""
    proc = BrokerProcess(
        tmp_path_factory.mktemp("admin"), {"log.retention.hours": "24", "num.partitions": "2"}
    ).start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


@pytest.fixture
def client(shared_broker: BrokerProcess) -> Iterator[WireClient]:
    with WireClient.connect(shared_broker.bootstrap) as c:
        yield c


_names = iter(range(10**9))


def fresh(prefix: str) -> str:
    return f"{prefix}-{next(_names)}"


def create(client: WireClient, name: str, partitions: int = 1, **configs: str) -> Any:
    response = call(
        client,
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
            ],
            "timeout": 10_000,
        },
    )
    [result] = response.topics
    assert result.error_code == NONE, result
    return result


def describe_topic(client: WireClient, name: str, version: int = 4, **kwargs: Any) -> Any:
    response = call(
        client,
        ApiKey.DESCRIBE_CONFIGS,
        version,
        {
            "resources": [
                {"resource_type": TOPIC, "resource_name": name, "configuration_keys": None}
            ],
            **kwargs,
        },
    )
    [result] = response.results
    return result


def configs_of(result: Any) -> dict[str, Any]:
    return {c.name: c for c in result.configs}


# -- ApiVersions ---------------------------------------------------------------------------------


def test_admin_apis_are_advertised_with_kafka_3_9_ranges(client):
    advertised = api_versions(client)
    for api, (lo, hi) in {
        ApiKey.CREATE_TOPICS: (0, 7),
        ApiKey.DELETE_TOPICS: (0, 6),
        ApiKey.DELETE_RECORDS: (0, 2),
        ApiKey.DESCRIBE_CONFIGS: (0, 4),
        ApiKey.ALTER_CONFIGS: (0, 2),
        ApiKey.DESCRIBE_LOG_DIRS: (0, 4),
        ApiKey.CREATE_PARTITIONS: (0, 3),
        ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
        ApiKey.DESCRIBE_CLUSTER: (0, 1),
        ApiKey.ELECT_LEADERS: (0, 2),
    }.items():
        assert advertised[api] == (lo, hi), api


# -- ElectLeaders --------------------------------------------------------------------------------

ELECTION_NOT_NEEDED = 84


@pytest.mark.parametrize("version", versions(ApiKey.ELECT_LEADERS))
def test_elect_leaders_is_never_needed_on_one_broker(client, version):
    name = fresh("elect")
    create(client, name, partitions=2)
    for election_type in (0, 1) if version >= 1 else (0,):
        response = call(
            client,
            ApiKey.ELECT_LEADERS,
            version,
            {
                "election_type": election_type,
                "topic_partitions": [
                    {"topic": name, "partitions": [0, 1, 7]},
                    {"topic": "never-created", "partitions": [0]},
                ],
                "timeout": 5000,
            },
        )
        got = {
            (r.topic, p.partition_id): p.error_code
            for r in response.replica_election_results
            for p in r.partition_result
        }
        assert got == {
            (name, 0): ELECTION_NOT_NEEDED,
            (name, 1): ELECTION_NOT_NEEDED,
            (name, 7): UNKNOWN_TOPIC_OR_PARTITION,
            ("never-created", 0): UNKNOWN_TOPIC_OR_PARTITION,
        }
    everything = call(
        client, ApiKey.ELECT_LEADERS, version, {"topic_partitions": None, "timeout": 5000}
    )
    assert everything.replica_election_results == ()
    if version >= 1:
        assert everything.error_code == NONE
        bad = call(
            client,
            ApiKey.ELECT_LEADERS,
            version,
            {"election_type": 5, "topic_partitions": [], "timeout": 5000},
        )
        assert bad.error_code == INVALID_REQUEST


# -- CreateTopics --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_TOPICS))
def test_create_topics_at_every_version(client, version):
    good, exists, bad = fresh("ct"), fresh("ct"), "bad name"
    create(client, exists)
    response = call(
        client,
        ApiKey.CREATE_TOPICS,
        version,
        {
            "topics": [
                {
                    "name": good,
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [],
                    "configs": [{"name": "retention.ms", "value": "60000"}],
                },
                {"name": exists, "num_partitions": 1, "replication_factor": 1},
                {"name": bad, "num_partitions": 1, "replication_factor": 1},
            ],
            "timeout": 10_000,
        },
    )
    results = {t.name: t for t in response.topics}
    assert results[good].error_code == NONE
    assert results[good].error_message is None
    assert results[exists].error_code == TOPIC_ALREADY_EXISTS
    assert results[exists].error_message == f"Topic '{exists}' already exists."
    assert results[bad].error_code == INVALID_TOPIC_EXCEPTION
    if version >= 5:
        created = results[good]
        assert created.num_partitions == 2  # num.partitions=2 (KIP-464 default)
        assert created.replication_factor == 1
        configs = {c.name: c for c in created.configs}
        assert configs["retention.ms"].value == "60000"
        assert configs["retention.ms"].config_source == 1  # DYNAMIC_TOPIC_CONFIG
        assert configs["segment.bytes"].config_source == 5  # DEFAULT_CONFIG
        assert not configs["retention.ms"].read_only
    if version >= 7:
        assert results[good].topic_id != ZERO_UUID
        assert results[exists].topic_id in (None, ZERO_UUID)  # kio reads the zero UUID as None
    meta = call(client, ApiKey.METADATA, 12, {"topics": [{"name": good}]})
    assert len(meta.topics[0].partitions) == 2


@pytest.mark.parametrize(
    ("topic", "code"),
    [
        ({"num_partitions": 0, "replication_factor": 1}, INVALID_PARTITIONS),
        ({"num_partitions": 1, "replication_factor": 2}, INVALID_REPLICATION_FACTOR),
        ({"num_partitions": 1, "replication_factor": 0}, INVALID_REPLICATION_FACTOR),
        (
            {
                "num_partitions": -1,
                "replication_factor": -1,
                "assignments": [{"partition_index": 0, "broker_ids": [5]}],
            },
            INVALID_REPLICA_ASSIGNMENT,
        ),
        (
            {
                "num_partitions": 2,
                "replication_factor": -1,
                "assignments": [{"partition_index": 0, "broker_ids": [0]}],
            },
            INVALID_REQUEST,
        ),
        (
            {
                "num_partitions": 1,
                "replication_factor": 1,
                "configs": [{"name": "no.such.config", "value": "1"}],
            },
            INVALID_CONFIG,
        ),
        (
            {
                "num_partitions": 1,
                "replication_factor": 1,
                "configs": [{"name": "retention.ms", "value": None}],
            },
            INVALID_CONFIG,
        ),
        (
            {
                "num_partitions": 1,
                "replication_factor": 1,
                "configs": [{"name": "compression.type", "value": "brotli"}],
            },
            INVALID_CONFIG,
        ),
    ],
    ids=[
        "zero-partitions",
        "rf-2",
        "rf-0",
        "unknown-broker",
        "count-and-assignment",
        "unknown-config",
        "null-config",
        "compression",
    ],
)
def test_create_topics_errors(client, topic, code):
    name = fresh("cte")
    response = call(
        client, ApiKey.CREATE_TOPICS, 7, {"topics": [{"name": name, **topic}], "timeout": 1000}
    )
    [result] = response.topics
    assert result.error_code == code, result
    assert result.error_message
    meta = call(client, ApiKey.METADATA, 12, {"topics": None})
    assert name not in {t.name for t in meta.topics}


def test_create_topics_manual_assignment_and_validate_only(client):
    manual, dry = fresh("manual"), fresh("dry")
    response = call(
        client,
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [
                {
                    "name": manual,
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [
                        {"partition_index": 1, "broker_ids": [0]},
                        {"partition_index": 0, "broker_ids": [0]},
                    ],
                }
            ],
            "timeout": 1000,
        },
    )
    assert response.topics[0].error_code == NONE
    assert response.topics[0].num_partitions == 2
    response = call(
        client,
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [{"name": dry, "num_partitions": 3, "replication_factor": 1}],
            "validate_only": True,
        },
    )
    [result] = response.topics
    assert (result.error_code, result.num_partitions) == (NONE, 3)
    assert result.topic_id in (None, ZERO_UUID)
    meta = call(client, ApiKey.METADATA, 12, {"topics": None})
    names = {t.name for t in meta.topics}
    assert manual in names and dry not in names


def test_create_topics_duplicate_names_are_invalid_request(client):
    name = fresh("dup")
    topic = {"name": name, "num_partitions": 1, "replication_factor": 1}
    response = call(client, ApiKey.CREATE_TOPICS, 7, {"topics": [topic, topic]})
    assert [t.error_code for t in response.topics] == [INVALID_REQUEST, INVALID_REQUEST]
    meta = call(client, ApiKey.METADATA, 12, {"topics": None})
    assert name not in {t.name for t in meta.topics}


# -- DeleteTopics --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.DELETE_TOPICS))
def test_delete_topics_at_every_version(client, version):
    name, missing = fresh("dt"), fresh("missing")
    created = create(client, name)
    if version >= 6:
        request = {"topics": [{"name": name}, {"name": missing}], "timeout": 1000}
    else:
        request = {"topic_names": [name, missing], "timeout": 1000}
    response = call(client, ApiKey.DELETE_TOPICS, version, request)
    results = {r.name: r for r in response.responses}
    assert results[name].error_code == NONE
    assert results[missing].error_code == UNKNOWN_TOPIC_OR_PARTITION
    if version >= 6:
        assert results[name].topic_id == created.topic_id
    meta = call(client, ApiKey.METADATA, 12, {"topics": None})
    assert name not in {t.name for t in meta.topics}


def test_delete_topics_by_id(client):
    name = fresh("byid")
    created = create(client, name)
    unknown = uuid.uuid4()
    response = call(
        client,
        ApiKey.DELETE_TOPICS,
        6,
        {"topics": [{"name": None, "topic_id": created.topic_id}, {"topic_id": unknown}]},
    )
    results = {r.topic_id: r for r in response.responses}
    assert results[created.topic_id].error_code == NONE
    assert results[created.topic_id].name == name
    assert results[unknown].error_code == UNKNOWN_TOPIC_ID
    both = call(
        client,
        ApiKey.DELETE_TOPICS,
        6,
        {"topics": [{"name": "x", "topic_id": uuid.uuid4()}]},
    )
    assert both.responses[0].error_code == INVALID_REQUEST


def test_delete_topic_disabled(broker_factory, tmp_path):
    broker = broker_factory(tmp_path / "b", {"delete.topic.enable": "false"}).start()
    with WireClient.connect(broker.bootstrap) as client:
        create(client, "kept")
        for version in (1, 6):
            request = {"topics": [{"name": "kept"}]} if version >= 6 else {"topic_names": ["kept"]}
            response = call(client, ApiKey.DELETE_TOPICS, version, request)
            expected = TOPIC_DELETION_DISABLED if version >= 3 else INVALID_REQUEST
            assert response.responses[0].error_code == expected
        meta = call(client, ApiKey.METADATA, 12, {"topics": None})
        assert "kept" in {t.name for t in meta.topics}


# -- CreatePartitions ----------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_PARTITIONS))
def test_create_partitions_at_every_version(client, version):
    name, dry = fresh("cp"), fresh("cp")
    create(client, name, 1)
    create(client, dry, 1)
    response = call(
        client,
        ApiKey.CREATE_PARTITIONS,
        version,
        {
            "topics": [
                {"name": name, "count": 3, "assignments": None},
                {"name": fresh("missing"), "count": 3, "assignments": None},
            ],
            "timeout": 1000,
        },
    )
    codes = [r.error_code for r in response.results]
    assert codes == [NONE, UNKNOWN_TOPIC_OR_PARTITION]
    shrink = call(
        client,
        ApiKey.CREATE_PARTITIONS,
        version,
        {"topics": [{"name": name, "count": 2, "assignments": None}], "timeout": 1000},
    )
    assert shrink.results[0].error_code == INVALID_PARTITIONS
    assert shrink.results[0].error_message == (
        "Topic currently has 3 partitions, which is higher than the requested 2."
    )
    validate = call(
        client,
        ApiKey.CREATE_PARTITIONS,
        version,
        {
            "topics": [{"name": dry, "count": 2, "assignments": [{"broker_ids": [0]}]}],
            "validate_only": True,
        },
    )
    assert validate.results[0].error_code == NONE
    meta = call(client, ApiKey.METADATA, 12, {"topics": [{"name": name}, {"name": dry}]})
    assert [len(t.partitions) for t in meta.topics] == [3, 1]


# -- DescribeConfigs -----------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_CONFIGS))
def test_describe_topic_configs_at_every_version(client, version):
    name = fresh("dc")
    create(client, name, 1, **{"cleanup.policy": "compact"})
    result = describe_topic(
        client, name, version, include_synonyms=True, include_documentation=True
    )
    assert result.error_code == NONE
    configs = configs_of(result)
    assert "max.message.bytes" in configs and len(configs) >= 27
    policy = configs["cleanup.policy"]
    assert (policy.value, policy.config_source, policy.read_only) == ("compact", 1, False)
    assert [(s.name, s.source) for s in policy.synonyms] == [
        ("cleanup.policy", 1),
        ("log.cleanup.policy", 5),
    ]
    retention = configs["retention.ms"]
    assert retention.value == str(24 * 3_600_000)
    assert retention.config_source == 4  # STATIC_BROKER_CONFIG: log.retention.hours=24
    if version >= 3:
        assert policy.config_type == 7  # LIST
        assert retention.config_type == 5  # LONG
        assert retention.documentation
    without = describe_topic(client, name, version)
    assert all(not c.synonyms for c in without.configs)


def test_describe_configs_resources_and_errors(client, shared_broker):
    name = fresh("dcr")
    create(client, name)
    response = call(
        client,
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [
                {
                    "resource_type": TOPIC,
                    "resource_name": name,
                    "configuration_keys": ["retention.ms", "no.such"],
                },
                {"resource_type": TOPIC, "resource_name": fresh("missing")},
                {"resource_type": TOPIC, "resource_name": "bad name"},
                {"resource_type": BROKER, "resource_name": "0", "configuration_keys": None},
                {"resource_type": BROKER, "resource_name": "", "configuration_keys": None},
                {"resource_type": BROKER, "resource_name": "3", "configuration_keys": None},
                {"resource_type": BROKER_LOGGER, "resource_name": "0"},
                {"resource_type": 32, "resource_name": "group"},
            ],
            "include_synonyms": True,
        },
    )
    topic, missing, bad, broker, default, other, logger, group = response.results
    assert [c.name for c in topic.configs] == ["retention.ms"]
    assert missing.error_code == UNKNOWN_TOPIC_OR_PARTITION and not missing.configs
    assert bad.error_code == INVALID_TOPIC_EXCEPTION
    assert broker.error_code == NONE
    broker_configs = configs_of(broker)
    hours = broker_configs["log.retention.hours"]
    assert (hours.value, hours.config_source, hours.read_only) == ("24", 4, True)
    assert broker_configs["num.partitions"].value == "2"
    assert broker_configs["auto.create.topics.enable"].config_source == 5
    assert broker_configs["auto.create.topics.enable"].value == "true"
    # read-only exactly when Kafka cannot change the config at runtime
    assert broker_configs["num.partitions"].read_only
    assert not broker_configs["log.retention.ms"].read_only
    assert not broker_configs["message.max.bytes"].read_only
    assert (default.error_code, default.configs) == (NONE, ())
    assert other.error_code == INVALID_REQUEST
    assert other.error_message == "Unexpected broker id, expected 0 or empty string, but received 3"
    assert (logger.error_code, logger.configs) == (NONE, ())
    assert group.error_code == INVALID_REQUEST


# -- AlterConfigs and IncrementalAlterConfigs ----------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.ALTER_CONFIGS))
def test_alter_configs_replaces_the_override_set(client, version):
    name = fresh("ac")
    create(client, name, **{"retention.ms": "1000", "segment.ms": "2000"})

    def alter(configs: dict[str, str | None], validate_only: bool = False) -> Any:
        response = call(
            client,
            ApiKey.ALTER_CONFIGS,
            version,
            {
                "resources": [
                    {
                        "resource_type": TOPIC,
                        "resource_name": name,
                        "configs": [{"name": k, "value": v} for k, v in configs.items()],
                    }
                ],
                "validate_only": validate_only,
            },
        )
        [result] = response.responses
        return result

    assert alter({"max.message.bytes": "5000"}, validate_only=True).error_code == NONE
    assert configs_of(describe_topic(client, name))["max.message.bytes"].config_source == 5
    assert alter({"max.message.bytes": "5000"}).error_code == NONE
    configs = configs_of(describe_topic(client, name))
    assert configs["max.message.bytes"].value == "5000"
    assert configs["retention.ms"].config_source == 4  # the override is gone: broker static
    assert configs["segment.ms"].config_source == 5
    bad = alter({"max.message.bytes": "lots"})
    assert bad.error_code == INVALID_CONFIG and "max.message.bytes" in bad.error_message
    assert alter({"compression.type": "none"}).error_code == INVALID_CONFIG
    assert alter({"retention.ms": None}).error_code == INVALID_REQUEST
    assert configs_of(describe_topic(client, name))["max.message.bytes"].value == "5000"


def test_alter_configs_on_brokers_and_unknown_resources(client):
    response = call(
        client,
        ApiKey.ALTER_CONFIGS,
        2,
        {
            "resources": [
                {
                    "resource_type": BROKER,
                    "resource_name": "0",
                    "configs": [{"name": "log.retention.hours", "value": "1"}],
                },
                {"resource_type": BROKER, "resource_name": "", "configs": []},
                {"resource_type": TOPIC, "resource_name": fresh("missing"), "configs": []},
                {"resource_type": BROKER_LOGGER, "resource_name": "0", "configs": []},
            ]
        },
    )
    refused, empty, missing, logger = response.responses
    assert refused.error_code == INVALID_REQUEST
    assert "Cannot update these configs dynamically: Set(log.retention.hours)" in (
        refused.error_message
    )
    assert empty.error_code == NONE
    assert missing.error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert logger.error_code == INVALID_REQUEST


@pytest.mark.parametrize("version", versions(ApiKey.INCREMENTAL_ALTER_CONFIGS))
def test_incremental_alter_configs_at_every_version(client, version):
    name = fresh("iac")
    create(client, name, **{"retention.ms": "1000", "segment.ms": "2000"})

    def alter(*ops: tuple[str, int, str | None]) -> Any:
        response = call(
            client,
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            version,
            {
                "resources": [
                    {
                        "resource_type": TOPIC,
                        "resource_name": name,
                        "configs": [
                            {"name": n, "config_operation": op, "value": v} for n, op, v in ops
                        ],
                    }
                ]
            },
        )
        [result] = response.responses
        return result

    result = alter(
        ("retention.ms", DELETE, None),
        ("max.message.bytes", SET, "7000"),
        ("cleanup.policy", APPEND, "compact"),
    )
    assert result.error_code == NONE, result
    configs = configs_of(describe_topic(client, name))
    assert configs["retention.ms"].config_source == 4
    assert configs["segment.ms"].value == "2000"
    assert configs["max.message.bytes"].value == "7000"
    assert configs["cleanup.policy"].value == "delete,compact"
    assert alter(("cleanup.policy", SUBTRACT, "delete")).error_code == NONE
    assert configs_of(describe_topic(client, name))["cleanup.policy"].value == "compact"
    assert alter(("segment.ms", APPEND, "5")).error_code == INVALID_CONFIG
    assert alter(("segment.ms", SET, None)).error_code == INVALID_REQUEST
    dup = alter(("segment.ms", SET, "5"), ("segment.ms", DELETE, None))
    assert dup.error_code == INVALID_REQUEST
    # One bad operation: none of the resource's operations apply.
    assert alter(("segment.ms", SET, "9"), ("segment.bytes", SET, "1")).error_code == (
        INVALID_CONFIG
    )
    assert configs_of(describe_topic(client, name))["segment.ms"].value == "2000"


# -- DeleteRecords -------------------------------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.DELETE_RECORDS))
def test_delete_records_at_every_version(client, version):
    name = fresh("dr")
    create(client, name, 2)
    for _ in range(5):
        assert produce(client, name, 0, batch((b"k", b"v"), (b"k", b"w"))).error_code == NONE
    response = call(
        client,
        ApiKey.DELETE_RECORDS,
        version,
        {
            "topics": [
                {
                    "name": name,
                    "partitions": [
                        {"partition_index": 0, "offset": 4},
                        {"partition_index": 1, "offset": 1},
                        {"partition_index": 7, "offset": 0},
                    ],
                },
                {"name": fresh("missing"), "partitions": [{"partition_index": 0, "offset": 0}]},
            ],
            "timeout": 1000,
        },
    )
    first, missing = response.topics
    results = {p.partition_index: p for p in first.partitions}
    assert (results[0].error_code, results[0].low_watermark) == (NONE, 4)
    assert (results[1].error_code, results[1].low_watermark) == (OFFSET_OUT_OF_RANGE, -1)
    assert results[7].error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert missing.partitions[0].error_code == UNKNOWN_TOPIC_OR_PARTITION
    assert list_offsets(client, name, 0, EARLIEST).offset == 4
    to_hw = call(
        client,
        ApiKey.DELETE_RECORDS,
        version,
        {"topics": [{"name": name, "partitions": [{"partition_index": 0, "offset": -1}]}]},
    )
    assert to_hw.topics[0].partitions[0].low_watermark == 10
    assert list_offsets(client, name, 0, EARLIEST).offset == 10
    assert list_offsets(client, name, 0, LATEST).offset == 10


def test_delete_records_on_a_compacted_topic_is_a_policy_violation(client):
    name = fresh("compacted")
    create(client, name, **{"cleanup.policy": "compact"})
    response = call(
        client,
        ApiKey.DELETE_RECORDS,
        2,
        {"topics": [{"name": name, "partitions": [{"partition_index": 0, "offset": -1}]}]},
    )
    assert response.topics[0].partitions[0].error_code == POLICY_VIOLATION


# -- DescribeCluster and DescribeLogDirs ---------------------------------------------------------


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_CLUSTER))
def test_describe_cluster_at_every_version(client, shared_broker, version):
    response = call(client, ApiKey.DESCRIBE_CLUSTER, version, {})
    assert response.error_code == NONE
    meta = call(client, ApiKey.METADATA, 12, {"topics": []})
    assert response.cluster_id == meta.cluster_id
    assert response.controller_id == 0
    [broker] = response.brokers
    assert (broker.broker_id, broker.host, broker.port) == (0, "127.0.0.1", shared_broker.port)
    assert response.cluster_authorized_operations == -(2**31)
    asked = call(
        client, ApiKey.DESCRIBE_CLUSTER, version, {"include_cluster_authorized_operations": True}
    )
    assert asked.cluster_authorized_operations == sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))
    if version >= 1:
        assert response.endpoint_type == 1
        controllers = call(client, ApiKey.DESCRIBE_CLUSTER, version, {"endpoint_type": 2})
        assert controllers.error_code == MISMATCHED_ENDPOINT_TYPE


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_LOG_DIRS))
def test_describe_log_dirs_at_every_version(client, shared_broker, version):
    name = fresh("ld")
    create(client, name, 2)
    produce(client, name, 1, batch((b"k", b"v" * 100)))
    everything = call(client, ApiKey.DESCRIBE_LOG_DIRS, version, {"topics": None})
    [log_dir] = everything.results
    assert log_dir.error_code == NONE
    assert Path(log_dir.log_dir) == (shared_broker.data_dir / "logs").resolve()
    topics = {t.name: t for t in log_dir.topics}
    sizes = {p.partition_index: p.partition_size for p in topics[name].partitions}
    assert sizes[0] == 0 and sizes[1] > 100
    assert all(p.offset_lag == 0 and not p.is_future_key for p in topics[name].partitions)
    if version >= 4:
        assert 0 < log_dir.usable_bytes <= log_dir.total_bytes
    some = call(
        client,
        ApiKey.DESCRIBE_LOG_DIRS,
        version,
        {"topics": [{"topic": name, "partitions": [1]}]},
    )
    [only] = some.results[0].topics
    assert only.name == name and [p.partition_index for p in only.partitions] == [1]


# -- real admin clients --------------------------------------------------------------------------


def test_confluent_admin_client_round_trip(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.create_topics(
        [
            NewTopic("orders", 2, 1, config={"retention.ms": "3600000"}),
            NewTopic("squeezed", 1, 1, config={"compression.type": "gzip"}),
        ],
        request_timeout=15,
    )
    futures["orders"].result(15)
    futures["squeezed"].result(15)  # the broker recompresses to gzip (log_validator)
    squeezed = ConfigResource(CKResourceType.TOPIC, "squeezed")
    described = admin.describe_configs([squeezed], request_timeout=15)[squeezed].result(15)
    assert described["compression.type"].value == "gzip"

    resource = ConfigResource(CKResourceType.TOPIC, "orders")
    configs = admin.describe_configs([resource], request_timeout=15)[resource].result(15)
    assert configs["retention.ms"].value == "3600000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["segment.bytes"].source == ConfigSource.DEFAULT_CONFIG.value

    change = ConfigResource(
        CKResourceType.TOPIC,
        "orders",
        incremental_configs=[
            ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([change], request_timeout=15)[change].result(15)
    configs = admin.describe_configs([resource], request_timeout=15)[resource].result(15)
    assert configs["retention.ms"].value == "7200000"

    admin.create_partitions([NewPartitions("orders", 4)], request_timeout=15)["orders"].result(15)
    assert len(admin.list_topics("orders", timeout=15).topics["orders"].partitions) == 4

    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("orders", b"v%d" % i, partition=0)
    assert producer.flush(15) == 0
    deleted = admin.delete_records([CKTopicPartition("orders", 0, 6)], request_timeout=15)
    [future] = deleted.values()
    assert future.result(15).low_watermark == 6

    cluster = admin.describe_cluster(request_timeout=15).result(15)
    assert [node.id for node in cluster.nodes] == [0]
    assert cluster.controller.id == 0

    admin.delete_topics(["orders"], request_timeout=15)["orders"].result(15)
    deadline = time.monotonic() + 15
    while "orders" in admin.list_topics(timeout=15).topics and time.monotonic() < deadline:
        time.sleep(0.1)
    assert "orders" not in admin.list_topics(timeout=15).topics


def test_kafka_python_admin_client_round_trip(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=15_000)
    try:
        created = admin.create_topics(
            [KPNewTopic("events", 1, 1, topic_configs={"cleanup.policy": "compact,delete"})]
        )
        [topic] = created["topics"]
        assert topic["error_code"] == NONE
        assert topic["configs"]["cleanup.policy"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
        admin.create_partitions({"events": KPNewPartitions(3)})
        # kafka-python 3 alters with IncrementalAlterConfigs when the broker has it.
        admin.alter_configs(
            [
                KPConfigResource(
                    KPConfigResourceType.TOPIC,
                    "events",
                    {"retention.ms": "1000", "cleanup.policy": ("SUBTRACT", "compact")},
                )
            ]
        )
        modified = admin.describe_configs([KPConfigResource(KPConfigResourceType.TOPIC, "events")])
        configs = modified["topic"]["events"]
        assert {k: (v["value"], v["config_source"]) for k, v in configs.items()} == {
            "retention.ms": ("1000", "DYNAMIC_TOPIC_CONFIG"),
            "cleanup.policy": ("delete", "DYNAMIC_TOPIC_CONFIG"),
        }
        assert configs["retention.ms"]["config_type"] == "LONG"
        brokers = admin.describe_configs(
            [KPConfigResource(KPConfigResourceType.BROKER, "0")], config_filter="all"
        )
        assert brokers["broker"]["0"]["num.partitions"]["value"] == "1"
        [log_dirs] = admin.describe_log_dirs()
        [log_dir] = log_dirs["log_dirs"]
        assert [t["name"] for t in log_dir["topics"]] == ["events"]
        assert admin.describe_cluster()["controller_id"] == 0
        deleted = admin.delete_records({KPTopicPartition("events", 0): -1})
        assert deleted[KPTopicPartition("events", 0)]["error_code"] == NONE
        admin.delete_topics(["events"])
        assert "events" not in admin.list_topics()
    finally:
        admin.close()


def test_topic_configs_survive_a_restart(broker_factory, tmp_path):
    broker = broker_factory(tmp_path / "b").start()
    with WireClient.connect(broker.bootstrap) as client:
        create(client, "kept", **{"retention.ms": "1000"})
        response = call(
            client,
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            {
                "resources": [
                    {
                        "resource_type": TOPIC,
                        "resource_name": "kept",
                        "configs": [
                            {"name": "segment.ms", "config_operation": SET, "value": "60000"}
                        ],
                    }
                ]
            },
        )
        assert response.responses[0].error_code == NONE
        for _ in range(3):
            produce(client, "kept", 0, batch((b"k", b"v")))
        result = call(
            client,
            ApiKey.DELETE_RECORDS,
            2,
            {"topics": [{"name": "kept", "partitions": [{"partition_index": 0, "offset": 2}]}]},
        )
        assert result.topics[0].partitions[0].low_watermark == 2
    assert broker.stop() == 0
    broker.start()
    with WireClient.connect(broker.bootstrap) as client:
        configs = configs_of(describe_topic(client, "kept"))
        assert configs["retention.ms"].value == "1000"
        assert configs["segment.ms"].value == "60000"
        assert list_offsets(client, "kept", 0, EARLIEST).offset == 2
