"""API keys and the versions Franz advertises and accepts (the ApiVersions contract).

Franz advertises the ranges of **Apache Kafka 3.9** (the last release with ZooKeeper mode, which
Franz's cluster design follows) for every API it implements, starting at v0 as Kafka 3.x does,
so that clients that gate features on the presence of old versions (librdkafka < 2.11.1 checks
Produce v0 for compression, KAFKA-18659) and clients that infer a broker release from the
table (kafka-python) see one coherent, real Kafka release.

Every advertised version is served, as Kafka 3.9 serves it. kio (generated from Kafka 4's
schemas) has classes from ``min_accepted`` up: Kafka 4.0's floors (KIP-896 removed the pre-2.1
protocol, and with it message formats v0/v1). The versions from ``legacy_from`` below that
are served by hand: clients that do not send ApiVersions use them (librdkafka with
``api.version.request=false`` and ``broker.version.fallback`` 0.8/0.9: Metadata v0, Produce
v0-1, Fetch v0-1, ListOffsets v0, OffsetCommit v1-2, OffsetFetch v1; kafka-python with
``api_version`` (0, 10): Produce v2, Fetch v2). Produce v0-2 message sets of magic 0/1 are
up-converted to v2 batches and Fetch v0-3 gets v2 batches down-converted
(``franz.protocol.records.legacy``); their messages are in ``franz.protocol.legacy_versions``,
the other old versions reuse the next version's kio classes (``franz.protocol.stand_ins``).

Only APIs listed here appear in ApiVersions. An API is added when its handler works.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

__all__ = ["INTER_BROKER_APIS", "SUPPORTED_APIS", "ApiKey", "ApiSupport", "advertised_range"]


class ApiKey(enum.IntEnum):
    """Kafka's API keys (``ApiKeys.java``), those Franz knows by name."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    # Transactions (issue 19): the transaction coordinator's APIs and the markers it sends.
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    # Authorization (issue 20).
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    INCREMENTAL_ALTER_CONFIGS = 44
    ELECT_LEADERS = 43
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    SASL_AUTHENTICATE = 36
    ALTER_PARTITION = 56
    # SASL (issue 20): the SCRAM credential admin APIs (KIP-554).
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    # Transactions (issue 19): the transaction coordinator's admin APIs (KIP-664).
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66


@dataclass(frozen=True, slots=True)
class ApiSupport:
    """One API's versions: advertised ``[min_advertised, max_version]``, served from
    ``min_accepted`` (with kio's classes) and from ``legacy_from`` (hand-written pre-KIP-896
    versions; -1: none); ``first_flexible`` is the first KIP-482 version (-1: none)."""

    min_advertised: int
    min_accepted: int
    max_version: int
    first_flexible: int
    legacy_from: int = -1

    def accepts(self, version: int) -> bool:
        if 0 <= self.legacy_from <= version < self.min_accepted:
            return True
        return self.min_accepted <= version <= self.max_version

    def is_legacy(self, version: int) -> bool:
        """A version served by hand-written codecs (kio has no class for it)."""
        return 0 <= self.legacy_from <= version < self.min_accepted

    def is_flexible(self, version: int) -> bool:
        return 0 <= self.first_flexible <= version


#: Kafka 3.9's ranges (``clients/src/main/resources/common/message/*.json`` at 3.9.0) and the
#: first flexible version of each; floors per Kafka 4.0 (KIP-896), and Kafka 3.9's v0 for the
#: data path.
SUPPORTED_APIS: Final[dict[ApiKey, ApiSupport]] = {
    ApiKey.PRODUCE: ApiSupport(0, 3, 11, 9, legacy_from=0),
    ApiKey.FETCH: ApiSupport(0, 4, 17, 12, legacy_from=0),
    ApiKey.LIST_OFFSETS: ApiSupport(0, 1, 9, 6, legacy_from=0),
    ApiKey.METADATA: ApiSupport(0, 0, 12, 9),
    ApiKey.API_VERSIONS: ApiSupport(0, 0, 4, 3),
    ApiKey.CREATE_TOPICS: ApiSupport(0, 2, 7, 5, legacy_from=0),
    ApiKey.DELETE_TOPICS: ApiSupport(0, 1, 6, 4, legacy_from=0),
    ApiKey.DELETE_RECORDS: ApiSupport(0, 0, 2, 2),
    ApiKey.INIT_PRODUCER_ID: ApiSupport(0, 0, 5, 2),
    ApiKey.DESCRIBE_CONFIGS: ApiSupport(0, 1, 4, 4, legacy_from=0),
    ApiKey.ALTER_CONFIGS: ApiSupport(0, 0, 2, 2),
    ApiKey.ALTER_REPLICA_LOG_DIRS: ApiSupport(0, 1, 2, 2, legacy_from=0),
    ApiKey.DESCRIBE_LOG_DIRS: ApiSupport(0, 1, 4, 2, legacy_from=0),
    ApiKey.CREATE_PARTITIONS: ApiSupport(0, 0, 3, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: ApiSupport(0, 0, 1, 1),
    ApiKey.DESCRIBE_CLUSTER: ApiSupport(0, 0, 1, 0),
    ApiKey.FIND_COORDINATOR: ApiSupport(0, 0, 6, 3),
    ApiKey.OFFSET_COMMIT: ApiSupport(0, 2, 9, 8, legacy_from=0),
    ApiKey.OFFSET_FETCH: ApiSupport(0, 1, 9, 6, legacy_from=0),
    ApiKey.JOIN_GROUP: ApiSupport(0, 0, 9, 6),
    ApiKey.HEARTBEAT: ApiSupport(0, 0, 4, 4),
    ApiKey.LEAVE_GROUP: ApiSupport(0, 0, 5, 4),
    ApiKey.SYNC_GROUP: ApiSupport(0, 0, 5, 4),
    ApiKey.DESCRIBE_GROUPS: ApiSupport(0, 0, 5, 5),
    ApiKey.LIST_GROUPS: ApiSupport(0, 0, 5, 3),
    ApiKey.DELETE_GROUPS: ApiSupport(0, 0, 2, 2),
    ApiKey.OFFSET_DELETE: ApiSupport(0, 0, 0, -1),
    ApiKey.ELECT_LEADERS: ApiSupport(0, 0, 2, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: ApiSupport(0, 0, 0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: ApiSupport(0, 0, 0, 0),
    ApiKey.OFFSET_FOR_LEADER_EPOCH: ApiSupport(0, 2, 4, 4, legacy_from=0),
    # Transactions, the partition leader's side (KIP-98, KIP-664): WriteTxnMarkers v0 is
    # served by hand (franz.protocol.legacy_versions).
    ApiKey.WRITE_TXN_MARKERS: ApiSupport(0, 1, 1, 1, legacy_from=0),
    ApiKey.DESCRIBE_PRODUCERS: ApiSupport(0, 0, 0, 0),
    # The transaction coordinator (issue 19). AddPartitionsToTxn v4+ are the brokers'
    # (KIP-890 verification); Kafka 3.9 advertises them, so does Franz.
    ApiKey.ADD_PARTITIONS_TO_TXN: ApiSupport(0, 0, 5, 3),
    ApiKey.ADD_OFFSETS_TO_TXN: ApiSupport(0, 0, 4, 3),
    ApiKey.END_TXN: ApiSupport(0, 0, 4, 3),
    ApiKey.DESCRIBE_TRANSACTIONS: ApiSupport(0, 0, 0, 0),
    ApiKey.LIST_TRANSACTIONS: ApiSupport(0, 0, 1, 0),
    # Transactions (issue 19): TxnOffsetCommit v0-4 as Kafka 3.9 (v5, KIP-890, is Kafka 4's).
    ApiKey.TXN_OFFSET_COMMIT: ApiSupport(0, 0, 4, 3),
    # Client quotas (issue 20, KIP-546).
    ApiKey.DESCRIBE_CLIENT_QUOTAS: ApiSupport(0, 0, 1, 1),
    ApiKey.ALTER_CLIENT_QUOTAS: ApiSupport(0, 0, 1, 1),
    # Authorization (issue 20): v0 with the v1 classes (``franz.protocol.acls_v0``).
    ApiKey.DESCRIBE_ACLS: ApiSupport(0, 1, 3, 2, legacy_from=0),
    ApiKey.CREATE_ACLS: ApiSupport(0, 1, 3, 2, legacy_from=0),
    ApiKey.DELETE_ACLS: ApiSupport(0, 1, 3, 2, legacy_from=0),
    # SASL (issue 20): the handshake and the tokens (KIP-43, KIP-152, KIP-368), and the
    # SCRAM credential APIs (KIP-554), as Kafka 3.9.
    ApiKey.SASL_HANDSHAKE: ApiSupport(0, 0, 1, -1),
    ApiKey.SASL_AUTHENTICATE: ApiSupport(0, 0, 2, 2),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: ApiSupport(0, 0, 0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: ApiSupport(0, 0, 0, 0),
}


#: Kafka 3.9's ZooKeeper-era inter-broker APIs (removed in Kafka 4, so absent from kio):
#: decoded and encoded by ``franz.protocol.inter_broker``, served and advertised in cluster
#: mode only (as a Kafka 3.9 ZooKeeper-mode broker: LeaderAndIsr, StopReplica, UpdateMetadata,
#: ControlledShutdown), hence kept out of ``SUPPORTED_APIS``. Every version is accepted and
#: applied: the controller of a Kafka 3.9 cluster at an older ``inter.broker.protocol.version``
#: sends older versions (``franz.controller.old_versions``). AlterPartition (KIP-497) is in
#: Kafka 4 too, but its v0-v1 are not in kio, and a ZooKeeper-mode broker serves it (to its
#: controller's leaders) in cluster mode only: all four versions come from
#: ``franz.protocol.inter_broker``, generated from Kafka 3.9's schemas.
INTER_BROKER_APIS: Final[dict[ApiKey, ApiSupport]] = {
    ApiKey.LEADER_AND_ISR: ApiSupport(0, 0, 7, 4),
    ApiKey.STOP_REPLICA: ApiSupport(0, 0, 4, 2),
    ApiKey.UPDATE_METADATA: ApiSupport(0, 0, 8, 6),
    ApiKey.CONTROLLED_SHUTDOWN: ApiSupport(0, 0, 3, 3),
    ApiKey.ALTER_PARTITION: ApiSupport(0, 0, 3, 0),
}


def advertised_range(api_key: int) -> tuple[int, int] | None:
    support = SUPPORTED_APIS.get(api_key)  # type: ignore[call-overload]
    return None if support is None else (support.min_advertised, support.max_version)
