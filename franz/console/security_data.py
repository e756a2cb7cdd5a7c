"""The console's ACLs and SCRAM users (``/acls``, ``/users``): functions of a
``ConsoleCluster``, and the parsing of their forms (pure).

ACLs (KIP-140; Kafka's ``kafka-acls.sh``): CreateAcls and DeleteAcls go through
confluent-kafka's ``create_acls`` / ``delete_acls``. DescribeAcls goes over
``franz.admin.wire`` as ``franz acls --list`` does, because librdkafka drops DescribeAcls'
top-level error and answers an empty list: a broker without ``authorizer.class.name``
answers SECURITY_DISABLED (54) and a principal without DESCRIBE on the cluster
CLUSTER_AUTHORIZATION_FAILED (31), which the page must tell apart from "no ACLs".

SCRAM users (KIP-554): DescribeUserScramCredentials, AlterUserScramCredentials (upsert of a
mechanism's salted password, deletion of a mechanism) through confluent-kafka. Passwords
only travel in the upsertion (librdkafka salts and hashes them client-side, as Kafka's
``kafka-configs.sh`` does); they are never logged, echoed in a page or put in a URL.

A broker's refusal is an ``ActionError`` (Kafka's error name and message), shown in a
``.banner.error``; no answer at all is ``ClusterUnavailable`` (the 503 page).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # exported, not in __all__
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from franz.admin.client import UNREACHABLE_CODES
from franz.admin.wire import connect
from franz.console.cluster import ClusterUnavailable, ConsoleCluster
from franz.errors import ErrorCode
from franz.security import acl as model

__all__ = [
    "ACL_OPERATIONS",
    "MECHANISMS",
    "Acl",
    "AclListing",
    "ActionError",
    "ScramUser",
    "create_acl",
    "delete_acl",
    "delete_user",
    "describe_acls",
    "describe_users",
    "parse_acl_form",
    "parse_user_form",
    "upsert_user",
]

T = TypeVar("T")

#: DescribeAcls (API key 29) and the highest version sent (``franz acls``' too).
DESCRIBE_ACLS: Final = 29
DESCRIBE_ACLS_VERSION: Final = 3
#: The operations a binding may name: Kafka's ``AclOperation`` without UNKNOWN and ANY, and
#: without CREATE_TOKENS / DESCRIBE_TOKENS, which librdkafka cannot send.
ACL_OPERATIONS: Final = tuple(
    op.name
    for op in model.AclOperation
    if op.value > model.AclOperation.ANY and op.name in AclOperation.__members__
)
RESOURCE_TYPES: Final = ("TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID")
PATTERN_TYPES: Final = ("LITERAL", "PREFIXED")
PERMISSIONS: Final = ("ALLOW", "DENY")
#: SCRAM mechanisms (Kafka's names) and the iteration bounds Kafka's ``ScramMechanism``
#: accepts (``minIterations`` 4096, ``maxIterations`` 16384); 4096 is kafka-configs.sh's
#: default.
MECHANISMS: Final = {
    "SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256,
    "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512,
}
MIN_ITERATIONS: Final = 4096
MAX_ITERATIONS: Final = 16384
#: The name of the cluster resource (``kafka-cluster``, Kafka's ``Resource.CLUSTER_NAME``).
CLUSTER_NAME: Final = "kafka-cluster"


class ActionError(Exception):
    """A broker refused an action or a form is invalid: ``name`` (Kafka's error name, or
    ``INVALID_REQUEST`` for a form) and ``message``."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


@dataclass(frozen=True, order=True)
class Acl:
    """One binding, in Kafka's names (``ResourcePattern`` + ``AccessControlEntry``)."""

    resource_type: str
    name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str


@dataclass(frozen=True)
class AclListing:
    """DescribeAcls' answer: the bindings sorted by resource then entry (``_order``, as
    ``franz acls --list`` prints them), or ``disabled`` when the broker has no authorizer."""

    acls: list[Acl]
    disabled: bool = False


@dataclass(frozen=True)
class ScramUser:
    """A user's SCRAM credentials: (mechanism, iterations) per mechanism it has."""

    name: str
    credentials: list[tuple[str, int]]


# -- forms (pure) -------------------------------------------------------------------------


def _field(form: Mapping[str, Any], key: str, default: str = "") -> str:
    return str(form.get(key) or default).strip()


def _choice(form: Mapping[str, Any], key: str, allowed: tuple[str, ...], default: str) -> str:
    value = _field(form, key, default).upper()
    if value not in allowed:
        raise ActionError("INVALID_REQUEST", f"{key} must be one of {', '.join(allowed)}")
    return value


def parse_acl_form(form: Mapping[str, Any]) -> Acl:
    """An ``Acl`` from the add (or delete) form: principal ``User:NAME`` (``User:*`` anyone),
    host (``*`` by default), operation, permission, resource type, name (``kafka-cluster``
    for CLUSTER), pattern type; ``ActionError`` naming what is wrong."""
    principal = _field(form, "principal")
    kind, _, who = principal.partition(":")
    if not kind or not who:
        raise ActionError("INVALID_REQUEST", "principal must be TYPE:NAME, e.g. User:alice")
    resource_type = _choice(form, "resource_type", RESOURCE_TYPES, "TOPIC")
    name = _field(form, "name", CLUSTER_NAME if resource_type == "CLUSTER" else "")
    if not name:
        raise ActionError("INVALID_REQUEST", "the resource name is empty (* means every one)")
    return Acl(
        resource_type=resource_type,
        name=name,
        pattern_type=_choice(form, "pattern_type", PATTERN_TYPES, "LITERAL"),
        principal=principal,
        host=_field(form, "host", "*"),
        operation=_choice(form, "operation", ACL_OPERATIONS, ""),
        permission=_choice(form, "permission", PERMISSIONS, "ALLOW"),
    )


def parse_user_form(form: Mapping[str, Any]) -> tuple[str, str, int, bytes]:
    """(user, mechanism, iterations, password) from the add/change form; ``ActionError``
    for an empty name or password, an unknown mechanism or iterations out of Kafka's
    bounds. The error never contains the password."""
    user = _field(form, "user")
    if not user:
        raise ActionError("INVALID_REQUEST", "the user name is empty")
    mechanism = _choice(form, "mechanism", tuple(MECHANISMS), "SCRAM-SHA-256")
    text = _field(form, "iterations", str(MIN_ITERATIONS))
    try:
        iterations = int(text)
    except ValueError:
        raise ActionError("INVALID_REQUEST", "iterations must be a number") from None
    if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
        raise ActionError(
            "INVALID_REQUEST", f"iterations must be {MIN_ITERATIONS} to {MAX_ITERATIONS}"
        )
    password = str(form.get("password") or "")
    if not password:
        raise ActionError("INVALID_REQUEST", "the password is empty")
    return user, mechanism, iterations, password.encode()


# -- the cluster ----------------------------------------------------------------------------


async def _outcome(cluster: ConsoleCluster, future: concurrent.futures.Future[T]) -> T:
    """An admin future's result; a broker's error is an ``ActionError``, no answer a
    ``ClusterUnavailable``."""
    try:
        return await asyncio.wait_for(asyncio.wrap_future(future), cluster.timeout_s + 5)
    except TimeoutError:
        raise ClusterUnavailable("the cluster did not answer in time") from None
    except KafkaException as exc:
        err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
        if err is None:
            raise ActionError("UNKNOWN_SERVER_ERROR", str(exc)) from None
        if err.code() in UNREACHABLE_CODES:
            raise ClusterUnavailable(str(err.str())) from None
        raise ActionError(str(err.name()), str(err.str())) from None


def _describe_acls_wire(cluster: ConsoleCluster) -> tuple[ErrorCode, str | None, list[Acl]]:
    address = cluster.bootstrap.split(",")[0]
    with connect(address, cluster.timeout_s, cluster.wire.client_id, cluster.wire.security) as c:
        response = c.request(
            DESCRIBE_ACLS,
            {
                "resource_type_filter": int(model.ResourceType.ANY),
                "resource_name_filter": None,
                "pattern_type_filter": int(model.PatternType.ANY),
                "principal_filter": None,
                "host_filter": None,
                "operation": int(model.AclOperation.ANY),
                "permission_type": int(model.AclPermissionType.ANY),
            },
            max_version=DESCRIBE_ACLS_VERSION,
        )
    acls = [
        Acl(
            resource_type=model.ResourceType(int(r.resource_type)).name,
            name=r.resource_name,
            pattern_type=model.PatternType(int(r.pattern_type)).name,
            principal=a.principal,
            host=a.host,
            operation=model.AclOperation(int(a.operation)).name,
            permission=model.AclPermissionType(int(a.permission_type)).name,
        )
        for r in response.resources
        for a in r.acls
    ]
    return ErrorCode(int(response.error_code)), response.error_message, sorted(acls, key=_order)


def _order(acl: Acl) -> tuple[object, ...]:
    """``franz acls --list``'s order: resource patterns, then entries, by Kafka's enums."""
    return (
        model.ResourceType[acl.resource_type],
        acl.name,
        model.PatternType[acl.pattern_type],
        acl.principal,
        acl.host,
        model.AclOperation[acl.operation],
        model.AclPermissionType[acl.permission],
    )


async def describe_acls(cluster: ConsoleCluster) -> AclListing:
    """Every ACL (one DescribeAcls with an all-matching filter)."""
    try:
        code, message, acls = await cluster.run(_describe_acls_wire, cluster)
    except OSError as exc:
        raise ClusterUnavailable(str(exc) or type(exc).__name__) from None
    if code == ErrorCode.SECURITY_DISABLED:
        return AclListing([], disabled=True)
    if code != ErrorCode.NONE:
        raise ActionError(code.name, message or code.message)
    return AclListing(acls)


def _binding(acl: Acl, cls: type[Any] = AclBinding) -> Any:
    return cls(
        ResourceType(int(model.ResourceType[acl.resource_type])),
        acl.name,
        ResourcePatternType(int(model.PatternType[acl.pattern_type])),
        acl.principal,
        acl.host,
        AclOperation(int(model.AclOperation[acl.operation])),
        AclPermissionType(int(model.AclPermissionType[acl.permission])),
    )


async def create_acl(cluster: ConsoleCluster, acl: Acl) -> None:
    """CreateAcls of one binding."""
    futures = cluster.admin.create_acls([_binding(acl)], request_timeout=cluster.timeout_s)
    for future in futures.values():
        await _outcome(cluster, future)


async def delete_acl(cluster: ConsoleCluster, acl: Acl) -> int:
    """DeleteAcls with a filter matching exactly ``acl``; how many bindings were deleted."""
    futures = cluster.admin.delete_acls(
        [_binding(acl, AclBindingFilter)], request_timeout=cluster.timeout_s
    )
    deleted = 0
    for future in futures.values():
        deleted += len(await _outcome(cluster, future))
    return deleted


#: DescribeUserScramCredentials (50) and its mechanism ids (KIP-554).
DESCRIBE_USER_SCRAM_CREDENTIALS: Final = 50
_MECHANISMS: Final = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}


def _describe_users_wire(cluster: ConsoleCluster) -> tuple[ErrorCode, str | None, list[ScramUser]]:
    address = cluster.bootstrap.split(",")[0]
    with connect(address, cluster.timeout_s, cluster.wire.client_id, cluster.wire.security) as c:
        response = c.request(DESCRIBE_USER_SCRAM_CREDENTIALS, {"users": None}, max_version=0)
    users = [
        ScramUser(
            r.user,
            sorted(
                (_MECHANISMS.get(int(i.mechanism), str(int(i.mechanism))), int(i.iterations))
                for i in r.credential_infos
            ),
        )
        for r in response.results
        if int(r.error_code) == ErrorCode.NONE
    ]
    return ErrorCode(int(response.error_code)), response.error_message, users


async def describe_users(cluster: ConsoleCluster) -> list[ScramUser]:
    """Every SCRAM user with its mechanisms and iterations, sorted by name. Sent over the
    wire client: confluent-kafka 2.16 crashes the process (SIGSEGV) when the broker refuses
    ``describe_user_scram_credentials()`` (CLUSTER_AUTHORIZATION_FAILED at the top level),
    and the console must show that refusal, not die of it."""
    try:
        code, message, users = await cluster.run(_describe_users_wire, cluster)
    except OSError as exc:
        raise ClusterUnavailable(str(exc) or type(exc).__name__) from None
    if code != ErrorCode.NONE:
        raise ActionError(code.name, message or code.message)
    return sorted(users, key=lambda u: u.name)


async def upsert_user(
    cluster: ConsoleCluster, user: str, mechanism: str, iterations: int, password: bytes
) -> None:
    """AlterUserScramCredentials: set ``user``'s ``mechanism`` credential (creating the
    user if new); librdkafka draws the salt."""
    upsertion = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(MECHANISMS[mechanism], iterations), password
    )
    futures = cluster.admin.alter_user_scram_credentials(
        [upsertion], request_timeout=cluster.timeout_s
    )
    for future in futures.values():
        await _outcome(cluster, future)


async def delete_user(cluster: ConsoleCluster, user: str, mechanisms: list[str]) -> None:
    """AlterUserScramCredentials deleting each of ``user``'s ``mechanisms`` (a user is
    gone when it has none left)."""
    deletions: list[Any] = [UserScramCredentialDeletion(user, MECHANISMS[m]) for m in mechanisms]
    if not deletions:
        raise ActionError("RESOURCE_NOT_FOUND", f"{user} has no SCRAM credentials")
    futures = cluster.admin.alter_user_scram_credentials(
        deletions, request_timeout=cluster.timeout_s
    )
    for future in futures.values():
        await _outcome(cluster, future)
