"""A log dir whose disk fills up goes offline; the other dirs keep serving.

One of two log dirs is a 256 KiB tmpfs (we run as root; without mount permission the tests
skip). Filling it must turn the failing append into KAFKA_STORAGE_ERROR, take that dir's
partitions offline, leave the other dir working, and lose nothing that was acknowledged.
"""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import Path

import pytest

from franz.clock import ManualClock
from franz.errors import ErrorCode, KafkaStorageError, error_code_for
from franz.protocol.records.inflated import RecordBatchBuilder
from franz.storage.checkpoints import RECOVERY_POINT_CHECKPOINT
from franz.storage.files import TopicPartition
from franz.storage.log import Log
from franz.storage.log_manager import CLEAN_SHUTDOWN_FILE
from tests.support.kafka_format import parse_checkpoint
from tests.support.tmpfs import mounted_tmpfs, remount
from tests.unit.storage.conftest import (
    ManagerFactory,
    Written,
    append_batches,
    make_batch,
    read_records,
    run_python,
    small_config,
)

TINY = "256k"
FULL = TopicPartition("full", 0)
SPARE = TopicPartition("spare", 0)
RECORDS = 4
VALUE_SIZE = 1000


def _checkpoint(directory: Path, name: str) -> dict[tuple[str, int], int]:
    return parse_checkpoint((directory / name).read_text(encoding="utf-8"))


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs mounted at ``tmp_path / "small"``, unmounted afterwards."""
    with mounted_tmpfs(tmp_path / "small", TINY) as mount_point:
        yield mount_point


def _batch(first_offset: int, timestamp: int) -> bytearray:
    """~4 KiB: fills the tmpfs in about 60 appends."""
    builder = RecordBatchBuilder()
    for j in range(RECORDS):
        offset = first_offset + j
        builder.append(timestamp, b"k%08d" % offset, bytes([offset % 251]) * VALUE_SIZE)
    return builder.build()


def _expected(first_offset: int, timestamp: int) -> list[Written]:
    return [
        Written(
            first_offset + j,
            timestamp,
            b"k%08d" % (first_offset + j),
            bytes([(first_offset + j) % 251]) * VALUE_SIZE,
        )
        for j in range(RECORDS)
    ]


def _fill(log: Log, clock: ManualClock) -> tuple[list[Written], KafkaStorageError]:
    acked: list[Written] = []
    for _ in range(10_000):
        first, timestamp = log.log_end_offset, clock.wall_ms()
        try:
            info = log.append_as_leader(_batch(first, timestamp), 0)
        except KafkaStorageError as exc:
            return acked, exc
        assert info.first_offset == first
        acked += _expected(first, timestamp)
        clock.advance(10)
    pytest.fail("the tmpfs never filled up")


def test_log_dir_failure_disk_full_takes_only_that_dir_offline(
    tiny_tmpfs: Path, open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    small, big = tiny_tmpfs.resolve(), (tmp_path / "big").resolve()
    # One segment bigger than the tmpfs and one index page: no roll and no new index page is
    # needed once the disk is full (see the SIGBUS test below for what happens otherwise).
    config = small_config(
        {"segment.bytes": 1 << 20, "index.interval.bytes": 4096, "segment.index.bytes": 4096}
    )
    manager = open_manager([small, big], config=config)
    full = manager.get_or_create_log(FULL)
    spare = manager.get_or_create_log(SPARE)
    assert (full.dir.parent, spare.dir.parent) == (small, big)
    spare_written = append_batches(spare, clock, 3)

    acked, error = _fill(full, clock)
    assert len(acked) > 40 * RECORDS
    assert error.code == ErrorCode.KAFKA_STORAGE_ERROR == 56
    assert error_code_for(error) == 56
    assert manager.offline_dirs == {small}
    assert manager.live_dirs == [big]
    assert full.offline and not spare.offline
    assert full.log_end_offset == acked[-1].offset + 1
    acked_bytes = full.active_segment.log_path.stat().st_size
    assert acked_bytes == sum(s.size for s in full.segments), "the failed write was cut back"

    # Every later request for the offline partition gets KAFKA_STORAGE_ERROR.
    with pytest.raises(KafkaStorageError):
        full.append_as_leader(_batch(0, clock.wall_ms()), 0)
    with pytest.raises(KafkaStorageError):
        full.read(0, 1024)
    with pytest.raises(KafkaStorageError):
        full.fetch_offset_by_timestamp(acked[0].timestamp)
    with pytest.raises(KafkaStorageError):
        full.roll()
    assert manager.get_or_create_log(FULL) is full

    # The other dir keeps serving, and new partitions go there.
    spare_written += append_batches(spare, clock, 20)
    assert read_records(spare) == spare_written
    fresh = [manager.get_or_create_log(TopicPartition("fresh", p)) for p in range(3)]
    assert {lg.dir.parent for lg in fresh} == {big}
    fresh_written = append_batches(fresh[0], clock, 2)
    clock.advance(600_000)
    manager.tick()  # retention, flushes and checkpoints skip the offline dir
    spare.update_high_watermark(spare.log_end_offset)
    manager.shutdown()
    assert (big / CLEAN_SHUTDOWN_FILE).exists()
    assert not (small / CLEAN_SHUTDOWN_FILE).exists()
    assert full.active_segment.log_path.stat().st_size == acked_bytes

    # More space, a restart: the dir is recovered and every acknowledged append is there.
    remount(small, "4m")
    restarted = open_manager([small, big], config=config)
    assert restarted.had_clean_shutdown == {small: False, big: True}
    assert restarted.offline_dirs == set()
    recovered = restarted.get_log(FULL)
    assert recovered is not None
    assert recovered.log_end_offset == acked[-1].offset + 1
    assert read_records(recovered) == acked
    assert recovered.active_segment.log_path.stat().st_size == acked_bytes
    after = _fill_some(recovered, clock, 5)
    assert after[0].offset == acked[-1].offset + 1
    assert read_records(recovered) == acked + after
    spare_again = restarted.get_log(SPARE)
    fresh_again = restarted.get_log(TopicPartition("fresh", 0))
    assert spare_again is not None and read_records(spare_again) == spare_written
    assert fresh_again is not None and read_records(fresh_again) == fresh_written


def _fill_some(log: Log, clock: ManualClock, batches: int) -> list[Written]:
    out: list[Written] = []
    for _ in range(batches):
        first, timestamp = log.log_end_offset, clock.wall_ms()
        log.append_as_leader(_batch(first, timestamp), 0)
        out += _expected(first, timestamp)
        clock.advance(10)
    return out


def _fill_with_a_file(directory: Path) -> Path:
    """Fill the file system of ``directory`` with a non-franz file; return its path."""
    filler = directory / "filler.bin"
    chunk = b"\xa5" * 4096
    with open(filler, "wb", buffering=0) as f:
        try:
            while True:
                f.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def test_log_dir_failure_checkpoint_write_on_a_full_disk_takes_the_dir_offline(
    tiny_tmpfs: Path, open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    small, big = tiny_tmpfs.resolve(), (tmp_path / "big").resolve()
    manager = open_manager([small, big])
    full = manager.get_or_create_log(FULL)
    spare = manager.get_or_create_log(SPARE)
    written = append_batches(full, clock, 10)
    full.flush()
    manager.checkpoint_recovery_points()
    assert _checkpoint(small, RECOVERY_POINT_CHECKPOINT) == {("full", 0): 30}
    written += append_batches(full, clock, 10)
    full.flush()
    spare_written = append_batches(spare, clock, 4)
    spare.flush()

    filler = _fill_with_a_file(small)
    manager.checkpoint_recovery_points()  # must not raise: the dir goes offline instead
    assert manager.offline_dirs == {small}
    assert full.offline and not spare.offline
    # The checkpoint is replaced atomically: the old one is still whole.
    assert _checkpoint(small, RECOVERY_POINT_CHECKPOINT) == {("full", 0): 30}
    assert _checkpoint(big, RECOVERY_POINT_CHECKPOINT) == {("spare", 0): 12}
    with pytest.raises(KafkaStorageError) as excinfo:
        full.append_as_leader(_batch(0, clock.wall_ms()), 0)
    assert excinfo.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    spare_written += append_batches(spare, clock, 2)
    assert read_records(spare) == spare_written
    manager.shutdown()

    filler.unlink()
    restarted = open_manager([small, big])
    assert restarted.had_clean_shutdown == {small: False, big: True}
    recovered = restarted.get_log(FULL)
    assert recovered is not None and read_records(recovered) == written
    spare_again = restarted.get_log(SPARE)
    assert spare_again is not None and read_records(spare_again) == spare_written


FILLER = """
import faulthandler
import sys
from pathlib import Path

from franz.clock import ManualClock
from franz.errors import KafkaStorageError
from franz.storage.files import TopicPartition
from franz.storage.log_manager import LogManager
from tests.unit.storage.conftest import CLOCK_START_MS, make_batch, small_config

faulthandler.enable()  # a fatal signal prints where it struck
clock = ManualClock(CLOCK_START_MS)
small, big = Path(sys.argv[1]), Path(sys.argv[2])
manager = LogManager([small, big], default_config=small_config(), clock=clock)
manager.startup()
log = manager.get_or_create_log(TopicPartition("full", 0))
assert log.dir.parent == small.resolve()
for _ in range(100_000):
    try:
        log.append_as_leader(make_batch(log.log_end_offset, clock.wall_ms()), 0)
    except KafkaStorageError as exc:
        print("storage-error", int(exc.code), flush=True)
        break
    clock.advance(10)
print("offline", *sorted(str(d) for d in manager.offline_dirs), flush=True)
manager.shutdown()
"""


def test_log_dir_failure_disk_full_with_rolling_segments_does_not_kill_the_process(
    tiny_tmpfs: Path, tmp_path: Path
) -> None:
    # 4 KiB segments with 4 KiB indexes: segments roll (new sparse index files) as the disk
    # fills, so index stores land on pages the full tmpfs cannot back.
    big = tmp_path / "big"
    result = run_python(FILLER, str(tiny_tmpfs), str(big), timeout=60)
    assert result.returncode == 0, f"writer died with {result.returncode}: {result.stderr[-2000:]}"
    assert result.stdout.splitlines() == [
        "storage-error 56",
        f"offline {tiny_tmpfs.resolve()}",
    ]


def test_log_dir_failure_index_page_on_a_full_disk_leaves_no_part_of_the_append(
    tiny_tmpfs: Path, open_manager: ManagerFactory, clock: ManualClock, tmp_path: Path
) -> None:
    # Indexes are sparse; a page is reserved just before the first entry stored in it. Here
    # the log's bytes fit in the log file's last page but the index's first page cannot be
    # reserved: the append fails whole (log cut back, no index entry), the dir goes offline.
    small, big = tiny_tmpfs.resolve(), (tmp_path / "big").resolve()
    config = small_config({"index.interval.bytes": 1, "segment.index.bytes": 1 << 20})
    manager = open_manager([small, big], config=config)
    full = manager.get_or_create_log(FULL)
    first = make_batch(0, clock.wall_ms(), count=1)
    second = make_batch(1, clock.wall_ms(), count=1)
    assert len(first) + len(second) < 4096
    full.append_as_leader(first, 0)
    segment = full.active_segment
    acked_bytes = segment.log_path.stat().st_size
    assert segment.offset_index.entries == 0
    filler = _fill_with_a_file(small)

    with pytest.raises(KafkaStorageError):
        full.append_as_leader(second, 0)
    assert segment.log_path.stat().st_size == acked_bytes
    assert segment.offset_index.entries == 0 and segment.time_index.entries == 0
    assert full.log_end_offset == 1 and full.offline
    assert manager.offline_dirs == {small}
    manager.shutdown()

    filler.unlink()
    restarted = open_manager([small, big], config=config)
    recovered = restarted.get_log(FULL)
    assert recovered is not None and recovered.log_end_offset == 1


def test_log_dir_failure_of_the_last_dir_calls_on_all_dirs_failed(
    open_manager: ManagerFactory, tmp_path: Path
) -> None:
    # Kafka halts the broker when no log dir is left (LogManager.handleLogDirFailure); the
    # manager says so once, through the broker's hook, and only for the last dir.
    small, big = (tmp_path / "small").resolve(), (tmp_path / "big").resolve()
    calls: list[list[Path]] = []
    manager = open_manager([small, big], on_all_dirs_failed=lambda: calls.append(manager.live_dirs))
    manager.handle_log_dir_failure(small, OSError(errno.ENOSPC, "No space left on device"))
    assert calls == []
    manager.handle_log_dir_failure(big, OSError(errno.EIO, "Input/output error"))
    manager.handle_log_dir_failure(big, OSError(errno.EIO, "Input/output error"))
    assert calls == [[]]
