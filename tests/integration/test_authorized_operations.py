"""Authorized operations (KIP-430) with no authorizer: every operation valid for the resource
type, as Kafka answers; ``Integer.MIN_VALUE`` when not asked. Raw wire for Metadata and
DescribeCluster at every version that carries the fields, then confluent-kafka's admin
client, whose ``include_authorized_operations`` results are what applications see."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AclOperation, AdminClient, NewTopic

from franz.broker.authorized_operations import (
    CLUSTER_OPERATIONS,
    GROUP_OPERATIONS,
    TOPIC_OPERATIONS,
)
from franz.protocol.api_keys import ApiKey
from tests.support.broker import BrokerProcess
from tests.support.wire import WireClient, accepted_versions, create_topics, request_at

OMITTED = -(2**31)
#: Kafka's ``AclEntry.supportedOperations``, by code, written out independently.
TOPIC_CODES = {3, 4, 5, 6, 7, 8, 10, 11}
CLUSTER_CODES = {5, 7, 8, 9, 10, 11, 12}
GROUP_CODES = {3, 6, 8}


def bits(codes: set[int]) -> int:
    return sum(1 << code for code in codes)


@pytest.fixture(scope="module")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("authops")).start()
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture
def client(shared_broker: BrokerProcess) -> Iterator[WireClient]:
    with WireClient.connect(shared_broker.bootstrap) as c:
        yield c


def test_the_bit_fields_are_kafkas() -> None:
    assert TOPIC_OPERATIONS == bits(TOPIC_CODES) == 3576
    assert CLUSTER_OPERATIONS == bits(CLUSTER_CODES) == 8096
    assert GROUP_OPERATIONS == bits(GROUP_CODES) == 328


@pytest.mark.parametrize("version", [v for v in accepted_versions(ApiKey.METADATA) if v >= 8])
def test_metadata_reports_every_operation_when_asked(client, version):
    create_topics(client, {"authops-topic": 1})
    names = [{"name": "authops-topic"}, {"name": "authops-missing"}]
    unasked = request_at(
        client, ApiKey.METADATA, version, {"topics": names, "allow_auto_topic_creation": False}
    )
    assert [t.topic_authorized_operations for t in unasked.topics] == [OMITTED, OMITTED]
    if version <= 10:
        assert unasked.cluster_authorized_operations == OMITTED
    asked = request_at(
        client,
        ApiKey.METADATA,
        version,
        {
            "topics": names,
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": True,
            "include_cluster_authorized_operations": True,
        },
    )
    by_name = {t.name: t for t in asked.topics}
    assert by_name["authops-topic"].error_code == 0
    assert by_name["authops-topic"].topic_authorized_operations == bits(TOPIC_CODES)
    # Kafka sets them on unknown topics as well (authorization comes before existence).
    assert by_name["authops-missing"].error_code == 3
    assert by_name["authops-missing"].topic_authorized_operations == bits(TOPIC_CODES)
    if version <= 10:
        assert asked.cluster_authorized_operations == bits(CLUSTER_CODES)


@pytest.mark.parametrize("version", accepted_versions(ApiKey.DESCRIBE_CLUSTER))
def test_describe_cluster_reports_every_cluster_operation_when_asked(client, version):
    unasked = request_at(client, ApiKey.DESCRIBE_CLUSTER, version, {})
    assert unasked.cluster_authorized_operations == OMITTED
    asked = request_at(
        client, ApiKey.DESCRIBE_CLUSTER, version, {"include_cluster_authorized_operations": True}
    )
    assert asked.cluster_authorized_operations == bits(CLUSTER_CODES)


def _operation_names(operations: list[AclOperation] | None) -> set[str]:
    assert operations is not None
    return {op.name for op in operations}


def test_confluent_kafka_describe_cluster_and_topics(shared_broker):
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    admin.create_topics([NewTopic("authops-ck", 1)])[
        "authops-ck"
    ].result(15)
    cluster = admin.describe_cluster(include_authorized_operations=True).result(15)
    assert _operation_names(cluster.authorized_operations) == {
        "CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE",
        "ALTER", "DESCRIBE",
    }
    [future] = admin.describe_topics(
        TopicCollection(["authops-ck"]), include_authorized_operations=True
    ).values()
    topic = future.result(15)
    assert _operation_names(topic.authorized_operations) == {
        "READ", "WRITE", "CREATE", "DELETE", "ALTER", "DESCRIBE", "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
    }
    plain = admin.describe_cluster().result(15)
    assert not plain.authorized_operations


def test_confluent_kafka_describe_consumer_groups(shared_broker):
    admin = AdminClient({"bootstrap.servers": shared_broker.bootstrap})
    [future] = admin.describe_consumer_groups(
        ["authops-group"], include_authorized_operations=True
    ).values()
    group = future.result(15)
    assert _operation_names(group.authorized_operations) == {"READ", "DESCRIBE", "DELETE"}
