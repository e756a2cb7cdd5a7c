"""JAAS configuration text as Kafka reads ``sasl.jaas.config`` (``JaasConfig``, which parses
it with Java's ``ConfigFile`` tokenizer)::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="admin" password="admin-secret" user_admin="admin-secret";

One or more login modules, each ``<class> <flag> [<key>=<value>]... ;``; the flag is one of
``required``, ``requisite``, ``sufficient``, ``optional``; a value is a double-quoted string
(backslash escapes the next character) or a bare word. Kafka requires exactly one module in
``sasl.jaas.config`` ("JAAS config property contains N login modules, should be 1 module");
so does ``parse_jaas_config``. Errors are ``ValueError`` with Kafka's wording where it has
one; a value never appears in them (they hold passwords).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

__all__ = ["JaasLoginModule", "parse_jaas_config"]

_FLAGS: Final = ("required", "requisite", "sufficient", "optional")
_TOKEN: Final = re.compile(
    r"""\s*(?:(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<punct>[=;])|(?P<word>[^\s=;"]+))""", re.S
)


@dataclass(frozen=True, slots=True)
class JaasLoginModule:
    login_module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:  # options hold passwords
        return f"JaasLoginModule({self.login_module}, {self.flag}, keys={sorted(self.options)})"


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ValueError(f"Invalid JAAS config: unexpected character at offset {pos}")
        pos = match.end()
        if match.group("quoted") is not None:
            raw = match.group("quoted")[1:-1]
            out.append(("value", re.sub(r"\\(.)", r"\1", raw, flags=re.S)))
        elif match.group("punct") is not None:
            out.append((match.group("punct"), match.group("punct")))
        else:
            out.append(("word", match.group("word")))
    return out


def parse_jaas_modules(text: str) -> list[JaasLoginModule]:
    tokens = _tokens(text)
    modules: list[JaasLoginModule] = []
    i = 0
    while i < len(tokens):
        if tokens[i][0] != "word" or i + 1 >= len(tokens) or tokens[i + 1][0] != "word":
            raise ValueError("Invalid JAAS config: expected '<LoginModule> <flag>'")
        name, flag = tokens[i][1], tokens[i + 1][1].lower()
        if flag not in _FLAGS:
            raise ValueError(f"Invalid JAAS config: Invalid control flag {tokens[i + 1][1]}")
        i += 2
        options: dict[str, str] = {}
        while True:
            if i >= len(tokens):
                raise ValueError("Invalid JAAS config: login module not terminated by ';'")
            kind, value = tokens[i]
            if kind == ";":
                i += 1
                break
            if (
                kind != "word"
                or i + 2 >= len(tokens)
                or tokens[i + 1][0] != "="
                or tokens[i + 2][0] not in ("word", "value")
            ):
                raise ValueError("Invalid JAAS config: expected key=value or ';'")
            options[value] = tokens[i + 2][1]
            i += 3
        modules.append(JaasLoginModule(name, flag, options))
    return modules


def parse_jaas_config(text: str) -> JaasLoginModule:
    """The one login module of a ``sasl.jaas.config`` value."""
    modules = parse_jaas_modules(text)
    if len(modules) != 1:
        raise ValueError(
            f"JAAS config property contains {len(modules)} login modules, should be 1 module"
        )
    return modules[0]
