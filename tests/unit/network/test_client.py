"""KafkaClientConnection against scripted loopback peers: pipelining, timeouts, bad peers.

Every test runs in ``asyncio.run(..., debug=True)`` and ends by checking that no task but its
own is left (``no_leaks``).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from franz.network.client import (
    ConnectionClosedError,
    ConnectTimeoutError,
    KafkaClientConnection,
    RequestTimeoutError,
    UnsupportedApiVersionError,
)
from franz.protocol.api_keys import ApiKey
from franz.protocol.headers import RequestHeader, encode_response_header
from franz.protocol.messages import build_response, encode_response
from tests.unit.network.fake_broker import CLOSE, FakeBroker, echo

METADATA_V8 = (ApiKey.METADATA, 8)  # non-flexible: response header v0


def run(test: Callable[[], Awaitable[None]]) -> None:
    async def main() -> None:
        await test()
        await asyncio.sleep(0)
        leftover = asyncio.all_tasks() - {asyncio.current_task()}
        assert not leftover, leftover

    asyncio.run(main(), debug=True)


async def connect(port: int, **options: Any) -> KafkaClientConnection:
    return await KafkaClientConnection.connect("127.0.0.1", port, handshake=False, **options)


def test_pipelined_requests_are_matched_in_order() -> None:
    def respond(_: int, header: RequestHeader, frame: bytes) -> bytes | None:
        return echo(header, f"r{header.correlation_id}".encode())

    async def test() -> None:
        async with FakeBroker(respond) as broker:
            conn = await connect(broker.port, max_in_flight=3)
            results = await asyncio.gather(*(conn.send_raw(*METADATA_V8, b"") for _ in range(6)))
            assert [bytes(r.body) for r in results] == [f"r{i}".encode() for i in range(6)]
            assert [h.correlation_id for h in broker.requests] == list(range(6))
            conn.close()
            await conn.wait_closed()

    run(test)


def test_max_in_flight_holds_back_further_requests() -> None:
    async def test() -> None:
        async with FakeBroker(lambda *_: None) as broker:
            conn = await connect(broker.port, max_in_flight=2)
            sends = [asyncio.ensure_future(conn.send_raw(*METADATA_V8, b"")) for _ in range(3)]
            for _ in range(50):
                await asyncio.sleep(0.01)
                if len(broker.requests) >= 2:
                    break
            await asyncio.sleep(0.05)
            assert len(broker.requests) == 2
            assert conn.in_flight == 2
            conn.close("test over")
            for send in sends:
                with pytest.raises(ConnectionClosedError, match="test over"):
                    await send
            await conn.wait_closed()

    run(test)


def test_request_timeout_fails_it_and_closes_the_connection() -> None:
    async def test() -> None:
        async with FakeBroker(lambda *_: None) as broker:
            conn = await connect(broker.port, request_timeout=0.2)
            first = asyncio.ensure_future(conn.send_raw(*METADATA_V8, b""))
            second = asyncio.ensure_future(conn.send_raw(*METADATA_V8, b"", timeout=5.0))
            with pytest.raises(RequestTimeoutError, match=r"api 3 v8 .*timed out after 200 ms"):
                await first
            with pytest.raises(ConnectionClosedError, match="timed out"):
                await second
            await conn.wait_closed()
            assert conn.closed
            with pytest.raises(ConnectionClosedError):
                await conn.send_raw(*METADATA_V8, b"")

    run(test)


def test_request_timeout_against_a_raw_socket_that_never_answers() -> None:
    async def test() -> None:
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        try:
            conn = await connect(port, request_timeout=0.1)
            with pytest.raises(RequestTimeoutError):
                await conn.send_raw(*METADATA_V8, b"")
            await conn.wait_closed()
            # The next connection works independently of the failed one.
            conn2 = await connect(port, request_timeout=0.1)
            assert not conn2.closed
            conn2.close()
            await conn2.wait_closed()
        finally:
            listener.close()

    run(test)


def test_wrong_correlation_id_closes_with_a_clear_error() -> None:
    async def test() -> None:
        async with FakeBroker(lambda _, h, f: echo(h, correlation_id=h.correlation_id + 7)) as b:
            conn = await connect(b.port)
            with pytest.raises(ConnectionClosedError, match="correlation id 7 does not match"):
                await conn.send_raw(*METADATA_V8, b"")
            await conn.wait_closed()

    run(test)


def test_peer_closing_fails_pending_requests() -> None:
    async def test() -> None:
        async with FakeBroker(lambda *_: CLOSE) as broker:
            conn = await connect(broker.port)
            with pytest.raises(ConnectionClosedError, match="closed by the peer"):
                await conn.send_raw(*METADATA_V8, b"")
            await conn.wait_closed()

    run(test)


def test_connect_refused_and_connect_timeout() -> None:
    async def test() -> None:
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()  # nothing listens there now
        with pytest.raises(Exception, match=f"could not connect to 127.0.0.1:{port}"):
            await connect(port)
        async with FakeBroker(lambda *_: None) as broker:  # accepts, never answers ApiVersions
            with pytest.raises(ConnectTimeoutError, match="took longer than 100 ms"):
                await KafkaClientConnection.connect("127.0.0.1", broker.port, connect_timeout=0.1)

    run(test)


def test_api_versions_handshake_falls_back_on_unsupported_version() -> None:
    def respond(_: int, header: RequestHeader, frame: bytes) -> bytes | None:
        assert header.api_key == ApiKey.API_VERSIONS
        if header.api_version > 2:  # a broker that knows ApiVersions v0-v2 only
            body = encode_response(
                build_response(
                    ApiKey.API_VERSIONS,
                    0,
                    {
                        "error_code": 35,
                        "api_keys": [
                            {"api_key": 18, "min_version": 0, "max_version": 2},
                        ],
                    },
                )
            )
            return encode_response_header(header.correlation_id, 0) + body
        body = encode_response(
            build_response(
                ApiKey.API_VERSIONS,
                header.api_version,
                {
                    "api_keys": [
                        {"api_key": 18, "min_version": 0, "max_version": 2},
                        {"api_key": 1, "min_version": 0, "max_version": 11},
                    ]
                },
            )
        )
        return encode_response_header(header.correlation_id, 0) + body

    async def test() -> None:
        async with FakeBroker(respond) as broker:
            conn = await KafkaClientConnection.connect("127.0.0.1", broker.port)
            assert [h.api_version for h in broker.requests] == [4, 2]
            assert conn.api_versions == {18: (0, 2), 1: (0, 11)}
            assert conn.version_for(ApiKey.FETCH, 17) == 11
            assert conn.version_for(ApiKey.FETCH, 9) == 9
            with pytest.raises(UnsupportedApiVersionError):
                conn.version_for(ApiKey.FETCH, 17, client_min=12)
            with pytest.raises(UnsupportedApiVersionError):
                conn.version_for(ApiKey.PRODUCE, 11)
            conn.close()
            await conn.wait_closed()

    run(test)


def test_cancelled_caller_keeps_the_stream_in_step() -> None:
    async def test() -> None:
        def respond(_: int, header: RequestHeader, frame: bytes) -> bytes | None:
            return echo(header, f"r{header.correlation_id}".encode())

        async with FakeBroker(respond) as broker:
            conn = await connect(broker.port)
            first = asyncio.ensure_future(conn.send_raw(*METADATA_V8, b""))
            await asyncio.sleep(0)
            first.cancel()
            response = await conn.send_raw(*METADATA_V8, b"")
            assert bytes(response.body) == b"r1"
            assert conn.in_flight == 0
            conn.close()
            await conn.wait_closed()

    run(test)
