"""The principal of a mutual-TLS connection: Kafka's ``DefaultKafkaPrincipalBuilder`` for SSL.

A client that presented a certificate is ``User:<name>``, where ``<name>`` is the
certificate's subject as RFC 2253 (Java's ``X500Principal.getName()``) passed through
``ssl.principal.mapping.rules`` (Kafka's ``SslPrincipalMapper``, KIP-371); a client without
a certificate (``ssl.client.auth`` none or requested) is ``User:ANONYMOUS``.

RFC 2253 as Java writes it: the RDNs in reverse order of the certificate's sequence (most
specific first), ``,`` between RDNs, ``+`` inside a multi-valued RDN, the keywords CN, C, L,
ST, O, OU, STREET, DC, UID, and other attributes as ``<OID>=#<hex of the DER value>``
(emailAddress, an IA5String, is the one Franz encodes that way; an attribute it cannot name
falls back to its OpenSSL long name). Values escape ``, + " \\ < > ;``, a leading ``#`` or
space and a trailing space with a backslash.

``ssl.principal.mapping.rules`` (a string, default ``DEFAULT``): comma-separated rules, the
first that matches wins; ``DEFAULT`` yields the name unchanged; ``RULE:pattern/replacement/``
with an optional ``L`` or ``U`` (lower- or upper-case the result) applies when ``pattern``
matches the whole name, and yields the name with every match of ``pattern`` replaced
(Java's ``replaceAll``; ``$1`` refers to a group). No rule matching is an error (Kafka's
``NoMatchingRule``): the connection is closed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from franz.errors import InvalidConfigurationError
from franz.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal

__all__ = [
    "NoMatchingRuleError",
    "SslPrincipalMapper",
    "rfc2253_name",
    "ssl_principal",
]

#: OpenSSL's long names (``getpeercert()``) -> Java's RFC 2253 keywords.
_KEYWORDS: Final = {
    "commonName": "CN",
    "countryName": "C",
    "localityName": "L",
    "stateOrProvinceName": "ST",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}
_EMAIL_OID: Final = "1.2.840.113549.1.9.1"


class NoMatchingRuleError(Exception):
    """Kafka's ``NoMatchingRule``: no ``ssl.principal.mapping.rules`` rule applies."""


def _escape(value: str) -> str:
    out = []
    for i, ch in enumerate(value):
        if ch in ',+"\\<>;' or (i == 0 and ch in "# ") or (i == len(value) - 1 and ch == " "):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _der_ia5(value: str) -> str:
    data = value.encode("ascii", "replace")
    if len(data) < 128:
        header = bytes([0x16, len(data)])
    else:
        size = len(data).to_bytes((len(data).bit_length() + 7) // 8, "big")
        header = bytes([0x16, 0x80 | len(size)]) + size
    return (header + data).hex()


def rfc2253_name(subject: Sequence[Sequence[tuple[str, str]]]) -> str:
    """``getpeercert()["subject"]`` (RDNs in certificate order) as RFC 2253 (docstring)."""
    rdns = []
    for rdn in reversed(subject):
        parts = []
        for attribute, value in rdn:
            keyword = _KEYWORDS.get(attribute)
            if keyword is not None:
                parts.append(f"{keyword}={_escape(value)}")
            elif attribute == "emailAddress":
                parts.append(f"{_EMAIL_OID}=#{_der_ia5(value)}")
            else:
                parts.append(f"{attribute}={_escape(value)}")
        rdns.append("+".join(parts))
    return ",".join(rdns)


@dataclass(frozen=True, slots=True)
class _Rule:
    is_default: bool
    pattern: re.Pattern[str] | None = None
    replacement: str = ""
    to_lower: bool = False
    to_upper: bool = False

    def apply(self, name: str) -> str | None:
        if self.is_default:
            return name
        assert self.pattern is not None
        if self.pattern.fullmatch(name) is None:
            return None
        result = self.pattern.sub(self.replacement, name)
        if self.to_lower:
            return result.lower()
        if self.to_upper:
            return result.upper()
        return result


# Kafka's SslPrincipalMapper.RULE_PATTERN and RULE_SPLITTER.
_RULE_PATTERN: Final = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_RULE_SPLITTER: Final = re.compile(r"\s*(" + _RULE_PATTERN + r")\s*(,\s*|$)")
_RULE_PARSER: Final = re.compile(_RULE_PATTERN)


def _java_replacement(text: str) -> str:
    """A Java ``replaceAll`` replacement (``$n`` groups, ``\\x`` literal) for ``re.sub``."""
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            literal = text[i + 1]
            out.append("\\\\" if literal == "\\" else literal)
            i += 2
        elif ch == "$" and i + 1 < len(text) and text[i + 1].isdigit():
            j = i + 1
            while j < len(text) and text[j].isdigit():
                j += 1
            out.append(f"\\g<{text[i + 1 : j]}>")
            i = j
        else:
            out.append("\\\\" if ch == "\\" else ch)
            i += 1
    return "".join(out)


class SslPrincipalMapper:
    """``ssl.principal.mapping.rules`` (module docstring)."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules = self._parse(rules)

    @staticmethod
    def _parse(text: str) -> list[_Rule]:
        pieces = [m.group(1) for m in _RULE_SPLITTER.finditer(text.strip())]
        rules: list[_Rule] = []
        for piece in pieces:
            match = _RULE_PARSER.match(piece)
            if match is None:
                raise InvalidConfigurationError(f"Invalid rule: {piece}")
            if match.end() != len(piece):
                raise InvalidConfigurationError(
                    f"Invalid rule: `{piece}`, unmatched substring: `{piece[match.end() :]}`"
                )
            if match.group(1) is not None:
                rules.append(_Rule(True))
            elif match.group(2) is not None:
                try:
                    pattern = re.compile(match.group(2))
                except re.error as exc:
                    raise InvalidConfigurationError(f"Invalid rule: {piece}: {exc}") from exc
                flag = match.group(6)
                rules.append(
                    _Rule(
                        False,
                        pattern,
                        _java_replacement(match.group(4)),
                        flag == "L",
                        flag == "U",
                    )
                )
        return rules

    def get_name(self, distinguished_name: str) -> str:
        for rule in self.rules:
            name = rule.apply(distinguished_name)
            if name is not None:
                return name
        raise NoMatchingRuleError(f"No rules apply to {distinguished_name}, rules {self.rules}")


def ssl_principal(
    peer_certificate: dict[str, Any] | None, mapper: SslPrincipalMapper
) -> KafkaPrincipal:
    """The principal of a TLS peer (``SSLObject.getpeercert()``; None or empty: no
    certificate, ``User:ANONYMOUS``)."""
    if not peer_certificate or not peer_certificate.get("subject"):
        return ANONYMOUS
    return KafkaPrincipal(USER_TYPE, mapper.get_name(rfc2253_name(peer_certificate["subject"])))
