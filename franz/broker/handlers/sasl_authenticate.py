"""SaslAuthenticate (36), v0-2, outside an authentication: as Kafka's
``KafkaApis.handleSaslAuthenticateRequest``, ILLEGAL_SASL_STATE with ``SaslAuthenticate
request received after successful authentication``. The tokens of a SASL listener's
connection are the gate's (``franz.broker.sasl_gate``)."""

from __future__ import annotations

from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    return {
        "error_code": ErrorCode.ILLEGAL_SASL_STATE,
        "error_message": "SaslAuthenticate request received after successful authentication",
        "auth_bytes": b"",
        "session_lifetime": 0,
    }
