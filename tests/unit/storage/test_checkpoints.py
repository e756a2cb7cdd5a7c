"""``franz.storage.checkpoints``: Kafka's checkpoint text format."""

from __future__ import annotations

from pathlib import Path

import pytest

from franz.storage.checkpoints import CheckpointError, OffsetCheckpointFile
from franz.storage.files import TopicPartition


def test_empty_file_has_no_entries(tmp_path: Path) -> None:
    """Kafka creates ``cleaner-offset-checkpoint`` empty and reads it as no entries."""
    path = tmp_path / "cleaner-offset-checkpoint"
    path.write_bytes(b"")
    assert OffsetCheckpointFile(path).read() == {}


def test_round_trip(tmp_path: Path) -> None:
    checkpoint = OffsetCheckpointFile(tmp_path / "recovery-point-offset-checkpoint")
    checkpoint.write({TopicPartition("t", 0): 12, TopicPartition("t", 1): 0})
    assert checkpoint.read() == {TopicPartition("t", 0): 12, TopicPartition("t", 1): 0}
    assert checkpoint.path.read_text() == "0\n2\nt 0 12\nt 1 0\n"


def test_header_without_count_is_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text("0\n")
    with pytest.raises(CheckpointError, match="missing version or entry count"):
        OffsetCheckpointFile(path).read()
