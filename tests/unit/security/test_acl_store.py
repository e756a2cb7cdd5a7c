"""ACL storage formats (``franz.security.acl`` and ``acl_store``): Kafka's znode paths, the
resource znode JSON and both change notification formats (``ZkData.scala``), and the
embedded store over the metadata file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from franz.metadata.local import LocalMetadataStore
from franz.security.acl import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    decode_acls_json,
    encode_acls_json,
)
from franz.security.acl_store import (
    EXTENDED_ACL_CHANGES_PATH,
    LITERAL_ACL_CHANGES_PATH,
    LocalAclStore,
    decode_change,
    encode_change,
    pattern_from_path,
    resource_path,
)
from franz.security.authorizer import AclAuthorizer

READ = AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW)
DENY = AccessControlEntry(
    "User:bob", "10.0.0.1", AclOperation.DESCRIBE_CONFIGS, AclPermissionType.DENY
)


def test_znode_paths_are_kafkas() -> None:
    literal = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
    prefixed = ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx-", PatternType.PREFIXED)
    assert resource_path(literal) == "/kafka-acl/Topic/orders"
    assert resource_path(prefixed) == "/kafka-acl-extended/prefixed/TransactionalId/tx-"
    assert pattern_from_path("/kafka-acl/Topic/orders") == literal
    assert pattern_from_path("/kafka-acl-extended/prefixed/TransactionalId/tx-") == prefixed
    cluster = ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL)
    assert resource_path(cluster) == "/kafka-acl/Cluster/kafka-cluster"


def test_resource_znode_json_is_kafkas() -> None:
    data = encode_acls_json({READ, DENY})
    body = json.loads(data)
    assert body["version"] == 1
    assert {json.dumps(a, sort_keys=True) for a in body["acls"]} == {
        json.dumps(
            {
                "principal": "User:alice",
                "permissionType": "Allow",
                "operation": "Read",
                "host": "*",
            },
            sort_keys=True,
        ),
        json.dumps(
            {
                "principal": "User:bob",
                "permissionType": "Deny",
                "operation": "DescribeConfigs",
                "host": "10.0.0.1",
            },
            sort_keys=True,
        ),
    }
    assert decode_acls_json(data) == {READ, DENY}
    # As Kafka writes it (Jackson, any key order).
    kafka = (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
        b'"operation":"Read","host":"*"}]}'
    )
    assert decode_acls_json(kafka) == {READ}


def test_change_notifications_are_kafkas() -> None:
    literal = ResourcePattern(ResourceType.GROUP, "billing", PatternType.LITERAL)
    parent, data = encode_change(literal)
    assert (parent, data) == (LITERAL_ACL_CHANGES_PATH, b"GROUP:billing")
    assert decode_change(parent, data) == literal
    assert decode_change(parent, b"Group:billing") == literal  # older brokers' spelling
    prefixed = ResourcePattern(ResourceType.TOPIC, "x", PatternType.PREFIXED)
    parent, data = encode_change(prefixed)
    assert parent == EXTENDED_ACL_CHANGES_PATH
    assert json.loads(data) == {
        "version": 1,
        "resourceType": "TOPIC",
        "name": "x",
        "patternType": "PREFIXED",
    }
    assert decode_change(parent, data) == prefixed


def test_local_store_persists_in_the_metadata_file(tmp_path: Path) -> None:
    store = LocalMetadataStore(tmp_path)
    store.load()
    acls = LocalAclStore(store)
    pattern = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
    assert asyncio.run(acls.update(pattern, lambda cur: cur | {READ, DENY})) == (
        set(),
        {READ, DENY},
    )
    assert asyncio.run(acls.update(pattern, lambda cur: cur - {DENY})) == ({READ, DENY}, {READ})
    reloaded = LocalMetadataStore(tmp_path)
    reloaded.load()
    assert asyncio.run(LocalAclStore(reloaded).load_all()) == {pattern: {READ}}
    on_disk = json.loads((tmp_path / "franz-metadata.json").read_text())
    assert list(on_disk["acls"]) == ["/kafka-acl/Topic/orders"]
    asyncio.run(LocalAclStore(reloaded).update(pattern, lambda cur: cur - {READ}))
    again = LocalMetadataStore(tmp_path)
    again.load()
    assert again.acl_nodes() == {}


def test_delete_applies_filters_to_what_the_store_holds(tmp_path: Path) -> None:
    """Another broker's write the cache has not seen yet is deleted too (Kafka's
    ``updateResourceAcls`` filters the znode's ACLs, not the cache's)."""
    store = LocalMetadataStore(tmp_path)
    store.load()
    pattern = ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL)
    writer = AclAuthorizer(store=LocalAclStore(store))
    stale = AclAuthorizer(store=LocalAclStore(store))
    asyncio.run(writer.create_acls([AclBinding(pattern, READ)]))
    asyncio.run(stale.load())
    asyncio.run(writer.create_acls([AclBinding(pattern, DENY)]))  # unseen by ``stale``
    anything = AclBindingFilter(
        ResourcePatternFilter(ResourceType.TOPIC, "orders", PatternType.LITERAL),
        AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY),
    )
    [result] = asyncio.run(stale.delete_acls([anything]))
    assert {b.entry for b in result.deleted} == {READ, DENY}
    assert store.acl_nodes() == {}
