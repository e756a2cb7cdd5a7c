"""One module per API, each with ``handle(ctx, request)``; ``HANDLERS`` maps API keys to them.

An API appears in ApiVersions exactly when it is registered here (and listed in
``franz.protocol.api_keys.SUPPORTED_APIS`` with its versions, or, in cluster mode only, in
``INTER_BROKER_APIS``: a Kafka 3.9 ZooKeeper-mode broker lists LeaderAndIsr, StopReplica,
UpdateMetadata, ControlledShutdown and AlterPartition in its ApiVersions).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.broker.handlers import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_client_quotas,
    alter_configs,
    alter_partition,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    alter_user_scram_credentials,
    api_versions,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leader_and_isr,
    leave_group,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    stop_replica,
    sync_group,
    txn_offset_commit,
    update_metadata,
    write_txn_markers,
)
from franz.protocol.api_keys import ApiKey

__all__ = ["HANDLERS", "Handler"]

Handler = Callable[[RequestContext, Any], HandlerResult | Awaitable[HandlerResult]]

HANDLERS: dict[int, Handler] = {
    ApiKey.PRODUCE: produce.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.LIST_OFFSETS: list_offsets.handle,
    ApiKey.METADATA: metadata.handle,
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.INIT_PRODUCER_ID: init_producer_id.handle,
    ApiKey.CREATE_TOPICS: create_topics.handle,
    ApiKey.DELETE_TOPICS: delete_topics.handle,
    ApiKey.DELETE_RECORDS: delete_records.handle,
    ApiKey.CREATE_PARTITIONS: create_partitions.handle,
    ApiKey.DESCRIBE_CONFIGS: describe_configs.handle,
    ApiKey.ALTER_CONFIGS: alter_configs.handle,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: incremental_alter_configs.handle,
    ApiKey.DESCRIBE_CLUSTER: describe_cluster.handle,
    ApiKey.DESCRIBE_LOG_DIRS: describe_log_dirs.handle,
    ApiKey.ALTER_REPLICA_LOG_DIRS: alter_replica_log_dirs.handle,
    ApiKey.FIND_COORDINATOR: find_coordinator.handle,
    ApiKey.JOIN_GROUP: join_group.handle,
    ApiKey.SYNC_GROUP: sync_group.handle,
    ApiKey.HEARTBEAT: heartbeat.handle,
    ApiKey.LEAVE_GROUP: leave_group.handle,
    ApiKey.OFFSET_COMMIT: offset_commit.handle,
    ApiKey.OFFSET_FETCH: offset_fetch.handle,
    ApiKey.DESCRIBE_GROUPS: describe_groups.handle,
    ApiKey.LIST_GROUPS: list_groups.handle,
    ApiKey.DELETE_GROUPS: delete_groups.handle,
    ApiKey.OFFSET_DELETE: offset_delete.handle,
    ApiKey.ELECT_LEADERS: elect_leaders.handle,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: alter_partition_reassignments.handle,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: list_partition_reassignments.handle,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch.handle,
    # Transactions, the partition leader's side.
    ApiKey.WRITE_TXN_MARKERS: write_txn_markers.handle,
    ApiKey.DESCRIBE_PRODUCERS: describe_producers.handle,
    # The transaction coordinator (issue 19).
    ApiKey.ADD_PARTITIONS_TO_TXN: add_partitions_to_txn.handle,
    ApiKey.ADD_OFFSETS_TO_TXN: add_offsets_to_txn.handle,
    ApiKey.END_TXN: end_txn.handle,
    ApiKey.DESCRIBE_TRANSACTIONS: describe_transactions.handle,
    ApiKey.LIST_TRANSACTIONS: list_transactions.handle,
    # Transactions (issue 19).
    ApiKey.TXN_OFFSET_COMMIT: txn_offset_commit.handle,
    # Client quotas (issue 20).
    ApiKey.DESCRIBE_CLIENT_QUOTAS: describe_client_quotas.handle,
    ApiKey.ALTER_CLIENT_QUOTAS: alter_client_quotas.handle,
    # Authorization (issue 20): the AclAuthorizer's APIs.
    ApiKey.DESCRIBE_ACLS: describe_acls.handle,
    ApiKey.CREATE_ACLS: create_acls.handle,
    ApiKey.DELETE_ACLS: delete_acls.handle,
    # The controller's APIs: served and advertised in cluster mode only
    # (``franz.protocol.api_keys.INTER_BROKER_APIS``).
    ApiKey.LEADER_AND_ISR: leader_and_isr.handle,
    ApiKey.STOP_REPLICA: stop_replica.handle,
    ApiKey.UPDATE_METADATA: update_metadata.handle,
    ApiKey.CONTROLLED_SHUTDOWN: controlled_shutdown.handle,
    ApiKey.ALTER_PARTITION: alter_partition.handle,
    # SASL (issue 20).
    ApiKey.SASL_HANDSHAKE: sasl_handshake.handle,
    ApiKey.SASL_AUTHENTICATE: sasl_authenticate.handle,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: describe_user_scram_credentials.handle,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: alter_user_scram_credentials.handle,
}
