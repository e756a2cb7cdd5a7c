"""A broker's metrics: its own prometheus_client registry, the ``/metrics`` endpoint
(``metrics.listener``) and the under-replicated log line.

* **Registry per broker** (not prometheus_client's global ``REGISTRY``): brokers started in
  one process (tests) never collide, and nothing else registers into it (no process or GC
  collectors: the names are Kafka's only).
* **Endpoint** (``metrics.listener``, Franz's own key; Kafka exports to JMX and leaves HTTP
  to the JMX exporter agent): off unless set. ``[http://]host:port`` (a path of ``/`` or
  ``/metrics`` is accepted and ignored; a bare port or an empty host binds 127.0.0.1:
  loopback by default, ``0.0.0.0`` or ``[::]`` to listen on every interface; port 0 takes
  any free port). ``GET`` or ``HEAD /metrics`` answers Prometheus' text format 0.0.4, or
  OpenMetrics when the scraper's ``Accept`` asks for it (prometheus_client's
  ``choose_encoder``); another path is 404, another method 405. Served on the broker's event
  loop (``franz.network.http_endpoint`` says why); the broker's start-up line ends with
  ``metrics http://host:port/metrics``. ``GET``/``HEAD /health`` is the readiness check
  (``franz.metrics.health``) when the broker gives its inputs.
* **Under-replicated log line** (issue 17's "in the broker log at a quiet level"): every
  ``URP_CHECK_INTERVAL_S`` the count of under-replicated partitions this broker leads is
  taken, and when it differs from the last one logged one INFO line says so, at most one line
  per ``URP_LOG_MIN_INTERVAL_S`` (a value that changes back within that time is not logged;
  the ISR changes themselves are logged by ``franz.cluster.partition``). Runs whether or not
  the endpoint is on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable
from typing import Final

from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder, generate_latest

from franz.errors import InvalidConfigurationError
from franz.metrics.collectors import (
    ControllerCollector,
    ControllerView,
    ReplicaFetcherCollector,
    ReplicaFetcherManagerView,
    ReplicaManagerCollector,
    ReplicaManagerView,
)
from franz.metrics.exposition import encode_text
from franz.metrics.groups import (
    ConsumerLagCollector,
    GroupCoordinatorCollector,
    GroupCoordinatorView,
    HighWatermarks,
)
from franz.metrics.health import HEALTH_PATH, HealthInputs, evaluate
from franz.metrics.replication import is_under_replicated
from franz.metrics.traffic import LoopIdle
from franz.metrics.traffic_collectors import TrafficSources, register_traffic
from franz.metrics.transactions import TransactionCoordinatorView, TransactionMarkerCollector
from franz.network.http_endpoint import HttpEndpoint, HttpRequestHead, HttpResponse

__all__ = [
    "URP_CHECK_INTERVAL_S",
    "URP_LOG_MIN_INTERVAL_S",
    "BrokerMetrics",
    "UnderReplicatedLog",
    "parse_metrics_listener",
]

log = logging.getLogger("franz.metrics")

#: How often the under-replicated count is taken for the log line.
URP_CHECK_INTERVAL_S: Final = 5.0
#: The least time between two under-replicated log lines.
URP_LOG_MIN_INTERVAL_S: Final = 30.0
METRICS_PATH: Final = "/metrics"
_LOOPBACK: Final = "127.0.0.1"
_ADDRESS = re.compile(r"^(?:(?P<host>\[[^\]]*\]|[^:/\[\]]*):)?(?P<port>\d{1,5})$")


def parse_metrics_listener(text: str) -> tuple[str, int]:
    """``metrics.listener`` -> (host to bind, port) (module docstring);
    ``InvalidConfigurationError`` naming the key when it is not ``[http://]host:port``."""
    value = text.strip()
    rest = value[len("http://") :] if value.lower().startswith("http://") else value
    address, slash, path = rest.partition("/")
    match = _ADDRESS.match(address)
    if match is None or (slash and path not in ("", "metrics")) or "://" in rest:
        raise InvalidConfigurationError(
            f"metrics.listener={text}: expected [http://]host:port (e.g. "
            f"http://127.0.0.1:9404); https is not served"
        )
    port = int(match.group("port"))
    if port > 65535:
        raise InvalidConfigurationError(f"metrics.listener={text}: port {port} is out of range")
    host = (match.group("host") or "").strip("[]") or _LOOPBACK
    return host, port


class UnderReplicatedLog:
    """Decides the under-replicated log line (module docstring); pure: ``observe`` returns the
    line to log, or None."""

    def __init__(self, broker_id: int, min_interval_s: float = URP_LOG_MIN_INTERVAL_S) -> None:
        self.broker_id = broker_id
        self.min_interval_s = min_interval_s
        self.logged = 0
        self._last_log_s: float | None = None

    def observe(self, count: int, now_s: float) -> str | None:
        if count == self.logged:
            return None
        if self._last_log_s is not None and now_s - self._last_log_s < self.min_interval_s:
            return None
        line = (
            f"broker {self.broker_id} leads {count} under-replicated partition(s) "
            f"(was {self.logged})"
        )
        self.logged = count
        self._last_log_s = now_s
        return line


class BrokerMetrics:
    """The metrics of one broker (module docstring). The callables give the live objects:
    the replica manager, the controller this broker hosts (None before it exists), and the
    replica fetcher manager (None in embedded mode)."""

    def __init__(
        self,
        broker_id: int,
        listener: str | None,
        replica_manager: Callable[[], ReplicaManagerView],
        controller: Callable[[], ControllerView | None],
        fetcher_manager: Callable[[], ReplicaFetcherManagerView | None],
        *,
        group_coordinator: Callable[[], GroupCoordinatorView] | None = None,
        high_watermark: HighWatermarks | None = None,
        health: Callable[[], HealthInputs] | None = None,
        txn_coordinator: Callable[[], TransactionCoordinatorView] | None = None,
        traffic: TrafficSources | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.address = parse_metrics_listener(listener) if listener else None
        self.replica_manager = replica_manager
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(ReplicaManagerCollector(replica_manager))
        self.registry.register(ControllerCollector(controller))
        self.registry.register(ReplicaFetcherCollector(fetcher_manager))
        if group_coordinator is not None:
            self.registry.register(GroupCoordinatorCollector(group_coordinator))
            if high_watermark is not None:
                self.registry.register(ConsumerLagCollector(group_coordinator, high_watermark))
        if txn_coordinator is not None:
            self.registry.register(TransactionMarkerCollector(txn_coordinator))
        #: The readiness check's inputs (``franz.metrics.health``); None: /health is 404.
        self.health = health
        #: The event loop's idle time (``franz.metrics.traffic.LoopIdle``), with the endpoint.
        self.loop_idle = LoopIdle() if self.address is not None else None
        if traffic is not None:
            register_traffic(self.registry, traffic, self.loop_idle)
        self.endpoint: HttpEndpoint | None = None
        self.urp_log = UnderReplicatedLog(broker_id)
        self._urp_task: asyncio.Task[None] | None = None

    @property
    def url(self) -> str | None:
        """``http://host:port/metrics`` once listening, else None."""
        if self.endpoint is None or self.address is None:
            return None
        host = self.address[0]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.endpoint.bound_port}{METRICS_PATH}"

    async def start(self) -> None:
        """Listen (when configured) and start the under-replicated log line."""
        if self.loop_idle is not None:
            self.loop_idle.install(getattr(asyncio.get_running_loop(), "_selector", None))
        if self.address is not None:
            endpoint = HttpEndpoint(*self.address, self.handle)
            await endpoint.start()
            self.endpoint = endpoint
        self._urp_task = asyncio.get_running_loop().create_task(
            self._watch_under_replicated(), name=f"under-replicated-log-{self.broker_id}"
        )

    async def stop(self) -> None:
        task, self._urp_task = self._urp_task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        endpoint, self.endpoint = self.endpoint, None
        if endpoint is not None:
            await endpoint.close()

    def render(self, accept: str = "") -> tuple[bytes, str]:
        """The registry in the format ``accept`` asks for: (body, content type)."""
        encoder, content_type = choose_encoder(accept)
        if encoder is generate_latest:  # text 0.0.4: the same bytes, faster (exposition)
            return encode_text(self.registry), content_type
        return encoder(self.registry), content_type

    def handle(self, request: HttpRequestHead) -> HttpResponse:
        """One HTTP request to the endpoint (module docstring)."""
        if request.path == HEALTH_PATH and self.health is not None:
            if request.method not in ("GET", "HEAD"):
                return HttpResponse(405, b"method not allowed\n", headers=(("Allow", "GET, HEAD"),))
            status, body = evaluate(self.health())
            return HttpResponse(status, body, "application/json")
        if request.path != METRICS_PATH:
            return HttpResponse(404, f"not found: try {METRICS_PATH}\n".encode())
        if request.method not in ("GET", "HEAD"):
            return HttpResponse(405, b"method not allowed\n", headers=(("Allow", "GET, HEAD"),))
        body, content_type = self.render(request.headers.get("accept", ""))
        return HttpResponse(200, body, content_type)

    def under_replicated_count(self) -> int:
        return sum(1 for p in self.replica_manager().partitions.values() if is_under_replicated(p))

    async def _watch_under_replicated(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(URP_CHECK_INTERVAL_S)
            try:
                line = self.urp_log.observe(self.under_replicated_count(), loop.time())
            except Exception:
                log.exception("counting under-replicated partitions failed")
                continue
            if line is not None:
                log.info("%s", line)
