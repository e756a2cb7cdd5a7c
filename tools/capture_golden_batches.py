"""Capture golden v2 record batches written by real Kafka clients, for franz's codec tests.

Writes ``tests/unit/protocol/records/golden/<client>-<codec>.bin`` (the raw batch bytes) and
``<client>-<codec>.json`` (what the client was asked to produce), for:

- ``librdkafka``: confluent-kafka's ``Producer`` with ``test.mock.num.brokers=1`` runs
  librdkafka's in-process mock broker on a loopback port. The producer writes one batch per
  codec (``linger.ms`` keeps the records together); the mock stores the batch as the client
  sent it, and a hand-made Fetch v4 request (kafka-python's protocol classes, over a plain
  socket) reads those stored bytes back.
- ``aiokafka``: ``aiokafka.record.default_records.DefaultRecordBatchBuilder``, the encoder
  aiokafka's producer uses, called directly.

The JSON holds the expected decoding, derived from the inputs only (never from franz):
records with absolute offsets and timestamps, bytes as hex strings (``null`` for null), and
the batch header fields the client controls.

Run from the repository root: ``.venv/bin/python tools/capture_golden_batches.py``. The
outputs only change when a client's encoder or codecs change (the gzip header's mtime, which
aiokafka's ``GzipFile`` takes from the clock, is pinned).
"""

from __future__ import annotations

import json
import socket
import struct
import sys
from io import BytesIO
from pathlib import Path
from typing import Any
from unittest import mock

GOLDEN_DIR = (
    Path(__file__).resolve().parent.parent / "tests" / "unit" / "protocol" / "records" / "golden"
)
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
TOPIC = "golden"
BASE_TIMESTAMP = 1_700_000_000_000

# (timestamp, key, value, headers). Values are repetitive so that every codec shrinks the
# batch: both clients fall back to an uncompressed batch when compression does not pay.
RECORDS: list[tuple[int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]] = [
    (
        BASE_TIMESTAMP,
        b"user-0",
        b"alpha beta gamma delta " * 4,
        [("trace-id", b"0001"), ("empty", b""), ("nil", None)],
    ),
    (BASE_TIMESTAMP + 123, None, b"record without a key " * 3, []),
    # Earlier than the first record: maxTimestamp is not the last record's timestamp.
    (BASE_TIMESTAMP - 1_000, b"user-2", b"", [("ключ", b"\x00\xff\x80")]),
    (BASE_TIMESTAMP + 5_000, b"user-3", None, [("tombstone", b"yes")]),
    (BASE_TIMESTAMP + 5_001, b"user-4", bytes(range(24)) * 3, [("k", b"v"), ("k", b"v2")]),
]


def expected_json(client: str, codec: str, client_version: str) -> dict[str, Any]:
    return {
        "client": client,
        "client_version": client_version,
        "codec": codec,
        "batches": [
            {
                "base_offset": 0,
                "compression": CODECS[codec],
                "timestamp_type": 0,
                "records_count": len(RECORDS),
                "last_offset_delta": len(RECORDS) - 1,
                "base_timestamp": RECORDS[0][0],
                "max_timestamp": max(r[0] for r in RECORDS),
                "producer_id": -1,
                "producer_epoch": -1,
                "base_sequence": -1,
                "is_transactional": False,
                "records": [
                    {
                        "offset": offset,
                        "timestamp": timestamp,
                        "key": None if key is None else key.hex(),
                        "value": None if value is None else value.hex(),
                        "headers": [[k, None if v is None else v.hex()] for k, v in headers],
                    }
                    for offset, (timestamp, key, value, headers) in enumerate(RECORDS)
                ],
            }
        ],
    }


# -- librdkafka through its mock broker --------------------------------------------------------


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("mock broker closed the connection")
        chunks += chunk
    return bytes(chunks)


def fetch_raw_records(host: str, port: int, topic: str, partition: int) -> bytes:
    """Fetch v4 (the first version carrying v2 batches) from offset 0; the raw records."""
    from kafka.protocol.old.fetch import FetchRequest_v4, FetchResponse_v4

    request = FetchRequest_v4(
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=0,
        topics=[(topic, [(partition, 0, 1 << 20)])],
    )
    request.with_header(correlation_id=1, client_id="franz-golden-capture")
    with socket.create_connection((host, port), timeout=10) as sock:
        sock.sendall(request.encode(header=True, framed=True))
        (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
        response = FetchResponse_v4.decode(BytesIO(_recv_exactly(sock, size)), header=True)
    (topic_response,) = response.to_object()["responses"]
    (partition_response,) = topic_response["partitions"]
    if partition_response["error_code"] != 0:
        raise RuntimeError(f"fetch failed with error code {partition_response['error_code']}")
    return bytes(partition_response["records"])


def capture_librdkafka(codec: str) -> bytes:
    import confluent_kafka

    errors: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    producer = confluent_kafka.Producer(
        {
            "test.mock.num.brokers": 1,
            "compression.type": codec,
            "linger.ms": 1000,
            "enable.idempotence": False,
            "acks": "all",
            "log_level": 3,
        }
    )
    metadata = producer.list_topics(timeout=10)
    (broker,) = metadata.brokers.values()
    for timestamp, key, value, headers in RECORDS:
        producer.produce(
            TOPIC,
            key=key,
            value=value,
            partition=0,
            timestamp=timestamp,
            headers=headers,
            on_delivery=on_delivery,
        )
    if producer.flush(15) != 0 or errors:
        raise RuntimeError(f"librdkafka did not deliver the records: {errors}")
    raw = fetch_raw_records(broker.host, broker.port, TOPIC, 0)
    del producer
    return raw


# -- aiokafka's encoder ------------------------------------------------------------------------


def capture_aiokafka(codec: str) -> bytes:
    from aiokafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=CODECS[codec],
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for offset, (timestamp, key, value, headers) in enumerate(RECORDS):
        if builder.append(offset, timestamp, key, value, headers) is None:
            raise RuntimeError("aiokafka's builder refused a record")
    # aiokafka's gzip goes through gzip.GzipFile, which stamps the current time in the gzip
    # header; pin it so that reruns write identical files.
    with mock.patch("gzip.time.time", return_value=BASE_TIMESTAMP / 1000):
        return bytes(builder.build())


# -- checks that do not use franz --------------------------------------------------------------


def check_single_batch(raw: bytes, codec: str, source: str) -> None:
    """One whole batch, magic 2, compressed with the codec asked for."""
    if len(raw) < 61:
        raise RuntimeError(f"{source}: {len(raw)} bytes is not a batch")
    (batch_length,) = struct.unpack_from(">i", raw, 8)
    if 12 + batch_length != len(raw):
        raise RuntimeError(f"{source}: expected exactly one batch, got {len(raw)} bytes")
    (magic,) = struct.unpack_from(">b", raw, 16)
    (attributes,) = struct.unpack_from(">h", raw, 21)
    (count,) = struct.unpack_from(">i", raw, 57)
    if magic != 2 or attributes & 7 != CODECS[codec] or count != len(RECORDS):
        raise RuntimeError(
            f"{source}: magic {magic}, codec {attributes & 7}, {count} records; expected "
            f"magic 2, codec {CODECS[codec]}, {len(RECORDS)} records"
        )


def dumps_one_record_per_line(expected: dict[str, Any]) -> str:
    """Indented JSON, except that each record stays on one line."""
    placeholders: dict[str, str] = {}
    shallow = dict(expected)
    shallow["batches"] = []
    for batch in expected["batches"]:
        batch = dict(batch)
        marks = []
        for record in batch["records"]:
            mark = f"@record-{len(placeholders)}@"
            placeholders[json.dumps(mark)] = json.dumps(record, ensure_ascii=False)
            marks.append(mark)
        batch["records"] = marks
        shallow["batches"].append(batch)
    text = json.dumps(shallow, indent=1, ensure_ascii=False)
    for mark, record_text in placeholders.items():
        text = text.replace(mark, record_text)
    return text + "\n"


def write_golden(name: str, raw: bytes, expected: dict[str, Any]) -> None:
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    (GOLDEN_DIR / f"{name}.bin").write_bytes(raw)
    text = dumps_one_record_per_line(expected)
    (GOLDEN_DIR / f"{name}.json").write_text(text, encoding="utf-8")
    print(f"wrote {name}.bin ({len(raw)} bytes) and {name}.json")


def main() -> int:
    import aiokafka
    import confluent_kafka

    librdkafka_version = f"librdkafka {confluent_kafka.libversion()[0]}"
    aiokafka_version = f"aiokafka {aiokafka.__version__}"
    for codec in CODECS:
        raw = capture_librdkafka(codec)
        check_single_batch(raw, codec, f"librdkafka {codec}")
        write_golden(
            f"librdkafka-{codec}", raw, expected_json("librdkafka", codec, librdkafka_version)
        )
        raw = capture_aiokafka(codec)
        check_single_batch(raw, codec, f"aiokafka {codec}")
        write_golden(f"aiokafka-{codec}", raw, expected_json("aiokafka", codec, aiokafka_version))
    return 0


if __name__ == "__main__":
    sys.exit(main())
