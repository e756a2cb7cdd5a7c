"""Variable-length integers as Kafka's record format writes them (``ByteUtils``).

Format (protobuf's base-128 varint): 7 value bits per byte, least significant group first,
the high bit set on every byte but the last. Signed values are *zigzag* encoded first
(``(n << 1) ^ (n >> 63)``), so small magnitudes of either sign stay short: 0 -> ``00``,
-1 -> ``01``, 1 -> ``02``, -2 -> ``03``, 300 -> ``d8 04``.

- *varint*: a zigzag int32, at most 5 bytes (``readVarint`` / ``writeVarint``). Record
  lengths, offset deltas, key/value/header lengths and header counts.
- *varlong*: a zigzag int64, at most 10 bytes (``readVarlong`` / ``writeVarlong``). Record
  timestamp deltas.
- *unsigned varint*: no zigzag, at most 5 bytes (``readUnsignedVarint``); the lengths of
  the protocol's compact types (KIP-482).

Decoding mirrors Java: a varint longer than its maximum is rejected, and bits of the last
byte beyond the type's width are dropped (Java's ``int``/``long`` shifts overflow silently).
A varint cut off by the end of the buffer is rejected too. Both raise
``InvalidRecordError`` (INVALID_RECORD), as Kafka's ``DefaultRecord.readFrom`` turns the
``IllegalArgumentException`` / ``BufferUnderflowException`` of ``ByteUtils`` into
``InvalidRecordException``.
"""

from __future__ import annotations

from typing import Final

from franz.errors import InvalidRecordError

__all__ = [
    "MAX_VARINT_SIZE",
    "MAX_VARLONG_SIZE",
    "decode_unsigned_varint",
    "decode_varint",
    "decode_varlong",
    "encode_unsigned_varint",
    "encode_varint",
    "encode_varlong",
    "size_of_unsigned_varint",
    "size_of_varint",
    "size_of_varlong",
]

MAX_VARINT_SIZE: Final = 5
MAX_VARLONG_SIZE: Final = 10

_INT32_MIN: Final = -(1 << 31)
_INT32_MAX: Final = (1 << 31) - 1
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1
_UINT32_MASK: Final = (1 << 32) - 1
_UINT64_MASK: Final = (1 << 64) - 1

Buffer = bytes | bytearray | memoryview

# Single-byte encodings of the zigzag values -64..63: most deltas and lengths in practice.
_SMALL_SIGNED: Final = {n: bytes(((n << 1) ^ (n >> 63),)) for n in range(-64, 64)}


def _decode_unsigned(buf: Buffer, pos: int, max_size: int, mask: int) -> tuple[int, int]:
    """Read a base-128 varint of at most ``max_size`` bytes; keep the bits under ``mask``."""
    try:
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
        result = b & 0x7F
        shift = 7
        for i in range(pos + 1, pos + max_size):
            b = buf[i]
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result & mask, i + 1
            shift += 7
    except IndexError:
        raise InvalidRecordError(
            f"varint at position {pos} is truncated by the end of the buffer"
        ) from None
    raise InvalidRecordError(f"varint at position {pos} is longer than {max_size} bytes")


def decode_varint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Read a zigzag int32 at ``pos``; return ``(value, position after it)``."""
    b = buf[pos] if pos < len(buf) else 0x80  # past the end: let the slow path report it
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    raw, pos = _decode_unsigned(buf, pos, MAX_VARINT_SIZE, _UINT32_MASK)
    return (raw >> 1) ^ -(raw & 1), pos


def decode_varlong(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Read a zigzag int64 at ``pos``; return ``(value, position after it)``."""
    b = buf[pos] if pos < len(buf) else 0x80
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    raw, pos = _decode_unsigned(buf, pos, MAX_VARLONG_SIZE, _UINT64_MASK)
    return (raw >> 1) ^ -(raw & 1), pos


def decode_unsigned_varint(buf: Buffer, pos: int = 0) -> tuple[int, int]:
    """Read an unsigned varint (uint32, no zigzag) at ``pos``; return ``(value, new pos)``."""
    return _decode_unsigned(buf, pos, MAX_VARINT_SIZE, _UINT32_MASK)


def _encode_unsigned(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Encode an int32 as a zigzag varint (1-5 bytes); ValueError outside int32."""
    small = _SMALL_SIGNED.get(value)
    if small is not None:
        return small
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"{value} does not fit in a varint (int32)")
    return _encode_unsigned((value << 1) ^ (value >> 31))


def encode_varlong(value: int) -> bytes:
    """Encode an int64 as a zigzag varlong (1-10 bytes); ValueError outside int64."""
    small = _SMALL_SIGNED.get(value)
    if small is not None:
        return small
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{value} does not fit in a varlong (int64)")
    return _encode_unsigned((value << 1) ^ (value >> 63))


def encode_unsigned_varint(value: int) -> bytes:
    """Encode a uint32 as an unsigned varint (1-5 bytes); ValueError outside uint32."""
    if not 0 <= value <= _UINT32_MASK:
        raise ValueError(f"{value} does not fit in an unsigned varint (uint32)")
    return _encode_unsigned(value)


def _size_of_unsigned(value: int) -> int:
    return max(1, (value.bit_length() + 6) // 7)


def size_of_varint(value: int) -> int:
    """The encoded size of ``encode_varint(value)`` (Kafka's ``sizeOfVarint``)."""
    return _size_of_unsigned(((value << 1) ^ (value >> 31)) & _UINT32_MASK)


def size_of_varlong(value: int) -> int:
    """The encoded size of ``encode_varlong(value)`` (Kafka's ``sizeOfVarlong``)."""
    return _size_of_unsigned(((value << 1) ^ (value >> 63)) & _UINT64_MASK)


def size_of_unsigned_varint(value: int) -> int:
    """The encoded size of ``encode_unsigned_varint(value)``."""
    return _size_of_unsigned(value)
