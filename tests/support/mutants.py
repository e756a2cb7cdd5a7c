"""Valid requests for any API and version, and their null-array and empty-array mutants.

``sample(cls)`` builds a request of the kio class ``cls`` in which every array (top level and
nested) has one element, so every nested array is present on the wire; strings, integers and
flags get values a broker can act on without waiting (``acks=-1``, ``max_wait_ms=0``,
``replica_id=-1``, a session timeout of 0 so JoinGroup fails at once instead of joining).

``array_paths(request)`` lists where its arrays are, as paths of ``(field, index)`` steps
(index 0 into the one element of each enclosing array), and ``mutate(request, path, value)``
replaces the array at ``path`` with ``None`` (encoded as a -1 count, or uvarint 0 in flexible
versions) or ``()``. kio's writer encodes ``None`` for any array, nullable or not, which is
what a fuzzer needs; ``is_nullable(request, path)`` says whether Kafka's schema allows it.
"""

from __future__ import annotations

import dataclasses
import datetime
import typing
import uuid
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_schema_field_type,
)

__all__ = ["Path", "array_paths", "is_nullable", "mutate", "sample"]

#: ``((field_name, index_into_it_or_None), ...)``: the last step names the array itself.
Path = tuple[tuple[str, int | None], ...]

TOPIC = "fuzz"
GROUP = "fuzz-group"

#: Field values that keep the broker from waiting or acting as a replica.
_INTS: dict[str, int] = {
    "acks": -1,
    "replica_id": -1,
    "broker_id": -1,
    "session_epoch": -1,
    "isolation_level": 0,
    "num_partitions": -1,
    "replication_factor": -1,
    "generation_id": -1,
    "producer_id": -1,
    "producer_epoch": -1,
    "timestamp": -1,
    "key_type": 0,
}
_DURATIONS_MS: dict[str, int] = {
    "max_wait_ms": 0,
    "session_timeout_ms": 0,
    "rebalance_timeout_ms": 0,
    "timeout_ms": 0,
    "transaction_timeout_ms": 1000,
}
_STRINGS: dict[str, str | None] = {
    "transactional_id": None,
    "member_id": "",
    "group_instance_id": None,
    "protocol_type": "consumer",
    "rack_id": "",
    "client_software_name": "fuzz",
    "client_software_version": "0",
}


def sample(cls: type[Any]) -> Any:
    """An instance of the kio entity ``cls`` with one element in every array."""
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for field in dataclasses.fields(cls):
        kwargs[field.name] = _value(field, hints[field.name])
    return cls(**kwargs)


def _value(field: dataclasses.Field[Any], hint: Any) -> Any:
    kind = classify_field(field)
    if isinstance(kind, EntityTupleField):
        return (sample(kind.type_),)
    if isinstance(kind, EntityField):
        return sample(kind.type_)
    if isinstance(kind, PrimitiveTupleField):
        return (_primitive(field.name, get_schema_field_type(field), _inner(hint)),)
    return _primitive(field.name, get_schema_field_type(field), hint)


def _inner(hint: Any) -> Any:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    while args and typing.get_origin(args[0]) is tuple:
        args = list(typing.get_args(args[0])[:1])
    return args[0] if args else hint


def _primitive(name: str, kafka_type: str, hint: Any) -> Any:
    if kafka_type == "string":
        if name in _STRINGS:
            value = _STRINGS[name]
            if value is None and type(None) not in typing.get_args(hint):
                return f"fuzz-{name}"  # e.g. TxnOffsetCommit's transactional_id
            return value
        if name == "group_id" or name.endswith("group_id") or name == "groups":
            return GROUP
        return TOPIC
    if kafka_type in ("bytes", "records"):
        return b""
    if kafka_type == "bool":
        return False
    if kafka_type == "uuid":
        return uuid.UUID(int=0)
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=_DURATIONS_MS.get(name, 0))
    if kafka_type == "datetime_i64":
        return None if "None" in str(hint) else datetime.datetime.now(datetime.UTC)
    if kafka_type == "float64":
        return 0.0
    if kafka_type == "error_code":
        return typing.cast(Any, hint)(0)
    value = _INTS.get(name, 0)
    base = _inner(hint)
    return base(value) if isinstance(base, type) else value


def array_paths(entity: Any, prefix: Path = ()) -> list[Path]:
    """Every array field of ``entity`` and of the first element of each of its arrays."""
    paths: list[Path] = []
    for field in dataclasses.fields(entity):
        kind = classify_field(field)
        value = getattr(entity, field.name)
        if isinstance(kind, EntityTupleField | PrimitiveTupleField):
            paths.append((*prefix, (field.name, None)))
            if isinstance(kind, EntityTupleField) and value:
                paths += array_paths(value[0], (*prefix, (field.name, 0)))
        elif isinstance(kind, EntityField) and value is not None:
            paths += array_paths(value, (*prefix, (field.name, None)))
    return paths


def mutate(entity: Any, path: Path, value: tuple[()] | None) -> Any:
    """``entity`` with the array at ``path`` replaced by ``value``."""
    (name, index), rest = path[0], path[1:]
    if not rest:
        return dataclasses.replace(entity, **{name: value})
    child = getattr(entity, name)
    if index is None:
        return dataclasses.replace(entity, **{name: mutate(child, rest, value)})
    items = list(child)
    items[index] = mutate(items[index], rest, value)
    return dataclasses.replace(entity, **{name: tuple(items)})


def is_nullable(entity: Any, path: Path) -> bool:
    """Whether the schema lets the array at ``path`` be null (kio types it ``... | None``)."""
    (name, index), rest = path[0], path[1:]
    field = {f.name: f for f in dataclasses.fields(entity)}[name]
    if not rest:
        return "None" in str(field.type)
    child = getattr(entity, name)
    return is_nullable(child if index is None else child[index], rest)
