"""An asyncio-facing ZooKeeper client over kazoo: the only module that imports kazoo.

Concurrency rules:

* kazoo runs its own threads (the connection thread, one callback worker). They never touch
  Franz's state: every completion, session state change and watch notification is posted to
  the owning event loop with ``loop.call_soon_threadsafe``; listeners run on the loop.
* Requests use kazoo's ``*_async`` calls (an ``IAsyncResult`` bridged to an asyncio future
  with ``rawlink``), so nothing blocks the loop; only ``start``/``stop``, which kazoo offers
  only as blocking calls, run in the default executor.
* ZooKeeper lost: a request waits for the connection and is sent again after a
  ConnectionLoss (a retried create may then find its own node: NodeExists, as in Kafka), at
  most ``zookeeper.connection.timeout.ms`` in all, then fails with
  ``ZooKeeperConnectionError``; an answer is awaited at most the session timeout. kazoo
  reconnects at most about a second apart (``_reconnect_policy``).
* kazoo's exceptions are mapped to the ``ZooKeeperError`` family below, so callers never
  import kazoo. A multi-op (``multi``) returns its results, or raises the *first failing*
  operation's error (kazoo's ``commit`` returns a list with exceptions and never raises).

Session states (``SessionState``): ``CONNECTED``; ``SUSPENDED`` (connection lost, the session
may still be alive: ephemerals still exist); ``EXPIRED`` (the session is gone with its
ephemerals; kazoo then opens a new session by itself and reports ``CONNECTED`` again, and the
owner must re-create its ephemerals and re-run elections).

Configuration keys are Kafka's: ``zookeeper.connect`` (``host:port[,host:port]/chroot``; the
chroot is created when missing, as Kafka does), ``zookeeper.session.timeout.ms`` (18000) and
``zookeeper.connection.timeout.ms`` (defaults to the session timeout).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError as KazooBadVersionError,
)
from kazoo.exceptions import (
    ConnectionLoss,
    KazooException,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    RolledBackError,
    RuntimeInconsistency,
    SessionExpiredError,
    ZookeeperError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.recipe.watchers import ChildrenWatch, DataWatch
from kazoo.retry import KazooRetry

from franz.errors import FranzError

__all__ = [
    "DEFAULT_SESSION_TIMEOUT_MS",
    "BadVersionError",
    "CheckOp",
    "CreateOp",
    "DeleteOp",
    "NoNodeZkError",
    "NodeExistsZkError",
    "SessionState",
    "SetDataOp",
    "Stat",
    "ZooKeeperClient",
    "ZooKeeperConfig",
    "ZooKeeperConnectionError",
    "ZooKeeperConnectionLossError",
    "ZooKeeperError",
    "ZooKeeperSessionExpiredError",
]

log = logging.getLogger(__name__)

#: Kafka's ``zookeeper.session.timeout.ms`` default.
DEFAULT_SESSION_TIMEOUT_MS: Final = 18000

T = TypeVar("T")


# --------------------------------------------------------------------------- errors
class ZooKeeperError(FranzError):
    """A ZooKeeper request failed; ``path`` names the znode when known."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path


class NoNodeZkError(ZooKeeperError):
    pass


class NodeExistsZkError(ZooKeeperError):
    pass


class BadVersionError(ZooKeeperError):
    """A conditional write's expected version did not match."""


class NotEmptyZkError(ZooKeeperError):
    pass


class ZooKeeperSessionExpiredError(ZooKeeperError):
    pass


class ZooKeeperConnectionError(ZooKeeperError):
    """No ZooKeeper server answered within ``zookeeper.connection.timeout.ms`` (at start, or
    for a request made while the connection is down: Kafka's
    ``ZooKeeperClientTimeoutException``)."""


class ZooKeeperConnectionLossError(ZooKeeperError):
    """The connection dropped while a request was in flight (its outcome is unknown)."""


def _map_error(exc: BaseException, path: str | None) -> BaseException:
    where = f" at {path}" if path else ""
    if isinstance(exc, NoNodeError):
        return NoNodeZkError(f"KeeperErrorCode = NoNode{where}", path)
    if isinstance(exc, NodeExistsError):
        return NodeExistsZkError(f"KeeperErrorCode = NodeExists{where}", path)
    if isinstance(exc, KazooBadVersionError):
        return BadVersionError(f"KeeperErrorCode = BadVersion{where}", path)
    if isinstance(exc, NotEmptyError):
        return NotEmptyZkError(f"KeeperErrorCode = Directory not empty{where}", path)
    if isinstance(exc, ConnectionLoss):
        return ZooKeeperConnectionLossError(f"KeeperErrorCode = ConnectionLoss{where}", path)
    if isinstance(exc, SessionExpiredError):
        return ZooKeeperSessionExpiredError(f"KeeperErrorCode = Session expired{where}", path)
    if isinstance(exc, (ZookeeperError, KazooException)):
        return ZooKeeperError(f"{type(exc).__name__}{where}: {exc}", path)
    return exc


# --------------------------------------------------------------------------- values
class SessionState(enum.Enum):
    CONNECTED = "CONNECTED"
    SUSPENDED = "SUSPENDED"
    EXPIRED = "EXPIRED"


@dataclass(frozen=True, slots=True)
class Stat:
    """The parts of a ZooKeeper ``Stat`` Franz uses."""

    version: int
    ephemeral_owner: int
    czxid: int
    children_version: int
    #: When the znode was created, by the server's clock (epoch milliseconds).
    ctime_ms: int = 0


def _stat(raw: Any) -> Stat:
    return Stat(raw.version, raw.ephemeralOwner, raw.czxid, raw.cversion, raw.ctime)


@dataclass(frozen=True, slots=True)
class CreateOp:
    path: str
    data: bytes | None = None
    ephemeral: bool = False
    sequence: bool = False


@dataclass(frozen=True, slots=True)
class SetDataOp:
    path: str
    data: bytes
    version: int = -1


@dataclass(frozen=True, slots=True)
class DeleteOp:
    path: str
    version: int = -1


@dataclass(frozen=True, slots=True)
class CheckOp:
    path: str
    version: int


Op = CreateOp | SetDataOp | DeleteOp | CheckOp


@dataclass(frozen=True, slots=True)
class ZooKeeperConfig:
    """Kafka's ZooKeeper client keys."""

    #: ``zookeeper.connect``: ``host:port[,host:port...][/chroot]``.
    connect: str
    #: ``zookeeper.session.timeout.ms``.
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    #: ``zookeeper.connection.timeout.ms``; None: the session timeout (Kafka's fallback).
    connection_timeout_ms: int | None = None

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> ZooKeeperConfig:
        timeout = props.get("zookeeper.connection.timeout.ms")
        return cls(
            connect=props["zookeeper.connect"],
            session_timeout_ms=int(
                props.get("zookeeper.session.timeout.ms", DEFAULT_SESSION_TIMEOUT_MS)
            ),
            connection_timeout_ms=None if timeout is None else int(timeout),
        )

    @property
    def hosts(self) -> str:
        return self.connect.partition("/")[0]

    @property
    def chroot(self) -> str:
        """The chroot (``""`` for none), without a trailing slash."""
        _, slash, root = self.connect.partition("/")
        return ("/" + root).rstrip("/") if slash else ""

    @property
    def effective_connection_timeout_ms(self) -> int:
        return self.connection_timeout_ms or self.session_timeout_ms


StateListener = Callable[[SessionState], None]


def _reconnect_policy() -> KazooRetry:
    """kazoo retries a lost connection forever, but its default backoff doubles up to an
    hour between attempts, so a broker would take minutes to notice that ZooKeeper came back
    after a long outage. ZooKeeper's Java client (Kafka's) tries the next server at once and
    sleeps at most about a second between rounds: do the same."""
    return KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_jitter=0.2, max_delay=1.0)


# --------------------------------------------------------------------------- the client
class ZooKeeperClient:
    """One ZooKeeper session (renewed by kazoo after expiry), driven from one event loop."""

    def __init__(self, config: ZooKeeperConfig) -> None:
        self.config = config
        self._kazoo: KazooClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._listeners: list[StateListener] = []
        #: kazoo's watch objects, kept alive for the session's life.
        self._watches: list[Any] = []
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Connect (creating the chroot if missing), or raise ``ZooKeeperConnectionError``
        after ``zookeeper.connection.timeout.ms``."""
        self._loop = asyncio.get_running_loop()
        if self.config.chroot:
            await self._run_blocking(self._ensure_chroot)
        client = KazooClient(
            hosts=self.config.hosts + self.config.chroot,
            timeout=self.config.session_timeout_ms / 1000,
            connection_retry=_reconnect_policy(),
        )
        await self._run_blocking(lambda: self._start_kazoo(client))
        client.add_listener(self._on_kazoo_state)
        self._kazoo = client
        log.info("connected to ZooKeeper %s, session 0x%x", self.config.connect, self.session_id)

    def _start_kazoo(self, client: KazooClient) -> None:
        timeout_s = self.config.effective_connection_timeout_ms / 1000
        try:
            client.start(timeout=timeout_s)
        except KazooTimeoutError:
            raise ZooKeeperConnectionError(
                f"Timed out waiting for connection to ZooKeeper {self.config.hosts} "
                f"(zookeeper.connection.timeout.ms={self.config.effective_connection_timeout_ms})"
            ) from None

    def _ensure_chroot(self) -> None:
        boot = KazooClient(hosts=self.config.hosts, timeout=self.config.session_timeout_ms / 1000)
        self._start_kazoo(boot)
        try:
            boot.ensure_path(self.config.chroot)
        finally:
            boot.stop()
            boot.close()

    async def close(self) -> None:
        """Close the session (its ephemerals vanish at once) and release kazoo's threads."""
        if self._closed:
            return
        self._closed = True
        client = self._kazoo
        if client is None:
            return
        client.remove_listener(self._on_kazoo_state)

        def stop() -> None:
            client.stop()
            client.close()

        await self._run_blocking(stop)

    async def _run_blocking(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(None, fn)

    @property
    def session_id(self) -> int:
        """The current session id (a new one after expiry)."""
        client_id = self._client.client_id
        return int(client_id[0]) if client_id else 0

    @property
    def session_credentials(self) -> tuple[int, bytes]:
        """(session id, password); tests use them to force an expiry."""
        sid, password = self._client.client_id
        return int(sid), bytes(password)

    @property
    def _client(self) -> KazooClient:
        if self._kazoo is None:
            raise ZooKeeperError("the ZooKeeper client is not started")
        return self._kazoo

    # ------------------------------------------------------------------ state and watches
    def add_state_listener(self, listener: StateListener) -> None:
        """``listener(state)`` runs on the loop after each session state change."""
        self._listeners.append(listener)

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is None or loop.is_closed() or self._closed:
            return
        with contextlib.suppress(RuntimeError):  # the loop closed after the check
            loop.call_soon_threadsafe(fn, *args)

    def _on_kazoo_state(self, state: str) -> bool:
        """kazoo's connection thread: translate and post, nothing else."""
        mapped = {
            KazooState.CONNECTED: SessionState.CONNECTED,
            KazooState.SUSPENDED: SessionState.SUSPENDED,
            KazooState.LOST: SessionState.EXPIRED,
        }[state]
        self._post(self._dispatch_state, mapped)
        return False

    def _dispatch_state(self, state: SessionState) -> None:
        log.info("ZooKeeper session state %s", state.value)
        for listener in list(self._listeners):
            listener(state)

    def watch_children(self, path: str, callback: Callable[[list[str]], None]) -> None:
        """``callback(children)`` runs on the loop now and after every change of ``path``'s
        children (kazoo re-arms the watch; quick changes coalesce into the latest list). The
        watch survives session expiry. ``path`` must exist."""

        def on_children(children: list[str]) -> bool:
            self._post(callback, sorted(children))
            return not self._closed  # False ends kazoo's watch

        self._watches.append(ChildrenWatch(self._client, path, on_children))

    def watch_data(self, path: str, callback: Callable[[bytes | None, Stat | None], None]) -> None:
        """``callback(data, stat)`` runs on the loop now and after every change of ``path``
        (``None, None`` while it does not exist)."""

        def on_data(data: bytes | None, stat: Any) -> bool:
            self._post(callback, data, None if stat is None else _stat(stat))
            return not self._closed  # False ends kazoo's watch

        self._watches.append(DataWatch(self._client, path, on_data))

    # ------------------------------------------------------------------ requests
    async def _await(self, async_result: Any, path: str | None) -> Any:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()

        def settle(result: Any) -> None:
            if future.done():
                return
            try:
                value = result.get_nowait()
            except BaseException as exc:
                future.set_exception(_map_error(exc, path))
            else:
                future.set_result(value)

        def done(result: Any) -> None:  # kazoo's thread
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, result)

        async_result.rawlink(done)
        return await future

    def _call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        try:
            return getattr(self._client, name)(*args, **kwargs)
        except KazooException as exc:  # raised synchronously, e.g. when not connected
            raise _map_error(exc, args[0] if args else None) from exc

    async def _request(self, path: str | None, issue: Callable[[], Any]) -> Any:
        """Run one request (``issue()`` returns kazoo's async result), as Kafka's
        ``ZooKeeperClient.handleRequests`` with ``KafkaZkClient.retryRequestsUntilConnected``:
        wait until connected, send, and send again after a ConnectionLoss; give up with
        ``ZooKeeperConnectionError`` once ``zookeeper.connection.timeout.ms`` passed without
        a connection. An answer is awaited at most the session timeout (kazoo reports a dead
        connection within it), so no caller waits forever on a lost ZooKeeper."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.config.effective_connection_timeout_ms / 1000
        while True:
            # kazoo's own flag, safe to read from any thread: no race with posted states.
            while not self._client.connected:
                if self._closed or loop.time() >= deadline:
                    raise self._timed_out(path)
                await asyncio.sleep(0.05)
            try:
                # asyncio.timeout, not wait_for: 3.11's wait_for can swallow the cancel of
                # a controller or session task stopping (franz.cluster.fetcher_thread).
                async with asyncio.timeout(
                    max(self.config.session_timeout_ms / 1000, deadline - loop.time())
                ):
                    return await self._await(issue(), path)
            except TimeoutError:
                raise self._timed_out(path) from None
            except ZooKeeperConnectionLossError as exc:
                if self._closed or loop.time() >= deadline:
                    raise self._timed_out(path) from exc
                log.info("ZooKeeper connection lost during a request at %s; retrying", path)
                await asyncio.sleep(0.05)

    def _timed_out(self, path: str | None) -> ZooKeeperConnectionError:
        where = f" at {path}" if path else ""
        return ZooKeeperConnectionError(
            f"Timed out waiting for connection to ZooKeeper{where} "
            f"(zookeeper.connection.timeout.ms={self.config.effective_connection_timeout_ms})",
            path,
        )

    async def get(self, path: str) -> tuple[bytes, Stat]:
        data, stat = await self._request(path, lambda: self._call("get_async", path))
        return data if data is not None else b"", _stat(stat)

    async def get_or_none(self, path: str) -> tuple[bytes, Stat] | None:
        try:
            return await self.get(path)
        except NoNodeZkError:
            return None

    async def exists(self, path: str) -> Stat | None:
        stat = await self._request(path, lambda: self._call("exists_async", path))
        return None if stat is None else _stat(stat)

    async def get_children(self, path: str) -> list[str]:
        children = await self._request(path, lambda: self._call("get_children_async", path))
        return sorted(children)

    async def create(
        self,
        path: str,
        data: bytes | None = None,
        *,
        ephemeral: bool = False,
        sequence: bool = False,
        makepath: bool = False,
    ) -> str:
        """Create ``path``; returns the created path (with the sequence suffix)."""
        return str(
            await self._request(
                path,
                lambda: self._call(
                    "create_async",
                    path,
                    data if data is not None else b"",
                    ephemeral=ephemeral,
                    sequence=sequence,
                    makepath=makepath,
                ),
            )
        )

    async def set(self, path: str, data: bytes, version: int = -1) -> Stat:
        """Set ``path``'s data if its version is ``version`` (-1: any); returns the new stat."""
        return _stat(
            await self._request(path, lambda: self._call("set_async", path, data, version))
        )

    async def delete(self, path: str, version: int = -1) -> None:
        await self._request(path, lambda: self._call("delete_async", path, version))

    async def delete_recursive(self, path: str) -> None:
        """Delete ``path`` and its subtree (children first); a missing path is fine."""
        try:
            children = await self.get_children(path)
        except NoNodeZkError:
            return
        for child in children:
            await self.delete_recursive(f"{path.rstrip('/')}/{child}")
        with contextlib.suppress(NoNodeZkError):
            await self.delete(path)

    async def ensure_path(self, path: str) -> None:
        await self._request(path, lambda: self._call("ensure_path_async", path))

    async def multi(self, ops: Sequence[Op]) -> list[Any]:
        """Run ``ops`` atomically (ZooKeeper's multi). Returns kazoo's per-op results (True,
        a ``Stat``, or the created path) or raises the first failing op's error, mapped."""

        def commit() -> Any:
            txn = self._client.transaction()
            for op in ops:
                if isinstance(op, CreateOp):
                    txn.create(
                        op.path, op.data or b"", ephemeral=op.ephemeral, sequence=op.sequence
                    )
                elif isinstance(op, SetDataOp):
                    txn.set_data(op.path, op.data, op.version)
                elif isinstance(op, DeleteOp):
                    txn.delete(op.path, op.version)
                else:
                    txn.check(op.path, op.version)
            return txn.commit_async()

        results = await self._request(None, commit)
        for op, result in zip(ops, results, strict=False):
            if isinstance(result, BaseException) and not isinstance(
                result, (RolledBackError, RuntimeInconsistency)
            ):
                raise _map_error(result, op.path) from result
        for result in results:
            if isinstance(result, BaseException):  # only rollbacks: should not happen alone
                raise _map_error(result, None)
        return [_stat(r) if hasattr(r, "ephemeralOwner") else r for r in results]
