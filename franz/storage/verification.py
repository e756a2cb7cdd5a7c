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

__all__ = ["SENTINEL", "VerificationGuard", "VerificationStateEntry", "VerificationStates"]


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


class VerificationStates:
    """The verifications in progress of one partition, by producer id (Kafka's
    ``ProducerStateManager.verificationStates``); owned by its ``ProducerStateManager``."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[int, VerificationStateEntry] = {}

    def __bool__(self) -> bool:
        return bool(self._entries)

    def maybe_create(
        self, producer_id: int, sequence: int, epoch: int, now_ms: int
    ) -> VerificationStateEntry:
        """Kafka's ``maybeCreateVerificationStateEntry``: the producer's entry, created if
        there is none (a new guard), else updated with ``sequence`` and ``epoch``."""
        entry = self._entries.get(producer_id)
        if entry is None:
            entry = self._entries[producer_id] = VerificationStateEntry(now_ms, sequence, epoch)
        else:
            entry.maybe_update_lowest_sequence_and_epoch(sequence, epoch)
        return entry

    def entry(self, producer_id: int) -> VerificationStateEntry | None:
        return self._entries.get(producer_id)

    def guard(self, producer_id: int) -> VerificationGuard:
        """The producer's current guard, or ``SENTINEL`` (Kafka's ``verificationGuard``)."""
        entry = self._entries.get(producer_id)
        return SENTINEL if entry is None else entry.guard

    def clear(self, producer_id: int) -> None:
        """Kafka's ``clearVerificationStateEntry``."""
        self._entries.pop(producer_id, None)

    def remove_expired(self, now_ms: int, expiration_ms: int) -> None:
        """Drop entries started ``expiration_ms`` or more before ``now_ms``."""
        stale = [p for p, e in self._entries.items() if now_ms - e.timestamp_ms >= expiration_ms]
        for producer_id in stale:
            del self._entries[producer_id]
