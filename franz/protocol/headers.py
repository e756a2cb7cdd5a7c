"""Request and response headers (``RequestHeader.json`` / ``ResponseHeader.json``).

Wire format (big-endian)::

    request header v1:  api_key int16, api_version int16, correlation_id int32,
                        client_id nullable string (int16 length, -1 = null)
    request header v2:  v1 + tagged fields (KIP-482); client_id stays a non-compact string
    response header v0: correlation_id int32
    response header v1: v0 + tagged fields

A request uses header v2 exactly when its API version is flexible; its response uses header
v1 then, **except ApiVersions**, whose response always uses header v0 so that a client which
does not yet know the broker's versions can read it (KIP-511). Request header v0 (no client
id) only exists for ControlledShutdown v0 (Kafka's ``ApiKeys.requestHeaderVersion``); it is
parsed as such, with ``client_id`` ``None``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from franz.errors import InvalidRequestError
from franz.protocol.api_keys import INTER_BROKER_APIS, SUPPORTED_APIS, ApiKey

__all__ = [
    "RequestHeader",
    "encode_request_header",
    "encode_response_header",
    "parse_request_header",
    "request_is_flexible",
    "response_header_version",
    "skip_tagged_fields",
]

_FIXED: Final = struct.Struct(">hhih")
_FIXED_V0: Final = struct.Struct(">hhi")
_INT32: Final = struct.Struct(">i")
_EMPTY_TAGS: Final = b"\x00"


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    #: Bytes the header takes: the body starts there.
    size: int
    flexible: bool


def read_uvarint(buffer: bytes | bytearray | memoryview, offset: int) -> tuple[int, int]:
    """An unsigned varint at ``offset``: (value, offset after it)."""
    value = shift = 0
    while True:
        if offset >= len(buffer):
            raise InvalidRequestError("truncated unsigned varint")
        byte = buffer[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, offset
        shift += 7
        if shift > 28:
            raise InvalidRequestError("unsigned varint longer than 5 bytes")


def skip_tagged_fields(buffer: bytes | bytearray | memoryview, offset: int) -> int:
    """Skip a tagged-field section (count, then tag/size/bytes each); return the new offset."""
    count, offset = read_uvarint(buffer, offset)
    for _ in range(count):
        _, offset = read_uvarint(buffer, offset)
        size, offset = read_uvarint(buffer, offset)
        offset += size
        if offset > len(buffer):
            raise InvalidRequestError("truncated tagged field")
    return offset


def parse_request_header(payload: bytes | bytearray | memoryview) -> RequestHeader:
    """Parse the header at the start of a request frame.

    Raises ``InvalidRequestError`` when the frame is too short for a header; the caller
    closes the connection (Kafka's ``InvalidRequestException`` while parsing a header).
    """
    if len(payload) < _FIXED.size:
        if len(payload) >= _FIXED_V0.size and _is_header_v0(*_FIXED_V0.unpack_from(payload, 0)):
            return _header_v0(payload)
        raise InvalidRequestError(f"request of {len(payload)} bytes is too short for a header")
    api_key, api_version, correlation_id, client_id_len = _FIXED.unpack_from(payload, 0)
    if _is_header_v0(api_key, api_version):
        return _header_v0(payload)
    offset = _FIXED.size
    client_id: str | None = None
    if client_id_len >= 0:
        end = offset + client_id_len
        if end > len(payload):
            raise InvalidRequestError("truncated client id in the request header")
        client_id = bytes(payload[offset:end]).decode("utf-8", errors="replace")
        offset = end
    elif client_id_len != -1:
        raise InvalidRequestError(f"invalid client id length {client_id_len}")
    flexible = request_is_flexible(api_key, api_version)
    if flexible:
        offset = skip_tagged_fields(payload, offset)
    return RequestHeader(api_key, api_version, correlation_id, client_id, offset, flexible)


def _is_header_v0(api_key: int, api_version: int, *_: int) -> bool:
    return api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0


def _header_v0(payload: bytes | bytearray | memoryview) -> RequestHeader:
    api_key, api_version, correlation_id = _FIXED_V0.unpack_from(payload, 0)
    return RequestHeader(api_key, api_version, correlation_id, None, _FIXED_V0.size, False)


def request_is_flexible(api_key: int, api_version: int) -> bool:
    support = SUPPORTED_APIS.get(api_key)  # type: ignore[call-overload]
    if support is None:
        support = INTER_BROKER_APIS.get(api_key)  # type: ignore[call-overload]
    if support is None:
        return False
    # An ApiVersions request newer than Franz knows is parsed with the newest header (v2),
    # as Kafka's generated ApiVersionsRequestData does for any version >= 3.
    return bool(support.is_flexible(api_version))


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if request_is_flexible(api_key, api_version) else 0


def encode_request_header(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None
) -> bytes:
    """The request header for ``api_key`` at ``api_version`` (v0, v1 or v2, see above)."""
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and api_version == 0:
        return _FIXED_V0.pack(api_key, api_version, correlation_id)
    if client_id is None:
        head = _FIXED.pack(api_key, api_version, correlation_id, -1)
    else:
        raw = client_id.encode()
        head = _FIXED.pack(api_key, api_version, correlation_id, len(raw)) + raw
    return head + _EMPTY_TAGS if request_is_flexible(api_key, api_version) else head


def encode_response_header(correlation_id: int, version: int) -> bytes:
    header = _INT32.pack(correlation_id)
    return header + _EMPTY_TAGS if version >= 1 else header
