"""One client connection: frames in, responses out in request order, with flow control.

Rules this file keeps (Kafka's ``SocketServer``/``Processor`` and uvicorn's protocol are the
models):

* **Order.** Responses leave in the order the requests arrived, whatever order their
  handlers finish in (a long-polling Fetch holds back the responses queued after it, as in
  Kafka where the channel is muted until the response is sent). A request that expects no
  response (Produce with acks=0) takes no place in the queue.
* **Eager handling.** Requests are handed to the handler as soon as they are framed, in order,
  from ``data_received``. A handler that can answer at once (Produce, Metadata) does so
  synchronously, so appends from pipelined requests happen in arrival order (the idempotent
  producer relies on that); one that must wait (Fetch long poll) returns an awaitable.
* **Flow control.** Reading stops while more than ``max_in_flight`` responses are pending,
  while the transport's write buffer is above its high-water mark (a client that does not
  read its responses), or while the request being received waits for memory (below), and
  resumes when all three clear.
* **Bounded memory.** A connection holds at most one partial request, and only the bytes of
  it that arrived (``FrameDecoder``), at most ``socket.request.max.bytes``. When a request's
  size is known, its size is reserved in the server's ``MemoryPool``
  (``queued.max.request.bytes``) until the request is complete; a connection refused memory
  is muted (reading paused, nothing dropped) until the pool has room, as Kafka mutes a
  channel whose receive cannot allocate. Unlike Kafka, requests that arrive whole in one
  read are handled without a reservation (they never wait between reads, so they hold no
  memory the pool guards), and a muted connection may already hold the bytes of the read
  that started its request (asyncio reads at most 256 KiB at a time).
* **Receive timeout.** ``request_started`` is when the current request's first byte arrived;
  the server closes connections whose request takes longer than
  ``socket.request.receive.timeout.ms``. The clock does not run while the broker itself
  paused reading, and restarts when reading resumes.
* **Zero copy.** A response is a list of chunks: ``bytes`` go through the transport,
  ``FileRegion`` chunks are written with ``sendfile`` (``loop.sendfile``) once everything
  before them is on the wire. A region that comes back short (the segment was truncated
  under us) leaves the stream unframeable, so the connection is closed (Kafka's
  ``FileRecords.writeTo`` does the same).
* **TLS copies.** ``sendfile`` cannot go through TLS (OpenSSL encrypts in user space:
  asyncio's SSL transport runs OpenSSL over memory BIOs), so on SSL and SASL_SSL
  connections a region is read with ``pread`` in ``TLS_COPY_CHUNK`` pieces and written to
  the transport, waiting while its write buffer is above the high-water mark: at most about
  one chunk plus the buffer limit is held per connection. PLAINTEXT keeps ``sendfile``.
  Kernel TLS (``SSL_OP_ENABLE_KTLS``, which would let ``sendfile`` work again) is out of
  reach: it needs OpenSSL to own the socket (not memory BIOs), Python 3.11 has no
  ``ssl.OP_ENABLE_KTLS``, and the kernel here offers no ``tls`` ULP
  (``/proc/sys/net/ipv4/tcp_available_ulp`` lists ``mptcp`` only).
* **Small responses are one write.** A response whose regions add up to at most
  ``INLINE_REGIONS_MAX`` bytes is read with ``pread`` (from the page cache) and written with
  its header in one ``transport.write``: one ``send`` and one TCP segment instead of a write,
  a ``sendfile`` and a write. asyncio's ``loop.sendfile`` pauses reading, waits for the write
  buffer to drain and runs a task: measured here at ~50 us of CPU per region whatever its
  size up to 48 KiB, against 3 us (170 B) to 12 us (48 KiB) for ``pread`` + one write. It
  matters for long polls and followers, which get a few small batches at a time; a consumer
  catching up gets ~1 MiB per partition, sent with ``sendfile``.
* **Garbage closes only this connection**: bad frame sizes, unparsable headers or bodies,
  unknown API keys.
* **Quota throttling (KIP-219).** A request over a client quota is answered at once, its
  ``throttle_time_ms`` set, and ``throttle(ms)`` then mutes the connection for that long:
  reading pauses and requests already received (pipelined in the same read) wait in
  ``_held``, in order, until the throttle ends (Kafka's ``SocketServer`` mutes the channel
  once the response is sent, ``ThrottledChannel``). Nothing is dropped and the connection
  stays open, so a client that ignores ``throttle_time_ms`` is still held to its quota.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import socket
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Final, Protocol

from franz.protocol.fetch import FileRegion
from franz.protocol.framing import FrameDecoder, FramingError
from franz.security.principal import ANONYMOUS, KafkaPrincipal
from franz.security.tls_principal import NoMatchingRuleError, ssl_principal

if TYPE_CHECKING:
    from franz.network.server import SocketServer

__all__ = ["CloseConnection", "KafkaConnection", "RequestHandler", "Response"]

log = logging.getLogger(__name__)

#: A whole response frame, size prefix included: bytes and file regions, in order.
Response = list[bytes | FileRegion]

#: Responses whose file regions add up to at most this many bytes are copied and written in
#: one piece (module docstring, "Small responses are one write").
INLINE_REGIONS_MAX: Final = 32 * 1024
#: Bytes read per ``pread`` when a region goes through TLS (module docstring, "TLS copies"):
#: large enough that the per-call Python cost is small next to encrypting it, small enough
#: that a connection holds little beyond the transport's own write buffer.
TLS_COPY_CHUNK: Final = 256 * 1024


class CloseConnection(Exception):
    """Raised by a handler: drop this connection (Kafka's reaction to garbage)."""


class RequestHandler(Protocol):
    """Turns one request frame into its response (see the module docstring)."""

    def handle(
        self, connection: KafkaConnection, frame: bytes | bytearray
    ) -> Response | Awaitable[Response | None] | None:
        """Return the response, None for no response, or an awaitable of either.

        Raise ``CloseConnection`` to drop the connection.
        """
        ...


class _FdFile:
    """The file-object face ``loop.sendfile`` wants, over a segment's shared fd.

    ``sendfile`` seeks the file when done; segments are written with ``pwrite`` and read with
    ``pread``/``sendfile`` at explicit positions, so the fd's own offset is never relied on.
    """

    __slots__ = ("_fd",)
    mode = "rb"

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def fileno(self) -> int:
        return self._fd

    def seek(self, offset: int, whence: int = 0) -> int:
        return offset


class KafkaConnection(asyncio.Protocol):
    def __init__(self, server: SocketServer, peer_ip: str = "?") -> None:
        self._server = server
        self._handler = server.handler
        self._decoder = FrameDecoder(server.config.socket_request_max_bytes)
        self._pool = server.memory_pool
        #: Bytes reserved in the memory pool for the request being received (0: none).
        self._reserved = 0
        self._memory_muted = False
        self._request_started: float | None = None
        self._max_in_flight = server.config.max_in_flight_requests
        self._transport: asyncio.Transport | None = None
        self._queue: collections.deque[asyncio.Future[Response | None] | Response] = (
            collections.deque()
        )
        self._writer: asyncio.Task[None] | None = None
        self._handler_tasks: set[asyncio.Task[Response | None]] = set()
        self._write_paused = False
        self._read_paused = False
        self._closing = False
        #: Close once every pending response is written (EOF from the client, shutdown).
        self._closing_after_flush = False
        self.last_active = time.monotonic()
        #: The peer's address as the server counted it for ``max.connections.per.ip``.
        self.peer_ip = peer_ip
        self.peer = "?"
        self.connection_id = ""
        #: Who the peer is (``User:ANONYMOUS`` until TLS or SASL says otherwise).
        self.principal: KafkaPrincipal = ANONYMOUS
        #: The listener this connection came in on (Kafka's ``RequestContext.listenerName``).
        self.listener_name = server.config.listener_name
        #: Its security protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), for SASL.
        self.security_protocol: str = server.config.security_protocol
        #: TLS on this connection: file regions are copied, not sent with ``sendfile``.
        self.tls = False
        self._writable = asyncio.Event()
        self._writable.set()
        #: Quota throttling (module docstring): the unmute timer while muted, and the
        #: requests received meanwhile.
        self._throttle_timer: asyncio.TimerHandle | None = None
        self._throttle_until = 0.0
        self._held: collections.deque[tuple[bytes | bytearray, int]] = collections.deque()
        #: While a held request is handed over: how long it was held, in ns (Kafka's request
        #: queue time, ``RequestMetrics``); 0 otherwise.
        self.queue_wait_ns = 0
        #: How long ``close`` leaves the socket open after the last response (a failed SASL
        #: login's, set by the SASL gate); 0: closed at once.
        self.close_grace_s = 0.0
        #: SASL listeners: the broker's per-connection authentication state (opaque here).
        self.authenticator: object | None = None
        bound = server.config.unauthenticated_max_request_bytes
        if bound is not None and self.security_protocol.startswith("SASL_"):
            # Until ``authenticated()``: an unauthenticated peer gets a small frame bound.
            self._decoder.max_frame_size = min(bound, server.config.socket_request_max_bytes)

    def authenticated(self) -> None:
        """SASL authentication completed: frames up to ``socket.request.max.bytes`` now."""
        self._decoder.max_frame_size = self._server.config.socket_request_max_bytes

    # -- asyncio.Protocol ---------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        sock: socket.socket | None = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        peer = transport.get_extra_info("peername")
        local = transport.get_extra_info("sockname")
        if peer:
            self.peer = f"{peer[0]}:{peer[1]}"
        if local:
            self.connection_id = f"{local[0]}:{local[1]}-{self.peer}"
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None:
            self.tls = True
            try:
                self.principal = ssl_principal(
                    ssl_object.getpeercert(), self._server.principal_mapper
                )
            except (NoMatchingRuleError, ValueError) as exc:
                # DefaultKafkaPrincipalBuilder: "Failed to map name ... based on SSL principal
                # mapping rules": the connection fails authentication.
                log.info("Failed authentication with /%s (%s)", self.peer_ip, exc)
                self._server.register(self)
                self.close()
                return
        self._server.register(self)
        log.debug("connection from %s (%s)", self.peer, self.principal)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._server.unregister(self)
        if self._reserved:
            reserved, self._reserved = self._reserved, 0
            self._server.release_memory(reserved)
        for task in self._handler_tasks:
            task.cancel()
        if self._writer is not None:
            self._writer.cancel()
        if self._throttle_timer is not None:
            self._throttle_timer.cancel()
            self._throttle_timer = None
        self._held.clear()
        self._queue.clear()
        log.debug("connection from %s closed%s", self.peer, f": {exc}" if exc else "")

    def pause_writing(self) -> None:
        self._write_paused = True
        self._writable.clear()
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._writable.set()
        self._update_reading()

    def data_received(self, data: bytes) -> None:
        if self._closing:
            return
        now = self.last_active = time.monotonic()
        decoder = self._decoder
        try:
            frames = decoder.feed(data)
        except FramingError as exc:
            log.debug("closing connection from %s: %s", self.peer, exc)
            self.close()
            return
        if frames:
            # The first frame out is the one that was partial before this read, if any.
            self._request_started = None
            if self._reserved:
                reserved, self._reserved = self._reserved, 0
                self._server.release_memory(reserved)
        if decoder.buffered:
            if self._request_started is None:
                self._request_started = now
            if not self._reserved and decoder.pending_frame_size > 0:
                self._reserve(decoder.pending_frame_size)
        for frame in frames:
            if self._closing:
                return
            if self._throttle_timer is not None or self._held:
                self._held.append((frame, time.perf_counter_ns()))
                continue
            self._dispatch(frame)
        self._update_reading()

    def eof_received(self) -> bool | None:
        # The client will send no more requests; answer the ones already received, then close.
        if not self._queue and self._writer is None and not self._held:
            return None
        self._closing_after_flush = True
        # asyncio's TLS transport cannot stay half-open: it closes after this returns,
        # flushing what was written; responses still being computed are dropped.
        return None if self.tls else True

    # -- request memory and receive timeout -----------------------------------------------

    def _reserve(self, size: int) -> None:
        if self._pool.try_allocate(size):
            self._reserved = size
        elif not self._memory_muted:
            self._memory_muted = True
            self._server.wait_for_memory(self)

    def memory_available(self) -> None:
        """Called by the server when the pool has room again: reserve, then read on."""
        self._memory_muted = False
        if self._closing:
            return
        size = self._decoder.pending_frame_size
        if size > 0 and not self._reserved:
            self._reserve(size)
        self._update_reading()

    @property
    def request_started(self) -> float | None:
        """When the request being received started arriving (``time.monotonic``); None when
        no request is partly received or the broker paused reading (not the peer's delay)."""
        return None if self._read_paused else self._request_started

    @property
    def pending_request_size(self) -> int:
        """Announced size of the partly received request (-1: size not known yet)."""
        return self._decoder.pending_frame_size

    @property
    def pending_request_bytes(self) -> int:
        """Bytes of the partly received request held by this connection."""
        return self._decoder.buffered

    # -- requests and responses -----------------------------------------------------------

    @property
    def held_requests(self) -> int:
        """Requests framed and held back by a quota mute (``RequestQueueSize``)."""
        return len(self._held)

    @property
    def in_flight(self) -> int:
        return len(self._queue)

    @property
    def is_idle(self) -> bool:
        """No request waits for its response (a half-received frame does not count: a
        client that stops mid-frame is as idle as a silent one)."""
        return not self._queue and self._writer is None and not self._held

    def _dispatch(self, frame: bytes | bytearray) -> None:
        try:
            result = self._handler.handle(self, frame)
        except CloseConnection:
            self.close()
            return
        except Exception:
            log.exception("unexpected error handling a request from %s; closing it", self.peer)
            self.close()
            return
        if result is None:
            return
        if isinstance(result, list):
            if not self._queue and self._writer is None:
                self._write_now(result)
            else:
                self._queue.append(result)
            return
        task = asyncio.ensure_future(result)
        self._handler_tasks.add(task)
        task.add_done_callback(self._handler_done)
        self._queue.append(task)

    # -- quota throttling (KIP-219) ---------------------------------------------------------

    @property
    def throttled(self) -> bool:
        """Muted for a quota (module docstring)."""
        return self._throttle_timer is not None

    def throttle(self, throttle_ms: int) -> None:
        """Mute this connection for ``throttle_ms`` from now (a longer mute already running
        is kept)."""
        if throttle_ms <= 0 or self._closing:
            return
        delay = throttle_ms / 1000.0
        until = time.monotonic() + delay
        if until <= self._throttle_until:
            return
        self._throttle_until = until
        if self._throttle_timer is not None:
            self._throttle_timer.cancel()
        self._throttle_timer = asyncio.get_running_loop().call_later(delay, self._unthrottle)
        self._update_reading()

    def _unthrottle(self) -> None:
        self._throttle_timer = None
        held = self._held
        while held and self._throttle_timer is None and not self._closing:
            frame, since = held.popleft()
            self.queue_wait_ns = time.perf_counter_ns() - since
            try:
                self._dispatch(frame)
            finally:
                self.queue_wait_ns = 0
        if not held and self._closing_after_flush and not self._queue and self._writer is None:
            self.close()
            return
        self._update_reading()

    def _handler_done(self, task: asyncio.Task[Response | None]) -> None:
        self._handler_tasks.discard(task)
        if not self._closing:
            self._pump()

    def _write_now(self, response: Response) -> None:
        """Write a response that is first in line: small ones in one piece, else the bytes
        before the first region now and the rest by the writer task."""
        transport = self._transport
        assert transport is not None
        regions = 0
        for chunk in response:
            if not isinstance(chunk, bytes):
                regions += chunk.size
        if regions <= INLINE_REGIONS_MAX:
            whole = self._inline(response)
            if whole is not None:
                transport.write(whole)
            return
        for i, chunk in enumerate(response):
            if isinstance(chunk, bytes):
                transport.write(chunk)
            else:
                self._queue.appendleft(response[i:])
                self._start_writer()
                return

    def _inline(self, response: Response) -> bytes | None:
        """The response with its regions read (``pread``); None after closing the connection
        because a region could not be read whole (the segment was truncated or deleted)."""
        if len(response) == 1 and isinstance(response[0], bytes):
            return response[0]
        parts: list[bytes] = []
        for chunk in response:
            if isinstance(chunk, bytes):
                parts.append(chunk)
                continue
            try:
                data = os.pread(chunk.fd, chunk.size, chunk.position)
            except OSError as exc:
                log.debug("reading a file region for %s failed: %s", self.peer, exc)
                self.close()
                return None
            if len(data) != chunk.size:
                log.warning(
                    "read %d of %d bytes of a file region for %s (file truncated); "
                    "closing the connection",
                    len(data),
                    chunk.size,
                    self.peer,
                )
                self.close()
                return None
            parts.append(data)
        return b"".join(parts)

    def _pump(self) -> None:
        """Write every finished response at the head of the queue."""
        if self._writer is not None:
            return
        queue = self._queue
        while queue:
            head = queue[0]
            if isinstance(head, list):
                queue.popleft()
                self._write_now(head)
                if self._writer is not None or self._closing:
                    return
                continue
            if not head.done():
                break
            queue.popleft()
            if head.cancelled():
                self.close()
                return
            exc = head.exception()
            if exc is not None:
                if not isinstance(exc, CloseConnection):
                    log.error(
                        "unexpected error handling a request from %s; closing it",
                        self.peer,
                        exc_info=exc,
                    )
                self.close()
                return
            response = head.result()
            if response is not None:
                self._write_now(response)
                if self._writer is not None or self._closing:
                    return
        self._update_reading()
        if not queue and self._closing_after_flush and self._writer is None and not self._held:
            self.close()

    def _start_writer(self) -> None:
        self._writer = asyncio.get_running_loop().create_task(self._write_regions())

    async def _write_regions(self) -> None:
        """Send the head response, which holds file regions, then resume ``_pump``."""
        loop = asyncio.get_running_loop()
        transport = self._transport
        assert transport is not None
        head = self._queue.popleft()
        assert isinstance(head, list)
        try:
            for chunk in head:
                if isinstance(chunk, bytes):
                    transport.write(chunk)
                    continue
                if self.tls:
                    sent = await self._copy_region(transport, chunk)
                    if sent < 0:
                        return
                else:
                    sent = await loop.sendfile(
                        transport,
                        _FdFile(chunk.fd),  # type: ignore[arg-type]
                        chunk.position,
                        chunk.size,
                        # Never the read+write fallback: a socket that refuses sendfile is gone.
                        fallback=False,
                    )
                if sent != chunk.size:
                    log.warning(
                        "sent %d of %d bytes of a file region to %s (file truncated); "
                        "closing the connection",
                        sent,
                        chunk.size,
                        self.peer,
                    )
                    self.close()
                    return
        except (OSError, RuntimeError) as exc:
            log.debug("sendfile to %s failed: %s", self.peer, exc)
            self.close()
            return
        finally:
            self._writer = None
        if not self._closing:
            self._pump()

    async def _copy_region(self, transport: asyncio.Transport, region: FileRegion) -> int:
        """A file region through TLS (module docstring, "TLS copies"): the bytes sent, or -1
        when the connection closed meanwhile."""
        fd, position, end = region.fd, region.position, region.position + region.size
        writable = self._writable
        while position < end:
            if not writable.is_set():
                await writable.wait()
            if self._closing or transport.is_closing():
                return -1
            data = os.pread(fd, min(TLS_COPY_CHUNK, end - position), position)
            if not data:
                break
            transport.write(data)
            position += len(data)
        return position - region.position

    def _update_reading(self) -> None:
        transport = self._transport
        if transport is None or self._closing:
            return
        should_pause = (
            self._write_paused
            or self._memory_muted
            or len(self._queue) >= self._max_in_flight
            or self._throttle_timer is not None
        )
        if should_pause and not self._read_paused:
            self._read_paused = True
            transport.pause_reading()
        elif not should_pause and self._read_paused:
            self._read_paused = False
            if self._request_started is not None:
                self._request_started = time.monotonic()
            transport.resume_reading()

    # -- closing --------------------------------------------------------------------------

    def close(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            if self.close_grace_s > 0 and not self._closing:
                # A failed SASL login: its error response is written; the close waits a
                # little (reading stays paused) so the peer reads the response before the
                # FIN or TLS close_notify (kafka-python 3.0.12's TLS transport drops data that
                # arrives together with the close: "socket disconnected").
                self._closing = True
                self._transport.pause_reading()
                transport = self._transport
                asyncio.get_running_loop().call_later(self.close_grace_s, transport.close)
                return
            self._transport.close()
        self._closing = True

    def stop_reading(self) -> None:
        """Graceful shutdown: take no more requests from this client."""
        if self._transport is not None and not self._transport.is_closing():
            self._read_paused = True
            self._closing_after_flush = True
            self._transport.pause_reading()
            if not self._queue and self._writer is None:
                self.close()

    async def wait_flushed(self) -> None:
        """Until every pending response was handed to the transport."""
        while (self._queue or self._writer is not None) and not self._closing:
            await asyncio.sleep(0.01)
