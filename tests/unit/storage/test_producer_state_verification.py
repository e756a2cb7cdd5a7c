"""KIP-890 part 1 in the log: the verification guard (``franz.storage.verification``) and
the check at append (``ProducerStateManager.prepare_append``, Kafka's
``UnifiedLog.analyzeAndValidateProducerState`` and ``ProducerStateManagerTest``'s
verification cases)."""

from __future__ import annotations

from pathlib import Path

import pytest

from franz.clock import ManualClock
from franz.errors import InvalidTxnStateError, OutOfOrderSequenceError, UnknownProducerIdError
from franz.storage.log import Log
from franz.storage.verification import SENTINEL, VerificationGuard
from tests.unit.storage.conftest import TP, small_config
from tests.unit.storage.test_producer_state import PID, idem
from tests.unit.storage.test_transactions import marker


@pytest.fixture
def log(tmp_path: Path, clock: ManualClock) -> Log:
    return Log(
        tmp_path / TP.dir_name, TP, small_config(), clock, transaction_verification_enabled=True
    )


def txn(seq: int, *, epoch: int = 0) -> bytearray:
    return idem(seq, transactional=True, epoch=epoch)


def test_a_guard_verifies_only_itself_and_the_sentinel_nothing() -> None:
    guard = VerificationGuard()
    assert guard.verify(guard)
    assert not guard.verify(VerificationGuard())
    assert not guard.verify(None)
    assert not SENTINEL.verify(SENTINEL)


def test_a_first_transactional_batch_without_a_guard_is_refused_and_not_written(
    log: Log,
) -> None:
    with pytest.raises(InvalidTxnStateError, match="not part of an ongoing transaction"):
        log.append_as_leader(txn(0), 0)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn(0), 0, verification_guard=SENTINEL)
    assert log.log_end_offset == 0
    assert log.producer_state.last_entry(PID) is None


def test_a_stale_or_foreign_guard_is_refused(log: Log) -> None:
    log.maybe_start_transaction_verification(PID, 0, 0)
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn(0), 0, verification_guard=VerificationGuard())
    assert log.log_end_offset == 0


def test_the_verified_guard_appends_then_the_ongoing_transaction_needs_none(log: Log) -> None:
    guard = log.maybe_start_transaction_verification(PID, 0, 0)
    assert guard is not SENTINEL
    # A second verification of the same producer reuses the entry's guard.
    assert log.maybe_start_transaction_verification(PID, 0, 0) is guard
    assert log.append_as_leader(txn(0), 0, verification_guard=guard).first_offset == 0
    # The first append cleared the entry: the transaction is ongoing, nothing to verify.
    assert log.producer_state.verification_states.entry(PID) is None
    assert log.maybe_start_transaction_verification(PID, 3, 0) is SENTINEL
    assert log.append_as_leader(txn(3), 0).first_offset == 3


def test_a_marker_clears_the_guard_so_a_stale_verified_append_fails(log: Log) -> None:
    """Kafka's ABA case: verified, then the transaction is aborted before the append."""
    guard = log.maybe_start_transaction_verification(PID, 0, 0)
    log.append_as_leader(marker(False, pid=PID), 0, from_client=False)
    assert log.producer_state.verification_states.entry(PID) is None
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn(0), 0, verification_guard=guard)


def test_the_entry_keeps_the_lowest_sequence_of_an_epoch_and_a_newer_epochs_own() -> None:
    from franz.storage.verification import VerificationStateEntry

    entry = VerificationStateEntry(0, 5, 1)
    entry.maybe_update_lowest_sequence_and_epoch(3, 1)
    entry.maybe_update_lowest_sequence_and_epoch(9, 1)
    assert (entry.lowest_sequence, entry.epoch) == (3, 1)
    entry.maybe_update_lowest_sequence_and_epoch(7, 0)  # an older epoch changes nothing
    assert (entry.lowest_sequence, entry.epoch) == (3, 1)
    entry.maybe_update_lowest_sequence_and_epoch(7, 2)
    assert (entry.lowest_sequence, entry.epoch) == (7, 2)


def test_the_verification_check_comes_before_the_sequence_check(log: Log) -> None:
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn(7), 0)
    guard = log.maybe_start_transaction_verification(PID, 7, 0)
    with pytest.raises(UnknownProducerIdError):  # Franz's rule for a producer with no state
        log.append_as_leader(txn(7), 0, verification_guard=guard)
    log.append_as_leader(txn(0), 0, verification_guard=guard)
    with pytest.raises(OutOfOrderSequenceError):  # ongoing: no guard needed, sequence checked
        log.append_as_leader(txn(9), 0)


def test_coordinator_appends_are_checked_and_idempotent_ones_never(log: Log) -> None:
    with pytest.raises(InvalidTxnStateError):
        log.append_as_leader(txn(-1), 0, from_client=False)
    assert log.append_as_leader(idem(0, pid=PID + 1), 0).first_offset == 0
    guard = log.maybe_start_transaction_verification(PID, -1, 0)
    assert log.append_as_leader(txn(-1), 0, from_client=False, verification_guard=guard)


def test_followers_and_a_disabled_check_append_without_guards(
    log: Log, tmp_path: Path, clock: ManualClock
) -> None:
    log.append_as_follower(txn(0))
    assert log.producer_state.has_ongoing_transaction(PID)
    off = Log(tmp_path / "off" / TP.dir_name, TP, small_config(), clock)
    assert off.append_as_leader(txn(0), 0).first_offset == 0
    log.producer_state.transaction_verification_enabled = False
    assert log.append_as_leader(idem(0, pid=7, transactional=True), 0).batch_count == 1


def test_verification_entries_expire_with_the_producers(log: Log, clock: ManualClock) -> None:
    log.maybe_start_transaction_verification(PID, 0, 0)
    state = log.producer_state
    state.remove_expired_producers(clock.wall_ms() + state.producer_id_expiration_ms - 1)
    assert state.verification_states.entry(PID) is not None
    state.remove_expired_producers(clock.wall_ms() + state.producer_id_expiration_ms)
    assert state.verification_states.entry(PID) is None
