"""A follower's Fetch records its fetch on the leader once, when it arrives; the re-reads of
its long poll do not (Kafka 3.9's ``ReplicaManager.readFromLog`` with ``updateFetchState =
!readFromPurgatory``; ``franz.broker.handlers.fetch``).

Why it matters: a follower fetch parked on the leader when its broker stops is read again on
the next append. Recorded then, it made the stopped broker look caught up a little longer,
and after a controlled shutdown it was proposed for the ISR again after it had exited; that
proposal held the HW, and the acks=all produces of a producer whose in-flight requests all
waited there timed out after 30 s (``bench.replication_bench``'s 30 s unavailability).

The broker runs in process (``tests.support.inprocess_broker``): partition 0 is led here with
broker 1 (nothing listens there) as an in-sync follower, as the controller's LeaderAndIsr
would set it, and the test sends broker 1's fetches over TCP.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import pytest
from kio.index import load_response_from_request

from franz.broker.broker import Broker
from franz.cluster.partition import LeaderAndIsrPartitionState
from franz.cluster.replica import ReplicaState
from franz.storage.files import TopicPartition
from tests.support.clients import create_topic
from tests.support.inprocess_broker import InProcessBroker, add_other_broker
from tests.support.wire import WireClient, batch, decode_records, fetch_request, produce

TOPIC = "parked"
SELF, FOLLOWER = 0, 1
TP = TopicPartition(TOPIC, 0)


@pytest.fixture
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcessBroker]:
    node = InProcessBroker(tmp_path_factory.mktemp("parked")).start()
    try:
        create_topic(node.bootstrap, TOPIC, 1)
        broker = node.broker
        assert broker is not None
        node.call(lambda: add_other_broker(broker))
        node.call(lambda: lead_with_follower(broker))
        yield node
    finally:
        node.stop()


def lead_with_follower(broker: Broker) -> None:
    topic_id = broker.metadata_cache.topic_id(TOPIC)
    assert topic_id is not None
    state = LeaderAndIsrPartitionState(
        TOPIC, 0, SELF, 1, (SELF, FOLLOWER), (SELF, FOLLOWER), partition_epoch=1
    )
    assert broker.replica_manager.become_leader_or_follower([state], {TOPIC: topic_id}) == {}


def follower_state(node: InProcessBroker) -> ReplicaState:
    broker = node.broker
    assert broker is not None
    partition = node.call(lambda: broker.replica_manager.partitions[TP])
    return node.call(lambda: dataclasses.replace(partition.remote_replicas[FOLLOWER]))


def test_a_parked_follower_fetch_is_recorded_once(node: InProcessBroker) -> None:
    with (
        WireClient.connect(node.bootstrap) as producer,
        WireClient.connect(node.bootstrap, timeout=30) as follower,
    ):
        assert produce(producer, TOPIC, 0, batch((None, b"first")), acks=1).error_code == 0
        # Broker 1 at the log end offset, long-polling for 10 s.
        request = dataclasses.replace(
            fetch_request({(TOPIC, 0): 1}, max_wait_ms=10_000), replica_id=FOLLOWER
        )
        correlation_id = follower.send(request)
        deadline = time.monotonic() + 10
        while (recorded := follower_state(node)).log_end_offset != 1:
            assert time.monotonic() < deadline, "the follower's fetch was not recorded"
            time.sleep(0.01)
        assert recorded.last_fetch_leader_log_end_offset == 1
        time.sleep(0.05)  # a re-read recorded now would carry a later fetch time

        # The append wakes the parked fetch: it reads again and answers the new record.
        assert produce(producer, TOPIC, 0, batch((None, b"second")), acks=1).error_code == 0
        response = follower.recv(load_response_from_request(request), correlation_id)
        [topic] = response.responses
        [partition] = topic.partitions
        assert partition.error_code == 0
        assert [r.value for r in decode_records(partition.records)] == [b"second"]

        # ... without recording a second fetch: same fetch time, same leader end offset.
        assert follower_state(node) == recorded

        # The follower's next fetch is recorded as usual.
        follower.request(
            dataclasses.replace(fetch_request({(TOPIC, 0): 2}, max_wait_ms=0), replica_id=FOLLOWER)
        )
        after = follower_state(node)
        assert after.log_end_offset == 2
        assert after.last_fetch_leader_log_end_offset == 2
        assert after.last_fetch_time_ms > recorded.last_fetch_time_ms
