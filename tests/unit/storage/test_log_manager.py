"""``LogManager`` on real directories: locking, metadata, placement, shutdown, retention.

Checkpoints and ``meta.properties`` are read back with the independent parser of Kafka's
formats (``tests.support.kafka_format``), not with franz's own readers.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

import franz.storage.segment as segment_module
from franz.clock import ManualClock
from franz.errors import (
    InconsistentBrokerMetadataError,
    LogDirLockedError,
    OffsetOutOfRangeError,
)
from franz.storage.checkpoints import (
    HIGH_WATERMARK_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
)
from franz.storage.files import TopicPartition
from franz.storage.log import EARLIEST_TIMESTAMP, Log
from franz.storage.log_manager import CLEAN_SHUTDOWN_FILE, LOCK_FILE, META_PROPERTIES
from tests.support.kafka_format import parse_checkpoint, parse_meta_properties
from tests.unit.storage.conftest import (
    BATCH_SIZE,
    BATCHES_PER_SEGMENT,
    RECORDS_PER_BATCH,
    TP,
    ManagerFactory,
    append_batches,
    read_records,
    run_python,
    segment_path,
    small_config,
)


def _checkpoint(directory: Path, name: str) -> dict[tuple[str, int], int]:
    return parse_checkpoint((directory / name).read_text(encoding="utf-8"))


def _meta(directory: Path) -> dict[str, str]:
    return parse_meta_properties((directory / META_PROPERTIES).read_text(encoding="utf-8"))


class _CountingOs:
    """Stands in for ``os`` inside ``franz.storage.segment``: records preads and fsyncs."""

    def __init__(self) -> None:
        self.preads: list[int] = []
        self.fsyncs: list[int] = []

    def __getattr__(self, name: str) -> object:
        return getattr(os, name)

    def pread(self, fd: int, size: int, position: int) -> bytes:
        self.preads.append(fd)
        return os.pread(fd, size, position)

    def fsync(self, fd: int) -> None:
        self.fsyncs.append(fd)
        os.fsync(fd)


# -- start-up: lock and meta.properties -------------------------------------------------------


def test_log_manager_startup_creates_meta_properties_and_lock(
    open_manager: ManagerFactory, tmp_path: Path
) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    manager = open_manager(dirs, broker_id=7)
    for directory in dirs:
        assert (directory / LOCK_FILE).is_file()
        assert _meta(directory) == {"version": "0", "broker.id": "7"}
    assert manager.live_dirs == [d.resolve() for d in dirs]
    assert manager.offline_dirs == set()
    manager.shutdown()

    with_cluster = open_manager(tmp_path / "c", broker_id=7, cluster_id="QuasarClusterId0000001")
    assert _meta(tmp_path / "c") == {
        "version": "0",
        "broker.id": "7",
        "cluster.id": "QuasarClusterId0000001",
    }
    with_cluster.shutdown()


def test_log_manager_second_instance_on_a_locked_dir_fails_fast(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    first = open_manager([tmp_path / "free", tmp_path / "shared"])
    log = first.get_or_create_log(TP)
    append_batches(log, clock, 2)

    second = open_manager([tmp_path / "other", tmp_path / "shared"], start=False)
    started = time.monotonic()
    with pytest.raises(LogDirLockedError) as excinfo:
        second.startup()
    assert time.monotonic() - started < 5
    assert str((tmp_path / "shared").resolve()) in str(excinfo.value)
    # The loser released what it had locked; the winner is untouched and keeps working.
    third = open_manager(tmp_path / "other")
    third.shutdown()
    assert append_batches(log, clock, 1)[0].offset == 2 * RECORDS_PER_BATCH
    first.shutdown()
    reopened = open_manager([tmp_path / "free", tmp_path / "shared"])
    survivor = reopened.get_log(TP)
    assert survivor is not None and survivor.log_end_offset == 3 * RECORDS_PER_BATCH


LOCKER = """
import sys
from pathlib import Path

from franz.clock import ManualClock
from franz.config.topic import LogConfig
from franz.errors import LogDirLockedError
from franz.storage.log_manager import LogManager

manager = LogManager([Path(sys.argv[1])], default_config=LogConfig(), clock=ManualClock())
try:
    manager.startup()
except LogDirLockedError as exc:
    print(exc)
    sys.exit(3)
manager.shutdown()
print("started")
"""


def test_log_manager_second_process_on_a_locked_dir_fails_fast(
    open_manager: ManagerFactory, tmp_path: Path
) -> None:
    manager = open_manager(tmp_path)
    locked = run_python(LOCKER, str(tmp_path), timeout=20)
    assert locked.returncode == 3, locked.stderr
    assert str(tmp_path.resolve()) in locked.stdout

    manager.shutdown()
    free = run_python(LOCKER, str(tmp_path), timeout=20)
    assert (free.returncode, free.stdout.strip()) == (0, "started"), free.stderr


CLUSTER_A = "AAAAAAAAAAAAAAAAAAAAAA"
CLUSTER_B = "BBBBBBBBBBBBBBBBBBBBBB"


@pytest.mark.parametrize(
    ("stored", "configured"),
    [
        ({"version": "0", "broker.id": "1"}, (2, None)),
        ({"version": "0", "broker.id": "2", "cluster.id": CLUSTER_A}, (2, CLUSTER_B)),
    ],
    ids=["broker-id", "cluster-id"],
)
def test_log_manager_refuses_meta_properties_of_another_broker(
    open_manager: ManagerFactory,
    tmp_path: Path,
    stored: dict[str, str],
    configured: tuple[int, str | None],
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    text = "".join(f"{k}={v}\n" for k, v in stored.items())
    (data / META_PROPERTIES).write_text(text, encoding="utf-8")

    broker_id, cluster_id = configured
    dirs = [data, tmp_path / "fresh"]
    manager = open_manager(dirs, start=False, broker_id=broker_id, cluster_id=cluster_id)
    with pytest.raises(InconsistentBrokerMetadataError) as excinfo:
        manager.startup()
    assert str(data.resolve() / META_PROPERTIES) in str(excinfo.value)
    assert (data / META_PROPERTIES).read_text(encoding="utf-8") == text
    # Nothing stays locked after the refusal: the right broker starts on the same dirs.
    right = open_manager(
        dirs, broker_id=int(stored["broker.id"]), cluster_id=stored.get("cluster.id")
    )
    assert right.live_dirs == [d.resolve() for d in dirs]
    right.shutdown()


def test_log_manager_adopts_the_stored_cluster_id(
    open_manager: ManagerFactory, tmp_path: Path
) -> None:
    open_manager(tmp_path, broker_id=4, cluster_id=CLUSTER_A).shutdown()
    restarted = open_manager(tmp_path, broker_id=4)
    assert restarted.cluster_id == CLUSTER_A
    assert _meta(tmp_path)["cluster.id"] == CLUSTER_A


def test_log_manager_refuses_a_partition_present_in_two_dirs(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    for name in ("d0", "d1"):
        seeded = open_manager(tmp_path / name)
        append_batches(seeded.get_or_create_log(TP), clock, 1)
        seeded.shutdown()
    both = open_manager([tmp_path / "d0", tmp_path / "d1"], start=False)
    with pytest.raises(InconsistentBrokerMetadataError) as excinfo:
        both.startup()
    assert str((tmp_path / "d1" / TP.dir_name).resolve()) in str(excinfo.value)
    # The refusal released both locks.
    assert open_manager(tmp_path / "d1").get_log(TP) is not None


def test_log_manager_refused_startup_leaves_fresh_dirs_unstamped(
    open_manager: ManagerFactory, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / META_PROPERTIES).write_text("version=0\nbroker.id=1\n", encoding="utf-8")
    dirs = [tmp_path / "fresh", data]
    with pytest.raises(InconsistentBrokerMetadataError):
        open_manager(dirs, broker_id=2)

    right = open_manager(dirs, broker_id=1)
    assert _meta(tmp_path / "fresh") == {"version": "0", "broker.id": "1"}
    right.shutdown()


# -- placement ---------------------------------------------------------------------------------


def test_log_manager_spreads_new_partitions_evenly_over_log_dirs(
    open_manager: ManagerFactory, tmp_path: Path
) -> None:
    dirs = [tmp_path / name for name in ("d0", "d1", "d2")]
    manager = open_manager(dirs)
    logs = [manager.get_or_create_log(TopicPartition("spread", p)) for p in range(6)]
    by_dir = {
        d.resolve(): sorted(
            lg.topic_partition.partition for lg in logs if lg.dir.parent == d.resolve()
        )
        for d in dirs
    }
    assert [len(partitions) for partitions in by_dir.values()] == [2, 2, 2]
    for directory, partitions in by_dir.items():
        for p in partitions:
            assert (directory / f"spread-{p}").is_dir()
    assert manager.get_or_create_log(TopicPartition("spread", 0)) is logs[0]


def test_log_manager_puts_new_partitions_in_the_dirs_holding_fewest(
    open_manager: ManagerFactory, tmp_path: Path
) -> None:
    dirs = [tmp_path / name for name in ("d0", "d1", "d2")]
    seeded = open_manager(dirs[0])
    for p in range(3):
        seeded.get_or_create_log(TopicPartition("old", p))
    seeded.shutdown()

    manager = open_manager(dirs)
    assert len(manager.logs) == 3
    new = [manager.get_or_create_log(TopicPartition("new", p)) for p in range(6)]
    counts = [sum(lg.dir.parent == d.resolve() for lg in new) for d in dirs]
    assert counts == [0, 3, 3]


# -- clean shutdown and clean restart ---------------------------------------------------------


def test_log_manager_clean_shutdown_writes_checkpoints_and_marker(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    manager = open_manager(tmp_path)
    big = manager.get_or_create_log(TopicPartition("orders", 0))
    small = manager.get_or_create_log(TopicPartition("orders", 1))
    append_batches(big, clock, 50)
    append_batches(small, clock, 10)
    big.update_high_watermark(120)
    assert big.maybe_increment_log_start_offset(30)
    small.update_high_watermark(small.log_end_offset)
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists()
    manager.shutdown()

    assert (tmp_path / CLEAN_SHUTDOWN_FILE).is_file()
    assert _checkpoint(tmp_path, RECOVERY_POINT_CHECKPOINT) == {
        ("orders", 0): 150,
        ("orders", 1): 30,
    }
    assert _checkpoint(tmp_path, LOG_START_OFFSET_CHECKPOINT) == {
        ("orders", 0): 30,
        ("orders", 1): 0,
    }
    assert _checkpoint(tmp_path, HIGH_WATERMARK_CHECKPOINT) == {
        ("orders", 0): 120,
        ("orders", 1): 30,
    }
    assert not list(tmp_path.glob("*.tmp"))


def test_log_manager_clean_restart_reads_no_log_bytes(
    open_manager: ManagerFactory,
    clock: ManualClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    manager = open_manager(tmp_path)
    tps = [TopicPartition("orders", p) for p in range(2)]
    before = {}
    for tp in tps:
        log = manager.get_or_create_log(tp)
        append_batches(log, clock, 50, epoch=tp.partition + 3)
        log.update_high_watermark(140)
        log.maybe_increment_log_start_offset(10)
        before[tp] = _state(log), read_records(log)
    manager.shutdown()

    def forbidden(*_: object, **__: object) -> int:
        raise AssertionError("a clean restart must not recover any segment")

    monkeypatch.setattr(segment_module.LogSegment, "recover", forbidden)
    counting = _CountingOs()
    monkeypatch.setattr(segment_module, "os", counting)
    restarted = open_manager(tmp_path)
    assert restarted.had_clean_shutdown == {tmp_path.resolve(): True}
    assert not (tmp_path / CLEAN_SHUTDOWN_FILE).exists(), "the marker goes once loading is done"
    active_fds = set()
    for tp in tps:
        log = restarted.get_log(tp)
        assert log is not None
        active_fds.add(log.active_segment.fd)
        # Only the active segment's unindexed tail is walked (to find the LEO), as in Kafka.
        assert {s.fd for s in log.segments[:-1]}.isdisjoint(counting.preads)
    assert set(counting.preads) <= active_fds
    monkeypatch.setattr(segment_module, "os", os)
    for tp in tps:
        log = restarted.get_log(tp)
        assert log is not None
        assert (_state(log), read_records(log)) == before[tp]
        assert log.recovery_point == log.log_end_offset == 150


def _state(log: Log) -> dict[str, object]:
    return {
        "log_start_offset": log.log_start_offset,
        "high_watermark": log.high_watermark,
        "log_end_offset": log.log_end_offset,
        "segments": [(s.base_offset, s.size) for s in log.segments],
        "leader_epochs": log.leader_epoch_cache.entries,
        "largest_timestamps": [s.largest_timestamp for s in log.segments],
    }


def test_log_manager_flush_messages_one_moves_the_recovery_point_on_every_append(
    open_manager: ManagerFactory,
    clock: ManualClock,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counting = _CountingOs()
    monkeypatch.setattr(segment_module, "os", counting)
    manager = open_manager(tmp_path, config=small_config({"flush.messages": 1}))
    log = manager.get_or_create_log(TP)
    lazy = manager.get_or_create_log(TopicPartition("lazy", 0), config=small_config())
    for n in range(1, 21):
        append_batches(log, clock, 1)
        append_batches(lazy, clock, 1)
        assert log.recovery_point == log.log_end_offset == n * RECORDS_PER_BATCH
        assert counting.fsyncs[-1] == log.active_segment.fd
    assert lazy.recovery_point == 0, "without flush.messages nothing is fsynced per append"
    assert {s.fd for s in lazy.segments}.isdisjoint(counting.fsyncs)
    manager.checkpoint_recovery_points()
    assert _checkpoint(tmp_path, RECOVERY_POINT_CHECKPOINT) == {
        ("orders", 0): 60,
        ("lazy", 0): 0,
    }


def test_log_manager_tick_writes_checkpoints_on_their_intervals(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    manager = open_manager(
        tmp_path,
        recovery_point_checkpoint_interval_ms=10_000,
        high_watermark_checkpoint_interval_ms=1_000,
        flush_check_interval_ms=1_000,
        config=small_config({"flush.ms": 5_000}),
    )
    log = manager.get_or_create_log(TP)
    append_batches(log, clock, 20, advance_ms=0)
    log.update_high_watermark(60)
    clock.advance(1_000)
    manager.tick()
    assert _checkpoint(tmp_path, HIGH_WATERMARK_CHECKPOINT) == {("orders", 0): 60}
    assert not (tmp_path / RECOVERY_POINT_CHECKPOINT).exists()
    # The first segment rolled: the flush task fsyncs it (Kafka flushes rolled segments).
    assert log.recovery_point == BATCHES_PER_SEGMENT * RECORDS_PER_BATCH
    clock.advance(4_000)
    manager.tick()
    assert log.recovery_point == BATCHES_PER_SEGMENT * RECORDS_PER_BATCH, "flush.ms not yet"
    clock.advance(1_000)
    manager.tick()
    assert log.recovery_point == 60, "flush.ms elapsed since the last flush: all is flushed"
    assert not (tmp_path / RECOVERY_POINT_CHECKPOINT).exists()
    clock.advance(4_000)
    manager.tick()
    assert _checkpoint(tmp_path, RECOVERY_POINT_CHECKPOINT) == {("orders", 0): 60}


# -- retention ---------------------------------------------------------------------------------


def test_log_manager_retention_ms_deletes_segments_by_largest_timestamp(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    manager = open_manager(
        tmp_path,
        config=small_config({"retention.ms": 60_000, "file.delete.delay.ms": 0}),
        retention_check_interval_ms=1_000,
    )
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, 30)  # segments 0 and 45, both full
    clock.advance(50_000)
    written += append_batches(log, clock, 20)  # segments 90 (full) and 135
    log.update_high_watermark(log.log_end_offset)
    assert [s.base_offset for s in log.segments] == [0, 45, 90, 135]
    newest_in = {
        base: max(w.timestamp for w in written if base <= w.offset < base + 45)
        for base in (0, 45, 90)
    }

    # Segment 45's newest record is exactly retention.ms old: only segment 0 is past it.
    clock.advance(newest_in[45] + 60_000 - clock.wall_ms())
    manager.tick()
    assert [s.base_offset for s in log.segments] == [45, 90, 135]
    assert log.log_start_offset == 45
    clock.advance(1_000)
    manager.tick()
    assert [s.base_offset for s in log.segments] == [90, 135]
    assert log.log_start_offset == 90
    assert clock.wall_ms() - newest_in[90] <= 60_000
    assert read_records(log) == written[90:]
    with pytest.raises(OffsetOutOfRangeError):
        log.read(89, 1024)
    assert sorted(p.name for p in log.dir.glob("*.log")) == [
        segment_path(log.dir, 90, ".log").name,
        segment_path(log.dir, 135, ".log").name,
    ]


def test_log_manager_retention_never_deletes_above_the_high_watermark(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    manager = open_manager(
        tmp_path,
        config=small_config({"retention.ms": 1_000, "retention.bytes": 0}),
        retention_check_interval_ms=1_000,
    )
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, 50)
    clock.advance(3_600_000)
    manager.tick()
    assert [s.base_offset for s in log.segments] == [0, 45, 90, 135], "HW is 0"
    log.update_high_watermark(100)
    clock.advance(1_000)
    manager.tick()
    assert [s.base_offset for s in log.segments] == [90, 135], "only segments wholly below HW go"
    log.update_high_watermark(log.log_end_offset)
    clock.advance(1_000)
    manager.tick()
    # Every segment expired: the log rolls so an empty active segment remains (Kafka's rule).
    assert [(s.base_offset, s.size) for s in log.segments] == [(150, 0)]
    assert log.log_start_offset == log.log_end_offset == len(written)
    assert append_batches(log, clock, 1)[0].offset == 150


def test_log_manager_retention_bytes_deletes_oldest_segments_beyond_the_limit(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    full = BATCHES_PER_SEGMENT * BATCH_SIZE  # 3975 bytes
    manager = open_manager(
        tmp_path,
        config=small_config({"retention.bytes": 2 * full + 100}),
        retention_check_interval_ms=1_000,
    )
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, 50)  # 3 full segments + 5 batches: 13250 bytes
    log.update_high_watermark(log.log_end_offset)
    assert log.size_in_bytes == 3 * full + 5 * BATCH_SIZE
    clock.advance(1_000)
    manager.tick()
    # 5200 bytes over: segment 0 (3975) goes; segment 45 would take the log below the limit.
    assert [s.base_offset for s in log.segments] == [45, 90, 135]
    assert log.size_in_bytes == 2 * full + 5 * BATCH_SIZE
    assert log.log_start_offset == 45
    assert read_records(log) == written[45:]
    clock.advance(1_000)
    manager.tick()
    assert [s.base_offset for s in log.segments] == [45, 90, 135], "stable once within bounds"


def test_log_manager_log_start_offset_advance_deletes_segments_wholly_below_it(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    manager = open_manager(tmp_path, retention_check_interval_ms=1_000)
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, 50, epoch=4)
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(100)  # above the HW (0)
    log.update_high_watermark(log.log_end_offset)
    assert log.maybe_increment_log_start_offset(100)
    assert not log.maybe_increment_log_start_offset(99), "never moves backwards"
    clock.advance(1_000)
    manager.tick()
    # Segment 90 holds offset 100 and stays; 0 and 45 are wholly below and go.
    assert [s.base_offset for s in log.segments] == [90, 135]
    assert log.log_start_offset == 100
    assert log.read(100, 1024).read_bytes()
    with pytest.raises(OffsetOutOfRangeError):
        log.read(99, 1024)
    assert read_records(log) == written[100:]
    earliest = log.fetch_offset_by_timestamp(EARLIEST_TIMESTAMP)
    assert earliest is not None and earliest.offset == 100
    assert [tuple(e) for e in log.leader_epoch_cache.entries] == [(4, 100)]
    manager.shutdown()
    assert _checkpoint(tmp_path, LOG_START_OFFSET_CHECKPOINT) == {("orders", 0): 100}

    restarted = open_manager(tmp_path).get_log(TP)
    assert restarted is not None
    assert restarted.log_start_offset == 100
    assert read_records(restarted) == written[100:]


def test_log_manager_deleted_segments_wait_file_delete_delay_before_unlink(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    manager = open_manager(
        tmp_path,
        config=small_config({"retention.ms": 60_000, "file.delete.delay.ms": 10_000}),
        retention_check_interval_ms=1_000,
    )
    log = manager.get_or_create_log(TP)
    append_batches(log, clock, 15)  # segment 0, full
    clock.advance(30_000)
    append_batches(log, clock, 5)  # segment 45
    log.update_high_watermark(log.log_end_offset)
    in_flight = log.read(0, 10 * BATCH_SIZE)
    expected = in_flight.read_bytes()
    old = [segment_path(log.dir, 0, suffix) for suffix in (".log", ".index", ".timeindex")]

    clock.advance(31_000)  # segment 0's newest record is 61 s old, segment 45's 31 s
    manager.tick()
    assert [s.base_offset for s in log.segments] == [45]
    assert not any(path.exists() for path in old)
    renamed = [path.with_name(path.name + ".deleted") for path in old]
    assert all(path.exists() for path in renamed)
    assert in_flight.read_bytes() == expected, "a fetch in flight still reads the old segment"

    clock.advance(9_999)
    manager.tick()
    assert all(path.exists() for path in renamed), "file.delete.delay.ms has not passed"
    clock.advance(1)
    manager.tick()
    assert not any(path.exists() for path in renamed)
    assert [s.base_offset for s in log.segments] == [45]
    assert not list(log.dir.glob("*.deleted"))


def test_log_manager_restart_removes_pending_deleted_segments(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    config = small_config({"retention.ms": 60_000, "file.delete.delay.ms": 3_600_000})
    manager = open_manager(tmp_path, config=config, retention_check_interval_ms=1_000)
    log = manager.get_or_create_log(TP)
    written = append_batches(log, clock, 15)
    clock.advance(30_000)
    written += append_batches(log, clock, 5)
    log.update_high_watermark(log.log_end_offset)
    clock.advance(31_000)
    manager.tick()
    assert len(list(log.dir.glob("*.deleted"))) == 3
    manager.close_without_shutdown()

    restarted = open_manager(tmp_path, config=config).get_log(TP)
    assert restarted is not None
    assert not list(restarted.dir.glob("*.deleted"))
    assert [s.base_offset for s in restarted.segments] == [45]
    assert read_records(restarted) == written[45:]


# -- deleting partitions -----------------------------------------------------------------------


def test_log_manager_delete_log_removes_the_partition_dir(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    manager = open_manager(tmp_path)
    doomed = manager.get_or_create_log(TP)
    kept = manager.get_or_create_log(TopicPartition("orders", 1))
    append_batches(doomed, clock, 20)
    append_batches(kept, clock, 2)
    assert manager.delete_log(TP)
    assert not manager.delete_log(TP)
    assert manager.get_log(TP) is None
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["orders-1"]

    recreated = manager.get_or_create_log(TP)
    assert (recreated.log_start_offset, recreated.log_end_offset) == (0, 0)
    manager.delete_log(TP)
    kept.update_high_watermark(kept.log_end_offset)
    manager.shutdown()
    assert _checkpoint(tmp_path, RECOVERY_POINT_CHECKPOINT) == {("orders", 1): 6}


def test_log_manager_startup_finishes_deleting_leftover_delete_dirs(
    open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    manager = open_manager(tmp_path)
    written = append_batches(manager.get_or_create_log(TP), clock, 3)
    manager.shutdown()
    leftover = tmp_path / f"orders-1.{uuid.uuid4().hex}-delete"
    leftover.mkdir()
    (leftover / "00000000000000000000.log").write_bytes(b"\x00" * 100)
    (leftover / "00000000000000000000.index").write_bytes(b"")

    restarted = open_manager(tmp_path)
    assert not leftover.exists()
    assert sorted(restarted.logs) == [TP]
    log = restarted.get_log(TP)
    assert log is not None and read_records(log) == written
