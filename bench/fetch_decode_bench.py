"""Fetch response decoding: Franz's hand-written decoder against kio's, in the same run.

Run ``python -m bench.fetch_decode_bench [--mib 1] [--partitions 1,16] [--runs 7]``.

The response is what a follower's Fetch (v12 by topic name, v17 by topic id) gets back: one
topic, ``partitions`` partitions sharing ``mib`` MiB of real v2 record batches (16 KiB each,
uncompressed, from ``RecordBatchBuilder``), encoded by the broker's own encoder. Each figure
is the median of ``runs`` timed loops of whole-response decodes; MB/s counts the response
size. kio is the reference: ``entity_reader(FetchResponse)`` copies every partition's
records into ``bytes``; the hand decoder returns views of the frame.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
import uuid
from collections.abc import Callable

from kio.serial import entity_reader

from franz.protocol.api_keys import ApiKey
from franz.protocol.fetch import FetchPartitionResult, FetchTopicResult, encode_fetch_response
from franz.protocol.fetch_response import decode_fetch_response
from franz.protocol.messages import response_type
from franz.protocol.records import RecordBatchBuilder

BATCH_BYTES = 16 * 1024


def make_response(version: int, mib: float, partitions: int) -> bytes:
    builder = RecordBatchBuilder()
    for i in range(BATCH_BYTES // 128):
        builder.append(0, None, bytes([i % 256]) * 100)
    one = bytes(builder.build())
    count = max(1, int(mib * 1024 * 1024) // len(one))
    per_partition = max(1, count // partitions)
    results = [
        FetchPartitionResult(p, 0, 10**6, 10**6, 0, -1, [one] * per_partition)
        for p in range(partitions)
    ]
    chunks = encode_fetch_response(version, [FetchTopicResult("bench", uuid.uuid4(), results)])
    return b"".join(c for c in chunks if isinstance(c, bytes))


def timed(decode: Callable[[], object], runs: int, min_seconds: float = 0.2) -> float:
    """Median seconds per call over ``runs`` loops of at least ``min_seconds`` each."""
    per_call = []
    for _ in range(runs):
        n = 0
        start = time.perf_counter()
        while True:
            decode()
            n += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds:
                break
        per_call.append(elapsed / n)
    return statistics.median(per_call)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=1.0)
    parser.add_argument("--partitions", default="1,16")
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args(argv)
    print(
        f"{'version':>7} {'parts':>5} {'bytes':>9} {'franz us':>9} {'kio us':>9} "
        f"{'franz MB/s':>11} {'kio MB/s':>9} {'ratio':>6}"
    )
    for version in (12, 17):
        kio_read = entity_reader(response_type(ApiKey.FETCH, version))
        for partitions in (int(p) for p in args.partitions.split(",")):
            body = make_response(version, args.mib, partitions)
            franz = timed(functools.partial(decode_fetch_response, version, body), args.runs)
            kio = timed(functools.partial(kio_read, body, 0), args.runs)
            mb = len(body) / 1e6
            print(
                f"{version:>7} {partitions:>5} {len(body):>9} {franz * 1e6:>9.1f} "
                f"{kio * 1e6:>9.1f} {mb / franz:>11.0f} {mb / kio:>9.0f} {kio / franz:>6.1f}"
            )


if __name__ == "__main__":
    main()
