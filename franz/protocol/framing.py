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
    """Splits a byte stream into frames (payloads without their size prefix).

    Each frame is returned as its own ``bytearray``: writable, so the produce path can patch
    record batch headers in place, and filled with one copy from the received chunks (a
    large frame gets its final buffer as soon as its size is known).
    """

    __slots__ = ("_buffer", "_filled", "_frame", "_max_frame_size")

    def __init__(self, max_frame_size: int) -> None:
        self._buffer = bytearray()  # bytes before the next frame's payload is known
        self._max_frame_size = max_frame_size
        self._frame: bytearray | None = None  # the payload being received
        self._filled = 0

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as frames."""
        return len(self._buffer) + self._filled

    @property
    def pending_frame_size(self) -> int:
        """Size of the partially received frame (-1: none started)."""
        return -1 if self._frame is None else len(self._frame)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes | bytearray]:
        """Add received bytes; return the frames now complete, in order."""
        frames: list[bytes | bytearray] = []
        view = memoryview(data)
        pos = 0
        end = len(view)
        while pos < end:
            current = self._frame
            if current is not None:
                take = min(len(current) - self._filled, end - pos)
                current[self._filled : self._filled + take] = view[pos : pos + take]
                self._filled += take
                pos += take
                if self._filled == len(current):
                    frames.append(current)
                    self._frame = None
                    self._filled = 0
                continue
            buffer = self._buffer
            if buffer or end - pos < 4:
                need = 4 - len(buffer)
                buffer += view[pos : pos + need]
                pos += min(need, end - pos)
                if len(buffer) < 4:
                    break
                (size,) = _SIZE.unpack_from(buffer, 0)
                buffer.clear()
            else:
                (size,) = _SIZE.unpack_from(view, pos)
                pos += 4
            if size < 0:
                raise FramingError(f"invalid frame size {size} (negative)")
            if size > self._max_frame_size:
                raise FramingError(
                    f"frame size {size} is larger than socket.request.max.bytes "
                    f"{self._max_frame_size}"
                )
            if end - pos >= size:
                frames.append(bytearray(view[pos : pos + size]))
                pos += size
            else:
                self._frame = bytearray(size)
                self._filled = 0
        return frames


def frame(payload_size: int) -> bytes:
    """The size prefix of a frame whose payload is ``payload_size`` bytes."""
    return _SIZE.pack(payload_size)
