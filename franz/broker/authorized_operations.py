"""Authorized operations (KIP-430): what Metadata (v8+), DescribeCluster and DescribeGroups
(v3+) report a client may do on a topic, the cluster or a group.

The value is Kafka's ``Utils.to32BitField`` of ``AclOperation`` codes: bit ``code`` set for
each allowed operation. The constants below are the answers with no authorizer (Kafka's
``AuthHelper.authorizedOperations`` with ``authorizer = None``): every operation valid for the
resource type (``AclEntry.supportedOperations``). With ``authorizer.class.name`` set,
``franz.broker.authz.authorized_operations`` asks the ACLs instead. When the request
does not ask (``include_*_authorized_operations`` false, or a version without the flag), the
field is ``Integer.MIN_VALUE``, the schema's "omitted" default.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from franz.security.acl import AclOperation

__all__ = [
    "CLUSTER_OPERATIONS",
    "GROUP_OPERATIONS",
    "OPERATIONS_OMITTED",
    "TOPIC_OPERATIONS",
    "AclOperation",
    "to_32bit_field",
]


#: Kafka's "authorized operations not requested" value (``Integer.MIN_VALUE``).
OPERATIONS_OMITTED: Final = -(2**31)


def to_32bit_field(operations: Iterable[AclOperation]) -> int:
    """Kafka's ``Utils.to32BitField``: bit ``op`` set for each operation (codes < 32)."""
    field = 0
    for op in operations:
        field |= 1 << int(op)
    return field


_O = AclOperation
#: ``AclEntry.supportedOperations(TOPIC)``: READ, WRITE, CREATE, DESCRIBE, DELETE, ALTER,
#: DESCRIBE_CONFIGS, ALTER_CONFIGS (= 3576).
TOPIC_OPERATIONS: Final = to_32bit_field(
    (_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER, _O.DESCRIBE_CONFIGS,
     _O.ALTER_CONFIGS)
)
#: ``AclEntry.supportedOperations(CLUSTER)``: CREATE, CLUSTER_ACTION, DESCRIBE_CONFIGS,
#: ALTER_CONFIGS, IDEMPOTENT_WRITE, ALTER, DESCRIBE (= 8096).
CLUSTER_OPERATIONS: Final = to_32bit_field(
    (_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE,
     _O.ALTER, _O.DESCRIBE)
)
#: ``AclEntry.supportedOperations(GROUP)``: READ, DESCRIBE, DELETE (= 328).
GROUP_OPERATIONS: Final = to_32bit_field((_O.READ, _O.DESCRIBE, _O.DELETE))
