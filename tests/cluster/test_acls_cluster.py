"""ACLs in a 3-broker ZooKeeper cluster (issue 20 part 4): an ACL created through one broker
is stored in Kafka's znodes (``/kafka-acl``, ``/kafka-acl-extended``), announced by a change
notification (``/kafka-acl-changes``, ``/kafka-acl-extended-changes``), and applied by every
broker; deleting it through another broker lifts it everywhere.

The brokers run ``AclAuthorizer`` with ``allow.everyone.if.no.acl.found=true``: every
connection here, the brokers' own included, is ``User:ANONYMOUS``, so resources without ACLs
(the cluster, for the controller's requests and followers' fetches) stay open.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.create_acls.v3 import request as create_acls_v3
from kio.schema.delete_acls.v3 import request as delete_acls_v3
from kio.schema.describe_acls.v3 import request as describe_acls_v3

from tests.support.cluster import Cluster, eventually, new_chroot, start_cluster
from tests.support.wire import WireClient, batch, produce
from tests.support.zookeeper import ZooKeeperServer

TOPIC_DENIED = 29
ANY, LITERAL, PREFIXED = 1, 3, 4
TOPIC = 2
ALL, READ, WRITE = 2, 3, 4
DENY, ALLOW = 2, 3


@pytest.fixture(scope="module")
def acl_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("acl-cluster"))
    props = {
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "allow.everyone.if.no.acl.found": "true",
    }
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def _creation(name: str, pattern: int, principal: str, op: int, perm: int) -> object:
    return create_acls_v3.AclCreation(
        resource_type=TOPIC,
        resource_name=name,
        resource_pattern_type=pattern,
        principal=principal,
        host="*",
        operation=op,
        permission_type=perm,
    )


def _described(bootstrap: str) -> set[tuple[str, int, str, int, int]]:
    with WireClient.connect(bootstrap) as c:
        response = c.request(
            describe_acls_v3.DescribeAclsRequest(
                resource_type_filter=ANY,
                resource_name_filter=None,
                pattern_type_filter=ANY,
                principal_filter=None,
                host_filter=None,
                operation=ANY,
                permission_type=ANY,
            )
        )
    assert response.error_code == 0, response
    return {
        (
            r.resource_name,
            int(r.pattern_type),
            a.principal,
            int(a.operation),
            int(a.permission_type),
        )
        for r in response.resources
        for a in r.acls
    }


def _produce_code(bootstrap: str, topic: str) -> int:
    with WireClient.connect(bootstrap) as c:
        return int(produce(c, topic, 0, batch((None, b"x"))).error_code)


def test_an_acl_added_through_one_broker_applies_on_all(acl_cluster: Cluster) -> None:
    c = acl_cluster
    b1, b2, b3 = (c.brokers[i].bootstrap for i in (1, 2, 3))
    admin = AdminClient({"bootstrap.servers": c.bootstrap()})
    admin.create_topics([NewTopic("secret", 1, 3)])["secret"].result(60)
    leader = int(c.json("/brokers/topics/secret/partitions/0/state")["leader"])
    eventually(
        lambda: _produce_code(c.brokers[leader].bootstrap, "secret") == 0,
        30,
        "the leader of secret accepts a write",
    )
    with WireClient.connect(b1) as w:
        created = w.request(
            create_acls_v3.CreateAclsRequest(
                creations=(
                    _creation("secret", LITERAL, "User:*", ALL, ALLOW),
                    _creation("secret", LITERAL, "User:ANONYMOUS", WRITE, DENY),
                    _creation("pay", PREFIXED, "User:bob", READ, ALLOW),
                )
            )
        )
    assert [r.error_code for r in created.results] == [0, 0, 0]
    # Kafka's znodes and notifications.
    stored = json.loads(c.kazoo.get("/kafka-acl/Topic/secret")[0])
    assert stored["version"] == 1
    assert sorted(
        (a["principal"], a["operation"], a["permissionType"], a["host"]) for a in stored["acls"]
    ) == [
        ("User:*", "All", "Allow", "*"),
        ("User:ANONYMOUS", "Write", "Deny", "*"),
    ]
    prefixed = json.loads(c.kazoo.get("/kafka-acl-extended/prefixed/Topic/pay")[0])
    assert prefixed["acls"] == [
        {"principal": "User:bob", "permissionType": "Allow", "operation": "Read", "host": "*"}
    ]
    literal_changes = c.kazoo.get_children("/kafka-acl-changes")
    assert literal_changes and all(n.startswith("acl_changes_") for n in literal_changes)
    assert c.kazoo.get(f"/kafka-acl-changes/{max(literal_changes)}")[0] == b"TOPIC:secret"
    extended = c.kazoo.get_children("/kafka-acl-extended-changes")
    assert json.loads(c.kazoo.get(f"/kafka-acl-extended-changes/{max(extended)}")[0]) == {
        "version": 1,
        "resourceType": "TOPIC",
        "name": "pay",
        "patternType": "PREFIXED",
    }
    # Every broker's cache follows: DescribeAcls and the authorization of writes.
    expected = {
        ("secret", LITERAL, "User:*", ALL, ALLOW),
        ("secret", LITERAL, "User:ANONYMOUS", WRITE, DENY),
        ("pay", PREFIXED, "User:bob", READ, ALLOW),
    }
    for bootstrap in (b1, b2, b3):
        eventually(lambda b=bootstrap: _described(b) == expected, 30, f"{bootstrap} knows the ACLs")
        assert _produce_code(bootstrap, "secret") == TOPIC_DENIED
    # Deleting through another broker lifts the deny everywhere.
    with WireClient.connect(b3) as w:
        deleted = w.request(
            delete_acls_v3.DeleteAclsRequest(
                filters=(
                    delete_acls_v3.DeleteAclsFilter(
                        resource_type_filter=TOPIC,
                        resource_name_filter="secret",
                        pattern_type_filter=LITERAL,
                        principal_filter="User:ANONYMOUS",
                        host_filter=None,
                        operation=ANY,
                        permission_type=DENY,
                    ),
                )
            )
        )
    [result] = deleted.filter_results
    assert result.error_code == 0
    assert [(m.resource_name, m.principal, int(m.operation)) for m in result.matching_acls] == [
        ("secret", "User:ANONYMOUS", WRITE)
    ]
    for bootstrap in (b1, b2, b3):
        eventually(
            lambda b=bootstrap: (
                ("secret", LITERAL, "User:ANONYMOUS", WRITE, DENY) not in _described(b)
            ),
            30,
            f"{bootstrap} forgot the deny",
        )
    eventually(
        lambda: _produce_code(c.brokers[leader].bootstrap, "secret") == 0,
        30,
        "the leader of secret accepts writes again",
    )
