"""ACLs as Kafka models them (``org.apache.kafka.common.acl`` and ``.resource``): resource
types, pattern types, operations, permission types, the bindings and the filters that
Describe/DeleteAcls send, and the JSON Kafka's ZooKeeper-mode ``AclAuthorizer`` stores.

Pure values, no I/O. Codes are the protocol's (``ResourceType.code``, ``PatternType.code``,
``AclOperation.code``, ``AclPermissionType.code``); ``str`` of a pattern and of an entry is
Kafka's ``toString`` (what ``kafka-acls.sh`` prints)::

    ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)
    (principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)

Znode JSON (Kafka's ``AclEntry.toJsonCompatibleMap``), one znode per resource pattern, at
``/kafka-acl/<ResourceTypeName>/<name>`` (literal) and
``/kafka-acl-extended/prefixed/<ResourceTypeName>/<name>``::

    {"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
                          "operation":"Read","host":"*"}]}

``<ResourceTypeName>`` and the operation names are Kafka's ``SecurityUtils.resourceTypeName``
and ``operationName`` (camel case: ``Topic``, ``TransactionalId``, ``DescribeConfigs``).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from franz.security.principal import KafkaPrincipal

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD_HOST",
    "WILDCARD_PRINCIPAL",
    "WILDCARD_RESOURCE",
    "AccessControlEntry",
    "AccessControlEntryFilter",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
    "camel_name",
    "decode_acls_json",
    "encode_acls_json",
    "enum_or_unknown",
    "parse_camel_name",
]

_E = TypeVar("_E", bound=enum.Enum)
_I = TypeVar("_I", bound=enum.IntEnum)

#: ``Resource.CLUSTER_NAME``: the one CLUSTER resource.
CLUSTER_NAME: Final = "kafka-cluster"
#: ``ResourcePattern.WILDCARD_RESOURCE``: a LITERAL pattern named ``*`` matches every name.
WILDCARD_RESOURCE: Final = "*"
#: ``AclEntry.WILDCARD_PRINCIPAL_STRING`` / ``WILDCARD_HOST``.
WILDCARD_PRINCIPAL: Final = "User:*"
WILDCARD_HOST: Final = "*"


class ResourceType(enum.IntEnum):
    """``org.apache.kafka.common.resource.ResourceType``."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    """``org.apache.kafka.common.resource.PatternType``: LITERAL and PREFIXED are specific
    (a binding has one); ANY and MATCH only appear in filters."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4

    @property
    def is_specific(self) -> bool:
        return self in (PatternType.LITERAL, PatternType.PREFIXED)


class AclOperation(enum.IntEnum):
    """``org.apache.kafka.common.acl.AclOperation``."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    """``org.apache.kafka.common.acl.AclPermissionType``."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def camel_name(member: enum.Enum) -> str:
    """Kafka's ``SecurityUtils.toPascalCase`` of an enum name: ``TRANSACTIONAL_ID`` ->
    ``TransactionalId`` (znode paths, stored operation and permission names)."""
    return "".join(part.capitalize() for part in member.name.split("_"))


def parse_camel_name(kind: type[_E], text: str) -> _E:
    """The inverse of ``camel_name`` (case-insensitive, underscores optional, as Kafka's
    ``fromString`` after ``SecurityUtils``' conversions)."""
    wanted = text.replace("_", "").upper()
    for member in kind:
        if member.name.replace("_", "") == wanted:
            return member
    raise ValueError(f"unknown {kind.__name__} {text!r}")


@dataclass(frozen=True, slots=True, order=True)
class ResourcePattern:
    """A binding's resource: type, name and a specific pattern type."""

    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name})"
        )


@dataclass(frozen=True, slots=True, order=True)
class AccessControlEntry:
    """Who (``principal``, ``User:*`` for anyone) from where (``host``, ``*``) may or may not
    (``permission_type``) do what (``operation``, ALL for everything)."""

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
            f"permissionType={self.permission_type.name})"
        )

    @property
    def kafka_principal(self) -> KafkaPrincipal:
        return KafkaPrincipal.parse(self.principal)


@dataclass(frozen=True, slots=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry

    def __str__(self) -> str:
        return f"(pattern={self.pattern}, entry={self.entry})"


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    """``ResourcePatternFilter``: ``name`` None matches any name; pattern type ANY matches
    any pattern type with the exact name, MATCH the patterns that would apply to a resource
    of that name (the literal name, the ``*`` wildcard, prefixes of it)."""

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type not in (ResourceType.ANY, pattern.resource_type):
            return False
        if self.pattern_type not in (PatternType.ANY, PatternType.MATCH, pattern.pattern_type):
            return False
        if self.name is None:
            return True
        if self.pattern_type in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        if pattern.pattern_type == PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        return self.name.startswith(pattern.name)

    @property
    def matches_at_most_one(self) -> bool:
        """``ResourcePatternFilter.matchesAtMostOne``: a fully specified pattern."""
        return (
            self.resource_type not in (ResourceType.ANY, ResourceType.UNKNOWN)
            and self.pattern_type.is_specific
            and self.name is not None
        )


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    """``AccessControlEntryFilter``: None and ANY match anything."""

    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    def matches(self, entry: AccessControlEntry) -> bool:
        return (
            (self.principal is None or self.principal == entry.principal)
            and (self.host is None or self.host == entry.host)
            and self.operation in (AclOperation.ANY, entry.operation)
            and self.permission_type in (AclPermissionType.ANY, entry.permission_type)
        )


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    pattern: ResourcePatternFilter
    entry: AccessControlEntryFilter

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern.matches(binding.pattern) and self.entry.matches(binding.entry)

    @property
    def is_unknown(self) -> bool:
        """``AclBindingFilter.isUnknown``: an UNKNOWN element (a code Franz does not know
        decodes as UNKNOWN too); Kafka refuses such a request when parsing it."""
        return UNKNOWN_CODE in (
            self.pattern.resource_type,
            self.pattern.pattern_type,
            self.entry.operation,
            self.entry.permission_type,
        )


#: The UNKNOWN member's code in all four enums.
UNKNOWN_CODE: Final = 0


def enum_or_unknown(kind: type[_I], code: int) -> _I:
    """Kafka's ``fromCode``: an unknown code is UNKNOWN."""
    try:
        return kind(code)
    except ValueError:
        return kind(UNKNOWN_CODE)


def encode_acls_json(entries: Iterable[AccessControlEntry]) -> bytes:
    """A resource znode's data (module docstring), entries in a stable order."""
    acls = [
        {
            "principal": e.principal,
            "permissionType": camel_name(e.permission_type),
            "operation": camel_name(e.operation),
            "host": e.host,
        }
        for e in sorted(entries)
    ]
    return json.dumps({"version": 1, "acls": acls}, separators=(",", ":")).encode()


def decode_acls_json(data: bytes) -> frozenset[AccessControlEntry]:
    """The entries of a resource znode (``AclEntry.fromBytes``); empty data: none."""
    if not data:
        return frozenset()
    body: Any = json.loads(data)
    if body.get("version") != 1:
        raise ValueError(f"unsupported ACL znode version {body.get('version')}")
    return frozenset(
        AccessControlEntry(
            principal=str(item["principal"]),
            host=str(item["host"]),
            operation=parse_camel_name(AclOperation, str(item["operation"])),
            permission_type=parse_camel_name(AclPermissionType, str(item["permissionType"])),
        )
        for item in body.get("acls", [])
    )
