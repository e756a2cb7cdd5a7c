"""Add, remove and list ACLs (Kafka 3.9's ``kafka-acls.sh``, ``kafka.admin.AclCommand`` with
``--bootstrap-server``: CreateAcls, DeleteAcls, DescribeAcls through the admin client).

    franz acls --bootstrap-server HOST:PORT (--add | --remove | --list)
               [--topic T]... [--group G]... [--cluster] [--transactional-id ID]...
               [--resource-pattern-type LITERAL|PREFIXED|ANY|MATCH]
               [--allow-principal P]... [--deny-principal P]... [--allow-host H]...
               [--deny-host H]... [--operation OP]... [--producer [--idempotent]]
               [--consumer] [--principal P]... [--force]

Output, as ``AclCommand`` (``ResourcePattern`` and ``AccessControlEntry``'s ``toString``; a
space ends the first line and starts the second, then an empty line; wrapped here)::

    Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders,
    patternType=LITERAL)`:<SPACE>
    <SPACE><TAB>(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)<SPACE>

    Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=orders,
    patternType=LITERAL)`:<SPACE>
    <SPACE><TAB>(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)<SPACE>

``--add`` and ``--remove`` print nothing more (Kafka 3.9's tool no longer lists afterwards;
``--remove`` asks before deleting unless ``--force``). Kafka prints Scala sets (hash order);
Franz sorts resources and entries. ``--producer``: WRITE, DESCRIBE and
CREATE on the topics, WRITE and DESCRIBE on the transactional ids, IDEMPOTENT_WRITE on the
cluster with ``--idempotent``; ``--consumer``: READ and DESCRIBE on the topics, READ on the
groups. Usage errors are Kafka's messages (exit 1); a broker's refusal is printed as
``Error while executing ACL command: <message>`` (exit 1).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]  # exported, not in __all__
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from franz.admin.client import java_error_text, java_exception_class, make_admin, wait
from franz.admin.options import ToolError, add_connection_options, client_config
from franz.admin.wire import connect
from franz.admin.wire_security import WireSecurity
from franz.errors import ErrorCode
from franz.security import acl as model
from franz.security.authorizer import SUPPORTED_OPERATIONS
from franz.security.principal import KafkaPrincipal

__all__ = ["add_arguments", "run"]

Pattern = tuple[model.ResourceType, str, model.PatternType]
#: DescribeAcls (API key 29) and the highest version the tool sends.
_DESCRIBE_ACLS = 29
_DESCRIBE_ACLS_VERSION = 3
Entry = model.AccessControlEntry


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--add", action="store_true", help="Indicates you are trying to add ACLs.")
    actions.add_argument(
        "--remove", action="store_true", help="Indicates you are trying to remove ACLs."
    )
    actions.add_argument(
        "--list", action="store_true", help="List ACLs for the specified resource."
    )
    parser.add_argument("--topic", action="append", default=[], help="topic (* for all)")
    parser.add_argument("--group", action="append", default=[], help="consumer group (* for all)")
    parser.add_argument("--cluster", action="store_true", help="Add/Remove cluster ACLs.")
    parser.add_argument(
        "--transactional-id", action="append", default=[], help="transactional id (* for all)"
    )
    parser.add_argument(
        "--resource-pattern-type",
        default="LITERAL",
        help="LITERAL (default), PREFIXED; for --list and --remove also ANY and MATCH",
    )
    parser.add_argument("--operation", action="append", default=[], help="default All")
    parser.add_argument("--allow-principal", action="append", default=[])
    parser.add_argument("--deny-principal", action="append", default=[])
    parser.add_argument("--allow-host", action="append", default=[])
    parser.add_argument("--deny-host", action="append", default=[])
    parser.add_argument("--principal", action="append", default=[], help="with --list")
    parser.add_argument("--producer", action="store_true", help="ACLs for the producer role")
    parser.add_argument("--consumer", action="store_true", help="ACLs for the consumer role")
    parser.add_argument(
        "--idempotent", action="store_true", help="with --producer: IDEMPOTENT_WRITE on the cluster"
    )
    parser.add_argument("--force", action="store_true", help="Assume Yes to all queries.")


# -- options -> patterns and entries (AclCommand.getResourceFilter, getAcl) -----------------


def _check(args: argparse.Namespace) -> None:
    if sum((args.add, args.remove, args.list)) != 1:
        raise ToolError("Command must include exactly one action: --list, --add, --remove. ")
    if args.list:
        for flag in (
            "producer",
            "consumer",
            "allow_host",
            "allow_principal",
            "deny_host",
            "deny_principal",
        ):
            if getattr(args, flag):
                raise ToolError(
                    f'Option "[list]" can\'t be used with option "[{flag.replace("_", "-")}]"'
                )
    elif args.principal:
        raise ToolError('Option "[principal]" can only be used with option "[list]"')
    for role in ("producer", "consumer"):
        if getattr(args, role) and (args.operation or args.deny_principal or args.deny_host):
            raise ToolError(
                f'Option "[{role}]" can\'t be used with option "[operation]", '
                '"[deny-principal]" or "[deny-host]"'
            )
    if args.producer and not (args.topic or args.transactional_id):
        raise ToolError("With --producer you must specify a --topic")
    if args.idempotent and not args.producer:
        raise ToolError("The --idempotent option is only available if --producer is set")
    if args.consumer and (not args.topic or not args.group or (not args.producer and args.cluster)):
        raise ToolError(
            "With --consumer you must specify a --topic and a --group and no --cluster option "
            "should be specified."
        )


def _pattern_type(args: argparse.Namespace) -> model.PatternType:
    try:
        kind = model.parse_camel_name(model.PatternType, args.resource_pattern_type)
    except ValueError:
        raise ToolError(f"Invalid resource pattern type: {args.resource_pattern_type}") from None
    if args.add and not kind.is_specific:
        raise ToolError(
            f"A '--resource-pattern-type' value of '{kind.name}' is not valid when adding acls."
        )
    if kind == model.PatternType.UNKNOWN:
        raise ToolError(f"Invalid resource pattern type: {args.resource_pattern_type}")
    return kind


def _resources(args: argparse.Namespace, required: bool = True) -> list[Pattern]:
    kind = _pattern_type(args)
    found: list[Pattern] = [(model.ResourceType.TOPIC, t.strip(), kind) for t in args.topic]
    if args.cluster:
        found.append((model.ResourceType.CLUSTER, model.CLUSTER_NAME, kind))
    found += [(model.ResourceType.GROUP, g.strip(), kind) for g in args.group]
    found += [(model.ResourceType.TRANSACTIONAL_ID, t.strip(), kind) for t in args.transactional_id]
    if not found and required:
        raise ToolError(
            "You must provide at least one resource: --topic <topic> or --cluster or "
            "--group <group> or --transactional-id <transactionalId>"
        )
    return list(dict.fromkeys(found))


def _principals(values: Iterable[str]) -> list[str]:
    out = []
    for value in values:
        try:
            out.append(str(KafkaPrincipal.parse(value.strip())))
        except ValueError as exc:
            raise ToolError(str(exc)) from None
    return out


def _entries(args: argparse.Namespace, operations: Iterable[model.AclOperation]) -> set[Entry]:
    allow_hosts = [h.strip() for h in args.allow_host] or ["*"]
    deny_hosts = [h.strip() for h in args.deny_host] or ["*"]
    ops = list(operations)
    entries: set[Entry] = set()
    for principals, hosts, permission in (
        (_principals(args.allow_principal), allow_hosts, model.AclPermissionType.ALLOW),
        (_principals(args.deny_principal), deny_hosts, model.AclPermissionType.DENY),
    ):
        entries |= {Entry(p, h, op, permission) for p in principals for h in hosts for op in ops}
    return entries


def _operations(args: argparse.Namespace) -> list[model.AclOperation]:
    names = args.operation or ["All"]
    try:
        return [model.parse_camel_name(model.AclOperation, n.strip()) for n in names]
    except ValueError as exc:
        raise ToolError(str(exc)) from None


def _resource_to_entries(args: argparse.Namespace) -> dict[Pattern, set[Entry]]:
    """``AclCommand.getResourceToAcls``: the CLI's operations, or the roles' sets."""
    resources = _resources(args)
    out: dict[Pattern, set[Entry]] = {}
    O, T = model.AclOperation, model.ResourceType  # noqa: E741
    if not args.producer and not args.consumer:
        entries = _entries(args, _operations(args))
        out = {r: set(entries) for r in resources}
    if args.producer:
        for r in resources:
            if r[0] == T.TOPIC:
                out.setdefault(r, set()).update(_entries(args, (O.WRITE, O.DESCRIBE, O.CREATE)))
            elif r[0] == T.TRANSACTIONAL_ID:
                out.setdefault(r, set()).update(_entries(args, (O.WRITE, O.DESCRIBE)))
        if args.idempotent:
            cluster = (T.CLUSTER, model.CLUSTER_NAME, model.PatternType.LITERAL)
            out.setdefault(cluster, set()).update(_entries(args, (O.IDEMPOTENT_WRITE,)))
    if args.consumer:
        for r in resources:
            if r[0] == T.TOPIC:
                out.setdefault(r, set()).update(_entries(args, (O.READ, O.DESCRIBE)))
            elif r[0] == T.GROUP:
                out.setdefault(r, set()).update(_entries(args, (O.READ,)))
    for (kind, _, _), entries in out.items():
        valid = {*SUPPORTED_OPERATIONS.get(kind, ()), O.ALL}
        if any(e.operation not in valid for e in entries):
            names = ",".join(op.name for op in sorted(valid))
            raise ToolError(f"ResourceType {kind.name} only supports operations {names}")
    return out


# -- printing ----------------------------------------------------------------------------


def _pattern_text(pattern: Pattern) -> str:
    return str(model.ResourcePattern(*pattern))


def _print_block(title: str, pattern: Pattern, entries: Iterable[Entry]) -> None:
    lines = "\n".join(f"\t{e}" for e in sorted(entries))
    print(f"{title} `{_pattern_text(pattern)}`: \n {lines} \n")


# -- the admin client --------------------------------------------------------------------


def _to_binding(pattern: Pattern, entry: Entry) -> AclBinding:
    return AclBinding(
        ResourceType(int(pattern[0])),
        pattern[1],
        ResourcePatternType(int(pattern[2])),
        entry.principal,
        entry.host,
        AclOperation(int(entry.operation)),
        AclPermissionType(int(entry.permission_type)),
    )


def _filter(pattern: Pattern | None, entry: Entry | None = None) -> AclBindingFilter:
    # None matches anything (librdkafka's filters take None; its stubs say str).
    return AclBindingFilter(
        ResourceType(int(pattern[0])) if pattern else ResourceType.ANY,
        pattern[1] if pattern else None,  # type: ignore[arg-type]
        ResourcePatternType(int(pattern[2])) if pattern else ResourcePatternType.ANY,
        entry.principal if entry else None,  # type: ignore[arg-type]
        entry.host if entry else None,  # type: ignore[arg-type]
        AclOperation(int(entry.operation)) if entry else AclOperation.ANY,
        AclPermissionType(int(entry.permission_type)) if entry else AclPermissionType.ANY,
    )


def _describe(args: argparse.Namespace, patterns: list[Pattern]) -> dict[Pattern, set[Entry]]:
    """DescribeAcls for each pattern (none: every ACL), over ``franz.admin.wire``:
    librdkafka drops DescribeAcls' top-level error (CLUSTER_AUTHORIZATION_FAILED,
    SECURITY_DISABLED) and answers an empty list, where Kafka's tool reports the error."""
    found: dict[Pattern, set[Entry]] = {}
    address = args.bootstrap_server.split(",")[0]
    security = WireSecurity.from_config(client_config(args))
    try:
        with connect(address, args.timeout_ms / 1000, "franz-acls", security) as conn:
            wanted: list[Pattern | None] = [*patterns] if patterns else [None]
            for pattern in wanted:
                response = conn.request(
                    _DESCRIBE_ACLS, _filter_fields(pattern), max_version=_DESCRIBE_ACLS_VERSION
                )
                code = ErrorCode(int(response.error_code))
                if code != ErrorCode.NONE:
                    raise _BrokerError(
                        f"{java_exception_class(code)}: {response.error_message or code.message}"
                    )
                for resource in response.resources:
                    key = (
                        model.ResourceType(int(resource.resource_type)),
                        resource.resource_name,
                        model.PatternType(int(resource.pattern_type)),
                    )
                    for acl in resource.acls:
                        found.setdefault(key, set()).add(
                            Entry(
                                acl.principal,
                                acl.host,
                                model.AclOperation(int(acl.operation)),
                                model.AclPermissionType(int(acl.permission_type)),
                            )
                        )
    except OSError as exc:
        raise ToolError(f"could not list ACLs at {address}: {exc}") from exc
    return found


def _filter_fields(pattern: Pattern | None) -> dict[str, Any]:
    return {
        "resource_type_filter": int(pattern[0]) if pattern else int(model.ResourceType.ANY),
        "resource_name_filter": pattern[1] if pattern else None,
        "pattern_type_filter": int(pattern[2]) if pattern else int(model.PatternType.ANY),
        "principal_filter": None,
        "host_filter": None,
        "operation": int(model.AclOperation.ANY),
        "permission_type": int(model.AclPermissionType.ANY),
    }


class _BrokerError(Exception):
    """A broker's refusal: ``Error while executing ACL command: <message>``."""


def _list(args: argparse.Namespace) -> None:
    resources = _resources(args, required=False)
    found = _describe(args, resources)
    principals = _principals(args.principal)
    if not principals:
        for pattern in sorted(found):
            _print_block("Current ACLs for resource", pattern, found[pattern])
        return
    for principal in principals:
        print(f"ACLs for principal `{principal}`")
        for pattern in sorted(found):
            mine = {e for e in found[pattern] if e.principal == principal}
            if mine:
                _print_block("Current ACLs for resource", pattern, mine)


def _confirm(args: argparse.Namespace, message: str) -> bool:
    if args.force:
        return True
    print(message)
    return sys.stdin.readline().strip().lower() == "y"


def run(args: argparse.Namespace) -> int:
    _check(args)
    admin = make_admin(args)
    try:
        if args.list:
            _list(args)
            return 0
        if args.add:
            plan = _resource_to_entries(args)
            if any(not entries for entries in plan.values()):
                raise ToolError(
                    "You must specify one of: --allow-principal, --deny-principal when trying "
                    "to add ACLs."
                )
            for pattern in sorted(plan):
                _print_block("Adding ACLs for resource", pattern, plan[pattern])
                bindings = [_to_binding(pattern, e) for e in sorted(plan[pattern])]
                for future in admin.create_acls(bindings).values():
                    wait(future, args)
        else:
            plan = _resource_to_entries(args)
            for pattern in sorted(plan):
                entries = sorted(plan[pattern])
                text = (
                    f"ResourcePatternFilter(resourceType={pattern[0].name}, name={pattern[1]}, "
                    f"patternType={pattern[2].name})"
                )
                if not entries:
                    ok = _confirm(
                        args,
                        "Are you sure you want to delete all ACLs for resource filter "
                        f"`{text}`? (y/n)",
                    )
                    filters = [_filter(pattern)]
                else:
                    lines = "\n".join(f"\t{e}" for e in entries)
                    ok = _confirm(
                        args,
                        f"Are you sure you want to remove ACLs: \n {lines} \n from resource "
                        f"filter `{text}`? (y/n)",
                    )
                    filters = [_filter(pattern, e) for e in entries]
                if ok:
                    for future in admin.delete_acls(filters).values():
                        wait(future, args)
    except KafkaException as exc:
        print(f"Error while executing ACL command: {java_error_text(exc)}")
        return 1
    except _BrokerError as exc:
        print(f"Error while executing ACL command: {exc}")
        return 1
    return 0
