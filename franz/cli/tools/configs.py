"""Describe or alter topic and broker configs (Kafka's ``kafka-configs.sh``).

    franz configs --bootstrap-server HOST:PORT --entity-type topics|brokers
                  [--entity-name NAME | --entity-default] --describe [--all]
    franz configs --bootstrap-server HOST:PORT --entity-type topics|brokers
                  [--entity-name NAME | --entity-default] --alter
                  [--add-config k1=v1,k2=[v1,v2] | --add-config-file FILE] [--delete-config k1,k2]

--describe prints, per entity, ``Dynamic configs for topic T are:`` (``All configs ...``
with --all; ``Default configs for brokers in the cluster are:`` for --entity-default) then
one line per config, sorted by name::

      retention.ms=1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000, ...}

Without --entity-name it describes every topic, or every broker then the cluster default.
Without --all only the configs set dynamically on that entity are listed. --alter sets and
deletes configs with IncrementalAlterConfigs (SET, DELETE) and prints ``Completed updating
config for topic T.``; deleting a config that is not set is an error ("Invalid config(s)"),
as in Kafka. Square brackets group a value that holds commas (``k=[a,b]``).
``--entity-type brokers --entity-default --alter`` changes the cluster-wide dynamic broker
defaults and prints ``Completed updating default config for brokers in the cluster.``;
librdkafka cannot address that resource (name ``""``), so the request goes on the wire
(``franz.admin.configs_wire``, secured as ``--command-config`` says).
"""

from __future__ import annotations

import argparse

from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import AlterConfigOpType, ConfigEntry, ConfigResource

from franz.admin.client import check_reachable, make_admin, result
from franz.admin.configs_wire import (
    RESOURCE_BROKER,
    RESOURCE_TOPIC,
    ConfigInfo,
    incremental_alter_configs,
)
from franz.admin.options import (
    ToolError,
    add_connection_options,
    client_config,
    properties_file,
)
from franz.admin.topics import (
    config_line,
    configs_header,
    describe_resource_configs,
    parse_add_config,
)
from franz.admin.wire_security import WireSecurity
from franz.cli.tools import quota_configs, user_scram_configs
from franz.cli.tools.quota_configs import QUOTA_ENTITY_TYPES, EntityAction

__all__ = ["add_arguments", "run"]

_RESOURCE = {"topics": RESOURCE_TOPIC, "brokers": RESOURCE_BROKER}
#: entity type -> the source of configs set on that entity (default entity for brokers: "")
_DYNAMIC_SOURCE = {
    ("topics", False): "DYNAMIC_TOPIC_CONFIG",
    ("brokers", False): "DYNAMIC_BROKER_CONFIG",
    ("brokers", True): "DYNAMIC_DEFAULT_BROKER_CONFIG",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_connection_options(parser)
    actions = parser.add_mutually_exclusive_group(required=True)
    actions.add_argument("--describe", action="store_true", help="List configs for the entity.")
    actions.add_argument(
        "--alter", action="store_true", help="Alter the configuration for the entity."
    )
    # Repeatable, in order, for (user, client-id) quota entities (franz.cli.tools.quota_configs).
    parser.add_argument(
        "--entity-type",
        required=True,
        choices=sorted([*_RESOURCE, *QUOTA_ENTITY_TYPES]),
        action=EntityAction,
        help="type of entity (topics/brokers/users/clients)",
    )
    parser.add_argument(
        "--entity-name",
        action=EntityAction,
        help="name of entity (topic name / broker id / user principal name / client id)",
    )
    parser.add_argument(
        "--entity-default",
        nargs=0,
        default=False,
        action=EntityAction,
        help="the default entity (brokers: the cluster-wide default; users, clients)",
    )
    parser.add_argument(
        "--all", action="store_true", help="describe: all configs, not only dynamic ones"
    )
    parser.add_argument(
        "--add-config",
        metavar="k1=v1,k2=[v1,v2]",
        help="configs to set; square brackets group values that contain commas",
    )
    parser.add_argument(
        "--add-config-file", metavar="FILE", help="a properties file of configs to set"
    )
    parser.add_argument(
        "--delete-config",
        action="append",
        metavar="k1,k2",
        help="config names to remove (repeatable, comma-separated)",
    )
    parser.set_defaults(_parser=parser)


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Kafka's ``ConfigCommandOptions.checkArgs`` for topics and brokers."""
    if len(getattr(args, "entity_order", None) or []) > 2 or (
        args.entity_default and args.entity_name is not None
    ):
        parser.error("argument --entity-default: not allowed with argument --entity-name")
    if args.entity_default and args.entity_type != "brokers":
        parser.error("--entity-default applies to --entity-type brokers only")
    if args.entity_type == "brokers" and args.entity_name is not None:
        try:
            int(args.entity_name)
        except ValueError:
            parser.error(
                "The entity name for brokers must be a valid integer broker id, but it is: "
                + args.entity_name
            )
    if args.describe:
        for option in ("add_config", "add_config_file", "delete_config"):
            if getattr(args, option):
                parser.error(f"option --{option.replace('_', '-')} requires --alter")
        return
    if args.all:
        parser.error("option --all requires --describe")
    if args.entity_name is None and not args.entity_default:
        if args.entity_type == "topics":
            parser.error("an entity name must be specified with --alter of topics")
        parser.error("an entity-name or default entity must be specified with --alter of brokers")
    if args.add_config and args.add_config_file:
        parser.error("Only one of --add-config or --add-config-file must be specified")
    if not (args.add_config or args.add_config_file or args.delete_config):
        parser.error(
            "At least one of --add-config, --add-config-file, or --delete-config must be "
            "specified with --alter"
        )


def _run_users_and_clients(args: argparse.Namespace) -> int:
    """Users and clients (Kafka's ``ConfigCommand`` for ``ConfigType.USER``/``CLIENT``): quota
    configs (``franz.cli.tools.quota_configs``) and, for users alone, SCRAM credentials
    (``franz.cli.tools.user_scram_configs``). ``--describe`` of users without
    ``--entity-default`` prints both, as Kafka's
    ``describeClientQuotaAndUserScramCredentialConfigs``. An ``--alter`` names SCRAM
    credentials or quota configs; both in one command is refused (Franz's: Kafka sends the two
    alterations one after the other)."""
    types, names = quota_configs.entity_types_and_names(args)
    users_only = types == ["users"]
    if users_only and not args.describe:
        keys = user_scram_configs.config_keys(args)
        scram = [k for k in keys if user_scram_configs.is_scram_key(k)]
        if scram and len(scram) < len(keys):
            raise ToolError(
                "SCRAM credentials and quota configs cannot be altered in one command: "
                "give them in two"
            )
        if scram:
            return user_scram_configs.run_users(args)
    scram_too = args.describe and users_only and "" not in names
    code = quota_configs.run(args)
    if scram_too:
        user_scram_configs.describe_users(args)
    return code


def run(args: argparse.Namespace) -> int:
    if quota_configs.handles(args):
        return _run_users_and_clients(args)
    check_args(args._parser, args)
    admin = make_admin(args)
    metadata = check_reachable(admin, args)
    if args.describe:
        _describe(admin, args, metadata)
    else:
        _alter(admin, args, metadata)
    return 0


def _entity_names(admin: AdminClient, args: argparse.Namespace, metadata: object) -> list[str]:
    if args.entity_default:
        return [""]
    if args.entity_name is not None:
        return [args.entity_name]
    if args.entity_type == "topics":
        return sorted(metadata.topics)  # type: ignore[attr-defined]
    nodes = result(admin.describe_cluster(), args).nodes
    return [str(node.id) for node in sorted(nodes, key=lambda n: n.id)] + [""]


def _listed(
    admin: AdminClient,
    args: argparse.Namespace,
    metadata: object,
    name: str,
    *,
    describe_all: bool,
    include_synonyms: bool,
) -> list[ConfigInfo]:
    """Kafka's ``getResourceConfig``: the entity's dynamic configs (all with --all), by name."""
    entries = describe_resource_configs(
        admin,
        args,
        metadata,
        _RESOURCE[args.entity_type],
        name,
        include_synonyms=include_synonyms,
    )
    if not describe_all:
        source = _DYNAMIC_SOURCE[(args.entity_type, name == "")]
        entries = [e for e in entries if e.source == source]
    return sorted(entries, key=lambda e: e.name)


def _describe(admin: AdminClient, args: argparse.Namespace, metadata: object) -> None:
    for name in _entity_names(admin, args, metadata):
        entries = _listed(admin, args, metadata, name, describe_all=args.all, include_synonyms=True)
        print(configs_header(args.entity_type, name, args.all))
        for entry in entries:
            print(config_line(entry))


def _alter(admin: AdminClient, args: argparse.Namespace, metadata: object) -> None:
    name = "" if args.entity_default else args.entity_name
    to_set: dict[str, str] = {}
    if args.add_config:
        to_set = parse_add_config(args.add_config)
    elif args.add_config_file:
        to_set = properties_file(args.add_config_file, "--add-config-file")
    to_delete = [
        key.strip() for item in args.delete_config or [] for key in item.split(",") if key.strip()
    ]
    current = {
        e.name
        for e in _listed(admin, args, metadata, name, describe_all=False, include_synonyms=False)
    }
    missing = [key for key in to_delete if key not in current]
    if missing:
        raise ToolError(f"Invalid config(s): {','.join(missing)}")
    if name == "":
        _alter_default(args, metadata, to_set, to_delete)
        print(f"Completed updating default config for {args.entity_type} in the cluster.")
        return
    ops = [
        ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
        for key, value in to_set.items()
    ] + [ConfigEntry(key, "", incremental_operation=AlterConfigOpType.DELETE) for key in to_delete]
    resource = ConfigResource(_RESOURCE[args.entity_type], name, incremental_configs=ops)
    for future in admin.incremental_alter_configs([resource]).values():
        result(future, args)
    if name:
        print(f"Completed updating config for {args.entity_type[:-1]} {name}.")
    else:
        print(f"Completed updating default config for {args.entity_type} in the cluster.")


def _alter_default(
    args: argparse.Namespace, metadata: object, to_set: dict[str, str], to_delete: list[str]
) -> None:
    """IncrementalAlterConfigs of the BROKER resource ``""`` on the wire (any broker)."""
    config = client_config(args)
    brokers = metadata.brokers  # type: ignore[attr-defined]
    broker = brokers[min(brokers)]
    incremental_alter_configs(
        f"{broker.host}:{broker.port}",
        RESOURCE_BROKER,
        "",
        to_set,
        to_delete,
        timeout_s=args.timeout_ms / 1000,
        client_id=str(config.get("client.id", "franz-admin")),
        security=WireSecurity.from_config(config),
    )
