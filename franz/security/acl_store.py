"""Where the ``AclAuthorizer``'s ACLs live: Kafka's ZooKeeper layout (``ZkData.scala``:
``ZkAclStore``, ``ZkAclChangeStore``), or the embedded metadata file keyed the same way.

Znodes (one per resource pattern; data ``franz.security.acl.encode_acls_json``)::

    /kafka-acl/<ResourceTypeName>/<name>                      LITERAL patterns
    /kafka-acl-extended/prefixed/<ResourceTypeName>/<name>    PREFIXED patterns

A change is a read, then a write conditional on the version read (create when absent,
delete when it leaves no entry), retried on ``BadVersion``/``NodeExists``/``NoNode`` as
Kafka's ``AclAuthorizer.updateResourceAcls``; then a persistent sequential notification::

    /kafka-acl-changes/acl_changes_<10 digits>           "<RESOURCETYPE>:<name>" (literal)
    /kafka-acl-extended-changes/acl_changes_<10 digits>  {"version":1,"resourceType":"TOPIC",
                                                          "name":"x","patternType":"PREFIXED"}

(``LiteralAclChangeStore.encode`` writes the Java enum's ``toString``, ``TOPIC``;
``ExtendedAclChangeStore`` its ``name``; both are read case-insensitively.) Every broker
watches both change paths (Kafka's ``ZkNodeChangeNotificationListener``) and re-reads the
resource of each notification newer than the last it processed, so its cache follows
changes made through any broker. Notifications older than 15 minutes are purged
(``ZkNodeChangeNotificationListener``'s ``changeExpirationMs``).

Embedded mode keeps the same keys (the znode paths) and bodies in the metadata file
(``LocalMetadataStore.acl_nodes``), written atomically with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any, Final, Protocol

from franz.metadata.zookeeper import (
    BadVersionError,
    NodeExistsZkError,
    NoNodeZkError,
    ZooKeeperClient,
)
from franz.security.acl import (
    AccessControlEntry,
    PatternType,
    ResourcePattern,
    ResourceType,
    camel_name,
    decode_acls_json,
    encode_acls_json,
    parse_camel_name,
)

__all__ = [
    "ACL_CHANGE_PREFIX",
    "EXTENDED_ACL_CHANGES_PATH",
    "LITERAL_ACL_CHANGES_PATH",
    "LocalAclStore",
    "ZkAclStore",
    "attach_zookeeper",
    "decode_change",
    "encode_change",
    "pattern_from_path",
    "resource_path",
]

log = logging.getLogger(__name__)

LITERAL_ACL_PATH: Final = "/kafka-acl"
EXTENDED_ACL_PATH: Final = "/kafka-acl-extended"
LITERAL_ACL_CHANGES_PATH: Final = "/kafka-acl-changes"
EXTENDED_ACL_CHANGES_PATH: Final = "/kafka-acl-extended-changes"
ACL_CHANGE_PREFIX: Final = "acl_changes_"
#: ``ZkNodeChangeNotificationListener``'s default ``changeExpirationMs`` (15 minutes).
CHANGE_EXPIRATION_MS: Final = 15 * 60 * 1000
_MAX_ATTEMPTS: Final = 50

Entries = frozenset[AccessControlEntry]


def _store_root(pattern_type: PatternType) -> str:
    if pattern_type == PatternType.LITERAL:
        return LITERAL_ACL_PATH
    return f"{EXTENDED_ACL_PATH}/{pattern_type.name.lower()}"


def resource_path(pattern: ResourcePattern) -> str:
    """``ResourceZNode.path``."""
    return f"{_store_root(pattern.pattern_type)}/{camel_name(pattern.resource_type)}/{pattern.name}"


def pattern_from_path(path: str) -> ResourcePattern:
    """The inverse of ``resource_path``."""
    for pattern_type in (PatternType.PREFIXED, PatternType.LITERAL):
        root = _store_root(pattern_type) + "/"
        if path.startswith(root):
            type_name, _, name = path[len(root) :].partition("/")
            return ResourcePattern(parse_camel_name(ResourceType, type_name), name, pattern_type)
    raise ValueError(f"not an ACL znode path: {path}")


def encode_change(pattern: ResourcePattern) -> tuple[str, bytes]:
    """The notification's parent path and data (module docstring)."""
    if pattern.pattern_type == PatternType.LITERAL:
        return LITERAL_ACL_CHANGES_PATH, f"{pattern.resource_type.name}:{pattern.name}".encode()
    body = {
        "version": 1,
        "resourceType": pattern.resource_type.name,
        "name": pattern.name,
        "patternType": pattern.pattern_type.name,
    }
    return EXTENDED_ACL_CHANGES_PATH, json.dumps(body, separators=(",", ":")).encode()


def decode_change(parent: str, data: bytes) -> ResourcePattern:
    if parent == LITERAL_ACL_CHANGES_PATH:
        type_name, sep, name = data.decode().partition(":")
        if not sep:
            raise ValueError(
                f"expected a string in format ResourceType:ResourceName but got {data!r}"
            )
        return ResourcePattern(parse_camel_name(ResourceType, type_name), name, PatternType.LITERAL)
    body: Any = json.loads(data)
    if int(body.get("version", 0)) > 1:
        raise ValueError(f"Acl change event received for unsupported version: {body['version']}")
    return ResourcePattern(
        parse_camel_name(ResourceType, str(body["resourceType"])),
        str(body["name"]),
        parse_camel_name(PatternType, str(body["patternType"])),
    )


class AclNodeFile(Protocol):
    """The embedded metadata store's ACL part (``LocalMetadataStore``)."""

    def acl_nodes(self) -> dict[str, bytes]: ...

    def set_acl_node(self, path: str, data: bytes | None) -> None: ...


class LocalAclStore:
    """Embedded mode: the metadata file (module docstring); no other broker to notify."""

    def __init__(self, nodes: AclNodeFile) -> None:
        self.nodes = nodes

    async def load_all(self) -> dict[ResourcePattern, Entries]:
        return {
            pattern_from_path(p): decode_acls_json(d) for p, d in self.nodes.acl_nodes().items()
        }

    async def update(
        self, pattern: ResourcePattern, change: Callable[[Entries], Entries]
    ) -> tuple[Entries, Entries]:
        path = resource_path(pattern)
        current = decode_acls_json(self.nodes.acl_nodes().get(path, b""))
        new = change(current)
        if new != current:
            self.nodes.set_acl_node(path, encode_acls_json(new) if new else None)
        return current, new


class ZkAclStore:
    """Cluster mode: the znodes and notifications (module docstring)."""

    def __init__(self, zk: ZooKeeperClient) -> None:
        self.zk = zk
        #: Applies a resource's entries re-read after a notification (set by the broker).
        self.on_change: Callable[[ResourcePattern, Entries], None] | None = None
        self._last_seen: dict[str, str] = {}
        self._background: set[asyncio.Task[None]] = set()
        self.change_expiration_ms = CHANGE_EXPIRATION_MS

    async def start(self) -> None:
        """Create the roots (``AclAuthorizer.configure``) and watch both change paths from
        the current last notification on."""
        for path in (
            LITERAL_ACL_PATH,
            f"{EXTENDED_ACL_PATH}/prefixed",
            LITERAL_ACL_CHANGES_PATH,
            EXTENDED_ACL_CHANGES_PATH,
        ):
            await self.zk.ensure_path(path)
        for parent in (LITERAL_ACL_CHANGES_PATH, EXTENDED_ACL_CHANGES_PATH):
            children = await self.zk.get_children(parent)
            self._last_seen[parent] = max(children, default="")
            self.zk.watch_children(parent, self._watcher(parent))

    async def load_all(self) -> dict[ResourcePattern, Entries]:
        found: dict[ResourcePattern, Entries] = {}
        for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
            root = _store_root(pattern_type)
            with contextlib.suppress(NoNodeZkError):
                for type_name in await self.zk.get_children(root):
                    for name in await self.zk.get_children(f"{root}/{type_name}"):
                        path = f"{root}/{type_name}/{name}"
                        read = await self.zk.get_or_none(path)
                        if read is None:
                            continue
                        try:
                            entries = decode_acls_json(read[0])
                        except (ValueError, KeyError) as exc:
                            log.error("ACL znode %s skipped: %s", path, exc)
                            continue
                        if entries:
                            found[pattern_from_path(path)] = entries
        return found

    async def read(self, pattern: ResourcePattern) -> tuple[Entries, int]:
        """The entries and znode version (-1: absent)."""
        read = await self.zk.get_or_none(resource_path(pattern))
        if read is None:
            return frozenset(), -1
        return decode_acls_json(read[0]), read[1].version

    async def update(
        self, pattern: ResourcePattern, change: Callable[[Entries], Entries]
    ) -> tuple[Entries, Entries]:
        path = resource_path(pattern)
        for _ in range(_MAX_ATTEMPTS):
            current, version = await self.read(pattern)
            new = change(current)
            if new == current:
                return current, current
            try:
                if version < 0:
                    await self.zk.create(path, encode_acls_json(new), makepath=True)
                elif new:
                    await self.zk.set(path, encode_acls_json(new), version)
                else:
                    await self.zk.delete(path, version)
            except (BadVersionError, NodeExistsZkError, NoNodeZkError):
                continue  # changed under us: read again (``updateResourceAcls``)
            parent, data = encode_change(pattern)
            await self.zk.create(f"{parent}/{ACL_CHANGE_PREFIX}", data, sequence=True)
            return current, new
        raise RuntimeError(f"Failed to update ACLs for {pattern} after {_MAX_ATTEMPTS} tries")

    def _watcher(self, parent: str) -> Callable[[list[str]], None]:
        def on_children(children: list[str]) -> None:
            fresh = sorted(c for c in children if c > self._last_seen.get(parent, ""))
            if not fresh:
                return
            self._last_seen[parent] = fresh[-1]
            self._spawn(self._process(parent, fresh, children))

        return on_children

    async def _process(self, parent: str, names: list[str], children: list[str]) -> None:
        for name in names:
            found = await self.zk.get_or_none(f"{parent}/{name}")
            if found is None:
                continue
            try:
                pattern = decode_change(parent, found[0])
                entries, _ = await self.read(pattern)
            except (ValueError, KeyError) as exc:
                log.error("ACL change %s/%s skipped: %s", parent, name, exc)
                continue
            if self.on_change is not None:
                self.on_change(pattern, entries)
        now_ms = int(time.time() * 1000)
        for name in children:
            path = f"{parent}/{name}"
            stat = await self.zk.exists(path)
            if stat is not None and now_ms - stat.ctime_ms > self.change_expiration_ms:
                with contextlib.suppress(NoNodeZkError):
                    await self.zk.delete(path)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        async def run() -> None:
            try:
                await work
            except Exception as exc:  # logged; the next notification retries
                log.warning("ACL change processing failed: %s", exc)

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)


async def attach_zookeeper(authorizer: Any, zk: ZooKeeperClient) -> ZkAclStore:
    """Cluster mode: ``authorizer`` (an ``AclAuthorizer``) reads and writes ZooKeeper, loads
    every ACL, and follows the change notifications from now on."""
    store = ZkAclStore(zk)
    await store.start()
    store.on_change = authorizer.apply
    authorizer.store = store
    await authorizer.load()
    return store
