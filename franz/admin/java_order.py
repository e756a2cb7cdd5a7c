"""The iteration order of Java's ``HashMap`` / ``HashSet``, which Kafka's tools print in.

Kafka's tools often print a set or a map's entries as the JVM iterates them (broker ids of a
``HashSet<Integer>``, topic names of a ``Collectors.toSet()``, JSON objects that Jackson
writes from a ``HashMap<String, Object>``). To print the same bytes, Franz computes that
order (OpenJDK 17's ``java.util.HashMap``, which ``HashSet`` wraps):

* a key's bucket is ``(h ^ (h >>> 16)) & (table - 1)``, ``h`` its 32-bit ``hashCode``;
  iteration runs over buckets in index order, and a bucket's entries in insertion order
  (resizes split buckets keeping that order; treeified buckets, from 8 collisions in one
  bucket, are not modelled);
* the table is a power of two: ``tableSizeFor(initialCapacity)`` (16 by default), doubled
  whenever the size exceeds ``(int) (table * 0.75)``.

Hash codes: ``Integer.hashCode`` is the value; ``String.hashCode`` is ``s[0]*31^(n-1) + ...``
over UTF-16 code units in int arithmetic; ``TopicPartition.hashCode`` is
``31 * (31 + partition) + topic.hashCode()``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Final, TypeVar

__all__ = [
    "collection_capacity",
    "hash_order",
    "int_hash",
    "string_hash",
    "table_size",
    "topic_partition_hash",
]

T = TypeVar("T")

#: ``HashMap``'s default initial capacity and load factor.
DEFAULT_CAPACITY: Final = 16
LOAD_FACTOR: Final = 0.75


def _int32(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x & 0x80000000 else x


def int_hash(value: int) -> int:
    """``Integer.hashCode``."""
    return _int32(value)


def string_hash(text: str) -> int:
    """``String.hashCode``, over UTF-16 code units."""
    h = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = _int32(31 * h + ((data[i] << 8) | data[i + 1]))
    return h


def topic_partition_hash(tp: tuple[str, int]) -> int:
    """``TopicPartition.hashCode``."""
    topic, partition = tp
    return _int32(31 * (31 + partition) + string_hash(topic))


def collection_capacity(count: int) -> int:
    """The initial capacity ``new HashSet<>(collection)`` asks for:
    ``max((int) (c.size() / .75f) + 1, 16)``."""
    return max(int(count / LOAD_FACTOR) + 1, DEFAULT_CAPACITY)


def table_size(count: int, initial_capacity: int = DEFAULT_CAPACITY) -> int:
    """The table length of a ``HashMap(initial_capacity)`` holding ``count`` entries."""
    table = 1
    while table < initial_capacity:
        table *= 2
    while count > int(table * LOAD_FACTOR):
        table *= 2
    return table


def hash_order(
    items: Iterable[T],
    hash_code: Callable[[T], int],
    *,
    initial_capacity: int = DEFAULT_CAPACITY,
) -> list[T]:
    """``items`` (distinct, in insertion order) in the iteration order of a ``HashMap`` /
    ``HashSet`` created with ``initial_capacity`` and filled with them in that order."""
    ordered = list(items)
    mask = table_size(len(ordered), initial_capacity) - 1

    def bucket(item: T) -> int:
        h = hash_code(item) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    return sorted(ordered, key=bucket)  # stable: a bucket keeps insertion order
