"""Kafka message types and their codec: kio behind Franz's own interface.

kio (Aiven, Apache-2.0) generates a frozen dataclass for every message and version from
Kafka's JSON schemas, with a native decoder. Handlers see those request classes as they are
(fields differ across versions: read optional ones with ``getattr``), and *build* responses
once per API from plain mappings with Kafka's field names::

    build_response(ApiKey.PRODUCE, version, {"responses": [{"name": ..., ...}]})

``build`` adapts a mapping to the per-version classes in this one place: it fills fields the
mapping leaves out with their defaults (zero, empty, null), drops keys a version does not
have, and converts Franz's plain values to kio's (``int`` error codes to kio's ``ErrorCode``,
milliseconds to ``timedelta``, epoch milliseconds to aware ``datetime``). So a handler written
against the newest version also answers the oldest.

The ZooKeeper-era inter-broker APIs (LeaderAndIsr, StopReplica, UpdateMetadata,
ControlledShutdown), which kio lacks, come from ``franz.protocol.inter_broker`` in kio's
style; ``request_type`` / ``response_type`` look there first, and kio's codec does the rest.
The outbound side (a controller or a replica fetcher talking to a broker) uses
``encode_request`` and ``decode_response``.

Hot paths that kio would slow down are hand-written elsewhere (``franz.protocol.fetch``: Fetch
responses carrying ``sendfile`` regions), with the reason in their docstrings.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import io
import struct
import types
import typing
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from kio.index import load_request_schema, load_response_schema
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import TZAware, i32Timedelta, i64Timedelta

from franz.errors import InvalidRequestError
from franz.protocol.guard import check_request_lengths
from franz.protocol.headers import (
    encode_request_header,
    response_header_version,
    skip_tagged_fields,
)
from franz.protocol.inter_broker import request_class, response_class

__all__ = [
    "build",
    "build_response",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "request_type",
    "response_type",
]

_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_ZERO_UUID: Final = uuid.UUID(int=0)

Converter = Callable[[Any], Any]


@functools.cache
def request_type(api_key: int, version: int) -> type[Any]:
    return request_class(api_key, version) or load_request_schema(api_key, version)


@functools.cache
def response_type(api_key: int, version: int) -> type[Any]:
    return response_class(api_key, version) or load_response_schema(api_key, version)


@functools.cache
def _reader(cls: Any) -> Callable[[bytes | memoryview, int], tuple[Any, int]]:
    return entity_reader(cls)


@functools.cache
def _writer(cls: Any) -> Callable[[io.BytesIO, Any], None]:
    return entity_writer(cls)


def decode_request(api_key: int, version: int, payload: bytes | bytearray, offset: int) -> Any:
    """Decode a request body starting at ``offset`` of the frame.

    ``InvalidRequestError`` if the bytes do not parse: Kafka closes such a connection.
    """
    cls: Any = request_type(api_key, version)
    # kio's native reader insists on a read-only buffer; frames arrive as bytearrays.
    view = memoryview(payload).toreadonly() if isinstance(payload, bytearray) else payload
    try:
        check_request_lengths(cls, view, offset)
        request, _size = _reader(cls)(view, offset)
    except Exception as exc:  # kio raises several types for malformed input
        raise InvalidRequestError(
            f"could not parse a {cls.__name__} v{version}: {exc}"
        ) from exc
    return request


def encode_response(response: Any) -> bytes:
    buffer = io.BytesIO()
    cls: Any = type(response)
    _writer(cls)(buffer, response)
    return buffer.getvalue()


def encode_request(request: Any, correlation_id: int, client_id: str | None) -> bytes:
    """A request frame's payload (header and body, no size prefix) for a kio-style entity."""
    cls: Any = type(request)
    api_key, version = int(cls.__api_key__), int(cls.__version__)
    buffer = io.BytesIO()
    buffer.write(encode_request_header(api_key, version, correlation_id, client_id))
    _writer(cls)(buffer, request)
    return buffer.getvalue()


_CORRELATION_ID: Final = struct.Struct(">i")


def decode_response(
    api_key: int, version: int, payload: bytes | bytearray | memoryview
) -> tuple[int, Any]:
    """(correlation id, response) from a response frame's payload (header and body).

    ``InvalidRequestError`` if the bytes do not parse or leave bytes over: the peer is broken
    and its connection should be closed.
    """
    cls: Any = response_type(api_key, version)
    view = memoryview(payload).toreadonly()
    if len(view) < _CORRELATION_ID.size:
        raise InvalidRequestError(f"response of {len(view)} bytes has no header")
    (correlation_id,) = _CORRELATION_ID.unpack_from(view, 0)
    offset = _CORRELATION_ID.size
    try:
        if response_header_version(api_key, version) >= 1:
            offset = skip_tagged_fields(view, offset)
        check_request_lengths(cls, view, offset)
        response, size = _reader(cls)(view, offset)
    except Exception as exc:  # kio raises several types for malformed input
        raise InvalidRequestError(
            f"could not parse a {cls.__name__} v{version}: {exc}"
        ) from exc
    if offset + size != len(view):
        raise InvalidRequestError(
            f"{len(view) - offset - size} bytes left over after a {cls.__name__} v{version}"
        )
    return correlation_id, response


def build_response(api_key: int, version: int, data: Mapping[str, Any]) -> Any:
    return build(response_type(api_key, version), data)


# -- building kio entities from mappings -----------------------------------------------------


def build(cls: type[Any], data: Mapping[str, Any]) -> Any:
    """An instance of the kio entity ``cls`` from ``data`` (see the module docstring)."""
    kwargs: dict[str, Any] = {}
    entity: Any = cls
    for name, convert, default in _plan(entity):
        value = data.get(name, _MISSING)
        kwargs[name] = default() if value is _MISSING else convert(value)
    return cls(**kwargs)


class _Missing:
    pass


_MISSING: Final = _Missing()


@functools.cache
def _plan(cls: Any) -> tuple[tuple[str, Converter, Callable[[], Any]], ...]:
    hints = typing.get_type_hints(cls)
    plan = []
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        convert, zero = _converter(hint)
        default: Callable[[], Any]
        if field.default is not dataclasses.MISSING:
            default = functools.partial(_identity, field.default)
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory
        else:
            default = zero
        plan.append((field.name, convert, default))
    return tuple(plan)


def _identity(value: Any) -> Any:
    return value


def _converter(hint: Any) -> tuple[Converter, Callable[[], Any]]:
    """How to convert a plain value to ``hint``, and the zero value of ``hint``."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        inner, _ = _converter(args[0])

        def optional(value: Any) -> Any:
            return None if value is None else inner(value)

        return optional, lambda: None
    if origin is tuple:
        (item,) = typing.get_args(hint)[:1]
        item_convert, _ = _converter(item)

        def sequence(value: Any) -> Any:
            return tuple(item_convert(v) for v in value)

        return sequence, tuple
    if dataclasses.is_dataclass(hint):
        entity = typing.cast(type[Any], hint)

        def nested(value: Any) -> Any:
            return build(entity, value) if isinstance(value, Mapping) else value

        return nested, lambda: build(entity, {})
    if hint is KioErrorCode:
        return KioErrorCode, lambda: KioErrorCode.none
    if isinstance(hint, type) and issubclass(hint, i32Timedelta | i64Timedelta):
        return _to_timedelta, lambda: datetime.timedelta(0)
    if hint is TZAware:
        return _to_datetime, lambda: _EPOCH
    if hint is bool:
        return bool, lambda: False
    if hint is uuid.UUID:
        return _identity, lambda: _ZERO_UUID
    if isinstance(hint, type) and issubclass(hint, str):
        return _identity, str
    if isinstance(hint, type) and issubclass(hint, bytes):
        return _identity, bytes
    if isinstance(hint, type) and issubclass(hint, float):
        return float, float
    if isinstance(hint, type) and issubclass(hint, int):
        return _identity, int
    return _identity, lambda: None


def _to_timedelta(value: Any) -> datetime.timedelta:
    if isinstance(value, datetime.timedelta):
        return value
    return datetime.timedelta(milliseconds=int(value))


def _to_datetime(value: Any) -> datetime.datetime | None:
    if isinstance(value, datetime.datetime):
        return value
    if value is None or value < 0:
        return None
    return _EPOCH + datetime.timedelta(milliseconds=int(value))


def timedelta_ms(value: datetime.timedelta | int) -> int:
    """A kio duration field as integer milliseconds."""
    if isinstance(value, datetime.timedelta):
        return value.days * 86_400_000 + value.seconds * 1000 + value.microseconds // 1000
    return int(value)


def datetime_ms(value: datetime.datetime | int | None) -> int:
    """A kio timestamp field as epoch milliseconds (-1 for null)."""
    if value is None:
        return -1
    if isinstance(value, datetime.datetime):
        delta = value - _EPOCH
        return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000
    return int(value)
