"""CreateAcls, DescribeAcls and DeleteAcls edge cases answered as Kafka 3.9.2 answers them
(``AclAuthorizer``, ``User:ANONYMOUS`` a super user): the same requests, in the same order, to
Kafka and to Franz, the decoded answers compared whole (codes, messages, matches), or both
closing the connection where Kafka cannot parse the request."""

from __future__ import annotations

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
