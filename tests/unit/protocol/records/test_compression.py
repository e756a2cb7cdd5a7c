"""Record batch codecs: round trips, the framings real clients write, malformed input."""

from __future__ import annotations

import gzip
import random
import struct
import subprocess
import sys
import zlib

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.protocol.records.compression import CompressionType, compress, decompress
from tests.unit.protocol.records._peers import aiokafka_codec, kafka_python_codec

ALL_CODECS = list(CompressionType)
COMPRESSING_CODECS = [codec for codec in CompressionType if codec is not CompressionType.NONE]
XERIAL_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)


def _large_payload(size: int = 200 * 1024) -> bytes:
    """Half incompressible, half repetitive: several xerial blocks and lz4 blocks."""
    rng = random.Random(20240601)
    noise = rng.randbytes(size // 2)
    text = (b"the quick brown fox jumps over the lazy dog " * (size // 88 + 1))[: size // 2]
    return noise + text


@settings(max_examples=60, deadline=None)
@given(codec=st.sampled_from(ALL_CODECS), data=st.binary(max_size=2048))
def test_every_codec_round_trips(codec: CompressionType, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data
    assert decompress(codec, memoryview(compress(codec, memoryview(data)))) == data


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.config_name)
def test_empty_input_round_trips(codec: CompressionType) -> None:
    assert decompress(codec, compress(codec, b"")) == b""


@pytest.mark.parametrize("codec", ALL_CODECS, ids=lambda c: c.config_name)
def test_large_input_round_trips(codec: CompressionType) -> None:
    data = _large_payload()
    assert decompress(codec, compress(codec, data)) == data


def test_xerial_output_header_and_blocks() -> None:
    """snappy-java's SnappyOutputStream layout: header, then one block per 32 KiB of input."""
    data = _large_payload()
    framed = compress(CompressionType.SNAPPY, data)
    assert framed[:16] == XERIAL_HEADER
    pos, blocks = 16, []
    while pos < len(framed):
        (length,) = struct.unpack_from(">i", framed, pos)
        blocks.append(cramjam.snappy.decompress_raw(framed[pos + 4 : pos + 4 + length]))
        pos += 4 + length
    assert pos == len(framed)
    assert len(blocks) == -(-len(data) // (32 * 1024)) > 2
    assert all(len(block) == 32 * 1024 for block in blocks[:-1])
    assert b"".join(bytes(block) for block in blocks) == data


def test_snappy_decode_accepts_raw_snappy() -> None:
    """librdkafka and kafka-python write raw snappy, without xerial framing."""
    data = b"raw snappy " * 50
    assert decompress(CompressionType.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


def test_snappy_decode_accepts_xerial_from_another_encoder() -> None:
    data = _large_payload(100 * 1024)
    framed = aiokafka_codec.snappy_encode(data, xerial_compatible=True, xerial_blocksize=4096)
    assert framed.startswith(XERIAL_HEADER)
    assert decompress(CompressionType.SNAPPY, framed) == data


def test_snappy_decode_accepts_xerial_without_blocks() -> None:
    assert decompress(CompressionType.SNAPPY, XERIAL_HEADER) == b""


def test_gzip_decode_accepts_concatenated_members() -> None:
    assert decompress(
        CompressionType.GZIP, gzip.compress(b"first ") + gzip.compress(b"second")
    ) == (b"first second")


def test_gzip_output_is_one_gzip_member() -> None:
    out = compress(CompressionType.GZIP, b"payload" * 10)
    assert out[:3] == b"\x1f\x8b\x08"  # magic, deflate
    assert gzip.decompress(out) == b"payload" * 10


@pytest.mark.parametrize(
    ("codec", "encode"),
    [
        (CompressionType.GZIP, lambda d: zlib.compress(d, wbits=31)),
        (CompressionType.GZIP, lambda d: gzip.compress(d, compresslevel=1, mtime=0)),
        (CompressionType.SNAPPY, lambda d: bytes(cramjam.snappy.compress_raw(d))),
        (CompressionType.LZ4, lambda d: bytes(cramjam.lz4.compress(d))),
        (CompressionType.ZSTD, lambda d: bytes(cramjam.zstd.compress(d, level=19))),
    ],
    ids=["gzip-zlib", "gzip-module", "snappy-raw", "lz4-frame", "zstd"],
)
def test_data_compressed_by_the_reference_libraries_decodes(codec: CompressionType, encode) -> None:
    data = _large_payload(80 * 1024)
    assert decompress(codec, encode(data)) == data


@pytest.mark.parametrize(
    ("codec", "encode", "decode"),
    [
        (CompressionType.GZIP, aiokafka_codec.gzip_encode, aiokafka_codec.gzip_decode),
        (CompressionType.SNAPPY, aiokafka_codec.snappy_encode, aiokafka_codec.snappy_decode),
        (CompressionType.LZ4, aiokafka_codec.lz4_encode, aiokafka_codec.lz4_decode),
        (CompressionType.ZSTD, aiokafka_codec.zstd_encode, aiokafka_codec.zstd_decode),
        (CompressionType.GZIP, kafka_python_codec.gzip_encode, kafka_python_codec.gzip_decode),
    ],
    ids=["aiokafka-gzip", "aiokafka-snappy", "aiokafka-lz4", "aiokafka-zstd", "kafka-python-gzip"],
)
def test_interop_with_client_codecs(codec: CompressionType, encode, decode) -> None:
    data = _large_payload(100 * 1024)
    assert decompress(codec, encode(data)) == data
    assert bytes(decode(compress(codec, data))) == data


def _lz4_frame_descriptor(frame: bytes) -> tuple[int, int]:
    assert frame[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic, little-endian 0x184D2204
    return frame[4], frame[5]


def test_lz4_output_is_readable_by_kafkas_java_decoder() -> None:
    """Kafka's ``Lz4BlockOutputStream.FLG.validate``: version 1, independent blocks, no
    reserved bits; ``BD.validate``: block size id 4..7 (64 KiB .. 4 MiB). librdkafka writes
    ``FLG=0x60``, the Java client ``0x60`` or ``0x70``, aiokafka ``0x70``."""
    flg, bd = _lz4_frame_descriptor(compress(CompressionType.LZ4, _large_payload()))
    assert flg >> 6 == 1  # version
    assert flg & 0x03 == 0  # reserved
    assert bd & 0x8F == 0 and 4 <= (bd >> 4) & 0x07 <= 7
    assert flg & 0x20, f"FLG {flg:#04x}: block independence bit not set"


@pytest.mark.parametrize("codec", COMPRESSING_CODECS, ids=lambda c: c.config_name)
@pytest.mark.parametrize(
    "garbage",
    [b"\xff", b"not compressed at all, just text", bytes(range(256))],
    ids=["one-byte", "text", "bytes"],
)
def test_malformed_input_raises_value_error(codec: CompressionType, garbage: bytes) -> None:
    with pytest.raises(ValueError):
        decompress(codec, garbage)


@pytest.mark.parametrize("codec", COMPRESSING_CODECS, ids=lambda c: c.config_name)
def test_truncated_input_raises_value_error(codec: CompressionType) -> None:
    compressed = compress(codec, _large_payload(64 * 1024))
    with pytest.raises(ValueError):
        decompress(codec, compressed[: len(compressed) // 2])


@pytest.mark.parametrize(
    "framed",
    [
        XERIAL_HEADER[:10],
        XERIAL_HEADER + b"\x00\x00",
        XERIAL_HEADER + struct.pack(">i", 100) + b"short",
        XERIAL_HEADER + struct.pack(">i", -1),
        XERIAL_HEADER + struct.pack(">i", 4) + b"\xff\xff\xff\xff",
    ],
    ids=["short-header", "short-length", "block-overrun", "negative-length", "bad-block"],
)
def test_malformed_xerial_framing_raises_value_error(framed: bytes) -> None:
    with pytest.raises(ValueError):
        decompress(CompressionType.SNAPPY, framed)


def test_gzip_trailing_garbage_raises_value_error() -> None:
    with pytest.raises(ValueError):
        decompress(CompressionType.GZIP, gzip.compress(b"ok") + b"garbage")


@pytest.mark.parametrize(
    ("name", "codec"),
    [("none", 0), ("gzip", 1), ("snappy", 2), ("lz4", 3), ("zstd", 4), (" ZSTD ", 4)],
)
def test_config_names(name: str, codec: int) -> None:
    parsed = CompressionType.from_config_name(name)
    assert parsed == codec
    assert parsed.config_name == name.strip().lower()


def test_unknown_config_name_raises_value_error() -> None:
    with pytest.raises(ValueError, match="unknown compression type"):
        CompressionType.from_config_name("producer")


def test_snappy_length_preamble_cannot_exhaust_memory() -> None:
    """Six bytes claiming a 4 GiB block must be a ValueError, not an aborted process.

    Snappy's densest element (a 3-byte copy of 64 bytes) bounds the real expansion below
    22x, so a preamble beyond that is malformed on its face.
    """
    script = (
        "import resource\n"
        "resource.setrlimit(resource.RLIMIT_AS, (1 << 31, 1 << 31))\n"
        "from franz.protocol.records.compression import CompressionType, decompress\n"
        "for data in (b'\\xfe\\xff\\xff\\xff\\x0f\\x00',\n"
        "             b'\\x82SNAPPY\\x00' + bytes([0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 6])\n"
        "             + b'\\xfe\\xff\\xff\\xff\\x0f\\x00'):\n"
        "    try:\n"
        "        decompress(CompressionType.SNAPPY, data)\n"
        "    except ValueError:\n"
        "        pass\n"
        "    else:\n"
        "        raise SystemExit('accepted')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-500:]
