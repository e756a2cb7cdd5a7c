"""Fixtures for integration tests: a real ``franz broker`` subprocess on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker import BrokerProcess


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrokerProcess]:
    """A broker with the embedded single-node defaults, stopped (SIGTERM) after the test.

    The test fails if the broker does not shut down cleanly (exit code 0).
    """
    proc = BrokerProcess(tmp_path / "broker").start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, f"broker exited with {code}:\n{proc.output()}"


@pytest.fixture
def broker_factory(tmp_path: Path) -> Iterator[type[BrokerProcess]]:
    """Start brokers with custom overrides: ``broker_factory(tmp_path / "b", {...}).start()``.

    Every broker made here is stopped (or killed) when the test ends.
    """
    made: list[BrokerProcess] = []

    class _Tracked(BrokerProcess):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            made.append(self)

    yield _Tracked
    for proc in made:
        proc.stop()
