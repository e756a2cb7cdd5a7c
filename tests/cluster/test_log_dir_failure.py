"""A failed log dir in a cluster, as Kafka 3.9 handles it in ZooKeeper mode (KIP-112).

Broker 1 has two log dirs, ``big`` and ``small`` (a 1 MiB tmpfs, filled by a file of the test);
an RF 3 topic is led by broker 1 with partitions in both dirs. A produce to a partition in
``small`` hits ENOSPC: broker 1 takes that dir's replicas offline and writes
``/log_dir_event_notification/log_dir_event_<seq>``; the controller deletes it, sends
LeaderAndIsr for all of broker 1's replicas, takes the KAFKA_STORAGE_ERROR ones offline and
elects leaders on brokers 2 and 3, within seconds (broker 1 stays registered: no session
timeout is involved). Metadata then lists broker 1 among the offline replicas of those
partitions, clients produce to and consume from the new leaders, and broker 1 keeps serving
``big``. Notifications the controller cannot act on are deleted all the same.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.broker import BrokerProcess
from tests.support.clients import consume_with
from tests.support.cluster import (
    Cluster,
    broker_props,
    eventually,
    new_chroot,
    produce_all,
)
from tests.support.tmpfs import fill_with_a_file, mounted_tmpfs
from tests.support.wire import WireClient, metadata
from tests.support.zookeeper import ZooKeeperServer

TOPIC = "ld"
#: Broker 1 first (the preferred leader) in every partition; its logs alternate big, small.
ASSIGNMENT = [[1, 2, 3], [1, 3, 2], [1, 2, 3], [1, 3, 2]]
NOTIFICATIONS = "/log_dir_event_notification"
SOLE = "ld-sole"
LEADER_NOT_AVAILABLE = 5


@contextlib.contextmanager
def _cluster(zk_connect: str, base: Path, small: Path) -> Iterator[Cluster]:
    brokers: dict[int, BrokerProcess] = {}
    try:
        for broker_id in (1, 2, 3):
            props = broker_props(broker_id, zk_connect)
            if broker_id == 1:
                props["log.dirs"] = f"{base / 'broker-1' / 'big'},{small}"
            brokers[broker_id] = BrokerProcess(base / f"broker-{broker_id}", props).start()
        c = Cluster(zk_connect, brokers)
        try:
            eventually(lambda: len(c.kcat_metadata(brokers[1])["brokers"]) == 3, 30, "3 brokers")
            yield c
        finally:
            c.kazoo.stop()
            c.kazoo.close()
    finally:
        for process in brokers.values():
            process.stop()


def _partitions(bootstrap: str, topic: str) -> dict[int, Any]:
    """Metadata v12 from ``bootstrap``: partition index -> its metadata (leader,
    replica_nodes, isr_nodes, offline_replicas, error_code)."""
    with WireClient.connect(bootstrap, timeout=10) as client:
        response = metadata(client, [topic])
    (found,) = response.topics
    return {int(p.partition_index): p for p in found.partitions}


def _leader(bootstrap: str, topic: str, partition: int) -> int | None:
    """The partition's leader id in ``bootstrap``'s metadata; None while that broker does not
    know the partition yet (a topic just created reaches each broker's metadata a moment
    after CreateTopics is answered)."""
    found = _partitions(bootstrap, topic).get(partition)
    return None if found is None else int(found.leader_id)


def _produce_one(bootstrap: str, partition: int, value: bytes) -> KafkaError | None:
    """One record with retries=0, so a retriable KAFKA_STORAGE_ERROR is reported as sent."""
    outcome: list[KafkaError | None] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "retries": 0,
            "message.timeout.ms": 20_000,
        }
    )
    producer.produce(
        TOPIC, value, partition=partition, on_delivery=lambda err, _msg: outcome.append(err)
    )
    producer.flush(30)
    assert len(outcome) == 1
    return outcome[0]


def test_log_dir_failure_moves_leadership_off_the_failed_dir_and_the_other_dir_serves(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    zk_connect = new_chroot(zookeeper_server.connect_string, "franz-log-dir")
    with (
        mounted_tmpfs(tmp_path / "small", "1m") as small,
        _cluster(zk_connect, tmp_path, small) as cluster,
    ):
        big = tmp_path / "broker-1" / "big"
        b1, b2 = cluster.brokers[1], cluster.brokers[2]
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
        admin.create_topics([NewTopic(TOPIC, len(ASSIGNMENT), replica_assignment=ASSIGNMENT)])[
            TOPIC
        ].result(30)
        eventually(
            lambda: (
                all(p.leader_id == 1 for p in _partitions(b2.bootstrap, TOPIC).values())
                and len(_partitions(b2.bootstrap, TOPIC)) == 4
            ),
            30,
            "broker 1 leads every partition",
        )
        on_small = sorted(int(d.name.rsplit("-", 1)[1]) for d in small.glob(f"{TOPIC}-*"))
        on_big = sorted(int(d.name.rsplit("-", 1)[1]) for d in big.glob(f"{TOPIC}-*"))
        assert on_small and on_big and sorted(on_small + on_big) == [0, 1, 2, 3]
        produce_all(cluster.bootstrap(), [(TOPIC, p, b"before-%d" % p) for p in range(4)])
        # RF 1 on broker 1: one partition per dir (the emptier dir, big on a tie).
        new = NewTopic(SOLE, 2, replica_assignment=[[1], [1]])
        admin.create_topics([new])[SOLE].result(30)
        eventually(
            lambda: [p.leader_id for p in _partitions(b2.bootstrap, SOLE).values()] == [1, 1],
            30,
            "broker 1 leads the RF 1 topic",
        )
        (sole_small,) = (int(d.name.rsplit("-", 1)[1]) for d in small.glob(f"{SOLE}-*"))

        # The failure: small fills up under a produce to one of its partitions.
        filler = fill_with_a_file(small)
        error = None
        for _ in range(20):  # the last page of the segment may still have room
            error = _produce_one(b1.bootstrap, on_small[0], b"r" * 8192)
            if error is not None:
                break
        assert error is not None and error.code() == KafkaError.KAFKA_STORAGE_ERROR, error
        failed_at = time.monotonic()

        def moved() -> bool:
            parts = _partitions(b2.bootstrap, TOPIC)
            return all(
                parts[p].leader_id in (2, 3)
                and list(parts[p].offline_replicas) == [1]
                and 1 not in parts[p].isr_nodes
                for p in on_small
            ) and all(parts[p].leader_id == 1 and not parts[p].offline_replicas for p in on_big)

        eventually(moved, 30, "leaders of the failed dir's partitions moved off broker 1")
        # With no other replica, the RF 1 partition on the failed dir has no leader:
        # LEADER_NOT_AVAILABLE, broker 1 offline; its sibling on big is served.
        eventually(
            lambda: _leader(b2.bootstrap, SOLE, sole_small) == -1,
            15,
            "the RF 1 partition on the failed dir loses its leader",
        )
        sole = _partitions(b2.bootstrap, SOLE)
        assert sole[sole_small].error_code == LEADER_NOT_AVAILABLE
        assert list(sole[sole_small].offline_replicas) == [1]
        assert sole[1 - sole_small].error_code == 0 and sole[1 - sole_small].leader_id == 1
        took = time.monotonic() - failed_at
        print(f"log dir failure -> new leaders in metadata: {took:.2f} s")
        # Within seconds, and not through broker 1's session: it is still registered.
        assert took < 15, took
        assert cluster.kazoo.exists("/brokers/ids/1") is not None
        controller = cluster.controller_id()
        assert controller is not None
        eventually(
            lambda: (
                "handling log directory failure for brokers 1"
                in cluster.brokers[controller].output()
            ),
            15,
            "the controller handled the log dir event",
        )
        assert b1.proc is not None and b1.proc.poll() is None
        eventually(
            lambda: cluster.kazoo.get_children(NOTIFICATIONS) == [],
            15,
            "the controller deletes the log dir event notification",
        )
        # Broker 1's own Metadata agrees (the controller's UpdateMetadata reached it).
        eventually(
            lambda: all(
                list(_partitions(b1.bootstrap, TOPIC)[p].offline_replicas) == [1] for p in on_small
            ),
            15,
            "broker 1's metadata shows it offline for the failed dir",
        )

        # Clients go on: through the new leaders for small's partitions (their followers had
        # replicated the records before the failure), through broker 1 for big's.
        produce_all(cluster.bootstrap(), [(TOPIC, p, b"after-%d" % p) for p in range(4)])
        for p in range(4):
            got = consume_with("confluent-kafka", cluster.bootstrap(), TOPIC, [p], 2)
            assert [r.value for r in got] == [b"before-%d" % p, b"after-%d" % p]

        # Broker 1's other dir keeps taking new partitions, which it leads and serves.
        admin.create_topics([NewTopic("ld-later", 1, replica_assignment=[[1, 2, 3]])])[
            "ld-later"
        ].result(30)
        eventually(
            lambda: _leader(b2.bootstrap, "ld-later", 0) == 1,
            30,
            "broker 1 leads ld-later",
        )
        assert (big / "ld-later-0").is_dir() and not (small / "ld-later-0").exists()
        produce_all(cluster.bootstrap(), [("ld-later", 0, b"on-big")])
        got = consume_with("confluent-kafka", cluster.bootstrap(), "ld-later", [0], 1)
        assert [r.value for r in got] == [b"on-big"]

        # Notifications the controller cannot act on (garbage, an unknown broker) are logged
        # and deleted like the others.
        for data in (b"not json", b'{"version":1,"broker":9,"event":1}'):
            cluster.kazoo.create(f"{NOTIFICATIONS}/log_dir_event_", data, sequence=True)
        eventually(
            lambda: cluster.kazoo.get_children(NOTIFICATIONS) == [],
            15,
            "the controller deletes notifications it cannot act on",
        )
        assert cluster.controller_id() == controller
        filler.unlink()
        for broker in cluster.brokers.values():
            assert "Traceback" not in broker.output(), broker.output()
