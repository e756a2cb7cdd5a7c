"""Apache Kafka as the reference: one ZooKeeper and one Kafka broker per test session.

Kafka's jars come from ``scripts/fetch-kafka-reference.sh`` (run by ``scripts/setup.sh``, and
lazily here). The tests are skipped only when ``java`` is absent; a failed fetch or a server
that does not start fails them (CI has Java, so the reference must run there).
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.broker import BrokerProcess
from tests.support.kafka_ref import HasBootstrap, KafkaBroker, reference_libs
from tests.support.zookeeper import ZooKeeperServer

_chroots = itertools.count()


@pytest.fixture(scope="session")
def kafka_libs() -> Path:
    """The reference class path (fetched on first use)."""
    if shutil.which("java") is None:
        pytest.skip("java not found: the Apache Kafka reference tests need Java 17")
    return reference_libs()


@pytest.fixture(scope="session")
def zookeeper(kafka_libs: Path, zookeeper_server: ZooKeeperServer) -> str:
    """The session's ZooKeeper (``tests/conftest.py``); its connect string (no chroot)."""
    return zookeeper_server.connect_string


@pytest.fixture
def zk_chroot(zookeeper: str) -> str:
    """A connect string with a fresh chroot: a cluster of its own in the session's ZooKeeper."""
    return f"{zookeeper}/franz-ref-{next(_chroots)}"


@pytest.fixture(scope="session")
def kafka(zookeeper: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaBroker]:
    """The session's Apache Kafka broker (ZooKeeper mode, chroot ``/kafka-session``).

    Tests share it: each uses topic and group names of its own.
    """
    broker = KafkaBroker(tmp_path_factory.mktemp("kafka"), f"{zookeeper}/kafka-session").start()
    try:
        yield broker
    finally:
        broker.stop()


#: The Franz broker's settings unless a module sets ``FRANZ_SETTINGS`` of its own.
DEFAULT_FRANZ_SETTINGS = {"group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module")
def franz(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[BrokerProcess]:
    """A Franz broker per module, beside the session's Kafka (the module's ``FRANZ_SETTINGS``,
    else :data:`DEFAULT_FRANZ_SETTINGS`)."""
    settings = getattr(request.module, "FRANZ_SETTINGS", DEFAULT_FRANZ_SETTINGS)
    name = request.module.__name__.rsplit(".", 1)[-1]
    broker = BrokerProcess(tmp_path_factory.mktemp(f"franz-{name}"), settings).start()
    try:
        yield broker
    finally:
        code = broker.stop()
    assert code == 0, broker.output()


@pytest.fixture
def brokers(kafka: KafkaBroker, franz: BrokerProcess) -> dict[str, HasBootstrap]:
    """Both brokers by name, for tests that run the same thing on each."""
    return {"kafka": kafka, "franz": franz}
