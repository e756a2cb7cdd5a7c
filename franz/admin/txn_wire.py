"""Kafka's transaction admin APIs (KIP-664), as Kafka 3.9's ``Admin`` client sends them.

``franz transactions`` (``kafka-transactions.sh``) needs requests librdkafka does not offer;
they go over ``franz.admin.wire`` connections found by ``franz.admin.cluster_wire``:

* ListTransactions (66, v0-1; v1 adds ``duration_filter``, KIP-994) to *every* broker
  (Kafka's ``AllBrokersStrategy``): each answers for the transaction coordinators it hosts;
* FindCoordinator (10, key type 1 = TRANSACTION) to any broker, then DescribeTransactions
  (65, v0) to the transactional id's coordinator (``CoordinatorStrategy``);
* DescribeProducers (61, v0) to the partition's leader (``PartitionLeaderStrategy``) or to
  the broker given (``StaticBrokerStrategy``, ``--broker-id``);
* WriteTxnMarkers (27, v0-1) with one ABORT marker to the partition's leader
  (``Admin.abortTransaction``, ``AbortTransactionHandler``): the hanging-transaction repair;
* Metadata (3) for topic names (``listTopics``, internal ones on request) and each
  partition's leader and replicas.

Retriable errors are retried as Kafka's handlers do (COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, NOT_LEADER_OR_FOLLOWER,
UNKNOWN_TOPIC_OR_PARTITION) until ``--timeout``; the others raise :class:`AdminCallError`
whose message is the text of the Java exception Kafka's handler builds, which the tool
prints after its own context as ``TransactionsCommand.printErrorAndExit`` does.

Values are plain: :class:`TransactionListing`, :class:`TransactionDescription`,
:class:`ProducerState` (Kafka's ``clients.admin`` classes of those names; ``-1`` stands for
their empty ``Optional``s, as on the wire).
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from franz.admin.cluster_wire import ClusterClient
from franz.admin.options import ToolError
from franz.errors import ErrorCode

__all__ = [
    "AbortSpec",
    "AdminCallError",
    "ProducerState",
    "TransactionDescription",
    "TransactionListing",
    "TransactionsClient",
]

METADATA: Final = 3
FIND_COORDINATOR: Final = 10
WRITE_TXN_MARKERS: Final = 27
DESCRIBE_PRODUCERS: Final = 61
DESCRIBE_TRANSACTIONS: Final = 65
LIST_TRANSACTIONS: Final = 66
#: FindCoordinator's ``key_type`` for a transactional id (``CoordinatorType.TRANSACTION``).
TRANSACTION_KEY_TYPE: Final = 1
#: The admin client's ``retry.backoff.ms``.
RETRY_BACKOFF_S: Final = 0.1
_COORDINATOR_MOVED: Final = frozenset(
    {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE}
)
_LEADER_MOVED: Final = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.BROKER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
)
_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)

TopicPartition = tuple[str, int]


class AdminCallError(ToolError):
    """A call failed as Kafka's admin client fails it; the message is the Java exception's."""


class _Retry(Exception):
    """Try again after the backoff (the reason is the message)."""


@dataclass(frozen=True)
class TransactionListing:
    """One row of ListTransactions: ``state`` is the coordinator's name (``Ongoing``, ...)."""

    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True)
class TransactionDescription:
    """DescribeTransactions' answer for one id (``start_time_ms`` -1: none running)."""

    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ProducerState:
    """A partition's active producer (DescribeProducers); ``coordinator_epoch`` and
    ``txn_start_offset`` are -1 when absent."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    txn_start_offset: int


@dataclass(frozen=True)
class AbortSpec:
    """Kafka's ``AbortTransactionSpec``: the marker to write on one partition."""

    partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __str__(self) -> str:
        topic, index = self.partition
        return (
            f"AbortTransactionSpec(topicPartition={topic}-{index}, producerId={self.producer_id}"
            f", producerEpoch={self.producer_epoch}, coordinatorEpoch={self.coordinator_epoch})"
        )


def millis(value: Any) -> int:
    """kio's decoded time fields (``timedelta``, aware ``datetime``, ``int``) in ms."""
    if isinstance(value, datetime.timedelta):
        return int(value // datetime.timedelta(milliseconds=1))
    if isinstance(value, datetime.datetime):
        return int((value - _EPOCH) // datetime.timedelta(milliseconds=1))
    return int(value)


def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for topic, partition in partitions:
        out.setdefault(topic, []).append(partition)
    return out


class TransactionsClient:
    """The transaction admin calls over a :class:`ClusterClient` (its ``--timeout``)."""

    def __init__(self, cluster: ClusterClient) -> None:
        self.cluster = cluster

    def _retrying(self, attempt: Any, what: str) -> Any:
        deadline = time.monotonic() + self.cluster.timeout_ms / 1000
        problem = "no answer"
        while True:
            try:
                return attempt()
            except _Retry as retry:
                problem = str(retry)
            if time.monotonic() + RETRY_BACKOFF_S >= deadline:
                raise AdminCallError(
                    f"Timed out waiting for {what} after {self.cluster.timeout_ms} ms ({problem})"
                )
            time.sleep(RETRY_BACKOFF_S)

    def _any_broker(self) -> int:
        brokers = self.cluster.nodes().brokers
        if not brokers:
            raise _Retry("no broker in the metadata")
        return min(brokers)

    # -- metadata ------------------------------------------------------------------------

    def _metadata(self, topics: list[str] | None) -> Any:
        data = {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
        }
        return self.cluster.to_broker(self._any_broker(), METADATA, data, 12)

    def list_topics(self, *, include_internal: bool = False) -> list[str]:
        """Every topic (the internal ones only with ``include_internal``, as
        ``ListTopicsOptions.listInternal``), in the broker's order."""
        response = self._metadata(None)
        return [
            t.name
            for t in response.topics
            if include_internal or not bool(getattr(t, "is_internal", False))
        ]

    def describe_topics(self, topics: list[str]) -> dict[str, list[tuple[int, tuple[int, ...]]]]:
        """Each topic's partitions with their replicas; an unknown topic is an error."""
        response = self._metadata(topics)
        out: dict[str, list[tuple[int, tuple[int, ...]]]] = {}
        for t in response.topics:
            code = ErrorCode(int(t.error_code))
            if code != ErrorCode.NONE:
                raise AdminCallError(code.message)
            out[t.name] = sorted(
                (int(p.partition_index), tuple(map(int, p.replica_nodes))) for p in t.partitions
            )
        return out

    def _leader(self, partition: TopicPartition) -> int:
        topic, index = partition
        response = self._metadata([topic])
        for t in response.topics:
            for p in t.partitions:
                if int(p.partition_index) == index and int(p.leader_id) >= 0:
                    return int(p.leader_id)
        raise _Retry(f"no leader known for {topic}-{index}")

    # -- ListTransactions ----------------------------------------------------------------

    def list_transactions(
        self, *, producer_ids: Iterable[int] = (), duration_filter: int | None = None
    ) -> dict[int, list[TransactionListing]]:
        """ListTransactions to every broker: the listings by broker (coordinator) id."""
        data: dict[str, Any] = {
            "state_filters": [],
            "producer_id_filters": list(producer_ids),
            "duration_filter": -1 if duration_filter is None else duration_filter,
        }
        out: dict[int, list[TransactionListing]] = {}
        for broker in sorted(self.cluster.nodes().brokers):

            def attempt(broker: int = broker) -> list[TransactionListing]:
                response = self.cluster.to_broker(broker, LIST_TRANSACTIONS, data, 1)
                code = ErrorCode(int(response.error_code))
                if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                    raise _Retry(f"broker {broker}: {code.name}")
                if code != ErrorCode.NONE:
                    raise AdminCallError(code.message)
                return [
                    TransactionListing(
                        s.transactional_id, int(s.producer_id), str(s.transaction_state)
                    )
                    for s in response.transaction_states
                ]

            out[broker] = self._retrying(attempt, "listTransactions")
        return out

    # -- DescribeTransactions ------------------------------------------------------------

    def find_coordinator(self, transactional_id: str) -> int:
        """The broker id of ``transactional_id``'s transaction coordinator."""
        response = self.cluster.to_broker(
            self._any_broker(),
            FIND_COORDINATOR,
            {
                "key_type": TRANSACTION_KEY_TYPE,
                "key": transactional_id,
                "coordinator_keys": [transactional_id],
            },
            4,
        )
        answer = response.coordinators[0] if hasattr(response, "coordinators") else response
        code = ErrorCode(int(answer.error_code))
        if code in _COORDINATOR_MOVED or code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            raise _Retry(f"FindCoordinator: {code.name}")
        if code != ErrorCode.NONE:
            raise AdminCallError(answer.error_message or code.message)
        return int(answer.node_id)

    def describe_transaction(self, transactional_id: str) -> TransactionDescription:
        """DescribeTransactions of one id at its coordinator (``DescribeTransactionsHandler``)."""

        def attempt() -> TransactionDescription:
            coordinator = self.find_coordinator(transactional_id)
            response = self.cluster.to_broker(
                coordinator, DESCRIBE_TRANSACTIONS, {"transactional_ids": [transactional_id]}, 0
            )
            for state in response.transaction_states:
                if state.transactional_id != transactional_id:
                    continue
                code = ErrorCode(int(state.error_code))
                quoted = f"DescribeTransactions request for transactionalId `{transactional_id}`"
                if code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                    raise AdminCallError(f"{quoted} failed because the ID could not be found")
                if code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                    raise AdminCallError(f"{quoted} failed due to authorization failure")
                if code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS or code in _COORDINATOR_MOVED:
                    raise _Retry(f"DescribeTransactions: {code.name}")
                if code != ErrorCode.NONE:
                    raise AdminCallError(f"{quoted} failed due to unexpected error")
                return TransactionDescription(
                    coordinator,
                    str(state.transaction_state),
                    int(state.producer_id),
                    int(state.producer_epoch),
                    millis(state.transaction_timeout),
                    millis(state.transaction_start_time),
                    tuple((t.topic, int(p)) for t in state.topics for p in t.partitions),
                )
            raise _Retry(f"no answer for transactional id {transactional_id!r}")

        result: TransactionDescription = self._retrying(attempt, "describeTransactions")
        return result

    # -- DescribeProducers ---------------------------------------------------------------

    def describe_producers(
        self, partitions: list[TopicPartition], broker_id: int | None = None
    ) -> dict[TopicPartition, list[ProducerState]]:
        """Active producers of ``partitions``: one DescribeProducers per leader (one
        Metadata request finds them), or one to ``broker_id``. Partitions answered with a
        retriable error are asked again, with fresh leaders, until the timeout."""
        done: dict[TopicPartition, list[ProducerState]] = {}

        def attempt() -> dict[TopicPartition, list[ProducerState]]:
            pending = [tp for tp in partitions if tp not in done]
            by_broker: dict[int, list[TopicPartition]] = {}
            if broker_id is not None:
                by_broker[broker_id] = pending
            else:
                leaders = self._leaders(pending)
                for tp in pending:
                    if tp in leaders:
                        by_broker.setdefault(leaders[tp], []).append(tp)
            for broker, asked in by_broker.items():
                done.update(self._describe_producers_at(broker, asked, broker_id))
            missing = [tp for tp in partitions if tp not in done]
            if missing:
                topic, index = missing[0]
                raise _Retry(f"no producer state yet for {topic}-{index} ({len(missing)} left)")
            return {tp: done[tp] for tp in partitions}

        result: dict[TopicPartition, list[ProducerState]] = self._retrying(
            attempt, "describeProducers"
        )
        return result

    def _leaders(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """The current leader of each of ``partitions`` that has one (one Metadata request)."""
        wanted = set(partitions)
        response = self._metadata(sorted({t for t, _ in partitions}))
        return {
            (t.name, int(p.partition_index)): int(p.leader_id)
            for t in response.topics
            for p in t.partitions
            if (t.name, int(p.partition_index)) in wanted and int(p.leader_id) >= 0
        }

    def _describe_producers_at(
        self, broker: int, partitions: list[TopicPartition], broker_id: int | None
    ) -> dict[TopicPartition, list[ProducerState]]:
        """One DescribeProducers to ``broker``: the partitions it answered without a
        retriable error (``DescribeProducersHandler.handleResponse``)."""
        response = self.cluster.to_broker(
            broker,
            DESCRIBE_PRODUCERS,
            {
                "topics": [
                    {"name": t, "partition_indexes": ps} for t, ps in _by_topic(partitions).items()
                ]
            },
            0,
        )
        out: dict[TopicPartition, list[ProducerState]] = {}
        for t in response.topics:
            for p in t.partitions:
                tp = (t.name, int(p.partition_index))
                code = ErrorCode(int(p.error_code))
                name = f"{tp[0]}-{tp[1]}"
                if code == ErrorCode.NOT_LEADER_OR_FOLLOWER and broker_id is not None:
                    raise AdminCallError(
                        f"Failed to describe active producers for partition {name} "
                        f"on brokerId {broker_id}"
                    )
                if code in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                    continue  # asked again (unmapped, or retried as Kafka's handler does)
                if code != ErrorCode.NONE:
                    raise AdminCallError(
                        f"Failed to describe active producers for partition {name} "
                        "due to unexpected error"
                    )
                out[tp] = [
                    ProducerState(
                        int(s.producer_id),
                        int(s.producer_epoch),
                        int(s.last_sequence),
                        millis(s.last_timestamp),
                        int(s.coordinator_epoch),
                        int(s.current_txn_start_offset),
                    )
                    for s in p.active_producers
                ]
        return out

    # -- WriteTxnMarkers (abort) ---------------------------------------------------------

    def abort_transaction(self, spec: AbortSpec) -> None:
        """One ABORT marker for ``spec`` at the partition's leader (``AbortTransactionHandler``)."""
        topic, index = spec.partition

        def attempt() -> bool:
            leader = self._leader(spec.partition)
            response = self.cluster.to_broker(
                leader,
                WRITE_TXN_MARKERS,
                {
                    "markers": [
                        {
                            "producer_id": spec.producer_id,
                            "producer_epoch": spec.producer_epoch,
                            "transaction_result": False,
                            "topics": [{"name": topic, "partition_indexes": [index]}],
                            "coordinator_epoch": spec.coordinator_epoch,
                        }
                    ]
                },
                1,
            )
            codes = [
                ErrorCode(int(p.error_code))
                for m in response.markers
                if int(m.producer_id) == spec.producer_id
                for t in m.topics
                if t.name == topic
                for p in t.partitions
                if int(p.partition_index) == index
            ]
            if len(codes) != 1:
                raise AdminCallError(
                    f"WriteTxnMarkers response included unexpected entries (expected to find "
                    f"exactly one entry with producerId {spec.producer_id} for {topic}-{index})"
                )
            code = codes[0]
            request = f"WriteTxnMarkers request with {spec}"
            if code == ErrorCode.NONE:
                return True
            if code in _LEADER_MOVED:
                raise _Retry(f"WriteTxnMarkers: {code.name}")
            if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
                raise AdminCallError(f"{request} failed due to cluster authorization error")
            if code == ErrorCode.INVALID_PRODUCER_EPOCH:
                raise AdminCallError(f"{request} failed due an invalid producer epoch")
            if code == ErrorCode.TRANSACTION_COORDINATOR_FENCED:
                raise AdminCallError(
                    f"{request} failed since the provided coordinator epoch "
                    f"{spec.coordinator_epoch} has been fenced by the active coordinator"
                )
            raise AdminCallError(f"{request} failed due to unexpected error: {code.message}")

        self._retrying(attempt, "abortTransaction")
