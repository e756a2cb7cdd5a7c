"""A Franz broker: storage, metadata, replicas and the Kafka listener, wired in order.

Start-up: read the metadata store (topics and their configs are needed to open their logs
with the right config), lock and load the log dirs (recovering after a crash), host every
partition, then listen. Shutdown (SIGTERM/SIGINT, ``shutdown()``): stop accepting, finish the
in-flight requests, then flush, checkpoint and leave the clean-shutdown marker.

Storage failure: when the last online log dir fails (ENOSPC, EIO: ``LogManager``), the broker
halts with exit code 1, as Kafka's ``Exit.halt(1)``, so clients fail over rather than talk
to a broker that has no data left. Unlike Kafka's immediate halt it first answers the
requests in flight (bounded by the listener's shutdown timeout), so the produce that hit the
full disk gets KAFKA_STORAGE_ERROR instead of a dropped connection; nothing is flushed or
checkpointed, and the next start recovers the dirs as after a crash.

Embedded single-node mode (no ``zookeeper.connect``): metadata lives in
``<first log dir>/franz-metadata.json``, and this broker is the only one and its own
controller: ``franz.controller.shell.local.LocalController`` runs the same state machines as
cluster mode's controller over that store, and delivers its LeaderAndIsr, UpdateMetadata and
StopReplica in process to the code the network handlers run in cluster mode
(``franz.broker.control_requests``). It starts before the listener (every partition led when
the first client connects) and learns this broker's endpoint once it listens.

Cluster mode (``zookeeper.connect`` set, with an optional chroot), in Kafka's ZooKeeper-mode
order (``KafkaServer.startup``): connect to ZooKeeper (giving up after
``zookeeper.connection.timeout.ms`` with a ``ZooKeeperConnectionError``: exit code 1), read or
create ``/cluster/id`` (a different id in ``meta.properties`` stops the start with Kafka's
message), read the topics into the topic mirror and the dynamic broker configs
(``/config/brokers``), load the logs, listen, then register
``/brokers/ids/<id>`` (a duplicate ``broker.id`` stops the start with Kafka's message) and
stand for controller through ``ZkBrokerSession``; the ``Controller`` is hosted by every
broker and acts while this broker holds ``/controller``. Partitions are hosted when the
controller's LeaderAndIsr says so; the metadata cache is the controller's UpdateMetadata.
Producer ids come from blocks claimed in ``/latest_producer_id_block``
(``franz.broker.producer_ids.ZkProducerIdManager``).
Shutdown (``controlled.shutdown.enable``, default true) first asks the controller to move this
broker's leaderships to other in-sync replicas (Kafka's controlled shutdown,
``franz.broker.controlled_shutdown``), then stops serving and closes the ZooKeeper session
(first: so a broker whose controlled shutdown failed is seen as failed at once).
A topic config change whose override turns ``unclean.leader.election.enable`` on, and a
dynamic broker default that turns it on, wake the controller (Kafka's
``TopicConfigHandler`` and ``DynamicLogConfig``): offline partitions are elected at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import uuid
from pathlib import Path
from typing import Any, NoReturn

from franz.broker.client_quotas import ClientQuotas
from franz.broker.cluster_topics import ClusterTopicAdmin
from franz.broker.controlled_shutdown import ControlledShutdownConfig, controlled_shutdown
from franz.broker.dispatcher import Dispatcher
from franz.broker.dynamic_config import DynamicBrokerConfig
from franz.broker.fetch_session import FetchSessionCache
from franz.broker.handlers import alter_partition as alter_partition_handler
from franz.broker.listeners import BrokerListeners
from franz.broker.offsets_log import OffsetsTopicLog
from franz.broker.producer_ids import ProducerIdGenerator, ProducerIdManager, ZkProducerIdManager
from franz.broker.sasl_service import BrokerSasl
from franz.broker.topic_manager import TopicManager
from franz.broker.txn_log import TransactionTopicLog
from franz.broker.txn_marker_channel import TxnMarkerChannel
from franz.broker.txn_verification import AddPartitionsToTxnManager
from franz.clock import Clock, SystemClock
from franz.cluster.alter_log_dirs import AlterLogDirsConfig, ReplicaAlterLogDirsManager
from franz.cluster.alter_partition import AlterPartitionManager
from franz.cluster.replica_fetcher import ReplicaFetcherConfig, ReplicaFetcherManager
from franz.cluster.replica_manager import ReplicaManager
from franz.cluster.replication_quota import ReplicationQuotas
from franz.config.broker import BrokerConfig
from franz.config.properties import load_properties
from franz.config.topic import LogConfig
from franz.controller.context import EndPoint
from franz.controller.shell.alter_partition import AlterPartitionResult
from franz.controller.shell.auto_rebalance import AutoRebalanceConfig
from franz.controller.shell.controller import Controller
from franz.coordinator.group.coordinator import GroupCoordinator
from franz.coordinator.group.group import CoordinatorConfig
from franz.coordinator.group.states import GroupConfig
from franz.coordinator.transaction.coordinator import TransactionConfig, TransactionCoordinator
from franz.coordinator.transaction.state_manager import TransactionStateManager
from franz.errors import ErrorCode, InvalidConfigurationError
from franz.metadata.cache import MetadataCache
from franz.metadata.client_quota_store import LocalClientQuotaStore, ZkClientQuotaStore
from franz.metadata.kafka_zk_client import KafkaZkClient
from franz.metadata.local import LocalMetadataStore
from franz.metadata.mirror import TopicMirrorStore
from franz.metadata.store import MetadataStore
from franz.metadata.zk_session import ZkBrokerSession
from franz.metadata.zk_store import ZooKeeperMetadataStore
from franz.metadata.znodes import BrokerInfo
from franz.metadata.zookeeper import ZooKeeperClient, ZooKeeperConfig
from franz.metrics import BrokerMetrics
from franz.metrics.groups import known_high_watermarks
from franz.metrics.health import gather as gather_health
from franz.metrics.traffic import RequestMetricsRegistry
from franz.metrics.traffic_collectors import TrafficSources
from franz.network.client import KafkaClientConnection
from franz.network.listeners import Listener, ListenerConfig, parse_listener
from franz.network.sender import SenderConfig
from franz.protocol.api_keys import ApiKey
from franz.protocol.kafka_uuid import uuid_to_str
from franz.protocol.messages import build_response
from franz.protocol.records.compression import CompressionType
from franz.security.acl_store import LocalAclStore, attach_zookeeper
from franz.security.authorizer import authorizer_from_config
from franz.storage.cleaner import CleanerConfig
from franz.storage.log_manager import LogManager

__all__ = ["Broker", "Listener", "parse_listener"]  # the last two: franz.network.listeners

log = logging.getLogger("franz.broker")

#: How often periodic storage work is checked; each task keeps its own Kafka interval.
TICK_SECONDS = 1.0
#: How long a stopping broker that is the controller waits for the requests its controller
#: queued (its own controlled shutdown's LeaderAndIsr and UpdateMetadata) to be answered
#: before it resigns (``Controller.drain``). Franz's own bound, not a Kafka key: a broker
#: that does not answer (killed, not yet expired) must not hold the shutdown for long.
CONTROLLER_DRAIN_TIMEOUT_S = 3.0


class Broker:
    def __init__(self, config: BrokerConfig, clock: Clock | None = None) -> None:
        self.config = config
        self.clock = clock or SystemClock()
        self.broker_id = config.broker_id
        self.rack: str | None = config.get("broker.rack")
        #: SASL listeners and SCRAM credentials (``franz.broker.sasl_service``), before the
        #: listeners: their dispatcher holds its authentication gate.
        listener_config = ListenerConfig.from_config(config.get, config.is_set)
        self.sasl = BrokerSasl(
            [(e.name, e.security_protocol) for e in listener_config.listeners],
            listener_config.inter_broker_listener,
            config.get,
        )
        if config.get("zookeeper.connect"):
            self.sasl.require_inter_broker(config.get)
        KafkaClientConnection.inter_broker_sasl = self.sasl.inter_broker
        #: Every listener's socket server (``franz.broker.listeners``); checked first, so a
        #: bad listener or TLS config stops the start before anything is opened.
        self.dispatcher = Dispatcher(self, self.sasl.gate)
        self.listeners = BrokerListeners(
            config, self.dispatcher, _queued_max_request_bytes(config)
        )
        self.listener = self.listeners.config.listeners[0]
        self.server = self.listeners.first
        self.inter_broker_listener = self.listeners.inter_broker_listener
        self.inter_broker_ssl_context = self.listeners.inter_broker_ssl_context
        self.fetch_max_bytes: int = config.get("fetch.max.bytes")
        self.fetch_sessions = FetchSessionCache(
            config.get("max.incremental.fetch.session.cache.slots"), clock=self.clock
        )
        log_dirs = config.log_dirs
        self.zookeeper_connect: str | None = config.get("zookeeper.connect") or None
        local_store = LocalMetadataStore(log_dirs[0])
        self._local_store = local_store
        self.mirror: TopicMirrorStore | None = None
        self.store: MetadataStore = local_store
        if self.zookeeper_connect is not None:
            self.mirror = TopicMirrorStore(local_store, self.broker_id)
            self.store = self.mirror
        self._store_path = local_store.path
        #: The ACL authorizer (``authorizer.class.name``; None: everything allowed).
        self.authorizer = authorizer_from_config(config.get)
        if self.authorizer is not None and self.zookeeper_connect is None:
            self.authorizer.store = LocalAclStore(local_store)
        self.zk: KafkaZkClient | None = None
        self.zk_store: ZooKeeperMetadataStore | None = None
        self.zk_session: ZkBrokerSession | None = None
        self.controller: Controller | None = None
        self.cluster_id = _stored_cluster_id(log_dirs) or uuid_to_str(uuid.uuid4())
        self.log_manager = LogManager(
            log_dirs,
            default_config=config.log_config(),
            clock=self.clock,
            broker_id=self.broker_id,
            cluster_id=self.cluster_id,
            topic_config=self._topic_config,
            retention_check_interval_ms=config.get("log.retention.check.interval.ms"),
            flush_check_interval_ms=config.get("log.flush.scheduler.interval.ms"),
            recovery_point_checkpoint_interval_ms=config.get(
                "log.flush.offset.checkpoint.interval.ms"
            ),
            log_start_offset_checkpoint_interval_ms=config.get(
                "log.flush.start.offset.checkpoint.interval.ms"
            ),
            high_watermark_checkpoint_interval_ms=config.get(
                "replica.high.watermark.checkpoint.interval.ms"
            ),
            producer_id_expiration_ms=config.get("producer.id.expiration.ms"),
            transaction_verification_enabled=config.get(
                "transaction.partition.verification.enable"
            ),
            producer_id_expiration_check_interval_ms=config.get(
                "producer.id.expiration.check.interval.ms"
            ),
            cleaner_config=CleanerConfig.from_broker_config(config.get),
            recovery_verify_all=config.get("log.recovery.verify.all"),
            on_all_dirs_failed=self._halt_on_storage_failure,
            on_log_dir_failure=self._on_log_dir_failure,
        )
        self.metadata_cache = MetadataCache(self.broker_id)
        #: How partition leaders send ISR changes to the controller: over the network in
        #: cluster mode (started once registered, so that the broker epoch exists), to the
        #: embedded controller in process otherwise.
        self.alter_partition_manager = AlterPartitionManager(
            self.broker_id,
            self.metadata_cache,
            lambda: self.broker_epoch,
            request_timeout=config.get("controller.socket.timeout.ms") / 1000,
            local=self._local_alter_partition if self.zookeeper_connect is None else None,
        )
        self.replica_manager = ReplicaManager(
            self.log_manager,
            self.broker_id,
            clock=self.clock,
            replica_lag_time_max_ms=config.get("replica.lag.time.max.ms"),
            alter_partition_manager=self.alter_partition_manager,
            is_replica_isr_eligible=self.metadata_cache.has_alive_broker,
        )
        #: Replication throttles (KIP-73), bounded by dynamic broker configs.
        self.replication_quotas = ReplicationQuotas(
            self.clock,
            self.broker_id,
            num_samples=config.get("replication.quota.window.num"),
            window_seconds=config.get("replication.quota.window.size.seconds"),
        )
        # Moves between this broker's log dirs (KIP-113), throttled by their own quota.
        self.replica_manager.alter_log_dirs_manager = ReplicaAlterLogDirsManager(
            self.replica_manager,
            self.replication_quotas.alter_log_dirs,
            AlterLogDirsConfig.from_broker_config(config.get, len(log_dirs)),
            is_known=lambda tp: self.metadata_cache.partition_info(*tp) is not None,
        )
        if self.zookeeper_connect is not None:
            # Followers copy their leaders' logs (Kafka's ReplicaFetcherManager).
            self.replica_manager.replica_fetcher_manager = ReplicaFetcherManager(
                dataclasses.replace(
                    ReplicaFetcherConfig.from_broker_config(config.get, self.broker_id),
                    listener=self.inter_broker_listener,
                    ssl_context=self.inter_broker_ssl_context,
                ),
                self.replica_manager,
                self.metadata_cache,
                lambda: self.broker_epoch,
                quota=self.replication_quotas.follower,
            )
        self.topic_manager = TopicManager(
            config,
            self.store,
            self.replica_manager,
            broker_id=self.broker_id,
            metadata_cache=self.metadata_cache,
        )
        self.topic_manager.on_topic_deleted = self.on_topic_deleted
        if self.zookeeper_connect is not None:
            zk_config = ZooKeeperConfig(
                self.zookeeper_connect,
                session_timeout_ms=config.get("zookeeper.session.timeout.ms"),
                connection_timeout_ms=config.get("zookeeper.connection.timeout.ms"),
            )
            self.zk = KafkaZkClient(ZooKeeperClient(zk_config))
            self.zk_store = ZooKeeperMetadataStore(self.zk, self.broker_id)
        self.dynamic_config = DynamicBrokerConfig(
            config, self.store, self.broker_id, self._reconfigure, remote=self.zk_store
        )
        #: Client quotas (issue 20): ZooKeeper's /config/users and /config/clients, or the
        #: embedded metadata file.
        self.client_quotas = ClientQuotas(
            ZkClientQuotaStore(self.zk) if self.zk is not None
            else LocalClientQuotaStore(local_store),
            num_samples=config.get("quota.window.num"),
            window_seconds=config.get("quota.window.size.seconds"),
        )
        self.producer_ids: ProducerIdGenerator = (
            ProducerIdManager(self.store)
            if self.zk_store is None
            else ZkProducerIdManager(self.zk_store.allocate_producer_ids, self.broker_id)
        )
        self.offsets_log = OffsetsTopicLog(config, self.topic_manager)
        self.group_coordinator = GroupCoordinator(
            config=_coordinator_config(config),
            log_writer=self.offsets_log,
            clock=self.clock,
            partition_exists=self._partition_exists,
        )
        self.replica_manager.add_leadership_listener(
            self.offsets_log.leadership_listener(self.group_coordinator)
        )
        # The transaction coordinator (issue 19) follows __transaction_state's leaders.
        self.txn_log = TransactionTopicLog(config, self.topic_manager)
        self.txn_marker_channel = TxnMarkerChannel(lambda: self, lambda: self.inter_broker_listener)
        self.txn_marker_channel.ssl_context = self.inter_broker_ssl_context
        self.txn_coordinator = TransactionCoordinator(
            TransactionConfig.from_broker_config(config.get),
            TransactionStateManager(
                self.txn_log, config.get("transaction.state.log.num.partitions")
            ),
            self.txn_marker_channel,
            self.producer_ids.generate,
            self.clock,
        )
        self.replica_manager.add_leadership_listener(
            self.txn_log.leadership_listener(self.txn_coordinator)
        )
        # KIP-890: leaders verify transactional appends with the coordinators.
        self.txn_verifier = AddPartitionsToTxnManager(
            lambda: self, lambda: self.inter_broker_listener
        )
        self.txn_verifier.ssl_context = self.inter_broker_ssl_context
        self._last_offsets_expiry_ms = self.clock.wall_ms()
        self._background: set[asyncio.Task[None]] = set()
        #: Kafka's replication metrics, on ``metrics.listener`` (``franz.metrics``).
        self.metrics = BrokerMetrics(
            self.broker_id,
            config.get("metrics.listener"),
            lambda: self.replica_manager,
            lambda: self.controller or self.topic_manager.controller,
            lambda: self.replica_manager.replica_fetcher_manager,
            group_coordinator=lambda: self.group_coordinator,
            txn_coordinator=lambda: self.txn_coordinator,
            high_watermark=known_high_watermarks(
                self.broker_id, lambda: self.replica_manager.partitions, self.metadata_cache
            ),
            health=lambda: gather_health(
                self.broker_id,
                cluster_mode=self.zk is not None,
                started=self._started,
                broker_epoch=self.zk_session.broker_epoch if self.zk_session else -1,
                metadata=self.metadata_cache,
                replicas=self.replica_manager.partitions,
                servers=self.listeners.servers,
            ),
            traffic=TrafficSources(
                lambda: self.replica_manager.topic_stats,
                lambda: self.dispatcher.request_metrics or RequestMetricsRegistry(),
                lambda: sum(
                    c.held_requests
                    for server in self.listeners.servers.values()
                    for c in server.connections
                ),
                lambda: self.log_manager.logs,
            ),
        )
        if self.metrics.address is not None:
            # Requests are timed only while someone can read the figures (franz.metrics).
            self.dispatcher.request_metrics = RequestMetricsRegistry()
        self._ticker: asyncio.Task[None] | None = None
        self._isr_expiration: asyncio.Task[None] | None = None
        self._started: bool = False
        self._halting = False

    def _halt_on_storage_failure(self) -> None:
        """Every log dir has failed: answer the requests in flight, then halt (exit 1)."""
        if self._halting:
            return
        self._halting = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            _halt()
        task = loop.create_task(self._halt_after_answering())
        self._background.add(task)

    async def _halt_after_answering(self) -> None:
        self.replica_manager.begin_shutdown()
        try:
            await self.listeners.shutdown()
        finally:
            log.critical(
                "franz broker %d halted: no log dir is online (exit code 1); free space or "
                "replace the failed dirs, then restart it to recover them",
                self.broker_id,
            )
            _halt()

    @property
    def zk_mode(self) -> bool:
        return self.zk is not None

    @property
    def broker_epoch(self) -> int:
        return -1 if self.zk_session is None else self.zk_session.broker_epoch

    async def _join_zookeeper(self) -> None:
        """Connect, agree on the cluster id, mirror the topics (module docstring)."""
        assert self.zk is not None and self.mirror is not None
        await self.zk.zk.start()
        await self.zk.ensure_persistent_paths()
        self.cluster_id = await self.zk.get_or_create_cluster_id(self.cluster_id)
        self.log_manager.cluster_id = self.cluster_id
        admin = ClusterTopicAdmin(self.zk, self.broker_id, self.mirror, self.metadata_cache)
        self.topic_manager.attach_cluster(admin)
        apply_topic_configs = admin.on_topic_configs

        def on_topic_configs(topic: str, configs: dict[str, str]) -> None:
            if apply_topic_configs is not None:
                apply_topic_configs(topic, configs)
            if self.controller is not None:
                self.controller.on_topic_configs(topic, configs)

        admin.on_topic_configs = on_topic_configs
        admin.on_broker_configs = self.dynamic_config.apply_entity
        admin.on_client_quota_change = self.client_quotas.on_change
        admin.on_user_configs = self.sasl.on_user_configs
        await admin.refresh()
        await admin.watch_config_changes()
        await self.client_quotas.load()
        if self.authorizer is not None:
            await attach_zookeeper(self.authorizer, self.zk.zk)
        self.sasl.use_zookeeper(self.zk)
        await self.sasl.load()
        await self.dynamic_config.fetch()

    async def _register_and_elect(self) -> None:
        """``/brokers/ids/<id>`` with the bound endpoint, then the controller election."""
        assert self.zk is not None
        advertised = self.listeners.advertised()
        info = BrokerInfo(
            broker_id=self.broker_id,
            endpoints=tuple(listener.uri() for listener in advertised),
            security_protocols={e.name: e.security_protocol for e in advertised},
            rack=self.rack,
            timestamp_ms=self.clock.wall_ms(),
        )
        inter_broker = self.inter_broker_listener
        self.controller = Controller(
            self.zk,
            self.broker_id,
            sender_config=SenderConfig(
                client_id=f"broker-{self.broker_id}-controller",
                request_timeout=self.config.get("controller.socket.timeout.ms") / 1000,
                ssl_context=self.inter_broker_ssl_context,
            ),
            inter_broker_listener=inter_broker,
            auto_rebalance=AutoRebalanceConfig.from_broker_config(self.config.get),
        )
        self.zk_session = ZkBrokerSession(
            self.zk,
            info,
            on_elected=self.controller.elected,
            on_resign=self.controller.resign,
        )
        self.controller.on_fenced = self.zk_session.resign
        self.controller.unclean_leader_election_enabled = lambda topic: (
            self.topic_manager.log_config(topic).unclean_leader_election_enable
        )
        self.controller.start()
        await self.zk_session.start()
        self.alter_partition_manager.listener = inter_broker
        self.alter_partition_manager.ssl_context = self.inter_broker_ssl_context
        self.alter_partition_manager.start()

    async def _leave_zookeeper(self) -> None:
        await self.alter_partition_manager.shutdown()
        if self.zk_session is not None:
            await self.zk_session.stop()
        if self.controller is not None:
            await self.controller.stop()
        if self.zk is not None:
            await self.zk.zk.close()

    async def _controlled_shutdown(self) -> None:
        """Kafka's ``controlledShutdown`` (``franz.broker.controlled_shutdown``); a failure
        of its own is logged, never stops the shutdown (Kafka's ``CoreUtils.swallow``)."""
        config = ControlledShutdownConfig(
            broker_id=self.broker_id,
            max_retries=self.config.get("controlled.shutdown.max.retries"),
            retry_backoff_ms=self.config.get("controlled.shutdown.retry.backoff.ms"),
            socket_timeout_ms=self.config.get("controller.socket.timeout.ms"),
            listener=self.inter_broker_listener,
            ssl_context=self.inter_broker_ssl_context,
        )
        try:
            await controlled_shutdown(config, self.metadata_cache, self.broker_epoch)
        except Exception:
            log.exception("controlled shutdown failed")

    def _on_log_dir_failure(self, directory: Path) -> None:
        """A log dir failed (its logs are offline already: ``LogManager``).

        Embedded mode: its own controller takes the partitions' leadership away. Cluster mode,
        as Kafka's ``ReplicaManager.handleLogDirFailure``: the replicas of the dir answer
        KAFKA_STORAGE_ERROR from now on (LeaderAndIsr included), and the controller is told
        through ``/log_dir_event_notification`` (``propagateLogDirEvent``), so that it asks
        this broker about all its replicas and moves leadership off the failed ones.
        """
        self.topic_manager.log_dir_failed()
        if self.zk is None or self._halting or self.zk_session is None:
            # Before registration: the controller's first LeaderAndIsr learns it anyway.
            return
        log.warning(
            "broker %d stopped serving replicas in dir %s; telling the controller",
            self.broker_id,
            directory,
        )
        task = asyncio.get_running_loop().create_task(self._propagate_log_dir_event())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _propagate_log_dir_event(self) -> None:
        assert self.zk is not None
        try:
            path = await self.zk.propagate_log_dir_event(self.broker_id)
        except Exception:
            log.exception("could not write the log dir event notification")
            return
        log.info("log dir event notification %s written", path)

    async def _local_alter_partition(self, request: Any) -> Any:
        """Embedded mode: an AlterPartition to the embedded controller, in process."""
        controller = self.topic_manager.controller
        if controller is None:
            result = AlterPartitionResult(ErrorCode.NOT_CONTROLLER)
        else:
            result = controller.alter_partition(alter_partition_handler.request_data(request))
        version = int(type(request).__version__)
        body = alter_partition_handler.response_body(result)
        return build_response(ApiKey.ALTER_PARTITION, version, body)

    def _publish_live_brokers(self) -> None:
        """Embedded mode, once listening (the endpoints carry the bound ports): the
        controller announces this broker, the only live one, with its endpoints."""
        controller = self.topic_manager.controller
        if controller is not None:
            controller.broker_listening(
                [
                    EndPoint(e.name, e.host, e.port, BrokerListeners.protocol_id(e))
                    for e in self.listeners.advertised()
                ]
            )

    def _reconfigure(self, config: BrokerConfig) -> None:
        """A dynamic broker config changed: ``config`` is the new effective one. Applied live:
        the topic defaults (every log without its own override follows at once),
        ``producer.id.expiration.ms`` and the replication throttle rates; the other dynamic
        keys are stored and described only (see ``franz.broker.dynamic_config``)."""
        unclean_before = self.config.log_config().unclean_leader_election_enable
        self.config = config
        self.replication_quotas.reconfigure(config.dynamic_broker, config.dynamic_default)
        self.log_manager.default_config = config.log_config()
        self.log_manager.set_producer_id_expiration_ms(config.get("producer.id.expiration.ms"))
        self.log_manager.set_transaction_verification_enabled(
            config.get("transaction.partition.verification.enable")
        )
        self.topic_manager.reconfigure(config)
        # Kafka's DynamicLogConfig.reconfigure: the default unclean.leader.election.enable
        # turned on wakes the controller (its offline partitions are elected again).
        if (
            not unclean_before
            and self.log_manager.default_config.unclean_leader_election_enable
            and self.controller is not None
        ):
            self.controller.enable_default_unclean_leader_election()

    def _topic_config(self, topic: str) -> LogConfig:
        return self.topic_manager.log_config(topic)

    def on_topic_deleted(self, topic: str) -> None:
        """Groups forget the deleted topic's offsets (Kafka's ``handleDeletedPartitions``)."""
        task = asyncio.get_running_loop().create_task(
            self.group_coordinator.on_topic_deleted(topic)
        )
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _partition_exists(self, topic: str, partition: int) -> bool:
        record = self.topic_manager.get(topic)
        return record is not None and partition in record.assignment

    @property
    def advertised_address(self) -> tuple[str, int]:
        """The first advertised listener's (host, port)."""
        first = self.listeners.advertised()[0]
        return first.host, first.port

    async def start(self) -> None:
        Path(self._store_path.parent).mkdir(parents=True, exist_ok=True)
        if self.zk is not None:
            try:
                await self._join_zookeeper()
            except BaseException:
                await self.zk.zk.close()
                raise
        self.store.load()
        if self.authorizer is not None and self.zk is None:
            await self.authorizer.load()
        self.dynamic_config.load()
        if self.zk is None:
            await self.client_quotas.load()
            self.sasl.use_local(self._local_store)
            await self.sasl.load()
        try:
            self.log_manager.startup()
        except BaseException:
            await self._leave_zookeeper()
            raise
        try:
            self.topic_manager.start_replicas()
            self.offsets_log.load_into(self.group_coordinator)
            self.txn_log.load_into(self.txn_coordinator)
            self.group_coordinator.arm_all()
            await self.metrics.start()
            await self.listeners.start()
            if self.zk is None:
                self._publish_live_brokers()
                self.alter_partition_manager.start()
            else:
                await self._register_and_elect()
        except BaseException:
            await self._leave_zookeeper()
            await self.listeners.shutdown()
            await self.metrics.stop()
            self.log_manager.shutdown()
            raise
        self._ticker = asyncio.get_running_loop().create_task(self._tick())
        if self.zk is not None:
            self._isr_expiration = asyncio.get_running_loop().create_task(
                self.replica_manager.run_isr_expiration()
            )
        self._started = True
        log.info(
            "franz broker %d started: listener %s, log dirs %s, %d partition(s), %s%s",
            self.broker_id,
            self.listeners.uris(),
            ", ".join(str(d) for d in self.log_manager.log_dirs),
            len(self.replica_manager.partitions),
            "embedded metadata"
            if self.zookeeper_connect is None
            else f"ZooKeeper {self.zookeeper_connect}, cluster id {self.cluster_id}",
            f", metrics {self.metrics.url}" if self.metrics.url else "",
        )

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            try:
                self.log_manager.tick()
            except Exception:
                log.exception("periodic log maintenance failed")
            now = self.clock.wall_ms()
            interval = self.group_coordinator.config.offsets_retention_check_interval_ms
            if now - self._last_offsets_expiry_ms >= interval:
                self._last_offsets_expiry_ms = now
                try:
                    await self.group_coordinator.expire_offsets()
                except Exception:
                    log.exception("offset expiration failed")
            try:
                await self.txn_coordinator.tick()
            except Exception:
                log.exception("transaction coordinator upkeep failed")

    async def shutdown(self) -> None:
        if not self._started:
            return
        self._started = False
        if self.zk_session is not None and self.config.get("controlled.shutdown.enable"):
            await self._controlled_shutdown()
        if self.controller is not None and self.zk_session is not None:
            await self.controller.drain(CONTROLLER_DRAIN_TIMEOUT_S)
        self.replica_manager.begin_shutdown()
        if self.replica_manager.replica_fetcher_manager is not None:
            await self.replica_manager.replica_fetcher_manager.shutdown()
        if self.replica_manager.alter_log_dirs_manager is not None:
            await self.replica_manager.alter_log_dirs_manager.shutdown()
        self.group_coordinator.shutdown()
        await self.txn_coordinator.shutdown()
        self.txn_marker_channel.close()
        self.txn_verifier.close()
        await self._leave_zookeeper()
        await self.listeners.shutdown()
        await self.metrics.stop()
        for task in (self._ticker, self._isr_expiration):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self.log_manager.shutdown()
        log.info("franz broker %d stopped", self.broker_id)


def _halt() -> NoReturn:
    """Kafka's ``Exit.halt(1)``: no shutdown hooks, no flush, only the log lines out."""
    logging.shutdown()
    os._exit(1)


def _coordinator_config(config: BrokerConfig) -> CoordinatorConfig:
    return CoordinatorConfig(
        group=GroupConfig(
            min_session_timeout_ms=config.get("group.min.session.timeout.ms"),
            max_session_timeout_ms=config.get("group.max.session.timeout.ms"),
            initial_rebalance_delay_ms=config.get("group.initial.rebalance.delay.ms"),
            max_size=config.get("group.max.size"),
        ),
        offsets_topic_num_partitions=config.get("offsets.topic.num.partitions"),
        offset_metadata_max_bytes=config.get("offset.metadata.max.bytes"),
        offsets_retention_ms=config.get("offsets.retention.minutes") * 60_000,
        offsets_retention_check_interval_ms=config.get("offsets.retention.check.interval.ms"),
        compression=CompressionType(config.get("offsets.topic.compression.codec")),
    )


def _queued_max_request_bytes(config: BrokerConfig) -> int:
    """``queued.max.request.bytes``, checked as Kafka's ``KafkaConfig.validateValues``: a
    bounded pool must hold the largest request, or that request could never be read."""
    queued: int = config.get("queued.max.request.bytes")
    if 0 < queued < config.get("socket.request.max.bytes"):
        raise InvalidConfigurationError(
            "queued.max.request.bytes must be larger or equal to socket.request.max.bytes"
        )
    return queued


def _stored_cluster_id(log_dirs: list[Path]) -> str | None:
    for directory in log_dirs:
        path = directory / "meta.properties"
        if path.exists():
            cluster_id = load_properties(path).get("cluster.id")
            if cluster_id:
                return cluster_id
    return None
