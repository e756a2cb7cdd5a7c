"""Loading a partition directory at startup, with recovery (Kafka's ``LogLoader``).

Steps, in order:

1. Leftovers of interrupted operations: ``*.deleted`` and ``*.cleaned`` files and ``*.tmp``
   checkpoints are removed. An interrupted compaction swap (``Log.replace_segments``) is
   completed as Kafka's ``LogLoader`` does: ``*.swap`` files at or above the lowest
   ``.cleaned`` offset are deleted (KAFKA-6264: an incomplete multi-segment operation);
   for the others, the segment files whose base offset lies in ``[min swap base, max swap
   next offset)`` are the segments the swap replaces and are deleted (so is every non-swap
   file of a ``.log.swap``'s base offset: an old index must not pair with the new log), then
   every ``.swap`` is renamed to its final name.
   Old segments above a cleaned segment's last offset may survive; they hold original
   records only, so the log is merely less compacted until the next round.
2. Every ``*.log`` becomes a ``LogSegment``; index files without a log are removed.
3. A segment whose index files are missing or fail the O(1) sanity check has its indexes
   rebuilt from the log (``recover``), whatever the shutdown was.
4. After an unclean shutdown, every segment from the one holding the recovery point onward
   is recovered: batches re-validated (length, magic, CRC, offset order), indexes rebuilt,
   a torn or corrupt tail cut, and every later segment deleted (nothing after a corrupt
   batch can be trusted). The recovered data is then fsynced and the recovery point moves
   to the log end offset. A clean shutdown skips all of this: no log bytes are read.
5. The active segment's tail is checked on every start, clean or not (it is small: from its
   last offset-index entry's batch to the end of the file, see ``LogSegment.check_tail``).
   A clean-shutdown marker only says the broker stopped cleanly: bytes appended to the
   ``.log`` while it was down would otherwise sit between the last batch and every new
   append, invisible to reads (which stop at them, answering "no data" with error 0 below
   the high watermark) and cut, with the acknowledged appends after them, by the next
   unclean recovery. So the first invalid batch of the tail and everything after it is cut
   (WARN with the segment, the byte count, the position and the log end offset) before the
   log serves anything. Unclean starts have recovered the active segment already.
6. With ``log.recovery.verify.all=true`` every batch of every segment not recovered above is
   CRC-checked (``LogSegment.find_invalid_batches``). A corrupt batch is logged at ERROR with
   its segment, position and offsets and listed in ``Log.corrupt_batches``, and kept: the
   segment is *not* truncated there. Kafka's recovery cuts at the first invalid batch only
   in segments after the recovery point, whose data was never fsynced and can be
   re-replicated; an old segment's later batches are acknowledged, fsynced data, and cutting
   (with every later segment) would turn one flipped byte into the loss of everything after
   it. The broker still serves the corrupt batch's bytes as stored (``sendfile``, as Kafka
   does); a consumer that checks CRCs (Java's ``check.crcs=true``, the default; librdkafka's
   ``check.crcs=true``, not the default) gets a corrupt-record error at that offset, and one
   that does not may decode damaged records. ``franz dump-log-segments --verify`` reports
   the same batches offline.
7. The active segment's indexes are preallocated again to ``segment.index.bytes``.
8. The ``.txnindex`` of every segment recovered above (steps 3 and 4) that holds control
   batches (transaction markers; ``recover`` counts them) is rebuilt, as Kafka's
   ``LogLoader.recoverSegment`` does, from a scratch producer state: loaded from the latest
   snapshot at or below the first recovered segment's base offset, then replayed to the end
   of the last recovered segment; each ABORT marker in a recovered segment is indexed with
   the LSO the replayed state gives it. Unlike Kafka, no snapshot is deleted or taken here
   (Kafka deletes those above the segment and snapshots each recovered one, which leaves
   only the last batch of each producer known after a crash; the replay from the last roll's
   snapshot below keeps all five).

Then, once the log's offsets are known, :func:`rebuild_producer_state` (Kafka's
``rebuildProducerState``) loads the idempotent-producer state: snapshots above the log end
offset are deleted, the latest remaining ``.snapshot`` is loaded (a corrupt one is deleted
and the next older tried), and batch *headers* are replayed from its offset (from the log
start offset without a snapshot) to the log end offset. A clean shutdown leaves a snapshot at
the log end offset, so nothing is replayed; after a crash only the batches after the last
roll's snapshot are. Truncation rebuilds the state the same way. Ongoing transactions come
back from the snapshot (``CurrentTxnFirstOffset``) and the replay; transactions the replay
completes stay unstable until the log's high watermark passes their markers.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from franz.storage.files import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    offset_from_file_name,
    segment_file,
)
from franz.storage.index.base import CorruptIndexError
from franz.storage.producer_state import DEFAULT_PRODUCER_ID_EXPIRATION_MS, ProducerStateManager

if TYPE_CHECKING:
    from franz.protocol.records.batch import RecordBatchView
    from franz.storage.log import Log
    from franz.storage.segment import LogSegment
    from franz.storage.transactions import CompletedTxn

__all__ = ["iter_batch_headers", "load_segments", "rebuild_producer_state"]

log = logging.getLogger(__name__)

# baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta
_HEADER_PREFIX = struct.Struct(">qiibIhi")


def load_segments(
    target: Log,
    *,
    had_clean_shutdown: bool,
    initial_offset: int,
    verify_all: bool = False,
    producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
) -> None:
    """Fill ``target``'s segment list from its directory; see the module docstring."""
    directory = target.dir
    _remove_leftovers(target)
    bases: list[int] = []
    for path in sorted(directory.iterdir()):
        name = path.name
        if name.endswith(LOG_SUFFIX):
            bases.append(offset_from_file_name(name))
        elif name.endswith((INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)):
            base = offset_from_file_name(name)
            if not segment_file(directory, base, LOG_SUFFIX).exists():
                log.info("removing orphaned index file %s", path)
                path.unlink()
    # After an unclean shutdown these segments are fully recovered below anyway.
    floor = [b for b in bases if b <= target.recovery_point]
    recover_from = (floor[-1] if floor else bases[0]) if bases else 0
    recovered: set[int] = set()
    for base in bases:
        if not had_clean_shutdown and base >= recover_from:
            target._add_segment(target.open_segment(base))
            continue
        missing_index = not segment_file(directory, base, INDEX_SUFFIX).exists() or not (
            segment_file(directory, base, TIME_INDEX_SUFFIX).exists()
        )
        segment = target.open_segment(base)
        needs_rebuild = missing_index
        if not needs_rebuild:
            try:
                segment.sanity_check()
            except CorruptIndexError as exc:
                log.warning("%s; rebuilding the indexes of %s", exc, segment.log_path)
                needs_rebuild = True
        if needs_rebuild:
            if missing_index:
                log.info("rebuilding missing index files of %s", segment.log_path)
            _recover_segment(target, segment)
            recovered.add(segment.base_offset)
        target._add_segment(segment)

    if not had_clean_shutdown and target._segments:
        recovered.update(_recover_unflushed(target))

    if not target._segments:
        target._add_segment(target.new_segment(initial_offset))
    active = target.active_segment
    if active.base_offset not in recovered:
        _cut_invalid_tail(target, active)
    if verify_all:
        _verify_all(target, skip=recovered)
    for segment in target._segments[:-1]:
        if segment.base_offset in recovered:
            segment.on_become_inactive()  # final time-index entry, trimmed indexes
    target.active_segment.resize_indexes(target.config.segment_index_bytes)
    with_markers = {
        segment.base_offset
        for segment in target._segments
        if segment.base_offset in recovered and segment.recovered_control_batches
    }
    if with_markers:
        _rebuild_txn_indexes(target, with_markers, initial_offset, producer_id_expiration_ms)


def _rebuild_txn_indexes(
    target: Log, recovered: set[int], log_start_offset: int, producer_id_expiration_ms: int
) -> None:
    """Refill the ``.txnindex`` of the recovered segments (``recover`` emptied them); see
    step 8 of the module docstring. Raises ``OSError``."""
    first = min(recovered)
    last = target._bases.index(max(recovered))
    segments = target._segments
    end = (
        segments[last + 1].base_offset
        if last + 1 < len(segments)
        else segments[last].read_next_offset()
    )
    state = ProducerStateManager(
        target.dir, target.name, producer_id_expiration_ms=producer_id_expiration_ms
    )
    start = state.truncate_and_reload(log_start_offset, first, target._clock.wall_ms(), keep=True)

    def index(txn: CompletedTxn, last_stable_offset: int) -> None:
        segment = segments[target._segment_index_for(txn.last_offset)]
        if segment.base_offset in recovered:
            segment.update_txn_index(txn, last_stable_offset)

    state.replay(iter_batch_headers(target, start, end), on_completed=index)
    aborted = sum(len(segments[target._bases.index(base)].txn_index) for base in recovered)
    log.info(
        "rebuilt the transaction indexes of %d recovered segment(s) of %s from offset %d to "
        "%d: %d aborted transaction(s)",
        len(recovered),
        target.name,
        start,
        end,
        aborted,
    )


def _recover_segment(target: Log, segment: LogSegment) -> int:
    truncated = segment.recover(max_batch_size=None)
    if truncated:
        log.warning(
            "recovery of %s cut %d invalid byte(s) at position %d",
            segment.log_path,
            truncated,
            segment.size,
        )
    return truncated


def _cut_invalid_tail(target: Log, segment: LogSegment) -> None:
    invalid = segment.check_tail()
    if invalid is None:
        return
    cut = segment.cut_tail_at(invalid.position)
    log.warning(
        "%s: cut %d invalid byte(s) at position %d of the active segment %s (%s); the log "
        "now ends at offset %d and new appends follow the last valid batch",
        target.name,
        cut,
        invalid.position,
        segment.log_path,
        invalid.error,
        segment.read_next_offset(),
    )


def _verify_all(target: Log, skip: set[int]) -> None:
    """``log.recovery.verify.all``: report (not cut) corrupt batches; see step 6."""
    checked = 0
    for segment in target._segments:
        if segment.base_offset in skip:
            continue  # just recovered: every batch was checked and the invalid tail cut
        checked += segment.size
        for bad in segment.find_invalid_batches():
            target.corrupt_batches.append((segment.base_offset, bad))
            offsets = (
                f"offsets {bad.base_offset}..{bad.last_offset}"
                if bad.walkable
                else f"the {bad.size} byte(s) to the end of the segment cannot be walked"
            )
            log.error(
                "%s: corrupt batch at position %d of %s (%s; %s); kept as stored: consumers "
                "checking CRCs will fail at it. Check with franz dump-log-segments --verify",
                target.name,
                bad.position,
                segment.log_path,
                bad.error,
                offsets,
            )
    log.info("verified %d byte(s) of %s (log.recovery.verify.all)", checked, target.name)


def _recover_unflushed(target: Log) -> list[int]:
    """Recover from the segment holding the recovery point on; returns their base offsets."""
    segments = target._segments
    start = target._segment_index_for(target.recovery_point)
    recovered_bytes = 0
    for i in range(start, len(segments)):
        segment = segments[i]
        truncated = _recover_segment(target, segment)
        recovered_bytes += segment.size
        if truncated:
            for later in segments[i + 1 :]:
                log.warning(
                    "deleting segment %s after the corrupt segment %d of %s",
                    later.log_path,
                    segment.base_offset,
                    target.name,
                )
                later.delete_files()
            del segments[i + 1 :]
            del target._bases[i + 1 :]
            break
    for segment in segments[start:]:
        segment.flush()
    log.info(
        "recovered %s after an unclean shutdown: re-validated %d byte(s) in %d segment(s)",
        target.name,
        recovered_bytes,
        len(segments) - start,
    )
    target.recovery_point = segments[-1].read_next_offset()
    return [segment.base_offset for segment in segments[start:]]


def _remove_leftovers(target: Log) -> None:
    swaps: list[Path] = []
    cleaned: list[Path] = []
    for path in target.dir.iterdir():
        if path.name.endswith((DELETED_SUFFIX, ".tmp")):
            log.info("removing leftover file %s", path)
            path.unlink()
        elif path.name.endswith(CLEANED_SUFFIX):
            cleaned.append(path)
        elif path.name.endswith(SWAP_SUFFIX):
            swaps.append(path)
    min_cleaned = min((offset_from_file_name(p.name) for p in cleaned), default=None)
    valid: list[Path] = []
    for path in swaps:
        if min_cleaned is not None and offset_from_file_name(path.name) >= min_cleaned:
            log.info("removing swap file %s of an incomplete operation", path)
            path.unlink()
        else:
            valid.append(path)
    for path in cleaned:
        log.info("removing leftover file %s", path)
        path.unlink()
    if valid:
        _complete_swaps(target.dir, valid)


def _complete_swaps(directory: Path, swaps: list[Path]) -> None:
    """Finish an interrupted ``Log.replace_segments``; see the module docstring."""
    log_swaps = [p for p in swaps if p.name.endswith(LOG_SUFFIX + SWAP_SUFFIX)]
    bases = {offset_from_file_name(p.name) for p in log_swaps}
    low = min((offset_from_file_name(p.name) for p in log_swaps), default=None)
    high = max(
        (max(_next_offset(p), offset_from_file_name(p.name) + 1) for p in log_swaps),
        default=None,
    )
    segment_suffixes = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
    for path in directory.iterdir():
        if not path.name.endswith(segment_suffixes):
            continue
        try:
            base = offset_from_file_name(path.name)
        except ValueError:
            continue
        replaced = low is not None and high is not None and low <= base < high
        if replaced or base in bases:
            log.info("deleting %s, replaced by an interrupted compaction swap", path)
            path.unlink()
    for path in swaps:
        final = path.with_name(path.name[: -len(SWAP_SUFFIX)])
        log.info("completing the interrupted swap of %s", final)
        os.replace(path, final)


def _next_offset(path: Path) -> int:
    """The offset after the last whole batch of a ``.log`` file (its base if none)."""
    next_offset = offset_from_file_name(path.name)
    size = path.stat().st_size
    with open(path, "rb") as f:
        position = 0
        while position + _HEADER_PREFIX.size <= size:
            f.seek(position)
            base, length, _, _, _, _, delta = _HEADER_PREFIX.unpack(f.read(_HEADER_PREFIX.size))
            if length < 49 or position + 12 + length > size:
                break
            next_offset = base + delta + 1
            position += 12 + length
    return next_offset


def rebuild_producer_state(target: Log) -> None:
    """Reload ``target.producer_state`` from its snapshots and the log; see the docstring.

    Raises ``OSError`` (the caller takes the log offline).
    """
    state = target.producer_state
    end = target.log_end_offset
    start = state.truncate_and_reload(target.log_start_offset, end, target._clock.wall_ms())
    if start >= end:
        return
    applied = state.replay(iter_batch_headers(target, start, end))
    log.info(
        "rebuilt the producer state of %s from offset %d to %d (%d batch(es) with a producer "
        "id, %d producer(s))",
        target.name,
        start,
        end,
        applied,
        len(state.producers),
    )


def iter_batch_headers(target: Log, start: int, end: int) -> Iterator[RecordBatchView]:
    """Headers of the batches holding offsets in [``start``, ``end``), in offset order."""
    segments = target._segments
    for segment in segments[target._segment_index_for(start) :]:
        if segment.base_offset >= end:
            return
        position = 0
        if segment.base_offset < start:
            location = segment.translate_offset(start)
            if location is None:
                continue
            position = location.position
        for header in segment.iter_batch_headers(position):
            if header.base_offset >= end:
                return
            if header.base_offset + header.last_offset_delta >= start:
                yield header
