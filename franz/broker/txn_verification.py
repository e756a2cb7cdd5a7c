"""KIP-890 part 1: a partition leader asks the transaction coordinator whether a partition
is in a producer's transaction before appending the transaction's first batch there.

Kafka's names: ``AddPartitionsToTxnManager`` (3.9, ``kafka.server``), driven by
``ReplicaManager.maybeStartTransactionVerificationForPartitions`` (here
``maybe_start_transaction_verification`` then ``complete_transaction_verification``, so that a
request with nothing to verify stays in its turn) for Produce (``handleProduceAppend``) and for
TxnOffsetCommit's ``__consumer_offsets`` partition (``GroupCoordinator.handleTxnCommitOffsets``).

The flow, for a transactional id, producer id and epoch, and the partitions of a request
with transactional batches (``transaction.partition.verification.enable``, default true):

1. per partition, the leader's log gives a ``VerificationGuard``
   (``franz.storage.verification``): ``SENTINEL`` when the producer already has its
   transaction ongoing in the partition (nothing to ask: the coordinator added it, or the
   first append would have failed), else the guard of a verification entry it creates;
   a partition this broker does not lead fails here (NOT_LEADER_OR_FOLLOWER, ...);
2. the partitions with a guard are verified by the coordinator of the id's
   ``__transaction_state`` partition, found in the metadata cache on
   ``inter.broker.listener.name`` (none: COORDINATOR_NOT_AVAILABLE). On this broker it answers
   in process (``TransactionCoordinator.verify_partitions``); elsewhere an AddPartitionsToTxn
   v4-5 request with ``verify_only`` goes to it, **batched per broker**: one request in
   flight per broker, the transactions that arrive meanwhile go together in the next one
   (Kafka's ``InterBrokerSendThread``). A second verification of the same transactional id
   waiting for the same broker replaces the first if its epoch is the same or higher (the
   first gets NETWORK_EXCEPTION, or INVALID_PRODUCER_EPOCH when fenced), else it gets
   INVALID_PRODUCER_EPOCH at once (Kafka's ``addTxnData``);
3. the coordinator's codes are mapped as Kafka's manager maps them: PRODUCER_FENCED is
   INVALID_PRODUCER_EPOCH ("producers expect it"), TRANSACTION_ABORTABLE is INVALID_TXN_STATE
   for requests whose version predates it (``abortable=False``: Produce v0-10, TxnOffsetCommit
   v0-3, Kafka's ``defaultError`` operation), a top-level CLUSTER_AUTHORIZATION_FAILED is
   INVALID_TXN_STATE; a connection that fails or times out is NETWORK_EXCEPTION; a
   coordinator that does not serve v4 means no verification (Kafka's version-mismatch
   branch). The caller maps these to its clients' codes (Produce: NOT_ENOUGH_REPLICAS for
   the retriable ones; TxnOffsetCommit: ``maybeConvertOffsetCommitError``).

The append then carries the guard; the log refuses a transactional batch that starts a
transaction without the producer's current guard (``franz.storage.producer_state``).

Differences from Kafka: the manager keeps the ``abortable`` mapping per transaction (Kafka's
``TransactionDataAndCallbacks`` keeps the operation of the first request batched for a
broker, whatever later ones asked for); a transaction the coordinator's response omits gets
NETWORK_EXCEPTION (Kafka would never call its callback).

Concurrency: the broker's event loop; verifications for different brokers go out together.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from franz.errors import ApiError, ErrorCode
from franz.network.client import (
    ClientConnectionError,
    KafkaClientConnection,
    UnsupportedApiVersionError,
)
from franz.protocol.api_keys import ApiKey
from franz.protocol.messages import build, request_type
from franz.storage.files import TopicPartition
from franz.storage.verification import SENTINEL, VerificationGuard

if TYPE_CHECKING:
    from franz.broker.services import BrokerServices
    from franz.metadata.cache import Node

__all__ = [
    "ADD_PARTITIONS_TO_TXN_VERSIONS",
    "AddPartitionsToTxnManager",
    "VerificationResult",
]

log = logging.getLogger(__name__)

#: The AddPartitionsToTxn versions a 3.9 broker sends (``Builder.forBroker``: v4 to latest).
ADD_PARTITIONS_TO_TXN_VERSIONS: Final = (4, 5)
_TRANSACTION_STATE_TOPIC: Final = "__transaction_state"


@dataclass(frozen=True, slots=True)
class VerificationResult:
    """What a verification gives the append (Kafka's ``(preAppendErrors, verificationGuards)``):
    the partitions refused before the append, and the guards of the verified ones."""

    errors: Mapping[TopicPartition, ErrorCode]
    guards: Mapping[TopicPartition, VerificationGuard]


@dataclass(slots=True)
class _Waiting:
    producer_id: int
    producer_epoch: int
    partitions: list[TopicPartition]
    abortable: bool
    future: asyncio.Future[dict[TopicPartition, ErrorCode]]


class AddPartitionsToTxnManager:
    """Verification of transactional appends with their coordinators (module docstring)."""

    def __init__(
        self,
        services: Callable[[], BrokerServices],
        listener: Callable[[], str],
        request_timeout_s: float = 30.0,
    ) -> None:
        self._services = services
        self._listener = listener
        self._timeout = request_timeout_s
        #: The next request to each broker: transactional id -> what waits for it.
        self._waiting: dict[int, dict[str, _Waiting]] = {}
        self._nodes: dict[int, Node] = {}
        #: The sender of each broker with a request in flight (one at a time).
        self._senders: dict[int, asyncio.Task[None]] = {}
        self._connections: dict[int, KafkaClientConnection] = {}
        #: The inter-broker listener's TLS client context (None: PLAINTEXT or SASL_PLAINTEXT).
        self.ssl_context: ssl.SSLContext | None = None

    # -- the leader's side (ReplicaManager) ----------------------------------------------

    def maybe_start_transaction_verification(
        self,
        producer_id: int,
        producer_epoch: int,
        base_sequences: Mapping[TopicPartition, int],
    ) -> VerificationResult:
        """Step 1 of Kafka's ``maybeStartTransactionVerificationForPartitions``, in the
        request's turn: ``base_sequences`` maps each partition with transactional batches to
        its first batch's base sequence; the result's ``guards`` are the partitions to ask
        the coordinator about (none: nothing to wait for), its ``errors`` the partitions this
        broker cannot append to. The caller has checked that verification is on."""
        replica_manager = self._services().replica_manager
        errors: dict[TopicPartition, ErrorCode] = {}
        guards: dict[TopicPartition, VerificationGuard] = {}
        for tp, sequence in base_sequences.items():
            try:
                guard = replica_manager.maybe_start_transaction_verification(
                    tp, producer_id, sequence, producer_epoch
                )
            except ApiError as exc:
                errors[tp] = exc.code
                continue
            if guard is not SENTINEL:
                guards[tp] = guard
        return VerificationResult(errors, guards)

    async def complete_transaction_verification(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        started: VerificationResult,
        *,
        abortable: bool,
    ) -> VerificationResult:
        """Step 2: the coordinator verifies ``started.guards``' partitions; the result adds
        the ones it did not verify to the errors."""
        if not started.guards:
            return started
        failed = await self.verify_transaction(
            transactional_id,
            producer_id,
            producer_epoch,
            list(started.guards),
            abortable=abortable,
        )
        if not failed:
            return started
        return VerificationResult({**started.errors, **failed}, started.guards)

    async def verify_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Collection[TopicPartition],
        *,
        abortable: bool,
    ) -> dict[TopicPartition, ErrorCode]:
        """Kafka's ``verifyTransaction``: the partitions the coordinator did not verify, with
        their (mapped) codes; empty when all are in the transaction."""
        services = self._services()
        node = self._coordinator(services, transactional_id)
        if isinstance(node, ErrorCode):
            return dict.fromkeys(partitions, node)
        if node.id == services.broker_id:
            answer = services.txn_coordinator.verify_partitions(
                transactional_id, producer_id, producer_epoch, partitions
            )
            return _unverified(answer, abortable)
        future: asyncio.Future[dict[TopicPartition, ErrorCode]] = (
            asyncio.get_running_loop().create_future()
        )
        waiting = _Waiting(producer_id, producer_epoch, list(partitions), abortable, future)
        self._add(node, transactional_id, waiting)
        return await future

    def _coordinator(self, services: BrokerServices, transactional_id: str) -> Node | ErrorCode:
        """Kafka's ``getTransactionCoordinator``: the live leader of the id's partition."""
        partition = services.txn_coordinator.state.partition_for(transactional_id)
        cache = services.metadata_cache
        leader = cache.partition_leader(_TRANSACTION_STATE_TOPIC, partition)
        node = None if leader is None else cache.alive_broker_node(leader.id, self._listener())
        return ErrorCode.COORDINATOR_NOT_AVAILABLE if node is None else node

    def _add(self, node: Node, transactional_id: str, waiting: _Waiting) -> None:
        """Kafka's ``addTxnData``: at most one verification per id waits for a broker."""
        batch = self._waiting.setdefault(node.id, {})
        existing = batch.get(transactional_id)
        if existing is not None:
            if existing.producer_epoch <= waiting.producer_epoch:
                error = (
                    ErrorCode.INVALID_PRODUCER_EPOCH
                    if existing.producer_epoch < waiting.producer_epoch
                    else ErrorCode.NETWORK_EXCEPTION
                )
                _resolve(existing, dict.fromkeys(existing.partitions, error))
                del batch[transactional_id]
            else:
                _resolve(
                    waiting, dict.fromkeys(waiting.partitions, ErrorCode.INVALID_PRODUCER_EPOCH)
                )
                return
        batch[transactional_id] = waiting
        self._nodes[node.id] = node
        if node.id not in self._senders:
            self._senders[node.id] = asyncio.create_task(
                self._send_loop(node.id), name=f"add-partitions-to-txn-{node.id}"
            )

    # -- the sender (Kafka's InterBrokerSendThread) --------------------------------------

    async def _send_loop(self, broker_id: int) -> None:
        """One request at a time to ``broker_id`` while verifications wait for it. Whatever
        happens, every verification sent is answered (a transaction the response omits, or
        a request that failed unexpectedly: NETWORK_EXCEPTION, retriable)."""
        try:
            while self._waiting.get(broker_id):
                batch = self._waiting.pop(broker_id)
                outcome: dict[str, dict[TopicPartition, ErrorCode]] = {}
                try:
                    outcome = await self._send(self._nodes[broker_id], batch)
                except Exception:
                    log.exception("AddPartitionsToTxn to broker %d failed", broker_id)
                finally:
                    for transactional_id, waiting in batch.items():
                        _resolve(
                            waiting,
                            outcome.get(
                                transactional_id,
                                dict.fromkeys(waiting.partitions, ErrorCode.NETWORK_EXCEPTION),
                            ),
                        )
        finally:
            self._senders.pop(broker_id, None)

    async def _send(
        self, node: Node, batch: dict[str, _Waiting]
    ) -> dict[str, dict[TopicPartition, ErrorCode]]:
        body = {"transactions": [_transaction(tid, w) for tid, w in batch.items()]}
        try:
            connection = await self._connection(node)
            low, high = ADD_PARTITIONS_TO_TXN_VERSIONS
            version = connection.version_for(ApiKey.ADD_PARTITIONS_TO_TXN, high, low)
            request = build(request_type(ApiKey.ADD_PARTITIONS_TO_TXN, version), body)
            response = await connection.send(request)
        except UnsupportedApiVersionError as exc:
            log.warning(
                "AddPartitionsToTxn to broker %d: %s; verification is not supported there, "
                "continuing the appends",
                node.id,
                exc,
            )
            return {tid: {} for tid in batch}
        except (ClientConnectionError, OSError, TimeoutError) as exc:
            log.warning("AddPartitionsToTxn to broker %d failed: %s", node.id, exc)
            self._drop(node.id, str(exc))
            return {
                tid: dict.fromkeys(w.partitions, ErrorCode.NETWORK_EXCEPTION)
                for tid, w in batch.items()
            }
        return _outcome(node.id, response, batch)

    async def _connection(self, node: Node) -> KafkaClientConnection:
        connection = self._connections.get(node.id)
        if (
            connection is not None
            and not connection.closed
            and connection.address == (f"{node.host}:{node.port}")
        ):
            return connection
        self._drop(node.id, "reconnecting")
        connection = await KafkaClientConnection.connect(
            node.host,
            node.port,
            connect_timeout=self._timeout,
            handshake=True,
            client_id=f"broker-{self._services().broker_id}-add-partitions-to-txn-sender",
            request_timeout=self._timeout,
            ssl=self.ssl_context,
        )
        self._connections[node.id] = connection
        return connection

    def _drop(self, broker_id: int, reason: str) -> None:
        connection = self._connections.pop(broker_id, None)
        if connection is not None:
            connection.close(reason)

    def close(self) -> None:
        """Shutdown: what waits gets NETWORK_EXCEPTION; connections close."""
        for task in list(self._senders.values()):
            task.cancel()
        for batch in self._waiting.values():
            for waiting in batch.values():
                _resolve(waiting, dict.fromkeys(waiting.partitions, ErrorCode.NETWORK_EXCEPTION))
        self._waiting.clear()
        for broker_id in list(self._connections):
            self._drop(broker_id, "shutting down")


def _transaction(transactional_id: str, waiting: _Waiting) -> dict[str, Any]:
    topics: dict[str, list[int]] = {}
    for tp in waiting.partitions:
        topics.setdefault(tp.topic, []).append(tp.partition)
    return {
        "transactional_id": transactional_id,
        "producer_id": waiting.producer_id,
        "producer_epoch": waiting.producer_epoch,
        "verify_only": True,
        "topics": [{"name": t, "partitions": p} for t, p in sorted(topics.items())],
    }


def _unverified(
    answer: Mapping[tuple[str, int], ErrorCode], abortable: bool
) -> dict[TopicPartition, ErrorCode]:
    """The coordinator's failed partitions, mapped as Kafka's ``AddPartitionsToTxnHandler``."""
    failed: dict[TopicPartition, ErrorCode] = {}
    for (topic, index), code in answer.items():
        if code is ErrorCode.NONE:
            continue
        if code is ErrorCode.PRODUCER_FENCED:
            code = ErrorCode.INVALID_PRODUCER_EPOCH
        elif code is ErrorCode.TRANSACTION_ABORTABLE and not abortable:
            code = ErrorCode.INVALID_TXN_STATE
        failed[TopicPartition(topic, index)] = code
    return failed


def _outcome(
    broker_id: int, response: Any, batch: dict[str, _Waiting]
) -> dict[str, dict[TopicPartition, ErrorCode]]:
    top = ErrorCode(int(response.error_code))
    if top is not ErrorCode.NONE:
        log.error("AddPartitionsToTxn to broker %d returned %s", broker_id, top.name)
        # Clients must not see CLUSTER_AUTHORIZATION_FAILED: the verification did not happen.
        if top is ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
            top = ErrorCode.INVALID_TXN_STATE
        return {tid: dict.fromkeys(w.partitions, top) for tid, w in batch.items()}
    outcome: dict[str, dict[TopicPartition, ErrorCode]] = {}
    for result in response.results_by_transaction:
        waiting = batch.get(result.transactional_id)
        if waiting is None:
            continue
        answer = {
            (topic.name, int(p.partition_index)): ErrorCode(int(p.partition_error_code))
            for topic in result.topic_results
            for p in topic.results_by_partition
        }
        outcome[result.transactional_id] = _unverified(answer, waiting.abortable)
    return outcome


def _resolve(waiting: _Waiting, result: dict[TopicPartition, ErrorCode]) -> None:
    if not waiting.future.done():
        waiting.future.set_result(result)
