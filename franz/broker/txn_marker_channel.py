"""The transaction coordinator's marker channel: WriteTxnMarkers to each partition's leader.

Kafka's name: ``TransactionMarkerChannelManager`` (3.9). For one transaction (producer id
and epoch, coordinator epoch, COMMIT or ABORT) and its partitions, ``write_markers`` finds
each partition's leader in the metadata cache (on ``inter.broker.listener.name``) and:

* a partition the cache no longer knows (its topic was deleted) is done: Kafka skips its
  marker ("the partition is likely to be deleted already");
* a partition with no live leader answers LEADER_NOT_AVAILABLE: the coordinator retries it
  after its backoff, when UpdateMetadata may have named one (Kafka's unknown-broker queue);
* a partition led by this broker is written in process
  (``franz.broker.txn_markers.write_txn_markers_locally``, what Kafka's WriteTxnMarkers
  handler does on the leader);
* the others go in one WriteTxnMarkers v1 request per leader (Kafka 3.9 sends v1, and the
  connection's ApiVersions handshake caps it), answered per partition; a connection that
  fails or times out answers NETWORK_EXCEPTION for its partitions, and the connection is
  dropped (the next attempt reconnects, to whichever broker then leads).

The per-partition codes go back to ``TransactionCoordinator``, which retries, stops, or logs
the completed transaction (its module docstring has Kafka's rules).

Concurrency: the broker's event loop; requests to different leaders go out together. When
every partition is led here (always on one broker) the local write is awaited directly:
with the ISRs complete it finishes without yielding, so the coordinator logs Complete* in
the same event-loop step and no request can see the transaction between the two.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from franz.broker.txn_markers import write_txn_markers_locally
from franz.errors import ErrorCode
from franz.network.client import ClientConnectionError, KafkaClientConnection
from franz.protocol.api_keys import ApiKey
from franz.protocol.messages import build, request_type
from franz.storage.files import TopicPartition

if TYPE_CHECKING:
    from franz.broker.services import BrokerServices
    from franz.metadata.cache import Node

__all__ = ["WRITE_TXN_MARKERS_VERSION", "TxnMarkerChannel"]

log = logging.getLogger(__name__)

#: The WriteTxnMarkers version a Kafka 3.9 coordinator sends.
WRITE_TXN_MARKERS_VERSION: Final = 1


class TxnMarkerChannel:
    """``MarkerWriter`` of ``TransactionCoordinator`` (module docstring)."""

    def __init__(
        self,
        services: Callable[[], BrokerServices],
        listener: Callable[[], str],
        request_timeout_s: float = 30.0,
    ) -> None:
        self._services = services
        self._listener = listener
        self._timeout = request_timeout_s
        self._connections: dict[int, KafkaClientConnection] = {}
        #: TLS to the inter-broker listener (SSL, SASL_SSL; set by the broker), else None.
        self.ssl_context: ssl.SSLContext | None = None

    async def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        partitions: Sequence[tuple[str, int]],
    ) -> dict[tuple[str, int], ErrorCode]:
        services = self._services()
        cache = services.metadata_cache
        outcome: dict[tuple[str, int], ErrorCode] = {}  # keys: TopicPartition
        local: list[TopicPartition] = []
        remote: dict[int, list[TopicPartition]] = {}
        nodes: dict[int, Node] = {}
        listener = self._listener()
        for topic, index in partitions:
            tp = TopicPartition(topic, index)
            if cache.partition_info(topic, index) is None:
                log.info("skipping the transaction marker of %s: the partition is gone", tp)
                outcome[tp] = ErrorCode.NONE
                continue
            leader = cache.partition_leader(topic, index)
            node = None if leader is None else cache.alive_broker_node(leader.id, listener)
            if node is None:
                outcome[tp] = ErrorCode.LEADER_NOT_AVAILABLE
            elif node.id == services.broker_id:
                local.append(tp)
            else:
                nodes[node.id] = node
                remote.setdefault(node.id, []).append(tp)
        if not remote:
            # Only local partitions (always, on one broker): no task, no extra event-loop turn;
            # with its ISR complete the appends and their wait finish without yielding.
            if local:
                written = await write_txn_markers_locally(
                    services, producer_id, producer_epoch, coordinator_epoch, commit, local
                )
                for tp, code in written.items():
                    outcome[tp] = code
            return outcome
        work: list[Awaitable[dict[TopicPartition, ErrorCode]]] = [
            self._send(nodes[b], producer_id, producer_epoch, coordinator_epoch, commit, tps)
            for b, tps in remote.items()
        ]
        if local:
            work.append(
                write_txn_markers_locally(
                    services, producer_id, producer_epoch, coordinator_epoch, commit, local
                )
            )
        for result in await asyncio.gather(*work):
            for tp, code in result.items():
                outcome[tp] = code
        return outcome

    async def _send(
        self,
        node: Node,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        partitions: list[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        topics: dict[str, list[int]] = {}
        for tp in partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        body = {
            "markers": [
                {
                    "producer_id": producer_id,
                    "producer_epoch": producer_epoch,
                    "transaction_result": commit,
                    "topics": [
                        {"name": t, "partition_indexes": ids} for t, ids in sorted(topics.items())
                    ],
                    "coordinator_epoch": coordinator_epoch,
                }
            ]
        }
        try:
            connection = await self._connection(node)
            version = connection.version_for(
                ApiKey.WRITE_TXN_MARKERS, WRITE_TXN_MARKERS_VERSION, WRITE_TXN_MARKERS_VERSION
            )
            request = build(request_type(ApiKey.WRITE_TXN_MARKERS, version), body)
            response = await connection.send(request)
        except (ClientConnectionError, OSError, TimeoutError) as exc:
            log.info("WriteTxnMarkers to broker %d failed: %s", node.id, exc)
            self._drop(node.id, str(exc))
            return dict.fromkeys(partitions, ErrorCode.NETWORK_EXCEPTION)
        except Exception as exc:  # e.g. no common version
            log.warning("WriteTxnMarkers to broker %d failed: %s", node.id, exc)
            self._drop(node.id, str(exc))
            return dict.fromkeys(partitions, ErrorCode.NETWORK_EXCEPTION)
        return _outcome(response, partitions)

    async def _connection(self, node: Node) -> KafkaClientConnection:
        connection = self._connections.get(node.id)
        if connection is not None and not connection.closed and connection.address == (
            f"{node.host}:{node.port}"
        ):
            return connection
        self._drop(node.id, "reconnecting")
        connection = await KafkaClientConnection.connect(
            node.host,
            node.port,
            connect_timeout=self._timeout,
            handshake=True,
            ssl=self.ssl_context,
            client_id=f"broker-{self._services().broker_id}-txn-marker-sender",
            request_timeout=self._timeout,
        )
        self._connections[node.id] = connection
        return connection

    def _drop(self, broker_id: int, reason: str) -> None:
        connection = self._connections.pop(broker_id, None)
        if connection is not None:
            connection.close(reason)

    def close(self) -> None:
        for broker_id in list(self._connections):
            self._drop(broker_id, "shutting down")


def _outcome(response: Any, partitions: list[TopicPartition]) -> dict[TopicPartition, ErrorCode]:
    """Per-partition codes of a WriteTxnMarkers response; partitions it omits are retried."""
    outcome = dict.fromkeys(partitions, ErrorCode.UNKNOWN_SERVER_ERROR)
    for marker in response.markers:
        for topic in marker.topics:
            for p in topic.partitions:
                tp = TopicPartition(topic.name, int(p.partition_index))
                if tp in outcome:
                    outcome[tp] = ErrorCode(int(p.error_code))
    return outcome
