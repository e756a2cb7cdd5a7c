"""``franz configs --entity-type users|clients``: client quota configs, as Kafka 3.9's
``ConfigCommand`` with ``--bootstrap-server`` (``describeClientQuotaAndUserScramCredentialConfigs``,
``alterQuotaConfigs``), called from ``franz.cli.tools.configs``.

    franz configs --bootstrap-server HOST:PORT --entity-type clients --entity-name x
                  --alter --add-config 'producer_byte_rate=1048576,consumer_byte_rate=2097152'
    franz configs ... --entity-type users --entity-name u --entity-type clients --entity-default
                  --alter --delete-config request_percentage
    franz configs ... --entity-type users [--entity-name u | --entity-default] --describe

Entity types and names pair up in the order given (``users`` then ``clients``, or the
reverse, for a (user, client-id) entity); no name means every named or default entity of
that type (describe only). Describe asks DescribeClientQuotas with ``strict`` (Kafka's
``ClientQuotaFilter.containsOnly``) and prints one line per entity::

    Quota configs for client-id 'x' are producer_byte_rate=1048576.0, consumer_byte_rate=...
    Quota configs for user-principal 'u', the default client-id are request_percentage=50.0

values as Java doubles, keys in Java's ``HashMap`` order. Alter reads the entity's quotas
first ("Invalid config(s): k" for a deleted key that is not set), sends AlterClientQuotas
and prints ``Completed updating config for client x.`` (``user`` when a user comes first;
``Completed updating default config for clients in the cluster.`` for a default). Only the
quota keys are handled here; a user's SCRAM credentials (``SCRAM-SHA-256=[...]``) belong
to the SCRAM code, and are refused here with Kafka's message when given for a client.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any, Final

from franz.admin.client_quotas import (
    MATCH_DEFAULT,
    MATCH_EXACT,
    MATCH_SPECIFIED,
    Entity,
    QuotaEntry,
    alter_client_quotas,
    describe_client_quotas,
)
from franz.admin.java_order import hash_order, string_hash
from franz.admin.options import ToolError, client_config
from franz.admin.topics import parse_add_config
from franz.admin.wire_security import WireSecurity
from franz.security.client_quota import java_double

__all__ = ["QUOTA_ENTITY_TYPES", "EntityAction", "entity_types_and_names", "handles", "run"]

#: ``ConfigType.USER`` / ``ConfigType.CLIENT`` -> ``ClientQuotaEntity`` types.
QUOTA_ENTITY_TYPES: Final = {"users": "user", "clients": "client-id"}
#: ``QuotaConfigs.isClientOrUserQuotaConfig``.
QUOTA_KEYS: Final = frozenset(
    {"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}
)
_LABEL: Final = {"user": "user-principal", "client-id": "client-id"}


class EntityAction(argparse.Action):
    """``--entity-type`` / ``--entity-name`` / ``--entity-default``, each repeatable: the
    order given is kept in ``entity_order`` (type and name pair up by position, Kafka's
    ``entityTypes`` and ``entityNames``); the first of each also sets the plain attribute
    the topic and broker code reads."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        order: list[tuple[str, str]] = list(getattr(namespace, "entity_order", None) or [])
        if self.dest == "entity_default":
            order.append(("name", ""))
            namespace.entity_default = True
        else:
            value = str(values)
            order.append(("type" if self.dest == "entity_type" else "name", value))
            if getattr(namespace, self.dest, None) is None:
                setattr(namespace, self.dest, value)
        namespace.entity_order = order


def _types_and_names(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    order = getattr(args, "entity_order", None) or []
    return [v for k, v in order if k == "type"], [v for k, v in order if k == "name"]


def entity_types_and_names(args: argparse.Namespace) -> tuple[list[str], list[str]]:
    """The entity types and names given, in order (``--entity-default`` is the name "")."""
    return _types_and_names(args)


def handles(args: argparse.Namespace) -> bool:
    """Whether the command names a quota entity type (users, clients)."""
    types, _ = _types_and_names(args)
    return any(t in QUOTA_ENTITY_TYPES for t in types)


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    types, names = _types_and_names(args)
    if len(set(types)) != len(types):
        parser.error(f"Duplicate entity type(s) specified: {','.join(types)}")
    if len(types) > 1 and set(types) != {"users", "clients"}:
        parser.error("Only 'users' and 'clients' entity types may be specified together")
    if len(names) > len(types):
        parser.error("More entity names specified than entity types")
    if args.all:
        parser.error("option --all applies to --entity-type topics and brokers only")
    if args.describe:
        for option in ("add_config", "add_config_file", "delete_config"):
            if getattr(args, option):
                parser.error(f"option --{option.replace('_', '-')} requires --alter")
        return
    if len(names) != len(types):
        parser.error(
            "an entity name must be specified with --alter of "
            + ", ".join(t for t in types[len(names) :])
        )
    if args.add_config_file:
        parser.error("--add-config-file is not supported for quota configs")
    if not (args.add_config or args.delete_config):
        parser.error(
            "At least one of --add-config, --add-config-file, or --delete-config must be "
            "specified with --alter"
        )


def run(args: argparse.Namespace) -> int:
    _check(args._parser, args)
    types, names = _types_and_names(args)
    config = client_config(args)
    # librdkafka has no quota APIs: they go over franz.admin.wire, secured as
    # --command-config says (TLS, SASL PLAIN or SCRAM).
    security = WireSecurity.from_config(config)
    address = args.bootstrap_server.split(",")[0].strip()
    client_id = str(config.get("client.id", "franz-admin"))
    timeout_s = args.timeout_ms / 1000
    if args.describe:
        _describe(
            address, types, names, timeout_s=timeout_s, client_id=client_id, security=security
        )
    else:
        _alter(
            args,
            address,
            types,
            names,
            timeout_s=timeout_s,
            client_id=client_id,
            security=security,
        )
    return 0


def _components(types: list[str], names: list[str]) -> list[tuple[str, int, str | None]]:
    out: list[tuple[str, int, str | None]] = []
    for i, entity_type in enumerate(types):
        kind = QUOTA_ENTITY_TYPES[entity_type]
        if i >= len(names):
            out.append((kind, MATCH_SPECIFIED, None))
        elif names[i] == "":
            out.append((kind, MATCH_DEFAULT, None))
        else:
            out.append((kind, MATCH_EXACT, names[i]))
    return out


def _entity_text(entity: Entity) -> str:
    parts = dict(entity)
    texts = []
    for kind in ("user", "client-id"):
        if kind in parts:
            name = parts[kind]
            texts.append(
                f"{_LABEL[kind]} '{name}'" if name is not None else f"the default {_LABEL[kind]}"
            )
    return ", ".join(texts)


def _entity_hash(entry: QuotaEntry) -> int:
    """``ClientQuotaEntity.hashCode``: its ``HashMap<String, String>``'s (the entry hashes,
    key hash XOR value hash, a null value 0, summed)."""
    total = 0
    for kind, name in entry.entity:
        total += string_hash(kind) ^ (string_hash(name) if name is not None else 0)
    return total & 0xFFFFFFFF


def _describe(
    address: str,
    types: list[str],
    names: list[str],
    *,
    timeout_s: float,
    client_id: str,
    security: WireSecurity,
) -> None:
    entries = describe_client_quotas(
        address,
        _components(types, names),
        strict=True,
        timeout_s=timeout_s,
        client_id=client_id,
        security=security,
    )
    # The Java AdminClient's ``HashMap``s, sized by the response's lists (its
    # ``DescribeClientQuotasResponse.parseResult``), in the broker's order.
    for entry in hash_order(entries, _entity_hash, initial_capacity=len(entries)):
        keys = hash_order(list(entry.values), string_hash, initial_capacity=len(entry.values))
        values = ", ".join(f"{k}={java_double(entry.values[k])}" for k in keys)
        print(f"Quota configs for {_entity_text(entry.entity)} are {values}")


def _alter(
    args: argparse.Namespace,
    address: str,
    types: list[str],
    names: list[str],
    *,
    timeout_s: float,
    client_id: str,
    security: WireSecurity,
) -> None:
    to_set = parse_add_config(args.add_config) if args.add_config else {}
    to_delete = [
        key.strip() for item in args.delete_config or [] for key in item.split(",") if key.strip()
    ]
    unknown_add = [k for k in to_set if k not in QUOTA_KEYS]
    unknown_delete = [k for k in to_delete if k not in QUOTA_KEYS]
    kind = "client" if types[0] == "clients" or len(types) == 2 else "user"
    if unknown_add:
        raise ToolError(
            f"Only quota configs can be added for '{kind}' using --bootstrap-server. "
            f"Unexpected config names: Set({', '.join(unknown_add)})"
        )
    if unknown_delete:
        raise ToolError(
            f"Only quota configs can be deleted for '{kind}' using --bootstrap-server. "
            f"Unexpected config names: Set({', '.join(unknown_delete)})"
        )
    entity: Entity = tuple(
        (QUOTA_ENTITY_TYPES[t], n if n else None) for t, n in zip(types, names, strict=True)
    )
    current = describe_client_quotas(
        address,
        _components(types, names),
        strict=True,
        timeout_s=timeout_s,
        client_id=client_id,
        security=security,
    )
    old = {key for entry in current for key in entry.values}
    missing = [key for key in to_delete if key not in old]
    if missing:
        raise ToolError(f"Invalid config(s): {','.join(missing)}")
    ops: dict[str, float | None] = {}
    for key, value in to_set.items():
        try:
            ops[key] = float(value)
        except ValueError:
            raise ToolError(f"Cannot parse quota configuration value for {key}: {value}") from None
    for key in to_delete:
        ops[key] = None
    [(_, code, message)] = alter_client_quotas(
        address, [(entity, ops)], timeout_s=timeout_s, client_id=client_id, security=security
    )
    if code != 0:
        raise ToolError(f"Error while executing config command with args: {message}")
    if names[0]:
        print(f"Completed updating config for {types[0][:-1]} {names[0]}.")
    else:
        print(f"Completed updating default config for {types[0]} in the cluster.")
