"""The transaction states of a transactional id, as Kafka 3.9's transaction coordinator has them.

Kafka's names: ``kafka.coordinator.transaction.TransactionState`` (a sealed trait with one case
object per state in ``TransactionMetadata.scala``, 3.x; moved to Java in 4.0). Checked against
the Kafka 3.9.2 classes (``Empty$`` ... ``PrepareEpochFence$``: ``id``, ``name``,
``validPreviousStates``, ``isExpirationAllowed``).

Each state has:

* an *id*: the int8 ``TransactionStatus`` of the ``__transaction_state`` value
  (``log_schema.py``); ``TransactionState.fromId`` rejects any other byte;
* a *name*: what DescribeTransactions (``TransactionState`` field) and ListTransactions
  (``TransactionState`` field, and its ``StateFilters``) report, Kafka's ``state.name``; the
  Java client's ``org.apache.kafka.clients.admin.TransactionState`` parses the same strings;
* its *valid previous states* (``validPreviousStates``): ``TransactionMetadata``'s
  ``prepareTransitionTo`` refuses a transition from any other state;
* whether an idle transactional id in it may expire (``isExpirationAllowed``: Empty,
  CompleteCommit, CompleteAbort; see ``transactional.id.expiration.ms``).

Transitions (who causes them)::

    Empty/CompleteCommit/CompleteAbort --AddPartitionsToTxn/AddOffsetsToTxn--> Ongoing
    Ongoing --AddPartitionsToTxn/AddOffsetsToTxn--> Ongoing
    Ongoing --EndTxn(commit)--> PrepareCommit --markers written--> CompleteCommit
    Ongoing --EndTxn(abort) or timeout--> PrepareAbort --markers written--> CompleteAbort
    Ongoing --InitProducerId or timeout fences the producer--> PrepareEpochFence --> PrepareAbort
    Empty/CompleteCommit/CompleteAbort --InitProducerId--> Empty
    Empty/CompleteCommit/CompleteAbort --transactional.id.expiration.ms--> Dead (tombstone)
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "VALID_PREVIOUS_STATES",
    "TransactionState",
    "UnknownTransactionStateError",
    "can_transition",
]


class UnknownTransactionStateError(ValueError):
    """A ``TransactionStatus`` byte that is no state (Kafka: "Unknown transaction state id")."""


class TransactionState(enum.IntEnum):
    """A transactional id's state; the value is Kafka's ``id``, ``.kafka_name`` its ``name``.

    * ``EMPTY`` (0): no transaction in progress (new id, or after InitProducerId).
      Previous: Empty, CompleteCommit, CompleteAbort. May expire.
    * ``ONGOING`` (1): partitions have been added; the transaction timer runs from the start
      timestamp. Previous: Ongoing, Empty, CompleteCommit, CompleteAbort.
    * ``PREPARE_COMMIT`` (2): EndTxn(commit) logged, COMMIT markers being written.
      Previous: Ongoing.
    * ``PREPARE_ABORT`` (3): EndTxn(abort), a timeout or a fence logged, ABORT markers being
      written. Previous: Ongoing, PrepareEpochFence.
    * ``COMPLETE_COMMIT`` (4): all COMMIT markers written. Previous: PrepareCommit. May expire.
    * ``COMPLETE_ABORT`` (5): all ABORT markers written. Previous: PrepareAbort. May expire.
    * ``DEAD`` (6): the id expired and is being removed (a tombstone is written, never a
      value in this state). Previous: Empty, CompleteAbort, CompleteCommit.
    * ``PREPARE_EPOCH_FENCE`` (7): a pending state only: the epoch is being bumped to fence
      an old producer before aborting its transaction; Kafka never completes a transition
      to it. Previous: Ongoing.
    """

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """Kafka's ``name``: what DescribeTransactions and ListTransactions report."""
        return _NAMES[self]

    @property
    def valid_previous_states(self) -> frozenset[TransactionState]:
        """Kafka's ``validPreviousStates`` of this state."""
        return VALID_PREVIOUS_STATES[self]

    @property
    def is_expiration_allowed(self) -> bool:
        """Kafka's ``isExpirationAllowed``: an idle id in this state may expire."""
        return self in _EXPIRABLE

    @property
    def has_pending_transaction(self) -> bool:
        """``TransactionMetadata.hasPendingTransaction``: Ongoing, PrepareAbort, PrepareCommit."""
        return self in _PENDING

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        """Kafka's ``TransactionState.fromId``: the state with this ``TransactionStatus``."""
        try:
            return cls(state_id)
        except ValueError:
            raise UnknownTransactionStateError(
                f"Unknown transaction state id {state_id} from the transaction status message"
            ) from None

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        """Kafka's ``TransactionState.fromName`` (ListTransactions' ``StateFilters``); None if
        no state has that name (Kafka then matches nothing)."""
        return _BY_NAME.get(name)


_S = TransactionState
_NAMES: Mapping[TransactionState, str] = MappingProxyType(
    {
        _S.EMPTY: "Empty",
        _S.ONGOING: "Ongoing",
        _S.PREPARE_COMMIT: "PrepareCommit",
        _S.PREPARE_ABORT: "PrepareAbort",
        _S.COMPLETE_COMMIT: "CompleteCommit",
        _S.COMPLETE_ABORT: "CompleteAbort",
        _S.DEAD: "Dead",
        _S.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
    }
)
_BY_NAME: Mapping[str, TransactionState] = MappingProxyType({n: s for s, n in _NAMES.items()})
_EXPIRABLE = frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT})
_PENDING = frozenset({_S.ONGOING, _S.PREPARE_ABORT, _S.PREPARE_COMMIT})

VALID_PREVIOUS_STATES: Mapping[TransactionState, frozenset[TransactionState]] = MappingProxyType(
    {
        _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
        _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
        _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
        _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
        _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
        _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
        _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT}),
        _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
    }
)
"""Kafka 3.9's ``validPreviousStates`` table, keyed by the target state."""


def can_transition(from_state: TransactionState, to_state: TransactionState) -> bool:
    """Whether Kafka lets a transactional id prepare a move from ``from_state`` to ``to_state``."""
    return from_state in VALID_PREVIOUS_STATES[to_state]
