"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554) as Kafka 3.9's
``ZkAdminManager.describeUserScramCredentials`` / ``alterUserScramCredentials``, over a
``UserConfigStore``: ZooKeeper's ``/config/users/<sanitized user>`` (read-modify-write on the
znode version, then a ``/config/changes`` notification ``users/<user>``) or the embedded
metadata store's ``users`` entities. Both keep the keys of a user's config they do not own
(quotas).

Errors and messages, as Kafka's:

* describe: an empty name RESOURCE_NOT_FOUND ``Username must not be empty``; a user asked
  twice DUPLICATE_RESOURCE ``Cannot describe SCRAM credentials for the same user twice in a
  single request: <u>``; a user without credentials RESOURCE_NOT_FOUND ``Attempt to describe a
  user credential that does not exist: <u>``; describing all lists users sorted by name.
* alter: an empty name UNACCEPTABLE_CREDENTIAL ``Username must not be empty``; an unknown
  mechanism UNSUPPORTED_SASL_MECHANISM ``Unknown SCRAM mechanism``; iterations below 4096 or
  above 16384 UNACCEPTABLE_CREDENTIAL ``Too few iterations`` / ``Too many iterations``; the
  same (user, mechanism) twice DUPLICATE_RESOURCE ``A user credential cannot be altered twice
  in the same request``; deleting a credential the user lacks RESOURCE_NOT_FOUND ``Attempt to
  delete a user credential that does not exist``. A user with any error is not changed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from franz.errors import ErrorCode
from franz.security.scram import MAX_ITERATIONS, ScramCredential, ScramMechanism

__all__ = ["UserConfigStore", "alter_user_scram_credentials", "describe_user_scram_credentials"]

_EMPTY_USER = "Username must not be empty"
_UNKNOWN_MECHANISM = "Unknown SCRAM mechanism"


class UserConfigStore(Protocol):
    """The users' dynamic configs (``/config/users``)."""

    async def user_configs(self, user: str) -> dict[str, str]: ...

    async def all_user_configs(self) -> dict[str, dict[str, str]]: ...

    async def update_user_configs(
        self, user: str, update: Callable[[dict[str, str]], dict[str, str]]
    ) -> dict[str, str]:
        """Apply ``update`` to the user's current configs and store the result atomically
        (retrying on a concurrent write); returns what was stored."""
        ...


def _credential_infos(configs: Mapping[str, str]) -> list[dict[str, Any]]:
    infos = []
    for mechanism in ScramMechanism:
        value = configs.get(mechanism.mechanism_name)
        if value is not None:
            credential = ScramCredential.from_config_value(value)
            infos.append({"mechanism": mechanism.type_id, "iterations": credential.iterations})
    return infos


async def describe_user_scram_credentials(
    store: UserConfigStore, users: list[str] | None
) -> dict[str, Any]:
    results: dict[str, dict[str, Any]] = {}

    def add(user: str, configs: Mapping[str, str], explicit: bool) -> None:
        try:
            infos = _credential_infos(configs)
        except ValueError as exc:
            results[user] = _user_error(user, ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
            return
        if infos:
            results[user] = {
                "user": user,
                "error_code": ErrorCode.NONE,
                "error_message": None,
                "credential_infos": infos,
            }
        elif explicit:
            results[user] = _user_error(
                user,
                ErrorCode.RESOURCE_NOT_FOUND,
                f"Attempt to describe a user credential that does not exist: {user}",
            )

    if not users:
        for user, configs in (await store.all_user_configs()).items():
            add(user, configs, False)
        ordered = [results[u] for u in sorted(results)]
    else:
        counts = Counter(users)
        for user in counts:
            if not user:
                results[user] = _user_error(user, ErrorCode.RESOURCE_NOT_FOUND, _EMPTY_USER)
            elif counts[user] > 1:
                results[user] = _user_error(
                    user,
                    ErrorCode.DUPLICATE_RESOURCE,
                    "Cannot describe SCRAM credentials for the same user twice in a single "
                    f"request: {user}",
                )
            else:
                add(user, await store.user_configs(user), True)
        ordered = [results[u] for u in dict.fromkeys(users)]
    return {
        "throttle_time": 0,
        "error_code": ErrorCode.NONE,
        "error_message": None,
        "results": ordered,
    }


def _user_error(user: str, code: ErrorCode, message: str) -> dict[str, Any]:
    return {"user": user, "error_code": code, "error_message": message, "credential_infos": []}


async def alter_user_scram_credentials(
    store: UserConfigStore,
    upsertions: list[Any],
    deletions: list[Any],
) -> list[dict[str, Any]]:
    """The results, one per user (``ZkAdminManager``'s order: the illegal requests, the
    duplicates, the missing deletions, then the altered users)."""
    results: list[dict[str, Any]] = []
    illegal: dict[str, str] = {}
    for deletion in deletions:
        if not deletion.name:
            illegal[deletion.name] = _EMPTY_USER
        elif ScramMechanism.for_type(int(deletion.mechanism)) is None:
            illegal[deletion.name] = _UNKNOWN_MECHANISM
    for upsertion in upsertions:
        mechanism = ScramMechanism.for_type(int(upsertion.mechanism))
        if not upsertion.name:
            illegal[upsertion.name] = _EMPTY_USER
        elif mechanism is None:
            illegal[upsertion.name] = _UNKNOWN_MECHANISM
        elif upsertion.iterations > MAX_ITERATIONS:
            illegal[upsertion.name] = "Too many iterations"
        elif upsertion.iterations < mechanism.min_iterations:
            illegal[upsertion.name] = "Too few iterations"
    for user, message in illegal.items():
        code = (
            ErrorCode.UNSUPPORTED_SASL_MECHANISM
            if message == _UNKNOWN_MECHANISM
            else ErrorCode.UNACCEPTABLE_CREDENTIAL
        )
        results.append({"user": user, "error_code": code, "error_message": message})
    pairs = [
        (item.name, int(item.mechanism))
        for item in [*upsertions, *deletions]
        if item.name not in illegal
    ]
    duplicated = {user for (user, _), n in Counter(pairs).items() if n > 1}
    for user in dict.fromkeys(u for u, _ in pairs if u in duplicated):
        results.append(
            {
                "user": user,
                "error_code": ErrorCode.DUPLICATE_RESOURCE,
                "error_message": "A user credential cannot be altered twice in the same request",
            }
        )
    candidates = list(dict.fromkeys(u for u, _ in pairs if u not in duplicated))
    current = {user: await store.user_configs(user) for user in candidates}
    missing = {
        d.name
        for d in deletions
        if d.name in current and current[d.name].get(_name(int(d.mechanism))) is None
    }
    for user in (u for u in candidates if u in missing):
        results.append(
            {
                "user": user,
                "error_code": ErrorCode.RESOURCE_NOT_FOUND,
                "error_message": "Attempt to delete a user credential that does not exist",
            }
        )
    for user in (u for u in candidates if u not in missing):
        changes: dict[str, str | None] = {}
        for d in deletions:
            if d.name == user:
                changes[_name(int(d.mechanism))] = None
        for u in upsertions:
            if u.name == user:
                mechanism = ScramMechanism.for_type(int(u.mechanism))
                assert mechanism is not None
                credential = ScramCredential.from_salted_password(
                    mechanism, bytes(u.salt), bytes(u.salted_password), int(u.iterations)
                )
                changes[mechanism.mechanism_name] = credential.to_config_value()

        def apply(
            configs: dict[str, str], changes: dict[str, str | None] = changes
        ) -> dict[str, str]:
            out = dict(configs)
            for key, value in changes.items():
                if value is None:
                    out.pop(key, None)
                else:
                    out[key] = value
            return out

        try:
            await store.update_user_configs(user, apply)
        except Exception as exc:
            results.append(
                {
                    "user": user,
                    "error_code": ErrorCode.UNKNOWN_SERVER_ERROR,
                    "error_message": f"{type(exc).__name__}: could not store the credentials",
                }
            )
            continue
        results.append({"user": user, "error_code": ErrorCode.NONE, "error_message": None})
    return results


def _name(type_id: int) -> str:
    mechanism = ScramMechanism.for_type(type_id)
    assert mechanism is not None
    return mechanism.mechanism_name
