"""The leader epoch cache: which leader epoch began at which offset (``LeaderEpochFileCache``).

Kept in ``<partition dir>/leader-epoch-checkpoint`` (``franz.storage.checkpoints`` format,
lines ``epoch startOffset``), rewritten whenever it changes. Epochs and start offsets both
strictly increase. It answers OffsetForLeaderEpoch (KIP-101, KIP-279): the end offset of an
epoch is the start offset of the next one, or the log end offset for the latest epoch.
"""

from __future__ import annotations

import bisect
import logging
from pathlib import Path
from typing import NamedTuple

from franz.storage.checkpoints import read_checkpoint_lines, write_checkpoint_lines

__all__ = ["LEADER_EPOCH_CHECKPOINT", "EpochEntry", "LeaderEpochFileCache"]

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1

log = logging.getLogger(__name__)


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochFileCache:
    def __init__(self, partition_dir: Path) -> None:
        self.path = partition_dir / LEADER_EPOCH_CHECKPOINT
        self._entries: list[EpochEntry] = read_checkpoint_lines(
            self.path, lambda f: EpochEntry(int(f[0]), int(f[1])), 2
        )

    @property
    def entries(self) -> list[EpochEntry]:
        return list(self._entries)

    @property
    def latest_epoch(self) -> int:
        return self._entries[-1].epoch if self._entries else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (no-op if already latest)."""
        if epoch < 0:
            return
        if self._entries and self._entries[-1].epoch >= epoch:
            return
        # A new epoch starting at or before an existing start offset supersedes those entries.
        while self._entries and self._entries[-1].start_offset >= start_offset:
            self._entries.pop()
        self._entries.append(EpochEntry(epoch, start_offset))
        self._flush()

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) of ``requested_epoch``, Kafka's ``LeaderEpochFileCache.
        endOffsetFor``; (-1, -1) (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET) if unknown.

        * -1 (a bootstrapping follower, an old message format) or an empty cache: unknown;
        * the latest epoch: the log end offset (the epoch is still being written);
        * an epoch with a higher one cached: the largest cached epoch at or below it and the
          start offset of the first higher one; below every cached epoch (their data was
          deleted), the requested epoch itself with the first entry's start offset;
        * above the latest epoch: unknown.
        """
        if requested_epoch == UNDEFINED_EPOCH or not self._entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch == self.latest_epoch:
            return requested_epoch, log_end_offset
        epochs = [e.epoch for e in self._entries]
        higher = bisect.bisect_right(epochs, requested_epoch)
        if higher == len(self._entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, self._entries[0].start_offset
        return self._entries[higher - 1].epoch, self._entries[higher].start_offset

    def truncate_from_end(self, end_offset: int) -> None:
        """Drop entries starting at or after ``end_offset`` (the log was truncated)."""
        before = len(self._entries)
        while self._entries and self._entries[-1].start_offset >= end_offset:
            self._entries.pop()
        if len(self._entries) != before:
            self._flush()

    def truncate_from_start(self, start_offset: int) -> None:
        """Drop entries wholly before ``start_offset``; the one covering it starts there."""
        keep = [e for e in self._entries if e.start_offset >= start_offset]
        covering = [e for e in self._entries if e.start_offset < start_offset]
        if covering and (not keep or keep[0].start_offset > start_offset):
            keep.insert(0, EpochEntry(covering[-1].epoch, start_offset))
        if keep != self._entries:
            self._entries = keep
            self._flush()

    def clear(self) -> None:
        if self._entries:
            self._entries = []
            self._flush()

    def _flush(self) -> None:
        write_checkpoint_lines(self.path, (f"{e.epoch} {e.start_offset}" for e in self._entries))
