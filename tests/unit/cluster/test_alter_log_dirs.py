"""Log-dir moves without sockets (``franz.cluster.alter_log_dirs``): a real
``ReplicaManager`` over a real two- or three-dir ``LogManager``, its copier tasks on an
asyncio loop. AlterReplicaLogDirs' per-partition codes (Kafka's order of checks), a move
with appends going on, cancelling and redirecting a move, a future replica realigned after
its current log was truncated, the throttle holding copies back until time passes, a copy
resumed by the LeaderAndIsr after a restart, StopReplica pausing it, and compaction paused
for the move's length. The truncation rule itself is checked on plain epoch lists."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from franz.clock import ManualClock
from franz.cluster.alter_log_dirs import (
    AlterLogDirsConfig,
    ReplicaAlterLogDirsManager,
    future_truncation_offset,
)
from franz.cluster.partition import LeaderAndIsrPartitionState
from franz.cluster.replica_manager import ReplicaManager
from franz.cluster.replication_quota import ReplicationQuota
from franz.errors import ErrorCode
from franz.protocol.records.batch import iter_batches
from franz.storage.files import TopicPartition
from franz.storage.log import Log
from franz.storage.log_manager import LogManager
from tests.unit.storage.conftest import make_batch, read_records, record_key, small_config

TOPIC_ID = uuid.UUID(int=9)
TP = TopicPartition("orders", 0)
IDS = {"orders": TOPIC_ID}
BATCHES = 60  # a few segments of small_config()


def leader(
    partition: int = 0, epoch: int = 0, replicas: tuple[int, ...] = (0,)
) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState("orders", partition, 0, epoch, replicas, replicas)


def follower(partition: int = 0, epoch: int = 0) -> LeaderAndIsrPartitionState:
    return LeaderAndIsrPartitionState("orders", partition, 1, epoch, (1, 0), (1, 0))


def fetched(base_offset: int, epoch: int, timestamp: int = 0) -> bytearray:
    """A batch as a follower fetches it: offsets and the leader epoch stamped."""
    batch = make_batch(base_offset, timestamp)
    view = next(iter_batches(batch))
    view.set_base_offset(base_offset)
    view.set_partition_leader_epoch(epoch)
    return batch


class Broker:
    """One broker's storage and replica manager with its log-dir mover."""

    def __init__(self, root: Path, clock: ManualClock, *, ndirs: int = 2) -> None:
        self.dirs = [(root / f"dir-{i}").resolve() for i in range(ndirs)]
        self.clock = clock
        self.log_manager = LogManager(self.dirs, default_config=small_config(), clock=clock)
        self.log_manager.startup()
        self.replicas = ReplicaManager(self.log_manager, broker_id=0, clock=clock)
        self.quota = ReplicationQuota(clock, 0, "")
        self.known: set[TopicPartition] = set()
        self.mover = ReplicaAlterLogDirsManager(
            self.replicas,
            self.quota,
            AlterLogDirsConfig(num_copiers=1, fetch_max_bytes=1024 * 1024),
            is_known=self.known.__contains__,
        )
        self.replicas.alter_log_dirs_manager = self.mover

    def current(self, tp: TopicPartition = TP) -> Log:
        found = self.log_manager.get_log(tp)
        assert found is not None
        return found

    def append(self, batches: int, tp: TopicPartition = TP) -> None:
        for _ in range(batches):
            partition = self.replicas.partitions[tp]
            first = partition.log_end_offset
            partition.append_records_to_leader(make_batch(first, self.clock.wall_ms()))
            self.clock.advance(1)

    def move(self, path: Path | str, tp: TopicPartition = TP) -> ErrorCode:
        return self.mover.alter_replica_log_dirs({tp: str(path)})[tp]

    def close(self) -> None:
        self.log_manager.close_without_shutdown()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    made = Broker(tmp_path, ManualClock())
    yield made
    made.close()


async def until(check: Callable[[], bool], what: str, timeout_s: float = 10.0) -> None:
    for _ in range(int(timeout_s / 0.01)):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"not within {timeout_s} s: {what}")


# -- the truncation rule ------------------------------------------------------------------


def test_a_prefix_needs_no_truncation() -> None:
    assert future_truncation_offset([(0, 0), (2, 10)], 30, [(0, 0), (2, 10)], 25) is None
    assert future_truncation_offset([(0, 0), (2, 10)], 30, [(0, 0)], 10) is None
    assert future_truncation_offset([(0, 0)], 30, [], 0) is None


def test_a_future_log_past_the_current_end_is_cut_there() -> None:
    assert future_truncation_offset([(0, 0)], 10, [(0, 0)], 15) == 10
    assert future_truncation_offset([], 10, [], 15) == 10


def test_a_diverging_epoch_is_cut_at_the_last_common_one() -> None:
    # The current log's epoch 1 was truncated away and epoch 2 written from offset 10.
    assert future_truncation_offset([(0, 0), (2, 10)], 20, [(0, 0), (1, 10)], 14) == 10
    # Same epoch, but the current log ends it earlier and moved on in a newer one.
    assert future_truncation_offset([(0, 0), (1, 5), (3, 8)], 20, [(0, 0), (1, 5)], 12) == 8
    # An epoch the current log never had and nothing newer there: back to its start.
    assert future_truncation_offset([(0, 0)], 6, [(0, 0), (4, 4)], 9) == 4
    # Every answer is below the future end: each truncation makes progress.
    assert future_truncation_offset([], 50, [(3, 0)], 9) == 0


# -- AlterReplicaLogDirs ------------------------------------------------------------------


def test_error_codes_follow_kafkas_order_of_checks(broker: Broker) -> None:
    async def main() -> None:
        broker.replicas.become_leader_or_follower([leader(0)], IDS)
        a, b = broker.dirs
        long_name = TopicPartition("t" * 249, 0)
        unknown = TopicPartition("other", 0)
        known = TopicPartition("orders", 5)
        broker.known.add(known)
        answers = broker.mover.alter_replica_log_dirs(
            {
                long_name: "relative",  # the name is checked before the dir
                TopicPartition("orders", 1): "relative",
                TopicPartition("orders", 2): str(a) + "/",
                unknown: str(b),
                known: str(b),
                TP: str(broker.current().dir.parent),
            }
        )
        assert answers == {
            long_name: ErrorCode.INVALID_TOPIC_EXCEPTION,
            TopicPartition("orders", 1): ErrorCode.LOG_DIR_NOT_FOUND,
            TopicPartition("orders", 2): ErrorCode.LOG_DIR_NOT_FOUND,
            unknown: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            known: ErrorCode.REPLICA_NOT_AVAILABLE,
            TP: ErrorCode.NONE,
        }
        assert broker.log_manager.get_future_log(TP) is None  # its own dir: nothing to do
        # Both partitions not hosted are created in the dir asked for, when they come.
        assert broker.log_manager.futures.preferred == {unknown: b, known: b}
        offline = b if broker.current().dir.parent == a else a
        broker.log_manager.handle_log_dir_failure(offline, OSError(5, "EIO"))
        assert broker.move(offline) == ErrorCode.KAFKA_STORAGE_ERROR

    asyncio.run(main())


def test_a_partition_of_a_failed_dir_cannot_move(broker: Broker) -> None:
    async def main() -> None:
        broker.replicas.become_leader_or_follower([leader(0)], IDS)
        here = broker.current().dir.parent
        other = next(d for d in broker.dirs if d != here)
        broker.log_manager.handle_log_dir_failure(here, OSError(5, "EIO"))
        assert broker.move(other) == ErrorCode.KAFKA_STORAGE_ERROR
        assert broker.log_manager.get_future_log(TP) is None

    asyncio.run(main())


def test_a_leader_moves_with_its_data_while_appends_go_on(broker: Broker) -> None:
    async def main() -> None:
        broker.replicas.become_leader_or_follower([leader(0)], IDS)
        broker.append(BATCHES)
        source = broker.current()
        target = next(d for d in broker.dirs if d != source.dir.parent)
        assert broker.move(target) == ErrorCode.NONE
        future = broker.log_manager.get_future_log(TP)
        assert future is not None and future.dir.parent == target
        assert broker.log_manager.cleaner.manager.paused == {TP: 1}
        for _ in range(20):  # appends between copy steps: the copier follows them
            broker.append(2)
            await asyncio.sleep(0)
        await until(lambda: not broker.mover.is_copying(TP), "the move completes")
        moved = broker.current()
        assert moved is future and moved.dir == target / TP.dir_name
        assert broker.replicas.partitions[TP].log is moved
        # The copy holds the old log's bytes, appended to during the copy; the appends after
        # the promotion went on to the new log.
        assert source.log_end_offset > BATCHES * 3
        assert read_records(moved, 0, source.log_end_offset) == read_records(source)
        assert moved.log_end_offset == (BATCHES + 40) * 3
        assert [r.key for r in read_records(moved)] == [
            record_key(offset) for offset in range(moved.log_end_offset)
        ]
        assert broker.log_manager.cleaner.manager.paused == {}
        broker.append(1)  # the partition appends to its new log
        assert moved.log_end_offset == (BATCHES + 41) * 3

    asyncio.run(main())


def test_moving_back_to_the_current_dir_cancels_the_move(broker: Broker) -> None:
    async def main() -> None:
        broker.replicas.become_leader_or_follower([leader(0)], IDS)
        broker.append(BATCHES)
        here = broker.current().dir.parent
        target = next(d for d in broker.dirs if d != here)
        broker.quota.update_quota(1)  # 1 B/s: the first step exceeds it, time stands still
        assert broker.move(target) == ErrorCode.NONE
        await asyncio.sleep(0.05)
        future = broker.log_manager.get_future_log(TP)
        assert future is not None and 0 < future.log_end_offset < broker.current().log_end_offset
        assert broker.move(here) == ErrorCode.NONE
        assert broker.log_manager.get_future_log(TP) is None and not future.dir.exists()
        assert not broker.mover.is_copying(TP)
        assert broker.current().dir.parent == here
        assert broker.log_manager.cleaner.manager.paused == {}

    asyncio.run(main())


def test_a_move_to_a_third_dir_replaces_the_one_in_progress(tmp_path: Path) -> None:
    broker = Broker(tmp_path, ManualClock(), ndirs=3)

    async def main() -> None:
        broker.replicas.become_leader_or_follower([leader(0)], IDS)
        broker.append(BATCHES)
        here = broker.current().dir.parent
        second, third = (d for d in broker.dirs if d != here)
        broker.quota.update_quota(1)
        assert broker.move(second) == ErrorCode.NONE
        first_future = broker.log_manager.get_future_log(TP)
        assert broker.move(third) == ErrorCode.NONE
        assert first_future is not None and not first_future.dir.exists()
        broker.quota.update_quota(2**63 - 1)
        await until(lambda: not broker.mover.is_copying(TP), "the move completes")
        assert broker.current().dir.parent == third
        assert broker.log_manager.cleaner.manager.paused == {}

    try:
        asyncio.run(main())
    finally:
        broker.close()


def test_the_throttle_holds_copies_until_time_passes(broker: Broker) -> None:
    async def main() -> None:
        broker.replicas.become_leader_or_follower([leader(0)], IDS)
        broker.append(BATCHES)
        target = next(d for d in broker.dirs if d != broker.current().dir.parent)
        broker.quota.update_quota(4096)  # one segment's worth per second
        assert broker.move(target) == ErrorCode.NONE
        future = broker.log_manager.get_future_log(TP)
        assert future is not None
        await asyncio.sleep(0.1)
        held = future.log_end_offset
        assert 0 < held < broker.current().log_end_offset
        # Recorded at time 0: up to the bound over the first second, and one read past it.
        assert future.size_in_bytes <= 4096 + 4096
        await asyncio.sleep(0.2)
        assert future.log_end_offset == held  # no time passed: still exceeded
        broker.clock.advance(3000)
        await until(lambda: future.log_end_offset > held, "copying goes on")
        await asyncio.sleep(0.2)
        assert future.size_in_bytes <= 4096 * 3 + 4096  # the bound over 3 s, one read past
        broker.clock.advance(60_000)
        await until(lambda: not broker.mover.is_copying(TP), "the move completes")

    asyncio.run(main())


def test_a_truncated_current_log_realigns_the_future_one(broker: Broker) -> None:
    """A follower truncates its log (its leader diverged) while it moves: the future log
    is cut where the two diverge and copies the new data."""

    async def main() -> None:
        broker.replicas.become_leader_or_follower([follower(0, epoch=1)], IDS)
        partition = broker.replicas.partitions[TP]
        for _ in range(BATCHES):
            partition.append_records_to_follower(fetched(partition.log_end_offset, 1))
        target = next(d for d in broker.dirs if d != partition.log.dir.parent)
        broker.quota.update_quota(1)
        assert broker.move(target) == ErrorCode.NONE
        await asyncio.sleep(0.05)
        future = broker.log_manager.get_future_log(TP)
        assert future is not None
        broker.clock.advance(1000)
        await until(lambda: future.log_end_offset > 30, "copied past offset 30")
        partition.truncate_to(30)  # the new leader's log diverges from offset 30
        for _ in range(5):  # epoch 2 from offset 30
            partition.append_records_to_follower(fetched(partition.log_end_offset, 2, 99))
        broker.quota.update_quota(2**63 - 1)
        await until(lambda: not broker.mover.is_copying(TP), "the move completes")
        moved = broker.current()
        assert moved.dir.parent == target and moved.log_end_offset == 45
        assert [(e.epoch, e.start_offset) for e in moved.leader_epoch_cache.entries] == [
            (1, 0),
            (2, 30),
        ]
        assert {r.timestamp for r in read_records(moved, 30)} == {99, 100, 101}

    asyncio.run(main())


def test_a_copy_resumes_after_a_restart_and_stop_replica_pauses_it(
    tmp_path: Path,
) -> None:
    clock = ManualClock()
    first = Broker(tmp_path, clock)

    async def before() -> Path:
        first.replicas.become_leader_or_follower([leader(0)], IDS)
        first.append(BATCHES)
        target = next(d for d in first.dirs if d != first.current().dir.parent)
        first.quota.update_quota(1)
        assert first.move(target) == ErrorCode.NONE
        await asyncio.sleep(0.05)
        await first.mover.shutdown()
        return target

    target = asyncio.run(before())
    first.log_manager.shutdown()
    second = Broker(tmp_path, clock)

    async def after() -> None:
        assert second.log_manager.get_future_log(TP) is not None
        second.replicas.become_leader_or_follower([leader(0, epoch=1)], IDS)
        assert second.mover.is_copying(TP)
        second.replicas.stop_replicas({TP: (1, False)})
        assert not second.mover.is_copying(TP)
        assert second.log_manager.get_future_log(TP) is not None
        second.replicas.become_leader_or_follower([leader(0, epoch=2)], IDS)
        await until(lambda: not second.mover.is_copying(TP), "the move completes")
        assert second.current().dir.parent == target
        assert second.current().log_end_offset == BATCHES * 3
        assert second.log_manager.cleaner.manager.paused == {}

    try:
        asyncio.run(after())
    finally:
        second.close()


def test_deleting_a_moving_partition_deletes_both_logs(broker: Broker) -> None:
    async def main() -> None:
        broker.replicas.become_leader_or_follower([leader(0)], IDS)
        broker.append(BATCHES)
        target = next(d for d in broker.dirs if d != broker.current().dir.parent)
        broker.quota.update_quota(1)
        assert broker.move(target) == ErrorCode.NONE
        future = broker.log_manager.get_future_log(TP)
        assert future is not None
        assert broker.replicas.stop_replicas({TP: (-2, True)}) == {TP: ErrorCode.NONE}
        assert not broker.mover.is_copying(TP)
        assert broker.log_manager.get_log(TP) is None
        assert broker.log_manager.get_future_log(TP) is None and not future.dir.exists()
        await asyncio.sleep(0.05)

    asyncio.run(main())


def test_a_log_starting_inside_a_batch_moves_from_that_batch(broker: Broker) -> None:
    """DeleteRecords left the log start offset inside a batch: the future log starts at the
    batch (Kafka's ``UnexpectedAppendOffsetException`` case) and keeps the start offset."""

    async def main() -> None:
        broker.replicas.become_leader_or_follower([leader(0)], IDS)
        broker.append(BATCHES)
        source = broker.current()
        source.maybe_increment_log_start_offset(31)  # batches hold offsets 30-32, ...
        target = next(d for d in broker.dirs if d != source.dir.parent)
        assert broker.move(target) == ErrorCode.NONE
        await until(lambda: not broker.mover.is_copying(TP), "the move completes")
        moved = broker.current()
        assert moved.dir.parent == target
        assert (moved.log_start_offset, moved.segments[0].base_offset) == (31, 30)
        assert read_records(moved) == read_records(source)

    asyncio.run(main())
