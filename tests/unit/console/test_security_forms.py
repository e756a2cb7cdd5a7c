"""``franz.console.security_data``'s form parsing: the ACL and SCRAM user forms."""

from __future__ import annotations

import pytest

from franz.console.security_data import (
    ACL_OPERATIONS,
    Acl,
    ActionError,
    parse_acl_form,
    parse_user_form,
)


def test_acl_form_with_defaults() -> None:
    acl = parse_acl_form({"principal": " User:alice ", "operation": "write", "name": "orders"})
    assert acl == Acl("TOPIC", "orders", "LITERAL", "User:alice", "*", "WRITE", "ALLOW")


def test_cluster_acl_names_kafka_cluster() -> None:
    acl = parse_acl_form(
        {"principal": "User:bob", "operation": "IDEMPOTENT_WRITE", "resource_type": "CLUSTER"}
    )
    assert (acl.resource_type, acl.name) == ("CLUSTER", "kafka-cluster")


@pytest.mark.parametrize(
    ("form", "complaint"),
    [
        ({"principal": "alice", "operation": "READ", "name": "t"}, "principal"),
        ({"principal": "User:a", "operation": "ANY", "name": "t"}, "operation"),
        ({"principal": "User:a", "operation": "READ", "name": ""}, "name"),
        (
            {"principal": "User:a", "operation": "READ", "name": "t", "pattern_type": "MATCH"},
            "pattern_type",
        ),
        (
            {"principal": "User:a", "operation": "READ", "name": "t", "permission": "MAYBE"},
            "permission",
        ),
    ],
)
def test_acl_form_errors_name_the_field(form: dict[str, str], complaint: str) -> None:
    with pytest.raises(ActionError) as caught:
        parse_acl_form(form)
    assert caught.value.name == "INVALID_REQUEST"
    assert complaint in caught.value.message


def test_operations_are_those_librdkafka_can_send() -> None:
    assert ACL_OPERATIONS[0] == "ALL" and "IDEMPOTENT_WRITE" in ACL_OPERATIONS
    assert "ANY" not in ACL_OPERATIONS and "CREATE_TOKENS" not in ACL_OPERATIONS


def test_user_form() -> None:
    assert parse_user_form(
        {"user": "carol", "password": "s3cret", "mechanism": "SCRAM-SHA-512", "iterations": "8192"}
    ) == ("carol", "SCRAM-SHA-512", 8192, b"s3cret")
    assert parse_user_form({"user": "carol", "password": "p"})[1:3] == ("SCRAM-SHA-256", 4096)


@pytest.mark.parametrize(
    "form",
    [
        {"user": "", "password": "hunter2"},
        {"user": "u", "password": ""},
        {"user": "u", "password": "hunter2", "iterations": "100"},
        {"user": "u", "password": "hunter2", "iterations": "lots"},
        {"user": "u", "password": "hunter2", "mechanism": "PLAIN"},
    ],
)
def test_user_form_errors_never_contain_the_password(form: dict[str, str]) -> None:
    with pytest.raises(ActionError) as caught:
        parse_user_form(form)
    assert "hunter2" not in str(caught.value)
