"""Fixtures for cluster tests: one real ZooKeeper per test session, a fresh chroot per test.

The server is ``zookeeper_server`` of ``tests/conftest.py``, shared with ``tests/reference``.
"""

from __future__ import annotations

import uuid

import pytest

from tests.support.zookeeper import ZooKeeperServer


@pytest.fixture
def zk_connect(zookeeper_server: ZooKeeperServer) -> str:
    """``zookeeper.connect`` with a chroot of its own (not created yet: the client does)."""
    return f"{zookeeper_server.connect_string}/franz-test-{uuid.uuid4().hex[:12]}"
