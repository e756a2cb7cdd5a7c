"""Time, injected: domain code takes a ``Clock`` and never calls ``time`` itself.

``wall_ms`` is the epoch time in milliseconds Kafka stamps on records, segments and retention;
``monotonic_ns`` measures intervals (flush.ms, timeouts) and never goes backwards.
``ManualClock`` moves only when told to, so tests of rolling, retention and timeouts do not
sleep.
"""

from __future__ import annotations

import time
from typing import Protocol

__all__ = ["Clock", "ManualClock", "SystemClock"]


class Clock(Protocol):
    def wall_ms(self) -> int:
        """Milliseconds since the epoch."""
        ...

    def monotonic_ns(self) -> int:
        """A monotonic reading in nanoseconds, for measuring intervals."""
        ...


class SystemClock:
    """The real clock."""

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ns(self) -> int:
        return time.monotonic_ns()


class ManualClock:
    """A clock that moves only through :meth:`advance` (tests, simulations)."""

    def __init__(self, wall_ms: int = 1_700_000_000_000) -> None:
        self._wall_ms = wall_ms
        self._monotonic_ns = 0

    def wall_ms(self) -> int:
        return self._wall_ms

    def monotonic_ns(self) -> int:
        return self._monotonic_ns

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a clock does not go backwards")
        self._wall_ms += ms
        self._monotonic_ns += ms * 1_000_000
