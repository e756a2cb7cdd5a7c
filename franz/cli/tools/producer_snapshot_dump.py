"""``franz dump-log-segments`` of a producer snapshot (``<offset>.snapshot``), as Kafka 3.9's
``DumpLogSegments.dumpProducerIdSnapshot`` prints it: one line per producer id::

    producerId: 0 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty
    lastTimestamp: 1700000000000 firstSequence: 0 lastSequence: 4 lastOffset: 4 offsetDelta: 4
    timestamp: 1700000000000

(one line; wrapped here). ``currentTxnFirstOffset`` is Java's ``OptionalLong`` text
(``OptionalLong[5]`` or ``OptionalLong.empty``). The part from ``firstSequence`` on is
printed only for an entry that holds a batch (LastOffset >= 0); without one, the line ends
with ``lastTimestamp: N `` and its trailing space. A corrupt snapshot prints its
error on stderr and the dump goes on (exit status 0), as in Kafka.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

from franz.storage.producer_state import CorruptSnapshotError, read_snapshot

__all__ = ["dump_producer_snapshot"]


def dump_producer_snapshot(path: Path, out: TextIO) -> None:
    try:
        entries = read_snapshot(path)
    except CorruptSnapshotError as exc:
        out.flush()
        print(exc, file=sys.stderr)
        return
    for e in entries:
        txn = e.current_txn_first_offset
        line = (
            f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} "
            f"coordinatorEpoch: {e.coordinator_epoch} currentTxnFirstOffset: "
            f"{'OptionalLong.empty' if txn < 0 else f'OptionalLong[{txn}]'} "
            f"lastTimestamp: {e.last_timestamp} "
        )
        if e.batches:
            batch = e.batches[0]
            line += (
                f"firstSequence: {batch.first_seq} lastSequence: {batch.last_seq} "
                f"lastOffset: {batch.last_offset} offsetDelta: {batch.offset_delta} "
                f"timestamp: {batch.timestamp}"
            )
        out.write(line + "\n")
