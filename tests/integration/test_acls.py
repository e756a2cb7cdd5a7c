"""Authorization on an embedded broker with ``authorizer.class.name`` set (issue 20 part 4).

Every connection here is ``User:ANONYMOUS`` (PLAINTEXT). Each test first runs the broker with
``super.users=User:ANONYMOUS`` to create its topics (and add ACLs with ``franz acls``), then
restarts it on the same data dir with ``super.users`` empty: the ACLs persist in the embedded
metadata, and what ANONYMOUS may do is exactly what they grant. Codes are checked on the wire
(``tests.support.wire``) and as real clients (confluent-kafka) see them.
"""

from __future__ import annotations

import datetime
import struct
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.alter_user_scram_credentials.v0 import request as alter_scram_v0
from kio.schema.create_acls.v3 import request as create_acls_v3
from kio.schema.create_topics.v7 import request as create_topics_v7
from kio.schema.delete_topics.v6 import request as delete_topics_v6
from kio.schema.describe_acls.v3 import request as describe_acls_v3
from kio.schema.describe_cluster.v1 import request as describe_cluster_v1
from kio.schema.describe_configs.v4 import request as describe_configs_v4
from kio.schema.describe_user_scram_credentials.v0 import request as describe_scram_v0
from kio.schema.find_coordinator.v4 import request as find_coordinator_v4
from kio.schema.init_producer_id.v4 import request as init_producer_id_v4
from kio.schema.join_group.v9 import request as join_group_v9
from kio.schema.offset_fetch.v8 import request as offset_fetch_v8
from kio.static.primitive import i8, i32

from franz.protocol.api_keys import SUPPORTED_APIS, ApiKey
from franz.protocol.messages import build, request_type
from tests.support.broker import BrokerProcess
from tests.support.wire import (
    WireClient,
    batch,
    encode_header,
    fetch,
    list_offsets,
    metadata,
    produce,
)

AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer"}
SUPER = {**AUTHORIZER, "super.users": "User:ANONYMOUS"}
TOPIC_DENIED = KafkaError.TOPIC_AUTHORIZATION_FAILED  # 29
GROUP_DENIED = KafkaError.GROUP_AUTHORIZATION_FAILED  # 30
CLUSTER_DENIED = KafkaError.CLUSTER_AUTHORIZATION_FAILED  # 31
TXN_DENIED = KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED  # 53
TOPICS = ("orders", "other", "pay-1", "pay-secret")


def _ms(value: int) -> datetime.timedelta:
    return datetime.timedelta(milliseconds=value)


def franz(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "franz", *args], capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A data dir holding TOPICS, made by a broker where ANONYMOUS is a super user."""
    with BrokerProcess(tmp_path / "b", SUPER) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for future in admin.create_topics([NewTopic(t, 1, 1) for t in TOPICS]).values():
            future.result(30)
    yield tmp_path / "b"


def _acls(bootstrap: str, *args: str) -> str:
    done = franz("acls", "--bootstrap-server", bootstrap, *args)
    assert done.returncode == 0, done.stderr + done.stdout
    return done.stdout


def _produce_error(bootstrap: str, topic: str) -> KafkaError | None:
    """Deliver one record with confluent-kafka; the delivery error (None: delivered)."""
    errors: list[KafkaError | None] = []
    producer = Producer(
        {"bootstrap.servers": bootstrap, "message.timeout.ms": 20000, "enable.idempotence": False}
    )
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(30)
    assert len(errors) == 1
    return errors[0]


def _consume(bootstrap: str, topic: str, group: str) -> tuple[list[bytes], list[KafkaError]]:
    """Subscribe as ``group`` and poll until a record or an error arrives."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    values: list[bytes] = []
    errors: list[KafkaError] = []
    try:
        consumer.subscribe([topic])
        for _ in range(60):
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                errors.append(msg.error())
                break
            values.append(msg.value())
            break
    finally:
        consumer.close()
    return values, errors


def test_without_acls_every_api_is_refused_with_its_code(data_dir: Path) -> None:
    with BrokerProcess(data_dir, AUTHORIZER) as broker, WireClient.connect(broker.bootstrap) as c:
        # Metadata: undescribable topics are left out, or refused when named.
        assert [t.name for t in metadata(c, None).topics] == []
        [named] = metadata(c, ["orders"]).topics
        assert (named.name, named.error_code) == ("orders", TOPIC_DENIED)
        assert produce(c, "orders", 0, batch((None, b"x"))).error_code == TOPIC_DENIED
        assert fetch(c, "orders", 0, 0).error_code == TOPIC_DENIED
        assert list_offsets(c, "orders", 0, -1).error_code == TOPIC_DENIED
        found = c.request(
            find_coordinator_v4.FindCoordinatorRequest(key_type=0, coordinator_keys=("billing",))
        )
        assert found.coordinators[0].error_code == GROUP_DENIED
        found = c.request(
            find_coordinator_v4.FindCoordinatorRequest(key_type=1, coordinator_keys=("tx",))
        )
        assert found.coordinators[0].error_code == TXN_DENIED
        joined = c.request(
            join_group_v9.JoinGroupRequest(
                group_id="billing",
                session_timeout=_ms(10000),
                rebalance_timeout=_ms(10000),
                member_id="",
                group_instance_id=None,
                protocol_type="consumer",
                protocols=(join_group_v9.JoinGroupRequestProtocol(name="range", metadata=b""),),
            )
        )
        assert joined.error_code == GROUP_DENIED
        fetched = c.request(
            offset_fetch_v8.OffsetFetchRequest(
                groups=(offset_fetch_v8.OffsetFetchRequestGroup(group_id="billing", topics=None),)
            )
        )
        assert fetched.groups[0].error_code == GROUP_DENIED
        created = c.request(
            create_topics_v7.CreateTopicsRequest(
                topics=(
                    create_topics_v7.CreatableTopic(
                        name="new",
                        num_partitions=1,
                        replication_factor=1,
                        assignments=(),
                        configs=(),
                    ),
                ),
                timeout=_ms(10000),
            )
        )
        assert created.topics[0].error_code == TOPIC_DENIED
        deleted = c.request(
            delete_topics_v6.DeleteTopicsRequest(
                topics=(
                    delete_topics_v6.DeleteTopicState(name="orders", topic_id=uuid.UUID(int=0)),
                ),
                timeout=_ms(10000),
            )
        )
        assert deleted.responses[0].error_code == TOPIC_DENIED
        configs = c.request(
            describe_configs_v4.DescribeConfigsRequest(
                resources=(
                    describe_configs_v4.DescribeConfigsResource(
                        resource_type=2, resource_name="orders", configuration_keys=None
                    ),
                    describe_configs_v4.DescribeConfigsResource(
                        resource_type=4, resource_name="0", configuration_keys=None
                    ),
                )
            )
        )
        assert [r.error_code for r in configs.results] == [TOPIC_DENIED, CLUSTER_DENIED]
        idempotent = c.request(
            init_producer_id_v4.InitProducerIdRequest(
                transactional_id=None, transaction_timeout=_ms(60000)
            )
        )
        assert idempotent.error_code == CLUSTER_DENIED
        transactional = c.request(
            init_producer_id_v4.InitProducerIdRequest(
                transactional_id="tx", transaction_timeout=_ms(60000)
            )
        )
        assert transactional.error_code == TXN_DENIED
        described = c.request(
            describe_acls_v3.DescribeAclsRequest(
                resource_type_filter=1,
                resource_name_filter=None,
                pattern_type_filter=1,
                principal_filter=None,
                host_filter=None,
                operation=1,
                permission_type=1,
            )
        )
        assert described.error_code == CLUSTER_DENIED
        acl_created = c.request(
            create_acls_v3.CreateAclsRequest(
                creations=(
                    create_acls_v3.AclCreation(
                        resource_type=2,
                        resource_name="orders",
                        resource_pattern_type=3,
                        principal="User:ANONYMOUS",
                        host="*",
                        operation=4,
                        permission_type=3,
                    ),
                )
            )
        )
        assert acl_created.results[0].error_code == CLUSTER_DENIED
        # SCRAM credentials: DESCRIBE, and ALTER, on the cluster (KIP-554; Kafka's
        # getErrorResponse: every user asked gets the error, a describe's results unnamed).
        scram = c.request(
            describe_scram_v0.DescribeUserScramCredentialsRequest(
                users=(describe_scram_v0.UserName(name="alice"),)
            )
        )
        assert (scram.error_code, scram.error_message) == (
            CLUSTER_DENIED,
            "Cluster authorization failed.",
        )
        assert [(r.user, r.error_code) for r in scram.results] == [("", CLUSTER_DENIED)]
        everyone = c.request(describe_scram_v0.DescribeUserScramCredentialsRequest(users=None))
        assert (everyone.error_code, everyone.results) == (CLUSTER_DENIED, ())
        altered = c.request(
            alter_scram_v0.AlterUserScramCredentialsRequest(
                deletions=(alter_scram_v0.ScramCredentialDeletion(name="bob", mechanism=i8(1)),),
                upsertions=(
                    alter_scram_v0.ScramCredentialUpsertion(
                        name="mallory",
                        mechanism=i8(1),
                        iterations=i32(4096),
                        salt=b"salt",
                        salted_password=b"x" * 32,
                    ),
                ),
            )
        )
        assert [(r.user, r.error_code, r.error_message) for r in altered.results] == [
            ("bob", CLUSTER_DENIED, "Cluster authorization failed."),
            ("mallory", CLUSTER_DENIED, "Cluster authorization failed."),
        ]
        cluster = c.request(
            describe_cluster_v1.DescribeClusterRequest(include_cluster_authorized_operations=True)
        )
        assert cluster.cluster_authorized_operations == 0
        # Real clients see the same refusals.
        err = _produce_error(broker.bootstrap, "orders")
        assert err is not None and err.code() == TOPIC_DENIED
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        with pytest.raises(KafkaException) as refused:
            admin.create_topics([NewTopic("new", 1, 1)])["new"].result(30)
        assert refused.value.args[0].code() == TOPIC_DENIED
        _, errors = _consume(broker.bootstrap, "orders", "billing")
        assert errors and errors[0].code() in (GROUP_DENIED, TOPIC_DENIED), errors


def test_acls_added_with_the_tool_let_exactly_that_through(data_dir: Path) -> None:
    with BrokerProcess(data_dir, SUPER) as broker:
        added = _acls(
            broker.bootstrap, "--add", "--allow-principal", "User:ANONYMOUS",
            "--operation", "Write", "--topic", "orders",
        )  # fmt: skip
        assert added.splitlines()[:2] == [
            "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, "
            "patternType=LITERAL)`: ",
            " \t(principal=User:ANONYMOUS, host=*, operation=WRITE, permissionType=ALLOW) ",
        ]
        _acls(
            broker.bootstrap, "--add", "--allow-principal", "User:ANONYMOUS", "--consumer",
            "--topic", "orders", "--group", "billing",
        )  # fmt: skip
        listed = _acls(broker.bootstrap, "--list")
    assert listed == (
        "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders, "
        "patternType=LITERAL)`: \n"
        " \t(principal=User:ANONYMOUS, host=*, operation=READ, permissionType=ALLOW)\n"
        "\t(principal=User:ANONYMOUS, host=*, operation=WRITE, permissionType=ALLOW)\n"
        "\t(principal=User:ANONYMOUS, host=*, operation=DESCRIBE, permissionType=ALLOW) \n"
        "\n"
        "Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=billing, "
        "patternType=LITERAL)`: \n"
        " \t(principal=User:ANONYMOUS, host=*, operation=READ, permissionType=ALLOW) \n"
        "\n"
    )
    with BrokerProcess(data_dir, AUTHORIZER) as broker:
        assert _produce_error(broker.bootstrap, "orders") is None
        err = _produce_error(broker.bootstrap, "other")
        assert err is not None and err.code() == TOPIC_DENIED
        values, errors = _consume(broker.bootstrap, "orders", "billing")
        assert (values, errors) == ([b"v"], [])
        _, errors = _consume(broker.bootstrap, "orders", "not-billing")
        assert errors and errors[0].code() == GROUP_DENIED, errors
        with WireClient.connect(broker.bootstrap) as c:
            assert [t.name for t in metadata(c, None).topics] == ["orders"]
            # KIP-430: what ANONYMOUS may do on orders (READ, WRITE, and DESCRIBE they imply).
            asked = c.request(
                build(
                    request_type(3, 12),
                    {"topics": [{"name": "orders"}], "include_topic_authorized_operations": True},
                )
            )
            assert asked.topics[0].topic_authorized_operations == (1 << 3) | (1 << 4) | (1 << 8)
            assert produce(c, "pay-1", 0, batch((None, b"x"))).error_code == TOPIC_DENIED
        # Still no right to list or change ACLs.
        denied = franz("acls", "--bootstrap-server", broker.bootstrap, "--list")
        assert "ClusterAuthorizationException" in denied.stdout, denied


def test_prefixed_allow_and_literal_deny_behave_as_kafkas(data_dir: Path) -> None:
    with BrokerProcess(data_dir, SUPER) as broker:
        _acls(
            broker.bootstrap, "--add", "--allow-principal", "User:*", "--operation", "Write",
            "--topic", "pay", "--resource-pattern-type", "prefixed",
        )  # fmt: skip
        _acls(
            broker.bootstrap, "--add", "--deny-principal", "User:ANONYMOUS", "--operation",
            "Write", "--topic", "pay-secret",
        )  # fmt: skip
        _acls(
            broker.bootstrap, "--add", "--allow-principal", "User:ANONYMOUS", "--operation",
            "Create", "--topic", "made-", "--resource-pattern-type", "prefixed",
        )  # fmt: skip
        for prefix in ("made-", "auto-"):
            _acls(
                broker.bootstrap, "--add", "--allow-principal", "User:ANONYMOUS", "--operation",
                "Describe", "--topic", prefix, "--resource-pattern-type", "prefixed",
            )  # fmt: skip
        matching = _acls(
            broker.bootstrap, "--list", "--topic", "pay-secret", "--resource-pattern-type", "match"
        )
        assert "name=pay, patternType=PREFIXED" in matching
        assert "name=pay-secret, patternType=LITERAL" in matching
    with BrokerProcess(data_dir, AUTHORIZER) as broker, WireClient.connect(broker.bootstrap) as c:
        assert produce(c, "pay-1", 0, batch((None, b"x"))).error_code == 0
        assert produce(c, "pay-secret", 0, batch((None, b"x"))).error_code == TOPIC_DENIED
        assert produce(c, "orders", 0, batch((None, b"x"))).error_code == TOPIC_DENIED
        # WRITE implies DESCRIBE: Metadata shows pay-1; the deny is on WRITE only.
        assert sorted(t.name for t in metadata(c, None).topics) == ["pay-1", "pay-secret"]
        # Reading was never granted.
        assert fetch(c, "pay-1", 0, 0).error_code == TOPIC_DENIED
        # CREATE on a prefix creates, but without DESCRIBE_CONFIGS the configs are withheld.
        created = c.request(
            build(
                request_type(19, 7),
                {
                    "topics": [
                        {"name": n, "num_partitions": 1, "replication_factor": 1}
                        for n in ("made-1", "other-new")
                    ],
                    "timeout": 10000,
                },
            )
        )
        assert [
            (t.name, t.error_code, t.topic_config_error_code, len(t.configs))
            for t in created.topics
        ] == [
            ("made-1", 0, TOPIC_DENIED, 0),
            ("other-new", TOPIC_DENIED, 0, 0),
        ]
        # Auto-creation by Metadata needs CREATE (cluster or topic) besides DESCRIBE.
        asked = metadata(c, ["made-2", "auto-1", "hidden-1"], allow_auto_topic_creation=True)
        assert [(t.name, t.error_code) for t in asked.topics] == [
            ("auto-1", TOPIC_DENIED),
            ("hidden-1", TOPIC_DENIED),
            ("made-2", 0),
        ]
        assert sorted(t.name for t in metadata(c, None).topics) == [
            "made-1", "made-2", "pay-1", "pay-secret",
        ]  # fmt: skip


def test_acl_apis_answer_security_disabled_without_an_authorizer(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "b") as broker:
        done = franz("acls", "--bootstrap-server", broker.bootstrap, "--list")
        assert done.returncode == 1
        assert "SecurityDisabledException" in done.stdout, done


def _s(text: str | None) -> bytes:
    if text is None:
        return b"\xff\xff"
    return struct.pack(">h", len(text)) + text.encode()


def test_acl_apis_v0_on_the_wire(tmp_path: Path) -> None:
    """v0 (kafka-python, old Java clients): LITERAL bindings, no pattern type on the wire."""
    with BrokerProcess(tmp_path / "b", SUPER) as broker, WireClient.connect(broker.bootstrap) as c:
        creation = b"\x02" + _s("orders") + _s("User:alice") + _s("*") + b"\x04\x03"
        c.send_frame(encode_header(30, 0, 1) + struct.pack(">i", 1) + creation)
        # Kafka answers an empty (not null) message on success.
        assert c.recv_frame() == struct.pack(">iii", 1, 0, 1) + struct.pack(">h", 0) + _s("")
        any_filter = b"\x01" + _s(None) + _s(None) + _s(None) + b"\x01\x01"
        c.send_frame(encode_header(29, 0, 2) + any_filter)
        assert c.recv_frame() == (
            struct.pack(">iih", 2, 0, 0)
            + _s("")
            + struct.pack(">i", 1)
            + b"\x02"
            + _s("orders")
            + struct.pack(">i", 1)
            + _s("User:alice")
            + _s("*")
            + b"\x04\x03"
        )
        c.send_frame(encode_header(31, 0, 3) + struct.pack(">i", 1) + any_filter)
        deleted = c.recv_frame()
        assert deleted.startswith(struct.pack(">iii", 3, 0, 1) + struct.pack(">h", 0) + _s(None))
        assert deleted.endswith(b"\x02" + _s("orders") + _s("User:alice") + _s("*") + b"\x04\x03")
        assert _acls(broker.bootstrap, "--list") == ""


_ORDERS_P0 = [{"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": 0}]}]
#: (API key, request fields, the answer's code(s), expected code) for the APIs not above,
#: each sent at every kio version Franz accepts.
REFUSALS: list[tuple[int, dict[str, object], Callable[[Any], object], int]] = [
    (14, {"group_id": "billing", "generation_id": 1, "member_id": "m", "assignments": [],
          "protocol_type": "consumer", "protocol_name": "range"},
     lambda r: r.error_code, GROUP_DENIED),
    (12, {"group_id": "billing", "generation_id": 1, "member_id": "m"},
     lambda r: r.error_code, GROUP_DENIED),
    (13, {"group_id": "billing", "member_id": "m", "members": [{"member_id": "m"}]},
     lambda r: r.error_code, GROUP_DENIED),
    (8, {"group_id": "billing", "generation_id_or_member_epoch": -1, "member_id": "",
         "topics": _ORDERS_P0},
     lambda r: r.topics[0].partitions[0].error_code, GROUP_DENIED),
    (47, {"group_id": "billing",
          "topics": [{"name": "orders", "partitions": [{"partition_index": 0}]}]},
     lambda r: r.error_code, GROUP_DENIED),
    (42, {"groups_names": ["billing"]}, lambda r: r.results[0].error_code, GROUP_DENIED),
    (15, {"groups": ["billing"]}, lambda r: r.groups[0].error_code, GROUP_DENIED),
    (16, {}, lambda r: (r.error_code, len(r.groups)), (0, 0)),
    (37, {"topics": [{"name": "orders", "count": 2, "assignments": None}], "timeout": 5000},
     lambda r: r.results[0].error_code, TOPIC_DENIED),
    (21, {"topics": [{"name": "orders", "partitions": [{"partition_index": 0, "offset": 0}]}],
          "timeout": 5000},
     lambda r: r.topics[0].partitions[0].error_code, TOPIC_DENIED),
    (33, {"resources": [{"resource_type": 2, "resource_name": "orders", "configs": []}]},
     lambda r: r.responses[0].error_code, TOPIC_DENIED),
    (44, {"resources": [{"resource_type": 4, "resource_name": "0", "configs": []}]},
     lambda r: r.responses[0].error_code, CLUSTER_DENIED),
    (23, {"replica_id": -1, "topics": [{"topic": "orders", "partitions": [{"partition": 0}]}]},
     lambda r: r.topics[0].partitions[0].error_code, TOPIC_DENIED),
    (25, {"transactional_id": "tx", "producer_id": 1, "group_id": "billing"},
     lambda r: r.error_code, TXN_DENIED),
    (26, {"transactional_id": "tx", "producer_id": 1, "committed": True},
     lambda r: r.error_code, TXN_DENIED),
    (28, {"transactional_id": "tx", "group_id": "billing", "producer_id": 1, "generation_id": -1,
          "topics": _ORDERS_P0},
     lambda r: r.topics[0].partitions[0].error_code, TXN_DENIED),
    (61, {"topics": [{"name": "orders", "partition_indexes": [0]}]},
     lambda r: r.topics[0].partitions[0].error_code, TOPIC_DENIED),
    (65, {"transactional_ids": ["tx"]}, lambda r: r.transaction_states[0].error_code, TXN_DENIED),
    (66, {}, lambda r: (r.error_code, len(r.transaction_states)), (0, 0)),
    (43, {"election_type": 0, "topic_partitions": [{"topic": "orders", "partitions": [0]}],
          "timeout": 5000},
     lambda r: r.replica_election_results[0].partition_result[0].error_code, CLUSTER_DENIED),
    (45, {"timeout": 5000, "topics": [{"name": "orders", "partitions": [
        {"partition_index": 0, "replicas": [0]}]}]},
     lambda r: r.error_code, CLUSTER_DENIED),
    (46, {"timeout": 5000, "topics": None}, lambda r: r.error_code, CLUSTER_DENIED),
    (34, {"dirs": [{"path": "/nowhere", "topics": [{"name": "orders", "partitions": [0]}]}]},
     lambda r: r.results[0].partitions[0].error_code, CLUSTER_DENIED),
    (27, {"markers": [{"producer_id": 1, "producer_epoch": 0, "transaction_result": True,
                       "topics": [{"name": "orders", "partition_indexes": [0]}]}]},
     lambda r: r.markers[0].topics[0].partitions[0].error_code, CLUSTER_DENIED),
]  # fmt: skip


def test_the_other_apis_refuse_at_every_version(data_dir: Path) -> None:
    with BrokerProcess(data_dir, AUTHORIZER) as broker, WireClient.connect(broker.bootstrap) as c:
        for api_key, fields, code_of, expected in REFUSALS:
            support = SUPPORTED_APIS[ApiKey(api_key)]
            for version in range(support.min_accepted, support.max_version + 1):
                response = c.request(build(request_type(api_key, version), fields))
                assert code_of(response) == expected, (ApiKey(api_key).name, version, response)
        # DescribeLogDirs: the top-level code exists from v3; no results before it.
        for version in range(1, 5):
            response = c.request(build(request_type(35, version), {"topics": None}))
            assert list(response.results) == []
            if version >= 3:
                assert response.error_code == CLUSTER_DENIED
        # AddPartitionsToTxn: a client's (v0-3) refusal per partition; a broker's (v4+) whole.
        for version in range(0, 6):
            fields = {
                "v3_and_below_transactional_id": "tx",
                "v3_and_below_producer_id": 1,
                "v3_and_below_topics": [{"name": "orders", "partitions": [0]}],
                "transactions": [
                    {"transactional_id": "tx", "producer_id": 1, "topics": [
                        {"name": "orders", "partitions": [0]}]}
                ],
            }  # fmt: skip
            response = c.request(build(request_type(24, version), fields))
            if version < 4:
                [topic] = response.results_by_topic_v3_and_below
                assert topic.results_by_partition[0].partition_error_code == TXN_DENIED
            else:
                assert response.error_code == CLUSTER_DENIED
