"""The controller's request values (``franz.controller.requests``) to and from wire entities.

``requests.py`` describes LeaderAndIsr v7, UpdateMetadata v8 and StopReplica v4 with Kafka's
field names in snake_case, the names ``franz.protocol.inter_broker``'s generated classes use,
so the conversion is by name, recursively (nested structs, tuples of them). Two differences
are bridged: the topic id, Kafka's ``Uuid.ZERO_UUID`` in ``requests.py`` and ``None`` in kio's
representation (which reads the zero UUID as ``None``), and the wire classes' tuple elements,
which are instances of the wire structs.

A field one side has and the other lacks is a bug in one of them: ``ValueError``, never a
silent drop. The versions ``requests.py`` describes (its ``API_KEY`` / ``VERSION``) are
converted by name; the older ones a broker receives regroup fields and are read by
``franz.controller.old_versions`` (``from_wire`` only).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
import uuid
from typing import Any, Final

from franz.controller.old_versions import upgrade
from franz.controller.requests import (
    ZERO_UUID,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataRequest,
)
from franz.protocol.messages import request_type

__all__ = ["from_wire", "to_wire"]

ControllerRequest = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest
_KINDS: Final = (LeaderAndIsrRequest, UpdateMetadataRequest, StopReplicaRequest)


def to_wire(request: ControllerRequest) -> Any:
    """The ``franz.protocol.inter_broker`` entity for ``request``, ready to encode."""
    return _convert(request, request_type(request.API_KEY, request.VERSION), to_wire=True)


def from_wire(entity: Any) -> ControllerRequest:
    """The ``requests.py`` value for a decoded LeaderAndIsr v0-7 / UpdateMetadata v0-8 /
    StopReplica v0-4 entity (``ValueError`` for another)."""
    for kind in _KINDS:
        if (entity.__api_key__, entity.__version__) == (kind.API_KEY, kind.VERSION):
            result: ControllerRequest = _convert(entity, kind, to_wire=False)
            return result
    return upgrade(entity)


def _convert(value: Any, target: type[Any], *, to_wire: bool) -> Any:
    source_names = {f.name for f in dataclasses.fields(value)}
    entity: Any = target  # a class is hashable; mypy's Hashable check misses type[Any]
    hints = _hints(entity)
    if source_names != set(hints):
        raise ValueError(
            f"{type(value).__name__} -> {target.__name__}: fields differ "
            f"({sorted(source_names ^ set(hints))})"
        )
    kwargs = {
        name: _value(getattr(value, name), hint, to_wire=to_wire) for name, hint in hints.items()
    }
    return target(**kwargs)


def _value(value: Any, hint: Any, *, to_wire: bool) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if args == [uuid.UUID]:
            if to_wire:
                return None if value == ZERO_UUID else value
            return value  # a nullable uuid on the controller side: keep None
        return None if value is None else _value(value, args[0], to_wire=to_wire)
    if hint is uuid.UUID:
        return ZERO_UUID if value is None else value
    if origin is tuple:
        (item,) = typing.get_args(hint)[:1]
        return tuple(_value(v, item, to_wire=to_wire) for v in value)
    if dataclasses.is_dataclass(hint):
        return _convert(value, typing.cast(type[Any], hint), to_wire=to_wire)
    return value


@functools.cache
def _hints(cls: Any) -> dict[str, Any]:
    """Field name -> resolved annotation, in field order (``ClassVar``s left out)."""
    resolved = typing.get_type_hints(cls)
    return {f.name: resolved[f.name] for f in dataclasses.fields(cls)}
