"""ApiVersions (18): the versions Franz serves, as one coherent Kafka 3.9 profile.

Only APIs with a handler are listed (``franz.protocol.api_keys`` holds the ranges). v3+ would
carry supported/finalized features (none here: no KRaft feature levels). An ApiVersions at an
unsupported version never reaches this handler: the dispatcher answers it with a v0 body.
From v3 the client names its software (KIP-511); a name or version outside Kafka's pattern
gets INVALID_REQUEST with no ranges, and the connection stays open, as in Kafka.
"""

from __future__ import annotations

import re
from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode
from franz.protocol.api_keys import INTER_BROKER_APIS, SUPPORTED_APIS, ApiSupport

__all__ = ["handle"]


#: KIP-511: client software names and versions must look like this, else INVALID_REQUEST.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    if ctx.api_version >= 3:
        name = getattr(request, "client_software_name", "")
        version = getattr(request, "client_software_version", "")
        if not (_SOFTWARE.fullmatch(name or "") and _SOFTWARE.fullmatch(version or "")):
            return {"error_code": ErrorCode.INVALID_REQUEST, "throttle_time": 0}
    return {
        "error_code": 0,
        "api_keys": advertised_api_keys(zk_mode=ctx.services.zk_mode),
        "throttle_time": 0,
        # Kafka 3.9 in ZooKeeper mode: the /feature znode's version, 0 on a new cluster.
        "finalized_features_epoch": 0,
    }


def served_apis(*, zk_mode: bool) -> dict[int, ApiSupport]:
    """The APIs served: ``SUPPORTED_APIS``, plus the inter-broker ones
    (``INTER_BROKER_APIS``) in cluster mode."""
    from franz.broker.handlers import HANDLERS

    served: dict[int, ApiSupport] = {k: v for k, v in SUPPORTED_APIS.items() if k in HANDLERS}
    if zk_mode:
        served.update((k, v) for k, v in INTER_BROKER_APIS.items() if k in HANDLERS)
    return served


def advertised_api_keys(*, zk_mode: bool = False) -> list[dict[str, int]]:
    """The ``api_keys`` entries of an ApiVersions response (also of the v0 error body)."""
    return [
        {"api_key": int(key), "min_version": s.min_advertised, "max_version": s.max_version}
        for key, s in sorted(served_apis(zk_mode=zk_mode).items())
    ]
