"""A scripted in-process "broker" on loopback for outbound-client tests.

Each accepted connection reads frames and passes them to ``respond(connection_index,
header, frame)``, which returns the response payload to send (header included), None to stay
silent, or ``CLOSE`` to drop the connection.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable
from typing import Final

from franz.protocol.headers import RequestHeader, encode_response_header, parse_request_header

CLOSE: Final = b"__close__"

Responder = Callable[[int, RequestHeader, bytes], bytes | None]


def echo(header: RequestHeader, body: bytes = b"ok", correlation_id: int | None = None) -> bytes:
    """A response with header v0 (non-flexible versions) and ``body``."""
    cid = header.correlation_id if correlation_id is None else correlation_id
    return encode_response_header(cid, 0) + body


class FakeBroker:
    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self.connections = 0
        self.requests: list[RequestHeader] = []
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def __aenter__(self) -> FakeBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in self._writers:
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        index = self.connections
        self.connections += 1
        self._writers.append(writer)
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                header = parse_request_header(frame)
                self.requests.append(header)
                payload = self.respond(index, header, frame)
                if payload == CLOSE:
                    break
                if payload is not None:
                    writer.write(struct.pack(">i", len(payload)) + payload)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            self._tasks.discard(task)
