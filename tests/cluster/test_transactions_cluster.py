"""Issue 19's client acceptance on three brokers: transactional producers of every Python
client, read back at both isolation levels, with ``__transaction_state`` (3 partitions) and the
data topic (2 partitions) replicated three ways, so the coordinator and the partition leaders
are on different brokers and the markers travel as WriteTxnMarkers requests between them.

The produce sequence and the expectations are ``tests.support.transactions``' (as on one
broker in ``tests/integration/test_transactions_clients.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.clients import consume_with, create_topic
from tests.support.cluster import Cluster, new_chroot, start_cluster
from tests.support.transactions import (
    CONSUMERS,
    PARTITIONS,
    PRODUCERS,
    expected_keys,
    isolation,
    produce_transactions,
    records_by_partition,
)
from tests.support.zookeeper import ZooKeeperServer


@pytest.fixture(scope="module")
def txn_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("txn-cluster"))
    props = {"transaction.state.log.num.partitions": "3"}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


@pytest.mark.parametrize("producer", PRODUCERS)
def test_transactions_across_brokers_are_read_as_committed(
    txn_cluster: Cluster, producer: str
) -> None:
    bootstrap = txn_cluster.bootstrap()
    topic = f"txn-{producer}-{uuid.uuid4().hex[:6]}"
    create_topic(bootstrap, topic, PARTITIONS, replication_factor=3)
    produce_transactions(producer, bootstrap, topic, f"tid-{topic}")
    for committed_only, level in ((True, "read_committed"), (False, "read_uncommitted")):
        want = expected_keys(committed_only)
        for consumer in CONSUMERS:
            got = consume_with(
                consumer,
                bootstrap,
                topic,
                list(range(PARTITIONS)),
                sum(len(keys) for keys in want.values()),
                config=isolation(consumer, level),
            )
            keys = {p: [k for _, k in rs] for p, rs in records_by_partition(got).items()}
            assert keys == want, f"{producer} -> {consumer} ({level})"
