"""kcat (librdkafka's command-line client, a separate process) against a real Franz broker.

``kcat -L`` must list the broker (id 0 at the host:port it listens on) and every topic with its
partitions, each led by broker 0. ``kcat -P -z <codec>`` writes 100,000 distinct records of
varying sizes with binary content, and ``kcat -C -e -o beginning`` must read them back
byte-exact and in order, for each codec; the stored batches must carry that codec
(``codec_problems``: librdkafka silently sends uncompressed batches when it believes the broker
lacks the codec, and legitimately when a batch would not shrink).

kcat is delimiter-based: records travel split by ``-D``, keys by ``-K``. The delimiters here are
multi-byte, contain no NUL (kcat takes C strings) and are passed ``\\xNN``-escaped; the test
data never contains them, so ``stdout`` of the consumer must equal ``stdin`` of the producer.
"""

from __future__ import annotations

import json
import random
import time

import pytest

from tests.support.clients import (
    codec_problems,
    create_topic,
    end_offsets,
    run_kcat,
    stored_batches,
)

DELIMITER = b"\x1e\xfe\x1f\xfd\x1e\xfc"
KEY_DELIMITER = b"\x1d\xfb\x1d\xfa"
RECORDS = 100_000


def _escape(delimiter: bytes) -> str:
    return "".join(f"\\x{byte:02x}" for byte in delimiter)


def test_kcat_lists_the_broker_and_topics_with_partitions(broker):
    create_topic(broker.bootstrap, "alpha", 1)
    create_topic(broker.bootstrap, "beta", 3)

    result = run_kcat(["-L", "-J", "-b", broker.bootstrap, "-m", "10"], timeout=30)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    listing = json.loads(result.stdout)
    assert listing["brokers"] == [{"id": 0, "name": broker.bootstrap}], listing
    assert listing["controllerid"] == 0, listing
    topics = {t["topic"]: t for t in listing["topics"]}
    assert {"alpha", "beta"} <= set(topics), listing
    for name, count in (("alpha", 1), ("beta", 3)):
        topic = topics[name]
        assert "error" not in topic, topic
        assert [p["partition"] for p in topic["partitions"]] == list(range(count)), topic
        for partition in topic["partitions"]:
            assert partition["leader"] == 0, topic
            assert partition["replicas"] == [{"id": 0}], topic
            assert partition["isrs"] == [{"id": 0}], topic

    text = run_kcat(["-L", "-b", broker.bootstrap, "-t", "beta", "-m", "10"], timeout=30)
    assert text.returncode == 0, text.stderr.decode(errors="replace")
    out = text.stdout.decode()
    assert f"broker 0 at {broker.bootstrap}" in out, out
    assert 'topic "beta" with 3 partitions:' in out, out
    for partition in range(3):
        assert f"partition {partition}, leader 0, replicas: 0, isrs: 0" in out, out
    assert "alpha" not in out, out


def _records(seed: int) -> list[tuple[bytes, bytes]]:
    """RECORDS distinct (key, value) pairs: sizes from 0 to ~64 KiB, all 256 byte values."""
    rng = random.Random(seed)
    records = []
    for i in range(RECORDS):
        roll = rng.random()
        if roll < 0.002:
            size = rng.randrange(8_000, 65_000)
        elif roll < 0.2:
            size = rng.randrange(200, 2_000)
        else:
            size = rng.randrange(0, 120)
        # A unique prefix keeps records distinct; then binary noise and compressible text.
        noise = rng.randbytes(size // 3)
        value = b"%d|" % i + noise + (b"franz " * (size // 6 + 1))[: size - len(noise)]
        key = b"" if i % 10 == 0 else b"k%d" % i + rng.randbytes(rng.randrange(0, 6))
        assert DELIMITER not in value and KEY_DELIMITER not in value
        assert DELIMITER not in key and KEY_DELIMITER not in key
        records.append((key, value))
    return records


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_kcat_round_trips_100k_records_byte_exact(broker, codec):
    topic = f"kcat-{codec}"
    create_topic(broker.bootstrap, topic, 1)
    records = _records(seed=len(codec))
    stdin = b"".join(key + KEY_DELIMITER + value + DELIMITER for key, value in records)

    started = time.monotonic()
    produced = run_kcat(
        [
            "-P",
            "-b",
            broker.bootstrap,
            "-t",
            topic,
            "-p",
            "0",
            "-z",
            codec,
            "-D",
            _escape(DELIMITER),
            "-K",
            _escape(KEY_DELIMITER),
            "-X",
            "acks=all",
        ],
        stdin,
        timeout=240,
    )
    assert produced.returncode == 0, produced.stderr.decode(errors="replace")
    assert not produced.stderr, produced.stderr.decode(errors="replace")
    assert end_offsets(broker.bootstrap, topic, [0]) == {0: (0, RECORDS)}
    problems = codec_problems(stored_batches(broker, topic, 0), codec)
    assert not problems, f"kcat -z {codec}: " + "; ".join(problems)

    consumed = run_kcat(
        [
            "-C",
            "-b",
            broker.bootstrap,
            "-t",
            topic,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-q",
            "-D",
            _escape(DELIMITER),
            "-K",
            _escape(KEY_DELIMITER),
        ],
        timeout=240,
    )
    elapsed = time.monotonic() - started
    assert consumed.returncode == 0, consumed.stderr.decode(errors="replace")
    if consumed.stdout != stdin:
        got = consumed.stdout.split(DELIMITER)
        want = stdin.split(DELIMITER)
        first_bad = next(
            (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
            min(len(got), len(want)) - 1,
        )
        pytest.fail(
            f"kcat read back {len(got) - 1} records ({len(consumed.stdout)} bytes) instead of "
            f"{RECORDS} ({len(stdin)} bytes); first difference at record {first_bad}: "
            f"got {got[first_bad][:120]!r}, wanted {want[first_bad][:120]!r}"
        )
    print(f"kcat {codec}: {RECORDS} records produced and consumed in {elapsed:.1f} s")
