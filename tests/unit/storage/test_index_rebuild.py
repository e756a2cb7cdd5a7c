"""Rebuilding a deleted index of a segment whose appends spanned a restart.

An append's index entries count the bytes since the last entry from 0 again after a segment
is reopened, so a rebuild over the whole segment can want more entries than the appends made.
With a small ``segment.index.bytes`` (the segment rolled because its index was full) the
rebuilt index then fills up before the segment ends. Found by ``test_log_model``'s state
machine: loading the log failed with ``IndexFullError`` / "time index is full".
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from franz.clock import ManualClock
from franz.config.topic import LogConfig
from franz.protocol.records.batch import RecordBatchView
from franz.protocol.records.inflated import RecordBatchBuilder
from franz.storage.files import TopicPartition
from franz.storage.log import Log

TP = TopicPartition("rebuild", 0)
CONFIG = LogConfig().with_overrides(
    {
        "segment.bytes": "100000",
        "segment.index.bytes": "48",  # 6 offset entries, 4 time entries (3 before it rolls)
        "index.interval.bytes": "300",
        "retention.ms": "-1",
        "file.delete.delay.ms": "0",
    }
)


def open_log(directory: Path, clock: ManualClock, leo: int) -> Log:
    return Log(
        directory / TP.dir_name,
        TP,
        CONFIG,
        clock,
        recovery_point=leo,
        log_start_offset=0,
        high_watermark=leo,
        had_clean_shutdown=True,
    )


def append(log: Log, clock: ManualClock) -> None:
    """One ~400-byte batch (more than index.interval.bytes) with a newer timestamp."""
    clock.advance(1)
    builder = RecordBatchBuilder()
    builder.append(clock.wall_ms(), b"k", b"v" * 350)
    log.append_as_leader(builder.build(), leader_epoch=0)
    log.update_high_watermark(log.log_end_offset)


@pytest.mark.parametrize("index", ["offset", "time", "both"])
def test_a_rebuilt_index_that_fills_up_does_not_fail_the_load(tmp_path: Path, index: str) -> None:
    clock = ManualClock()
    log = open_log(tmp_path, clock, 0)
    for _ in range(2):
        append(log, clock)
    log.close()
    log = open_log(tmp_path, clock, log.log_end_offset)  # the append's byte count restarts
    for _ in range(30):
        if len(log.segments) > 1:
            break
        append(log, clock)
    assert len(log.segments) > 1, "the first segment never rolled on a full index"
    first = log.segments[0]
    paths = {"offset": [first.offset_index.path], "time": [first.time_index.path]}
    paths["both"] = paths["offset"] + paths["time"]
    leo = log.log_end_offset
    log.close()
    for path in paths[index]:
        os.unlink(path)

    log = open_log(tmp_path, clock, leo)
    try:
        assert log.log_end_offset == leo
        for offset in range(leo):  # every record still found through the rebuilt index
            data = log.read(offset, 10**6).read_bytes()
            view = RecordBatchView(data)
            assert view.base_offset <= offset <= view.last_offset
    finally:
        log.close()
