"""``franz.coordinator.transaction.states`` and ``metadata``: Kafka 3.9's transaction states,
``TransactionMetadata``'s prepare/complete transitions and their checks."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from franz.coordinator.transaction.log_schema import (
    TransactionLogRecordError,
    TransactionLogValue,
    decode_value,
    encode_value,
)
from franz.coordinator.transaction.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    IllegalTransactionStateError,
    TransactionMetadata,
    TxnTransitMetadata,
    is_epoch_exhausted,
    metadata_from_value,
    value_for_transit,
)
from franz.coordinator.transaction.states import (
    VALID_PREVIOUS_STATES,
    TransactionState,
    UnknownTransactionStateError,
    can_transition,
)
from franz.errors import ErrorCode

S = TransactionState
ALL_STATES = list(TransactionState)
T0 = 1_700_000_000_000


# --- states ----------------------------------------------------------------------------------


def test_state_ids_and_names_are_kafkas() -> None:
    assert [(s.value, s.kafka_name) for s in TransactionState] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]
    for s in TransactionState:
        assert TransactionState.from_id(s.value) is s
        assert TransactionState.from_name(s.kafka_name) is s
    assert TransactionState.from_name("Unknown") is None
    with pytest.raises(UnknownTransactionStateError, match="Unknown transaction state id 8"):
        TransactionState.from_id(8)


def test_valid_previous_states_are_kafkas() -> None:
    assert dict(VALID_PREVIOUS_STATES) == {
        S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.PREPARE_COMMIT: {S.ONGOING},
        S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
        S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
        S.COMPLETE_ABORT: {S.PREPARE_ABORT},
        S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
        S.PREPARE_EPOCH_FENCE: {S.ONGOING},
    }
    assert can_transition(S.ONGOING, S.PREPARE_COMMIT)
    assert not can_transition(S.EMPTY, S.PREPARE_COMMIT)
    assert S.ONGOING.valid_previous_states == VALID_PREVIOUS_STATES[S.ONGOING]


def test_expirable_and_pending_states() -> None:
    assert {s for s in S if s.is_expiration_allowed} == {
        S.EMPTY,
        S.COMPLETE_COMMIT,
        S.COMPLETE_ABORT,
    }
    assert {s for s in S if s.has_pending_transaction} == {
        S.ONGOING,
        S.PREPARE_ABORT,
        S.PREPARE_COMMIT,
    }


# --- helpers ---------------------------------------------------------------------------------


def metadata_in(
    state: TransactionState,
    *,
    producer_id: int = 1000,
    epoch: int = 5,
    last_epoch: int = NO_PRODUCER_EPOCH,
) -> TransactionMetadata:
    """A settled metadata in ``state``, partitions as that state may hold them."""
    partitions = (
        {("t", 0), ("u", 1)}
        if state in (S.ONGOING, S.PREPARE_COMMIT, S.PREPARE_ABORT, S.PREPARE_EPOCH_FENCE)
        else set()
    )
    return TransactionMetadata(
        transactional_id="txn",
        producer_id=producer_id,
        last_producer_id=NO_PRODUCER_ID,
        producer_epoch=epoch,
        last_producer_epoch=last_epoch,
        txn_timeout_ms=60000,
        state=state,
        topic_partitions=partitions,
        txn_start_timestamp=T0 if state is not S.EMPTY else -1,
        txn_last_update_timestamp=T0 + 10,
    )


def snapshot(m: TransactionMetadata) -> tuple[object, ...]:
    return (
        m.producer_id,
        m.last_producer_id,
        m.producer_epoch,
        m.last_producer_epoch,
        m.txn_timeout_ms,
        m.state,
        frozenset(m.topic_partitions),
        m.txn_start_timestamp,
        m.txn_last_update_timestamp,
        m.pending_state,
    )


Prepare = Callable[[TransactionMetadata], TxnTransitMetadata]

PREPARES: dict[str, tuple[Prepare, Callable[[TransactionState], TransactionState]]] = {
    "increment_epoch": (
        lambda m: _transit(m.prepare_increment_producer_epoch(30000, None, T0 + 100)),
        lambda s: S.EMPTY,
    ),
    "rotate_producer_id": (
        lambda m: m.prepare_producer_id_rotation(2000, 30000, T0 + 100, True),
        lambda s: S.EMPTY,
    ),
    "add_partitions": (
        lambda m: m.prepare_add_partitions([("v", 2)], T0 + 100),
        lambda s: S.ONGOING,
    ),
    "commit": (
        lambda m: m.prepare_abort_or_commit(S.PREPARE_COMMIT, T0 + 100),
        lambda s: S.PREPARE_COMMIT,
    ),
    "abort": (
        lambda m: m.prepare_abort_or_commit(S.PREPARE_ABORT, T0 + 100),
        lambda s: S.PREPARE_ABORT,
    ),
    "complete": (
        lambda m: m.prepare_complete(T0 + 100),
        lambda s: S.COMPLETE_COMMIT if s is S.PREPARE_COMMIT else S.COMPLETE_ABORT,
    ),
    "dead": (lambda m: m.prepare_dead(), lambda s: S.DEAD),
    "fence": (lambda m: m.prepare_fence_producer_epoch(), lambda s: S.PREPARE_EPOCH_FENCE),
}


def _transit(result: TxnTransitMetadata | ErrorCode) -> TxnTransitMetadata:
    assert isinstance(result, TxnTransitMetadata), result
    return result


# --- every prepare from every state ----------------------------------------------------------


@pytest.mark.parametrize("state", ALL_STATES, ids=lambda s: s.kafka_name)
@pytest.mark.parametrize("op", sorted(PREPARES))
def test_prepare_follows_the_table(op: str, state: TransactionState) -> None:
    prepare, target_of = PREPARES[op]
    target = target_of(state)
    m = metadata_in(state)
    before = snapshot(m)
    if not can_transition(state, target):
        with pytest.raises(IllegalTransactionStateError):
            prepare(m)
        assert snapshot(m) == before
        assert m.pending_state is None
        return
    transit = prepare(m)
    assert transit.txn_state is target
    assert m.pending_state is target
    assert m.pending_transition_in_progress
    assert transit.last_producer_id == 1000  # prepareTransitionTo: the current producer id
    # Nothing but the pending state moves before completion.
    assert snapshot(m)[:-1] == before[:-1]
    if target in (S.PREPARE_EPOCH_FENCE, S.DEAD):
        with pytest.raises(IllegalTransactionStateError):
            m.complete_transition_to(transit)
        return
    m.complete_transition_to(transit)
    assert m.state is target
    assert m.pending_state is None
    assert m.txn_last_update_timestamp == T0 + 100
    assert m.producer_id == transit.producer_id
    assert m.producer_epoch == transit.producer_epoch


def test_no_second_prepare_while_pending() -> None:
    m = metadata_in(S.ONGOING)
    m.prepare_abort_or_commit(S.PREPARE_COMMIT, T0 + 100)
    with pytest.raises(IllegalTransactionStateError, match="already a pending state"):
        m.prepare_abort_or_commit(S.PREPARE_COMMIT, T0 + 200)
    with pytest.raises(IllegalTransactionStateError, match="already a pending state"):
        m.prepare_add_partitions([("x", 0)], T0 + 200)


def test_prepare_no_transit_sets_no_pending_state() -> None:
    m = metadata_in(S.ONGOING, last_epoch=4)
    m.last_producer_id = 900
    transit = m.prepare_no_transit()
    assert m.pending_state is None
    assert transit == TxnTransitMetadata(
        1000, 900, 5, 4, 60000, S.ONGOING, frozenset({("t", 0), ("u", 1)}), T0, T0 + 10
    )


# --- a full life ------------------------------------------------------------------------------


def test_lifecycle_init_add_commit_complete_then_next_transaction() -> None:
    m = TransactionMetadata.create("txn", 1000, NO_PRODUCER_EPOCH, 60000, T0)
    assert (m.state, m.txn_start_timestamp, m.txn_last_update_timestamp) == (S.EMPTY, T0, T0)

    init = _transit(m.prepare_increment_producer_epoch(30000, None, T0 + 1))
    assert (init.producer_epoch, init.last_producer_epoch, init.txn_start_timestamp) == (0, -1, -1)
    m.complete_transition_to(init)
    assert (m.producer_epoch, m.txn_timeout_ms, m.state) == (0, 30000, S.EMPTY)

    add = m.prepare_add_partitions([("t", 0)], T0 + 2)
    assert add.txn_start_timestamp == T0 + 2  # the transaction starts here
    m.complete_transition_to(add)
    add2 = m.prepare_add_partitions([("t", 1)], T0 + 3)
    assert add2.txn_start_timestamp == T0 + 2  # ...and not again
    m.complete_transition_to(add2)
    assert m.topic_partitions == {("t", 0), ("t", 1)}

    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_COMMIT, T0 + 4))
    m.remove_partition(("t", 0))  # its COMMIT marker is written
    assert m.topic_partitions == {("t", 1)}
    done = m.prepare_complete(T0 + 5)
    assert done.txn_state is S.COMPLETE_COMMIT
    assert done.topic_partitions == frozenset()
    m.complete_transition_to(done)
    assert (m.state, m.topic_partitions, m.txn_start_timestamp) == (
        S.COMPLETE_COMMIT,
        set(),
        T0 + 2,
    )

    nxt = m.prepare_add_partitions([("u", 0)], T0 + 6)
    assert nxt.txn_start_timestamp == T0 + 6
    m.complete_transition_to(nxt)
    assert m.state is S.ONGOING


def test_remove_partition_only_while_preparing() -> None:
    m = metadata_in(S.ONGOING)
    with pytest.raises(IllegalTransactionStateError, match="whose txn marker has been sent"):
        m.remove_partition(("t", 0))
    m = metadata_in(S.PREPARE_ABORT)
    m.remove_partition(("t", 0))
    m.remove_partition(("t", 9))  # absent: no error, as Kafka's Set -=
    assert m.topic_partitions == {("u", 1)}


# --- fencing ----------------------------------------------------------------------------------


def test_fence_then_abort() -> None:
    m = metadata_in(S.ONGOING, last_epoch=4)
    fence = m.prepare_fence_producer_epoch()
    assert (fence.producer_epoch, fence.last_producer_epoch) == (6, NO_PRODUCER_EPOCH)
    assert fence.txn_last_update_timestamp == T0 + 10  # unchanged
    assert m.pending_transition_in_progress
    assert m.pending_state is S.PREPARE_EPOCH_FENCE
    with pytest.raises(IllegalTransactionStateError, match="unexpected metadata"):
        m.complete_transition_to(fence)

    m.apply_epoch_fence(fence.producer_epoch)
    assert not m.pending_transition_in_progress
    assert (m.producer_epoch, m.last_producer_epoch) == (6, -1)
    abort = m.prepare_abort_or_commit(S.PREPARE_ABORT, T0 + 20)
    m.complete_transition_to(abort)
    m.complete_transition_to(m.prepare_complete(T0 + 30))
    assert (m.state, m.producer_epoch) == (S.COMPLETE_ABORT, 6)


def test_failed_fence_reuses_the_bumped_epoch_until_complete() -> None:
    m = metadata_in(S.ONGOING)
    fence = m.prepare_fence_producer_epoch()
    # The write failed: Kafka clears the pending state and remembers the failure.
    m.pending_state = None
    m.has_failed_epoch_fence = True
    # endTransaction had already bumped the epoch in memory before the failed write.
    m.producer_epoch = fence.producer_epoch
    again = m.prepare_fence_producer_epoch()
    assert again.producer_epoch == fence.producer_epoch
    m.apply_epoch_fence(again.producer_epoch)
    m.complete_transition_to(m.prepare_abort_or_commit(S.PREPARE_ABORT, T0 + 20))
    m.prepare_complete(T0 + 30)
    assert not m.has_failed_epoch_fence


def test_fence_refuses_epoch_overflow() -> None:
    m = metadata_in(S.ONGOING, epoch=32767)
    with pytest.raises(IllegalTransactionStateError, match=r"Short\.MaxValue"):
        m.prepare_fence_producer_epoch()
    assert m.pending_state is None


def test_apply_epoch_fence_needs_a_pending_fence() -> None:
    m = metadata_in(S.ONGOING)
    with pytest.raises(IllegalTransactionStateError, match="not PrepareEpochFence"):
        m.apply_epoch_fence(6)


# --- InitProducerId: KIP-360 ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("epoch", "last_epoch", "expected", "result"),
    [
        (5, 3, None, (6, -1)),  # a new producer instance: bump, forget the last epoch
        (5, 3, 5, (6, 5)),  # the current producer recovers: bump, remember
        (-1, -1, 7, (0, -1)),  # no current epoch: bump (to 0), "remember" -1
        (5, 3, 3, (5, 3)),  # a retry of a bump that succeeded: unchanged
        (5, 3, 4, ErrorCode.PRODUCER_FENCED),  # neither: fenced
        (5, -1, 2, ErrorCode.PRODUCER_FENCED),
    ],
)
def test_prepare_increment_producer_epoch_kip_360(
    epoch: int,
    last_epoch: int,
    expected: int | None,
    result: tuple[int, int] | ErrorCode,
) -> None:
    m = metadata_in(S.COMPLETE_ABORT, epoch=epoch, last_epoch=last_epoch)
    out = m.prepare_increment_producer_epoch(30000, expected, T0 + 100)
    if isinstance(result, ErrorCode):
        assert out is result
        assert m.pending_state is None
        return
    transit = _transit(out)
    assert (transit.producer_epoch, transit.last_producer_epoch) == result
    assert (transit.txn_timeout_ms, transit.topic_partitions) == (30000, frozenset())
    assert transit.txn_start_timestamp == -1
    m.complete_transition_to(transit)
    assert (m.producer_epoch, m.last_producer_epoch, m.state) == (*result, S.EMPTY)


def test_epoch_exhaustion_forces_producer_id_rotation() -> None:
    assert not is_epoch_exhausted(32765)
    assert is_epoch_exhausted(32766)
    assert is_epoch_exhausted(32767)
    m = metadata_in(S.COMPLETE_COMMIT, epoch=32766)
    assert m.is_producer_epoch_exhausted
    with pytest.raises(IllegalTransactionStateError, match="Cannot allocate any more"):
        m.prepare_increment_producer_epoch(30000, None, T0 + 100)
    rotation = m.prepare_producer_id_rotation(2000, 30000, T0 + 100, record_last_epoch=True)
    assert (rotation.producer_id, rotation.producer_epoch) == (2000, 0)
    assert (rotation.last_producer_id, rotation.last_producer_epoch) == (1000, 32766)
    m.complete_transition_to(rotation)  # epoch 0 under a new producer id is a valid bump
    assert (m.producer_id, m.last_producer_id, m.producer_epoch) == (2000, 1000, 0)


def test_rotation_without_recording_the_last_epoch() -> None:
    m = metadata_in(S.EMPTY)
    rotation = m.prepare_producer_id_rotation(2000, 30000, T0 + 100, record_last_epoch=False)
    assert rotation.last_producer_epoch == NO_PRODUCER_EPOCH


@pytest.mark.parametrize("state", [S.ONGOING, S.PREPARE_ABORT, S.PREPARE_COMMIT])
def test_rotation_refused_with_a_pending_transaction(state: TransactionState) -> None:
    m = metadata_in(state)
    with pytest.raises(IllegalTransactionStateError, match="while a transaction is still pending"):
        m.prepare_producer_id_rotation(2000, 30000, T0 + 100, True)


def test_illegal_producer_id_or_epoch_is_an_argument_error() -> None:
    with pytest.raises(ValueError, match="Illegal new producer id -5"):
        metadata_in(S.EMPTY).prepare_producer_id_rotation(-5, 30000, T0, False)
    fresh = TransactionMetadata.create("txn", 1000, NO_PRODUCER_EPOCH, 60000, T0)
    with pytest.raises(ValueError, match="Illegal new producer epoch -1"):
        fresh.prepare_add_partitions([("t", 0)], T0 + 1)
    assert fresh.pending_state is None
    dead = fresh.prepare_dead()  # Dead may keep epoch -1
    assert dead.producer_epoch == NO_PRODUCER_EPOCH


# --- completeTransitionTo's checks -----------------------------------------------------------


def _prepared(state: TransactionState, op: str) -> tuple[TransactionMetadata, TxnTransitMetadata]:
    m = metadata_in(state)
    return m, PREPARES[op][0](m)


BAD_COMPLETIONS: list[tuple[str, TransactionState, str, dict[str, object]]] = [
    ("empty: epoch jumps by 2", S.EMPTY, "increment_epoch", {"producer_epoch": 7}),
    (
        "empty: with partitions",
        S.EMPTY,
        "increment_epoch",
        {"topic_partitions": frozenset({("t", 0)})},
    ),
    ("empty: start timestamp", S.EMPTY, "increment_epoch", {"txn_start_timestamp": T0}),
    ("empty: epoch 0, same pid", S.EMPTY, "increment_epoch", {"producer_epoch": 0}),
    ("ongoing: other epoch", S.ONGOING, "add_partitions", {"producer_epoch": 6}),
    ("ongoing: other pid", S.ONGOING, "add_partitions", {"producer_id": 1001}),
    (
        "ongoing: partitions lost",
        S.ONGOING,
        "add_partitions",
        {"topic_partitions": frozenset({("v", 2)})},
    ),
    ("ongoing: other timeout", S.ONGOING, "add_partitions", {"txn_timeout_ms": 1}),
    ("prepare: other partitions", S.ONGOING, "commit", {"topic_partitions": frozenset()}),
    ("prepare: other timeout", S.ONGOING, "abort", {"txn_timeout_ms": 1}),
    ("prepare: other start", S.ONGOING, "commit", {"txn_start_timestamp": T0 + 1}),
    ("prepare: other epoch", S.ONGOING, "abort", {"producer_epoch": 4}),
    ("complete: no start", S.PREPARE_COMMIT, "complete", {"txn_start_timestamp": -1}),
    ("complete: other timeout", S.PREPARE_ABORT, "complete", {"txn_timeout_ms": 1}),
    ("complete: other pid", S.PREPARE_ABORT, "complete", {"producer_id": 1}),
    ("other target state", S.ONGOING, "commit", {"txn_state": S.PREPARE_ABORT}),
]


@pytest.mark.parametrize(
    ("state", "op", "changes"),
    [c[1:] for c in BAD_COMPLETIONS],
    ids=[c[0] for c in BAD_COMPLETIONS],
)
def test_complete_refuses_unexpected_metadata(
    state: TransactionState, op: str, changes: dict[str, object]
) -> None:
    m, transit = _prepared(state, op)
    good = transit
    bad = dataclasses.replace(transit, **changes)  # type: ignore[arg-type]
    before = snapshot(m)
    with pytest.raises(IllegalTransactionStateError, match="due to unexpected metadata"):
        m.complete_transition_to(bad)
    assert snapshot(m) == before  # nothing applied, still pending
    m.complete_transition_to(good)  # the real transit still completes
    assert m.state is good.txn_state


def test_complete_without_pending_state() -> None:
    m = metadata_in(S.ONGOING)
    transit = m.prepare_no_transit()
    with pytest.raises(IllegalTransactionStateError, match="does not have a pending state"):
        m.complete_transition_to(transit)


def test_complete_to_dead_is_refused() -> None:
    m = metadata_in(S.COMPLETE_COMMIT)
    with pytest.raises(IllegalTransactionStateError, match="only acceptable completion"):
        m.complete_transition_to(m.prepare_dead())


def test_should_expire() -> None:
    m = metadata_in(S.COMPLETE_COMMIT)  # last update T0 + 10
    assert not m.should_expire(T0 + 10 + 999, 1000)
    assert m.should_expire(T0 + 10 + 1000, 1000)
    assert not metadata_in(S.ONGOING).should_expire(T0 + 10**9, 1000)


# --- the log value ----------------------------------------------------------------------------


def test_value_for_transit_bytes_match_kafka() -> None:
    # The transit Kafka 3.9 wrote for the golden KAFKA_ONGOING_V0 of test_txn_log_schema.py.
    m = metadata_in(S.ONGOING)
    m.topic_partitions = {("u", 1), ("t", 2), ("t", 0)}
    transit = m.prepare_add_partitions([], T0 + 1000)
    value = value_for_transit(transit)
    assert value.partitions == (("t", (0, 2)), ("u", (1,)))
    assert encode_value(value, 0) == bytes.fromhex(
        "000000000000000003e800050000ea60010000000200017400000002000000000000000200017500000001"
        "000000010000018bcfe56be80000018bcfe56800"
    )


def test_value_for_empty_transit_has_null_partitions() -> None:
    m = metadata_in(S.COMPLETE_ABORT)
    value = value_for_transit(_transit(m.prepare_increment_producer_epoch(30000, None, T0 + 1)))
    assert value.partitions is None
    assert value.state is S.EMPTY
    bad = TxnTransitMetadata(1, -1, 0, -1, 1, S.EMPTY, frozenset({("t", 0)}), -1, T0)
    with pytest.raises(IllegalTransactionStateError, match="not expected to have any partitions"):
        value_for_transit(bad)


def test_metadata_from_value() -> None:
    value = TransactionLogValue(1000, 5, 60000, S.ONGOING, (("t", (0, 2)),), T0 + 10, T0)
    m = metadata_from_value("txn", decode_value(encode_value(value)))
    assert (m.last_producer_id, m.last_producer_epoch, m.pending_state) == (-1, -1, None)
    assert (m.producer_id, m.producer_epoch, m.state) == (1000, 5, S.ONGOING)
    assert m.topic_partitions == {("t", 0), ("t", 2)}
    assert (m.txn_start_timestamp, m.txn_last_update_timestamp) == (T0, T0 + 10)

    empty = TransactionLogValue(1000, 5, 60000, S.EMPTY, (("t", (0,)),), T0, -1)
    assert metadata_from_value("txn", empty).topic_partitions == set()
    with pytest.raises(TransactionLogRecordError, match="null transactionPartitions"):
        metadata_from_value("txn", TransactionLogValue(1, 0, 1, S.ONGOING, None, T0, T0))


# --- random walks ----------------------------------------------------------------------------

_OPS = st.lists(
    st.tuples(
        st.sampled_from([*sorted(PREPARES), "init_expected", "fail_write"]),
        st.integers(0, 3),
    ),
    max_size=40,
)


@given(_OPS)
def test_random_walks_keep_kafkas_invariants(ops: list[tuple[str, int]]) -> None:
    """Drive random operations; every completed move must be in the table, and the metadata
    must stay coherent (Kafka's invariants), whatever the order."""
    m = TransactionMetadata.create("txn", 1000, NO_PRODUCER_EPOCH, 60000, T0)
    now = T0
    for op, arg in ops:
        now += 1
        if m.pending_state is not None and op != "fail_write":
            continue
        before_state, before_epoch, before_pid = m.state, m.producer_epoch, m.producer_id
        try:
            if op == "fail_write":
                m.pending_state = None  # the append failed: the driver drops the transition
                continue
            if op == "init_expected":
                out = m.prepare_increment_producer_epoch(60000, m.producer_epoch - arg, now)
                if isinstance(out, ErrorCode):
                    assert out is ErrorCode.PRODUCER_FENCED
                    continue
                transit = out
            elif op == "increment_epoch":
                transit = _transit(m.prepare_increment_producer_epoch(60000, None, now))
            elif op == "add_partitions":
                transit = m.prepare_add_partitions([("t", arg)], now)
            elif op == "rotate_producer_id":  # the coordinator always allocates a new id
                transit = m.prepare_producer_id_rotation(m.producer_id + 1, 60000, now, bool(arg))
            elif op == "fence":
                fence = m.prepare_fence_producer_epoch()
                m.apply_epoch_fence(fence.producer_epoch)
                transit = m.prepare_abort_or_commit(S.PREPARE_ABORT, now)
            else:
                transit = PREPARES[op][0](m)
        except (IllegalTransactionStateError, ValueError):
            assert m.pending_state is None
            continue
        assert can_transition(before_state, transit.txn_state)
        if transit.txn_state is S.DEAD:
            m.pending_state = None  # expiry ends in a tombstone, never a completion
            continue
        m.complete_transition_to(transit)
        assert m.pending_state is None
        assert m.state is transit.txn_state
        if m.producer_id == before_pid:
            assert m.producer_epoch >= before_epoch
        if m.state in (S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT):
            assert m.topic_partitions == set()
        if m.state is S.ONGOING:
            assert m.topic_partitions
            assert m.txn_start_timestamp != -1
        # Whatever was written, the log value round-trips to the same state and producer.
        loaded = metadata_from_value("txn", decode_value(encode_value(value_for_transit(transit))))
        assert (loaded.state, loaded.producer_id, loaded.producer_epoch) == (
            m.state,
            m.producer_id,
            m.producer_epoch,
        )
        if m.state is not S.EMPTY:
            assert loaded.topic_partitions == set(transit.topic_partitions)
