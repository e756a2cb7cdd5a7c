"""The broker's side of a controlled shutdown (Kafka 3.9's ``KafkaServer.controlledShutdown``,
ZooKeeper mode): before it stops serving and closes its ZooKeeper session, a broker asks the
controller to move its leaderships to other in-sync replicas, so clients fail over at once
instead of waiting for ``zookeeper.session.timeout.ms`` to expire its registration.

Keys (Kafka's names and defaults): ``controlled.shutdown.enable`` (true),
``controlled.shutdown.max.retries`` (3 attempts in all, as Kafka counts them),
``controlled.shutdown.retry.backoff.ms`` (5000); each request waits at most
``controller.socket.timeout.ms`` (30 s) to connect and to be answered.

Each attempt, as Kafka's ``doControlledShutdown``:

1. The controller is the metadata cache's (the last UpdateMetadata's ``controller_id``) and its
   endpoint on ``inter.broker.listener.name``; a connection is (re)opened when the controller
   changed or the previous attempt failed on I/O. No controller known: "No controller present
   in the metadata cache", and the attempt is spent.
2. ControlledShutdown v3 (the version of ``inter.broker.protocol.version`` >= 2.4) with this
   broker's id and broker epoch, no ApiVersions handshake (Kafka's channel does not discover
   versions either). A controller shutting itself down sends it to its own listener, as Kafka.
3. NONE with no remaining partitions: done ("Controlled shutdown request returned successfully
   after N ms"). An error (NOT_CONTROLLER while a new controller is being elected,
   STALE_BROKER_EPOCH...) or remaining partitions (more than one replica, but no other in-sync
   replica to lead them): logged, then after the backoff "Retrying controlled shutdown (N
   retries remaining)". An I/O failure or a timeout: logged as Kafka's warning, retried on a
   new connection.

When every attempt failed the broker shuts down anyway ("Proceeding to do an unclean shutdown
as all the controlled shutdown attempts failed"): its ZooKeeper session then ends and the
controller treats it as failed.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from dataclasses import dataclass

from franz.errors import ErrorCode
from franz.metadata.cache import MetadataCache, Node
from franz.network.client import ClientConnectionError, KafkaClientConnection
from franz.protocol.client import ClientProtocolError
from franz.protocol.inter_broker.controlled_shutdown import v3

__all__ = ["ControlledShutdownConfig", "controlled_shutdown"]

log = logging.getLogger("franz.broker")


@dataclass(frozen=True, slots=True)
class ControlledShutdownConfig:
    """The keys of the module docstring, and where to find the controller."""

    broker_id: int
    max_retries: int
    retry_backoff_ms: int
    socket_timeout_ms: int
    listener: str = "PLAINTEXT"
    #: TLS to the inter-broker listener (SSL, SASL_SSL), else None.
    ssl_context: ssl.SSLContext | None = None


async def controlled_shutdown(
    config: ControlledShutdownConfig, metadata_cache: MetadataCache, broker_epoch: int
) -> bool:
    """Ask the controller until it moved every leadership or the attempts run out (module
    docstring); whether it succeeded."""
    log.info("Starting controlled shutdown")
    timeout = config.socket_timeout_ms / 1000
    remaining_retries = config.max_retries
    controller: Node | None = None
    connection: KafkaClientConnection | None = None
    io_error = False
    succeeded = False
    try:
        while not succeeded and remaining_retries > 0:
            remaining_retries -= 1
            controller_id = metadata_cache.controller_id
            if controller_id is None:
                log.info("No controller present in the metadata cache")
            else:
                node = metadata_cache.alive_broker_node(controller_id, config.listener)
                if node is None:
                    log.info(
                        "Broker registration for controller %d is not available in the "
                        "metadata cache",
                        controller_id,
                    )
                elif io_error or node != controller:
                    io_error = False
                    if connection is not None:
                        connection.close("the controller moved")
                        connection = None
                    controller = node
            if controller is not None:
                try:
                    if connection is None or connection.closed:
                        connection = await KafkaClientConnection.connect(
                            controller.host,
                            controller.port,
                            connect_timeout=timeout,
                            handshake=False,
                            ssl=config.ssl_context,
                            client_id=str(config.broker_id),
                            request_timeout=timeout,
                        )
                    succeeded = await _attempt(connection, config.broker_id, broker_epoch)
                except (ClientConnectionError, ClientProtocolError) as exc:
                    io_error = True
                    if connection is not None:
                        connection.close(str(exc))
                        connection = None
                    log.warning(
                        "Error during controlled shutdown, possibly because leader movement "
                        "took longer than the configured controller.socket.timeout.ms and/or "
                        "request.timeout.ms: %s",
                        exc,
                    )
            if not succeeded and remaining_retries > 0:
                await asyncio.sleep(config.retry_backoff_ms / 1000)
                log.info("Retrying controlled shutdown (%d retries remaining)", remaining_retries)
    finally:
        if connection is not None:
            connection.close("controlled shutdown done")
            await connection.wait_closed()
    if not succeeded:
        log.warning(
            "Proceeding to do an unclean shutdown as all the controlled shutdown attempts failed"
        )
    return succeeded


async def _attempt(connection: KafkaClientConnection, broker_id: int, broker_epoch: int) -> bool:
    """One ControlledShutdown v3 request; whether the controller moved everything."""
    request = v3.ControlledShutdownRequest(broker_id=broker_id, broker_epoch=broker_epoch)  # type: ignore[arg-type]
    started = time.monotonic()
    response = await connection.send(request)
    latency_ms = round((time.monotonic() - started) * 1000)
    error = ErrorCode(int(response.error_code))
    remaining = [f"{p.topic_name}-{p.partition_index}" for p in response.remaining_partitions]
    if error != ErrorCode.NONE:
        log.info(
            "Controlled shutdown request returned after %dms with error %s", latency_ms, error.name
        )
        return False
    if not remaining:
        log.info("Controlled shutdown request returned successfully after %dms", latency_ms)
        return True
    log.info(
        "Controlled shutdown request returned after %dms with %d partitions remaining to move: %s",
        latency_ms,
        len(remaining),
        ", ".join(remaining),
    )
    return False
