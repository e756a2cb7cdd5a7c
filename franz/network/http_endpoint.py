"""A minimal HTTP/1.1 endpoint on the broker's event loop (the metrics listener,
``metrics.listener``): one request per connection, answered by a synchronous handler.

Why on the loop and not in a thread (prometheus_client's ``start_http_server``): the handler
renders metrics from live broker state (partitions, the controller's context, the fetchers),
which the event loop owns and mutates between awaits (DESIGN principle 4). A thread would
read those dicts while the loop changes them, or need snapshots kept current by the loop all
the time; on the loop a scrape reads a consistent state for the price of one render per
scrape interval, and nothing runs between scrapes.

Protocol (what Prometheus, curl and urllib send): a request head of at most
``max_head_bytes`` (8 KiB) ending in CRLF CRLF, arriving within ``read_timeout_s``; any body
is ignored. The answer carries ``Content-Length`` and ``Connection: close`` and the
connection is closed after it. A head that does not parse is answered 400, one too long
431, a slow one is closed without an answer; the handler decides the rest (404, 405). An
exception in the handler is logged and answered 500: one bad request never stops the
endpoint. At most ``max_connections`` are served at once; more are closed at accept (a
scraper retries at its next interval).

The request-head parser and the response encoder are pure (``parse_request_head``,
``encode_response``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

__all__ = [
    "HttpEndpoint",
    "HttpParseError",
    "HttpRequestHead",
    "HttpResponse",
    "encode_response",
    "parse_request_head",
]

log = logging.getLogger(__name__)

#: The largest request head read (Prometheus' scrape requests are about 300 bytes).
MAX_HEAD_BYTES: Final = 8192
_REASONS: Final = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


class HttpParseError(ValueError):
    """A request head that is not HTTP/1.x."""


@dataclass(frozen=True, slots=True)
class HttpRequestHead:
    """A parsed request line and headers (header names lower-cased; a repeated header keeps
    its last value). ``path`` is the target's path without its query."""

    method: str
    path: str
    version: str
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HttpResponse:
    status: int
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


def parse_request_head(data: bytes) -> HttpRequestHead:
    """The request line and headers of ``data`` (up to and without the blank line)."""
    try:
        text = data.decode("latin-1")
    except UnicodeDecodeError as exc:  # pragma: no cover - latin-1 decodes any byte
        raise HttpParseError(str(exc)) from exc
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[2].startswith("HTTP/1."):
        raise HttpParseError(f"not an HTTP/1.x request line: {lines[0][:100]!r}")
    method, target, version = parts
    if not target.startswith("/"):
        if target == "*" or "://" not in target:
            raise HttpParseError(f"unsupported request target {target[:100]!r}")
        target = urlsplit(target).path or "/"
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HttpParseError(f"malformed header line {line[:100]!r}")
        headers[name.lower()] = value.strip()
    return HttpRequestHead(method, target.split("?", 1)[0], version, headers)


def encode_response(response: HttpResponse, *, head_only: bool = False) -> bytes:
    """Status line, headers (``Content-Length``, ``Connection: close``) and body."""
    reason = _REASONS.get(response.status, "Unknown")
    lines = [
        f"HTTP/1.1 {response.status} {reason}",
        f"Content-Type: {response.content_type}",
        f"Content-Length: {len(response.body)}",
        "Connection: close",
        *(f"{name}: {value}" for name, value in response.headers),
    ]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head if head_only else head + response.body


class HttpEndpoint:
    """The HTTP listener (module docstring). ``handler`` runs on the loop, synchronously."""

    def __init__(
        self,
        host: str,
        port: int,
        handler: Callable[[HttpRequestHead], HttpResponse],
        *,
        read_timeout_s: float = 10.0,
        max_head_bytes: int = MAX_HEAD_BYTES,
        max_connections: int = 16,
    ) -> None:
        self.host = host
        self.port = port
        self.handler = handler
        self.read_timeout_s = read_timeout_s
        self.max_head_bytes = max_head_bytes
        self.max_connections = max_connections
        self.bound_port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.create_server((self.host, self.port), family=family)
        self.bound_port = sock.getsockname()[1]
        self._server = await asyncio.start_server(
            self._accepted, sock=sock, limit=self.max_head_bytes
        )

    async def close(self) -> None:
        """Stop listening and drop the connections being served."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if server is not None:
            # After the connections are gone: from Python 3.12 this waits for them too.
            await server.wait_closed()

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if len(self._tasks) >= self.max_connections or task is None:
            writer.close()
            return
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
            pass  # the peer left or was too slow: nothing to answer
        finally:
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head_only = False
        try:
            raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), self.read_timeout_s)
            request = parse_request_head(raw[:-4])
        except asyncio.LimitOverrunError:
            response = HttpResponse(431, b"request head too large\n")
        except HttpParseError as exc:
            response = HttpResponse(400, f"bad request: {exc}\n".encode())
        else:
            head_only = request.method == "HEAD"
            try:
                response = self.handler(request)
            except Exception:
                log.exception(
                    "HTTP endpoint on port %d failed on %s %s",
                    self.bound_port,
                    request.method,
                    request.path[:200],
                )
                response = HttpResponse(500, b"internal error\n")
        writer.write(encode_response(response, head_only=head_only))
        await writer.drain()
