"""Dump log segments, offset indexes and time indexes (Kafka's ``kafka-dump-log.sh``).

    franz dump-log-segments --files FILE[,FILE...] [--print-data-log] [--deep-iteration] [--verify]
                            [--verify-index-only] [--index-sanity-check] [--offsets-decoder]
                            [--transaction-log-decoder]
                            [--skip-record-metadata] [--max-bytes N] [--max-message-size N]

Parses log files and dumps their contents to the console, useful for debugging a seemingly
corrupt log segment. The files are read directly (no broker): a stopped broker's files, or a
live broker's (appends are plain writes). Output is Kafka 3.9's ``DumpLogSegments``:

    Dumping <file>
    Log starting offset: <base offset>                                     (a .log file)
    baseOffset: 0 lastOffset: 2 count: 3 baseSequence: -1 lastSequence: -1 producerId: -1
      producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false
      deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1700000000000 size: 100
      magic: 2 compresscodec: none crc: 123456 isvalid: true                (one line per batch)
    | offset: 0 CreateTime: 1700000000000 keySize: 1 valueSize: 5 sequence: -1 headerKeys: []
      key: k payload: value                          (one line per record, --deep-iteration)
    offset: <offset> position: <position>                                  (a .index file)
    timestamp: <timestamp> offset: <offset>                                (a .timeindex file)

``isvalid`` is the batch's CRC-32C check. ``--print-data-log`` (implied by
``--offsets-decoder``) prints keys and values as UTF-8 and implies ``--deep-iteration``;
``--offsets-decoder`` decodes ``__consumer_offsets`` records as JSON. A partial batch at the
end of a .log is reported as "Found N invalid bytes at the end of <file>".

Index checks, reported on stderr after the dumps: an offset-index entry whose offset is not
the last offset of the batch at its position ("Mismatches in :<file>" then "  Index offset:
X, log offset: Y"); a time-index entry whose timestamp is not the largest of its batch
("Found timestamp mismatch in :<file>"), is not after the previous one ("Found out of order
timestamp in :<file>") or whose offset is not a batch's last offset; non-consecutive record
offsets ("Non-consecutive offsets in <file>"). ``--verify-index-only`` checks without
printing the entries; ``--index-sanity-check`` runs the broker's startup check only.
An index is read up to its first all-zero entry (a preallocated index of a live segment).
As in Kafka, ``--index-sanity-check`` of a live segment's time index fails (its zero-filled
last slot is "less than the first timestamp"): the check is meant for closed segments.
Producer snapshots are printed as Kafka prints them (``producer_snapshot_dump``), and so
are transaction indexes (``.txnindex``) and, with ``--transaction-log-decoder``,
``__transaction_state`` records (``txn_decoder``); KRaft snapshots are not decoded.

Exit status 0, also when mismatches are found; 1 when a file cannot be read or a batch
header is corrupt (Kafka aborts the dump there too). ``--verify`` (Franz's own flag, see
``franz.cli.tools.log_verifier``) checks every batch's CRC instead of dumping, reports each
corrupt one with its position and exits 1 when anything failed.
"""

from __future__ import annotations

import argparse
import struct
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from franz.admin.options import ToolError
from franz.cli.tools.index_checks import offset_sanity_check, time_sanity_check
from franz.cli.tools.log_verifier import verify_log
from franz.cli.tools.offsets_decoder import parse_offsets_record
from franz.cli.tools.producer_snapshot_dump import dump_producer_snapshot
from franz.cli.tools.txn_decoder import dump_txn_index, parse_transaction_log_record
from franz.errors import FranzError
from franz.protocol.records import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    NO_SEQUENCE,
    Record,
    RecordBatchView,
    TimestampType,
    iter_records,
)
from franz.protocol.records.control import (
    ControlRecordType,
    EndTransactionMarker,
    parse_control_record_type_id,
)
from franz.storage.index.offset_index import OffsetIndex, OffsetPosition
from franz.storage.index.time_index import TimeIndex, TimestampOffset

__all__ = [
    "DumpErrors",
    "add_arguments",
    "format_batch",
    "format_record",
    "iter_file_batches",
    "run",
]

INT32_MAX = (1 << 31) - 1
#: Kafka's ``Records.HEADER_SIZE_UP_TO_MAGIC``: fewer bytes left end the walk.
_HEADER_SIZE_UP_TO_MAGIC = 17
#: Kafka's ``LegacyRecord.RECORD_OVERHEAD_V0``: a smaller batchLength is corrupt.
_MIN_RECORD_OVERHEAD = 14
_OFFSET_AND_LENGTH = struct.Struct(">qi")

Parser = Callable[[Record], tuple[str | None, str | None]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--files",
        required=True,
        metavar="file1,file2,...",
        help="REQUIRED: the comma separated list of data and index log files to be dumped",
    )
    parser.add_argument(
        "--print-data-log",
        action="store_true",
        help="print the messages' content when dumping data logs (implies --deep-iteration)",
    )
    parser.add_argument(
        "--deep-iteration",
        action="store_true",
        help="iterate the records of each batch (set by --print-data-log)",
    )
    parser.add_argument(
        "--verify-index-only",
        action="store_true",
        help="just verify the index log without printing its content",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="Franz only: check every batch (length, magic, CRC, offset order) and every index "
        "entry without dumping; report each corrupt batch with its position; exit 1 if any",
    )
    parser.add_argument(
        "--index-sanity-check",
        action="store_true",
        help="just run the sanity check the broker runs on startup, without printing the index",
    )
    parser.add_argument(
        "--offsets-decoder",
        action="store_true",
        help="parse log data as offset data from the __consumer_offsets topic",
    )
    parser.add_argument(
        "--transaction-log-decoder",
        action="store_true",
        help="parse log data as transaction metadata from the __transaction_state topic",
    )
    parser.add_argument(
        "--skip-record-metadata",
        action="store_true",
        help="skip printing the metadata of each record",
    )
    parser.add_argument(
        "--max-message-size",
        type=int,
        default=5 * 1024 * 1024,
        metavar="SIZE",
        help="size of the largest message (default 5242880)",
    )
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=INT32_MAX,
        metavar="SIZE",
        help="limit the bytes of batches read from each .log file",
    )


# -- errors collected over the run, printed at the end (Kafka's order) ------------------------


@dataclass
class DumpErrors:
    """Index/log inconsistencies, keyed by the file's absolute path."""

    index_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_mismatches: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_out_of_order: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    time_offset_not_found: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    non_consecutive: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    def lines(self) -> Iterator[str]:
        # Kafka prepends to a Scala List for these two maps: newest first.
        for name, pairs in self.index_mismatches.items():
            yield f"Mismatches in :{name}"
            for index_offset, log_offset in reversed(pairs):
                yield f"  Index offset: {index_offset}, log offset: {log_offset}"
        for name, pairs in self.time_mismatches.items():
            yield f"Found timestamp mismatch in :{name}"
            for index_ts, log_ts in pairs:
                yield f"  Index timestamp: {index_ts}, log timestamp: {log_ts}"
        for name, pairs in self.time_out_of_order.items():
            yield f"Found out of order timestamp in :{name}"
            for index_ts, previous in pairs:
                yield f"  Index timestamp: {index_ts}, Previously indexed timestamp: {previous}"
        for pairs in self.time_offset_not_found.values():
            yield "The following indexed offsets are not found in the log."
            for indexed, found in pairs:
                yield f"Indexed offset: {indexed}, found log offset: {found}"
        for name, pairs in self.non_consecutive.items():
            yield f"Non-consecutive offsets in {name}"
            for first, second in reversed(pairs):
                yield f"  {first} is followed by {second}"


# -- formatting (pure) -------------------------------------------------------------------------


def timestamp_type_name(batch: RecordBatchView) -> str:
    """Kafka's ``TimestampType.toString``."""
    if batch.timestamp_type == TimestampType.LOG_APPEND_TIME:
        return "LogAppendTime"
    return "CreateTime"


def format_batch(batch: RecordBatchView, position: int) -> str:
    """Kafka's ``printBatchLevel`` line for a v2 batch found at ``position`` of its file."""
    horizon = "OptionalLong.empty"
    if batch.has_delete_horizon:
        horizon = f"OptionalLong[{batch.base_timestamp}]"
    return (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} "
        f"count: {batch.records_count} baseSequence: {batch.base_sequence} "
        f"lastSequence: {batch.last_sequence} producerId: {batch.producer_id} "
        f"producerEpoch: {batch.producer_epoch} "
        f"partitionLeaderEpoch: {batch.partition_leader_epoch} "
        f"isTransactional: {_bool(batch.is_transactional)} "
        f"isControl: {_bool(batch.is_control_batch)} deleteHorizonMs: {horizon} "
        f"position: {position} {timestamp_type_name(batch)}: {batch.max_timestamp} "
        f"size: {batch.size_in_bytes} magic: {batch.magic} "
        f"compresscodec: {batch.compression_type.config_name} crc: {batch.crc} "
        f"isvalid: {_bool(batch.is_valid())}"
    )


def _bool(value: bool) -> str:
    return "true" if value else "false"


def record_sequence(batch: RecordBatchView, record: Record) -> int:
    """Kafka's ``DefaultRecord.sequence``: the batch's base sequence plus the offset delta,
    wrapping at 2^31."""
    if batch.base_sequence == NO_SEQUENCE:
        return NO_SEQUENCE
    return (batch.base_sequence + record.offset - batch.base_offset) % (1 << 31)


def _control_text(record: Record) -> str:
    """Kafka's ``endTxnMarker: COMMIT coordinatorEpoch: N`` for a transaction marker, else
    ``controlType: NAME(id)`` (``franz.protocol.records.control``)."""
    try:
        type_id = parse_control_record_type_id(record.key)
        control_type = ControlRecordType.from_type_id(type_id)
        if control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            marker = EndTransactionMarker.deserialize_value(control_type, record.value)
            return (
                f" endTxnMarker: {control_type.name} coordinatorEpoch: {marker.coordinator_epoch}"
            )
    except (FranzError, ValueError):
        return " controlType: UNKNOWN(-1)"
    return f" controlType: {control_type.name}({type_id})"


def format_record(
    batch: RecordBatchView,
    record: Record,
    *,
    print_contents: bool,
    skip_metadata: bool = False,
    parser: Parser | None = None,
) -> str:
    """One ``| offset: ...`` line of Kafka's deep iteration."""
    prefix = "| "
    out: list[str] = []
    if not skip_metadata:
        key_size = -1 if record.key is None else len(record.key)
        value_size = -1 if record.value is None else len(record.value)
        header_keys = ",".join(h.key for h in record.headers)
        out.append(
            f"{prefix}offset: {record.offset} {timestamp_type_name(batch)}: {record.timestamp} "
            f"keySize: {key_size} valueSize: {value_size} "
            f"sequence: {record_sequence(batch, record)} headerKeys: [{header_keys}]"
        )
        prefix = " "
        if batch.is_control_batch:
            out.append(_control_text(record))
    if print_contents and not batch.is_control_batch:
        key, payload = (parser or string_parser)(record)
        if key is not None:
            out.append(f"{prefix}key: {key}")
            prefix = " "
        if payload is not None:
            out.append(f" payload: {payload}")
    return "".join(out) if out else prefix.rstrip()


def string_parser(record: Record) -> tuple[str | None, str | None]:
    """Kafka's default ``StringDecoder`` for keys and values (UTF-8, bad bytes replaced)."""
    key = None if record.key is None else record.key.decode("utf-8", "replace")
    value = None if record.value is None else record.value.decode("utf-8", "replace")
    return key, value


def offsets_parser(record: Record) -> tuple[str | None, str | None]:
    return parse_offsets_record(record.offset, record.key, record.value)


def transaction_log_parser(record: Record) -> tuple[str | None, str | None]:
    try:
        return parse_transaction_log_record(record.key, record.value)
    except (FranzError, ValueError, struct.error) as exc:
        raise ToolError(
            f"the record at offset {record.offset} is not a __transaction_state record: {exc}"
        ) from None


# -- reading -----------------------------------------------------------------------------------


def iter_file_batches(data: bytes | memoryview, name: str) -> Iterator[RecordBatchView]:
    """The batches of a .log's bytes as Kafka's ``FileLogInputStream`` walks them.

    Stops (without error) when fewer than 17 bytes are left or the next batch runs past the
    end: the caller reports the rest as invalid trailing bytes. A ``batchLength`` below 14
    raises, as in Kafka. The CRC is not checked here (``isvalid`` reports it).
    """
    position, end = 0, len(data)
    while end - position >= _HEADER_SIZE_UP_TO_MAGIC:
        _, length = _OFFSET_AND_LENGTH.unpack_from(data, position)
        if length < _MIN_RECORD_OVERHEAD:
            raise ToolError(
                f"Found record size {length} smaller than minimum record overhead "
                f"({_MIN_RECORD_OVERHEAD}) in file {name}."
            )
        size = LOG_OVERHEAD + length
        if position > end - size:
            return
        magic = data[position + 16]
        if magic != 2:
            raise ToolError(
                f"batch at position {position} of {name} has magic {magic}: message formats "
                "v0 and v1 are not supported (Franz stores v2 only)"
            )
        if size < BATCH_HEADER_SIZE:
            raise ToolError(
                f"Found record batch of {size} bytes at position {position} of {name}, "
                f"smaller than the {BATCH_HEADER_SIZE}-byte v2 header"
            )
        yield RecordBatchView(data, position)
        position += size


def base_offset_of(path: Path) -> int:
    stem = path.name.split(".")[0]
    try:
        return int(stem)
    except ValueError:
        raise ToolError(
            f"{path}: a segment file is named after its base offset (00000000000000000000.log)"
        ) from None


def _read(path: Path, limit: int | None = None) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read() if limit is None else f.read(limit)
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror or exc}") from None


def _decode(batch: RecordBatchView, name: str) -> list[Record]:
    try:
        return list(iter_records(batch))
    except FranzError as exc:
        raise ToolError(
            f"the records of the batch at offset {batch.base_offset} in {name} do not decode "
            f"(isvalid: {_bool(batch.is_valid())}): {exc}"
        ) from None


@dataclass
class Options:
    print_contents: bool
    deep: bool
    verify_only: bool
    sanity_only: bool
    skip_metadata: bool
    parser: Parser
    max_bytes: int
    max_message_size: int


def dump_log(path: Path, opts: Options, errors: DumpErrors, out: TextIO) -> None:
    out.write(f"Log starting offset: {base_offset_of(path)}\n")
    data = _read(path, opts.max_bytes)
    total = path.stat().st_size
    valid_bytes = 0
    last_offset = -1
    name = str(path.absolute())
    for batch in iter_file_batches(data, path.name):
        out.write(format_batch(batch, valid_bytes) + "\n")
        if opts.deep:
            for record in _decode(batch, path.name):
                if last_offset != -1 and record.offset != last_offset + 1:
                    errors.non_consecutive.setdefault(name, []).append((last_offset, record.offset))
                last_offset = record.offset
                line = format_record(
                    batch,
                    record,
                    print_contents=opts.print_contents,
                    skip_metadata=opts.skip_metadata,
                    parser=opts.parser,
                )
                out.write(line + "\n")
        valid_bytes += batch.size_in_bytes
    trailing = min(total, opts.max_bytes) - valid_bytes
    if trailing > 0 and opts.max_bytes == INT32_MAX:
        out.write(f"Found {trailing} invalid bytes at the end of {path.name}\n")


def _index_entries(index: OffsetIndex) -> list[OffsetPosition]:
    entries = []
    for i in range(index.entries):
        entry = index.entry_at(i)
        # A preallocated (live or crashed) index is zero-filled past its last entry.
        if entry.offset == index.base_offset and i > 0:
            break
        entries.append(entry)
    return entries


def _time_entries(index: TimeIndex) -> list[TimestampOffset]:
    entries = []
    for i in range(index.entries):
        entry = index.entry_at(i)
        if entry.offset == index.base_offset and i > 0:
            break
        entries.append(entry)
    return entries


def _check_exists(path: Path) -> None:
    if not path.is_file():
        raise ToolError(f"cannot read {path}: no such file")


def _batch_at(data: bytes, position: int, limit: int) -> RecordBatchView | None:
    """The batch starting at ``position`` if it is whole and at most ``limit`` bytes (Kafka
    slices ``--max-message-size`` bytes there and takes the first batch)."""
    if not 0 <= position <= len(data) - BATCH_HEADER_SIZE:
        return None
    size = LOG_OVERHEAD + _OFFSET_AND_LENGTH.unpack_from(data, position)[1]
    if size < BATCH_HEADER_SIZE or size > limit or position + size > len(data):
        return None
    if data[position + 16] != 2:
        return None
    return RecordBatchView(data, position)


def dump_index(path: Path, opts: Options, errors: DumpErrors, out: TextIO) -> None:
    base = base_offset_of(path)
    log_path = path.with_name(path.name.split(".")[0] + ".log")
    _check_exists(path)
    index = OffsetIndex(path, base, -1, writable=False)
    try:
        if index.entries == 0:
            out.write(f"{path} is empty.\n")
            return
        if opts.sanity_only:
            offset_sanity_check(index, path)
            out.write(f"{path} passed sanity check.\n")
            return
        data = _read(log_path)
        name = str(path.absolute())
        for entry in _index_entries(index):
            batch = _batch_at(data, entry.position, opts.max_message_size)
            if batch is None:
                raise ToolError(
                    f"{path}: entry (offset {entry.offset}, position {entry.position}) points "
                    f"to no batch of {log_path.name}"
                )
            if batch.last_offset != entry.offset:
                errors.index_mismatches.setdefault(name, []).append(
                    (entry.offset, batch.last_offset)
                )
            if not opts.verify_only:
                out.write(f"offset: {entry.offset} position: {entry.position}\n")
    finally:
        index.close_handler()


def dump_time_index(path: Path, opts: Options, errors: DumpErrors, out: TextIO) -> None:
    base = base_offset_of(path)
    stem = path.name.split(".")[0]
    _check_exists(path)
    time_index = TimeIndex(path, base, -1, writable=False)
    try:
        if opts.sanity_only:
            time_sanity_check(time_index, path)
            out.write(f"{path} passed sanity check.\n")
            return
        data = _read(path.with_name(stem + ".log"))
        index_path = path.with_name(stem + ".index")
        _check_exists(index_path)
        index = OffsetIndex(index_path, base, -1, writable=False)
        try:
            offsets = _index_entries(index)
        finally:
            index.close_handler()
        name = str(path.absolute())
        previous = -1
        for entry in _time_entries(time_index):
            position = _floor_position(offsets, entry.offset)
            found = None
            for batch in iter_file_batches(memoryview(data)[position:], path.name):
                if batch.last_offset >= entry.offset:
                    found = batch
                    break
            if found is None:
                errors.time_offset_not_found.setdefault(name, []).append((entry.offset, -1))
            elif found.last_offset != entry.offset:
                errors.time_offset_not_found.setdefault(name, []).append(
                    (entry.offset, found.last_offset)
                )
            else:
                max_ts = max((r.timestamp for r in _decode(found, path.name)), default=-1)
                if max_ts != entry.timestamp:
                    errors.time_mismatches.setdefault(name, []).append((entry.timestamp, max_ts))
                if previous >= entry.timestamp:
                    errors.time_out_of_order.setdefault(name, []).append(
                        (entry.timestamp, previous)
                    )
            if not opts.verify_only:
                out.write(f"timestamp: {entry.timestamp} offset: {entry.offset}\n")
            previous = entry.timestamp
    finally:
        time_index.close_handler()


def _floor_position(entries: list[OffsetPosition], offset: int) -> int:
    """Kafka's ``OffsetIndex.lookup(offset).position``: the last entry at or below ``offset``."""
    position = 0
    for entry in entries:
        if entry.offset > offset:
            break
        position = entry.position
    return position


def run(args: argparse.Namespace) -> int:
    print_contents = bool(
        args.print_data_log or args.offsets_decoder or args.transaction_log_decoder
    )
    parser = string_parser
    if args.offsets_decoder:  # Kafka: the offsets decoder wins when both are given
        parser = offsets_parser
    elif args.transaction_log_decoder:
        parser = transaction_log_parser
    opts = Options(
        print_contents=print_contents,
        deep=bool(args.deep_iteration or print_contents),
        verify_only=args.verify_index_only or args.verify,
        sanity_only=args.index_sanity_check,
        skip_metadata=args.skip_record_metadata,
        parser=parser,
        max_bytes=args.max_bytes,
        max_message_size=args.max_message_size,
    )
    errors = DumpErrors()
    out = sys.stdout
    corrupt = 0
    try:
        for arg in args.files.split(","):
            path = Path(arg)
            out.write(f"Dumping {arg}\n")
            suffix = path.name[path.name.rfind(".") :] if "." in path.name else ""
            if suffix == ".log" and args.verify:
                corrupt += verify_log(path, _read(path, opts.max_bytes), out, sys.stderr)
            elif suffix == ".log":
                dump_log(path, opts, errors, out)
            elif suffix == ".index":
                dump_index(path, opts, errors, out)
            elif suffix == ".timeindex":
                dump_time_index(path, opts, errors, out)
            elif suffix == ".snapshot":
                dump_producer_snapshot(path, out)
            elif suffix == ".txnindex":
                dump_txn_index(path, base_offset_of(path), out)
            elif suffix == ".checkpoint":
                out.flush()
                print(f"Not decoding {suffix} files (not supported yet): {path}", file=sys.stderr)
            else:
                out.flush()
                print(f"Ignoring unknown file {path}", file=sys.stderr)
    finally:
        out.flush()
        for line in errors.lines():
            print(line, file=sys.stderr)
    if args.verify and (corrupt or any(errors.lines())):
        raise ToolError(f"verification failed: {corrupt} corrupt batch(es), index errors above")
    return 0
