"""SaslHandshake (17), v0-1, outside an authentication: as Kafka's
``KafkaApis.handleSaslHandshakeRequest``, ILLEGAL_SASL_STATE (on a PLAINTEXT listener, or
after a SASL connection authenticated without re-authentication support). The handshake of
a SASL listener's connection is the gate's (``franz.broker.sasl_gate``)."""

from __future__ import annotations

from typing import Any

from franz.broker.context import HandlerResult, RequestContext
from franz.errors import ErrorCode

__all__ = ["handle"]


def handle(ctx: RequestContext, request: Any) -> HandlerResult:
    return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": []}
