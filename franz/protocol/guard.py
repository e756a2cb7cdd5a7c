"""A length check run before kio decodes a request: no peer-claimed size outruns the bytes.

Why: kio's native reader reserves memory for an array before reading its elements, so a
5-byte Metadata body claiming 4 billion topics makes it allocate tens of GiB and abort the
process (uncatchable). Kafka checks every array and string length against the bytes left in
the buffer first; this module does the same by walking the request's schema (kio's
dataclasses and their ``kafka_type`` metadata) over the bytes, reading only lengths and
skipping values. Anything inconsistent raises ``InvalidRequestError`` (the connection is
then closed), and kio only ever sees bodies whose every length fits.

Walk rules (Kafka's message encoding, KIP-482 for flexible versions):

* fixed-size types advance by their size; ``uuid`` is 16 bytes;
* strings/bytes/records: int16 (strings) or int32 (bytes) length, or uvarint(length + 1) when
  flexible; -1 / 0 means null; the length must fit in the remaining bytes;
* arrays: int32 count or uvarint(count + 1); each element takes at least one byte, so a count
  above the remaining bytes is refused before any element is read. A negative count is null:
  legal only where the schema says the array is nullable (kio's type is ``tuple[...] | None``).
  Kafka's generated ``read()`` throws "non-nullable field X was serialized as null" for any
  other array, ``RequestContext.parseRequest`` turns that into ``InvalidRequestException`` and
  the ``SocketServer`` closes the connection; kio would hand the handler a ``None`` instead;
* nullable structs (KIP-893): an int8 marker, then the struct;
* flexible structs end with tagged fields: known tags are walked within their declared size,
  unknown ones skipped.
"""

from __future__ import annotations

import dataclasses
import functools
import struct
from typing import Any, Final

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
)

from franz.errors import InvalidRequestError
from franz.protocol.headers import read_uvarint

__all__ = ["check_request_lengths"]

_FIXED: Final = {
    "int8": 1,
    "bool": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}
_I16: Final = struct.Struct(">h")
_I32: Final = struct.Struct(">i")

#: (name, kind, detail, is_array, nullable) where kind is "fixed" (detail = size), "string",
#: "bytes" or "entity" (detail = the nested class); ``nullable`` says the field may be null
#: (a nullable array, or a nullable struct's int8 marker).
_Step = tuple[str, str, Any, bool, bool]


def check_request_lengths(
    cls: type[Any], buffer: bytes | bytearray | memoryview, offset: int
) -> None:
    """Walk ``cls``'s encoding in ``buffer`` from ``offset``; raise if any length lies."""
    entity: Any = cls
    _walk(_plan(entity), bool(cls.__flexible__), buffer, offset, len(buffer))


def _truncated() -> InvalidRequestError:
    return InvalidRequestError("a length in the request exceeds the bytes that follow it")


@functools.cache
def _plan(cls: Any) -> tuple[tuple[_Step, ...], dict[int, _Step]]:
    steps: list[_Step] = []
    tagged: dict[int, _Step] = {}
    for field in dataclasses.fields(cls):
        kind_class = classify_field(field)
        is_array = isinstance(kind_class, EntityTupleField | PrimitiveTupleField)
        nullable = is_array and _is_optional(field)
        detail: Any
        if isinstance(kind_class, EntityField | EntityTupleField):
            kind, detail = "entity", kind_class.type_
            if isinstance(kind_class, EntityField):
                nullable = _is_optional(field)
        else:
            kafka_type = get_schema_field_type(field)
            if kafka_type in _FIXED:
                kind, detail = "fixed", _FIXED[kafka_type]
            elif kafka_type == "string":
                kind, detail = "string", None
            elif kafka_type in ("bytes", "records"):
                kind, detail = "bytes", None
            else:  # pragma: no cover - every kio type is listed above
                raise NotImplementedError(kafka_type)
        step = (field.name, kind, detail, is_array, nullable)
        if cls.__name__ == "RequestHeader" and field.name == "client_id":
            continue
        tag = get_field_tag(field)
        if tag is not None:
            tagged[int(tag)] = step
        else:
            steps.append(step)
    return tuple(steps), tagged


def _is_optional(field: dataclasses.Field[Any]) -> bool:
    return "None" in str(field.type)


def _length(flexible: bool, buf: Any, pos: int, end: int, legacy: struct.Struct) -> tuple[int, int]:
    if flexible:
        value, pos = read_uvarint(buf, pos)
        return value - 1, pos
    if pos + legacy.size > end:
        raise _truncated()
    return legacy.unpack_from(buf, pos)[0], pos + legacy.size


def _walk(
    plan: tuple[tuple[_Step, ...], dict[int, _Step]],
    flexible: bool,
    buf: Any,
    pos: int,
    end: int,
) -> int:
    steps, tagged = plan
    for step in steps:
        pos = _walk_step(step, flexible, buf, pos, end)
    if flexible:
        count, pos = read_uvarint(buf, pos)
        if count > end - pos:
            raise _truncated()
        for _ in range(count):
            tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            if size > end - pos:
                raise _truncated()
            tagged_step = tagged.get(tag)
            if tagged_step is not None:
                _walk_step(tagged_step, flexible, buf, pos, pos + size)
            pos += size
    if pos > end:
        raise _truncated()
    return pos


def _walk_step(step: _Step, flexible: bool, buf: Any, pos: int, end: int) -> int:
    name, kind, detail, is_array, nullable = step
    count = 1
    if is_array:
        count, pos = _length(flexible, buf, pos, end, _I32)
        if count < 0:
            if not nullable:
                raise InvalidRequestError(f"non-nullable field {name} was serialized as null")
            return pos
        if count > end - pos:
            raise _truncated()
    for _ in range(count):
        if kind == "fixed":
            pos += detail
            if pos > end:
                raise _truncated()
        elif kind == "string" or kind == "bytes":
            n, pos = _length(flexible, buf, pos, end, _I16 if kind == "string" else _I32)
            if n > end - pos:
                raise _truncated()
            if n > 0:
                pos += n
        else:
            if nullable and not is_array:
                if pos >= end:
                    raise _truncated()
                marker = buf[pos]
                pos += 1
                if marker == 0xFF:
                    continue
            pos = _walk(_plan(detail), bool(detail.__flexible__), buf, pos, end)
    return pos
