"""Kafka's Yammer histograms and timers, as the JMX exporter shows them: a ``Count`` and the
``50thPercentile``, ``75th``, ``95th``, ``98th``, ``99th`` and ``999thPercentile`` of recent
values (``Mean``, ``Min``, ``Max``, ``StdDev`` and the rates exist on the MBean but no rule of
``kafka-2_0_0.yml`` exports them, so they are not kept).

Reservoir (the cheap choice, documented as the brief asks): Kafka's histograms use Yammer's
``ExponentiallyDecayingReservoir`` (1028 samples, alpha 0.015: biased to the last ~5
minutes), which takes a lock, draws a random priority and may rescale on every update.
Franz keeps a **sliding window of the last 1028 values** (Dropwizard's
``SlidingWindowReservoir``): one store into a preallocated list and two integer updates per
value, no allocation, no lock (one event loop owns it). The percentiles are computed when
Prometheus scrapes, by sorting the window (1028 values: tens of microseconds), with Yammer's
``UniformSnapshot.getValue`` interpolation. Both reservoirs describe recent traffic; the
window follows a change of load within 1028 requests instead of minutes, and an idle API
keeps its last values (so does Kafka's until its next rescale).

An empty histogram's percentiles are 0.0, as Yammer's empty snapshot answers.
"""

from __future__ import annotations

from typing import Final

__all__ = ["PERCENTILES", "RESERVOIR_SIZE", "Histogram", "quantile"]

#: Yammer's default reservoir size (``ExponentiallyDecayingReservoir.DEFAULT_SIZE``).
RESERVOIR_SIZE: Final = 1028
#: The JMX attributes the exporter's rules turn into ``quantile`` labels: (attribute prefix,
#: quantile). The rules write ``0.$n`` from ``$nthPercentile``: ``0.50``, ``0.999``.
PERCENTILES: Final = (
    ("50", 0.5),
    ("75", 0.75),
    ("95", 0.95),
    ("98", 0.98),
    ("99", 0.99),
    ("999", 0.999),
)


def quantile(ordered: list[float], q: float) -> float:
    """Yammer's ``UniformSnapshot.getValue(q)`` over sorted ``ordered``: the value at rank
    ``q * (n + 1)``, linearly interpolated; the ends clamp; 0.0 when empty."""
    n = len(ordered)
    if n == 0:
        return 0.0
    pos = q * (n + 1)
    index = int(pos)
    if index < 1:
        return float(ordered[0])
    if index >= n:
        return float(ordered[-1])
    lower = ordered[index - 1]
    upper = ordered[index]
    return float(lower + (pos - index) * (upper - lower))


class Histogram:
    """A Yammer histogram (or a timer's durations, in ms) over a sliding window (module
    docstring). ``update`` is the hot path: no allocation beyond the value itself."""

    __slots__ = ("_next", "_size", "_values", "count")

    def __init__(self, size: int = RESERVOIR_SIZE) -> None:
        self._values: list[float] = [0.0] * size
        self._size = size
        self._next = 0
        #: Every value ever recorded (the MBean's ``Count``).
        self.count = 0

    def update(self, value: float) -> None:
        index = self._next
        self._values[index] = value
        self._next = index + 1 if index + 1 < self._size else 0
        self.count += 1

    def window(self) -> list[float]:
        """The values in the reservoir (at most ``size``), unordered."""
        if self.count >= self._size:
            return list(self._values)
        return self._values[: self.count]

    def percentiles(self) -> list[tuple[str, float]]:
        """``(attribute prefix, value)`` for each of ``PERCENTILES``."""
        ordered = sorted(self.window())
        return [(name, quantile(ordered, q)) for name, q in PERCENTILES]
