"""Requests a connection muted for a quota holds back (KIP-219) over a real loopback socket:
``held_requests`` counts them (``RequestQueueSize``), and each is handed to its handler with
``queue_wait_ns`` set to how long it was held (``RequestQueueTimeMs``), 0 otherwise."""

from __future__ import annotations

import asyncio
import struct

from franz.network.connection import KafkaConnection, Response
from franz.network.server import SocketServer, SocketServerConfig

MUTE_MS = 200


class MutingHandler:
    """Mutes the connection for ``MUTE_MS`` on the first request; answers each request with
    its index; notes each request's ``queue_wait_ns`` and the held count it saw."""

    def __init__(self) -> None:
        self.waits: list[int] = []
        self.held_seen: list[int] = []

    def handle(self, connection: KafkaConnection, frame: bytes | bytearray) -> Response:
        self.waits.append(connection.queue_wait_ns)
        self.held_seen.append(connection.held_requests)
        index = len(self.waits) - 1
        if index == 0:
            connection.throttle(MUTE_MS)
        return [struct.pack(">ii", 4, index)]


def test_held_requests_carry_their_wait() -> None:
    handler = MutingHandler()

    async def run() -> list[int]:
        server = SocketServer(SocketServerConfig(port=0), handler)
        await server.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
            # Three requests in one write: the second and third arrive while muted.
            writer.write(b"".join(struct.pack(">ii", 4, i) for i in range(3)))
            await writer.drain()
            answers = []
            for _ in range(3):
                data = await asyncio.wait_for(reader.readexactly(8), 10)
                answers.append(struct.unpack(">ii", data)[1])
            (connection,) = server.connections
            assert connection.queue_wait_ns == 0 and connection.held_requests == 0
            writer.close()
            return answers
        finally:
            await server.shutdown()

    assert asyncio.run(run()) == [0, 1, 2]
    assert handler.waits[0] == 0
    # Held for the mute (timers may fire a little early or, on a loaded machine, late).
    assert all(wait >= (MUTE_MS - 20) * 1_000_000 for wait in handler.waits[1:])
    assert handler.held_seen == [0, 1, 0]  # the third was still held while the second ran
