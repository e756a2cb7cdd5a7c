"""A follower replica as its leader sees it (Kafka's ``Replica`` and ``ReplicaState``).

The leader keeps one ``ReplicaState`` per follower of a partition it leads, updated by each
of that follower's fetches (``update_fetch_state``, Kafka's ``updateFetchStateOrThrow``):

* ``log_end_offset``: the follower's fetch offset (its LEO); -1 (Kafka's ``UnknownOffset``)
  until the first fetch to this leader.
* ``last_caught_up_time_ms``: the newest time the follower was known to have everything the
  leader had: a fetch at or past the leader's LEO at that fetch caught up "now"; a fetch at
  or past the leader's LEO of the *previous* fetch caught up at the previous fetch's time.
  The leader drops a follower from the ISR when this is older than
  ``replica.lag.time.max.ms`` (``is_caught_up``).

Concurrency: owned by the event loop (through its ``Partition``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["UNKNOWN_OFFSET", "ReplicaState"]

#: Kafka's ``UnifiedLog.UnknownOffset``.
UNKNOWN_OFFSET: Final = -1


@dataclass(slots=True)
class ReplicaState:
    broker_id: int
    log_start_offset: int = UNKNOWN_OFFSET
    log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    last_fetch_time_ms: int = 0
    last_caught_up_time_ms: int = 0
    broker_epoch: int = -1

    def update_fetch_state(
        self,
        fetch_offset: int,
        log_start_offset: int,
        fetch_time_ms: int,
        leader_end_offset: int,
        broker_epoch: int = -1,
    ) -> None:
        """Kafka's ``Replica.updateFetchStateOrThrow``."""
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, fetch_time_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset:
            self.last_caught_up_time_ms = max(self.last_caught_up_time_ms, self.last_fetch_time_ms)
        self.log_start_offset = log_start_offset
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_log_end_offset = leader_end_offset
        self.last_fetch_time_ms = fetch_time_ms
        self.broker_epoch = broker_epoch

    def reset(
        self, now_ms: int, leader_end_offset: int, *, new_leader: bool, in_sync: bool
    ) -> None:
        """Kafka's ``Replica.resetReplicaState`` when this broker becomes (or stays) leader:
        an ISR member counts as caught up now, another as never (so it does not hold the HW
        back); a new leader forgets what the follower had fetched from the previous one."""
        self.last_caught_up_time_ms = now_ms if in_sync else 0
        if new_leader:
            self.log_start_offset = UNKNOWN_OFFSET
            self.log_end_offset = UNKNOWN_OFFSET
            self.last_fetch_leader_log_end_offset = UNKNOWN_OFFSET
            self.last_fetch_time_ms = 0
            self.broker_epoch = -1
        else:
            self.last_fetch_leader_log_end_offset = leader_end_offset
            self.last_fetch_time_ms = now_ms if in_sync else 0

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        """Kafka's ``ReplicaState.isCaughtUp``: at the leader's LEO, or caught up within the
        last ``max_lag_ms``."""
        return (
            leader_end_offset == self.log_end_offset
            or now_ms - self.last_caught_up_time_ms <= max_lag_ms
        )
