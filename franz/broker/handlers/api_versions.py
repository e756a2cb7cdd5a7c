"""ApiVersions (18): the versions Franz serves, as one coherent Kafka 3.9 profile.

Only APIs with a handler are listed (``franz.protocol.api_keys`` holds the ranges). v3+ would
carry supported/finalized features (none here: no KRaft feature levels). An ApiVersions at an
unsupported version never reaches this handler: the dispatcher answers it with a v0 body.
"""

from __future__ import annotations

from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.protocol.api_keys import SUPPORTED_APIS

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    from franz.broker.handlers import HANDLERS

    return {
        "error_code": 0,
        "api_keys": [
            {"api_key": int(key), "min_version": s.min_advertised, "max_version": s.max_version}
            for key, s in sorted(SUPPORTED_APIS.items())
            if key in HANDLERS
        ],
        "throttle_time": 0,
        "finalized_features_epoch": -1,
    }
