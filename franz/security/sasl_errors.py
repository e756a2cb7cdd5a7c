"""SASL failures as Kafka raises them inside ``SaslServerAuthenticator``.

* ``SaslAuthenticationError`` (Kafka's ``SaslAuthenticationException``): the message goes to
  the client as is, so it must never say which part of the credentials was wrong.
* Any other exception from a mechanism (Kafka's ``SaslException``) is logged at DEBUG and the
  client gets the generic ``Authentication failed during authentication due to invalid
  credentials with SASL mechanism <m>``.
"""

from __future__ import annotations

__all__ = ["SaslAuthenticationError"]


class SaslAuthenticationError(Exception):
    """Kafka's ``SaslAuthenticationException``."""
