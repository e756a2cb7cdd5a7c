"""Topic administration in cluster mode (Kafka 3.9's ``ZkAdminManager`` with
``AdminZkClient``): requests are validated here and written to ZooKeeper; the controller
turns the change into leaders (LeaderAndIsr) and tells every broker (UpdateMetadata).

* Create: Kafka's replica assignment over the registered brokers sorted by id
  (``franz.controller.assignment``: rack-unaware round robin with a random start and
  shifted followers, rack-aware when every broker has ``broker.rack``), or the request's
  manual assignment (``validate_topic_create_assignment``); then ``/config/topics/<t>`` and
  ``/brokers/topics/<t>`` with a new topic id. Like Kafka's ``DelayedCreatePartitions`` the
  request then waits, up to its ``timeout_ms``, until this broker's metadata cache shows a
  leader for every partition; past it the topic gets REQUEST_TIMED_OUT (it is still created,
  as in Kafka).
* Delete: ``/admin/delete_topics/<t>`` (Kafka's ``AdminZkClient.deleteTopic``), then wait,
  up to ``timeout_ms``, until the topic left the metadata cache (``DelayedDeleteTopics``).
* CreatePartitions: ``new_partitions_assignment`` (Kafka's
  ``createNewPartitionsAssignment``), the topic znode rewritten conditionally on its version.
* Auto-creation (Metadata, FindCoordinator): started in the background; the client sees the
  topic once the controller has made its leaders and retries meanwhile.
* Topic config changes (AlterConfigs on any broker): ``/config/topics/<t>`` plus a
  ``/config/changes/config_change_<seq>`` notification; every broker watches
  ``/config/changes`` and re-reads the entity of each notification newer than the last one
  it processed (Kafka's ``ZkConfigManager`` / ``ZkNodeChangeNotificationListener``), then
  applies it through ``on_topic_configs``. A broker-entity notification (``brokers/<default>``
  or ``brokers/<this broker's id>``; another broker's id is not this broker's business) is
  read the same way and applied through ``on_broker_configs``
  (``franz.broker.dynamic_config``, Kafka's ``BrokerConfigHandler``). After each pass the
  broker deletes the notifications older than ``CHANGE_EXPIRATION_MS`` (Kafka's
  ``ZkNodeChangeNotificationListener.purgeObsoleteNotifications``: every broker has long
  read them), so ``/config/changes`` does not grow forever.
* ZooKeeper unavailable: every ZooKeeper request gives up after
  ``zookeeper.connection.timeout.ms`` without a connection (``franz.metadata.zookeeper``);
  the request's topics then get REQUEST_TIMED_OUT (retriable: the client tries again once
  ZooKeeper is back; Kafka's ``ZooKeeperClientTimeoutException`` surfaces the same way to
  its admin clients, which time out), never a request left hanging.

Replication is not there yet (next issue): followers hold empty logs and acks=all on a topic
with a replication factor above 1 does not wait for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from functools import wraps
from typing import Any, Final, ParamSpec, TypeVar

from franz.controller.assignment import (
    BrokerMetadata,
    assign_replicas_to_brokers,
    new_partitions_assignment,
    sorted_brokers,
    validate_topic_create_assignment,
)
from franz.errors import (
    InvalidRequestError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from franz.metadata.cache import MetadataCache
from franz.metadata.kafka_zk_client import KafkaZkClient
from franz.metadata.mirror import TopicMirrorStore
from franz.metadata.store import DEFAULT_BROKER_ENTITY, TopicRecord
from franz.metadata.zk_store import ZooKeeperMetadataStore
from franz.metadata.znodes import (
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityChangeNotificationZNode,
    TopicZNode,
    ZNodeDecodeError,
)
from franz.metadata.zookeeper import (
    NoNodeZkError,
    ZooKeeperConnectionError,
    ZooKeeperConnectionLossError,
    ZooKeeperSessionExpiredError,
)
from franz.protocol.kafka_uuid import random_uuid

__all__ = ["CHANGE_EXPIRATION_MS", "ClusterTopicAdmin"]

log = logging.getLogger(__name__)

#: How often a waiting request looks at the metadata cache again.
_POLL_S: Final = 0.02

#: Age past which a config change notification is deleted (Kafka's
#: ``ZkNodeChangeNotificationListener`` ``changeExpirationMs``, 15 minutes).
CHANGE_EXPIRATION_MS: Final = 15 * 60 * 1000

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _times_out_without_zookeeper(
    method: Callable[_P, Awaitable[_T]],
) -> Callable[_P, Coroutine[Any, Any, _T]]:
    """ZooKeeper unreachable (or the session lost mid-request) -> REQUEST_TIMED_OUT."""

    @wraps(method)
    async def run(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        try:
            return await method(*args, **kwargs)
        except (
            ZooKeeperConnectionError,
            ZooKeeperConnectionLossError,
            ZooKeeperSessionExpiredError,
        ) as exc:
            raise RequestTimedOutError(f"ZooKeeper is not available: {exc}") from exc

    return run


class ClusterTopicAdmin:
    def __init__(
        self,
        zk: KafkaZkClient,
        broker_id: int,
        mirror: TopicMirrorStore,
        cache: MetadataCache,
    ) -> None:
        self.zk = zk
        self.store = ZooKeeperMetadataStore(zk, broker_id)
        self.mirror = mirror
        self.cache = cache
        self._background: set[asyncio.Task[None]] = set()
        #: Applies a topic's new config overrides (set by the ``TopicManager``).
        self.on_topic_configs: Callable[[str, dict[str, str]], None] | None = None
        #: Applies a broker entity's new dynamic configs (set by the broker).
        self.on_broker_configs: Callable[[str, dict[str, str]], None] | None = None
        #: Re-reads a client quota entity (``users/...``, ``clients/...``) named by a change
        #: notification (set by the broker: ``franz.broker.client_quotas``).
        self.on_client_quota_change: Callable[[str], Awaitable[None]] | None = None
        #: Applies a user entity's new configs (SCRAM credentials; set by the broker).
        self.on_user_configs: Callable[[str, dict[str, str]], None] | None = None
        self.broker_id = broker_id
        self._last_change = ""
        #: ``CHANGE_EXPIRATION_MS``, an attribute so a test can shorten it.
        self.change_expiration_ms = CHANGE_EXPIRATION_MS

    # -- config change notifications ---------------------------------------------------------

    async def watch_config_changes(self) -> None:
        """Start processing ``/config/changes`` from the current last notification on (the
        configs as they are now were read by ``refresh``)."""
        children = await self.zk.zk.get_children(ConfigEntityChangeNotificationZNode.path)
        self._last_change = max(children, default="")
        self.zk.watch_children(ConfigEntityChangeNotificationZNode.path, self._on_changes)

    def _on_changes(self, children: list[str]) -> None:
        fresh = sorted(c for c in children if c > self._last_change)
        if not fresh:
            return
        self._last_change = fresh[-1]
        self._spawn(self._process_changes(fresh, children))

    async def _process_changes(self, names: list[str], children: list[str]) -> None:
        now_ms = int(time.time() * 1000)
        await self._apply_changes(names)
        await self._purge_obsolete(children, now_ms)

    async def _purge_obsolete(self, children: list[str], now_ms: int) -> None:
        """Delete the notifications older than ``change_expiration_ms`` (module docstring);
        one already deleted by another broker is skipped."""
        for name in sorted(children):
            path = f"{ConfigEntityChangeNotificationZNode.path}/{name}"
            stat = await self.zk.zk.exists(path)
            if stat is None or now_ms - stat.ctime_ms <= self.change_expiration_ms:
                continue
            with contextlib.suppress(NoNodeZkError):
                await self.zk.zk.delete(path)
                log.debug("purged config change notification %s", path)

    async def _apply_changes(self, names: list[str]) -> None:
        for name in names:
            path = f"{ConfigEntityChangeNotificationZNode.path}/{name}"
            found = await self.zk.zk.get_or_none(path)
            if found is None:
                continue
            try:
                entity_path = ConfigEntityChangeNotificationSequenceZNode.decode(path, found[0])
            except ZNodeDecodeError as exc:
                log.error("config change %s skipped: %s", name, exc)
                continue
            kind, _, entity = entity_path.partition("/")
            if kind == "brokers":
                await self._process_broker_change(entity)
                continue
            if kind in ("users", "clients") and self.on_client_quota_change is not None:
                await self.on_client_quota_change(entity_path)
            if kind == "users":  # SCRAM credentials too
                if self.on_user_configs is not None:
                    configs = await self.zk.get_entity_configs("users", entity)
                    self.on_user_configs(entity, configs)
                continue
            if kind != "topics":
                continue
            record = await self._read(entity)
            if record is None:
                continue
            self.mirror.put(record)
            if self.on_topic_configs is not None:
                self.on_topic_configs(entity, record.configs)

    async def _process_broker_change(self, entity: str) -> None:
        if self.on_broker_configs is None or entity not in (
            DEFAULT_BROKER_ENTITY,
            str(self.broker_id),
        ):
            return
        try:
            configs = await self.zk.get_entity_configs("brokers", entity)
        except ZNodeDecodeError as exc:
            log.error("dynamic configs of broker entity %s skipped: %s", entity, exc)
            return
        self.on_broker_configs(entity, configs)

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        async def run() -> None:
            try:
                await work
            except Exception as exc:
                log.warning("ZooKeeper work failed: %s", exc)

        task = asyncio.get_running_loop().create_task(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- the mirror -------------------------------------------------------------------------

    async def refresh(self, names: Iterable[str] | None = None) -> None:
        """Read ``names`` (None: every topic) from ZooKeeper into the mirror; a topic gone
        from ZooKeeper leaves it, one that does not decode is logged and skipped."""
        if names is None:
            records = await self.store.topics()
            for name in set(self.mirror.topics()) - set(records):
                self.mirror.delete_topic(name)
            for record in records.values():
                self.mirror.put(record)
            return
        for name in names:
            found = await self._read(name)
            if found is None:
                self.mirror.delete_topic(name)
            else:
                self.mirror.put(found)

    async def _read(self, name: str) -> TopicRecord | None:
        found = await self.zk.zk.get_or_none(TopicZNode.path(name))
        if found is None:
            return None
        try:
            assignment = TopicZNode.decode(name, found[0])
            configs = await self.zk.get_entity_configs("topics", name)
        except ZNodeDecodeError as exc:
            log.error("topic %s skipped: %s", name, exc)
            return None
        if assignment.topic_id is None:
            return None  # the controller writes one (zk_store._assign_topic_id); read later
        return TopicRecord(
            name,
            assignment.topic_id,
            {p: list(r) for p, r in sorted(assignment.partitions.items())},
            configs,
        )

    async def brokers(self) -> list[BrokerMetadata]:
        registered = await self.zk.get_all_brokers()
        return sorted_brokers(BrokerMetadata(b.broker_id, b.rack) for b in registered.values())

    # -- creation ---------------------------------------------------------------------------

    @_times_out_without_zookeeper
    async def assignment(
        self,
        num_partitions: int,
        replication_factor: int,
        manual: Mapping[int, list[int]] | None,
    ) -> dict[int, list[int]]:
        """The replicas of a new topic (module docstring); the counts are already resolved
        (no -1)."""
        if manual:
            if num_partitions != -1 or replication_factor != -1:
                raise InvalidRequestError(
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time."
                )
            validate_topic_create_assignment(manual)
            return {p: list(r) for p, r in sorted(manual.items())}
        brokers = await self.brokers()
        return dict(assign_replicas_to_brokers(brokers, num_partitions, replication_factor))

    @_times_out_without_zookeeper
    async def create(self, record: TopicRecord, timeout_ms: int | None) -> None:
        """Write the topic; then (``timeout_ms`` not None) wait for its leaders."""
        if await self.zk.zk.exists(TopicZNode.path(record.name)) is not None:
            raise TopicAlreadyExistsError(f"Topic '{record.name}' already exists.")
        await self.store.create_topic(record)
        self.mirror.put(record)
        log.info(
            "created topic %s in ZooKeeper with assignment %s%s",
            record.name,
            record.assignment,
            f" and configs {record.configs}" if record.configs else "",
        )
        if timeout_ms is not None and await self.wait_for_leaders(
            {record.name: len(record.assignment)}, timeout_ms
        ):
            raise RequestTimedOutError(f"Timed out waiting for the leaders of {record.name}.")

    async def wait_for_leaders(self, topics: Mapping[str, int], timeout_ms: int) -> set[str]:
        """Wait until every topic (name -> partition count) has a leader for each partition
        in the metadata cache, up to ``timeout_ms``; return those still without (Kafka's
        ``DelayedCreatePartitions``, one wait for the whole request)."""
        deadline = time.monotonic() + max(0, timeout_ms) / 1000
        waiting = dict(topics)
        while waiting:
            waiting = {t: n for t, n in waiting.items() if not self._has_leaders(t, n)}
            if not waiting or time.monotonic() >= deadline:
                break
            await asyncio.sleep(_POLL_S)
        return set(waiting)

    def create_in_background(self, record: TopicRecord) -> None:
        """Auto-creation: write the topic without making the request wait for it."""

        async def run() -> None:
            try:
                await self.create(record, None)
            except (TopicAlreadyExistsError, RequestTimedOutError):
                pass
            except Exception as exc:
                log.warning("auto-creation of topic %s failed: %s", record.name, exc)

        self._spawn(run())

    def _has_leaders(self, topic: str, count: int) -> bool:
        states = self.cache.partition_states(topic)
        return len(states) >= count and all(s.leader >= 0 for s in states)

    # -- deletion and partitions -------------------------------------------------------------

    @_times_out_without_zookeeper
    async def delete(self, name: str, timeout_ms: int) -> None:
        if await self.zk.zk.exists(TopicZNode.path(name)) is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        await self.zk.mark_topic_for_deletion(name)
        log.info("topic %s marked for deletion", name)
        await self._wait(lambda: not self.cache.contains(name), timeout_ms, f"deletion of {name}")

    @_times_out_without_zookeeper
    async def create_partitions(
        self,
        name: str,
        count: int,
        manual: Sequence[Sequence[int]] | None,
        *,
        validate_only: bool,
        timeout_ms: int,
    ) -> None:
        record = await self._read(name)
        if record is None:
            raise UnknownTopicOrPartitionError(f"Topic '{name}' does not exist.")
        added = new_partitions_assignment(
            name, record.assignment, await self.brokers(), count, manual
        )
        if validate_only:
            return
        await self.store.add_partitions(name, {p: list(r) for p, r in added.items()})
        self.mirror.add_partitions(name, {p: list(r) for p, r in added.items()})
        log.info("added partitions %s to topic %s", dict(added), name)
        await self._wait(
            lambda: self._has_leaders(name, count), timeout_ms, f"leaders of {name}'s partitions"
        )

    @_times_out_without_zookeeper
    async def set_topic_configs(self, name: str, configs: dict[str, str]) -> None:
        await self.store.set_topic_configs(name, configs)

    # -- waiting ---------------------------------------------------------------------------

    @staticmethod
    async def _wait(done: object, timeout_ms: int, what: str) -> None:
        assert callable(done)
        deadline = time.monotonic() + max(0, timeout_ms) / 1000
        while not done():
            if time.monotonic() >= deadline:
                raise RequestTimedOutError(f"Timed out waiting for the {what}.")
            await asyncio.sleep(_POLL_S)

    def new_record(
        self, name: str, assignment: dict[int, list[int]], configs: dict[str, str]
    ) -> TopicRecord:
        return TopicRecord(name, random_uuid(), assignment, configs)
