"""Kafka's ZooKeeper operations (``kafka.zk.KafkaZkClient``) over ``ZooKeeperClient``.

Everything here is a coroutine on the broker's loop; the znode JSON lives in ``znodes``.

Controller election and fencing (Kafka's ``registerControllerAndIncrementControllerEpoch``):
read ``/controller_epoch`` (created as ``0`` when missing), then one multi-op creates the
ephemeral ``/controller`` *and* sets ``/controller_epoch`` to epoch + 1 conditionally on the
version read. So the first broker to create ``/controller`` wins and the epoch only ever
increases by one per election. Every later controller write is a multi-op that begins with a
check of ``/controller_epoch``'s version (``ControllerEpoch.zk_version``): a controller that
lost its seat (another one bumped the epoch) fails with ``ControllerMovedError``.

Glossary: *epoch zk version* is the ZooKeeper version of the ``/controller_epoch`` znode that
the current controller wrote; it is the fencing token of its writes.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from franz.errors import FranzError, TopicAlreadyExistsError
from franz.metadata.znodes import (
    PERSISTENT_PATHS,
    BrokerIdsZNode,
    BrokerIdZNode,
    BrokerInfo,
    ClusterIdZNode,
    ConfigEntityChangeNotificationSequenceZNode,
    ConfigEntityZNode,
    ControllerEpochZNode,
    ControllerRegistration,
    ControllerZNode,
    DeleteTopicsTopicZNode,
    LogDirEventNotificationSequenceZNode,
    PartitionState,
    TopicAssignment,
    TopicPartitionStateZNode,
    TopicsZNode,
    TopicZNode,
    ZNodeDecodeError,
)
from franz.metadata.zookeeper import (
    BadVersionError,
    CheckOp,
    CreateOp,
    DeleteOp,
    NodeExistsZkError,
    NoNodeZkError,
    Op,
    SetDataOp,
    Stat,
    ZooKeeperClient,
)

__all__ = [
    "INITIAL_CONTROLLER_EPOCH",
    "BrokerRegistrationError",
    "ControllerEpoch",
    "ControllerMovedError",
    "KafkaZkClient",
]

log = logging.getLogger(__name__)

#: Kafka's ``KafkaController.InitialControllerEpoch`` (the first controller gets 1).
INITIAL_CONTROLLER_EPOCH = 0


class BrokerRegistrationError(FranzError):
    """``/brokers/ids/<id>`` exists and belongs to another session (a duplicate broker.id)."""


class ControllerMovedError(FranzError):
    """Another broker is (or became) the controller: this one must not write."""


@dataclass(frozen=True, slots=True)
class ControllerEpoch:
    """The seat a controller won: its epoch and ``/controller_epoch``'s znode version."""

    epoch: int
    zk_version: int


class KafkaZkClient:
    def __init__(self, zk: ZooKeeperClient) -> None:
        self.zk = zk

    async def ensure_persistent_paths(self) -> None:
        """Create Kafka's persistent paths (``ZkData.PersistentZkPaths``)."""
        for path in PERSISTENT_PATHS:
            await self.zk.ensure_path(path)

    # ------------------------------------------------------------------ cluster id
    async def get_or_create_cluster_id(self, proposed: str) -> str:
        """The cluster id in ``/cluster/id``; ``proposed`` is written when there is none."""
        found = await self.zk.get_or_none(ClusterIdZNode.path)
        if found is not None:
            return ClusterIdZNode.decode(found[0])
        try:
            await self.zk.create(
                ClusterIdZNode.path, ClusterIdZNode.encode(proposed), makepath=True
            )
            return proposed
        except NodeExistsZkError:
            data, _ = await self.zk.get(ClusterIdZNode.path)
            return ClusterIdZNode.decode(data)

    # ------------------------------------------------------------------ brokers
    async def register_broker(self, info: BrokerInfo) -> int:
        """Create the ephemeral ``/brokers/ids/<id>``; returns its czxid (Kafka's broker
        epoch). A znode left by this same session (a retried create) is accepted; one owned
        by another session raises ``BrokerRegistrationError`` with Kafka's message."""
        path = BrokerIdZNode.path(info.broker_id)
        try:
            await self.zk.create(path, BrokerIdZNode.encode(info), ephemeral=True, makepath=True)
        except NodeExistsZkError:
            found = await self.zk.get_or_none(path)
            owner = found[1].ephemeral_owner if found else 0
            if found is None or owner != self.zk.session_id:
                raise BrokerRegistrationError(
                    f"Error while creating ephemeral at {path}, node already exists and owner "
                    f"'{owner}' does not match current session '{self.zk.session_id}'"
                ) from None
        stat = await self.zk.exists(path)
        assert stat is not None
        log.info("Registered broker %d at path %s", info.broker_id, path)
        return stat.czxid

    async def get_all_brokers(self) -> dict[int, BrokerInfo]:
        """Every registered broker; an unreadable registration is skipped and logged."""
        brokers: dict[int, BrokerInfo] = {}
        for child in await self.zk.get_children(BrokerIdsZNode.path):
            try:
                broker_id = int(child)
            except ValueError:
                continue
            found = await self.zk.get_or_none(BrokerIdZNode.path(broker_id))
            if found is None:
                continue
            try:
                brokers[broker_id] = BrokerIdZNode.decode(broker_id, found[0])
            except ZNodeDecodeError as exc:
                log.error("skipping broker %d: %s", broker_id, exc)
        return brokers

    # ------------------------------------------------------------------ controller
    async def get_controller(self) -> ControllerRegistration | None:
        found = await self.zk.get_or_none(ControllerZNode.path)
        return None if found is None else ControllerZNode.decode(found[0])

    async def get_controller_epoch(self) -> ControllerEpoch | None:
        found = await self.zk.get_or_none(ControllerEpochZNode.path)
        if found is None:
            return None
        return ControllerEpoch(ControllerEpochZNode.decode(found[0]), found[1].version)

    async def _read_or_create_epoch(self) -> ControllerEpoch:
        current = await self.get_controller_epoch()
        if current is not None:
            return current
        with contextlib.suppress(NodeExistsZkError):
            await self.zk.create(
                ControllerEpochZNode.path, ControllerEpochZNode.encode(INITIAL_CONTROLLER_EPOCH)
            )
        current = await self.get_controller_epoch()
        assert current is not None
        return current

    async def register_controller_and_increment_epoch(
        self, broker_id: int, timestamp_ms: int
    ) -> ControllerEpoch:
        """Try to become the controller; raise ``ControllerMovedError`` when another broker
        holds ``/controller`` or bumped the epoch first."""
        current = await self._read_or_create_epoch()
        new_epoch = current.epoch + 1
        try:
            results = await self.zk.multi(
                [
                    CreateOp(
                        ControllerZNode.path,
                        ControllerZNode.encode(broker_id, timestamp_ms),
                        ephemeral=True,
                    ),
                    SetDataOp(
                        ControllerEpochZNode.path,
                        ControllerEpochZNode.encode(new_epoch),
                        current.zk_version,
                    ),
                ]
            )
        except (NodeExistsZkError, BadVersionError):
            # Kafka's checkControllerAndEpoch: our own earlier attempt may have succeeded.
            controller = await self.get_controller()
            epoch = await self.get_controller_epoch()
            if (
                controller is not None
                and controller.broker_id == broker_id
                and epoch
                and (epoch.epoch == new_epoch)
            ):
                return epoch
            raise ControllerMovedError(
                f"Controller moved to another broker "
                f"{controller.broker_id if controller else -1}. Aborting controller startup "
                f"procedure"
            ) from None
        stat = results[1]
        assert isinstance(stat, Stat)
        return ControllerEpoch(new_epoch, stat.version)

    async def delete_controller(self, epoch: ControllerEpoch) -> None:
        """Delete ``/controller`` if ``/controller_epoch`` is still ``epoch``'s (Kafka's
        ``deleteController(expectedControllerEpochZkVersion)``): every broker then runs the
        election again. Gone already: nothing to do; a newer epoch: ``ControllerMovedError``."""
        with contextlib.suppress(NoNodeZkError):
            await self.fenced_multi(epoch, [DeleteOp(ControllerZNode.path)])

    async def fenced_multi(self, epoch: ControllerEpoch, ops: Iterable[Op]) -> list[object]:
        """Run ``ops`` as one multi-op guarded by a check of ``/controller_epoch``'s version;
        a stale controller gets ``ControllerMovedError`` and nothing is written."""
        all_ops: list[Op] = [CheckOp(ControllerEpochZNode.path, epoch.zk_version), *ops]
        try:
            return (await self.zk.multi(all_ops))[1:]
        except BadVersionError as exc:
            if exc.path == ControllerEpochZNode.path:
                raise ControllerMovedError(
                    f"Controller epoch zkVersion check fails. Expected zkVersion = "
                    f"{epoch.zk_version}"
                ) from None
            raise

    # ------------------------------------------------------------------ topics
    async def get_all_topics(self) -> list[str]:
        return await self.zk.get_children(TopicsZNode.path)

    async def get_topic_assignments(
        self, topics: Iterable[str] | None = None
    ) -> dict[str, TopicAssignment]:
        """``/brokers/topics/<t>`` of each topic (all when None); a topic whose znode does not
        decode is skipped and logged, the others are returned."""
        names = await self.get_all_topics() if topics is None else list(topics)
        out: dict[str, TopicAssignment] = {}
        for topic in names:
            found = await self.zk.get_or_none(TopicZNode.path(topic))
            if found is None:
                continue
            try:
                out[topic] = TopicZNode.decode(topic, found[0])
            except ZNodeDecodeError as exc:
                log.error("skipping topic %s: %s", topic, exc)
        return out

    async def create_topic_znode(
        self, topic: str, assignment: TopicAssignment, configs: Mapping[str, str]
    ) -> None:
        """Kafka's ``AdminZkClient.createTopicWithAssignment``: the config znode first (so
        the controller that sees the topic finds its configs), then the topic znode."""
        config_path = ConfigEntityZNode.path("topics", topic)
        data = ConfigEntityZNode.encode(configs)
        try:
            await self.zk.create(config_path, data, makepath=True)
        except NodeExistsZkError:
            await self.zk.set(config_path, data)
        try:
            await self.zk.create(
                TopicZNode.path(topic), TopicZNode.encode(assignment), makepath=True
            )
        except NodeExistsZkError:
            raise TopicAlreadyExistsError(f"Topic '{topic}' already exists.") from None

    async def set_topic_assignment(
        self, topic: str, assignment: TopicAssignment, expected_version: int = -1
    ) -> Stat:
        return await self.zk.set(
            TopicZNode.path(topic), TopicZNode.encode(assignment), expected_version
        )

    async def get_partition_states(
        self, topic: str, partitions: Iterable[int]
    ) -> dict[int, PartitionState]:
        """The state znodes that exist and decode; the others are skipped (and logged)."""
        out: dict[int, PartitionState] = {}
        for partition in partitions:
            found = await self.zk.get_or_none(TopicPartitionStateZNode.path(topic, partition))
            if found is None:
                continue
            try:
                out[partition] = TopicPartitionStateZNode.decode(
                    topic, partition, found[0], found[1].version
                )
            except ZNodeDecodeError as exc:
                log.error("skipping partition state %s-%d: %s", topic, partition, exc)
        return out

    async def create_partition_states(
        self, epoch: ControllerEpoch, topic: str, states: Mapping[int, PartitionState]
    ) -> None:
        """Create ``partitions/<p>/state`` (and its parents), fenced by ``epoch``."""
        for partition, state in states.items():
            await self.zk.ensure_path(f"{TopicZNode.partitions_path(topic)}/{partition}")
            await self.fenced_multi(
                epoch,
                [
                    CreateOp(
                        TopicPartitionStateZNode.path(topic, partition),
                        TopicPartitionStateZNode.encode(state),
                    )
                ],
            )

    async def update_partition_state(
        self, epoch: ControllerEpoch, topic: str, partition: int, state: PartitionState
    ) -> PartitionState:
        """Kafka's ``updateLeaderAndIsr`` for one partition: a set conditional on
        ``state.zk_version`` (the version read), fenced by ``epoch``. Returns the state with
        its new ``zk_version``; raises ``BadVersionError`` when someone else wrote it first."""
        path = TopicPartitionStateZNode.path(topic, partition)
        results = await self.fenced_multi(
            epoch, [SetDataOp(path, TopicPartitionStateZNode.encode(state), state.zk_version)]
        )
        stat = results[0]
        assert isinstance(stat, Stat)
        return PartitionState(
            state.leader,
            state.leader_epoch,
            state.isr,
            state.controller_epoch,
            state.leader_recovery_state,
            stat.version,
        )

    async def mark_topic_for_deletion(self, topic: str) -> None:
        """``/admin/delete_topics/<topic>`` (what ``kafka-topics --delete`` did in ZK mode)."""
        with contextlib.suppress(NodeExistsZkError):
            await self.zk.create(DeleteTopicsTopicZNode.path(topic), makepath=True)

    async def delete_topic_znodes(self, topic: str) -> None:
        """The controller's last step of a deletion: the topic, its configs, the marker."""
        await self.zk.delete_recursive(TopicZNode.path(topic))
        await self.zk.delete_recursive(ConfigEntityZNode.path("topics", topic))
        with contextlib.suppress(NoNodeZkError):
            await self.zk.delete(DeleteTopicsTopicZNode.path(topic))

    # ------------------------------------------------------------------ log dir events
    async def propagate_log_dir_event(self, broker_id: int) -> str:
        """``propagateLogDirEvent``: a sequential ``/log_dir_event_notification/log_dir_event_``
        naming ``broker_id``, for the controller (``LogDirEventNotificationHandler``); returns
        the created path."""
        return await self.zk.create(
            LogDirEventNotificationSequenceZNode.create_path,
            LogDirEventNotificationSequenceZNode.encode(broker_id),
            sequence=True,
            makepath=True,
        )

    # ------------------------------------------------------------------ configs
    async def get_entity_configs(self, entity_type: str, entity: str) -> dict[str, str]:
        path = ConfigEntityZNode.path(entity_type, entity)
        found = await self.zk.get_or_none(path)
        return {} if found is None else ConfigEntityZNode.decode(path, found[0])

    async def set_entity_configs(
        self, entity_type: str, entity: str, configs: Mapping[str, str]
    ) -> None:
        """Kafka's ``AdminZkClient.changeConfigs``: set or create ``/config/<type>/<name>``,
        then a sequential ``/config/changes/config_change_`` notification naming it."""
        path = ConfigEntityZNode.path(entity_type, entity)
        data = ConfigEntityZNode.encode(configs)
        try:
            await self.zk.set(path, data)
        except NoNodeZkError:
            await self.zk.create(path, data, makepath=True)
        await self.zk.create(
            ConfigEntityChangeNotificationSequenceZNode.create_path,
            ConfigEntityChangeNotificationSequenceZNode.encode(f"{entity_type}/{entity}"),
            sequence=True,
            makepath=True,
        )

    async def all_entity_configs(self, entity_type: str) -> dict[str, dict[str, str]]:
        """Every ``/config/<type>/<name>`` (names as stored: sanitized)."""
        try:
            names = await self.zk.get_children(f"/config/{entity_type}")
        except NoNodeZkError:
            return {}
        out: dict[str, dict[str, str]] = {}
        for name in names:
            configs = await self.get_entity_configs(entity_type, name)
            if configs:
                out[name] = configs
        return out

    async def update_entity_configs(
        self,
        entity_type: str,
        entity: str,
        update: Callable[[dict[str, str]], dict[str, str]],
    ) -> dict[str, str]:
        """Read-modify-write ``/config/<type>/<name>`` conditionally on the znode version
        (retried when another writer got there first: the i-quotas keys and the SCRAM keys
        of a user live in the same znode), then the ``/config/changes`` notification."""
        path = ConfigEntityZNode.path(entity_type, entity)
        while True:
            found = await self.zk.get_or_none(path)
            current = {} if found is None else ConfigEntityZNode.decode(path, found[0])
            configs = update(dict(current))
            data = ConfigEntityZNode.encode(configs)
            try:
                if found is None:
                    await self.zk.create(path, data, makepath=True)
                else:
                    await self.zk.set(path, data, found[1].version)
            except (BadVersionError, NodeExistsZkError):
                continue
            break
        await self.zk.create(
            ConfigEntityChangeNotificationSequenceZNode.create_path,
            ConfigEntityChangeNotificationSequenceZNode.encode(f"{entity_type}/{entity}"),
            sequence=True,
            makepath=True,
        )
        return configs

    # ------------------------------------------------------------------ watches
    def watch_children(self, path: str, callback: Callable[[list[str]], None]) -> None:
        self.zk.watch_children(path, callback)

    def watch_controller(self, callback: Callable[[ControllerRegistration | None], None]) -> None:
        """``callback(registration or None)`` on the loop whenever ``/controller`` changes."""

        def on_data(data: bytes | None, stat: Stat | None) -> None:
            if stat is None or data is None:
                callback(None)
                return
            try:
                callback(ControllerZNode.decode(data))
            except ZNodeDecodeError as exc:
                log.error("%s", exc)

        self.zk.watch_data(ControllerZNode.path, on_data)
