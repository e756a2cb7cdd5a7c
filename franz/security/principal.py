"""Who a connection is: Kafka's ``KafkaPrincipal`` (``org.apache.kafka.common.security.auth``).

A connection starts as ``User:ANONYMOUS`` (Kafka's ``KafkaPrincipal.ANONYMOUS``: what a
PLAINTEXT listener's clients are); TLS with a client certificate makes it ``User:<subject>``
(``ssl.principal.mapping.rules``), SASL ``User:<authorization id>``. ACLs, ``super.users``
and quotas name principals as ``<type>:<name>``, the type being ``User`` for all of these.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANONYMOUS", "USER_TYPE", "KafkaPrincipal"]

#: ``KafkaPrincipal.USER_TYPE``.
USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``User:alice`` (Kafka's ``SecurityUtils.parseKafkaPrincipal``: split at the first
        colon; the name may hold more colons)."""
        principal_type, sep, name = text.partition(":")
        if not sep or not principal_type:
            raise ValueError(
                f"expected a string in format principalType:principalName but got {text}"
            )
        return cls(principal_type, name)


#: ``KafkaPrincipal.ANONYMOUS``.
ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
