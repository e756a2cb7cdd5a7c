"""Fixtures of the web console's tests: a real broker, ``franz console`` against it, and
headless Chromium (``tests.support.console``). Module-scoped: each test module gets its own
broker and console, so modules never see each other's topics and groups."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.broker import BrokerProcess
from tests.support.console import ConsoleProcess, chromium


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("console-broker"), {"num.partitions": "1"})
    proc.start()
    try:
        yield proc
    finally:
        code = proc.stop()
    assert code == 0, proc.output()


@pytest.fixture(scope="module")
def console(
    broker: BrokerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ConsoleProcess]:
    with ConsoleProcess(broker.bootstrap, tmp_path_factory.mktemp("console")) as proc:
        yield proc


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()
