"""What request handlers may reach besides their request: the broker's services.

Handlers get a ``BrokerServices`` on ``RequestContext.services``, never the ``Broker``: the
seam along which cluster mode (issue 16) wires the same handlers to a ZooKeeper-fed metadata
cache and a replicating replica manager. It is a ``typing.Protocol``: ``Broker`` satisfies
it structurally, so every member reads the live value (``config`` changes with dynamic
broker configs), and a test may pass any object with these members. Brokers' endpoints and
racks, the controller and partition states are the metadata cache's
(``franz.metadata.cache``), not members here.

Kafka's ``KafkaApis`` takes the same collaborators as constructor arguments (``replicaManager``,
``groupCoordinator``, ``zkSupport.adminManager``, ``metadataCache``, ``fetchManager``,
``config``, ``time``, ...); this is that list, narrowed to what Franz's handlers use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from franz.broker.client_quotas import ClientQuotas
    from franz.broker.dynamic_config import DynamicBrokerConfig
    from franz.broker.fetch_session import FetchSessionCache
    from franz.broker.offsets_log import OffsetsTopicLog
    from franz.broker.producer_ids import ProducerIdGenerator
    from franz.broker.sasl_service import BrokerSasl
    from franz.broker.topic_manager import TopicManager
    from franz.broker.txn_log import TransactionTopicLog
    from franz.broker.txn_verification import AddPartitionsToTxnManager
    from franz.clock import Clock
    from franz.cluster.replica_manager import ReplicaManager
    from franz.cluster.replication_quota import ReplicationQuotas
    from franz.config.broker import BrokerConfig
    from franz.controller.shell.controller import Controller
    from franz.coordinator.group.coordinator import GroupCoordinator
    from franz.coordinator.transaction.coordinator import TransactionCoordinator
    from franz.metadata.cache import MetadataCache
    from franz.security.authorizer import AclAuthorizer
    from franz.storage.log_manager import LogManager

__all__ = ["BrokerServices"]


class BrokerServices(Protocol):
    """The collaborators of the request handlers (read-only members, always current)."""

    @property
    def broker_id(self) -> int:
        """This broker's ``broker.id``."""
        ...

    @property
    def cluster_id(self) -> str: ...

    @property
    def zk_mode(self) -> bool:
        """Cluster mode (``zookeeper.connect`` set): the controller's APIs are served."""
        ...

    @property
    def broker_epoch(self) -> int:
        """The czxid of this broker's ``/brokers/ids/<id>`` registration (Kafka's broker
        epoch, KIP-380); -1 in embedded mode or while unregistered."""
        ...

    @property
    def controller(self) -> Controller | None:
        """The controller this broker hosts (cluster mode; it acts only while this broker
        holds ``/controller``): ControlledShutdown is handed to it."""
        ...

    @property
    def sasl(self) -> BrokerSasl:
        """SASL listeners and the SCRAM credentials (``franz.broker.sasl_service``)."""
        ...

    @property
    def config(self) -> BrokerConfig:
        """The effective broker config (static, then dynamic broker configs)."""
        ...

    @property
    def clock(self) -> Clock: ...

    @property
    def fetch_max_bytes(self) -> int:
        """``fetch.max.bytes``: the cap on a Fetch response's ``max_bytes``."""
        ...

    @property
    def metadata_cache(self) -> MetadataCache:
        """Brokers, controller, partition states, topic ids and configs: what handlers read
        about the cluster."""
        ...

    @property
    def replica_manager(self) -> ReplicaManager: ...

    @property
    def replication_quotas(self) -> ReplicationQuotas:
        """The replication throttles (Kafka's ``QuotaManagers.leader`` / ``.follower``): Fetch
        throttles and counts what a leader serves its followers."""
        ...

    @property
    def client_quotas(self) -> ClientQuotas:
        """Client quotas (Kafka's ``QuotaManagers.produce`` / ``.fetch`` / ``.request``):
        the dispatcher and Fetch record into them, the quota APIs read and write them."""
        ...

    @property
    def log_manager(self) -> LogManager:
        """The log dirs (DescribeLogDirs)."""
        ...

    @property
    def topic_manager(self) -> TopicManager:
        """Topic administration (Kafka's ``ZkAdminManager``): create, delete, partitions,
        topic configs, DeleteRecords."""
        ...

    @property
    def dynamic_config(self) -> DynamicBrokerConfig: ...

    @property
    def group_coordinator(self) -> GroupCoordinator: ...

    @property
    def offsets_log(self) -> OffsetsTopicLog:
        """``__consumer_offsets`` (FindCoordinator creates it on first use)."""
        ...

    @property
    def txn_coordinator(self) -> TransactionCoordinator:
        """The transaction coordinator (InitProducerId, AddPartitionsToTxn, EndTxn, ...)."""
        ...

    @property
    def txn_log(self) -> TransactionTopicLog:
        """``__transaction_state`` (FindCoordinator key type 1 creates it on first use)."""
        ...

    @property
    def txn_verifier(self) -> AddPartitionsToTxnManager:
        """KIP-890's transaction verification (Kafka's ``AddPartitionsToTxnManager``)."""
        ...

    @property
    def fetch_sessions(self) -> FetchSessionCache: ...

    @property
    def producer_ids(self) -> ProducerIdGenerator:
        """InitProducerId's ids (blocks from the local store, or ZooKeeper in cluster mode)."""
        ...

    @property
    def authorizer(self) -> AclAuthorizer | None:
        """The ACL authorizer (``authorizer.class.name``); None: no authorizer, everything
        is allowed (``franz.broker.authz``)."""
        ...

    def on_topic_deleted(self, topic: str) -> None:
        """A topic was deleted: the group coordinator forgets its offsets."""
        ...
