"""One classic group as the coordinator holds it: the pure snapshot plus what is not pure.

Kafka's ``GroupMetadata`` mixes the state machine's fields with the committed offsets and the
members' response callbacks. Franz keeps the state machine's value in an immutable
``GroupSnapshot`` (``states.py``) and puts the rest here: the group's committed offsets, the
parked JoinGroup/SyncGroup futures keyed by member id, the single timer armed at the
snapshot's next deadline, and the time of the last state change (Kafka's
``currentStateTimestamp``, which offset expiry measures from).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from franz.coordinator.group.offsets_topic import OffsetAndMetadata, TopicPartitionKey
from franz.coordinator.group.states import GroupSnapshot, JoinResponse, SyncResponse

__all__ = ["Group"]


@dataclass(slots=True)
class Group:
    """Mutable holder of one group; only the coordinator's event loop touches it."""

    snapshot: GroupSnapshot
    current_state_timestamp_ms: int
    offsets: dict[TopicPartitionKey, OffsetAndMetadata] = field(default_factory=dict)
    join_waiters: dict[str, asyncio.Future[JoinResponse]] = field(default_factory=dict)
    sync_waiters: dict[str, asyncio.Future[SyncResponse]] = field(default_factory=dict)
    timer: asyncio.TimerHandle | None = None
    timer_deadline_ms: int | None = None

    @property
    def group_id(self) -> str:
        return self.snapshot.group_id

    def cancel_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        self.timer = None
        self.timer_deadline_ms = None
