"""Damaged log files found at startup: bytes after the last batch, a corrupt old batch.

Tail garbage (issue 14, item 1): bytes appended to the active segment's ``.log`` while the
broker was down, after a clean shutdown. The loader validates the active segment's tail on
every start and cuts what does not validate, so new acknowledged appends follow the last
valid batch: a real consumer reads every acknowledged record in order, also after a later
SIGKILL and unclean recovery.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tests.support.clients import OutRecord, consume_with, create_topic, produce_with

TOPIC = "damaged"
COUNT = 1000


def _produce(bootstrap: str, start: int, count: int) -> list[int]:
    records = [OutRecord(None, b"value %d" % i, partition=0) for i in range(start, start + count)]
    result = produce_with(
        "confluent-kafka", bootstrap, TOPIC, records, config={"acks": "1"}, timeout=60
    )
    offsets = [ack.offset for ack in result.acks if ack is not None]
    assert len(offsets) == count
    return offsets


def _consume_values(bootstrap: str, count: int) -> list[tuple[int, bytes | None]]:
    got = consume_with("confluent-kafka", bootstrap, TOPIC, [0], count, 60)
    return [(r.offset, r.value) for r in got]


def _active_log(data_dir: Path) -> Path:
    return sorted((data_dir / "logs" / f"{TOPIC}-0").glob("*.log"))[-1]


def _plausible_batch(base_offset: int) -> bytes:
    """A v2 batch header (offsets after the log end, sane length, magic 2) with a wrong CRC."""
    length = 49 + 40
    header = struct.pack(">qiibI", base_offset, length, 0, 2, 0x12345678)
    # attributes, lastOffsetDelta, timestamps, producer id/epoch, base sequence, record count
    header += struct.pack(">hiqqqhii", 0, 4, 0, 0, -1, -1, -1, 5)
    return header + b"\x07" * (12 + length - len(header))


@pytest.mark.parametrize("garbage", ["random", "plausible-header"])
def test_tail_garbage_after_clean_shutdown_is_cut_before_serving(broker_factory, tmp_path, garbage):
    broker = broker_factory(tmp_path / "b").start()
    create_topic(broker.bootstrap, TOPIC, 1)
    assert _produce(broker.bootstrap, 0, COUNT) == list(range(COUNT))
    assert broker.stop() == 0, broker.output()

    log_file = _active_log(tmp_path / "b")
    junk = _plausible_batch(COUNT) if garbage == "plausible-header" else b"\xde\xad\xbe\xef" * 64
    with log_file.open("ab") as f:
        f.write(junk)

    broker.start()
    assert f"{len(junk)} invalid byte(s)" in broker.output(), broker.output()
    assert _produce(broker.bootstrap, COUNT, COUNT) == list(range(COUNT, 2 * COUNT))
    expected = [(i, b"value %d" % i) for i in range(2 * COUNT)]
    assert _consume_values(broker.bootstrap, 2 * COUNT) == expected

    broker.kill()  # an unclean recovery must not cut anything that was acknowledged
    broker.start()
    assert _consume_values(broker.bootstrap, 2 * COUNT) == expected
