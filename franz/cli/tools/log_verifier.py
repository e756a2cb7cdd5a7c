"""``franz dump-log-segments --verify``: check every batch of ``.log`` files (Franz's flag).

Kafka's ``kafka-dump-log.sh`` has no such flag: it prints ``isvalid: false`` on a batch whose
CRC fails and exits 0, and aborts on a header it cannot walk. ``--verify`` checks what the
broker's recovery checks (``franz.storage.batch_check``: length, magic, CRC-32C, offset
order), walks past a corrupt batch whose length can be trusted so one flipped byte costs one
report, and prints nothing per valid batch. Output, one file at a time::

    Dumping <file>                                                      (stdout)
    Corrupt batch at position 964 in <file>: CRC mismatch (stored 1, computed 2)
      (baseOffset: 40 lastOffset: 49 size: 229)                         (stderr, one line)
    Invalid bytes at position 5000 in <file> (120 bytes to the end): batch length ...
                                                                        (stderr: unwalkable)
    Verified 52 batches (51433 bytes) in <file>: 1 corrupt               (stdout)

``.index`` and ``.timeindex`` files are checked as with ``--verify-index-only``. The exit
status is 1 when any batch or index entry failed (``franz dump-log-segments: error: ...``),
0 otherwise: usable in scripts and before restarting a broker on suspect disks.
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from franz.storage.batch_check import check_batches

__all__ = ["verify_log"]


def verify_log(path: Path, data: bytes, out: TextIO, err: TextIO) -> int:
    """Check the batches of one ``.log``'s bytes; returns how many checks failed."""
    batches = failed = 0
    for check in check_batches(data):
        batches += check.walkable
        if check.error is None:
            continue
        failed += 1
        out.flush()
        if check.walkable:
            err.write(
                f"Corrupt batch at position {check.position} in {path}: {check.error} "
                f"(baseOffset: {check.base_offset} lastOffset: {check.last_offset} "
                f"size: {check.size})\n"
            )
        else:
            err.write(
                f"Invalid bytes at position {check.position} in {path} ({check.size} bytes "
                f"to the end): {check.error}\n"
            )
    out.write(f"Verified {batches} batches ({len(data)} bytes) in {path}: {failed} corrupt\n")
    return failed
