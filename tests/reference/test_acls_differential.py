"""CreateAcls, DescribeAcls and DeleteAcls edge cases answered as Kafka 3.9.2 answers them
(``AclAuthorizer``, ``User:ANONYMOUS`` a super user): the same requests, in the same order, to
Kafka and to Franz, the decoded answers compared whole (codes, messages, matches), or both
closing the connection where Kafka cannot parse the request."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from franz.protocol.messages import build, request_type
from tests.support.broker import BrokerProcess
from tests.support.kafka_ref import KafkaBroker
from tests.support.wire import WireClient

AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS",
}


def _creation(**changes: Any) -> dict[str, Any]:
    base = {
        "resource_type": 2,
        "resource_name": "t",
        "resource_pattern_type": 3,
        "principal": "User:a",
        "host": "*",
        "operation": 3,
        "permission_type": 3,
    }
    return {**base, **changes}


def _filter(**changes: Any) -> dict[str, Any]:
    base = {
        "resource_type_filter": 1,
        "resource_name_filter": None,
        "pattern_type_filter": 1,
        "principal_filter": None,
        "host_filter": None,
        "operation": 1,
        "permission_type": 1,
    }
    return {**base, **changes}


#: (name, API key, request fields), sent in this order on a fresh connection each.
CASES: list[tuple[str, int, dict[str, Any]]] = [
    ("two creations, one with pattern ANY", 30,
     {"creations": [_creation(), _creation(resource_pattern_type=1)]}),
    ("resource type ANY", 30, {"creations": [_creation(resource_type=1)]}),
    ("operation ANY", 30, {"creations": [_creation(operation=1)]}),
    ("permission ANY", 30, {"creations": [_creation(permission_type=1)]}),
    ("operation UNKNOWN", 30, {"creations": [_creation(operation=0)]}),
    ("empty name", 30, {"creations": [_creation(resource_name="")]}),
    ("cluster not kafka-cluster", 30,
     {"creations": [_creation(resource_type=4, resource_name="x")]}),
    ("a good one and a principal without type", 30,
     {"creations": [_creation(resource_name="u"), _creation(principal="alice")]}),
    ("an operation the type does not support", 30,
     {"creations": [_creation(resource_type=3, resource_name="g", operation=4)]}),
    ("prefixed", 30, {"creations": [_creation(resource_name="pre", resource_pattern_type=4)]}),
    ("describe UNKNOWN type", 29, _filter(resource_type_filter=0)),
    ("describe MATCH without a name", 29, _filter(pattern_type_filter=2)),
    ("describe MATCH a name", 29,
     _filter(resource_type_filter=2, resource_name_filter="prefix-me", pattern_type_filter=2)),
    ("describe all", 29, _filter()),
    ("delete nothing", 31,
     {"filters": [
         _filter(resource_type_filter=2, resource_name_filter="zzz", pattern_type_filter=3)
     ]}),
    ("delete by principal", 31, {"filters": [_filter(principal_filter="User:a", operation=3)]}),
    ("delete UNKNOWN permission", 31, {"filters": [_filter(permission_type=0)]}),
    ("describe what is left", 29, _filter()),
]  # fmt: skip


def _answers(bootstrap: str) -> list[object]:
    out: list[object] = []
    for _name, api_key, fields in CASES:
        with WireClient.connect(bootstrap) as c:
            try:
                response = c.request(build(request_type(api_key, 3), fields), timeout=30)
            except ConnectionError:
                out.append("connection closed")
                continue
        # Kafka builds these lists from hash maps: compare them as sets.
        if api_key == 29:
            out.append(
                (
                    response.error_code,
                    response.error_message,
                    sorted(repr(r) for r in response.resources),
                )
            )
        elif api_key == 31:
            out.append(
                [
                    (r.error_code, r.error_message, sorted(repr(m) for m in r.matching_acls))
                    for r in response.filter_results
                ]
            )
        else:
            out.append([(r.error_code, r.error_message) for r in response.results])
    return out


def test_acl_api_answers_match_kafka(zk_chroot: str, tmp_path: Path) -> None:
    kafka = KafkaBroker(tmp_path / "kafka", zk_chroot, properties=AUTHORIZER).start()
    try:
        want = _answers(kafka.bootstrap)
    finally:
        kafka.stop()
    with BrokerProcess(tmp_path / "franz", AUTHORIZER) as franz:
        got = _answers(franz.bootstrap)
    for (name, _, _), expected, answered in zip(CASES, want, got, strict=True):
        assert answered == expected, name
    assert "connection closed" in want and any(
        isinstance(a, tuple) and a[2] for a in want
    )  # the oracle did refuse and did list something


_OPEN = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
_ORDERS_P0 = [{"name": "orders", "partitions": [{"partition_index": 0, "committed_offset": 0}]}]
#: ANONYMOUS: denied ALL on topic orders, group billing and transactional id tx, WRITE on the
#: topics prefixed ``pay``; on the cluster allowed CLUSTER_ACTION only (the brokers' own
#: requests), denied the rest.
_DENIALS = [
    _creation(resource_type=2, resource_name="orders", operation=2, permission_type=2),
    _creation(resource_type=3, resource_name="billing", operation=2, permission_type=2),
    _creation(resource_type=5, resource_name="tx", operation=2, permission_type=2),
    _creation(resource_type=2, resource_name="pay", resource_pattern_type=4, operation=4,
              permission_type=2),
    _creation(resource_type=4, resource_name="kafka-cluster", operation=9, principal="User:*"),
    *(
        _creation(resource_type=4, resource_name="kafka-cluster", operation=op, permission_type=2)
        for op in (5, 7, 8, 10, 11, 12)
    ),
]
_P0 = [{"name": "orders", "partitions": [{"partition_index": 0}]}]
#: (API key, version, fields, what to compare).
REQUESTS: list[tuple[int, int, dict[str, Any], Any]] = [
    (3, 12, {"topics": [{"name": "orders"}], "include_topic_authorized_operations": True},
     lambda r: [(t.name, t.error_code, t.topic_authorized_operations) for t in r.topics]),
    (3, 12, {"topics": None}, lambda r: sorted(t.name for t in r.topics)),
    (0, 9, {"acks": -1, "timeout": 5000, "topic_data": [
        {"name": "payments", "partition_data": [{"index": 0, "records": None}]}]},
     lambda r: [(p.index, p.error_code) for t in r.responses for p in t.partition_responses]),
    (3, 12, {"topics": [{"name": "payments"}], "include_topic_authorized_operations": True},
     lambda r: [(t.name, t.error_code, t.topic_authorized_operations) for t in r.topics]),
    (0, 9, {"acks": -1, "timeout": 5000, "topic_data": [
        {"name": "orders", "partition_data": [{"index": 0, "records": None}]}]},
     lambda r: [(p.index, p.error_code) for t in r.responses for p in t.partition_responses]),
    (1, 12, {"max_wait": 0, "min_bytes": 1, "max_bytes": 1000, "topics": [
        {"topic": "orders", "partitions": [{"partition": 0, "partition_max_bytes": 100}]}]},
     lambda r: [(p.partition_index, p.error_code) for t in r.responses for p in t.partitions]),
    (2, 7, {"replica_id": -1, "topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "timestamp": -1}]}]},
     lambda r: [p.error_code for t in r.topics for p in t.partitions]),
    (10, 4, {"key_type": 0, "coordinator_keys": ["billing"]},
     lambda r: [(c.error_code, c.error_message) for c in r.coordinators]),
    (10, 4, {"key_type": 1, "coordinator_keys": ["tx"]},
     lambda r: [(c.error_code, c.error_message) for c in r.coordinators]),
    (11, 9, {"group_id": "billing", "session_timeout": 10000, "rebalance_timeout": 10000,
             "member_id": "", "protocol_type": "consumer",
             "protocols": [{"name": "range", "metadata": b""}]},
     lambda r: (r.error_code, r.generation_id, r.member_id, r.leader, r.protocol_name)),
    (14, 5, {"group_id": "billing", "generation_id": 1, "member_id": "m", "assignments": []},
     lambda r: (r.error_code, r.protocol_type, r.protocol_name)),
    (12, 4, {"group_id": "billing", "generation_id": 1, "member_id": "m"}, lambda r: r.error_code),
    (13, 5, {"group_id": "billing", "members": [{"member_id": "m"}]},
     lambda r: (r.error_code, len(r.members))),
    (8, 9, {"group_id": "billing", "generation_id_or_member_epoch": -1, "member_id": "",
            "topics": _ORDERS_P0},
     lambda r: [p.error_code for t in r.topics for p in t.partitions]),
    (9, 8, {"groups": [{"group_id": "billing", "topics": None}]},
     lambda r: [g.error_code for g in r.groups]),
    (15, 5, {"groups": ["billing"], "include_authorized_operations": True},
     lambda r: [(g.error_code, g.group_state, g.authorized_operations) for g in r.groups]),
    (42, 2, {"groups_names": ["billing"]}, lambda r: [x.error_code for x in r.results]),
    (47, 0, {"group_id": "billing", "topics": _P0}, lambda r: r.error_code),
    (19, 7, {"topics": [{"name": "orders", "num_partitions": 1, "replication_factor": 1}],
             "timeout": 5000},
     lambda r: [(t.name, t.error_code, t.error_message) for t in r.topics]),
    (20, 6, {"topics": [{"name": "orders"}], "timeout": 5000},
     lambda r: [(t.name, t.error_code) for t in r.responses]),
    (37, 3, {"topics": [{"name": "orders", "count": 2, "assignments": None}], "timeout": 5000},
     lambda r: [(x.error_code, x.error_message) for x in r.results]),
    (21, 2, {"topics": [{"name": "orders", "partitions": [{"partition_index": 0, "offset": 0}]}],
             "timeout": 5000},
     lambda r: [p.error_code for t in r.topics for p in t.partitions]),
    (32, 4, {"resources": [{"resource_type": 2, "resource_name": "orders"},
                           {"resource_type": 4, "resource_name": "0"}]},
     lambda r: [(x.error_code, x.error_message) for x in r.results]),
    (33, 2, {"resources": [{"resource_type": 2, "resource_name": "orders", "configs": []}]},
     lambda r: [(x.error_code, x.error_message) for x in r.responses]),
    (44, 1, {"resources": [{"resource_type": 4, "resource_name": "", "configs": []}]},
     lambda r: [(x.error_code, x.error_message) for x in r.responses]),
    # Allowed here (WRITE on some topic: allow.everyone); a Kafka just started may still
    # answer COORDINATOR_LOAD_IN_PROGRESS, so only the refusal is compared.
    (22, 5, {"transactional_id": None, "transaction_timeout": 60000, "producer_id": -1},
     lambda r: r.error_code == 31),
    (22, 5, {"transactional_id": "tx", "transaction_timeout": 60000, "producer_id": -1},
     lambda r: r.error_code),
    (25, 4, {"transactional_id": "tx", "producer_id": 1, "group_id": "billing"},
     lambda r: r.error_code),
    (26, 4, {"transactional_id": "tx", "producer_id": 1, "committed": True},
     lambda r: r.error_code),
    (28, 4, {"transactional_id": "tx", "group_id": "billing", "producer_id": 1,
             "generation_id": -1, "topics": _ORDERS_P0},
     lambda r: [p.error_code for t in r.topics for p in t.partitions]),
    (24, 3, {"v3_and_below_transactional_id": "tx", "v3_and_below_producer_id": 1,
             "v3_and_below_topics": [{"name": "orders", "partitions": [0]}]},
     lambda r: [p.partition_error_code for t in r.results_by_topic_v3_and_below
                for p in t.results_by_partition]),
    (61, 0, {"topics": [{"name": "orders", "partition_indexes": [0]}]},
     lambda r: [(p.error_code, p.error_message) for t in r.topics for p in t.partitions]),
    (65, 0, {"transactional_ids": ["tx"]},
     lambda r: [(s.error_code, s.transaction_state) for s in r.transaction_states]),
    (43, 2, {"election_type": 0, "topic_partitions": [{"topic": "orders", "partitions": [0]}],
             "timeout": 5000},
     lambda r: (r.error_code, [(p.partition_id, p.error_code) for t in r.replica_election_results
                               for p in t.partition_result])),
    (45, 0, {"timeout": 5000, "topics": [{"name": "orders", "partitions": [
        {"partition_index": 0, "replicas": [0]}]}]}, lambda r: (r.error_code, len(r.responses))),
    (46, 0, {"timeout": 5000, "topics": None}, lambda r: (r.error_code, len(r.topics))),
    (35, 4, {"topics": None}, lambda r: (r.error_code, len(r.results))),
    (34, 2, {"dirs": [{"path": "/nowhere", "topics": [{"name": "orders", "partitions": [0]}]}]},
     lambda r: [p.error_code for t in r.results for p in t.partitions]),
    (60, 1, {"include_cluster_authorized_operations": True},
     lambda r: (r.error_code, r.cluster_authorized_operations)),
    (29, 3, _filter(), lambda r: (r.error_code, len(r.resources))),
    (30, 3, {"creations": [_creation()]}, lambda r: [x.error_code for x in r.results]),
    (31, 3, {"filters": [_filter()]}, lambda r: [x.error_code for x in r.filter_results]),
]  # fmt: skip


def _refusals(broker_bootstrap: str) -> list[object]:
    with WireClient.connect(broker_bootstrap) as c:
        deadline = time.monotonic() + 60
        while True:  # a Kafka just started may not count itself among the brokers yet
            created = c.request(
                build(
                    request_type(19, 7),
                    {
                        "topics": [
                            {"name": name, "num_partitions": 1, "replication_factor": 1}
                            for name in ("orders", "payments")
                        ],
                        "timeout": 30000,
                    },
                )
            )
            if created.topics[0].error_code != 38 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert [t.error_code for t in created.topics] == [0, 0], created
        acls = c.request(build(request_type(30, 3), {"creations": _DENIALS}))
        assert all(r.error_code == 0 for r in acls.results), acls
    answers: list[object] = []
    with WireClient.connect(broker_bootstrap) as c:
        for api_key, version, fields, code_of in REQUESTS:
            answers.append(code_of(c.request(build(request_type(api_key, version), fields))))
    return answers


def test_refusals_match_kafka(zk_chroot: str, tmp_path: Path) -> None:
    kafka = KafkaBroker(tmp_path / "kafka", zk_chroot, properties=_OPEN).start()
    try:
        want = _refusals(kafka.bootstrap)
    finally:
        kafka.stop()
    with BrokerProcess(tmp_path / "franz", _OPEN) as franz:
        got = _refusals(franz.bootstrap)
    diffs = [
        (api_key, version, expected, answered)
        for (api_key, version, _, _), expected, answered in zip(REQUESTS, want, got, strict=True)
        if expected != answered
    ]
    assert not diffs, "\n".join(map(repr, diffs))
