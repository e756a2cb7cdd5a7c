"""Golden batches captured from real clients (``tools/capture_golden_batches.py``).

``golden/<client>-<codec>.bin`` holds one v2 batch exactly as the client wrote it:
librdkafka's (through its mock broker, read back with Fetch v4) and aiokafka's encoder.
``<client>-<codec>.json`` holds what the client was asked to produce. Regenerate both with
the tool; never edit them by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from franz.protocol.records import (
    BATCH_HEADER_SIZE,
    CompressionType,
    Header,
    Record,
    RecordBatchView,
    build_batch,
    decompress,
    iter_batches,
    iter_records,
)

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_NAMES = sorted(path.stem for path in GOLDEN.glob("*.bin"))
XERIAL_MAGIC = b"\x82SNAPPY\x00"


def _load(name: str) -> tuple[bytes, dict[str, Any]]:
    raw = (GOLDEN / f"{name}.bin").read_bytes()
    expected = json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))
    return raw, expected


def _hex(value: str | None) -> bytes | None:
    return None if value is None else bytes.fromhex(value)


def _expected_records(batch: dict[str, Any]) -> list[Record]:
    return [
        Record(
            r["offset"],
            r["timestamp"],
            _hex(r["key"]),
            _hex(r["value"]),
            tuple(Header(k, _hex(v)) for k, v in r["headers"]),
        )
        for r in batch["records"]
    ]


def test_every_client_and_codec_was_captured() -> None:
    codecs = [codec.config_name for codec in CompressionType]
    expected = sorted(f"{c}-{codec}" for c in ("librdkafka", "aiokafka") for codec in codecs)
    assert expected == GOLDEN_NAMES


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_golden_batch_decodes_as_expected(name: str) -> None:
    raw, expected = _load(name)
    views = list(iter_batches(raw))
    assert len(views) == len(expected["batches"])
    for view, batch in zip(views, expected["batches"], strict=True):
        assert view.is_valid()
        assert view.base_offset == batch["base_offset"]
        assert view.compression_type == batch["compression"]
        assert view.compression_type.config_name == expected["codec"]
        assert view.timestamp_type == batch["timestamp_type"]
        assert view.records_count == batch["records_count"]
        assert view.last_offset_delta == batch["last_offset_delta"]
        assert view.base_timestamp == batch["base_timestamp"]
        assert view.max_timestamp == batch["max_timestamp"]
        assert view.producer_id == batch["producer_id"]
        assert view.producer_epoch == batch["producer_epoch"]
        assert view.base_sequence == batch["base_sequence"]
        assert view.is_transactional == batch["is_transactional"]
        assert list(iter_records(view)) == _expected_records(batch)


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_franz_encodes_the_same_record_bytes(name: str) -> None:
    """Our uncompressed encoding of the decoded records equals the client's, inflated."""
    raw, _ = _load(name)
    (view,) = iter_batches(raw)
    records = list(iter_records(view))
    ours = build_batch(
        records,
        base_offset=view.base_offset,
        partition_leader_epoch=view.partition_leader_epoch,
        producer_id=view.producer_id,
        producer_epoch=view.producer_epoch,
        base_sequence=view.base_sequence,
    )
    theirs_inflated = decompress(view.compression_type, view.records_payload())
    assert bytes(ours[BATCH_HEADER_SIZE:]) == theirs_inflated
    if view.compression_type is CompressionType.NONE:
        assert bytes(ours) == raw  # header, CRC and all


@pytest.mark.parametrize("name", GOLDEN_NAMES)
def test_patching_a_golden_batch_keeps_it_valid(name: str) -> None:
    raw, expected = _load(name)
    buf = bytearray(raw)
    view = RecordBatchView(buf)
    view.set_base_offset(1_000)
    view.set_partition_leader_epoch(3)
    view.validate()
    offsets = [r.offset for r in iter_records(view)]
    assert offsets == [1_000 + r["offset"] for r in expected["batches"][0]["records"]]


def test_librdkafka_writes_raw_snappy() -> None:
    """librdkafka compresses v2 batches with raw snappy (``rd_kafka_snappy_compress_iov``,
    no xerial header), unlike the Java client's ``SnappyOutputStream``. A broker must
    accept both, and franz's decoder does."""
    raw, _ = _load("librdkafka-snappy")
    (view,) = iter_batches(raw)
    payload = bytes(view.records_payload())
    assert not payload.startswith(XERIAL_MAGIC)


def test_aiokafka_writes_xerial_snappy() -> None:
    raw, _ = _load("aiokafka-snappy")
    (view,) = iter_batches(raw)
    payload = bytes(view.records_payload())
    assert payload[:16] == XERIAL_MAGIC + b"\x00\x00\x00\x01\x00\x00\x00\x01"


@pytest.mark.parametrize("name", ["librdkafka-lz4", "aiokafka-lz4"])
def test_real_clients_write_lz4_frames_with_independent_blocks(name: str) -> None:
    """What Kafka's Java ``Lz4BlockInputStream`` requires (FLG bit 5, KIP-57)."""
    raw, _ = _load(name)
    (view,) = iter_batches(raw)
    frame = bytes(view.records_payload())
    assert frame[:4] == b"\x04\x22\x4d\x18"
    assert frame[4] & 0x20
