"""``franz configs --entity-type users``: SCRAM credentials, as Kafka 3.9's
``kafka-configs.sh`` (``ConfigCommand.alterUserScramCredentialConfigs`` and
``describeClientQuotaAndUserScramCredentialConfigs``), through AlterUserScramCredentials and
DescribeUserScramCredentials (KIP-554).

    franz configs --bootstrap-server H:P --entity-type users --entity-name alice --alter
        --add-config 'SCRAM-SHA-256=[iterations=8192,password=a-secret],SCRAM-SHA-512=[password=s]'
    franz configs --bootstrap-server H:P --entity-type users --entity-name alice --alter
        --delete-config SCRAM-SHA-512
    franz configs --bootstrap-server H:P --entity-type users [--entity-name alice] --describe

A credential value is ``[iterations=<n>,]password=<p>`` (Kafka's pattern
``(?:iterations=(-?[0-9]*),)?password=(.*)``: everything after ``password=`` is the password;
iterations absent or -1: 4096); fewer iterations than the mechanism's minimum fail with
``Iterations <n> is less than the minimum 4096 required for <m>``. The client salts and hashes
the password (librdkafka's ``alter_user_scram_credentials``): the password never goes on the
wire. ``--alter`` prints ``Completed updating config for user <u>.``; ``--describe`` prints
``SCRAM credential configs for user-principal '<u>' are SCRAM-SHA-256=iterations=8192, ...``
per user with credentials (users without any are left out, as Kafka's ``users()`` drops
RESOURCE_NOT_FOUND). Quota keys on users are not this module's (``--add-config`` here takes
SCRAM keys only; the quota tool adds its own).
"""

from __future__ import annotations

import argparse
import re
from typing import Any, Final

from confluent_kafka import KafkaException
from confluent_kafka.admin._scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from franz.admin.client import make_admin, result
from franz.admin.options import ToolError
from franz.admin.topics import parse_add_config
from franz.errors import ErrorCode

__all__ = ["config_keys", "describe_users", "is_scram_key", "run_users"]

#: ``ConfigCommand.DefaultScramIterations``.
DEFAULT_SCRAM_ITERATIONS: Final = 4096
_MIN_ITERATIONS: Final = 4096
_MECHANISMS: Final = {
    "SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256,
    "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512,
}
_CREDENTIAL: Final = re.compile(r"(?:iterations=(-?[0-9]*),)?password=(.*)", re.S)


def is_scram_key(key: str) -> bool:
    return key in _MECHANISMS


def _iterations_and_password(mechanism: str, value: str) -> tuple[int, bytes]:
    match = _CREDENTIAL.fullmatch(value)
    if match is None:
        # Kafka prints the value; it may hold a password, so Franz leaves it out.
        raise ToolError(f"Invalid credential property {mechanism.replace('-', '_')}=<redacted>")
    raw = match.group(1)
    iterations = DEFAULT_SCRAM_ITERATIONS if raw in (None, "", "-1") else int(raw)
    if iterations < _MIN_ITERATIONS:
        raise ToolError(
            f"Iterations {iterations} is less than the minimum {_MIN_ITERATIONS} required for "
            f"{mechanism}"
        )
    return iterations, match.group(2).encode()


def check_user_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Kafka's ``ConfigCommandOptions.checkArgs`` for users (usage errors: exit code 2)."""
    if args.describe:
        for option in ("add_config", "add_config_file", "delete_config"):
            if getattr(args, option):
                parser.error(f"option --{option.replace('_', '-')} requires --alter")
        return
    if args.all:
        parser.error("option --all requires --describe")
    if args.entity_name is None and not args.entity_default:
        parser.error("an entity-name or default entity must be specified with --alter of users")
    if args.add_config_file:
        parser.error("--add-config-file: SCRAM credentials are given with --add-config")
    if not (args.add_config or args.delete_config):
        parser.error(
            "At least one of --add-config, --add-config-file, or --delete-config must be "
            "specified with --alter"
        )


def config_keys(args: argparse.Namespace) -> list[str]:
    """The config names an ``--alter`` adds or deletes."""
    added = list(parse_add_config(args.add_config)) if args.add_config else []
    deleted = [
        key.strip() for item in args.delete_config or [] for key in item.split(",") if key.strip()
    ]
    return [*added, *deleted]


def describe_users(args: argparse.Namespace) -> None:
    """``SCRAM credential configs for user-principal ...`` lines (after the quota lines)."""
    _describe(make_admin(args), args)


def run_users(args: argparse.Namespace) -> int:
    check_user_args(args._parser, args)
    if args.entity_default:
        raise ToolError(
            "The use of --entity-default or --user-defaults is not allowed with User SCRAM "
            "Credentials using --bootstrap-server."
        )
    admin = make_admin(args)
    if args.describe:
        _describe(admin, args)
        return 0
    to_add = parse_add_config(args.add_config) if args.add_config else {}
    to_delete = [
        key.strip() for item in args.delete_config or [] for key in item.split(",") if key.strip()
    ]
    unknown = [k for k in [*to_add, *to_delete] if not is_scram_key(k)]
    if unknown:
        raise ToolError(
            f"Only SCRAM credential configs (SCRAM-SHA-256, SCRAM-SHA-512) are handled here; "
            f"unexpected config names: {','.join(unknown)}"
        )
    user = args.entity_name
    alterations: list[Any] = [UserScramCredentialDeletion(user, _MECHANISMS[k]) for k in to_delete]
    for key, value in to_add.items():
        iterations, password = _iterations_and_password(key, value)
        alterations.append(
            UserScramCredentialUpsertion(
                user, ScramCredentialInfo(_MECHANISMS[key], iterations), password
            )
        )
    for future in admin.alter_user_scram_credentials(alterations).values():
        result(future, args)
    print(f"Completed updating config for user {user}.")
    return 0


def _describe(admin: Any, args: argparse.Namespace) -> None:
    if args.entity_name is None:
        described = result(admin.describe_user_scram_credentials(), args)
        items = sorted(described.items())
    else:
        futures = admin.describe_user_scram_credentials([args.entity_name])
        items = []
        for user, future in futures.items():
            try:
                items.append((user, future.result(timeout=args.timeout_ms / 1000)))
            except KafkaException as exc:
                if exc.args[0].code() == ErrorCode.RESOURCE_NOT_FOUND:
                    continue
                print(
                    f"Error retrieving SCRAM credential configs for user-principal '{user}': "
                    f"{exc.args[0].str()}"
                )
    for user, description in items:
        text = ", ".join(
            f"{_name(info.mechanism)}=iterations={info.iterations}"
            for info in description.scram_credential_infos
        )
        print(f"SCRAM credential configs for user-principal '{user}' are {text}")


def _name(mechanism: ScramMechanism) -> str:
    for name, value in _MECHANISMS.items():
        if value == mechanism:
            return name
    return str(mechanism)
