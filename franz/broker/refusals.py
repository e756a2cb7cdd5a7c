"""The broker log's record of what it refused: unsupported requests and refused operations.

A request the broker will not serve (an unknown API key, a version outside the accepted
range) or an operation it refuses for a policy or a missing feature (transactions,
``delete.topic.enable=false``) is an expected event, not a fault: the client gets Kafka's
answer, and an operator reading the log should see why once, without a flood. So each
refusal is logged at DEBUG, and at INFO the first time for a given client and kind:

* a *client* is its ``client.id`` plus its host (not the port: a client reconnects from a new
  port, and one process may open several connections);
* the *kind* is a short fixed label ("transactions", "ListOffsets v0"): one client hitting two
  different walls is told about both.

The set of (client, kind) pairs already told is bounded (``capacity``, least recently seen
dropped first), so a storm of distinct client ids cannot grow the broker's memory; a dropped
pair is told again at INFO if it comes back, which is harmless.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Final

__all__ = ["DEFAULT_CAPACITY", "RefusalLog"]

log = logging.getLogger(__name__)

#: Enough for every client of a busy broker; about 100 KiB at most.
DEFAULT_CAPACITY: Final = 1024


class RefusalLog:
    """Logs refusals: INFO the first time per (client id, host, kind), DEBUG afterwards.

    Owned by the dispatcher; used only from the broker's event loop (no locking).
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.capacity = capacity
        self._seen: OrderedDict[tuple[str, str, str], None] = OrderedDict()

    def refused(self, client_id: str, host: str, kind: str, reason: str) -> bool:
        """Log that ``kind`` was refused to the client ``client_id`` at ``host`` because of
        ``reason``; True if this was the first time (logged at INFO)."""
        key = (client_id, host, kind)
        first = key not in self._seen
        if first:
            self._seen[key] = None
            if len(self._seen) > self.capacity:
                self._seen.popitem(last=False)
        else:
            self._seen.move_to_end(key)
        log.log(
            logging.INFO if first else logging.DEBUG,
            "refused %s to client %r at %s: %s",
            kind,
            client_id,
            host,
            reason,
        )
        return first
