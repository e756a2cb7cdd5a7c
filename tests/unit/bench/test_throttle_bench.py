"""``bench.throttle_bench``: the catch-up rate read from sampled log sizes."""

from __future__ import annotations

import pytest

from bench.throttle_bench import catch_up_rate


def test_rate_between_ten_and_ninety_percent():
    # 100 MB at 10 MB/s after 2 s of start-up, a sample every 0.5 s.
    samples = [(t / 2, max(0, min(100_000_000, int((t / 2 - 2) * 10_000_000)))) for t in range(30)]
    assert catch_up_rate(samples, 100_000_000) == pytest.approx(10.0, rel=0.1)


def test_no_rate_without_both_ends():
    assert catch_up_rate([(0.0, 0), (1.0, 50)], 100) is None
    assert catch_up_rate([(0.0, 95), (1.0, 100)], 100) is None
