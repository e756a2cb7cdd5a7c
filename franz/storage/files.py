"""Kafka's file and directory names in a log dir (``LogFileUtils`` / ``UnifiedLog``).

Segment files are named by their base offset, zero-padded to 20 digits (the width of
Long.MAX_VALUE), so a directory listing sorts them by offset::

    <log.dir>/<topic>-<partition>/00000000000000000000.log
                                 /00000000000000000000.index
                                 /00000000000000000000.timeindex
                                 /00000000000000000045.snapshot

Producer-state snapshots (``SNAPSHOT_SUFFIX``, ``franz.storage.producer_state``) are named
the same way after the offset they were taken at (the log end offset then).

Suffixes mark a file's life cycle: ``.deleted`` (scheduled for deletion after
``file.delete.delay.ms``), ``.cleaned`` and ``.swap`` (compaction in progress). A partition
directory being deleted is renamed ``<topic>-<partition>.<uuid>-delete``; a future replica
(a replica being moved to another log dir, KIP-113) lives in
``<topic>-<partition>.<uuid>-future`` of its target dir until it replaces the current one
(Kafka's ``UnifiedLog.logFutureDirName``; the uuid is 32 hex digits, Java's
``UUID.randomUUID`` without dashes).
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

__all__ = [
    "CLEANED_SUFFIX",
    "DELETED_SUFFIX",
    "DELETE_DIR_SUFFIX",
    "FUTURE_DIR_SUFFIX",
    "INDEX_SUFFIX",
    "LOG_SUFFIX",
    "SNAPSHOT_SUFFIX",
    "SWAP_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "TXN_INDEX_SUFFIX",
    "TopicPartition",
    "delete_dir_name",
    "file_name_prefix",
    "future_dir_name",
    "offset_from_file_name",
    "parse_future_dir_name",
    "parse_partition_dir_name",
    "segment_file",
]

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETE_DIR_SUFFIX = "-delete"
FUTURE_DIR_SUFFIX = "-future"

# Kafka's legal topic names: [a-zA-Z0-9._-], 1..249 characters.
_TOPIC = r"[a-zA-Z0-9._-]{1,249}"
_PARTITION_DIR = re.compile(rf"^({_TOPIC})-(\d+)$")
_FUTURE_DIR = re.compile(rf"^({_TOPIC})-(\d+)\.[0-9a-f]{{32}}{FUTURE_DIR_SUFFIX}$")


class TopicPartition(tuple[str, int]):
    """``(topic, partition)``, printed as Kafka prints it: ``topic-partition``."""

    __slots__ = ()

    def __new__(cls, topic: str, partition: int) -> TopicPartition:
        return super().__new__(cls, (topic, partition))

    @property
    def topic(self) -> str:
        return self[0]

    @property
    def partition(self) -> int:
        return self[1]

    @property
    def dir_name(self) -> str:
        return f"{self[0]}-{self[1]}"

    def __repr__(self) -> str:
        return f"{self[0]}-{self[1]}"

    __str__ = __repr__


def file_name_prefix(offset: int) -> str:
    """The 20-digit zero-padded offset that names a segment's files."""
    return f"{offset:020d}"


def segment_file(directory: Path, base_offset: int, suffix: str) -> Path:
    return directory / (file_name_prefix(base_offset) + suffix)


def offset_from_file_name(name: str) -> int:
    """The base offset a segment file is named after (``00..0123.log`` -> 123)."""
    stem = name.split(".", 1)[0]
    if len(stem) != 20 or not stem.isdigit():
        raise ValueError(f"{name!r} is not named after a 20-digit offset")
    return int(stem)


def parse_partition_dir_name(name: str) -> TopicPartition | None:
    """``<topic>-<partition>`` -> TopicPartition; None for anything else (incl. ``-delete``)."""
    match = _PARTITION_DIR.match(name)
    if match is None:
        return None
    return TopicPartition(match.group(1), int(match.group(2)))


def delete_dir_name(tp: TopicPartition) -> str:
    """Kafka's name for a partition dir awaiting deletion: ``topic-0.<uuid hex>-delete``."""
    return f"{tp.dir_name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}"


def future_dir_name(tp: TopicPartition) -> str:
    """Kafka's name for a future replica's dir: ``topic-0.<uuid hex>-future``."""
    return f"{tp.dir_name}.{uuid.uuid4().hex}{FUTURE_DIR_SUFFIX}"


def parse_future_dir_name(name: str) -> TopicPartition | None:
    """``<topic>-<partition>.<uuid hex>-future`` -> TopicPartition; None for anything else."""
    match = _FUTURE_DIR.match(name)
    if match is None:
        return None
    return TopicPartition(match.group(1), int(match.group(2)))
