"""Future replicas on real dirs (``franz.storage.future_logs``): Kafka's ``-future`` dir
names, creation in another log dir, promotion (renames, checkpoints, the old dir kept for
``file.delete.delay.ms``), the preferred dir of a partition not created yet, a ``-future``
dir found at start-up, deletion and log dir failure.

Checkpoints are read back with the independent parser of Kafka's formats
(``tests.support.kafka_format``)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from franz.clock import ManualClock
from franz.errors import InconsistentBrokerMetadataError, KafkaStorageError, LogDirNotFoundError
from franz.storage.checkpoints import RECOVERY_POINT_CHECKPOINT
from franz.storage.files import (
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
    TopicPartition,
    future_dir_name,
    parse_future_dir_name,
    parse_partition_dir_name,
)
from franz.storage.log import Log
from tests.support.kafka_format import parse_checkpoint
from tests.unit.storage.conftest import (
    BATCHES_PER_SEGMENT,
    TP,
    ManagerFactory,
    append_batches,
    read_records,
)

TOPIC_ID = uuid.UUID(int=42)


def copy_into(future: Log, current: Log) -> None:
    """What the copier does (``franz.cluster.alter_log_dirs``): the current log's batches
    appended to the future one as a follower's."""
    while future.log_end_offset < current.log_end_offset:
        data = current.read(future.log_end_offset, 64 * 1024).read_bytes()
        future.append_as_follower(data)
    future.update_high_watermark(current.high_watermark)


def dirs(tmp_path: Path) -> tuple[Path, Path]:
    return (tmp_path / "dir-a").resolve(), (tmp_path / "dir-b").resolve()


def test_future_dir_names_are_kafkas() -> None:
    name = future_dir_name(TopicPartition("a.b-1", 7))
    prefix, unique, suffix = name[: len("a.b-1-7.")], name[len("a.b-1-7.") : -7], name[-7:]
    assert (prefix, suffix) == ("a.b-1-7.", FUTURE_DIR_SUFFIX)
    assert len(unique) == 32 and int(unique, 16) >= 0
    assert parse_future_dir_name(name) == TopicPartition("a.b-1", 7)
    assert parse_partition_dir_name(name) is None
    assert parse_future_dir_name("a.b-1-7") is None
    assert parse_future_dir_name(f"a-0.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}") is None
    assert parse_future_dir_name("a-0.notahexuuid-future") is None


def test_a_future_log_is_created_in_another_dir_only(
    tmp_path: Path, open_manager: ManagerFactory
) -> None:
    a, b = dirs(tmp_path)
    manager = open_manager([a, b])
    current = manager.get_or_create_log(TP, topic_id=TOPIC_ID)
    assert current.dir.parent == a
    with pytest.raises(ValueError, match="current log directory"):
        manager.futures.create(TP, a, TOPIC_ID)
    future = manager.futures.create(TP, b, TOPIC_ID)
    assert future.dir.parent == b and parse_future_dir_name(future.dir.name) == TP
    assert future.topic_id == TOPIC_ID
    assert manager.get_future_log(TP) is future
    assert manager.futures.create(TP, b, TOPIC_ID) is future  # already there


def test_no_future_log_while_a_dir_is_offline(tmp_path: Path, open_manager: ManagerFactory) -> None:
    """Kafka's ``getOrCreateLog(isNew = false)``: a future log while some dir is offline could
    be a second one (the offline dir may hold one)."""
    a, b = dirs(tmp_path)
    c = (tmp_path / "dir-c").resolve()
    manager = open_manager([a, b, c])
    manager.get_or_create_log(TP)
    manager.handle_log_dir_failure(c, OSError(5, "EIO"))
    with pytest.raises(KafkaStorageError, match="are offline"):
        manager.futures.create(TP, b, None)


def test_log_dirs_are_named_by_their_absolute_paths(
    tmp_path: Path, open_manager: ManagerFactory
) -> None:
    a, b = dirs(tmp_path)
    manager = open_manager([a, b])
    assert manager.is_log_dir_online(str(b)) and manager.log_dir(str(b)) == b
    for unknown in ("dir-b", str(b) + "/", str(tmp_path / "other")):
        with pytest.raises(LogDirNotFoundError, match="is not found in the config"):
            manager.is_log_dir_online(unknown)
    manager.handle_log_dir_failure(b, OSError(5, "EIO"))
    assert not manager.is_log_dir_online(str(b))


def test_promotion_swaps_the_dirs_and_deletes_the_old_one_later(
    tmp_path: Path, open_manager: ManagerFactory, clock: ManualClock
) -> None:
    a, b = dirs(tmp_path)
    manager = open_manager([a, b])
    current = manager.get_or_create_log(TP, topic_id=TOPIC_ID)
    written = append_batches(current, clock, 2 * BATCHES_PER_SEGMENT + 3, epoch=3)
    current.update_high_watermark(current.log_end_offset)
    future = manager.futures.create(TP, b, TOPIC_ID)
    copy_into(future, current)
    current.leader_epoch_cache.assign(4, current.log_end_offset)  # a new leader's epoch
    manager.checkpoint_recovery_points()
    assert TP in parse_checkpoint((a / RECOVERY_POINT_CHECKPOINT).read_text())

    promoted = manager.futures.promote(TP)
    assert promoted is future and manager.get_log(TP) is future
    assert manager.get_future_log(TP) is None
    assert future.dir == b / TP.dir_name and future.dir.is_dir()
    assert not (a / TP.dir_name).exists()
    (old,) = [d for d in a.iterdir() if d.name.endswith(DELETE_DIR_SUFFIX)]
    assert old.name.startswith(f"{TP.dir_name}.")
    assert TP not in parse_checkpoint((a / RECOVERY_POINT_CHECKPOINT).read_text())
    assert TP in parse_checkpoint((b / RECOVERY_POINT_CHECKPOINT).read_text())
    assert future.high_watermark == current.high_watermark
    assert [(e.epoch, e.start_offset) for e in future.leader_epoch_cache.entries] == [
        (3, 0),
        (4, current.log_end_offset),
    ]
    assert read_records(future) == written
    # The old log's files stay readable until file.delete.delay.ms has passed.
    assert current.read(0, 1024).read_bytes()
    manager.tick()
    assert old.exists()
    clock.advance(current.config.file_delete_delay_ms)
    manager.tick()
    assert not old.exists()


def test_a_promoted_log_lives_on_in_its_new_dir(
    tmp_path: Path, open_manager: ManagerFactory, clock: ManualClock
) -> None:
    """Every path of the promoted log follows the rename: new segments, retention's
    ``.deleted`` renames, the leader-epoch checkpoint; and it reloads from there."""
    a, b = dirs(tmp_path)
    manager = open_manager([a, b])
    current = manager.get_or_create_log(TP)
    written = append_batches(current, clock, BATCHES_PER_SEGMENT + 2, epoch=1)
    future = manager.futures.create(TP, b, None)
    copy_into(future, current)
    promoted = manager.futures.promote(TP)
    written += append_batches(promoted, clock, 2 * BATCHES_PER_SEGMENT, epoch=2)
    promoted.update_high_watermark(promoted.log_end_offset)
    assert len(promoted.segments) >= 3
    assert all(s.log_path.parent == b / TP.dir_name for s in promoted.segments)
    promoted.maybe_increment_log_start_offset(promoted.segments[1].base_offset)
    assert manager.cleanup_logs() == 1
    manager.shutdown()

    reopened = open_manager([a, b])
    log = reopened.get_log(TP)
    assert log is not None and log.dir == b / TP.dir_name
    assert read_records(log) == [w for w in written if w.offset >= log.log_start_offset]
    assert [e.epoch for e in log.leader_epoch_cache.entries] == [1, 2]
    assert not any(d.name.endswith(DELETE_DIR_SUFFIX) for d in a.iterdir())


def test_a_future_dir_found_at_start_up_is_the_future_replica_again(
    tmp_path: Path, open_manager: ManagerFactory, clock: ManualClock
) -> None:
    a, b = dirs(tmp_path)
    manager = open_manager([a, b])
    current = manager.get_or_create_log(TP)
    append_batches(current, clock, 5)
    future = manager.futures.create(TP, b, None)
    copy_into(future, current)
    future_dir = future.dir
    manager.close_without_shutdown()  # a crash mid-move

    reopened = open_manager([a, b])
    found = reopened.get_future_log(TP)
    assert found is not None and found.dir == future_dir
    assert found.log_end_offset == current.log_end_offset
    assert reopened.get_log(TP) is not None
    assert reopened.get_log(TP).dir.parent == a  # type: ignore[union-attr]


def test_two_current_dirs_of_one_partition_refuse_the_start(
    tmp_path: Path, open_manager: ManagerFactory
) -> None:
    """A crash between the two renames of a promotion: Kafka's message, nothing guessed."""
    a, b = dirs(tmp_path)
    manager = open_manager([a, b])
    manager.get_or_create_log(TP)
    manager.shutdown()
    (b / TP.dir_name).mkdir(parents=True)
    with pytest.raises(InconsistentBrokerMetadataError, match="Duplicate log directories"):
        open_manager([a, b])


def test_a_partition_not_created_yet_goes_to_its_preferred_dir(
    tmp_path: Path, open_manager: ManagerFactory
) -> None:
    a, b = dirs(tmp_path)
    manager = open_manager([a, b])
    other = TopicPartition("orders", 1)
    manager.futures.maybe_update_preferred_log_dir(TP, b)
    manager.futures.maybe_update_preferred_log_dir(other, b)
    assert manager.get_or_create_log(TP).dir.parent == b
    assert manager.get_or_create_log(other).dir.parent == b
    assert manager.futures.preferred == {}
    # A dir already holding the partition is not remembered.
    manager.futures.maybe_update_preferred_log_dir(TP, b)
    assert manager.futures.preferred == {}


def test_deleting_a_partition_deletes_its_future_replica(
    tmp_path: Path, open_manager: ManagerFactory
) -> None:
    a, b = dirs(tmp_path)
    manager = open_manager([a, b])
    manager.get_or_create_log(TP)
    future = manager.futures.create(TP, b, None)
    assert manager.delete_log(TP)
    assert manager.get_future_log(TP) is None and not future.dir.exists()
    assert list(b.glob(f"{TP.dir_name}*")) == []


def test_a_failed_dir_drops_its_future_replicas(
    tmp_path: Path, open_manager: ManagerFactory
) -> None:
    a, b = dirs(tmp_path)
    manager = open_manager([a, b])
    manager.get_or_create_log(TP)
    future = manager.futures.create(TP, b, None)
    manager.handle_log_dir_failure(b, OSError(5, "EIO"))
    assert future.offline and manager.get_future_log(TP) is None
    assert manager.get_log(TP) is not None and not manager.get_log(TP).offline  # type: ignore[union-attr]
