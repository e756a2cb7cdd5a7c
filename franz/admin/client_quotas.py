"""DescribeClientQuotas and AlterClientQuotas on the wire (KIP-546), for ``franz configs
--entity-type users|clients`` and tests: librdkafka has no client quota API.

An entity is a list of ``(entity_type, name)`` pairs, ``entity_type`` ``user`` or
``client-id``, ``name`` None for the default entity (``<default>`` in znodes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from franz.admin.options import ToolError
from franz.admin.wire import connect
from franz.admin.wire_security import WireSecurity

__all__ = [
    "ALTER_CLIENT_QUOTAS",
    "DESCRIBE_CLIENT_QUOTAS",
    "Entity",
    "QuotaEntry",
    "alter_client_quotas",
    "describe_client_quotas",
]

DESCRIBE_CLIENT_QUOTAS: Final = 48
ALTER_CLIENT_QUOTAS: Final = 49
MATCH_EXACT: Final = 0
MATCH_DEFAULT: Final = 1
MATCH_SPECIFIED: Final = 2

#: ``((entity_type, name or None for the default), ...)``.
Entity = tuple[tuple[str, str | None], ...]


@dataclass(frozen=True, slots=True)
class QuotaEntry:
    entity: Entity
    values: dict[str, float]


def describe_client_quotas(
    address: str,
    components: Sequence[tuple[str, int, str | None]],
    *,
    strict: bool = False,
    timeout_s: float = 30.0,
    client_id: str = "franz-admin",
    security: WireSecurity | None = None,
) -> list[QuotaEntry]:
    """The quotas matching ``components`` (``(entity_type, match_type, match)``); a
    request-level error raises ``ToolError`` with the broker's message."""
    with connect(address, timeout_s, client_id, security) as conn:
        response = conn.request(
            DESCRIBE_CLIENT_QUOTAS,
            {
                "components": [
                    {"entity_type": t, "match_type": m, "match": name} for t, m, name in components
                ],
                "strict": strict,
            },
            max_version=1,
        )
    if int(response.error_code) != 0:
        raise ToolError(
            f"DescribeClientQuotas failed (error {int(response.error_code)}): "
            f"{response.error_message}"
        )
    return [
        QuotaEntry(
            tuple((e.entity_type, e.entity_name) for e in entry.entity),
            {v.key: float(v.value) for v in entry.values},
        )
        for entry in response.entries or ()
    ]


def alter_client_quotas(
    address: str,
    alterations: Sequence[tuple[Entity, Mapping[str, float | None]]],
    *,
    validate_only: bool = False,
    timeout_s: float = 30.0,
    client_id: str = "franz-admin",
    security: WireSecurity | None = None,
) -> list[tuple[Entity, int, str | None]]:
    """Set (a value) or remove (None) quota keys of each entity; per entity its error code
    and message."""
    with connect(address, timeout_s, client_id, security) as conn:
        response = conn.request(
            ALTER_CLIENT_QUOTAS,
            {
                "entries": [
                    {
                        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                        "ops": [
                            {"key": key, "value": value or 0.0, "remove": value is None}
                            for key, value in ops.items()
                        ],
                    }
                    for entity, ops in alterations
                ],
                "validate_only": validate_only,
            },
            max_version=1,
        )
    return [
        (
            tuple((e.entity_type, e.entity_name) for e in entry.entity),
            int(entry.error_code),
            entry.error_message,
        )
        for entry in response.entries
    ]
