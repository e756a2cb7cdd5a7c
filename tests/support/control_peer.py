"""A protocol peer for controller tests: a real TCP server on loopback that registers itself in
ZooKeeper as a broker and answers the controller's requests.

It is not a mock of the broker: it decodes LeaderAndIsr / UpdateMetadata / StopReplica frames
with ``franz.protocol`` (header and body, any version the codec knows), records them as
``franz.controller.requests`` values, and answers each with a well-formed response of the
same version with every error code 0 (per partition too). It registers
``/brokers/ids/<id>`` exactly as a broker does (``KafkaZkClient.register_broker``, or
``ZkBrokerSession`` when it also hosts a ``Controller``, as every Kafka broker does).
Brokers that really handle these requests come later.
"""

from __future__ import annotations

import asyncio
import struct
import time
from dataclasses import dataclass, field
from typing import Any

from kazoo.client import KazooClient

from franz.controller.requests import (
    LeaderAndIsrPartitionState,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from franz.controller.shell.controller import Controller
from franz.controller.wire import from_wire
from franz.metadata.kafka_zk_client import KafkaZkClient
from franz.metadata.zk_session import ZkBrokerSession
from franz.metadata.znodes import BrokerInfo
from franz.metadata.zookeeper import ZooKeeperClient, ZooKeeperConfig
from franz.network.sender import SenderConfig
from franz.protocol.headers import (
    encode_response_header,
    parse_request_header,
    response_header_version,
)
from franz.protocol.messages import build_response, decode_request, encode_response

SESSION_MS = 2000

ControlBody = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest


@dataclass(frozen=True, slots=True)
class Received:
    at: float  # time.monotonic()
    api_key: int
    api_version: int
    request: ControlBody


def _response_for(api_key: int, version: int, request: Any) -> Any:
    if api_key == 4:  # LeaderAndIsr v5+: errors per topic id
        return build_response(
            api_key,
            version,
            {
                "error_code": 0,
                "topics": [
                    {
                        "topic_id": t.topic_id,
                        "partition_errors": [
                            {"partition_index": p.partition_index, "error_code": 0}
                            for p in t.partition_states
                        ],
                    }
                    for t in request.topic_states
                ],
            },
        )
    if api_key == 5:
        return build_response(
            api_key,
            version,
            {
                "error_code": 0,
                "partition_errors": [
                    {
                        "topic_name": t.topic_name,
                        "partition_index": p.partition_index,
                        "error_code": 0,
                    }
                    for t in request.topic_states
                    for p in t.partition_states
                ],
            },
        )
    return build_response(api_key, version, {"error_code": 0})


@dataclass
class ControlPeer:
    broker_id: int
    zk_connect: str
    with_controller: bool = False
    received: list[Received] = field(default_factory=list)
    zk: KafkaZkClient | None = None
    session: ZkBrokerSession | None = None
    controller: Controller | None = None
    _server: asyncio.Server | None = None
    _conn_tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _writers: list[asyncio.StreamWriter] = field(default_factory=list)

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    def info(self) -> BrokerInfo:
        return BrokerInfo(
            broker_id=self.broker_id,
            endpoints=(f"PLAINTEXT://127.0.0.1:{self.port}",),
            security_protocols={"PLAINTEXT": "PLAINTEXT"},
            timestamp_ms=int(time.time() * 1000),
        )

    async def serve(self) -> ControlPeer:
        """Only the TCP server (no ZooKeeper): for channel tests."""
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def start(self) -> ControlPeer:
        await self.serve()
        zk = ZooKeeperClient(ZooKeeperConfig(self.zk_connect, session_timeout_ms=SESSION_MS))
        await zk.start()
        self.zk = KafkaZkClient(zk)
        await self.zk.ensure_persistent_paths()
        if self.with_controller:
            config = SenderConfig(client_id=f"controller-{self.broker_id}", request_timeout=5.0)
            self.controller = Controller(self.zk, self.broker_id, sender_config=config)
            self.session = ZkBrokerSession(
                self.zk,
                self.info(),
                on_elected=self.controller.elected,
                on_resign=self.controller.resign,
            )
            self.controller.on_fenced = self.session.resign
            self.controller.start()
            await self.session.start()
        else:
            await self.zk.register_broker(self.info())
        return self

    async def stop(self) -> None:
        """Close the server and the ZooKeeper session (the registration goes at once)."""
        if self.session is not None:
            await self.session.stop()
        if self.controller is not None:
            await self.controller.stop()
        if self.zk is not None:
            await self.zk.zk.close()
            self.zk = None
        if self._server is not None:
            self._server.close()
            for writer in self._writers:
                writer.close()
            for task in list(self._conn_tasks):
                task.cancel()
            await asyncio.gather(*self._conn_tasks, return_exceptions=True)
            await self._server.wait_closed()
            self._server = None

    def expire_session(self) -> None:
        """Make the server expire this peer's session (a twin client closes it); blocking."""
        assert self.zk is not None
        hosts = self.zk_connect.partition("/")[0]
        twin = KazooClient(hosts=hosts, client_id=self.zk.zk.session_credentials)
        twin.start(timeout=10)
        twin.stop()
        twin.close()

    # -- what was received --------------------------------------------------------------

    def requests(self, kind: type[ControlBody]) -> list[ControlBody]:
        return [r.request for r in self.received if isinstance(r.request, kind)]

    def leader_and_isr_states(
        self, topic: str
    ) -> list[tuple[LeaderAndIsrRequest, LeaderAndIsrPartitionState]]:
        out = []
        for request in self.requests(LeaderAndIsrRequest):
            assert isinstance(request, LeaderAndIsrRequest)
            for t in request.topic_states:
                if t.topic_name == topic:
                    out.extend((request, p) for p in t.partition_states)
        return out

    # -- serving ------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._conn_tasks.add(task)
        self._writers.append(writer)
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                header = parse_request_header(frame)
                entity = decode_request(header.api_key, header.api_version, frame, header.size)
                self.received.append(
                    Received(
                        time.monotonic(), header.api_key, header.api_version, from_wire(entity)
                    )
                )
                response = _response_for(header.api_key, header.api_version, entity)
                payload = encode_response_header(
                    header.correlation_id,
                    response_header_version(header.api_key, header.api_version),
                ) + encode_response(response)
                writer.write(struct.pack(">i", len(payload)) + payload)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except asyncio.CancelledError:
            pass  # stop(): end quietly (asyncio logs a cancelled client_connected_cb task)
        finally:
            writer.close()
            self._conn_tasks.discard(task)
