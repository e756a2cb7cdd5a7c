"""The broker's side of ``__transaction_state``: create it, append the transaction
coordinator's batches with acks=all, load and unload its partitions as leadership moves.

Kafka creates the topic on the first FindCoordinator for a transactional id (key type 1) with
``transaction.state.log.num.partitions`` partitions (50), replication factor
``transaction.state.log.replication.factor`` (3), and the topic configs of
``TransactionLog.transactionTopicConfigs``: ``cleanup.policy=compact``,
``min.insync.replicas=transaction.state.log.min.isr`` (2),
``segment.bytes=transaction.state.log.segment.bytes``, ``unclean.leader.election.enable=false``
and ``compression.type=uncompressed``. As for ``__consumer_offsets``
(``franz.broker.offsets_log``), cluster mode does not cap the factor (too few live brokers:
nothing is created, FindCoordinator answers COORDINATOR_NOT_AVAILABLE and the client retries),
and the embedded single-node mode creates it with factor 1 and min ISR 1 (its one broker is the
whole cluster, as Kafka's sample single-node ``server.properties`` sets both to 1).

Appends are Kafka's ``appendTransactionToLog``: ``required_acks=-1``, waiting for the ISR
within ``request.timeout.ms`` (30 s, ``APPEND_TIMEOUT_MS``); errors are raised as ``ApiError``
and mapped to the client's code by ``TransactionStateManager``.

Leadership (``TransactionCoordinator.onElection`` / ``onResignation``): a partition this broker
now leads is marked loading at once with the partition's leader epoch as coordinator epoch,
then loaded from its log start to its log end on the next event-loop turn, and the markers of
its Prepare* transactions are resumed; a partition it no longer leads is unloaded.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Final

from franz.broker.internal_topics import (
    append_and_wait,
    create_internal_topic,
    iter_partition_batches,
)
from franz.coordinator.transaction.state_manager import TRANSACTION_STATE_TOPIC
from franz.protocol.records.inflated import iter_records
from franz.storage.files import TopicPartition

if TYPE_CHECKING:
    from franz.broker.topic_manager import TopicManager
    from franz.cluster.partition import Partition
    from franz.config.broker import BrokerConfig
    from franz.coordinator.transaction.coordinator import TransactionCoordinator
    from franz.storage.log import Log

__all__ = ["APPEND_TIMEOUT_MS", "TransactionTopicLog"]

log = logging.getLogger(__name__)

#: Kafka's ``request.timeout.ms`` default, the bound of ``appendTransactionToLog``'s wait.
APPEND_TIMEOUT_MS: Final = 30_000


class TransactionTopicLog:
    """``TxnLogWriter`` over this broker's replicas of ``__transaction_state``."""

    def __init__(self, config: BrokerConfig, topic_manager: TopicManager) -> None:
        self._config = config
        self._topics = topic_manager

    def partition_count(self) -> int | None:
        record = self._topics.get(TRANSACTION_STATE_TOPIC)
        return None if record is None else record.partition_count

    def ensure_topic(self) -> int:
        """Create ``__transaction_state`` if it does not exist; its partition count."""
        cluster = self._topics.cluster is not None
        factor = self._config.get("transaction.state.log.replication.factor") if cluster else 1
        min_isr = self._config.get("transaction.state.log.min.isr") if cluster else 1
        return create_internal_topic(
            self._topics,
            TRANSACTION_STATE_TOPIC,
            self._config.get("transaction.state.log.num.partitions"),
            factor,
            {
                "cleanup.policy": "compact",
                "compression.type": "uncompressed",
                "min.insync.replicas": str(min_isr),
                "segment.bytes": str(self._config.get("transaction.state.log.segment.bytes")),
                "unclean.leader.election.enable": "false",
            },
        )

    async def append(self, partition: int, batch: bytearray) -> None:
        await append_and_wait(
            self._topics.replica_manager,
            TopicPartition(TRANSACTION_STATE_TOPIC, partition),
            batch,
            required_acks=-1,
            timeout_ms=APPEND_TIMEOUT_MS,
        )

    # --- leadership ---------------------------------------------------------------------------

    def leadership_listener(self, coordinator: TransactionCoordinator) -> _TxnCoordinatorListener:
        return _TxnCoordinatorListener(self, coordinator)

    def on_leadership_change(
        self,
        coordinator: TransactionCoordinator,
        leaders: Sequence[tuple[TopicPartition, int]],
        followers: Sequence[TopicPartition],
    ) -> None:
        """``leaders``: (partition, leader epoch) of partitions led here now."""
        state = coordinator.state
        for tp in followers:
            if tp.topic == TRANSACTION_STATE_TOPIC:
                dropped = state.unload_partition(tp.partition)
                if dropped:
                    log.info("resigned as transaction coordinator of %s: %d id(s)", tp, dropped)
        elected = [(tp.partition, e) for tp, e in leaders if tp.topic == TRANSACTION_STATE_TOPIC]
        if not elected:
            return
        count = self.partition_count()
        if count is not None:
            state.partition_count = count
        for partition, epoch in elected:
            state.begin_loading(partition, epoch)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            for partition, epoch in elected:
                self._load(coordinator, partition, epoch)
            return
        for partition, epoch in elected:
            loop.call_soon(self._load, coordinator, partition, epoch)

    def _load(self, coordinator: TransactionCoordinator, partition: int, epoch: int) -> None:
        state = coordinator.state
        if not state.is_loading(partition, epoch):
            return  # resigned or re-elected meanwhile
        tp = TopicPartition(TRANSACTION_STATE_TOPIC, partition)
        data_log = self._topics.replica_manager.log_manager.get_log(tp)
        buffer_size = self._config.get("transaction.state.log.load.buffer.size")
        records = list(_read_records(data_log, buffer_size)) if data_log is not None else []
        loaded = state.load_partition(partition, epoch, records)
        if loaded:
            log.info(
                "elected transaction coordinator of %s at epoch %d: %d id(s) loaded",
                tp,
                epoch,
                len(loaded),
            )
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return
        coordinator.resume_markers(partition, loaded)

    def load_into(self, coordinator: TransactionCoordinator) -> None:
        """At startup: load every partition of ``__transaction_state`` led here."""
        count = self.partition_count()
        if count is None:
            return
        coordinator.state.partition_count = count
        for tp, replica in self._topics.replica_manager.partitions.items():
            if tp.topic == TRANSACTION_STATE_TOPIC and replica.is_leader:
                coordinator.state.begin_loading(tp.partition, replica.leader_epoch)
                self._load(coordinator, tp.partition, replica.leader_epoch)


def _read_records(data_log: Log, buffer_size: int) -> Iterator[tuple[bytes, bytes | None]]:
    """Every data record's (key, value) from log start to log end, in offset order (Kafka's
    ``loadTransactionMetadata`` reads to the log end: ``FetchIsolation.LOG_END``)."""
    for batch in iter_partition_batches(data_log, buffer_size):
        if batch.is_control_batch:
            continue
        for record in iter_records(batch):
            if record.key is not None:
                value = None if record.value is None else bytes(record.value)
                yield bytes(record.key), value


class _TxnCoordinatorListener:
    """``LeadershipListener`` moving the transaction coordinator with the partitions."""

    def __init__(self, txn_log: TransactionTopicLog, coordinator: TransactionCoordinator) -> None:
        self._txn_log = txn_log
        self._coordinator = coordinator

    def on_leadership_change(
        self, new_leaders: Sequence[Partition], new_followers: Sequence[Partition]
    ) -> None:
        self._txn_log.on_leadership_change(
            self._coordinator,
            [(p.topic_partition, p.leader_epoch) for p in new_leaders],
            [p.topic_partition for p in new_followers],
        )

    def on_replicas_stopped(self, stopped: Sequence[tuple[TopicPartition, int]]) -> None:
        self._txn_log.on_leadership_change(self._coordinator, [], [tp for tp, _ in stopped])
