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
    record batch headers in place, and filled with one copy from the received chunks.

    Memory follows the bytes received, never the size announced: a partial frame is a
    ``bytearray`` extended by each chunk (CPython over-allocates it by at most 1/8), so a peer
    that sends a 100 MiB size prefix and stops costs what it sent, not 100 MiB. (Allocating
    the announced size up front let five such peers add 500 MiB to the broker's RSS.)
    Extending is also faster than filling a preallocated buffer, which must be zeroed first:
    0.45 ms against 1.2 ms for a 5 MiB frame in 64-256 KiB chunks.
    """

    __slots__ = ("_buffer", "_frame", "_frame_size", "_max_frame_size")

    def __init__(self, max_frame_size: int) -> None:
        self._buffer = bytearray()  # bytes before the next frame's payload is known
        self._max_frame_size = max_frame_size
        self._frame: bytearray | None = None  # the payload received so far
        self._frame_size = -1  # its announced size

    @property
    def max_frame_size(self) -> int:
        return self._max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, value: int) -> None:
        """A new bound for the frames whose size is read from now on (SASL listeners raise
        it from ``sasl.server.max.receive.size`` once the connection authenticated)."""
        self._max_frame_size = value

    @property
    def buffered(self) -> int:
        """Bytes received and not yet returned as frames."""
        frame = self._frame
        return len(self._buffer) + (0 if frame is None else len(frame))

    @property
    def pending_frame_size(self) -> int:
        """Announced size of the partially received frame (-1: none started)."""
        return self._frame_size

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes | bytearray]:
        """Add received bytes; return the frames now complete, in order."""
        frames: list[bytes | bytearray] = []
        view = memoryview(data)
        pos = 0
        end = len(view)
        while pos < end:
            current = self._frame
            if current is not None:
                take = min(self._frame_size - len(current), end - pos)
                current += view[pos : pos + take]
                pos += take
                if len(current) == self._frame_size:
                    frames.append(current)
                    self._frame = None
                    self._frame_size = -1
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
                self._frame = bytearray(view[pos:end])
                self._frame_size = size
                pos = end
        return frames


def frame(payload_size: int) -> bytes:
    """The size prefix of a frame whose payload is ``payload_size`` bytes."""
    return _SIZE.pack(payload_size)
