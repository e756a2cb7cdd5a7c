"""How ``KafkaConnection`` writes responses made of bytes and file regions, over a real
loopback socket: small responses are read and written whole, large ones go through
``sendfile``, order is kept across both kinds, and a region the file no longer holds closes
that connection only (the stream would be unframeable)."""

from __future__ import annotations

import asyncio
import os
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from franz.network.connection import INLINE_REGIONS_MAX, KafkaConnection, Response
from franz.network.server import SocketServer, SocketServerConfig
from franz.protocol.fetch import FileRegion

FILE_SIZE = 3 * INLINE_REGIONS_MAX


@pytest.fixture
def data_file(tmp_path: Path) -> Iterator[tuple[int, bytes]]:
    content = os.urandom(FILE_SIZE)
    path = tmp_path / "segment.log"
    path.write_bytes(content)
    fd = os.open(path, os.O_RDONLY)
    yield fd, content
    os.close(fd)


class RegionHandler:
    """Answers a request ``(position int32, size int32, count int32)`` with a framed
    response of ``count`` copies of [4 marker bytes, the region]."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def handle(self, connection: KafkaConnection, frame: bytes | bytearray) -> Response:
        position, size, count = struct.unpack(">iii", bytes(frame[:12]))
        chunks: list[bytes | FileRegion] = []
        for i in range(count):
            chunks += [struct.pack(">i", i), FileRegion(self.fd, position, size)]
        total = count * (4 + size)
        return [struct.pack(">i", total), *chunks]


def exchange(fd: int, requests: list[tuple[int, int, int]]) -> tuple[bytes, bool]:
    """Send ``requests`` pipelined on one connection to a real ``SocketServer``; what came
    back, and whether the server closed the connection."""

    async def run() -> tuple[bytes, bool]:
        server = SocketServer(SocketServerConfig(port=0), RegionHandler(fd))
        await server.start()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
            for request in requests:
                writer.write(struct.pack(">i", 12) + struct.pack(">iii", *request))
            await writer.drain()
            expected = sum(4 + count * (4 + size) for _, size, count in requests)
            received = b""
            closed = False
            while len(received) < expected:
                chunk = await asyncio.wait_for(reader.read(1 << 20), 10)
                if not chunk:
                    closed = True
                    break
                received += chunk
            writer.close()
            return received, closed
        finally:
            await server.shutdown()

    return asyncio.run(run())


def framed(content: bytes, position: int, size: int, count: int) -> bytes:
    region = content[position : position + size]
    body = b"".join(struct.pack(">i", i) + region for i in range(count))
    return struct.pack(">i", len(body)) + body


@pytest.mark.parametrize(
    ("size", "count"),
    [
        (170, 1),  # a follower's or long poll's few records: one write
        (INLINE_REGIONS_MAX // 2, 2),  # exactly the inline limit
        (INLINE_REGIONS_MAX, 2),  # over it: sendfile
        (0, 3),  # empty regions
    ],
)
def test_responses_carry_the_regions_bytes_in_order(
    data_file: tuple[int, bytes], size: int, count: int
) -> None:
    fd, content = data_file
    received, closed = exchange(fd, [(100, size, count)])
    assert not closed
    assert received == framed(content, 100, size, count)


def test_inline_and_sendfile_responses_keep_their_order(data_file: tuple[int, bytes]) -> None:
    fd, content = data_file
    requests = [(0, 100, 1), (7, 2 * INLINE_REGIONS_MAX, 1), (5, 300, 2), (9, 40_000, 2)]
    received, closed = exchange(fd, requests)
    assert not closed
    assert received == b"".join(framed(content, *r) for r in requests)


@pytest.mark.parametrize("size", [200, 2 * INLINE_REGIONS_MAX])
def test_a_region_past_the_end_of_the_file_closes_the_connection(
    data_file: tuple[int, bytes], size: int
) -> None:
    """The file was truncated under the response: fewer bytes than the frame announced can
    be sent, so the connection is closed rather than left unframeable."""
    fd, _ = data_file
    received, closed = exchange(fd, [(FILE_SIZE - 100, size, 1)])
    assert closed
    assert len(received) < 4 + 4 + size


def test_the_server_keeps_serving_other_connections_after_one_was_closed(
    data_file: tuple[int, bytes],
) -> None:
    fd, content = data_file

    async def run() -> bytes:
        server = SocketServer(SocketServerConfig(port=0), RegionHandler(fd))
        await server.start()
        try:
            _, bad = await asyncio.open_connection("127.0.0.1", server.bound_port)
            bad.write(struct.pack(">i", 12) + struct.pack(">iii", FILE_SIZE - 10, 500, 1))
            await bad.drain()
            reader, writer = await asyncio.open_connection("127.0.0.1", server.bound_port)
            writer.write(struct.pack(">i", 12) + struct.pack(">iii", 3, 50, 1))
            await writer.drain()
            got = await asyncio.wait_for(reader.readexactly(4 + 4 + 50), 10)
            writer.close()
            bad.close()
            return got
        finally:
            await server.shutdown()

    assert asyncio.run(run()) == framed(content, 3, 50, 1)
