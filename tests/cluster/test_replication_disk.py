"""A follower whose disk fills up (issue 17, "Acceptance": it leaves the ISR, the leader and
the other follower keep serving).

Each test starts its own cluster of three ``franz broker`` processes; one follower (not the
controller) keeps its log dir (or one of two) on a small tmpfs (``tests/support/tmpfs.py``;
root mounts it, the tests skip elsewhere). A topic of replication factor 3 with
``min.insync.replicas=2`` is led by another broker, and an idempotent confluent-kafka
producer sends numbered records at acks=all throughout. Then the tmpfs is filled by a file of
the test and the follower's next append hits ENOSPC. As Kafka's (KIP-112):

* ``test_a_follower_whose_only_log_dir_fills_up_...``: the dir goes offline; it was the
  broker's last, so the broker exits with code 1 ("Shutdown broker because all log dirs ...
  have failed"); the controller drops it from the ISR once its ZooKeeper session expired;
* ``test_a_follower_whose_log_dir_fails_...``: the follower has a second log dir, so only
  the partition on the full dir goes offline; the broker lives on, tells the controller
  through ``/log_dir_event_notification``, and the controller drops that replica from the
  ISR (``OfflineReplica``) while the partition on its other dir keeps it in its ISR.

Both: produce goes on with no error the client does not retry by itself (no failed delivery);
then the test frees the tmpfs and restarts the follower (a crash's recovery of the dir), which
rejoins the ISR and ends byte-identical to the leader; every acknowledged record is in the
log exactly once, in the order sent.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

import pytest

pytest.importorskip("kazoo", reason="kazoo is a main dependency: pip install -e .")
pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.cluster import (
    BROKER_IDS,
    AckedProducer,
    Cluster,
    eventually,
    isrs_whole,
    log_bytes,
    new_chroot,
    partition_state,
    read_numbers,
    restart_after_session_expiry,
    start_cluster,
)
from tests.support.tmpfs import fill_with_a_file, mounted_tmpfs, remount
from tests.support.wire import WireClient, metadata
from tests.support.zookeeper import ZooKeeperServer

TOPIC = "disk"
LAG_MS = 3000
#: Large enough to fill the last pages of a segment quickly once the tmpfs is full.
VALUE_PAD = b"x" * 2000


#: The follower whose disk fills; broker 1 leads, broker 2 is the other follower.
FOLLOWER = 3


def create_topic(cluster: Cluster, assignment: list[list[int]]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap()})
    new = NewTopic(
        TOPIC, len(assignment), replica_assignment=assignment, config={"min.insync.replicas": "2"}
    )
    admin.create_topics([new], operation_timeout=30)[TOPIC].result(60)
    eventually(lambda: isrs_whole(cluster, TOPIC, len(assignment)), 60, "every replica in the ISR")


def isr(cluster: Cluster, partition: int) -> list[int]:
    state = partition_state(cluster, TOPIC, partition)
    return [] if state is None else sorted(state["isr"])


def acks_go_on(producer: AckedProducer, partitions: list[int], what: str, more: int = 200) -> None:
    counts = {p: producer.count(p) for p in partitions}
    for p in partitions:
        eventually(lambda p=p: producer.count(p) >= counts[p] + more, 90, f"{what}: acks on {p}")


def assert_no_traceback(cluster: Cluster) -> None:
    """No broker run (restarts included) logged an unexpected exception; the follower's
    storage errors are logged as ERROR lines, printed here."""
    for broker_id, broker in cluster.brokers.items():
        text = (broker.data_dir / "broker.out").read_text(errors="replace")
        assert "Traceback" not in text, f"broker {broker_id}:\n{text[-5000:]}"
        if broker_id == FOLLOWER:
            print(
                "\n".join(line for line in text.splitlines() if "ERROR" in line or "CRIT" in line)
            )


def assert_nothing_lost_and_replicas_identical(
    cluster: Cluster, producer: AckedProducer, partitions: list[int]
) -> None:
    assert producer.errors == [], producer.errors[:20]
    eventually(lambda: isrs_whole(cluster, TOPIC, len(partitions)), 60, "every ISR whole")
    for p in partitions:
        # Idempotent acks=all: exactly the acknowledged records, once, in the order sent.
        assert read_numbers(cluster.bootstrap(), TOPIC, p) == producer.values(p), p
        state = partition_state(cluster, TOPIC, p)
        assert state is not None
        leader_log = log_bytes(cluster.brokers[int(state["leader"])], TOPIC, p)
        for broker_id in BROKER_IDS:
            eventually(
                lambda b=broker_id, p=p, want=leader_log: (
                    log_bytes(cluster.brokers[b], TOPIC, p) == want
                ),
                30,
                f"broker {broker_id}'s log of partition {p} is the leader's",
            )
    assert_no_traceback(cluster)


def test_a_follower_whose_only_log_dir_fills_up_exits_and_rejoins_the_isr_after_a_restart(
    zookeeper_server: ZooKeeperServer, tmp_path: Path
) -> None:
    with (
        mounted_tmpfs(tmp_path / "follower-logs", "4m") as small,
        start_cluster(
            new_chroot(zookeeper_server.connect_string, "franz-disk"),
            tmp_path,
            extra_props={"replica.lag.time.max.ms": str(LAG_MS)},
            broker_overrides={FOLLOWER: {"log.dirs": str(small)}},
        ) as cluster,
    ):
        create_topic(cluster, [[1, FOLLOWER, 2]])
        follower = cluster.brokers[FOLLOWER]
        producer = AckedProducer(cluster.bootstrap(), TOPIC, [0], pad=VALUE_PAD)
        try:
            acks_go_on(producer, [0], "before the disk fills")
            filler = fill_with_a_file(small)
            assert follower.proc is not None
            process = follower.proc
            eventually(lambda: process.poll() is not None, 60, "the follower exits")
            assert process.returncode == 1, follower.output()[-3000:]
            assert "Shutdown broker because all log dirs" in follower.output()
            eventually(lambda: isr(cluster, 0) == [1, 2], 60, "the follower leaves the ISR")
            # The leader and the other follower go on acknowledging (min.insync.replicas=2).
            acks_go_on(producer, [0], "with the follower gone")
            assert producer.errors == [], producer.errors[:20]
            assert partition_state(cluster, TOPIC, 0)["leader"] == 1  # type: ignore[index]

            filler.unlink()
            remount(small, "64m")
            follower.proc = None
            restart_after_session_expiry(cluster, FOLLOWER)
            eventually(lambda: isrs_whole(cluster, TOPIC), 90, "the follower rejoins the ISR")
            acks_go_on(producer, [0], "after the follower returned")
        finally:
            unreported = producer.stop()
        assert unreported == 0
        assert_nothing_lost_and_replicas_identical(cluster, producer, [0])


class FailingDir:
    """One of the follower's two log dirs, and how it fails and heals.

    ``full``: a 4 MiB tmpfs that a file of the test fills; the follower's next append gets
    ENOSPC. ``unwritable``: a plain dir made immutable (``chattr +i``, ext4): appends to the
    segments already open still succeed, but no file can be created in it, so the broker's
    next high-watermark checkpoint (``replica.high.watermark.checkpoint.interval.ms``, 5 s)
    fails with EPERM; Kafka's ``OffsetCheckpointFile.write`` takes the dir offline then too.
    """

    def __init__(self, how: str, path: Path, stack: contextlib.ExitStack) -> None:
        self.how = how
        if how == "full":
            self.path = stack.enter_context(mounted_tmpfs(path, "4m"))
        else:
            path.mkdir(parents=True)
            self.path = path
            probe = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
            if probe.returncode != 0:
                pytest.skip(f"chattr +i does not work here: {probe.stderr!r}")
            self._chattr("-i")
            stack.callback(self._chattr, "-i")  # or the temp dir cannot be removed
        self._filler: Path | None = None

    def _chattr(self, flag: str) -> None:
        subprocess.run(["chattr", flag, str(self.path)], check=True)

    def fail(self) -> None:
        if self.how == "full":
            self._filler = fill_with_a_file(self.path)
        else:
            self._chattr("+i")

    def heal(self) -> None:
        if self.how == "full":
            assert self._filler is not None
            self._filler.unlink()
            remount(self.path, "64m")
        else:
            self._chattr("-i")


def offline_replicas(cluster: Cluster, broker_id: int) -> dict[int, list[int]]:
    """Metadata v12 from one broker: partition -> its offline replicas."""
    with WireClient.connect(cluster.brokers[broker_id].bootstrap, timeout=10) as client:
        (entry,) = metadata(client, [TOPIC]).topics
    return {int(p.partition_index): list(p.offline_replicas) for p in entry.partitions}


@pytest.mark.parametrize("how", ["full", "unwritable"])
def test_a_follower_whose_log_dir_fails_leaves_that_partitions_isr_and_serves_its_other_dir(
    zookeeper_server: ZooKeeperServer, tmp_path: Path, how: str
) -> None:
    big = tmp_path / "follower-big"
    with contextlib.ExitStack() as stack:
        failing = FailingDir(how, tmp_path / "follower-failing", stack)
        cluster = stack.enter_context(
            start_cluster(
                new_chroot(zookeeper_server.connect_string, "franz-disk"),
                tmp_path,
                extra_props={"replica.lag.time.max.ms": str(LAG_MS)},
                # The failing dir first: the first partition goes there (the dir with the
                # fewest partitions, the first in log.dirs on a tie).
                broker_overrides={FOLLOWER: {"log.dirs": f"{failing.path},{big}"}},
            )
        )
        create_topic(cluster, [[1, FOLLOWER, 2], [2, FOLLOWER, 1]])
        assert (failing.path / f"{TOPIC}-0").is_dir() and (big / f"{TOPIC}-1").is_dir()
        follower = cluster.brokers[FOLLOWER]
        producer = AckedProducer(cluster.bootstrap(), TOPIC, [0, 1], pad=VALUE_PAD)
        try:
            acks_go_on(producer, [0, 1], "before the dir fails")
            failing.fail()
            failed_at = time.monotonic()
            eventually(lambda: isr(cluster, 0) == [1, 2], 60, "the follower leaves ISR 0")
            took = time.monotonic() - failed_at
            print(f"dir {how} -> out of the ISR in {took:.2f} s")
            # Through the log dir event, not a lagging follower or an expired session: the
            # broker lives, is registered, and keeps following partition 1 on its other dir.
            assert follower.proc is not None and follower.proc.poll() is None
            assert cluster.kazoo.exists(f"/brokers/ids/{FOLLOWER}") is not None
            assert "stopped serving replicas in dir" in follower.output()
            eventually(
                lambda: offline_replicas(cluster, 1) == {0: [FOLLOWER], 1: []},
                30,
                "Metadata lists the follower offline for partition 0 only",
            )
            acks_go_on(producer, [0, 1], "with the follower's dir offline")
            assert isr(cluster, 1) == [1, 2, 3]
            assert producer.errors == [], producer.errors[:20]
            assert partition_state(cluster, TOPIC, 0)["leader"] == 1  # type: ignore[index]

            failing.heal()
            assert follower.stop() == 0, follower.output()[-3000:]
            follower.start()
            eventually(lambda: isrs_whole(cluster, TOPIC, 2), 90, "the follower rejoins ISR 0")
            eventually(
                lambda: offline_replicas(cluster, 1) == {0: [], 1: []},
                30,
                "Metadata lists no offline replica",
            )
            acks_go_on(producer, [0, 1], "after the follower returned")
        finally:
            unreported = producer.stop()
        assert unreported == 0
        assert_nothing_lost_and_replicas_identical(cluster, producer, [0, 1])
