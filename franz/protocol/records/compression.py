"""Record batch compression codecs: gzip, snappy, lz4 and zstd, as Kafka writes them.

The codec is bits 0-2 of a v2 batch's ``attributes``; everything after the 61-byte batch
header (the records) is compressed as one block.

- gzip (1): an RFC 1952 gzip member (the Java client writes one with ``GZIPOutputStream``).
  Decoding accepts any number of concatenated members, as ``GZIPInputStream`` does.
- snappy (2): the Java client and aiokafka write *xerial* framing (``snappy-java``'s
  ``SnappyOutputStream``): the 16-byte header ``\\x82SNAPPY\\x00`` + int32 version (1) + int32
  compatible version (1), then blocks of int32 big-endian length + raw snappy. librdkafka
  writes raw snappy (captured in tests/unit/protocol/records/golden), so decoding accepts
  both (dpkp/kafka-python#2414). Franz writes xerial, as the Java client does.
- lz4 (3): the LZ4 *frame* format (KIP-57 fixed the header checksum for magic >= 1).
- zstd (4): a zstd frame (KIP-110); needs Produce v7+ / Fetch v10+ on the wire.

cramjam provides the raw codecs; the xerial framing, a thin container, is done here.
"""

from __future__ import annotations

import enum
import struct
import zlib

import cramjam

__all__ = ["LZ4_DEFAULT_LEVEL", "CompressionType", "compress", "decompress"]

#: Kafka's ``compression.lz4.level`` default: its ``Lz4BlockOutputStream`` uses the fast
#: (non-HC) compressor at this level.
LZ4_DEFAULT_LEVEL = 9


class CompressionType(enum.IntEnum):
    """The codec ids of ``attributes`` bits 0-2 (Kafka's ``CompressionType``)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def config_name(self) -> str:
        """The name used by ``compression.type`` configs (``none``, ``gzip``, ...)."""
        return self.name.lower()

    @classmethod
    def from_config_name(cls, name: str) -> CompressionType:
        """Parse ``none|gzip|snappy|lz4|zstd`` (``compression.type``); ValueError otherwise."""
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown compression type {name!r}") from None


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
# snappy-java's SnappyOutputStream default block size: the uncompressed bytes per block.
_XERIAL_BLOCK_SIZE = 32 * 1024
_INT32 = struct.Struct(">i")


def compress(
    codec: CompressionType | int, data: bytes | memoryview, level: int | None = None
) -> bytes:
    """Compress ``data`` with ``codec`` in the framing Kafka's own clients write.

    ``level`` is the codec's level as Kafka's ``compression.<codec>.level`` configs give it
    (KIP-390): gzip -1 (zlib's default, 6) or 1-9; lz4 1-17, where Kafka's default 9 means
    the fast compressor and any other value LZ4 HC at that level (``Lz4BlockOutputStream``);
    zstd -131072..22. None keeps the codec's own default. Snappy has no level.
    """
    codec = CompressionType(codec)
    if codec is CompressionType.NONE:
        return bytes(data)
    if codec is CompressionType.GZIP:
        # wbits 31: a gzip member (header + deflate + CRC32 + ISIZE), as GZIPOutputStream.
        co = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 31)
        return co.compress(data) + co.flush()
    if codec is CompressionType.SNAPPY:
        return _xerial_compress(data)
    if codec is CompressionType.LZ4:
        # Independent blocks: Kafka's Lz4BlockOutputStream rejects linked ones ("Dependent
        # block stream is unsupported"), so Java consumers could not read them.
        if level is None or level == LZ4_DEFAULT_LEVEL:
            compressor = cramjam.lz4.Compressor(content_checksum=False, block_linked=False)
        else:
            compressor = cramjam.lz4.Compressor(
                level=level, content_checksum=False, block_linked=False
            )
        compressor.compress(bytes(data))
        return bytes(compressor.finish())
    if codec is CompressionType.ZSTD:
        if level is None:
            return bytes(cramjam.zstd.compress(bytes(data)))
        return bytes(cramjam.zstd.compress(bytes(data), level=level))
    raise ValueError(f"unsupported compression codec {codec!r}")


def decompress(codec: CompressionType | int, data: bytes | memoryview) -> bytes:
    """Decompress one batch's records; raises ValueError on malformed input."""
    codec = CompressionType(codec)
    try:
        if codec is CompressionType.NONE:
            return bytes(data)
        if codec is CompressionType.GZIP:
            return _gunzip(bytes(data))
        if codec is CompressionType.SNAPPY:
            raw = bytes(data)
            if raw.startswith(_XERIAL_MAGIC):
                return _xerial_decompress(raw)
            return _snappy_decompress_raw(raw)
        if codec is CompressionType.LZ4:
            return bytes(cramjam.lz4.decompress(bytes(data)))
        if codec is CompressionType.ZSTD:
            return bytes(cramjam.zstd.decompress(bytes(data)))
    except ValueError:
        raise
    except Exception as exc:  # cramjam raises its own DecompressionError types
        raise ValueError(f"malformed {codec.config_name} data: {exc}") from exc
    raise ValueError(f"unsupported compression codec {codec!r}")


def _gunzip(data: bytes) -> bytes:
    out = []
    while data:
        d = zlib.decompressobj(31)
        out.append(d.decompress(data))
        if not d.eof:
            raise ValueError("truncated gzip data")
        data = d.unused_data
    return b"".join(out)


def _xerial_compress(data: bytes | memoryview) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER]
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(bytes(view[start : start + _XERIAL_BLOCK_SIZE])))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _xerial_decompress(data: bytes) -> bytes:
    if len(data) < len(_XERIAL_HEADER):
        raise ValueError("truncated xerial snappy header")
    pos = len(_XERIAL_HEADER)
    out = []
    while pos < len(data):
        if pos + 4 > len(data):
            raise ValueError("truncated xerial snappy block length")
        (length,) = _INT32.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise ValueError("xerial snappy block runs past the end of the data")
        out.append(_snappy_decompress_raw(data[pos : pos + length]))
        pos += length
    return b"".join(out)


# The densest snappy element is a 3-byte copy that emits 64 bytes: real expansion stays under
# 22x. cramjam allocates whatever length the block's preamble claims before decoding, so six
# hostile bytes could ask for 4 GiB; refuse claims no real block can make.
_SNAPPY_MAX_RATIO = 22


def _snappy_decompress_raw(block: bytes) -> bytes:
    length = shift = 0
    for pos in range(min(5, len(block))):
        byte = block[pos]
        length |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            break
    else:
        raise ValueError("malformed snappy length preamble")
    if length > _SNAPPY_MAX_RATIO * len(block):
        raise ValueError(f"snappy block claims {length} bytes from {len(block)} compressed bytes")
    return bytes(cramjam.snappy.decompress_raw(block))
