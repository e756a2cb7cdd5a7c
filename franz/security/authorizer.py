"""Kafka 3.9's ``kafka.security.authorizer.AclAuthorizer`` (ZooKeeper mode): decisions over
an in-memory ACL cache, and the create/delete paths that write through an ``AclStore``
(``franz.security.acl_store``) before updating the cache.

Decision (``AclAuthorizer.authorizeAction``), for a principal from a host asking for an
operation on a resource (always a LITERAL name):

1. A principal in ``super.users`` (``User:admin;User:bob``) is allowed everything.
2. The *matching* ACLs are those of the literal pattern with the resource's name, of the
   literal wildcard ``*``, and of every PREFIXED pattern the name starts with.
3. No matching ACL: allowed exactly when ``allow.everyone.if.no.acl.found`` (default false).
4. Otherwise a matching DENY entry whose principal is the principal or ``User:*``, whose
   host is the host or ``*`` and whose operation is the operation or ALL refuses (deny
   wins); else a matching ALLOW entry allows. DESCRIBE is implied by READ, WRITE, DELETE and
   ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS (``AclOperation`` javadoc).

``authorize_by_resource_type`` is Kafka's ``authorizeByResourceType`` (KIP-679): may the
principal do ``operation`` on *some* resource of a type (InitProducerId for an idempotent
producer: IDEMPOTENT_WRITE on the cluster or WRITE on any topic).

Concurrency: one owner, the broker's event loop. Writes go to the store first (conditional
on the znode version in ZooKeeper, retried on a conflict as Kafka's ``updateResourceAcls``),
then the cache takes the stored result; other brokers learn of it from the change
notification the store writes, and re-read the resource.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from franz.errors import ErrorCode, InvalidConfigurationError
from franz.security.acl import (
    WILDCARD_HOST,
    WILDCARD_PRINCIPAL,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from franz.security.principal import KafkaPrincipal

__all__ = [
    "ACL_AUTHORIZER_CLASS",
    "AUTHORIZER_CLASSES",
    "SUPPORTED_OPERATIONS",
    "AclAuthorizer",
    "AclChange",
    "AclCreateResult",
    "AclDeleteResult",
    "AclStore",
    "authorizer_from_config",
    "binding_is_specific",
    "parse_super_users",
]

log = logging.getLogger(__name__)

#: ``authorizer.class.name`` values that enable the authorizer: Kafka's class name, and the
#: name of this module's class for Franz's own configs.
ACL_AUTHORIZER_CLASS: Final = "kafka.security.authorizer.AclAuthorizer"
AUTHORIZER_CLASSES: Final = frozenset(
    {ACL_AUTHORIZER_CLASS, "franz.security.authorizer.AclAuthorizer"}
)

_O = AclOperation
#: ``AclEntry.supportedOperations`` per resource type (ALL is always valid too).
SUPPORTED_OPERATIONS: Final[Mapping[ResourceType, tuple[AclOperation, ...]]] = {
    ResourceType.TOPIC: (
        _O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER,
        _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE),
    ResourceType.CLUSTER: (
        _O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
        _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (_O.DESCRIBE, _O.WRITE),
    ResourceType.DELEGATION_TOKEN: (_O.DESCRIBE,),
    ResourceType.USER: (_O.CREATE_TOKENS, _O.DESCRIBE_TOKENS),
}  # fmt: skip

#: What an allow entry for the key also allows (``AclAuthorizer.authorizeAction``).
_IMPLIED_BY: Final[Mapping[AclOperation, frozenset[AclOperation]]] = {
    _O.DESCRIBE: frozenset({_O.DESCRIBE, _O.READ, _O.WRITE, _O.DELETE, _O.ALTER}),
    _O.DESCRIBE_CONFIGS: frozenset({_O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS}),
}

Entries = frozenset[AccessControlEntry]


def authorizer_from_config(get: Callable[[str], Any]) -> AclAuthorizer | None:
    """The authorizer ``authorizer.class.name`` names (empty: None, everything allowed), with
    ``super.users`` and ``allow.everyone.if.no.acl.found``; its store is attached by the
    broker (embedded file or ZooKeeper)."""
    name = (get("authorizer.class.name") or "").strip()
    if not name:
        return None
    if name not in AUTHORIZER_CLASSES:
        raise InvalidConfigurationError(
            f"authorizer.class.name={name}: class not found (supported: {ACL_AUTHORIZER_CLASS})"
        )
    return AclAuthorizer(
        parse_super_users(get("super.users")), bool(get("allow.everyone.if.no.acl.found"))
    )


def parse_super_users(value: str | None) -> frozenset[KafkaPrincipal]:
    """``super.users``: principals separated by semicolons (``User:admin;User:bob``)."""
    if not value:
        return frozenset()
    return frozenset(KafkaPrincipal.parse(p.strip()) for p in value.split(";") if p.strip())


@dataclass(frozen=True, slots=True)
class AclChange:
    """A resource's entries as the store now holds them (empty: the znode is gone)."""

    pattern: ResourcePattern
    entries: Entries


class AclStore(Protocol):
    """Where ACLs live: the embedded metadata file, or ZooKeeper's ``/kafka-acl`` and
    ``/kafka-acl-extended`` (``franz.security.acl_store``)."""

    async def load_all(self) -> dict[ResourcePattern, Entries]: ...

    async def update(
        self, pattern: ResourcePattern, change: Callable[[Entries], Entries]
    ) -> tuple[Entries, Entries]:
        """Apply ``change`` to the entries the store holds for one resource, atomically (a
        conditional write, ``change`` applied again to a concurrent writer's result), notify
        the other brokers; return the entries before and after."""
        ...


@dataclass(frozen=True, slots=True)
class AclCreateResult:
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True, slots=True)
class AclDeleteResult:
    """One filter's outcome: the bindings it deleted, or an error for all of them."""

    deleted: tuple[AclBinding, ...] = ()
    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


class AclAuthorizer:
    """The decisions and the cache (module docstring)."""

    def __init__(
        self,
        super_users: Iterable[KafkaPrincipal] = (),
        allow_everyone_if_no_acl_found: bool = False,
        store: AclStore | None = None,
    ) -> None:
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        self.store = store
        self._cache: dict[ResourcePattern, Entries] = {}

    # -- the cache --------------------------------------------------------------------------

    def apply(self, pattern: ResourcePattern, entries: Entries) -> None:
        """The store holds ``entries`` for ``pattern`` now (a write or a notification)."""
        if entries:
            self._cache[pattern] = entries
        else:
            self._cache.pop(pattern, None)

    def replace_all(self, acls: Mapping[ResourcePattern, Entries]) -> None:
        self._cache = {p: e for p, e in acls.items() if e}

    async def load(self) -> None:
        if self.store is not None:
            self.replace_all(await self.store.load_all())

    def acls(self, binding_filter: AclBindingFilter) -> list[AclBinding]:
        """``Authorizer.acls``: every binding the filter matches, sorted."""
        found = [
            AclBinding(pattern, entry)
            for pattern, entries in self._cache.items()
            if binding_filter.pattern.matches(pattern)
            for entry in entries
            if binding_filter.entry.matches(entry)
        ]
        found.sort(key=lambda b: (b.pattern, b.entry))
        return found

    # -- decisions --------------------------------------------------------------------------

    def is_super_user(self, principal: KafkaPrincipal) -> bool:
        return principal in self.super_users

    def matching_acls(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        """The entries of every pattern that applies to a resource (module docstring, 2)."""
        found: list[AccessControlEntry] = []
        for pattern in (
            ResourcePattern(resource_type, name, PatternType.LITERAL),
            ResourcePattern(resource_type, WILDCARD_RESOURCE, PatternType.LITERAL),
        ):
            found.extend(self._cache.get(pattern, ()))
        for end in range(1, len(name) + 1):
            found.extend(
                self._cache.get(
                    ResourcePattern(resource_type, name[:end], PatternType.PREFIXED), ()
                )
            )
        return found

    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        if self.is_super_user(principal):
            return True
        acls = self.matching_acls(resource_type, name)
        if not acls:
            return self.allow_everyone_if_no_acl_found
        who = str(principal)
        if _exists(acls, who, host, AclPermissionType.DENY, frozenset({operation})):
            return False
        allowed = _IMPLIED_BY.get(operation, frozenset({operation}))
        return _exists(acls, who, host, AclPermissionType.ALLOW, allowed)

    def authorize_by_resource_type(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """``AclAuthorizer.authorizeByResourceType`` (KIP-679): refused by a literal ``*``
        DENY; else allowed with ``allow.everyone.if.no.acl.found``; else an ALLOW for the
        operation (or ALL) on some literal or prefixed pattern of the type that no DENY
        covers (a DENY prefix covers the names starting with it)."""
        if self.is_super_user(principal):
            return True
        who = str(principal)
        deny_literals: set[str] = set()
        deny_prefixes: set[str] = set()
        allow_literals: set[str] = set()
        allow_prefixes: set[str] = set()
        for pattern, entries in self._cache.items():
            if pattern.resource_type != resource_type:
                continue
            for entry in entries:
                if not _entry_applies(entry, who, host, frozenset({operation})):
                    continue
                deny = entry.permission_type == AclPermissionType.DENY
                literal = pattern.pattern_type == PatternType.LITERAL
                target = (
                    (deny_literals if literal else deny_prefixes)
                    if deny
                    else (allow_literals if literal else allow_prefixes)
                )
                target.add(pattern.name)
        if WILDCARD_RESOURCE in deny_literals:
            return False
        if self.allow_everyone_if_no_acl_found:
            return True  # Kafka's AclAuthorizer, once no literal `*` DENY applies

        def denied_by_prefix(name: str) -> bool:
            return any(name.startswith(prefix) for prefix in deny_prefixes)

        if any(not denied_by_prefix(prefix) for prefix in allow_prefixes):
            return True
        return any(
            name == WILDCARD_RESOURCE or (name not in deny_literals and not denied_by_prefix(name))
            for name in allow_literals
        )

    def authorized_operations(
        self, principal: KafkaPrincipal, host: str, resource_type: ResourceType, name: str
    ) -> list[AclOperation]:
        """KIP-430: the supported operations of the type that ``authorize`` allows."""
        return [
            op
            for op in SUPPORTED_OPERATIONS.get(resource_type, ())
            if self.authorize(principal, host, op, resource_type, name)
        ]

    # -- changes (CreateAcls, DeleteAcls) ---------------------------------------------------

    async def create_acls(self, bindings: Sequence[AclBinding]) -> list[AclCreateResult]:
        """``AclAuthorizer.createAcls``: the bindings grouped by resource, one conditional
        write per resource; a failed write fails that resource's bindings only."""
        results: dict[int, AclCreateResult] = {}
        by_pattern: dict[ResourcePattern, list[int]] = {}
        for i, binding in enumerate(bindings):
            problem = _invalid_binding(binding)
            if problem is not None:
                results[i] = problem
            else:
                by_pattern.setdefault(binding.pattern, []).append(i)
        for pattern, indexes in by_pattern.items():
            add = frozenset(bindings[i].entry for i in indexes)
            try:
                _, after = await self._update(pattern, add.union)
                self.apply(pattern, after)
                outcome = AclCreateResult()
            except Exception as exc:  # one resource's failure is its result
                log.warning("failed to create ACLs for %s: %s", pattern, exc)
                outcome = AclCreateResult(
                    ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to create ACLs for {pattern}: {exc}"
                )
            for i in indexes:
                results[i] = outcome
        return [results[i] for i in range(len(bindings))]

    async def delete_acls(self, filters: Sequence[AclBindingFilter]) -> list[AclDeleteResult]:
        """``AclAuthorizer.deleteAcls``: per resource of the cache (and per fully specified
        filter's resource, which another broker may have written since), remove the entries
        any filter matches; each filter reports the bindings it matched."""
        candidates = set(self._cache)
        for f in filters:
            if f.pattern.matches_at_most_one and f.pattern.name is not None:
                candidates.add(
                    ResourcePattern(f.pattern.resource_type, f.pattern.name, f.pattern.pattern_type)
                )
        deleted: dict[int, list[AclBinding]] = {i: [] for i in range(len(filters))}
        errors: dict[int, tuple[ErrorCode, str]] = {}
        for pattern in sorted(candidates):
            matching = [i for i, f in enumerate(filters) if f.pattern.matches(pattern)]
            if not matching:
                continue
            known = self._cache.get(pattern)
            if known is not None and not any(
                filters[i].entry.matches(e) for i in matching for e in known
            ):
                continue  # nothing to delete here as far as this broker knows

            def keep(current: Entries, matching: list[int] = matching) -> Entries:
                # Applied to what the store holds (Kafka's updateResourceAcls), which another
                # broker may have changed since this broker's cache learnt of it.
                return frozenset(
                    e for e in current if not any(filters[i].entry.matches(e) for i in matching)
                )

            try:
                before, after = await self._update(pattern, keep)
            except Exception as exc:  # one resource's failure is its filters'
                log.warning("failed to delete ACLs for %s: %s", pattern, exc)
                for i in matching:
                    errors[i] = (ErrorCode.UNKNOWN_SERVER_ERROR, f"Failed to delete ACLs: {exc}")
                continue
            self.apply(pattern, after)
            for entry in sorted(before - after):
                for i in matching:
                    if filters[i].entry.matches(entry):
                        deleted[i].append(AclBinding(pattern, entry))
        return [
            AclDeleteResult((), *errors[i]) if i in errors else AclDeleteResult(tuple(deleted[i]))
            for i in range(len(filters))
        ]

    async def _update(
        self, pattern: ResourcePattern, change: Callable[[Entries], Entries]
    ) -> tuple[Entries, Entries]:
        if self.store is None:
            before = self._cache.get(pattern, frozenset())
            return before, change(before)
        return await self.store.update(pattern, change)


def _entry_applies(
    entry: AccessControlEntry, who: str, host: str, operations: frozenset[AclOperation]
) -> bool:
    return (
        entry.principal in (who, WILDCARD_PRINCIPAL)
        and entry.host in (host, WILDCARD_HOST)
        and (entry.operation in operations or entry.operation == AclOperation.ALL)
    )


def _exists(
    acls: Iterable[AccessControlEntry],
    who: str,
    host: str,
    permission: AclPermissionType,
    operations: frozenset[AclOperation],
) -> bool:
    return any(
        e.permission_type == permission and _entry_applies(e, who, host, operations) for e in acls
    )


def _invalid_binding(binding: AclBinding) -> AclCreateResult | None:
    """Why Kafka refuses a binding, or None. ``AclApis.handleCreateAcls``: INVALID_REQUEST for
    a CLUSTER resource not named ``kafka-cluster`` and for an empty name; a principal that is
    not ``<type>:<name>`` fails in Kafka's ``AclAuthorizer`` with UNKNOWN_SERVER_ERROR and
    no message (measured on Kafka 3.9.2). ANY/MATCH/UNKNOWN elements never get here from
    the wire (CreateAcls refuses the whole request); for direct callers they are
    INVALID_REQUEST as ``AuthorizerUtils.validateAclBinding``."""
    pattern, entry = binding.pattern, binding.entry
    if pattern.resource_type == ResourceType.CLUSTER and pattern.name != "kafka-cluster":
        return AclCreateResult(
            ErrorCode.INVALID_REQUEST,
            "The only valid name for the CLUSTER resource is kafka-cluster",
        )
    if not pattern.name:
        return AclCreateResult(ErrorCode.INVALID_REQUEST, "Invalid empty resource name")
    if not binding_is_specific(binding):
        return AclCreateResult(
            ErrorCode.INVALID_REQUEST, "Failed to create ACL: ACL binding contains unknown elements"
        )
    try:
        KafkaPrincipal.parse(entry.principal)
    except ValueError:
        return AclCreateResult(ErrorCode.UNKNOWN_SERVER_ERROR, None)
    return None


def binding_is_specific(binding: AclBinding) -> bool:
    """A binding Kafka's ``ResourcePattern`` and ``AccessControlEntry`` can hold: no ANY,
    MATCH or UNKNOWN element (their constructors throw on ANY and MATCH)."""
    pattern, entry = binding.pattern, binding.entry
    return not (
        pattern.resource_type in (ResourceType.ANY, ResourceType.UNKNOWN)
        or not pattern.pattern_type.is_specific
        or entry.operation in (AclOperation.ANY, AclOperation.UNKNOWN)
        or entry.permission_type in (AclPermissionType.ANY, AclPermissionType.UNKNOWN)
    )
