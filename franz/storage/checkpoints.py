"""Checkpoint files, in Kafka's text format (``CheckpointFile`` / ``OffsetCheckpointFile``).

Per log dir: ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``replication-offset-checkpoint`` (high watermarks) and ``cleaner-offset-checkpoint`` (the
log cleaner's first dirty offset per compacted partition), each::

    0                      version
    2                      number of entries
    orders 0 1234          topic partition offset
    orders 1 987

Per partition: ``leader-epoch-checkpoint`` has the same header and ``epoch startOffset``
lines. An empty file holds no entries: Kafka's ``CheckpointFile`` creates the file empty
(Kafka's ``cleaner-offset-checkpoint`` stays so until a compacted log is cleaned) and reads
it as an empty list. Writes go to ``<file>.tmp``, are fsynced and renamed over the old file,
so a crash leaves either the old or the new checkpoint, never half of one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from franz.storage.files import TopicPartition

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT",
    "HIGH_WATERMARK_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_CHECKPOINT",
    "CheckpointError",
    "OffsetCheckpointFile",
    "read_checkpoint_lines",
    "write_checkpoint_lines",
]

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
_VERSION = 0

T = TypeVar("T")


class CheckpointError(Exception):
    """A malformed checkpoint file."""


def write_checkpoint_lines(path: Path, lines: Iterable[str]) -> None:
    entries = list(lines)
    body = f"{_VERSION}\n{len(entries)}\n" + "".join(line + "\n" for line in entries)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(body)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def read_checkpoint_lines(path: Path, parse: Callable[[list[str]], T], width: int) -> list[T]:
    """Read a checkpoint; each entry line has ``width`` space-separated fields."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    lines = text.splitlines()
    if not lines:
        return []
    if len(lines) < 2:
        raise CheckpointError(f"{path}: missing version or entry count")
    try:
        version = int(lines[0])
        count = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path}: malformed header {lines[:2]!r}") from None
    if version != _VERSION:
        raise CheckpointError(f"{path}: unrecognized version {version}")
    entries = [line for line in lines[2:] if line.strip()]
    if len(entries) != count:
        raise CheckpointError(f"{path}: expected {count} entries but found {len(entries)}")
    out: list[T] = []
    for line in entries:
        fields = line.split(" ")
        if len(fields) != width:
            raise CheckpointError(f"{path}: malformed line {line!r}")
        try:
            out.append(parse(fields))
        except ValueError:
            raise CheckpointError(f"{path}: malformed line {line!r}") from None
    return out


class OffsetCheckpointFile:
    """``topic partition offset`` entries for every partition in one log dir."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        write_checkpoint_lines(
            self.path, (f"{tp.topic} {tp.partition} {offset}" for tp, offset in offsets.items())
        )

    def read(self) -> dict[TopicPartition, int]:
        def parse(fields: list[str]) -> tuple[TopicPartition, int]:
            return TopicPartition(fields[0], int(fields[1])), int(fields[2])

        return dict(read_checkpoint_lines(self.path, parse, 3))


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
