"""AlterClientQuotas (49), v0-1 (KIP-546): set or remove quota configs of user, client-id and
(user, client-id) entities, as Kafka 3.9's ``ZkAdminManager.alterClientQuotas``.

Per entry, checks in Kafka's order, each failing only that entry with INVALID_REQUEST:
an empty entity ("Invalid empty client quota entity"), an entity type other than ``user``
and ``client-id`` ("Unhandled client quota entity type: <t>"), an empty name ("Empty <t>
not supported"), a key that is not a quota config ("Invalid configuration key <k>"), a
LONG key (``producer_byte_rate``, ``consumer_byte_rate``) whose value is not integral
within 1e-6 ("Configuration <k> must be a LONG value"). An entity named twice is answered
once, its last entry applied. ``ip`` entities (connection creation rates) are not served:
"Unhandled client quota entity type: ip" where Kafka 3.9 would accept
``connection_creation_rate`` (and answer "Invalid configuration key" to the other keys).
A null entity name is the default entity (``<default>``). Values are stored as Kafka writes
them: LONGs as integers, DOUBLEs as Java's ``Double.toString``. ``validate_only`` checks
and writes nothing.

The entity's other keys (SCRAM credentials of a user) are kept (``franz.metadata.
client_quota_store``); in cluster mode the write's ``/config/changes`` notification makes
every broker, this one included, apply the new quotas; embedded, they apply at once.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable
from typing import Any

from franz.broker.client_quotas import QUOTA_CONFIG_TYPES
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode, error_code_for
from franz.security.client_quota import CLIENT_ID, DEFAULT_ENTITY, USER, QuotaEntity, java_double

__all__ = ["handle"]

log = logging.getLogger(__name__)

_EPSILON = 1e-6


class _Invalid(Exception):
    pass


def _entity(entry: Any) -> QuotaEntity:
    if not entry.entity:
        raise _Invalid("Invalid empty client quota entity")
    names: dict[str, str] = {}
    for part in entry.entity:
        entity_type, name = part.entity_type, part.entity_name
        if entity_type not in (USER, CLIENT_ID):
            raise _Invalid(f"Unhandled client quota entity type: {entity_type}")
        if name is not None and name == "":
            raise _Invalid(f"Empty {entity_type} not supported")
        names[entity_type] = DEFAULT_ENTITY if name is None else name
    return QuotaEntity(names.get(USER), names.get(CLIENT_ID))


def _changes(entry: Any) -> dict[str, str | None]:
    changes: dict[str, str | None] = {}
    for op in entry.ops:
        kind = QUOTA_CONFIG_TYPES.get(op.key)
        if kind is None:
            raise _Invalid(f"Invalid configuration key {op.key}")
        if op.remove:
            changes[op.key] = None
            continue
        value = float(op.value)
        if kind == "DOUBLE":
            changes[op.key] = java_double(value)
            continue
        integral = int(value + _EPSILON)
        if abs(integral - value) > _EPSILON:
            raise _Invalid(f"Configuration {op.key} must be a {kind} value")
        changes[op.key] = str(integral)
    return changes


def handle(ctx: RequestContext, request: Any) -> Awaitable[HandlerResult]:
    return _alter(ctx, request)


async def _alter(ctx: RequestContext, request: Any) -> HandlerResult:
    quotas = ctx.services.client_quotas
    # Kafka keys the request's entries by entity: a repeated entity is answered once, its
    # last entry applying (``AlterClientQuotasRequest.entries`` builds a map).
    by_entity: dict[tuple[tuple[str, str | None], ...], Any] = {}
    for entry in request.entries:
        key = tuple(sorted((part.entity_type, part.entity_name) for part in entry.entity))
        by_entity.pop(key, None)
        by_entity[key] = entry
    entries = []
    for entry in by_entity.values():
        code, message = ErrorCode.NONE, None
        try:
            entity = _entity(entry)
            changes = _changes(entry)
            if not request.validate_only:
                await quotas.alter(entity, changes, apply_now=not ctx.services.zk_mode)
        except _Invalid as exc:
            code, message = ErrorCode.INVALID_REQUEST, str(exc)
        except Exception as exc:
            code = error_code_for(exc)
            message = str(exc)
            log.info("Error encountered while updating client quotas: %s", exc)
        entries.append(
            {
                "error_code": code,
                "error_message": message,
                "entity": [
                    {"entity_type": part.entity_type, "entity_name": part.entity_name}
                    for part in entry.entity
                ],
            }
        )
    return {"entries": entries}
