"""SASL/PLAIN (RFC 4616), server side: Kafka's ``PlainSaslServer`` with its default
``PlainServerCallbackHandler`` (users are the ``user_<name>="<password>"`` options of the
listener's ``PlainLoginModule`` JAAS config).

Message: ``[authzid] NUL authcid NUL passwd`` (UTF-8), split as Kafka does: at most three
fields, whatever follows a third NUL ignored. Messages, as Kafka's: ``Authentication failed:
username not specified`` / ``password not specified`` (generic to the client, they are
``SaslException``s), ``Authentication failed: Invalid username or password`` (a wrong password
and an unknown user alike), ``Authentication failed: Client requested an authorization id
that is different from username``.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from franz.security.sasl_errors import SaslAuthenticationError

__all__ = ["PlainSaslServer", "plain_users"]


def plain_users(options: Mapping[str, str]) -> dict[str, str]:
    """``user_<name>`` options of a ``PlainLoginModule`` (``PlainServerCallbackHandler``)."""
    return {k[len("user_") :]: v for k, v in options.items() if k.startswith("user_")}


class PlainMessageError(Exception):
    """A malformed or incomplete PLAIN message (Kafka's ``SaslException``)."""


class PlainSaslServer:
    mechanism_name = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self.complete = False
        self.authorization_id: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        text = token.decode("utf-8", errors="replace")
        fields = ["", "", ""]
        start = 0
        for i in range(3):
            end = text.find("\0", start)
            if end == -1:
                fields[i] = text[start:]
                break
            fields[i] = text[start:end]
            start = end + 1
        authzid, username, password = fields
        if not username:
            raise PlainMessageError("Authentication failed: username not specified")
        if not password:
            raise PlainMessageError("Authentication failed: password not specified")
        expected = self._users.get(username)
        # Compare in constant time; an unknown user compares against itself to spend the
        # same time and then fails.
        ok = hmac.compare_digest(
            password.encode(), (expected if expected is not None else password).encode()
        )
        if expected is None or not ok:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        self.authorization_id = username
        self.complete = True
        return b""
