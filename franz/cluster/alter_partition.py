"""The broker's side of AlterPartition (Kafka 3.9's ``DefaultAlterPartitionManager`` with the
``NodeToControllerChannelManager`` under it, ZooKeeper mode; KIP-497).

A partition leader that wants to shrink or expand its ISR calls ``submit`` with the state it
proposes; the future resolves with the controller's answer for that partition. Rules, as
Kafka's:

* **One item per partition.** ``submit`` for a partition that already has an unanswered item
  resolves at once with OPERATION_NOT_ATTEMPTED (Kafka's ``OperationNotAttemptedException``);
  the caller retries once its first item is answered. A caller that cancels its future
  withdraws an item not yet sent.
* **Batching, one request in flight.** Every pending item goes into one AlterPartition to the
  active controller; items submitted meanwhile wait for the next request, sent as soon as the
  answer arrives.
* **Where.** The controller is the metadata cache's (the last UpdateMetadata's
  ``controller_id``), on ``inter.broker.listener.name``; the connection makes the ApiVersions
  handshake (Kafka's channel discovers versions).
* **Version.** Kafka 3.9 at ``inter.broker.protocol.version`` 3.9
  (``MetadataVersion.alterPartitionRequestVersion``: 3 since IBP 3.5-IV1) sends v3, capped by
  the controller's ApiVersions; an item whose topic has no id (the zero UUID) caps the request
  at v1, which names topics (``AlterPartitionRequest.Builder(canUseTopicIds)``). The broker
  epoch is read when the request is built; v3's ISR carries broker epoch -1 for every replica,
  as a ZooKeeper-mode broker sends it.
* **Retries (never timing out an item).** No controller known, the connection lost, no answer
  within ``controller.socket.timeout.ms``, no common version, or a top-level NOT_CONTROLLER
  (the controller moved, or is being elected): the same items are sent again, to whichever
  broker the metadata cache then names, after a backoff of 50 ms doubling to 1 s with 20 %
  jitter (``reconnect.backoff.ms`` / ``reconnect.backoff.max.ms``). Another top-level error
  (STALE_BROKER_EPOCH: the controller has not seen this broker's new registration yet) is
  logged and the pending items are sent again after 50 ms, with the then current broker epoch
  (Kafka's ``scheduleOnce("send-alter-partition", ..., 50)``).
* **Answers.** A partition in the response resolves its item: NONE with the new leader, leader
  epoch, ISR, recovery state and partition epoch (the ``state`` znode's zk version), or its
  error. Errors are the caller's to act on: FENCED_LEADER_EPOCH and INVALID_UPDATE_VERSION
  mean the proposal is stale and the leader waits for the controller's next LeaderAndIsr;
  OPERATION_NOT_ATTEMPTED, INELIGIBLE_REPLICA and UNKNOWN_TOPIC_OR_PARTITION mean it goes back
  to its last committed ISR (Kafka's ``Partition.handleAlterPartitionError``). A partition the
  response omits stays pending and is sent again.

Embedded mode: ``local`` is the in-process controller (the broker's ``LocalController``
through the AlterPartition handler's conversions): the same requests and responses, no socket.

Concurrency: everything runs on the broker's loop; one task sends, and nothing waits on I/O
outside it. ``shutdown`` stops the task, closes the connection and resolves every pending
item with OPERATION_NOT_ATTEMPTED (Kafka simply drops them; a future left pending forever
would hang its caller).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import ssl
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final

from franz.errors import ErrorCode
from franz.metadata.cache import MetadataCache, Node
from franz.network.client import (
    ClientConnectionError,
    KafkaClientConnection,
    UnsupportedApiVersionError,
)
from franz.network.sender import reconnect_backoff
from franz.protocol.api_keys import ApiKey
from franz.protocol.client import ClientProtocolError
from franz.protocol.messages import request_type
from franz.storage.files import TopicPartition

__all__ = [
    "ALTER_PARTITION_VERSION",
    "AlterPartitionManager",
    "IsrUpdate",
    "IsrUpdateResult",
]

log = logging.getLogger(__name__)

#: ``MetadataVersion.alterPartitionRequestVersion`` at IBP 3.9.
ALTER_PARTITION_VERSION: Final = 3
#: The newest version that names topics instead of ids (``canUseTopicIds`` false).
_NAMED_TOPICS_VERSION: Final = 1
#: Kafka's delay before resending after a top-level error.
_TOP_LEVEL_ERROR_RETRY: Final = 0.05
_ZERO_UUID: Final = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class IsrUpdate:
    """The state a leader proposes (Kafka's ``LeaderAndIsr`` as ``Partition`` submits it):
    its leader epoch, the new ISR, its recovery state (KIP-704) and the partition epoch it
    last saw (the zk version the controller's write is conditional on)."""

    leader_epoch: int
    new_isr: tuple[int, ...]
    leader_recovery_state: int
    partition_epoch: int


@dataclass(frozen=True, slots=True)
class IsrUpdateResult:
    """The controller's answer for one partition: NONE with the state now committed, or an
    error (the other fields then -1 / empty)."""

    error: ErrorCode
    leader_id: int
    leader_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int
    partition_epoch: int

    @staticmethod
    def failed(error: ErrorCode) -> IsrUpdateResult:
        return IsrUpdateResult(error, -1, -1, (), 0, -1)


@dataclass(slots=True)
class _Item:
    """Kafka's ``AlterPartitionItem``."""

    tp: TopicPartition
    topic_id: uuid.UUID | None
    update: IsrUpdate
    future: asyncio.Future[IsrUpdateResult]


class AlterPartitionManager:
    """Kafka's ``DefaultAlterPartitionManager`` (module docstring)."""

    def __init__(
        self,
        broker_id: int,
        metadata_cache: MetadataCache,
        broker_epoch: Callable[[], int],
        *,
        listener: str = "PLAINTEXT",
        request_timeout: float = 30.0,
        retry_backoff: float = 0.05,
        retry_backoff_max: float = 1.0,
        rand: Callable[[], float] = random.random,
        local: Callable[[Any], Awaitable[Any]] | None = None,
    ) -> None:
        self.broker_id = broker_id
        #: Embedded mode: takes the request entity, returns the response entity.
        self.local = local
        self.metadata_cache = metadata_cache
        self.broker_epoch = broker_epoch
        self.listener = listener
        #: TLS to the inter-broker listener (SSL, SASL_SSL), else None.
        self.ssl_context: ssl.SSLContext | None = None
        self.request_timeout = request_timeout
        self.retry_backoff = retry_backoff
        self.retry_backoff_max = retry_backoff_max
        self._rand = rand
        #: Kafka's ``unsentIsrUpdates``: every item not answered yet, in flight or not.
        self._unsent: dict[TopicPartition, _Item] = {}
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._connection: KafkaClientConnection | None = None
        self._controller: Node | None = None
        self._failures = 0
        #: Requests answered (any error but NOT_CONTROLLER), attempts that failed (no
        #: controller, I/O, NOT_CONTROLLER), and of those the NOT_CONTROLLER answers, for
        #: tests and metrics.
        self.requests_answered = 0
        self.failed_attempts = 0
        self.not_controller_answers = 0

    # -- the caller's side ---------------------------------------------------------------

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"alter-partition-{self.broker_id}"
            )

    async def shutdown(self) -> None:
        """Stop sending; pending items get OPERATION_NOT_ATTEMPTED (module docstring)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._close_connection("shutting down")
        items, self._unsent = list(self._unsent.values()), {}
        for item in items:
            _resolve(item, IsrUpdateResult.failed(ErrorCode.OPERATION_NOT_ATTEMPTED))

    def submit(
        self, tp: TopicPartition, topic_id: uuid.UUID, leader_and_isr: IsrUpdate
    ) -> asyncio.Future[IsrUpdateResult]:
        """Queue ``leader_and_isr`` for ``tp``; the future is the controller's answer."""
        future: asyncio.Future[IsrUpdateResult] = asyncio.get_running_loop().create_future()
        tp = TopicPartition(tp[0], tp[1])
        pending = self._unsent.get(tp)
        if pending is not None and not pending.future.cancelled():
            log.debug("Failed to enqueue ISR change state %s for partition %s", leader_and_isr, tp)
            future.set_result(IsrUpdateResult.failed(ErrorCode.OPERATION_NOT_ATTEMPTED))
            return future
        self._unsent[tp] = _Item(tp, topic_id, leader_and_isr, future)
        self._wakeup.set()
        return future

    @property
    def pending(self) -> int:
        """Items not answered yet."""
        return len(self._unsent)

    # -- the sender task -----------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            await self._wakeup.wait()
            self._wakeup.clear()
            for tp in [tp for tp, item in self._unsent.items() if item.future.cancelled()]:
                del self._unsent[tp]
            if not self._unsent:
                continue
            items = list(self._unsent.values())
            try:
                error = await self._send_until_answered(items)
            except Exception:
                # A bug, or an answer that does not make sense: keep the items, try later.
                log.exception("AlterPartition to the controller failed")
                self._close_connection("failed")
                error = ErrorCode.UNKNOWN_SERVER_ERROR
            if self._unsent:
                if error != ErrorCode.NONE:
                    await asyncio.sleep(_TOP_LEVEL_ERROR_RETRY)
                self._wakeup.set()

    async def _send_until_answered(self, items: list[_Item]) -> ErrorCode:
        """Send ``items`` until a controller answers other than NOT_CONTROLLER; the answer's
        top-level error."""
        while True:
            node = self._controller_node()
            if node is not None:
                try:
                    response, version = await self._send(node, items)
                except (
                    ClientConnectionError,
                    ClientProtocolError,
                    UnsupportedApiVersionError,
                ) as exc:
                    log.info("AlterPartition to controller %d failed: %s", node.id, exc)
                    self._close_connection(str(exc))
                else:
                    error = _error_code(response.error_code)
                    if error != ErrorCode.NOT_CONTROLLER:
                        self._failures = 0
                        self.requests_answered += 1
                        return self._handle_response(response, version, items)
                    log.info("broker %d is no longer the controller", node.id)
                    self.not_controller_answers += 1
                    self._close_connection("not the controller")
            self.failed_attempts += 1
            await asyncio.sleep(
                reconnect_backoff(
                    self._failures, self.retry_backoff, self.retry_backoff_max, self._rand
                )
            )
            self._failures += 1

    def _controller_node(self) -> Node | None:
        if self.local is not None:
            return Node(self.broker_id, "", 0)  # in process
        controller_id = self.metadata_cache.controller_id
        if controller_id is None:
            return None
        return self.metadata_cache.alive_broker_node(controller_id, self.listener)

    async def _send(self, node: Node, items: list[_Item]) -> tuple[Any, int]:
        use_ids = all(item.topic_id not in (None, _ZERO_UUID) for item in items)
        highest = ALTER_PARTITION_VERSION if use_ids else _NAMED_TOPICS_VERSION
        if self.local is not None:
            request = build_request(highest, self.broker_id, self.broker_epoch(), items)
            return await self.local(request), highest
        connection = self._connection
        if connection is None or connection.closed or node != self._controller:
            self._close_connection("the controller moved")
            connection = await KafkaClientConnection.connect(
                node.host,
                node.port,
                connect_timeout=self.request_timeout,
                handshake=True,
                ssl=self.ssl_context,
                client_id=f"broker-{self.broker_id}-alter-partition",
                request_timeout=self.request_timeout,
            )
            self._connection, self._controller = connection, node
        version = connection.version_for(ApiKey.ALTER_PARTITION, highest)
        request = build_request(version, self.broker_id, self.broker_epoch(), items)
        return await connection.send(request), version

    def _close_connection(self, reason: str) -> None:
        connection, self._connection = self._connection, None
        self._controller = None
        if connection is not None:
            connection.close(reason)

    def _handle_response(self, response: Any, version: int, items: list[_Item]) -> ErrorCode:
        """Kafka's ``handleAlterPartitionResponse``: resolve the partitions answered."""
        error = _error_code(response.error_code)
        if error == ErrorCode.STALE_BROKER_EPOCH:
            log.warning("Broker had a stale broker epoch (%d), retrying.", self.broker_epoch())
            return error
        if error != ErrorCode.NONE:
            log.warning(
                "Controller returned an unexpected top-level error when handling "
                "AlterPartition request: %s",
                error.name,
            )
            return error
        names = {item.topic_id: item.tp[0] for item in items}
        answered: dict[TopicPartition, IsrUpdateResult] = {}
        for topic in response.topics:
            name = names.get(topic.topic_id) if version > 1 else str(topic.topic_name)
            if not name:
                log.error("Received an unexpected topic %s in the AlterPartition response", topic)
                continue
            for p in topic.partitions:
                answered[TopicPartition(name, int(p.partition_index))] = _result(p)
        for item in items:
            result = answered.get(item.tp)
            if result is None:
                log.warning("Partition %s was sent but not included in the response", item.tp)
                continue
            if self._unsent.get(item.tp) is item:
                del self._unsent[item.tp]
            _resolve(item, result)
        return ErrorCode.NONE


def _error_code(value: Any) -> ErrorCode:
    """The protocol's code; one Franz does not know is UNKNOWN_SERVER_ERROR (Kafka's
    ``Errors.forCode``)."""
    try:
        return ErrorCode(int(value))
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def _result(p: Any) -> IsrUpdateResult:
    error = _error_code(p.error_code)
    if error != ErrorCode.NONE:
        return IsrUpdateResult.failed(error)
    recovery = int(getattr(p, "leader_recovery_state", 0))
    if recovery not in (0, 1):
        log.error("Controller returned an invalid leader recovery state (%d)", recovery)
        return IsrUpdateResult.failed(ErrorCode.UNKNOWN_SERVER_ERROR)
    return IsrUpdateResult(
        ErrorCode.NONE,
        int(p.leader_id),
        int(p.leader_epoch),
        tuple(int(r) for r in p.isr),
        recovery,
        int(p.partition_epoch),
    )


def _resolve(item: _Item, result: IsrUpdateResult) -> None:
    if not item.future.done():
        item.future.set_result(result)


def build_request(version: int, broker_id: int, broker_epoch: int, items: list[_Item]) -> Any:
    """The AlterPartition request of ``version`` for ``items``, grouped by topic (Kafka's
    ``buildRequest``)."""
    cls: Any = request_type(ApiKey.ALTER_PARTITION, version)
    module = __import__(cls.__module__, fromlist=["_"])
    by_topic: dict[str, list[_Item]] = {}
    for item in items:
        by_topic.setdefault(item.tp[0], []).append(item)
    topics = []
    for name, group in by_topic.items():
        partitions = []
        for item in group:
            fields: dict[str, Any] = {
                "partition_index": item.tp[1],
                "leader_epoch": item.update.leader_epoch,
                "partition_epoch": item.update.partition_epoch,
            }
            if version >= 3:
                fields["new_isr_with_epochs"] = tuple(
                    module.BrokerState(broker_id=r, broker_epoch=-1) for r in item.update.new_isr
                )
            else:
                fields["new_isr"] = item.update.new_isr
            if version >= 1:
                fields["leader_recovery_state"] = item.update.leader_recovery_state
            partitions.append(module.PartitionData(**fields))
        topic: dict[str, Any] = {"partitions": tuple(partitions)}
        if version >= 2:
            topic["topic_id"] = group[0].topic_id
        else:
            topic["topic_name"] = name
        topics.append(module.TopicData(**topic))
    return cls(broker_id=broker_id, broker_epoch=broker_epoch, topics=tuple(topics))
