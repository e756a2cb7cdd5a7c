"""KIP-890 part 1 on three brokers: the partition leader verifies a transactional Produce, and
the group coordinator a TxnOffsetCommit, with a transaction coordinator on *another* broker,
so the verification travels as AddPartitionsToTxn v4+ ``verify_only`` between brokers
(``franz.broker.txn_verification``).

A raw-protocol producer (``tests.support.txn_wire``) skips AddPartitionsToTxn /
AddOffsetsToTxn: the leader refuses the batch with Kafka 3.9's error and appends nothing;
after the step the same request is appended.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kio.index import load_response_from_request

from franz.errors import ErrorCode
from tests.support import txn_wire
from tests.support.clients import create_topic
from tests.support.cluster import Cluster, new_chroot, start_cluster
from tests.support.wire import WireClient, list_offsets, metadata
from tests.support.zookeeper import ZooKeeperServer

PARTITIONS = 3
LATEST = -1


@pytest.fixture(scope="module")
def txn_cluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("txn-verification-cluster"))
    props = {"transaction.state.log.num.partitions": "3"}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def _endpoints(client: WireClient) -> dict[int, str]:
    return {int(b.node_id): f"{b.host}:{b.port}" for b in metadata(client, None).brokers}


def _leaders(client: WireClient, topic: str) -> dict[int, int]:
    [described] = metadata(client, [topic]).topics
    return {int(p.partition_index): int(p.leader_id) for p in described.partitions}


def _end_offset(client: WireClient, topic: str, partition: int) -> int:
    answer = list_offsets(client, topic, partition, LATEST)
    assert answer.error_code == 0, answer
    return int(answer.offset)


def test_a_leader_refuses_a_partition_the_remote_coordinator_never_added(
    txn_cluster: Cluster,
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, tid = f"ver-{suffix}", f"ver-tid-{suffix}"
    bootstrap = txn_cluster.bootstrap()
    create_topic(bootstrap, topic, PARTITIONS, replication_factor=3)
    with WireClient.connect(bootstrap.split(",")[0]) as any_broker:
        coordinator, _, _ = txn_wire.find_coordinator(any_broker, tid, 1)
        endpoints = _endpoints(any_broker)
        leaders = _leaders(any_broker, topic)
    remote = [p for p, leader in sorted(leaders.items()) if leader != coordinator]
    assert remote, f"every partition of {topic} is led by the coordinator {coordinator}"
    partition = remote[0]
    with (
        WireClient.connect(endpoints[coordinator]) as coord,
        WireClient.connect(endpoints[leaders[partition]]) as leader,
    ):
        producer = txn_wire.init_producer(coord, tid)
        for version, code, message in (
            (9, ErrorCode.INVALID_TXN_STATE, "Partition was not added to the transaction"),
            (11, ErrorCode.TRANSACTION_ABORTABLE, None),
        ):
            refused = txn_wire.produce(
                leader, version, tid, topic, partition, txn_wire.txn_batch(producer, 0, [b"h"])
            )
            assert (refused.error_code, refused.error_message) == (code, message), refused
        assert _end_offset(leader, topic, partition) == 0
        assert txn_wire.add_partitions(coord, producer, {topic: [partition]}) == {
            (topic, partition): 0
        }
        for sequence in range(2):  # verified remotely, then ongoing
            added = txn_wire.produce(
                leader, 11, tid, topic, partition, txn_wire.txn_batch(producer, sequence, [b"v"])
            )
            assert (added.error_code, added.base_offset) == (0, sequence), added
        assert txn_wire.end_txn(coord, producer, commit=True) == 0
        txn_wire.wait_state(coord, tid, "CompleteCommit")
        assert _end_offset(leader, topic, partition) == 3  # two records and the marker


def test_a_group_coordinator_refuses_offsets_the_remote_coordinator_never_added(
    txn_cluster: Cluster,
) -> None:
    suffix = uuid.uuid4().hex[:8]
    topic, tid = f"ver-toc-{suffix}", f"ver-toc-tid-{suffix}"
    bootstrap = txn_cluster.bootstrap()
    create_topic(bootstrap, topic, 1, replication_factor=3)
    with WireClient.connect(bootstrap.split(",")[0]) as any_broker:
        txn_coordinator, _, _ = txn_wire.find_coordinator(any_broker, tid, 1)
        endpoints = _endpoints(any_broker)
        # A group whose coordinator is another broker (three __consumer_offsets partitions).
        for attempt in range(64):
            group = f"ver-group-{suffix}-{attempt}"
            group_coordinator, _, _ = txn_wire.find_coordinator(any_broker, group, 0)
            if group_coordinator != txn_coordinator:
                break
        assert group_coordinator != txn_coordinator
    with (
        WireClient.connect(endpoints[txn_coordinator]) as coord,
        WireClient.connect(endpoints[group_coordinator]) as groups,
    ):
        producer = txn_wire.init_producer(coord, tid)
        offsets = {(topic, 0): 7}
        for version, code in (
            (3, ErrorCode.INVALID_TXN_STATE),
            (4, ErrorCode.TRANSACTION_ABORTABLE),
        ):
            assert txn_wire.txn_offset_commit(groups, version, producer, group, offsets) == {
                (topic, 0): code
            }
        assert txn_wire.offset_fetch(groups, group, topic, 0) == (0, -1)
        assert txn_wire.add_offsets(coord, producer, group) == 0
        assert txn_wire.txn_offset_commit(groups, 4, producer, group, offsets) == {(topic, 0): 0}
        assert txn_wire.end_txn(coord, producer, commit=True) == 0
        txn_wire.wait_state(coord, tid, "CompleteCommit")
        assert txn_wire.offset_fetch(groups, group, topic, 0) == (0, 7)


def test_pipelined_first_batches_wait_for_each_other_and_append_in_order(
    txn_cluster: Cluster,
) -> None:
    """Three Produce requests sent back to back on one connection, each a first batch of the
    transaction in the partition as far as the leader knows when it arrives: the first waits
    for the remote coordinator's verification and the others wait for it (an idempotent
    producer's batches must be appended in order), then all are appended."""
    suffix = uuid.uuid4().hex[:8]
    topic, tid = f"ver-pipe-{suffix}", f"ver-pipe-tid-{suffix}"
    bootstrap = txn_cluster.bootstrap()
    create_topic(bootstrap, topic, PARTITIONS, replication_factor=3)
    with WireClient.connect(bootstrap.split(",")[0]) as any_broker:
        coordinator, _, _ = txn_wire.find_coordinator(any_broker, tid, 1)
        endpoints = _endpoints(any_broker)
        leaders = _leaders(any_broker, topic)
    partition = next(p for p, leader in sorted(leaders.items()) if leader != coordinator)
    with (
        WireClient.connect(endpoints[coordinator]) as coord,
        WireClient.connect(endpoints[leaders[partition]]) as leader,
    ):
        producer = txn_wire.init_producer(coord, tid)
        assert txn_wire.add_partitions(coord, producer, {topic: [partition]}) == {
            (topic, partition): 0
        }
        requests = [
            txn_wire.produce_request(
                11, tid, topic, partition, txn_wire.txn_batch(producer, sequence, [b"p"])
            )
            for sequence in range(3)
        ]
        sent = [leader.send(request) for request in requests]
        answers = [
            txn_wire.partition_response(leader.recv(load_response_from_request(r), cid))
            for r, cid in zip(requests, sent, strict=True)
        ]
        assert [(a.error_code, a.base_offset) for a in answers] == [(0, 0), (0, 1), (0, 2)]
        assert txn_wire.end_txn(coord, producer, commit=False) == 0
