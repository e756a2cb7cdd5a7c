"""Config definitions: Kafka's keys, types, defaults and validators, as data.

A ``ConfigKey`` mirrors one entry of Kafka's ``ConfigDef``: the name users write in
``server.properties`` or a topic override, its type, its default and its validator. Values
arrive as strings (files, ``--override``, AlterConfigs) and are parsed here in one place;
errors name the key and the accepted range, as Kafka's ``ConfigException`` does.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from franz.errors import InvalidConfigurationError

__all__ = ["ConfigKey", "ConfigType", "at_least", "between", "one_of", "parse_config"]

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class ConfigType(enum.Enum):
    BOOLEAN = "boolean"
    INT = "int"
    LONG = "long"
    DOUBLE = "double"
    STRING = "string"
    LIST = "list"
    PASSWORD = "password"


Validator = Callable[[str, Any], None]

#: Kafka's ``ConfigDef.parseType`` messages for a string that does not parse.
_PARSE_FAILURE: Final = {
    ConfigType.BOOLEAN: "Expected value to be either true or false",
    ConfigType.INT: "Not a number of type INT",
    ConfigType.LONG: "Not a number of type LONG",
    ConfigType.DOUBLE: "Not a number of type DOUBLE",
}


@dataclass(frozen=True, slots=True)
class ConfigKey:
    name: str
    type: ConfigType
    default: Any
    doc: str = ""
    validator: Validator | None = None
    #: The broker-level key whose value is this topic config's default (Kafka's synonym).
    broker_synonym: str | None = None

    def parse(self, raw: Any) -> Any:
        value = _coerce(self.name, self.type, raw)
        if self.validator is not None and value is not None:
            self.validator(self.name, value)
        return value

    def format(self, value: Any) -> str | None:
        """The string Kafka's DescribeConfigs would show for ``value``."""
        if value is None:
            return None
        if self.type is ConfigType.BOOLEAN:
            return "true" if value else "false"
        if self.type is ConfigType.LIST:
            return ",".join(value)
        return str(value)


def _coerce(name: str, kind: ConfigType, raw: Any) -> Any:
    if raw is None:
        return None
    if not isinstance(raw, str):
        if kind is ConfigType.LIST and isinstance(raw, Sequence):
            return [str(x) for x in raw]
        return raw
    text = raw.strip()
    try:
        if kind is ConfigType.BOOLEAN:
            if text.lower() not in ("true", "false"):
                raise ValueError(text)
            return text.lower() == "true"
        if kind is ConfigType.INT:
            value = int(text)
            if not -(2**31) <= value <= INT_MAX:
                raise ValueError(text)
            return value
        if kind is ConfigType.LONG:
            value = int(text)
            if not -(2**63) <= value <= LONG_MAX:
                raise ValueError(text)
            return value
        if kind is ConfigType.DOUBLE:
            return float(text)
        if kind is ConfigType.LIST:
            return [part.strip() for part in text.split(",") if part.strip()]
        return raw
    except ValueError:
        raise InvalidConfigurationError(
            f"Invalid value {raw} for configuration {name}: {_PARSE_FAILURE[kind]}"
        ) from None


def at_least(minimum: float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < minimum:
            raise InvalidConfigurationError(
                f"Invalid value {value} for configuration {name}: Value must be at least {minimum}"
            )

    return check


def between(lo: float, hi: float) -> Validator:
    def check(name: str, value: Any) -> None:
        if not lo <= value <= hi:
            raise InvalidConfigurationError(
                f"Invalid value {value} for configuration {name}: "
                f"Value must be no less than {lo} and no more than {hi}"
            )

    return check


def one_of(*choices: str, multi: bool = False) -> Validator:
    def check(name: str, value: Any) -> None:
        values = value if multi else [value]
        for item in values:
            if item not in choices:
                raise InvalidConfigurationError(
                    f"Invalid value {item} for configuration {name}: "
                    f"String must be one of: {', '.join(choices)}"
                )

    return check


def parse_config(
    keys: Mapping[str, ConfigKey], raw: Mapping[str, Any], *, allow_unknown: bool
) -> dict[str, Any]:
    """Parse ``raw`` (strings or values) against ``keys``; unknown keys kept or refused."""
    parsed: dict[str, Any] = {}
    for name, value in raw.items():
        key = keys.get(name)
        if key is None:
            if not allow_unknown:
                raise InvalidConfigurationError(f"Unknown configuration '{name}'")
            parsed[name] = value
            continue
        parsed[name] = key.parse(value)
    return parsed
