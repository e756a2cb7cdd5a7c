"""The cleaner's key -> latest offset map (Kafka's ``OffsetMap`` / ``SkimpyOffsetMap``).

Kafka stores a 16-byte MD5 of each key and an 8-byte offset in a fixed buffer of
``log.cleaner.dedupe.buffer.size / log.cleaner.threads`` bytes, and fills it only up to
``log.cleaner.io.buffer.load.factor`` of its slots. Franz keys a ``dict`` by the key bytes
(no hash collisions to reason about) and keeps Kafka's *capacity*: at most
:func:`max_entries_for` entries, computed from the same settings and Kafka's 24 bytes per
entry, so a partition with more distinct dirty keys than that is cleaned over several rounds
exactly as Kafka would.

``latest_offset`` is the last offset of the last batch fully mapped (Kafka's
``updateLatestOffset``): records above it are *past the map* and the cleaner keeps them.
Not thread-safe: one map per cleaner thread.
"""

from __future__ import annotations

__all__ = ["BYTES_PER_ENTRY", "OffsetMap", "max_entries_for"]

#: Kafka's ``SkimpyOffsetMap`` entry: a 16-byte MD5 of the key plus an 8-byte offset.
BYTES_PER_ENTRY = 24


def max_entries_for(dedupe_buffer_size: int, threads: int, load_factor: float) -> int:
    """How many keys one cleaner thread maps per round (Kafka's ``maxDesiredMapSize``)."""
    per_thread = min(dedupe_buffer_size // max(threads, 1), 2**31 - 1)
    slots = per_thread // BYTES_PER_ENTRY
    return max(1, int(slots * load_factor))


class OffsetMap:
    """Key bytes -> the largest offset seen for that key in the dirty section."""

    __slots__ = ("_map", "latest_offset", "max_entries")

    def __init__(self, max_entries: int) -> None:
        if max_entries < 1:
            raise ValueError("an offset map needs room for at least one key")
        self.max_entries = max_entries
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._map)

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1

    @property
    def is_full(self) -> bool:
        return len(self._map) >= self.max_entries

    def put(self, key: bytes, offset: int) -> None:
        """Map ``key`` to ``offset`` (offsets arrive in increasing order)."""
        self._map[key] = offset
        if offset > self.latest_offset:
            self.latest_offset = offset

    def get(self, key: bytes) -> int:
        """The mapped offset of ``key``, or -1 (Kafka's ``OffsetMap.get``)."""
        return self._map.get(key, -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)

    @property
    def utilization(self) -> float:
        return len(self._map) / self.max_entries
