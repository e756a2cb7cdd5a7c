"""The live charts' data: Prometheus endpoints scraped in the background, rates from counter
deltas, kept for a few minutes (``/charts``, the overview's strip).

The endpoints are ``--metrics-url`` (``ConsoleSettings.metrics_urls``): a Franz broker's
``metrics.listener`` or the Prometheus JMX exporter in front of an Apache Kafka broker. Both
name Kafka's ``kafka.server:type=BrokerTopicMetrics`` meters the same way (the exporter's
``example_configs/kafka-2_0_0.yml`` rule for ``...PerSec`` meters' ``Count``): ``METRICS``
below. A meter without a ``topic`` tag is the broker's total over all topics
(``BrokerTopicStats.allTopicsStats``); with one it is that topic's.

* ``MetricsScraper`` scrapes every URL concurrently (httpx, async, ``SCRAPE_TIMEOUT_S``)
  every ``SCRAPE_INTERVAL_S`` on the console's event loop (a task started and stopped by the
  app's lifespan) and keeps one ``Tick`` per round in a ring buffer of ``WINDOW_S``.
  Only the lines of ``METRICS`` are parsed (``prometheus_client.parser``, on a worker
  thread): a broker with 1,000 topics exports ten thousand other samples per scrape.
* ``rates`` turns ticks into per-second rates, as Prometheus' ``rate()`` does between two
  samples: delta over the time between the scrapes, per endpoint, then summed over the
  endpoints; a counter that went down (a restarted broker) restarts from zero; an endpoint
  that failed a scrape has no rate for the two intervals touching it.

Pure except ``MetricsScraper.scrape_once``/``run`` (the network).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

import httpx
from prometheus_client.parser import text_string_to_metric_families

__all__ = [
    "METRICS",
    "SCRAPE_INTERVAL_S",
    "WINDOW_S",
    "MetricsScraper",
    "RateSeries",
    "Rates",
    "Tick",
    "parse_counters",
    "rates",
]

log = logging.getLogger(__name__)

#: chart key -> the sample name (the JMX exporter's, ``lowercaseOutputName: true``) of
#: ``kafka.server:type=BrokerTopicMetrics,name=<MBean name>`` ``Count``.
METRICS: Final = {
    "messages_in": "kafka_server_brokertopicmetrics_messagesin_total",  # MessagesInPerSec
    "bytes_in": "kafka_server_brokertopicmetrics_bytesin_total",  # BytesInPerSec
    "bytes_out": "kafka_server_brokertopicmetrics_bytesout_total",  # BytesOutPerSec
}
_NAMES: Final = {name: key for key, name in METRICS.items()}
#: The families' base names (a counter's ``# TYPE`` line names it without ``_total``).
_PREFIXES: Final = tuple(name.removesuffix("_total") for name in METRICS.values())

SCRAPE_INTERVAL_S: Final = 2.0
SCRAPE_TIMEOUT_S: Final = 1.5
#: How much history the charts show (the ring buffer's length).
WINDOW_S: Final = 300.0
#: The per-topic series charted: the busiest by their latest rate.
TOP_TOPICS: Final = 5
TOTAL: Final = ""  # the topic of a broker's all-topics meter

#: (chart key, topic or TOTAL) -> counter value
Counters = dict[tuple[str, str], float]


def parse_counters(text: str) -> Counters:
    """The ``METRICS`` counters in one Prometheus text exposition (0.0.4 or OpenMetrics).

    A sample without a ``topic`` label is the endpoint's all-topics total; samples of the
    same (metric, topic) with other labels are summed."""
    wanted = "\n".join(
        line
        for line in text.splitlines()
        if line.startswith(_PREFIXES) or (line.startswith("# ") and _names_ours(line))
    )
    counters: Counters = {}
    for family in text_string_to_metric_families(wanted + "\n"):
        for sample in family.samples:
            key = _NAMES.get(sample.name)
            if key is None:
                continue
            topic = sample.labels.get("topic", TOTAL)
            counters[key, topic] = counters.get((key, topic), 0.0) + sample.value
    return counters


def _names_ours(comment: str) -> bool:
    """A ``# TYPE`` / ``# HELP`` line of one of ``METRICS``' families."""
    parts = comment.split(None, 3)
    return len(parts) >= 3 and parts[1] in ("TYPE", "HELP") and parts[2].startswith(_PREFIXES)


@dataclass(frozen=True)
class Tick:
    """One scrape round: when it ended (``time.monotonic()``), the wall-clock time, and per
    endpoint its counters (``None``: the scrape failed)."""

    at: float
    wall: float
    counters: tuple[Counters | None, ...]


@dataclass(frozen=True)
class RateSeries:
    """One chart line: per tick after the first, (seconds before the latest tick, rate or
    ``None`` where no endpoint had two scrapes in a row)."""

    label: str
    points: list[tuple[float, float | None]]

    @property
    def latest(self) -> float | None:
        for _, rate in reversed(self.points):
            if rate is not None:
                return rate
        return None


@dataclass(frozen=True)
class Rates:
    """Per chart key (``METRICS``): the cluster total and the top topics' series."""

    total: dict[str, RateSeries] = field(default_factory=dict)
    topics: dict[str, list[RateSeries]] = field(default_factory=dict)
    #: Endpoints whose latest scrape failed, with the reason.
    failing: dict[str, str] = field(default_factory=dict)
    ticks: int = 0
    #: Indexes of the endpoints whose latest scrape answered without any ``METRICS`` sample
    #: (a broker that does not export BrokerTopicMetrics, a JMX exporter without Kafka's
    #: rules).
    silent: list[int] = field(default_factory=list)


def _rate(
    before: Counters | None, after: Counters | None, key: tuple[str, str], dt: float
) -> float | None:
    if before is None or after is None or dt <= 0 or key not in after:
        return None
    now, then = after[key], before.get(key, 0.0)
    delta = now if now < then else now - then  # a counter reset starts again from 0
    return delta / dt


def _series(ticks: Sequence[Tick], key: tuple[str, str], label: str) -> RateSeries:
    """The summed rate over the endpoints of ``key`` between consecutive ticks. An
    endpoint without an all-topics sample counts its topics' sum for ``TOTAL``."""
    latest = ticks[-1].at
    points: list[tuple[float, float | None]] = []
    for before, after in itertools.pairwise(ticks):
        dt = after.at - before.at
        total: float | None = None
        for b, a in zip(before.counters, after.counters, strict=True):
            if key[1] == TOTAL and a is not None and key not in a:
                b, a = _topics_sum(b, key[0]), _topics_sum(a, key[0])
            rate = _rate(b, a, key, dt)
            if rate is not None:
                total = (total or 0.0) + rate
        points.append((latest - after.at, total))
    return RateSeries(label, points)


def _topics_sum(counters: Counters | None, metric: str) -> Counters | None:
    if counters is None:
        return None
    values = [v for (m, t), v in counters.items() if m == metric and t != TOTAL]
    return {(metric, TOTAL): sum(values)} if values else {}


def rates(ticks: Sequence[Tick], top: int = TOP_TOPICS) -> Rates:
    """Every chart's series from ``ticks`` (oldest first): the total and, per metric, the
    ``top`` topics with the highest rate over the last interval (ties by name; idle topics
    are left out)."""
    silent = [i for i, c in enumerate(ticks[-1].counters) if c == {}] if ticks else []
    if len(ticks) < 2:
        return Rates(ticks=len(ticks), silent=silent)
    result = Rates(ticks=len(ticks), silent=silent)
    for metric in METRICS:
        result.total[metric] = _series(ticks, (metric, TOTAL), "all topics")
        topics = {t for c in ticks[-1].counters if c for (m, t) in c if m == metric and t != TOTAL}
        # Rank on the last interval only, then draw the whole series of the top ones: with
        # 1,000 topics and 150 ticks, every topic's series would take a page 0.5 s.
        latest = {t: _series(ticks[-2:], (metric, t), t).latest or 0.0 for t in topics}
        chosen = sorted((t for t in topics if latest[t] > 0), key=lambda t: (-latest[t], t))[:top]
        result.topics[metric] = [_series(ticks, (metric, t), t) for t in chosen]
    return result


class MetricsScraper:
    """The background scraper (module docstring). ``start()`` / ``stop()`` from the app's
    lifespan; ``rates()`` for the pages; ``errors`` the last failure per URL."""

    def __init__(
        self,
        urls: Iterable[str],
        *,
        interval_s: float = SCRAPE_INTERVAL_S,
        window_s: float = WINDOW_S,
        timeout_s: float = SCRAPE_TIMEOUT_S,
    ) -> None:
        self.urls = list(urls)
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self.ticks: deque[Tick] = deque(maxlen=max(2, int(window_s / interval_s) + 1))
        self.errors: dict[str, str] = {}
        self._task: asyncio.Task[None] | None = None
        self._client: httpx.AsyncClient | None = None

    @property
    def enabled(self) -> bool:
        return bool(self.urls)

    def start(self) -> None:
        if self.enabled and self._task is None:
            self._client = httpx.AsyncClient(timeout=self.timeout_s)
            self._task = asyncio.create_task(self.run(), name="franz-console-metrics")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def run(self) -> None:
        """Scrape every ``interval_s`` (from the start of one round to the next) until
        cancelled."""
        while True:
            began = time.monotonic()
            await self.scrape_once()
            await asyncio.sleep(max(0.0, self.interval_s - (time.monotonic() - began)))

    async def scrape_once(self) -> Tick:
        client = self._client or httpx.AsyncClient(timeout=self.timeout_s)
        try:
            results = await asyncio.gather(*(self._scrape(client, url) for url in self.urls))
        finally:
            if client is not self._client:
                await client.aclose()
        tick = Tick(at=time.monotonic(), wall=time.time(), counters=tuple(results))
        self.ticks.append(tick)
        return tick

    async def _scrape(self, client: httpx.AsyncClient, url: str) -> Counters | None:
        try:
            response = await client.get(url, headers={"Accept": "text/plain"})
            response.raise_for_status()
            # Off the event loop: a broker with 1,000 topics exports thousands of lines.
            counters = await asyncio.to_thread(parse_counters, response.text)
        except (httpx.HTTPError, ValueError) as exc:
            self.errors[url] = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            return None
        self.errors.pop(url, None)
        return counters

    def rates(self) -> Rates:
        result = rates(list(self.ticks))
        result.failing.update(self.errors)
        return result
