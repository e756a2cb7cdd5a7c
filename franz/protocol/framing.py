"""Kafka framing: every request and response is ``int32 size`` followed by ``size`` bytes.

``FrameDecoder`` is sans-IO: feed it bytes as they arrive, take whole frames out. A size that
is negative or above ``max_frame_size`` (``socket.request.max.bytes``, Kafka's
``InvalidReceiveException``) is a protocol violation: the decoder raises ``FramingError`` and
the connection must be closed (there is no way to resynchronise a byte stream).
"""

from __future__ import annotations

import struct
from typing import Final

from franz.errors import FranzError

__all__ = ["FrameDecoder", "FramingError", "frame"]

_SIZE: Final = struct.Struct(">i")


class FramingError(FranzError):
    """The peer sent a frame size Franz will not read; close its connection."""


class FrameDecoder:
    """Splits a byte stream into frames (payloads without their size prefix)."""

    __slots__ = ("_buffer", "_max_frame_size", "_needed")

    def __init__(self, max_frame_size: int) -> None:
        self._buffer = bytearray()
        self._max_frame_size = max_frame_size
        self._needed = -1  # size of the frame being received, -1 before its header

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as frames."""
        return len(self._buffer)

    @property
    def pending_frame_size(self) -> int:
        """Size of the partially received frame (-1: none started)."""
        return self._needed

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add received bytes; return the frames now complete, in order."""
        buffer = self._buffer
        buffer += data
        frames: list[bytes] = []
        while True:
            if self._needed < 0:
                if len(buffer) < 4:
                    return frames
                (size,) = _SIZE.unpack_from(buffer, 0)
                if size < 0:
                    raise FramingError(f"invalid frame size {size} (negative)")
                if size > self._max_frame_size:
                    raise FramingError(
                        f"frame size {size} is larger than socket.request.max.bytes "
                        f"{self._max_frame_size}"
                    )
                self._needed = size
            end = 4 + self._needed
            if len(buffer) < end:
                return frames
            frames.append(bytes(buffer[4:end]))
            del buffer[:end]
            self._needed = -1


def frame(payload_size: int) -> bytes:
    """The size prefix of a frame whose payload is ``payload_size`` bytes."""
    return _SIZE.pack(payload_size)
