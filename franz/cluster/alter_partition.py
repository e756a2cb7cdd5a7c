"""AlterPartition's broker side: the interface i-leader codes against (i-alter builds the
manager; this stub holds only the value types of the contract until that branch merges).

``AlterPartitionManager.submit(tp, topic_id, leader_and_isr)`` sends an ISR change to the
active controller and answers an ``IsrUpdateResult`` (Kafka's ``AlterPartitionManager``).
"""

from __future__ import annotations

from dataclasses import dataclass

from franz.errors import ErrorCode

__all__ = ["IsrUpdate", "IsrUpdateResult"]


@dataclass(frozen=True, slots=True)
class IsrUpdate:
    """A proposed ``LeaderAndIsr`` (Kafka's): the leader's epoch, the new ISR, the leader
    recovery state (0: recovered) and the partition epoch it was computed from."""

    leader_epoch: int
    new_isr: tuple[int, ...]
    leader_recovery_state: int
    partition_epoch: int


@dataclass(frozen=True, slots=True)
class IsrUpdateResult:
    """The controller's answer for one partition of an AlterPartition."""

    error: ErrorCode
    leader_id: int
    leader_epoch: int
    isr: tuple[int, ...]
    leader_recovery_state: int
    partition_epoch: int
