"""The ``exactlyOnce`` task's pure parts: its names, task markers, the row digest and the
skipping of rows an earlier attempt committed. No Spark session, no broker."""

from __future__ import annotations

import hashlib

import pyarrow as pa

from franz.spark.txn_writer import skip_committed
from franz.spark.write_rows import (
    SinkColumns,
    TaskMarker,
    batch_records,
    decode_task_marker,
    digest_records,
    encode_marker,
    marker_group,
    task_marker_group,
    task_transactional_id,
)

COLUMNS = SinkColumns("out", topic=False, key=True, headers=False, partition=False, timestamp=None)


def batches(*sizes: int) -> list[pa.RecordBatch]:
    """Consecutive rows ``k<i>``/``v<i>`` cut into batches of ``sizes``."""
    out, first = [], 0
    for size in sizes:
        ids = range(first, first + size)
        out.append(
            pa.record_batch(
                [pa.array([b"k%d" % i for i in ids]), pa.array([b"v%d" % i for i in ids])],
                names=["key", "value"],
            )
        )
        first += size
    return out


def digest_of(parts: list[pa.RecordBatch]) -> str:
    digest = hashlib.blake2b(digest_size=16)
    for batch in parts:
        for _ in digest_records(batch_records(batch, COLUMNS), digest):
            pass
    return digest.hexdigest()


def test_names_per_task_partition() -> None:
    assert task_transactional_id("q-1", 3) == "franz-spark-q-1-3"
    assert task_marker_group("q-1", 3) == "franz-spark-sink-q-1-3"
    assert task_marker_group("q-1", 3) != marker_group("q-1")


def test_task_marker_round_trip() -> None:
    metadata = encode_marker("q", 7, 1500, "ab" * 16)
    assert decode_task_marker(metadata, 8) == TaskMarker(7, 1500, "ab" * 16)
    # a driver-side marker (no digest) and a bare offset
    assert decode_task_marker(encode_marker("q", 7, 10), 8) == TaskMarker(7, 10, None)
    assert decode_task_marker("", 8) == TaskMarker(7, -1, None)
    assert decode_task_marker(None, 0) is None


def test_digest_depends_on_rows_not_on_batch_boundaries() -> None:
    assert digest_of(batches(10)) == digest_of(batches(3, 7)) == digest_of(batches(1, 0, 9))
    assert digest_of(batches(10)) != digest_of(batches(9))
    swapped = batches(10)[0].take(pa.array([1, 0, *range(2, 10)]))
    assert digest_of([swapped]) != digest_of(batches(10))  # the order counts


def test_skip_committed_splits_a_batch_and_keeps_the_rest() -> None:
    digest = hashlib.blake2b(digest_size=16)
    rest = skip_committed(iter(batches(4, 4, 4)), COLUMNS, 6, digest)
    assert rest is not None
    assert digest.hexdigest() == digest_of(batches(6))  # what the earlier attempt committed
    left = [row[1] for batch in rest for row in batch_records(batch, COLUMNS)]
    assert left == [b"k%d" % i for i in range(6, 12)]


def test_skip_committed_at_a_batch_boundary_and_at_the_end() -> None:
    digest = hashlib.blake2b(digest_size=16)
    rest = skip_committed(iter(batches(4, 4)), COLUMNS, 4, digest)
    assert rest is not None and sum(b.num_rows for b in rest) == 4
    digest = hashlib.blake2b(digest_size=16)
    rest = skip_committed(iter(batches(4, 4)), COLUMNS, 8, digest)
    assert rest is not None and list(rest) == []
    assert digest.hexdigest() == digest_of(batches(8))


def test_skip_committed_with_fewer_rows_than_committed() -> None:
    digest = hashlib.blake2b(digest_size=16)
    assert skip_committed(iter(batches(4, 4)), COLUMNS, 9, digest) is None
