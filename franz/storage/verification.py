"""KIP-890 part 1: the verification state of a producer in a partition (Kafka's
``VerificationGuard`` and ``VerificationStateEntry``, storage-internals 3.9).

A partition leader that is about to append the first transactional batch of a producer's
transaction (the producer has no ongoing transaction in the partition) first asks the
transaction coordinator whether the partition is in that transaction
(``franz.broker.txn_verification``). Before asking, it creates a ``VerificationStateEntry``
for the producer in the partition's producer state; the entry holds a fresh
``VerificationGuard``, an object compared by identity. The append then carries the guard it
was given, and ``ProducerStateManager.prepare_append`` refuses a transactional batch of a
producer with no ongoing transaction unless that guard is the one still in the state
(INVALID_TXN_STATE, "Record was not part of an ongoing transaction").

Why an identity and not a flag (Kafka's ABA argument): verification starts, the coordinator
answers "in the transaction", then an abort marker is written and a new transaction starts
that does not include the partition, and only then the stale verified append arrives. Any
transactional batch or marker appended for the producer clears its entry, so the stale
append's guard no longer matches and it is refused; a retry verifies again.

``SENTINEL`` is the guard of "no verification was done" (verification off, or the producer
already had its transaction ongoing in the partition): it never verifies.

Entries older than ``producer.id.expiration.ms`` are dropped with the expired producers
(Kafka's ``ProducerStateManager.removeExpiredProducers``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

__all__ = ["SENTINEL", "VerificationGuard", "VerificationStateEntry"]


class VerificationGuard:
    """An opaque token, equal only to itself (Kafka's ``VerificationGuard``)."""

    __slots__ = ()

    def verify(self, other: VerificationGuard | None) -> bool:
        """Kafka's ``verify``: ``other`` is this very guard, and this is not ``SENTINEL``."""
        return self is not SENTINEL and other is self

    def __repr__(self) -> str:
        if self is SENTINEL:
            return "VerificationGuard(SENTINEL)"
        return f"VerificationGuard({id(self):#x})"


#: The guard of an append that was not verified (Kafka's ``VerificationGuard.SENTINEL``).
SENTINEL: Final = VerificationGuard()


@dataclass(slots=True)
class VerificationStateEntry:
    """A verification in progress for one producer in one partition (Kafka's
    ``VerificationStateEntry``): when it started, its guard, and the lowest sequence and
    latest epoch of the batches that asked for it."""

    timestamp_ms: int
    lowest_sequence: int
    epoch: int
    guard: VerificationGuard = field(default_factory=VerificationGuard)

    def maybe_update_lowest_sequence_and_epoch(self, sequence: int, epoch: int) -> None:
        """Kafka's ``maybeUpdateLowestSequenceAndEpoch``: a newer epoch replaces both; the
        same epoch keeps the lower sequence."""
        if epoch > self.epoch:
            self.lowest_sequence = sequence
            self.epoch = epoch
        elif epoch == self.epoch:
            self.lowest_sequence = min(sequence, self.lowest_sequence)
