"""TransactionCoordinator's decisions (Kafka 3.9's TransactionCoordinator rules), driven through
its two seams: a log writer that keeps the batches it is given (and can fail), and a marker
writer that answers per partition. Time is a ManualClock."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from franz.clock import ManualClock
from franz.coordinator.transaction.coordinator import (
    TransactionConfig,
    TransactionCoordinator,
    prepare_end,
)
from franz.coordinator.transaction.log_schema import decode_key, decode_value
from franz.coordinator.transaction.metadata import TransactionMetadata
from franz.coordinator.transaction.state_manager import TransactionStateManager
from franz.coordinator.transaction.states import TransactionState as S
from franz.errors import ErrorCode, NotEnoughReplicasError
from franz.protocol.records.batch import iter_batches
from franz.protocol.records.inflated import iter_records

TID = "tx"


class Log:
    """The coordinator's log: every record appended, per partition; ``fail`` raises once."""

    def __init__(self) -> None:
        self.records: dict[int, list[tuple[bytes, bytes | None]]] = {}
        self.fail: Exception | None = None

    async def append(self, partition: int, batch: bytearray) -> None:
        if self.fail is not None:
            exc, self.fail = self.fail, None
            raise exc
        for view in iter_batches(bytes(batch)):
            for r in iter_records(view):
                value = None if r.value is None else bytes(r.value)
                self.records.setdefault(partition, []).append((bytes(r.key or b""), value))


class Markers:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int, int, bool, list[tuple[str, int]]]] = []
        self.answers: list[dict[tuple[str, int], ErrorCode]] = []

    async def write_markers(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        partitions: Sequence[tuple[str, int]],
    ) -> dict[tuple[str, int], ErrorCode]:
        self.calls.append(
            (producer_id, producer_epoch, coordinator_epoch, commit, list(partitions))
        )
        if self.answers:
            answer = self.answers.pop(0)
            return {tp: answer.get(tp, ErrorCode.NONE) for tp in partitions}
        return dict.fromkeys(partitions, ErrorCode.NONE)


def _coordinator(
    max_timeout_ms: int = 900_000,
) -> tuple[TransactionCoordinator, Log, Markers, ManualClock]:
    log, markers, clock = Log(), Markers(), ManualClock()
    state = TransactionStateManager(log, partition_count=1)
    state.load_partition(0, coordinator_epoch=7, records=[])
    ids = iter(range(1000, 2000))
    coordinator = TransactionCoordinator(
        TransactionConfig(transaction_max_timeout_ms=max_timeout_ms),
        state,
        markers,
        lambda: next(ids),
        clock,
    )
    return coordinator, log, markers, clock


async def _settle(coordinator: TransactionCoordinator) -> None:
    for _ in range(50):
        await asyncio.sleep(0)
        if not coordinator._tasks:
            return


def _state(coordinator: TransactionCoordinator) -> TransactionMetadata:
    current = coordinator.state.get(TID)
    assert current is not None and not isinstance(current, ErrorCode)
    return current.metadata


def run(coro):
    return asyncio.run(coro)


def test_init_producer_id_creates_and_bumps():
    async def go() -> None:
        c, log, _, _ = _coordinator()
        first = await c.handle_init_producer_id(TID, 60_000, None)
        assert (first.error, first.producer_id, first.producer_epoch) == (ErrorCode.NONE, 1000, 0)
        second = await c.handle_init_producer_id(TID, 60_000, None)
        assert (second.producer_id, second.producer_epoch) == (1000, 1)
        key, value = log.records[0][-1]
        assert decode_key(key) == TID
        assert value is not None
        stored = decode_value(value)
        assert (stored.producer_id, stored.producer_epoch, stored.state) == (1000, 1, S.EMPTY)

    run(go())


@pytest.mark.parametrize("timeout_ms", [0, -1, 900_001])
def test_invalid_transaction_timeout(timeout_ms):
    c, _, _, _ = _coordinator()
    result = run(c.handle_init_producer_id(TID, timeout_ms, None))
    assert result.error is ErrorCode.INVALID_TRANSACTION_TIMEOUT


def test_empty_transactional_id_is_invalid_request():
    c, _, _, _ = _coordinator()
    assert run(c.handle_init_producer_id("", 1000, None)).error is ErrorCode.INVALID_REQUEST


def test_kip360_expected_producer():
    async def go() -> None:
        c, _, _, _ = _coordinator()
        await c.handle_init_producer_id(TID, 60_000, None)
        bumped = await c.handle_init_producer_id(TID, 60_000, (1000, 0))
        assert (bumped.error, bumped.producer_epoch) == (ErrorCode.NONE, 1)
        # A retry with the old epoch after the bump succeeded: same answer.
        retried = await c.handle_init_producer_id(TID, 60_000, (1000, 0))
        assert (retried.error, retried.producer_epoch) == (ErrorCode.NONE, 1)
        fenced = await c.handle_init_producer_id(TID, 60_000, (999, 0))
        assert fenced.error is ErrorCode.PRODUCER_FENCED

    run(go())


def test_commit_writes_markers_then_complete_commit():
    async def go() -> None:
        c, log, markers, _ = _coordinator()
        init = await c.handle_init_producer_id(TID, 60_000, None)
        pid = init.producer_id
        parts = [("t", 0), ("t", 1)]
        assert await c.handle_add_partitions(TID, pid, 0, parts) is ErrorCode.NONE
        assert _state(c).state is S.ONGOING
        # Already in the transaction: NONE without a log write.
        before = len(log.records[0])
        assert await c.handle_add_partitions(TID, pid, 0, parts[:1]) is ErrorCode.NONE
        assert len(log.records[0]) == before
        assert await c.handle_end_txn(TID, pid, 0, commit=True) is ErrorCode.NONE
        await _settle(c)
        assert markers.calls == [(pid, 0, 7, True, parts)]
        assert _state(c).state is S.COMPLETE_COMMIT
        states = [decode_value(v).state for _, v in log.records[0] if v is not None]
        assert states[-3:] == [S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]
        assert await c.handle_end_txn(TID, pid, 0, commit=True) is ErrorCode.NONE
        assert await c.handle_end_txn(TID, pid, 0, commit=False) is ErrorCode.INVALID_TXN_STATE

    run(go())


def test_marker_errors_are_retried_and_fencing_stops_the_sending():
    async def go() -> None:
        c, _, markers, _ = _coordinator()
        pid = (await c.handle_init_producer_id(TID, 60_000, None)).producer_id
        await c.handle_add_partitions(TID, pid, 0, [("t", 0), ("t", 1)])
        markers.answers = [{("t", 1): ErrorCode.NOT_LEADER_OR_FOLLOWER}]
        await c.handle_end_txn(TID, pid, 0, commit=False)
        for _ in range(100):
            await asyncio.sleep(0.01)
            if _state(c).state is S.COMPLETE_ABORT:
                break
        assert [call[4] for call in markers.calls] == [[("t", 0), ("t", 1)], [("t", 1)]]
        assert _state(c).state is S.COMPLETE_ABORT
        await c.handle_add_partitions(TID, pid, 0, [("t", 0)])
        markers.answers = [{("t", 0): ErrorCode.TRANSACTION_COORDINATOR_FENCED}]
        await c.handle_end_txn(TID, pid, 0, commit=True)
        await _settle(c)
        assert _state(c).state is S.PREPARE_COMMIT  # left to the newer coordinator

    run(go())


def test_add_partitions_errors():
    async def go() -> None:
        c, log, _, _ = _coordinator()
        assert await c.handle_add_partitions(TID, 1, 0, [("t", 0)]) is (
            ErrorCode.INVALID_PRODUCER_ID_MAPPING
        )
        pid = (await c.handle_init_producer_id(TID, 60_000, None)).producer_id
        assert await c.handle_add_partitions(TID, pid + 1, 0, [("t", 0)]) is (
            ErrorCode.INVALID_PRODUCER_ID_MAPPING
        )
        assert await c.handle_add_partitions(TID, pid, 1, [("t", 0)]) is ErrorCode.PRODUCER_FENCED
        log.fail = NotEnoughReplicasError("isr")
        assert await c.handle_add_partitions(TID, pid, 0, [("t", 0)]) is (
            ErrorCode.COORDINATOR_NOT_AVAILABLE
        )
        assert _state(c).pending_state is None and _state(c).state is S.EMPTY
        # Kafka 3.8+: TRANSACTION_ABORTABLE; the leader maps it for older clients.
        assert c.verify_partitions(TID, pid, 0, [("t", 0)]) == {
            ("t", 0): ErrorCode.TRANSACTION_ABORTABLE
        }
        await c.handle_add_partitions(TID, pid, 0, [("t", 0)])
        assert c.verify_partitions(TID, pid, 0, [("t", 0)]) == {("t", 0): ErrorCode.NONE}

    run(go())


def test_init_during_ongoing_fences_aborts_and_answers_concurrent_transactions():
    async def go() -> None:
        c, _, markers, _ = _coordinator()
        pid = (await c.handle_init_producer_id(TID, 60_000, None)).producer_id
        await c.handle_add_partitions(TID, pid, 0, [("t", 0)])
        answer = await c.handle_init_producer_id(TID, 60_000, None)
        assert answer.error is ErrorCode.CONCURRENT_TRANSACTIONS
        assert _state(c).producer_epoch == 1
        await _settle(c)
        assert markers.calls[-1][:4] == (pid, 1, 7, False)
        assert _state(c).state is S.COMPLETE_ABORT
        again = await c.handle_init_producer_id(TID, 60_000, None)
        assert (again.error, again.producer_epoch) == (ErrorCode.NONE, 2)

    run(go())


def test_timed_out_transaction_is_aborted_with_a_bumped_epoch():
    async def go() -> None:
        c, _, _, clock = _coordinator()
        pid = (await c.handle_init_producer_id(TID, 1000, None)).producer_id
        await c.handle_add_partitions(TID, pid, 0, [("t", 0)])
        assert await c.abort_timed_out_transactions() == 0
        clock.advance(1001)
        assert await c.abort_timed_out_transactions() == 1
        await _settle(c)
        assert (_state(c).state, _state(c).producer_epoch) == (S.COMPLETE_ABORT, 1)
        assert await c.handle_end_txn(TID, pid, 0, commit=True) is ErrorCode.PRODUCER_FENCED

    run(go())


def test_expired_transactional_id_is_tombstoned():
    async def go() -> None:
        c, log, _, clock = _coordinator()
        await c.handle_init_producer_id(TID, 1000, None)
        clock.advance(c.config.transactional_id_expiration_ms + 1)
        assert await c.remove_expired_transactional_ids() == 1
        assert log.records[0][-1] == (log.records[0][-1][0], None)
        assert c.state.get(TID) is None

    run(go())


def test_load_replays_latest_values_and_tombstones():
    async def go() -> None:
        c, log, _, _ = _coordinator()
        pid = (await c.handle_init_producer_id(TID, 60_000, None)).producer_id
        await c.handle_add_partitions(TID, pid, 0, [("t", 3)])
        state = TransactionStateManager(log, partition_count=1)
        state.begin_loading(0, 8)
        assert state.get(TID) is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        (loaded,) = state.load_partition(0, 8, log.records[0])
        assert (loaded.state, loaded.topic_partitions, loaded.producer_id) == (
            S.ONGOING,
            {("t", 3)},
            pid,
        )
        state.unload_partition(0)
        assert state.get(TID) is ErrorCode.NOT_COORDINATOR

    run(go())


@pytest.mark.parametrize(
    ("state", "commit", "expected"),
    [
        (S.COMPLETE_COMMIT, True, ErrorCode.NONE),
        (S.COMPLETE_COMMIT, False, ErrorCode.INVALID_TXN_STATE),
        (S.COMPLETE_ABORT, False, ErrorCode.NONE),
        (S.COMPLETE_ABORT, True, ErrorCode.INVALID_TXN_STATE),
        (S.PREPARE_COMMIT, True, ErrorCode.CONCURRENT_TRANSACTIONS),
        (S.PREPARE_COMMIT, False, ErrorCode.INVALID_TXN_STATE),
        (S.PREPARE_ABORT, False, ErrorCode.CONCURRENT_TRANSACTIONS),
        (S.PREPARE_ABORT, True, ErrorCode.INVALID_TXN_STATE),
        (S.EMPTY, True, ErrorCode.INVALID_TXN_STATE),
    ],
)
def test_end_txn_retry_rules(state, commit, expected):
    metadata = TransactionMetadata.create(TID, 5, 2, 60_000, 0, state=state)
    assert prepare_end(metadata, 5, 2, commit, True, 10) is expected


def test_end_txn_epoch_rules():
    metadata = TransactionMetadata.create(TID, 5, 2, 60_000, 0, state=S.ONGOING)
    assert prepare_end(metadata, 6, 2, True, True, 10) is ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert prepare_end(metadata, 5, 3, True, True, 10) is ErrorCode.PRODUCER_FENCED
    assert prepare_end(metadata, 5, 1, False, False, 10) is ErrorCode.PRODUCER_FENCED
    prepared = prepare_end(metadata, 5, 2, True, True, 10)
    assert not isinstance(prepared, ErrorCode)
    assert prepared[0].txn_state is S.PREPARE_COMMIT and prepared[1] is False


def test_waiting_transactions_are_counted_for_the_marker_channel_gauges():
    """Kafka's TransactionMarkerChannelManager gauges: UnknownDestinationQueueSize (markers
    waiting for a leader) and LogAppendRetryQueueSize (a Complete* append to retry)."""

    async def go() -> None:
        c, log, markers, _ = _coordinator()
        pid = (await c.handle_init_producer_id(TID, 60_000, None)).producer_id
        await c.handle_add_partitions(TID, pid, 0, [("t", 0), ("t", 1)])
        markers.answers = [{("t", 1): ErrorCode.LEADER_NOT_AVAILABLE}]
        await c.handle_end_txn(TID, pid, 0, commit=True)
        log.fail = NotEnoughReplicasError("isr")  # the Complete* append, once
        await _settle(c)
        assert c.awaiting_leader == {TID}  # retrying after the backoff
        assert c.awaiting_log_append == set()
        for _ in range(100):
            await asyncio.sleep(0.01)
            if c.awaiting_log_append:
                break
        assert c.awaiting_log_append == {TID} and c.awaiting_leader == set()
        for _ in range(100):
            await asyncio.sleep(0.01)
            if _state(c).state is S.COMPLETE_COMMIT:
                break
        await _settle(c)
        assert _state(c).state is S.COMPLETE_COMMIT
        assert c.awaiting_leader == set() and c.awaiting_log_append == set()

    run(go())
