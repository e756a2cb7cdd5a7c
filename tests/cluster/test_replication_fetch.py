"""Replication's follower side: replica fetchers copy their leaders' logs byte for byte.

Its own cluster (three ``franz broker`` processes, ids 1-3, on a chroot of their own) with a
short high-watermark checkpoint interval, so the followers' high watermarks (taken from the
leader's fetch responses) can be read from their ``replication-offset-checkpoint`` files.
Until the leader side lands (i-leader), a leader's HW is its LEO, so acks=all does not wait
for the followers: the tests poll (bounded) until the followers have caught up.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from franz.protocol.records.batch import iter_batches  # noqa: E402
from tests.support.broker import BrokerProcess  # noqa: E402
from tests.support.cluster import (  # noqa: E402
    Cluster,
    eventually,
    log_bytes,
    new_chroot,
    partition_state,
    restart_after_session_expiry,
    start_cluster,
)
from tests.support.zookeeper import ZooKeeperServer  # noqa: E402

PARTITIONS = 3


@pytest.fixture(scope="module")
def rcluster(
    zookeeper_server: ZooKeeperServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    base = Path(tmp_path_factory.mktemp("replication-fetch"))
    props = {"replica.high.watermark.checkpoint.interval.ms": "200"}
    with start_cluster(new_chroot(zookeeper_server.connect_string), base, extra_props=props) as c:
        yield c


def create_topic(cluster: Cluster, topic: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    admin.create_topics([NewTopic(topic, partitions, 3)], operation_timeout=30)[topic].result(60)
    eventually(
        lambda: all(
            cluster.kazoo.exists(f"/brokers/topics/{topic}/partitions/{p}/state") is not None
            for p in range(partitions)
        ),
        30,
        f"{topic}: every partition has a state",
    )


def leader_of(cluster: Cluster, topic: str, partition: int) -> int:
    return int(cluster.json(f"/brokers/topics/{topic}/partitions/{partition}/state")["leader"])


def partition_dir(broker: BrokerProcess, topic: str, partition: int) -> Path:
    return broker.data_dir / "logs" / f"{topic}-{partition}"


def checkpointed_hw(broker: BrokerProcess, topic: str, partition: int) -> int | None:
    path = broker.data_dir / "logs" / "replication-offset-checkpoint"
    if not path.exists():
        return None
    for line in path.read_text().splitlines()[2:]:
        fields = line.split()
        if len(fields) == 3 and fields[0] == topic and int(fields[1]) == partition:
            return int(fields[2])
    return None


def produce(bootstrap: str, topic: str, count: int, *, idempotent: bool) -> None:
    errors: list[str] = []

    def delivered(err: object, message: object) -> None:
        if err is not None:
            errors.append(str(err))

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": idempotent,
            "linger.ms": 5,
        }
    )
    for i in range(count):
        value = f"record-{i:06d}".encode() * 4
        producer.produce(topic, value, key=str(i % 17).encode(), on_delivery=delivered)
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0
    assert errors == []


def epoch_checkpoint(broker: BrokerProcess, topic: str, partition: int) -> str | None:
    path = partition_dir(broker, topic, partition) / "leader-epoch-checkpoint"
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def epoch_entries(checkpoint: str | None) -> list[tuple[int, int]]:
    """The (epoch, start offset) entries of a ``leader-epoch-checkpoint`` file's text."""
    if checkpoint is None:
        return []
    lines = checkpoint.split()
    return [(int(e), int(o)) for e, o in zip(lines[2::2], lines[3::2], strict=True)]


def epochs_with_data(checkpoint: str | None, log_end_offset: int) -> list[tuple[int, int]]:
    """The entries whose epoch holds records. A leader assigns its epoch at its log end when
    elected (Kafka's ``maybeAssignEpochStartOffset``); an epoch in which it appended nothing
    (it was bumped again, or nothing came) reaches no follower, in Kafka as here."""
    entries = epoch_entries(checkpoint)
    ends = [start for _, start in entries[1:]] + [log_end_offset]
    return [entry for entry, end in zip(entries, ends, strict=True) if entry[1] < end]


def _epochs_are(
    broker: BrokerProcess, topic: str, partition: int, expected: list[tuple[int, int]]
) -> bool:
    return epoch_entries(epoch_checkpoint(broker, topic, partition)) == expected


def _log_is(broker: BrokerProcess, topic: str, partition: int, expected: bytes) -> bool:
    return log_bytes(broker, topic, partition) == expected


def assert_replicas_identical(cluster: Cluster, topic: str, partitions: int) -> None:
    """Every replica's ``.log`` bytes equal its leader's (bounded poll), and the followers'
    leader-epoch checkpoints hold the leader's epochs that have records."""
    for p in range(partitions):
        leader = cluster.brokers[leader_of(cluster, topic, p)]
        expected = log_bytes(leader, topic, p)
        assert expected, f"{topic}-{p}: the leader {leader_of(cluster, topic, p)} holds no data"
        for broker_id, broker in cluster.brokers.items():
            eventually(
                functools.partial(_log_is, broker, topic, p, expected),
                30,
                f"{topic}-{p}: broker {broker_id}'s log equals the leader's",
            )
    for p in range(partitions):
        leader_id = leader_of(cluster, topic, p)
        leader = cluster.brokers[leader_id]
        checkpoint = epoch_checkpoint(leader, topic, p)
        assert checkpoint is not None
        log_end = max(batch.next_offset for batch in iter_batches(log_bytes(leader, topic, p)))
        epochs = epochs_with_data(checkpoint, log_end)
        assert epochs, f"{topic}-{p}: no epoch with records in {checkpoint!r}"
        for broker_id, broker in cluster.brokers.items():
            if broker_id == leader_id:
                continue
            # The checkpoint is written (and fsynced) just after the batches it describes.
            eventually(
                functools.partial(_epochs_are, broker, topic, p, epochs),
                30,
                f"{topic}-{p}: broker {broker_id}'s leader-epoch-checkpoint is the leader's "
                f"epochs with records",
            )


def assert_high_watermarks(cluster: Cluster, topic: str, partitions: int, total: int) -> None:
    """Every replica checkpoints the same HW per partition, and they add up to ``total``
    (the followers' come from the leader's fetch responses)."""

    def same() -> bool:
        hws = [
            {checkpointed_hw(b, topic, p) for b in cluster.brokers.values()}
            for p in range(partitions)
        ]
        return all(len(h) == 1 and None not in h for h in hws) and (
            sum(next(iter(h)) or 0 for h in hws) == total
        )

    eventually(same, 30, f"{topic}: every replica's high watermarks add up to {total}")


def test_followers_copy_the_leaders_log_byte_for_byte(rcluster: Cluster) -> None:
    topic = f"copied-{uuid.uuid4().hex[:6]}"
    create_topic(rcluster, topic)
    produce(rcluster.bootstrap(), topic, 3000, idempotent=False)
    produce(rcluster.bootstrap(), topic, 2000, idempotent=True)
    assert_replicas_identical(rcluster, topic, PARTITIONS)
    assert_high_watermarks(rcluster, topic, PARTITIONS, 5000)


def isr_of(cluster: Cluster, topic: str) -> object:
    return (partition_state(cluster, topic) or {}).get("isr")


def leader_in_state(cluster: Cluster, topic: str) -> object:
    return (partition_state(cluster, topic) or {}).get("leader")


def test_old_leader_truncates_what_the_new_leader_never_had(rcluster: Cluster) -> None:
    """KIP-320 truncation on fetch after an unclean election: the leader L writes B while its
    followers are down (ISR = {L}), dies; follower F1 comes back and is elected (unclean:
    the topic allows it) at a new epoch and writes C; when L returns it follows F1, gets a
    ``diverging_epoch`` answer, truncates B and copies C: every replica ends byte-identical
    to F1's log, A + C."""
    topic = f"diverge-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": rcluster.bootstrap()})
    new = NewTopic(topic, 1, 3, config={"unclean.leader.election.enable": "true"})
    admin.create_topics([new], operation_timeout=30)[topic].result(60)
    eventually(
        lambda: rcluster.kazoo.exists(f"/brokers/topics/{topic}/partitions/0/state") is not None,
        30,
        f"{topic} has a state",
    )
    leader_id = leader_of(rcluster, topic, 0)
    first, second = sorted(b for b in rcluster.brokers if b != leader_id)
    old, f1, f2 = (rcluster.brokers[b] for b in (leader_id, first, second))
    produce(rcluster.bootstrap(), topic, 300, idempotent=False)  # A, on every replica
    assert_replicas_identical(rcluster, topic, 1)
    a_bytes = log_bytes(old, topic, 0)

    f1.kill()
    f2.kill()
    eventually(
        lambda: isr_of(rcluster, topic) == [leader_id],
        60,
        f"the ISR of {topic} shrinks to the leader {leader_id}",
    )
    produce(old.bootstrap, topic, 200, idempotent=False)  # B, on the old leader only
    assert len(log_bytes(old, topic, 0)) > len(a_bytes)
    old.kill()
    assert log_bytes(f1, topic, 0) == a_bytes == log_bytes(f2, topic, 0)

    restart_after_session_expiry(rcluster, first)
    # The topic allows unclean elections: the controller elects the returning F1 by itself.
    eventually(
        lambda: leader_in_state(rcluster, topic) == first,
        60,
        f"broker {first} is elected (unclean) leader of {topic}",
    )
    produce(f1.bootstrap, topic, 100, idempotent=False)  # C, from the new epoch
    new_leader_bytes = log_bytes(f1, topic, 0)
    assert new_leader_bytes.startswith(a_bytes) and len(new_leader_bytes) > len(a_bytes)

    restart_after_session_expiry(rcluster, leader_id)
    restart_after_session_expiry(rcluster, second)
    assert_replicas_identical(rcluster, topic, 1)
    assert log_bytes(old, topic, 0) == new_leader_bytes
    assert "truncating" in old.output()


def test_follower_behind_the_leaders_log_start_restarts_there(rcluster: Cluster) -> None:
    """OFFSET_OUT_OF_RANGE as Kafka's ``fetchOffsetAndTruncate``: a follower that was down
    while the leader's log start moved past its log end (DeleteRecords) asks the leader's
    offsets (ListOffsets as a replica), restarts its log empty at the leader's log start
    and copies from there: its one segment holds the leader's bytes from that offset on."""
    topic = f"behind-{uuid.uuid4().hex[:6]}"
    create_topic(rcluster, topic, 1)
    leader_id = leader_of(rcluster, topic, 0)
    follower_id = min(b for b in rcluster.brokers if b != leader_id)
    leader, follower = rcluster.brokers[leader_id], rcluster.brokers[follower_id]
    produce(rcluster.bootstrap(), topic, 100, idempotent=False)
    assert_replicas_identical(rcluster, topic, 1)

    follower.kill()
    produce(leader.bootstrap, topic, 100, idempotent=False)
    start = 200
    admin = AdminClient({"bootstrap.servers": leader.bootstrap})
    deleted = admin.delete_records([TopicPartition(topic, 0, start)])
    assert [f.result(30).low_watermark for f in deleted.values()] == [start]
    cut = len(log_bytes(leader, topic, 0))  # the leader's bytes below offset `start`

    restart_after_session_expiry(rcluster, follower_id)
    produce(leader.bootstrap, topic, 50, idempotent=False)

    def copied() -> bool:
        segments = sorted(partition_dir(follower, topic, 0).glob("*.log"))
        tail = log_bytes(leader, topic, 0)[cut:]
        return [p.name for p in segments] == [f"{start:020d}.log"] and (
            segments[0].read_bytes() == tail and len(tail) > 0
        )

    eventually(copied, 30, f"broker {follower_id} restarts its log at {start} and copies on")
    assert "log start offset" in follower.output()
