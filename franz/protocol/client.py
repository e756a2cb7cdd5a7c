"""The client side of the Kafka protocol, sans-IO: requests out, responses matched in.

``ClientCodec`` is what one outbound connection needs, without the socket: it frames each
request with its header and a fresh correlation id, remembers what is in flight, splits the
byte stream coming back into response frames (``FrameDecoder``), strips each response's
header and hands back the body with the request it answers.

Wire format (``RequestHeader.json`` / ``ResponseHeader.json``, see ``franz.protocol.headers``)::

    request frame   size int32, api_key int16, api_version int16, correlation_id int32,
                    client_id nullable string (int16 length), [tagged fields: flexible only],
                    body
    response frame  size int32, correlation_id int32, [tagged fields: header v1], body

Rules this file keeps (Kafka's ``NetworkClient`` / ``InFlightRequests`` are the model):

* **In order.** A Kafka broker answers the requests of one connection in the order they were
  sent (its channel is muted until a response is sent). So the next response always answers
  the oldest request in flight that expects one; a correlation id that differs is a broken
  peer, and ``CorrelationIdMismatchError`` says the connection must be closed (Kafka's
  ``NetworkClient.correlate`` throws ``CorrelationIdMismatchException`` the same way).
* **Header versions** come from the same rule as the broker's: header v2/v1 exactly for
  flexible versions, and a v0 response header for ApiVersions whatever its version
  (KIP-511). Flexibility is ``SUPPORTED_APIS`` for the APIs Franz serves, and
  ``INTER_BROKER_APIS`` for the controller's APIs it only sends: ``franz.protocol.headers``
  owns both rules, for the inbound and the outbound side.
* **No response** for Produce with acks=0: such a request takes no place in flight.
* **Bodies** are bytes: kio entities are encoded with ``encode_body``; APIs kio lacks
  (LeaderAndIsr, UpdateMetadata and StopReplica were removed in Kafka 4.0, whose schemas kio
  0.6 is generated from) and hot paths (Fetch responses: ``franz.protocol.fetch_response``)
  are encoded and decoded by hand.

Correlation ids count up from 0 and wrap at 2**31 - 1, as in Kafka's ``NetworkClient``.
"""

from __future__ import annotations

import collections
import functools
import io
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from kio.serial import entity_reader, entity_writer

from franz.errors import FranzError
from franz.protocol.api_keys import ApiKey
from franz.protocol.framing import FrameDecoder
from franz.protocol.headers import (
    encode_request_header,
    response_header_version,
    skip_tagged_fields,
)
from franz.protocol.headers import (
    request_is_flexible as is_flexible,
)
from franz.protocol.messages import response_type

__all__ = [
    "ClientCodec",
    "ClientResponse",
    "CorrelationIdMismatchError",
    "ResponseDecodeError",
    "UnexpectedResponseError",
    "decode_body",
    "encode_body",
    "encode_request_header",
    "is_flexible",
    "negotiate_version",
    "request_header_version",
    "response_header_version",
]

_INT32: Final = struct.Struct(">i")
_MAX_CORRELATION_ID: Final = 2**31 - 1

class ClientProtocolError(FranzError):
    """The peer broke the protocol; the connection must be closed."""


class CorrelationIdMismatchError(ClientProtocolError):
    """A response's correlation id is not the one of the oldest request in flight."""


class UnexpectedResponseError(ClientProtocolError):
    """A response arrived while no request was waiting for one."""


class ResponseDecodeError(ClientProtocolError):
    """A response header or body does not parse."""


def request_header_version(api_key: int, api_version: int) -> int:
    """v2 when flexible, else v1; v0 (no client id) for ControlledShutdown v0 only."""
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return 0
    return 2 if is_flexible(api_key, api_version) else 1


def negotiate_version(
    api_key: int,
    broker_range: tuple[int, int] | None,
    client_max: int,
    client_min: int = 0,
) -> int | None:
    """The highest version both sides support (``NodeApiVersions.latestUsableVersion``).

    ``broker_range`` is what the broker's ApiVersions response listed (None: the API is not
    listed); ``client_max`` is the newest version the caller can encode (and wishes to send).
    None when the ranges do not meet.
    """
    if broker_range is None:
        return None
    low = max(client_min, broker_range[0])
    high = min(client_max, broker_range[1])
    return high if low <= high else None


@functools.cache
def _writer(cls: Any) -> Callable[[io.BytesIO, Any], None]:
    return entity_writer(cls)


@functools.cache
def _reader(cls: Any) -> Callable[[bytes | memoryview, int], tuple[Any, int]]:
    return entity_reader(cls)


def encode_body(entity: Any) -> bytes:
    """A kio request entity's body (what follows the header)."""
    buffer = io.BytesIO()
    cls: Any = type(entity)
    _writer(cls)(buffer, entity)
    return buffer.getvalue()


def decode_body(api_key: int, api_version: int, body: bytes | memoryview) -> Any:
    """A response body as kio's entity for (api_key, version); ``ResponseDecodeError`` if
    the bytes do not parse."""
    try:
        cls: Any = response_type(api_key, api_version)
        view = memoryview(body).toreadonly()
        entity, _size = _reader(cls)(view, 0)
    except Exception as exc:  # kio raises several types for malformed input
        raise ResponseDecodeError(
            f"could not parse a response to api {api_key} v{api_version}: {exc}"
        ) from exc
    return entity


@dataclass(frozen=True, slots=True)
class ClientResponse:
    """A response frame without its header, and the request it answers."""

    correlation_id: int
    api_key: int
    api_version: int
    #: The body: a view of the received frame (no copy; the frame lives as long as it).
    body: memoryview


@dataclass(frozen=True, slots=True)
class _InFlight:
    correlation_id: int
    api_key: int
    api_version: int


class ClientCodec:
    """Frames requests and matches responses for one connection (module docstring)."""

    __slots__ = ("_decoder", "_in_flight", "_next_correlation_id", "client_id")

    def __init__(self, client_id: str | None, max_frame_size: int = 2**31 - 1) -> None:
        self.client_id = client_id
        self._decoder = FrameDecoder(max_frame_size)
        self._in_flight: collections.deque[_InFlight] = collections.deque()
        self._next_correlation_id = 0

    @property
    def in_flight(self) -> int:
        """Requests sent whose response has not arrived yet."""
        return len(self._in_flight)

    def next_correlation_id(self) -> int:
        correlation_id = self._next_correlation_id
        self._next_correlation_id = (
            0 if correlation_id >= _MAX_CORRELATION_ID else correlation_id + 1
        )
        return correlation_id

    def encode_request(
        self,
        api_key: int,
        api_version: int,
        body: bytes | bytearray | memoryview,
        *,
        expect_response: bool = True,
    ) -> tuple[int, bytes]:
        """(correlation id, the whole frame) for a request; tracked in flight when a
        response is expected."""
        correlation_id = self.next_correlation_id()
        header = encode_request_header(api_key, api_version, correlation_id, self.client_id)
        frame = b"".join((_INT32.pack(len(header) + len(body)), header, body))
        if expect_response:
            self._in_flight.append(_InFlight(correlation_id, api_key, api_version))
        return correlation_id, frame

    def receive(self, data: bytes | bytearray | memoryview) -> list[ClientResponse]:
        """Feed received bytes; return the responses now complete, oldest first.

        Raises ``FramingError`` or a ``ClientProtocolError``: close the connection.
        """
        responses: list[ClientResponse] = []
        for frame in self._decoder.feed(data):
            if not self._in_flight:
                raise UnexpectedResponseError(
                    f"received a response of {len(frame)} bytes with no request in flight"
                )
            expected = self._in_flight[0]
            if len(frame) < 4:
                raise ResponseDecodeError(f"response of {len(frame)} bytes has no header")
            (correlation_id,) = _INT32.unpack_from(frame, 0)
            if correlation_id != expected.correlation_id:
                raise CorrelationIdMismatchError(
                    f"correlation id {correlation_id} does not match the request in flight "
                    f"(api {expected.api_key} v{expected.api_version}, correlation id "
                    f"{expected.correlation_id})"
                )
            self._in_flight.popleft()
            offset = 4
            if response_header_version(expected.api_key, expected.api_version) >= 1:
                try:
                    offset = skip_tagged_fields(frame, offset)
                except FranzError as exc:
                    raise ResponseDecodeError(f"bad response header: {exc}") from exc
            responses.append(
                ClientResponse(
                    correlation_id,
                    expected.api_key,
                    expected.api_version,
                    memoryview(frame)[offset:],
                )
            )
        return responses
