"""Model-based test of Log: a Hypothesis state machine against an in-memory oracle.

The oracle is the list of appended batches (the bytes as stored, after offset assignment)
and their records. Rules append, read, look up timestamps, roll, advance time, truncate,
delete records, run retention, and restart the log cleanly, after a crash, and after a crash
that left a torn tail. Small segment and index sizes make rolls (by size, by time and by a
full index) happen all the time.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

from franz.clock import ManualClock
from franz.config.topic import LogConfig
from franz.errors import OffsetOutOfRangeError
from franz.protocol.records.batch import RecordBatchView, iter_batches
from franz.protocol.records.compression import CompressionType
from franz.protocol.records.inflated import RecordBatchBuilder, iter_records
from franz.storage.files import TopicPartition
from franz.storage.log import Log

TP = TopicPartition("model", 0)


@dataclass
class StoredBatch:
    base: int
    last: int
    data: bytes
    timestamps: list[int]

    @property
    def next(self) -> int:
        return self.last + 1


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="franz-model-"))
        self.clock = ManualClock()
        self.config = LogConfig().with_overrides(
            {
                "segment.bytes": "3000",
                "segment.ms": "60000",
                "segment.index.bytes": "48",  # 6 offset entries / 4 time entries: full indexes roll
                "index.interval.bytes": "300",
                "retention.ms": "-1",
                "file.delete.delay.ms": "0",
            }
        )
        self.batches: list[StoredBatch] = []
        self.log_start = 0
        self.epoch = 0
        self.log = self._open(clean=True)

    def _open(self, *, clean: bool, recovery_point: int = 0) -> Log:
        return Log(
            self.tmp / TP.dir_name,
            TP,
            self.config,
            self.clock,
            recovery_point=recovery_point,
            log_start_offset=self.log_start,
            high_watermark=self.leo,
            had_clean_shutdown=clean,
        )

    @property
    def leo(self) -> int:
        if self.batches:
            return self.batches[-1].next
        return getattr(self, "_empty_leo", 0)

    def teardown(self) -> None:
        self.log.close_without_flush()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- rules -----------------------------------------------------------------------

    @rule(
        count=st.integers(1, 12),
        value_size=st.integers(0, 120),
        codec=st.sampled_from(list(CompressionType)),
        ts_jitter=st.integers(-5, 5),
        key_seed=st.integers(0, 1000),
    )
    def append(self, count, value_size, codec, ts_jitter, key_seed):
        builder = RecordBatchBuilder(compression=codec)
        now = self.clock.wall_ms()
        for i in range(count):
            key = None if (key_seed + i) % 5 == 0 else f"k{key_seed + i}".encode()
            builder.append(now + ts_jitter + i, key, bytes([i % 251]) * value_size)
        info = self.log.append_as_leader(builder.build(), leader_epoch=self.epoch)
        assert info.first_offset == self.leo
        assert info.last_offset == self.leo + count - 1
        stored = self.log.read(info.first_offset, 10**9).read_bytes()
        view = RecordBatchView(stored)
        assert view.base_offset == info.first_offset and view.partition_leader_epoch == self.epoch
        data = bytes(view.raw())
        timestamps = [r.timestamp for r in iter_records(view)]
        self.batches.append(StoredBatch(info.first_offset, info.last_offset, data, timestamps))
        self.log.update_high_watermark(self.log.log_end_offset)

    @rule()
    def bump_leader_epoch(self):
        self.epoch += 1

    @rule(ms=st.integers(1, 40000))
    def advance_time(self, ms):
        self.clock.advance(ms)

    @rule(data=st.data(), max_bytes=st.integers(1, 4000))
    def read(self, data, max_bytes):
        offset = data.draw(st.integers(self.log_start, self.leo))
        # The HW always lies on a batch boundary (followers copy whole batches).
        boundaries = [b.base for b in self.batches if b.base >= offset] + [self.leo]
        hw = data.draw(st.sampled_from(boundaries)) if data.draw(st.booleans()) else None
        got = self.log.read(offset, max_bytes, max_offset=hw).read_bytes()
        assert got == self._expected_read(offset, max_bytes, hw)

    def _expected_read(self, offset: int, max_bytes: int, limit: int | None) -> bytes:
        """Whole batches from the one holding ``offset``, within one segment (as Kafka)."""
        limit = self.leo if limit is None else limit
        if offset >= limit:
            return b""
        bases = [s.base_offset for s in self.log.segments]
        out: list[bytes] = []
        size = 0
        started = False
        segment_end = None
        for batch in self.batches:
            if batch.last < offset:
                continue
            if segment_end is None:
                segment_end = min((b for b in bases if b > batch.base), default=None)
            if batch.base >= limit or (segment_end is not None and batch.base >= segment_end):
                break
            if started and size + len(batch.data) > max_bytes:
                break
            if not started and len(batch.data) > max_bytes:
                return batch.data  # the first batch always goes (KIP-74)
            started = True
            out.append(batch.data)
            size += len(batch.data)
        return b"".join(out)

    @rule(data=st.data())
    def read_out_of_range(self, data):
        offset = data.draw(st.sampled_from([self.leo + 1, self.leo + 100, self.log_start - 1]))
        if offset < 0:
            return
        with pytest.raises(OffsetOutOfRangeError):
            self.log.read(offset, 1000)

    @rule(data=st.data())
    def lookup_by_timestamp(self, data):
        records = [
            (b.base + i, ts)
            for b in self.batches
            for i, ts in enumerate(b.timestamps)
            if b.base + i >= self.log_start
        ]
        if not records:
            assert self.log.fetch_offset_by_timestamp(self.clock.wall_ms()) is None
            return
        lo = min(ts for _, ts in records) - 3
        hi = max(ts for _, ts in records) + 3
        target = data.draw(st.integers(lo, hi))
        # The first record (by offset) whose batch reaches target, as Kafka answers.
        expected = None
        for batch in self.batches:
            if batch.last < self.log_start or max(batch.timestamps) < target:
                continue
            for i, ts in enumerate(batch.timestamps):
                if ts >= target and batch.base + i >= self.log_start:
                    expected = (ts, batch.base + i)
                    break
            if expected:
                break
        got = self.log.fetch_offset_by_timestamp(target)
        assert (None if got is None else (got.timestamp, got.offset)) == expected

    @rule()
    def roll(self):
        self.log.roll()

    @precondition(lambda self: len(self.batches) > 0)
    @rule(data=st.data())
    def truncate(self, data):
        candidates = [b.base for b in self.batches if b.base >= self.log_start]
        if not candidates:
            return
        target = data.draw(st.sampled_from(candidates))
        self.log.truncate_to(target)
        self.batches = [b for b in self.batches if b.base < target]
        self._empty_leo = target
        assert self.log.log_end_offset == target

    @precondition(lambda self: len(self.batches) > 0)
    @rule(data=st.data())
    def delete_records(self, data):
        target = data.draw(st.sampled_from([b.base for b in self.batches] + [self.leo]))
        if target < self.log_start:
            return
        self.log.maybe_increment_log_start_offset(target)
        self.log_start = target
        self.log.delete_old_segments()
        self.log.delete_expired_files()
        assert self.log.log_start_offset == target

    @rule()
    def restart_clean(self):
        self.log.close()
        self.log = self._open(clean=True, recovery_point=self.leo)

    @rule(stale_recovery_point=st.booleans())
    def restart_after_crash(self, stale_recovery_point):
        recovery_point = 0 if stale_recovery_point else self.log.recovery_point
        self.log.close_without_flush()
        self.log = self._open(clean=False, recovery_point=recovery_point)

    @rule(garbage=st.binary(min_size=1, max_size=200), half_batch=st.booleans())
    def restart_after_torn_write(self, garbage, half_batch):
        active = self.log.active_segment.log_path
        self.log.close_without_flush()
        with open(active, "ab") as f:
            if half_batch and self.batches:
                f.write(self.batches[-1].data[: len(self.batches[-1].data) // 2])
            else:
                f.write(garbage)
        self.log = self._open(clean=False, recovery_point=0)

    @precondition(lambda self: len(self.log.segments) > 1)
    @rule(data=st.data())
    def delete_an_index_file_then_restart(self, data):
        segment = data.draw(st.sampled_from(list(self.log.segments)))
        path = data.draw(st.sampled_from([segment.offset_index.path, segment.time_index.path]))
        self.log.close()
        os.unlink(path)
        self.log = self._open(clean=True, recovery_point=self.leo)
        assert path.exists()

    # -- invariants ------------------------------------------------------------------

    @invariant()
    def offsets_match_the_oracle(self):
        assert self.log.log_end_offset == self.leo
        assert self.log.log_start_offset == self.log_start
        assert self.log.log_start_offset <= self.log.high_watermark <= self.log.log_end_offset

    @invariant()
    def segments_are_contiguous_and_indexes_point_at_batches(self):
        segments = self.log.segments
        assert [s.base_offset for s in segments] == sorted(s.base_offset for s in segments)
        for segment in segments:
            segment.sanity_check()
            data = segment.read_bytes(0, segment.size)
            starts = {v.position: v for v in iter_batches(data)}
            for i in range(segment.offset_index.entries):
                offset, position = segment.offset_index.entry_at(i)
                assert position in starts and starts[position].last_offset == offset

    @invariant()
    def everything_from_log_start_reads_back(self):
        chunks, offset = [], self.log_start
        while offset < self.leo:
            chunk = self.log.read(offset, 10**9).read_bytes()
            assert chunk, f"empty read at {offset} below the LEO {self.leo}"
            chunks.append(chunk)
            offset = list(iter_batches(chunk))[-1].next_offset
        assert b"".join(chunks) == b"".join(
            b.data for b in self.batches if b.last >= self.log_start
        )


LogMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("FRANZ_MODEL_EXAMPLES", "60")),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_log_matches_oracle = LogMachine.TestCase
