"""Where client quotas live: Kafka's ``/config/users`` and ``/config/clients`` znodes, or the
embedded metadata file.

ZooKeeper (Kafka 3.9's ``AdminZkClient.changeClientIdConfig`` / ``changeUserOrUserClientIdConfig``
and ``fetchAllEntityConfigs`` / ``fetchAllChildEntityConfigs``)::

    /config/users/<user>                      {"version":1,"config":{"producer_byte_rate":"1"}}
    /config/users/<user>/clients/<client-id>   the same
    /config/clients/<client-id>                the same
    /config/changes/config_change_<seq>        {"version":2,"entity_path":"users/alice/clients/x"}

Names are sanitized (``franz.security.client_quota.sanitize``), ``<default>`` the default
entity. ``/config/users/<user>`` also holds a user's SCRAM credentials
(``SCRAM-SHA-256``, written by the SCRAM code): every change here is a read-modify-write
conditional on the znode's version (retried when another writer won), and keeps every key
it was not asked to change. A parent created on the way (``makepath``) has no data; it
reads as no configs.

Embedded: ``LocalMetadataStore``'s ``client_quotas`` (entity path -> configs), persisted with
the rest of the file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, Protocol

from franz.metadata.znodes import (
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityZNode,
)
from franz.metadata.zookeeper import BadVersionError, NodeExistsZkError, NoNodeZkError
from franz.security.client_quota import QuotaEntity

if TYPE_CHECKING:
    from franz.metadata.kafka_zk_client import KafkaZkClient
    from franz.metadata.local import LocalMetadataStore

__all__ = ["ClientQuotaStore", "LocalClientQuotaStore", "ZkClientQuotaStore"]

_MAX_ATTEMPTS: Final = 100

#: Changes of one entity: key -> new value, None to remove the key.
Changes = Mapping[str, str | None]


class ClientQuotaStore(Protocol):
    async def entity_configs(self, entity: QuotaEntity) -> dict[str, str]:
        """Every config of the entity's znode (quota keys and any other)."""
        ...

    async def all_entity_configs(self) -> dict[QuotaEntity, dict[str, str]]:
        """Every user, client and (user, client) entity with its configs."""
        ...

    async def alter(self, entity: QuotaEntity, changes: Changes) -> None:
        """Apply ``changes`` (durable when it returns), keeping the other keys."""
        ...


def _apply(current: Mapping[str, str], changes: Changes) -> dict[str, str]:
    out = dict(current)
    for key, value in changes.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out


class LocalClientQuotaStore:
    """The embedded metadata file's ``client_quotas``."""

    def __init__(self, local: LocalMetadataStore) -> None:
        self.local = local

    async def entity_configs(self, entity: QuotaEntity) -> dict[str, str]:
        return dict(self.local.client_quota_configs().get(entity.path, {}))

    async def all_entity_configs(self) -> dict[QuotaEntity, dict[str, str]]:
        return {
            QuotaEntity.from_path(path): dict(configs)
            for path, configs in self.local.client_quota_configs().items()
        }

    async def alter(self, entity: QuotaEntity, changes: Changes) -> None:
        current = self.local.client_quota_configs().get(entity.path, {})
        self.local.set_client_quota_configs(entity.path, _apply(current, changes))


class ZkClientQuotaStore:
    """Kafka's znodes (module docstring)."""

    def __init__(self, client: KafkaZkClient) -> None:
        self.client = client

    @staticmethod
    def _znode(entity: QuotaEntity) -> str:
        return f"/config/{entity.path}"

    async def _read(self, path: str) -> tuple[dict[str, str], int] | None:
        found = await self.client.zk.get_or_none(path)
        if found is None:
            return None
        data, stat = found
        return (ConfigEntityZNode.decode(path, data) if data else {}), stat.version

    async def entity_configs(self, entity: QuotaEntity) -> dict[str, str]:
        found = await self._read(self._znode(entity))
        return {} if found is None else found[0]

    async def _children(self, path: str) -> list[str]:
        try:
            return await self.client.zk.get_children(path)
        except NoNodeZkError:
            return []

    async def all_entity_configs(self) -> dict[QuotaEntity, dict[str, str]]:
        out: dict[QuotaEntity, dict[str, str]] = {}
        for user in await self._children("/config/users"):
            for path in [f"users/{user}"] + [
                f"users/{user}/clients/{client}"
                for client in await self._children(f"/config/users/{user}/clients")
            ]:
                found = await self._read(f"/config/{path}")
                if found is not None:
                    out[QuotaEntity.from_path(path)] = found[0]
        for client in await self._children("/config/clients"):
            found = await self._read(f"/config/clients/{client}")
            if found is not None:
                out[QuotaEntity.from_path(f"clients/{client}")] = found[0]
        return out

    async def alter(self, entity: QuotaEntity, changes: Changes) -> None:
        """Read-modify-write of the entity's znode conditional on its version, then the
        change notification (Kafka's ``changeConfigs``)."""
        zk = self.client.zk
        path = self._znode(entity)
        for _ in range(_MAX_ATTEMPTS):
            found = await self._read(path)
            if found is None:
                data = ConfigEntityZNode.encode(_apply({}, changes))
                try:
                    await zk.create(path, data, makepath=True)
                except NodeExistsZkError:
                    continue
                break
            current, version = found
            try:
                await zk.set(path, ConfigEntityZNode.encode(_apply(current, changes)), version)
            except (BadVersionError, NoNodeZkError):
                continue
            break
        else:
            raise RuntimeError(f"could not update {path}: too many concurrent writers")
        with contextlib.suppress(NodeExistsZkError):
            await zk.create(
                ConfigEntityChangeNotificationSequenceZNode.create_path,
                ConfigEntityChangeNotificationSequenceZNode.encode(entity.path),
                sequence=True,
                makepath=True,
            )
