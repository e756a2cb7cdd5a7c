"""Fixtures for cluster tests: one real ZooKeeper per test session, a fresh chroot per test.

The server is ``zookeeper_server`` of ``tests/conftest.py``, shared with ``tests/reference``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cluster import Cluster, new_chroot, start_cluster
from tests.support.zookeeper import ZooKeeperServer


@pytest.fixture
def zk_connect(zookeeper_server: ZooKeeperServer) -> str:
    """``zookeeper.connect`` with a chroot of its own (not created yet: the client does)."""
    return f"{zookeeper_server.connect_string}/franz-test-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="module")
def cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """Three ``franz broker`` processes (ids 1-3) on a chroot of their own, per test module."""
    base = Path(tmp_path_factory.mktemp("cluster"))
    with start_cluster(new_chroot(zookeeper_server.connect_string), base) as c:
        yield c


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A failed test that used the ``cluster`` fixture (or another ``Cluster``) reports the
    last lines each broker printed (all its runs): a failure seen only in CI then shows what
    the brokers did."""
    outcome = yield
    report = outcome.get_result()
    clusters = [c for c in getattr(item, "funcargs", {}).values() if isinstance(c, Cluster)]
    if report.when != "call" or not report.failed or not clusters:
        return
    cluster = clusters[0]
    for broker_id, broker in sorted(cluster.brokers.items()):
        path = broker.data_dir / "broker.out"
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        title = f"broker {broker_id} output (last 150 lines)"
        report.sections.append((title, "\n".join(lines[-150:])))
