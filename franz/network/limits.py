"""What the listener lets peers hold: request memory and connections (sans-IO bookkeeping).

Both classes are plain counters over values, so the rules are tested without sockets; the
server and its connections (``franz.network.server``, ``.connection``) act on their answers.

``MemoryPool`` is Kafka's request memory pool (``SocketServer``'s ``SimpleMemoryPool``,
``queued.max.request.bytes``, default -1 = unbounded), non-strict as Kafka's: a request is
admitted whenever the pool has *any* memory left, and its whole announced size is then
charged, so the pool can go negative by at most one request (at most
``socket.request.max.bytes``, which is why Kafka requires ``queued.max.request.bytes`` >=
``socket.request.max.bytes``). An admitted request can always be completed: a request never
waits for memory halfway, and a fully reserved pool cannot deadlock.

``ConnectionQuotas`` is Kafka's ``ConnectionQuotas`` for one listener: ``max.connections``
(broker-wide, default 2147483647: at the limit the acceptor waits for a slot),
``max.connections.per.ip`` (default 2147483647: a connection over it is closed at once) and
``max.connections.per.ip.overrides`` (``host:count`` pairs, comma separated; a host name is
resolved once, at start-up, as Kafka's ``InetAddress.getByName``).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Mapping

from franz.errors import InvalidConfigurationError

__all__ = ["ConnectionQuotas", "MemoryPool", "parse_per_ip_overrides"]


class MemoryPool:
    """Bytes reserved by requests being received (``queued.max.request.bytes``).

    ``size <= 0`` is Kafka's ``MemoryPool.NONE``: every reservation succeeds (the bytes are
    still counted, for ``used``).
    """

    __slots__ = ("_available", "size")

    def __init__(self, size: int) -> None:
        self.size = size
        self._available = size

    @property
    def bounded(self) -> bool:
        return self.size > 0

    @property
    def used(self) -> int:
        return self.size - self._available

    @property
    def is_out_of_memory(self) -> bool:
        return self.bounded and self._available <= 0

    def try_allocate(self, size: int) -> bool:
        """Reserve ``size`` bytes if any memory is left (non-strict); False: muted."""
        if self.is_out_of_memory:
            return False
        self._available -= size
        return True

    def release(self, size: int) -> None:
        self._available += size


def parse_per_ip_overrides(text: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``"host:count,1.2.3.4:count"`` -> {ip: count}.

    Split as Kafka's ``parseCsvMap`` (entries on commas, each on its last colon, so an IPv6
    address may carry colons); a host name maps every address it resolves to.
    """
    overrides: dict[str, int] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        host, sep, count_text = entry.rpartition(":")
        host = host.strip().strip("[]")
        try:
            count = int(count_text.strip())
        except ValueError:
            count = -1
        if not sep or not host or count < 0:
            raise InvalidConfigurationError(
                f"Invalid value {text} for configuration max.connections.per.ip.overrides: "
                f"{entry!r} is not host:count"
            )
        for address in _addresses(host):
            overrides[address] = count
    return overrides


def _addresses(host: str) -> list[str]:
    try:
        return [str(ipaddress.ip_address(host))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError as exc:
        raise InvalidConfigurationError(
            f"max.connections.per.ip.overrides: cannot resolve host {host}: {exc}"
        ) from exc
    return sorted({str(info[4][0]) for info in infos})


class ConnectionQuotas:
    """Open connections, broker-wide and per peer address (one listener, as Franz has)."""

    __slots__ = ("_counts", "max_connections", "max_per_ip", "overrides", "total")

    def __init__(
        self,
        max_connections: int = 2**31 - 1,
        max_per_ip: int = 2**31 - 1,
        overrides: Mapping[str, int] | None = None,
    ) -> None:
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.overrides = dict(overrides or {})
        if max_per_ip == 0 and not self.overrides:
            raise InvalidConfigurationError(
                "max.connections.per.ip can be set to zero only if "
                "max.connections.per.ip.overrides property is set."
            )
        self._counts: dict[str, int] = {}
        self.total = 0

    def slot_available(self) -> bool:
        """Whether the acceptor may take another connection (``max.connections``)."""
        return self.total < self.max_connections

    def max_for(self, ip: str) -> int:
        return self.overrides.get(ip, self.max_per_ip)

    def count(self, ip: str) -> int:
        return self._counts.get(ip, 0)

    def inc(self, ip: str) -> bool:
        """Count a new connection from ``ip``; False (not counted): over its per-IP limit."""
        count = self._counts.get(ip, 0)
        if count >= self.max_for(ip):
            return False
        self._counts[ip] = count + 1
        self.total += 1
        return True

    def dec(self, ip: str) -> None:
        count = self._counts.get(ip, 0)
        if count <= 1:
            self._counts.pop(ip, None)
        else:
            self._counts[ip] = count - 1
        self.total = max(self.total - 1, 0)
