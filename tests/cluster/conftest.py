"""Fixtures for cluster tests: one real ZooKeeper per test session, a fresh chroot per test.

Skipped when Debian's ``libzookeeper-java`` (and Java) are missing: ``scripts/setup.sh``
installs them.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.zookeeper import ZooKeeperServer, zookeeper_available


@pytest.fixture(scope="session")
def zookeeper_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    if not zookeeper_available():
        pytest.skip("ZooKeeper is not installed (apt-get install libzookeeper-java)")
    server = ZooKeeperServer(Path(tmp_path_factory.mktemp("zookeeper"))).start()
    try:
        server.wait_ready(30)
        yield server
    finally:
        server.stop()


@pytest.fixture
def zk_connect(zookeeper_server: ZooKeeperServer) -> str:
    """``zookeeper.connect`` with a chroot of its own (not created yet: the client does)."""
    return f"{zookeeper_server.connect_string}/franz-test-{uuid.uuid4().hex[:12]}"
