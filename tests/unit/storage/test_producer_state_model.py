"""Model-based test of idempotent-producer state: a Hypothesis state machine and an oracle.

The oracle is the list of batches in the log (producer id, epoch, sequences, offsets). Rules
append in-order batches (bumping epochs now and then), plain batches, retries of earlier
batches, out-of-order batches, and roll, truncate, restart cleanly, crash, and corrupt the
latest snapshot. Invariants: the log end offset is the oracle's, and every producer's state
ends with the oracle's last batch of that producer (and producers with no batch left have no
state). Retries are never stored twice: they are acknowledged with the original offsets or
refused.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from franz.clock import ManualClock
from franz.config.topic import LogConfig
from franz.errors import InvalidProducerEpochError, OutOfOrderSequenceError, UnknownProducerIdError
from franz.protocol.records.inflated import RecordBatchBuilder
from franz.storage.files import TopicPartition
from franz.storage.log import Log

TP = TopicPartition("idempotent", 0)
PRODUCERS = (11, 12, 13)


@dataclass(frozen=True)
class Stored:
    pid: int  # -1: a plain batch
    epoch: int
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int


def _batch(pid: int, epoch: int, seq: int, count: int, ts: int) -> bytearray:
    builder = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq)
    for _ in range(count):
        builder.append(ts, None, b"x" * 40)
    return builder.build()


class ProducerStateMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="franz-producers-"))
        self.clock = ManualClock()
        self.config = LogConfig().with_overrides({"segment.bytes": "1200"})
        self.batches: list[Stored] = []
        self.log = self._open(clean=True)

    def _open(self, *, clean: bool) -> Log:
        return Log(self.tmp / TP.dir_name, TP, self.config, self.clock, had_clean_shutdown=clean)

    def teardown(self) -> None:
        self.log.close_without_flush()
        shutil.rmtree(self.tmp, ignore_errors=True)

    @property
    def leo(self) -> int:
        return self.batches[-1].last_offset + 1 if self.batches else 0

    def _last(self, pid: int) -> Stored | None:
        for stored in reversed(self.batches):
            if stored.pid == pid:
                return stored
        return None

    # -- rules ---------------------------------------------------------------------------

    @rule(pid=st.sampled_from(PRODUCERS), count=st.integers(1, 5), bump=st.booleans())
    def append_next(self, pid: int, count: int, bump: bool) -> None:
        last = self._last(pid)
        if last is None:
            epoch, seq = (1 if bump else 0), 0
        elif bump:
            epoch, seq = last.epoch + 1, 0
        else:
            epoch, seq = last.epoch, last.last_seq + 1
        info = self.log.append_as_leader(_batch(pid, epoch, seq, count, self.clock.wall_ms()), 0)
        assert not info.duplicate
        assert (info.first_offset, info.last_offset) == (self.leo, self.leo + count - 1)
        self.batches.append(
            Stored(pid, epoch, seq, seq + count - 1, info.first_offset, info.last_offset)
        )

    @rule(count=st.integers(1, 5))
    def append_plain(self, count: int) -> None:
        builder = RecordBatchBuilder()
        for _ in range(count):
            builder.append(self.clock.wall_ms(), None, b"p")
        info = self.log.append_as_leader(builder.build(), 0)
        self.batches.append(Stored(-1, -1, -1, -1, info.first_offset, info.last_offset))

    @precondition(lambda self: any(b.pid >= 0 for b in self.batches))
    @rule(data=st.data())
    def retry(self, data: st.DataObject) -> None:
        original = data.draw(st.sampled_from([b for b in self.batches if b.pid >= 0]))
        count = original.last_seq - original.first_seq + 1
        leo = self.leo
        retried = _batch(original.pid, original.epoch, original.first_seq, count, 0)
        last = self._last(original.pid)
        assert last is not None
        try:
            info = self.log.append_as_leader(retried, 0)
        except InvalidProducerEpochError:
            assert original.epoch < last.epoch
        except OutOfOrderSequenceError:
            assert original != last, "the last batch of a producer is always recognised"
        else:
            assert info.duplicate
            assert (info.first_offset, info.last_offset) == (
                original.first_offset,
                original.last_offset,
            )
        assert self.log.log_end_offset == leo

    @rule(pid=st.sampled_from(PRODUCERS), gap=st.integers(1, 3))
    def append_out_of_order(self, pid: int, gap: int) -> None:
        last = self._last(pid)
        seq = (last.last_seq if last else -1) + 1 + gap
        epoch = last.epoch if last else 0
        try:
            self.log.append_as_leader(_batch(pid, epoch, seq, 1, self.clock.wall_ms()), 0)
        except (OutOfOrderSequenceError, UnknownProducerIdError) as exc:
            assert isinstance(exc, UnknownProducerIdError) == (last is None)
        else:
            raise AssertionError("an out-of-order batch was appended")

    @rule()
    def roll(self) -> None:
        self.log.roll()

    @precondition(lambda self: self.batches)
    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        offset = data.draw(st.integers(0, self.leo))
        self.log.truncate_to(offset)
        self.batches = [b for b in self.batches if b.last_offset < offset]

    @rule()
    def restart_cleanly(self) -> None:
        self.log.close()
        self.log = self._open(clean=True)

    @rule()
    def crash(self) -> None:
        self.log.close_without_flush()
        self.log = self._open(clean=False)

    @rule()
    def corrupt_latest_snapshot_and_restart(self) -> None:
        self.log.close()
        snapshots = sorted(self.log.dir.glob("*.snapshot"))
        if snapshots:
            data = bytearray(snapshots[-1].read_bytes())
            data[-1] ^= 0xFF
            snapshots[-1].write_bytes(bytes(data))
        self.log = self._open(clean=True)

    @rule(ms=st.integers(1, 10_000))
    def advance_time(self, ms: int) -> None:
        self.clock.advance(ms)

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def log_end_offset_matches(self) -> None:
        assert self.log.log_end_offset == self.leo

    @invariant()
    def every_producer_ends_with_its_last_batch(self) -> None:
        for pid in PRODUCERS:
            last = self._last(pid)
            entry = self.log.producer_state.last_entry(pid)
            if last is None:
                assert entry is None
                continue
            assert entry is not None and entry.batches
            newest = entry.batches[-1]
            assert (entry.producer_epoch, newest.first_seq, newest.last_seq) == (
                last.epoch,
                last.first_seq,
                last.last_seq,
            )
            assert (newest.first_offset, newest.last_offset) == (
                last.first_offset,
                last.last_offset,
            )

    @invariant()
    def no_snapshot_above_the_log_end_offset(self) -> None:
        assert all(o <= self.leo for o in self.log.producer_state.snapshot_offsets)


ProducerStateMachine.TestCase.settings = settings(
    max_examples=int(os.environ.get("FRANZ_MODEL_EXAMPLES", "60")),
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_producer_state_matches_oracle = ProducerStateMachine.TestCase
