"""The metrics listener's HTTP endpoint: the pure request-head parser and response encoder,
and the asyncio server on a loopback port, with bad input (garbage, a head too long, a
stalled client, a failing handler) answered or dropped while it keeps serving."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from franz.network.http_endpoint import (
    HttpEndpoint,
    HttpParseError,
    HttpRequestHead,
    HttpResponse,
    encode_response,
    parse_request_head,
)


def test_parse_request_head() -> None:
    head = parse_request_head(
        b"GET /metrics?name[]=x HTTP/1.1\r\nHost: 127.0.0.1:9404\r\n"
        b"Accept: application/openmetrics-text; version=1.0.0\r\nX-Empty:\r\n"
    )
    assert head == HttpRequestHead(
        "GET",
        "/metrics",
        "HTTP/1.1",
        {
            "host": "127.0.0.1:9404",
            "accept": "application/openmetrics-text; version=1.0.0",
            "x-empty": "",
        },
    )
    absolute = parse_request_head(b"HEAD http://host:1/metrics HTTP/1.0")
    assert (absolute.method, absolute.path) == ("HEAD", "/metrics")


@pytest.mark.parametrize(
    "raw",
    [
        b"GET /metrics",
        b"GET /metrics HTTP/2.0",
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",  # a TLS client hello
        b"GET * HTTP/1.1",
        b"GET /metrics HTTP/1.1\r\nno colon here",
        b"GET /metrics HTTP/1.1\r\n Folded: header",
        b"G3T /metrics HTTP/1.1",
    ],
)
def test_parse_request_head_refuses_what_is_not_http(raw: bytes) -> None:
    with pytest.raises(HttpParseError):
        parse_request_head(raw)


def test_encode_response() -> None:
    response = HttpResponse(405, b"no\n", headers=(("Allow", "GET, HEAD"),))
    assert encode_response(response) == (
        b"HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain; charset=utf-8\r\n"
        b"Content-Length: 3\r\nConnection: close\r\nAllow: GET, HEAD\r\n\r\nno\n"
    )
    assert encode_response(response, head_only=True).endswith(b"GET, HEAD\r\n\r\n")


def _handler(request: HttpRequestHead) -> HttpResponse:
    if request.path == "/boom":
        raise RuntimeError("handler failed")
    if request.path != "/metrics":
        return HttpResponse(404, b"not found\n")
    return HttpResponse(200, b"metric 1\n", "text/plain; version=0.0.4")


async def _exchange(port: int, data: bytes) -> bytes:
    """Send ``data``, read to the end; b"" when closed without an answer (a reset too: the
    server closed with our bytes unread)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 10)
    except ConnectionResetError:
        return b""
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


def test_the_endpoint_serves_and_survives_bad_requests() -> None:
    async def main() -> None:
        endpoint = HttpEndpoint("127.0.0.1", 0, _handler, read_timeout_s=0.5, max_head_bytes=512)
        await endpoint.start()
        port = endpoint.bound_port
        assert port > 0
        try:
            ok = await _exchange(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert ok.startswith(b"HTTP/1.1 200 OK\r\n") and ok.endswith(b"\r\n\r\nmetric 1\n")
            assert b"Content-Length: 9\r\n" in ok and b"Connection: close\r\n" in ok
            head = await _exchange(port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 OK") and head.endswith(b"\r\n\r\n")
            missing = await _exchange(port, b"GET /other HTTP/1.1\r\n\r\n")
            assert missing.startswith(b"HTTP/1.1 404 Not Found\r\n")
            garbage = await _exchange(port, b"\x00\x01garbage\r\n\r\n")
            assert garbage.startswith(b"HTTP/1.1 400 Bad Request\r\n")
            too_long = await _exchange(port, b"GET /" + b"a" * 1000 + b" HTTP/1.1\r\n\r\n")
            assert too_long.startswith(b"HTTP/1.1 431 ")
            failed = await _exchange(port, b"GET /boom HTTP/1.1\r\n\r\n")
            assert failed.startswith(b"HTTP/1.1 500 Internal Server Error\r\n")
            # A client that sends half a head and stalls is closed without an answer.
            assert await _exchange(port, b"GET /metrics HTT") == b""
            # A client that leaves at once is nothing to answer.
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            await writer.wait_closed()
            again = await _exchange(port, b"GET /metrics HTTP/1.0\r\n\r\n")
            assert again.startswith(b"HTTP/1.1 200 OK")
        finally:
            await endpoint.close()
        with pytest.raises(OSError):
            await asyncio.open_connection("127.0.0.1", port)

    asyncio.run(main())


def test_connections_over_the_limit_are_closed_at_accept() -> None:
    async def main() -> None:
        endpoint = HttpEndpoint("127.0.0.1", 0, _handler, read_timeout_s=5, max_connections=1)
        await endpoint.start()
        port = endpoint.bound_port
        try:
            _, held = await asyncio.open_connection("127.0.0.1", port)  # sends nothing
            await asyncio.sleep(0.1)
            assert await _exchange(port, b"GET /metrics HTTP/1.1\r\n\r\n") == b""
            held.close()
            await held.wait_closed()
            await asyncio.sleep(0.1)
            ok = await _exchange(port, b"GET /metrics HTTP/1.1\r\n\r\n")
            assert ok.startswith(b"HTTP/1.1 200 OK")
        finally:
            await endpoint.close()

    asyncio.run(main())


def test_close_drops_the_connections_being_served() -> None:
    async def main() -> None:
        endpoint = HttpEndpoint("127.0.0.1", 0, _handler, read_timeout_s=60)
        await endpoint.start()
        reader, writer = await asyncio.open_connection("127.0.0.1", endpoint.bound_port)
        await asyncio.sleep(0.1)
        await asyncio.wait_for(endpoint.close(), 5)  # does not wait out the read timeout
        assert await asyncio.wait_for(reader.read(), 5) == b""
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()

    asyncio.run(main())
