"""FrameDecoder: ``int32 size`` + payload frames out of a byte stream cut anywhere."""

from __future__ import annotations

import itertools
import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from franz.errors import ApiError, FranzError
from franz.protocol.framing import FrameDecoder, FramingError, frame

FAST = settings(max_examples=300, deadline=None)
MAX = 1024

PAYLOADS = st.lists(st.binary(max_size=200), max_size=12)


def framed(*payloads: bytes) -> bytes:
    return b"".join(frame(len(p)) + p for p in payloads)


def split(stream: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({0, len(stream), *(c % (len(stream) + 1) for c in cuts)})
    return [stream[a:b] for a, b in itertools.pairwise(points)]


@FAST
@given(payloads=PAYLOADS, cuts=st.lists(st.integers(0, 10_000), max_size=40))
def test_frames_survive_any_chunking(payloads: list[bytes], cuts: list[int]) -> None:
    decoder = FrameDecoder(MAX)
    out: list[bytes] = []
    for chunk in split(framed(*payloads), cuts):
        out.extend(decoder.feed(chunk))
    assert out == payloads
    assert_between_frames(decoder)


def stream_state(payloads: list[bytes], received: int) -> tuple[int, int, int]:
    """After ``received`` bytes of ``framed(*payloads)``: (frames complete, prefix bytes of
    the current frame received, payload bytes of the current frame received)."""
    done = 0
    for payload in payloads:
        whole = 4 + len(payload)
        if received < whole:
            prefix = min(received, 4)
            return done, prefix, received - prefix
        received -= whole
        done += 1
    return done, 0, 0


def assert_between_frames(decoder: FrameDecoder) -> None:
    assert (decoder.buffered, decoder.pending_frame_size) == (0, -1)


def assert_in_payload(decoder: FrameDecoder, size: int, received: int) -> None:
    """The prefix of a ``size``-byte frame and ``received`` payload bytes are in.

    ``buffered`` counts every payload byte received; whether the consumed 4-byte prefix
    still counts is the decoder's business (it is "received and not returned as a frame").
    """
    assert decoder.pending_frame_size == size
    assert decoder.buffered in (received, received + 4)


@FAST
@given(payloads=PAYLOADS)
def test_byte_at_a_time_tracks_buffered_and_pending_size(payloads: list[bytes]) -> None:
    decoder = FrameDecoder(MAX)
    stream = framed(*payloads)
    out: list[bytes] = []
    for i in range(len(stream)):
        out.extend(decoder.feed(stream[i : i + 1]))
        done, prefix, payload = stream_state(payloads, i + 1)
        assert len(out) == done
        if prefix == 0:
            assert_between_frames(decoder)
        elif prefix < 4:
            assert (decoder.buffered, decoder.pending_frame_size) == (prefix, -1)
        else:
            assert_in_payload(decoder, len(payloads[done]), payload)
    assert out == payloads
    assert_between_frames(decoder)


def test_several_frames_in_one_chunk() -> None:
    decoder = FrameDecoder(MAX)
    assert decoder.feed(framed(b"a", b"bc", b"def")) == [b"a", b"bc", b"def"]
    assert_between_frames(decoder)


def test_whole_frames_plus_a_partial_one_keeps_the_partial_one() -> None:
    decoder = FrameDecoder(MAX)
    stream = framed(b"one", b"two", b"three")
    assert decoder.feed(stream[:-2]) == [b"one", b"two"]
    assert_in_payload(decoder, 5, 3)
    assert decoder.feed(stream[-2:]) == [b"three"]
    assert_between_frames(decoder)


def test_zero_length_frames() -> None:
    decoder = FrameDecoder(MAX)
    assert decoder.feed(framed(b"", b"", b"x", b"")) == [b"", b"", b"x", b""]
    assert decoder.feed(frame(0)) == [b""]
    assert_between_frames(decoder)


def test_partial_size_prefix_is_buffered() -> None:
    decoder = FrameDecoder(MAX)
    assert decoder.feed(b"\x00\x00") == []
    assert (decoder.buffered, decoder.pending_frame_size) == (2, -1)
    assert decoder.feed(b"\x00\x03") == []
    assert_in_payload(decoder, 3, 0)
    assert decoder.feed(b"ab") == []
    assert_in_payload(decoder, 3, 2)
    assert decoder.feed(b"c") == [b"abc"]
    assert_between_frames(decoder)


def test_feed_of_nothing_returns_nothing() -> None:
    decoder = FrameDecoder(MAX)
    assert decoder.feed(b"") == []
    assert_between_frames(decoder)


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_accepts_bytes_like_input(kind: type) -> None:
    decoder = FrameDecoder(MAX)
    assert decoder.feed(kind(framed(b"payload"))) == [b"payload"]


def test_frames_are_copies_independent_of_the_input_buffer() -> None:
    decoder = FrameDecoder(MAX)
    data = bytearray(framed(b"abc"))
    (out,) = decoder.feed(data)
    data[4:7] = b"XYZ"
    assert out == b"abc"


def test_frames_are_writable_buffers_of_their_own() -> None:
    # The produce path patches batch headers in place: each frame is its own bytearray.
    decoder = FrameDecoder(MAX)
    stream = framed(b"first", b"second", b"third")
    frames = decoder.feed(stream[:20]) + decoder.feed(stream[20:])
    assert frames == [b"first", b"second", b"third"]
    for f in frames:
        assert isinstance(f, bytearray)
    frames[0][0:1] = b"F"
    frames[2][:] = b"X"
    assert frames == [b"First", b"second", b"X"]
    again = FrameDecoder(MAX).feed(stream)
    assert again == [b"first", b"second", b"third"]


@pytest.mark.parametrize("size", [-1, -2, -(2**31)])
def test_negative_size_is_a_framing_error(size: int) -> None:
    decoder = FrameDecoder(MAX)
    with pytest.raises(FramingError, match="negative"):
        decoder.feed(struct.pack(">i", size))


@pytest.mark.parametrize("size", [MAX + 1, 2**31 - 1])
def test_size_above_max_is_a_framing_error(size: int) -> None:
    decoder = FrameDecoder(MAX)
    with pytest.raises(FramingError, match=r"socket\.request\.max\.bytes"):
        decoder.feed(struct.pack(">i", size))


def test_oversized_frame_is_refused_before_its_payload_arrives() -> None:
    decoder = FrameDecoder(MAX)
    assert decoder.feed(framed(b"ok")) == [b"ok"]
    with pytest.raises(FramingError):
        decoder.feed(frame(MAX + 1)[:3])
        decoder.feed(frame(MAX + 1)[3:])


def test_bad_size_after_good_frames_in_the_same_chunk_raises() -> None:
    # The good frames cannot be delivered: the connection is closed as a whole.
    decoder = FrameDecoder(MAX)
    with pytest.raises(FramingError):
        decoder.feed(framed(b"good") + struct.pack(">i", -5))


def test_size_equal_to_max_is_accepted() -> None:
    decoder = FrameDecoder(MAX)
    payload = bytes(range(256)) * (MAX // 256)
    assert len(payload) == MAX
    assert decoder.feed(framed(payload)) == [payload]


def test_framing_error_is_local_not_an_api_error() -> None:
    assert issubclass(FramingError, FranzError)
    assert not issubclass(FramingError, ApiError)


@given(st.integers(0, 2**31 - 1))
def test_frame_is_the_big_endian_int32_size(size: int) -> None:
    assert frame(size) == struct.pack(">i", size)


def test_an_announced_size_is_not_allocated_before_its_bytes_arrive() -> None:
    """A 64 MiB size prefix and 10 bytes cost about 10 bytes, not 64 MiB (memory follows
    what was received: a peer's claim is not an allocation)."""
    announced = 64 << 20
    decoder = FrameDecoder(announced)
    tracemalloc.start()
    try:
        assert decoder.feed(frame(announced) + b"0123456789") == []
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (decoder.pending_frame_size, decoder.buffered) == (announced, 10)
    assert peak < 64 << 10


def test_a_frame_grows_with_its_chunks_and_comes_out_whole() -> None:
    decoder = FrameDecoder(1 << 20)
    payload = bytes(range(256)) * 4096  # 1 MiB
    stream = framed(payload)
    out: list[bytes | bytearray] = []
    for start in range(0, len(stream), 65_536):
        out += decoder.feed(stream[start : start + 65_536])
        if not out:
            assert decoder.buffered == min(start + 65_536, len(stream)) - 4
    assert out == [payload]
    assert isinstance(out[0], bytearray)
    assert_between_frames(decoder)
