"""Kafka's AclAuthorizer decisions (``franz.security.authorizer``), principals other than
User:ANONYMOUS included: implications, literal/wildcard/prefixed patterns, deny over allow,
hosts, super users, allow.everyone.if.no.acl.found, authorizeByResourceType, filters and the
create/delete paths (with an in-memory store)."""

from __future__ import annotations

import asyncio

import pytest

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
)
from franz.security.authorizer import AclAuthorizer, authorizer_from_config, parse_super_users
from franz.security.principal import KafkaPrincipal

O, P, R, T = AclOperation, AclPermissionType, ResourceType, PatternType  # noqa: E741
ALICE = KafkaPrincipal.parse("User:alice")
BOB = KafkaPrincipal.parse("User:bob")
HOST = "10.0.0.1"


def allow(principal: str, op: AclOperation, host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, P.ALLOW)


def deny(principal: str, op: AclOperation, host: str = "*") -> AccessControlEntry:
    return AccessControlEntry(principal, host, op, P.DENY)


def topic(name: str, pattern: PatternType = T.LITERAL) -> ResourcePattern:
    return ResourcePattern(R.TOPIC, name, pattern)


def with_acls(*acls: tuple[ResourcePattern, AccessControlEntry], **kwargs: object) -> AclAuthorizer:
    authorizer = AclAuthorizer(**kwargs)  # type: ignore[arg-type]
    result = asyncio.run(authorizer.create_acls([AclBinding(p, e) for p, e in acls]))
    assert all(r.error == 0 for r in result), result
    return authorizer


def can(
    a: AclAuthorizer, who: KafkaPrincipal, op: AclOperation, name: str, host: str = HOST
) -> bool:
    return a.authorize(who, host, op, R.TOPIC, name)


def test_no_acl_denies_unless_allow_everyone() -> None:
    assert not can(AclAuthorizer(), ALICE, O.READ, "orders")
    assert can(AclAuthorizer(allow_everyone_if_no_acl_found=True), ALICE, O.READ, "orders")


def test_allow_everyone_does_not_apply_once_a_resource_has_acls() -> None:
    a = with_acls((topic("orders"), allow("User:bob", O.READ)), allow_everyone_if_no_acl_found=True)
    assert not can(a, ALICE, O.READ, "orders")
    assert can(a, BOB, O.READ, "orders")
    assert can(a, ALICE, O.READ, "other")  # no ACL there


def test_literal_acl_allows_exactly_its_operation_principal_and_resource() -> None:
    a = with_acls((topic("orders"), allow("User:alice", O.WRITE)))
    assert can(a, ALICE, O.WRITE, "orders")
    assert not can(a, ALICE, O.READ, "orders")
    assert not can(a, BOB, O.WRITE, "orders")
    assert not can(a, ALICE, O.WRITE, "orders2")
    assert not a.authorize(ALICE, HOST, O.WRITE, R.GROUP, "orders")


@pytest.mark.parametrize("granted", [O.READ, O.WRITE, O.DELETE, O.ALTER, O.DESCRIBE])
def test_describe_is_implied_by_read_write_delete_alter(granted: AclOperation) -> None:
    a = with_acls((topic("t"), allow("User:alice", granted)))
    assert can(a, ALICE, O.DESCRIBE, "t")


def test_describe_configs_is_implied_by_alter_configs_only() -> None:
    a = with_acls((topic("t"), allow("User:alice", O.ALTER_CONFIGS)))
    assert can(a, ALICE, O.DESCRIBE_CONFIGS, "t")
    assert not can(a, ALICE, O.DESCRIBE, "t")
    b = with_acls((topic("t"), allow("User:alice", O.DESCRIBE)))
    assert not can(b, ALICE, O.READ, "t")  # implication is one way


def test_all_allows_every_operation() -> None:
    a = with_acls((topic("t"), allow("User:alice", O.ALL)))
    for op in (O.READ, O.WRITE, O.CREATE, O.DELETE, O.ALTER, O.DESCRIBE, O.ALTER_CONFIGS):
        assert can(a, ALICE, op, "t")


def test_deny_wins_over_allow() -> None:
    a = with_acls(
        (topic("t"), allow("User:*", O.ALL)),
        (topic("t"), deny("User:alice", O.WRITE)),
    )
    assert not can(a, ALICE, O.WRITE, "t")
    assert can(a, ALICE, O.READ, "t")
    assert can(a, BOB, O.WRITE, "t")


def test_deny_all_denies_describe_even_with_read_allowed() -> None:
    a = with_acls(
        (topic("t"), allow("User:alice", O.READ)), (topic("t"), deny("User:alice", O.ALL))
    )
    assert not can(a, ALICE, O.DESCRIBE, "t")
    assert not can(a, ALICE, O.READ, "t")


def test_deny_of_an_implying_operation_does_not_deny_describe() -> None:
    # Kafka checks deny for the operation asked (or ALL) only.
    a = with_acls(
        (topic("t"), allow("User:alice", O.DESCRIBE)), (topic("t"), deny("User:alice", O.READ))
    )
    assert can(a, ALICE, O.DESCRIBE, "t")


def test_wildcard_resource_and_principal() -> None:
    a = with_acls((topic("*"), allow("User:*", O.READ)))
    assert can(a, ALICE, O.READ, "anything")
    assert can(a, BOB, O.READ, "x")
    assert not can(a, BOB, O.WRITE, "x")


def test_prefixed_acl_matches_names_starting_with_it() -> None:
    a = with_acls((topic("pay", T.PREFIXED), allow("User:alice", O.WRITE)))
    assert can(a, ALICE, O.WRITE, "pay")
    assert can(a, ALICE, O.WRITE, "payments")
    assert not can(a, ALICE, O.WRITE, "xpay")
    assert not can(a, ALICE, O.WRITE, "pa")


def test_prefixed_deny_over_literal_allow() -> None:
    a = with_acls(
        (topic("payments"), allow("User:alice", O.WRITE)),
        (topic("pay", T.PREFIXED), deny("User:alice", O.WRITE)),
    )
    assert not can(a, ALICE, O.WRITE, "payments")


def test_host_must_match_or_be_wildcard() -> None:
    a = with_acls((topic("t"), allow("User:alice", O.READ, host="10.0.0.1")))
    assert can(a, ALICE, O.READ, "t", host="10.0.0.1")
    assert not can(a, ALICE, O.READ, "t", host="10.0.0.2")
    b = with_acls(
        (topic("t"), allow("User:alice", O.READ)),
        (topic("t"), deny("User:alice", O.READ, host="10.0.0.2")),
    )
    assert can(b, ALICE, O.READ, "t", host="10.0.0.1")
    assert not can(b, ALICE, O.READ, "t", host="10.0.0.2")


def test_super_users_are_allowed_everything_even_when_denied() -> None:
    a = with_acls(
        (topic("t"), deny("User:*", O.ALL)), super_users=parse_super_users("User:admin; User:bob")
    )
    assert can(a, BOB, O.WRITE, "t")
    assert a.authorize(BOB, HOST, O.ALTER, R.CLUSTER, "kafka-cluster")
    assert not can(a, ALICE, O.WRITE, "t")


def test_super_users_parse_like_kafka() -> None:
    assert parse_super_users("User:admin;User:bob") == {KafkaPrincipal("User", "admin"), BOB}
    assert parse_super_users("") == frozenset()
    assert parse_super_users(None) == frozenset()


def test_authorizer_from_config() -> None:
    config = {
        "authorizer.class.name": "",
        "super.users": None,
        "allow.everyone.if.no.acl.found": False,
    }
    assert authorizer_from_config(config.get) is None
    config["authorizer.class.name"] = "kafka.security.authorizer.AclAuthorizer"
    config["super.users"] = "User:admin"
    a = authorizer_from_config(config.get)
    assert a is not None and a.super_users == {KafkaPrincipal("User", "admin")}
    config["authorizer.class.name"] = "com.example.Nope"
    with pytest.raises(Exception, match="class not found"):
        authorizer_from_config(config.get)


def test_authorize_by_resource_type() -> None:
    assert not AclAuthorizer().authorize_by_resource_type(ALICE, HOST, O.WRITE, R.TOPIC)
    a = with_acls((topic("orders"), allow("User:alice", O.WRITE)))
    assert a.authorize_by_resource_type(ALICE, HOST, O.WRITE, R.TOPIC)
    assert not a.authorize_by_resource_type(BOB, HOST, O.WRITE, R.TOPIC)
    assert not a.authorize_by_resource_type(ALICE, HOST, O.WRITE, R.GROUP)
    denied = with_acls(
        (topic("orders"), allow("User:alice", O.WRITE)), (topic("*"), deny("User:alice", O.WRITE))
    )
    assert not denied.authorize_by_resource_type(ALICE, HOST, O.WRITE, R.TOPIC)
    shadowed = with_acls(
        (topic("orders"), allow("User:alice", O.WRITE)),
        (topic("ord", T.PREFIXED), deny("User:*", O.WRITE)),
    )
    assert not shadowed.authorize_by_resource_type(ALICE, HOST, O.WRITE, R.TOPIC)
    prefixed = with_acls((topic("o", T.PREFIXED), allow("User:alice", O.ALL)))
    assert prefixed.authorize_by_resource_type(ALICE, HOST, O.WRITE, R.TOPIC)
    everyone = with_acls(
        (topic("x"), allow("User:bob", O.READ)), allow_everyone_if_no_acl_found=True
    )
    assert everyone.authorize_by_resource_type(ALICE, HOST, O.WRITE, R.TOPIC)
    walled = with_acls((topic("*"), deny("User:*", O.WRITE)), allow_everyone_if_no_acl_found=True)
    assert not walled.authorize_by_resource_type(ALICE, HOST, O.WRITE, R.TOPIC)


def test_authorized_operations_lists_the_allowed_supported_operations() -> None:
    a = with_acls((topic("t"), allow("User:alice", O.READ)))
    assert a.authorized_operations(ALICE, HOST, R.TOPIC, "t") == [O.READ, O.DESCRIBE]


def _filter(
    rtype: ResourceType = R.ANY,
    name: str | None = None,
    pattern: PatternType = T.ANY,
    principal: str | None = None,
    op: AclOperation = O.ANY,
) -> AclBindingFilter:
    return AclBindingFilter(
        ResourcePatternFilter(rtype, name, pattern),
        AccessControlEntryFilter(principal, None, op, P.ANY),
    )


def test_filters_any_match_and_specific_patterns() -> None:
    a = with_acls(
        (topic("payments"), allow("User:alice", O.READ)),
        (topic("pay", T.PREFIXED), allow("User:bob", O.WRITE)),
        (topic("*"), allow("User:bob", O.DESCRIBE)),
        (ResourcePattern(R.GROUP, "billing", T.LITERAL), allow("User:alice", O.READ)),
    )
    assert len(a.acls(_filter())) == 4
    assert {b.pattern.name for b in a.acls(_filter(R.TOPIC, "payments", T.MATCH))} == {
        "payments",
        "pay",
        "*",
    }
    assert {b.pattern.name for b in a.acls(_filter(R.TOPIC, "payments", T.ANY))} == {"payments"}
    assert [b.pattern.name for b in a.acls(_filter(R.TOPIC, None, T.PREFIXED))] == ["pay"]
    assert [
        b.pattern.resource_type for b in a.acls(_filter(principal="User:alice", op=O.READ))
    ] == [
        R.TOPIC,
        R.GROUP,
    ]


def test_delete_acls_reports_per_filter_and_removes_from_the_cache() -> None:
    a = with_acls(
        (topic("t"), allow("User:alice", O.READ)),
        (topic("t"), allow("User:bob", O.READ)),
        (topic("u"), allow("User:bob", O.READ)),
    )
    results = asyncio.run(
        a.delete_acls([_filter(principal="User:bob"), _filter(R.TOPIC, "none", T.LITERAL)])
    )
    assert sorted(b.pattern.name for b in results[0].deleted) == ["t", "u"]
    assert results[1].deleted == ()
    assert [str(b.entry) for b in a.acls(_filter())] == [
        "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"
    ]
    assert not can(a, BOB, O.READ, "t")


def test_create_refuses_bad_bindings_like_kafka() -> None:
    a = AclAuthorizer()
    results = asyncio.run(
        a.create_acls(
            [
                AclBinding(
                    ResourcePattern(R.CLUSTER, "other", T.LITERAL), allow("User:a", O.ALTER)
                ),
                AclBinding(topic(""), allow("User:a", O.READ)),
                AclBinding(topic("t", T.MATCH), allow("User:a", O.READ)),
                AclBinding(topic("t"), allow("User:a", O.ANY)),
                AclBinding(topic("t"), allow("User:a", O.READ)),
            ]
        )
    )
    assert [int(r.error) for r in results] == [42, 42, 42, 42, 0]
    bad_principal = AclBinding(topic("t"), allow("alice", O.READ))
    [result] = asyncio.run(a.create_acls([bad_principal]))
    assert (int(result.error), result.message) == (-1, None)
    assert results[0].message == "The only valid name for the CLUSTER resource is kafka-cluster"
    assert results[1].message == "Invalid empty resource name"


def test_to_string_is_kafkas() -> None:
    assert str(topic("orders")) == (
        "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
    )
    assert str(allow("User:alice", O.WRITE)) == (
        "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)"
    )
