"""DescribeClientQuotas (48), v0-1 (KIP-546): the client quotas whose entities match a filter,
as Kafka 3.9's ``ZkAdminManager.describeClientQuotas``.

A filter is a list of components, at most one per entity type (``user``, ``client-id``),
each matching a name (``match_type`` 0, EXACT), the default entity (1, DEFAULT: entity name
null in the answer) or any named-or-default entity (2, SPECIFIED). ``strict``: only entities
with no other entity types than the components name; otherwise entities with more types
match too. Only entities that have quota configs are listed (a user's SCRAM credentials are
not quotas), with their values as doubles.

Errors answer the whole request (entries null), as Kafka 3.9.2 answers them (compared):
an EXACT component without a match string, or an unknown match type, UNKNOWN_SERVER_ERROR
with no message (Kafka's request parsing fails on them); a duplicate entity type, an empty
one, or an ``ip`` component with a user or client-id one, INVALID_REQUEST with Kafka's
message; another entity type UNSUPPORTED_VERSION ("Custom entity type '<t>' not
supported"). A DEFAULT or SPECIFIED component's match string is ignored, as Kafka does.
A success carries an empty ``error_message`` (Kafka's ``ApiError.NONE``), not null.
``ip`` entities (connection creation rates, KIP-612) are not served: an ``ip`` filter
matches nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Final

from franz.broker.client_quotas import QUOTA_CONFIG_TYPES
from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.security.client_quota import CLIENT_ID, DEFAULT_ENTITY, USER, QuotaEntity

__all__ = ["entity_data", "handle"]

MATCH_EXACT: Final = 0
MATCH_DEFAULT: Final = 1
MATCH_SPECIFIED: Final = 2
#: ``ClientQuotaEntity.IP``.
IP: Final = "ip"

#: A component after validation: None matches any name (SPECIFIED), else that name.
_Component = str | None


class _Invalid(Exception):
    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _components(request: Any) -> dict[str, _Component]:
    out: dict[str, _Component] = {}
    for component in request.components:
        match_type = component.match_type
        if match_type == MATCH_EXACT:
            if component.match is None:
                raise _Invalid(ErrorCode.UNKNOWN_SERVER_ERROR, None)
            name: _Component = component.match
        elif match_type == MATCH_DEFAULT:
            name = DEFAULT_ENTITY
        elif match_type == MATCH_SPECIFIED:
            name = None
        else:
            raise _Invalid(ErrorCode.UNKNOWN_SERVER_ERROR, None)
        entity_type = component.entity_type
        if entity_type in (USER, CLIENT_ID, IP):
            if entity_type in out:
                kind = {USER: "user", CLIENT_ID: "client", IP: "ip"}[entity_type]
                raise _Invalid(
                    ErrorCode.INVALID_REQUEST,
                    f"Duplicate {kind} filter component entity type",
                )
        elif entity_type == "":
            raise _Invalid(
                ErrorCode.INVALID_REQUEST, "Unexpected empty filter component entity type"
            )
        else:
            raise _Invalid(
                ErrorCode.UNSUPPORTED_VERSION, f"Custom entity type '{entity_type}' not supported"
            )
        out[entity_type] = name
    if IP in out and (USER in out or CLIENT_ID in out):
        raise _Invalid(
            ErrorCode.INVALID_REQUEST,
            "Invalid entity filter component combination, IP filter component should not be "
            "used with user or clientId filter component.",
        )
    return out


def _matches(
    components: dict[str, _Component], entity_type: str, name: str | None, strict: bool
) -> bool:
    if entity_type in components:
        wanted = components[entity_type]
        return name is not None if wanted is None else name == wanted
    return name is None or not strict


def entity_data(entity: QuotaEntity) -> list[dict[str, Any]]:
    """An entity as the quota APIs' ``entity`` list (the default's name null)."""
    out = []
    if entity.user is not None:
        out.append({"entity_type": USER, "entity_name": _wire_name(entity.user)})
    if entity.client_id is not None:
        out.append({"entity_type": CLIENT_ID, "entity_name": _wire_name(entity.client_id)})
    return out


def _wire_name(name: str) -> str | None:
    return None if name == DEFAULT_ENTITY else name


def handle(ctx: RequestContext, request: Any) -> Awaitable[HandlerResult]:
    return _describe(ctx, request)


async def _describe(ctx: RequestContext, request: Any) -> HandlerResult:
    try:
        components = _components(request)
    except _Invalid as exc:
        return {"error_code": exc.code, "error_message": exc.message, "entries": None}
    strict = bool(request.strict)
    if IP in components:
        return {"error_code": ErrorCode.NONE, "error_message": "", "entries": []}
    stored = await ctx.services.client_quotas.store.all_entity_configs()
    entries = []
    for entity, configs in sorted(
        stored.items(), key=lambda item: (item[0].user or "", item[0].client_id or "")
    ):
        values = [
            {"key": key, "value": float(value)}
            for key, value in sorted(configs.items())
            if key in QUOTA_CONFIG_TYPES
        ]
        if (
            values
            and _matches(components, USER, entity.user, strict)
            and _matches(components, CLIENT_ID, entity.client_id, strict)
        ):
            entries.append({"entity": entity_data(entity), "values": values})
    return {"error_code": ErrorCode.NONE, "error_message": "", "entries": entries}
