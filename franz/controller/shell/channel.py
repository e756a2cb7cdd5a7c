"""The controller's channel to the brokers (Kafka 3.9's ``ControllerChannelManager``).

Rules:

* One ``BrokerSender`` (``franz.network.sender``, Kafka's ``RequestSendThread``) per live
  broker, at the endpoint of the inter-broker listener (``inter.broker.listener.name``,
  PLAINTEXT) of its registration. Requests to one broker go out one at a time, in the order
  given, and are retried (reconnect with backoff) until answered or until the broker is
  removed (``removeBroker`` on a dead or bounced broker: what is queued is dropped, as Kafka
  drops a removed broker's queue).
* Each ``ControlRequest`` of a ``ControllerBrokerRequestBatch`` is encoded with
  ``franz.protocol.inter_broker``'s classes at the versions in ``franz.controller.requests``
  (LeaderAndIsr v7, UpdateMetadata v8, StopReplica v4) through ``franz.controller.wire``;
  it already carries the controller id, the controller epoch and the broker epoch (the czxid
  of the broker's registration), which is how a broker fences a stale controller
  (STALE_CONTROLLER_EPOCH) or a request meant for an earlier incarnation of itself
  (STALE_BROKER_EPOCH).
* Responses are handed back as ``franz.controller.events`` through ``post`` (the event
  queue's ``put_nowait``), never processed here (Kafka's ``sendEvent`` callbacks):
  LeaderAndIsr -> ``LeaderAndIsrResponseReceived`` (per-partition errors, topic ids mapped
  back to names from the request), UpdateMetadata -> ``UpdateMetadataResponseReceived``,
  StopReplica -> ``TopicDeletionStopReplicaResponseReceived`` for the partitions the request
  asked to *delete* (Kafka's callback only reports those; the controller then filters out
  topics whose deletion is not in progress). A request whose broker was removed gets no event.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterable
from typing import Any

from franz.controller.batch import ControlRequest
from franz.controller.context import Broker
from franz.controller.events import (
    ControllerEvent,
    LeaderAndIsrResponseReceived,
    TopicDeletionStopReplicaResponseReceived,
    UpdateMetadataResponseReceived,
)
from franz.controller.model import TopicPartition
from franz.controller.requests import (
    ZERO_UUID,
    LeaderAndIsrRequest,
    UpdateMetadataRequest,
)
from franz.controller.wire import to_wire
from franz.errors import ErrorCode
from franz.network.sender import BrokerRemovedError, OutboundChannel, SenderConfig
from franz.protocol.client import ClientProtocolError, ClientResponse, decode_body, encode_body

__all__ = ["ControllerChannelManager", "decode_control_response"]

log = logging.getLogger(__name__)


def _code(value: int) -> ErrorCode:
    try:
        return ErrorCode(int(value))
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def decode_control_response(request: ControlRequest, response: Any) -> ControllerEvent | None:
    """The event for a decoded response to ``request`` (module docstring), or None."""
    body = request.request
    broker_id = request.broker_id
    if isinstance(body, LeaderAndIsrRequest):
        names = {t.topic_id: t.topic_name for t in body.topic_states}
        errors: dict[TopicPartition, ErrorCode] = {}
        for topic in response.topics:
            topic_id = ZERO_UUID if topic.topic_id is None else topic.topic_id
            name = names.get(topic_id)
            if name is None:
                log.warning(
                    "LeaderAndIsr response of broker %d names unknown topic id %s",
                    broker_id,
                    topic_id,
                )
                continue
            for p in topic.partition_errors:
                errors[TopicPartition(name, int(p.partition_index))] = _code(p.error_code)
        return LeaderAndIsrResponseReceived(broker_id, _code(response.error_code), errors)
    if isinstance(body, UpdateMetadataRequest):
        return UpdateMetadataResponseReceived(broker_id, _code(response.error_code))
    deleted = {
        TopicPartition(t.topic_name, p.partition_index)
        for t in body.topic_states
        for p in t.partition_states
        if p.delete_partition
    }
    if not deleted:
        return None
    stop_errors = {
        tp: _code(p.error_code)
        for p in response.partition_errors
        if (tp := TopicPartition(p.topic_name, int(p.partition_index))) in deleted
    }
    if not stop_errors and int(response.error_code) != 0:
        stop_errors = dict.fromkeys(deleted, _code(response.error_code))
    return TopicDeletionStopReplicaResponseReceived(
        broker_id, _code(response.error_code), stop_errors
    )


class ControllerChannelManager:
    """Kafka's ``ControllerChannelManager``: ``add_broker``/``remove_broker``/``send``.

    Owned by the controller's event task; ``post`` must be safe to call from a done-callback
    on the loop (``asyncio.Queue.put_nowait`` is).
    """

    def __init__(
        self,
        post: Callable[[ControllerEvent], None],
        config: SenderConfig | None = None,
        *,
        inter_broker_listener: str = "PLAINTEXT",
    ) -> None:
        self._post = post
        self.inter_broker_listener = inter_broker_listener
        self.channel = OutboundChannel(config or SenderConfig(client_id="franz-controller"))
        self._closed = False

    @property
    def broker_ids(self) -> list[int]:
        return self.channel.broker_ids

    def add_broker(self, broker: Broker) -> None:
        """``addBroker``: start a sender to the broker's inter-broker endpoint (a broker
        without that listener is logged and left out, as Kafka's ``brokerNode`` fails)."""
        endpoint = next(
            (e for e in broker.endpoints if e.listener == self.inter_broker_listener), None
        )
        if endpoint is None:
            log.error(
                "broker %d has no %s listener: the controller cannot reach it",
                broker.id,
                self.inter_broker_listener,
            )
            return
        self.channel.add_broker(broker.id, endpoint.host, endpoint.port)

    async def remove_broker(self, broker_id: int) -> None:
        """``removeBroker``: stop its sender; its queued requests are dropped."""
        await self.channel.remove_broker(broker_id)

    def send(self, requests: Iterable[ControlRequest]) -> None:
        """Queue each request to its broker, in order (``sendRequest``)."""
        if self._closed:
            return
        for request in requests:
            body = request.request
            payload = encode_body(to_wire(body))
            try:
                future = self.channel.send(request.broker_id, body.API_KEY, body.VERSION, payload)
            except BrokerRemovedError:
                # Kafka: "Not sending request ... to broker N, since it is offline."
                log.warning(
                    "not sending api %d to broker %d: not in the channel",
                    body.API_KEY,
                    request.broker_id,
                )
                continue
            future.add_done_callback(functools.partial(self._on_response, request))

    def _on_response(self, request: ControlRequest, future: asyncio.Future[ClientResponse]) -> None:
        if future.cancelled():
            return
        exc = future.exception()  # retrieved even when closed: asyncio logs one never read
        if self._closed:
            return
        if exc is not None:
            if not isinstance(exc, BrokerRemovedError):
                log.warning("request to broker %d failed: %s", request.broker_id, exc)
            return
        response = future.result()
        body = request.request
        try:
            decoded = decode_body(body.API_KEY, body.VERSION, response.body)
        except ClientProtocolError as err:
            log.error("undecodable response from broker %d: %s", request.broker_id, err)
            return
        event = decode_control_response(request, decoded)
        if event is not None:
            self._post(event)

    async def drain(self, timeout_s: float) -> bool:
        """Wait until the requests queued now are answered, at most ``timeout_s``."""
        return await self.channel.drain(timeout_s)

    def stop_posting(self) -> None:
        """From now on, answers are dropped (the controller resigned: stop acting at once)."""
        self._closed = True

    async def close(self) -> None:
        """Kafka's ``shutdown``: stop every sender; nothing is posted afterwards."""
        self._closed = True
        await self.channel.close()
