"""``franz dump-log-segments`` of producer snapshots (``franz.cli.tools.producer_snapshot_dump``):
lines as Kafka 3.9's DumpLogSegments printed them for a snapshot Franz wrote."""

from __future__ import annotations

import io
from pathlib import Path

from franz.cli.tools.producer_snapshot_dump import dump_producer_snapshot
from franz.storage.producer_state import BatchMetadata, ProducerStateEntry, write_snapshot


def test_lines_are_kafkas(tmp_path: Path) -> None:
    with_batch = ProducerStateEntry(1, 0, last_timestamp=1795589877878)
    with_batch.batches.append(BatchMetadata(0, 4, 5, 9, 1795589877878))
    in_txn = ProducerStateEntry(7, 3, last_timestamp=5, coordinator_epoch=2,
                                current_txn_first_offset=12)  # fmt: skip
    path = tmp_path / "00000000000000000010.snapshot"
    write_snapshot(path, [in_txn, with_batch])
    out = io.StringIO()
    dump_producer_snapshot(path, out)
    assert out.getvalue().splitlines() == [
        # Kafka 3.9 printed exactly this line for the same entry of a Franz snapshot.
        "producerId: 1 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: "
        "OptionalLong.empty lastTimestamp: 1795589877878 firstSequence: 0 lastSequence: 4 "
        "lastOffset: 9 offsetDelta: 4 timestamp: 1795589877878",
        "producerId: 7 producerEpoch: 3 coordinatorEpoch: 2 currentTxnFirstOffset: "
        "OptionalLong[12] lastTimestamp: 5 ",
    ]


def test_corrupt_snapshot_reports_on_stderr(tmp_path: Path, capsys) -> None:
    path = tmp_path / "00000000000000000000.snapshot"
    path.write_bytes(b"\x00\x02" + bytes(8))
    out = io.StringIO()
    dump_producer_snapshot(path, out)
    assert out.getvalue() == ""
    assert "unknown file version 2" in capsys.readouterr().err
