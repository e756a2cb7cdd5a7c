"""Fixtures shared by every test directory: the test session's one real ZooKeeper.

``tests/cluster`` (Franz's cluster mode) and ``tests/reference`` (Apache Kafka in ZooKeeper
mode) both use it, each test in a chroot of its own. Debian's ``libzookeeper-java`` and Java
are installed by ``scripts/setup.sh``; without them the tests that need ZooKeeper are skipped
on a developer's machine and fail in CI (``CI`` set), where a missing install step must show.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.zookeeper import ZooKeeperServer, start_standalone, zookeeper_available


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    if not zookeeper_available():
        message = "ZooKeeper is not installed (scripts/setup.sh: apt-get install libzookeeper-java)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    server = start_standalone(lambda: Path(tmp_path_factory.mktemp("zookeeper")), 30)
    try:
        yield server
    finally:
        server.stop()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadfile`` (``scripts/test.sh``) runs ``tests/support/xdist_scheduling``'s
    variant: ``tests/spark`` on one worker (one SparkSession), handed out first."""
    if config.getoption("dist") != "loadfile":
        return None
    from tests.support.xdist_scheduling import FileScheduling

    return FileScheduling(config, log)
