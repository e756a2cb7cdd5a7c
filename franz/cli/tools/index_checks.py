"""The index sanity checks of ``franz dump-log-segments --index-sanity-check``: the checks a
Kafka 3.9 broker runs on an index at startup (``OffsetIndex.sanityCheck``,
``TimeIndex.sanityCheck``), with Kafka's messages. Not a tool: helpers of ``dump_log``.
"""

from __future__ import annotations

from pathlib import Path

from franz.admin.options import ToolError
from franz.storage.index.offset_index import OffsetIndex
from franz.storage.index.time_index import TimeIndex

__all__ = ["offset_sanity_check", "time_sanity_check"]


def offset_sanity_check(index: OffsetIndex, path: Path) -> None:
    """Kafka's ``OffsetIndex.sanityCheck`` (last entry offset, whole entries)."""
    if index.entries and index.last_entry.offset < index.base_offset:
        raise ToolError(
            f"Corrupt index found, index file ({path}) has non-zero size but the last offset "
            f"is {index.last_entry.offset} which is less than the base offset "
            f"{index.base_offset}."
        )
    if index.file_length % index.entry_size:
        raise ToolError(
            f"Index file {path} is corrupt, found {index.file_length} bytes which is neither "
            f"positive nor a multiple of {index.entry_size}."
        )


def time_sanity_check(index: TimeIndex, path: Path) -> None:
    """Kafka's ``TimeIndex.sanityCheck``."""
    if index.entries:
        first, last = index.entry_at(0), index.entry_at(index.entries - 1)
        if last.timestamp < first.timestamp:
            raise ToolError(
                f"Corrupt time index found, time index file ({path}) has non-zero size but the "
                f"last timestamp is {last.timestamp} which is less than the first timestamp "
                f"{first.timestamp}"
            )
        if last.offset < index.base_offset:
            raise ToolError(
                f"Corrupt time index found, time index file ({path}) has non-zero size but the "
                f"last offset is {last.offset} which is less than the first offset "
                f"{index.base_offset}"
            )
    if index.file_length % index.entry_size:
        raise ToolError(
            f"Time index file {path} is corrupt, found {index.file_length} bytes which is "
            f"neither positive nor a multiple of {index.entry_size}."
        )
