"""The pure parts of the console tools (``franz console-producer``, ``franz console-consumer``):
the producer's line reader, the consumer's record formatter and the client-config plumbing,
as Kafka 3.9's ``LineMessageReader``, ``DefaultMessageFormatter`` and console tool options.

No I/O and no client library here: the tools own stdin, stdout and confluent-kafka.

Line reader (``--property`` of ``console-producer``; Kafka's defaults)::

    parse.key=false  key.separator=\\t  parse.headers=false  headers.delimiter=\\t
    headers.separator=,  headers.key.separator=:  ignore.error=false  null.marker=<unset>

A line is ``[headers<headers.delimiter>][key<key.separator>]value``; headers are
``k1:v1,k2:v2`` where ``headers.separator`` is a (Java) regular expression, as Kafka splits
with ``Pattern.split`` (trailing empty pairs dropped). Each delimiter is the *first*
occurrence after the previous field, so a value may contain any separator. A key, value or
header value equal to ``null.marker`` becomes null; a header key equal to it is an error;
a whole header section equal to it means no headers. Without ``ignore.error`` a missing
separator fails the line (``No key separator found on line number N: '...'``); with it the
field is null and the rest of the line is kept.

Formatter (``--property`` of ``console-consumer``; Kafka's defaults)::

    print.timestamp=false  print.partition=false  print.offset=false  print.headers=false
    print.key=false  print.value=true  key.separator=\\t  line.separator=\\n
    headers.separator=,  null.literal=null

Fields are printed in Kafka's order, each followed by ``key.separator`` if a later field is
printed (the value ends with ``line.separator``)::

    CreateTime:1700000000000<sep>Partition:0<sep>Offset:5<sep>h1:v1,h2:v2<sep>key<sep>value\\n

``NO_TIMESTAMP`` stands for a record without a timestamp type, ``NO_HEADERS`` for a record
without headers; a null key, value or header value prints ``null.literal``. Booleans are
``true`` (any case, trimmed) or false, as Kafka reads them. Strings are bytes: keys, values
and separators travel as UTF-8 with ``surrogateescape``, so any byte round-trips.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, NamedTuple

from franz.admin.options import ToolError

__all__ = [
    "CODECS",
    "ConsoleConfigError",
    "ConsoleRecord",
    "FormatterConfig",
    "LineParseError",
    "LineReaderConfig",
    "LineRecord",
    "add_bootstrap_option",
    "add_client_config_options",
    "format_record",
    "from_text",
    "librdkafka_config",
    "parse_line",
    "parse_property_args",
    "to_text",
]

#: ``--compression-codec`` values (Kafka's ``CompressionType`` names).
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

#: Java client keys that mean nothing to librdkafka: the tools always move raw bytes.
_JAVA_ONLY_KEYS = frozenset(
    {"key.serializer", "value.serializer", "key.deserializer", "value.deserializer"}
)
#: Java client keys librdkafka spells differently (same meaning and unit).
_JAVA_RENAMED_KEYS = {
    "send.buffer.bytes": "socket.send.buffer.bytes",
    "receive.buffer.bytes": "socket.receive.buffer.bytes",
}
#: Deserializers whose output is the record's bytes (anything else is refused).
_BYTE_DESERIALIZERS = frozenset(
    {
        "org.apache.kafka.common.serialization.StringDeserializer",
        "org.apache.kafka.common.serialization.ByteArrayDeserializer",
    }
)


class ConsoleConfigError(ToolError):
    """A ``--property`` or client property the tool cannot accept (a bad flag: exit 2)."""


class LineParseError(ToolError):
    """An input line does not match the reader's format (Kafka's wording)."""


def add_bootstrap_option(parser: argparse.ArgumentParser) -> None:
    """The console tools' required ``--bootstrap-server HOST:PORT[,HOST:PORT]``."""
    parser.add_argument(
        "--bootstrap-server",
        required=True,
        metavar="HOST:PORT",
        help="REQUIRED: the server(s) to connect to, comma-separated",
    )


def add_client_config_options(
    parser: argparse.ArgumentParser, role: Literal["consumer", "producer"]
) -> None:
    """Kafka's ``--<role>-property`` (alias ``--command-property``; ``args.<role>_property``,
    repeatable ``KEY=VALUE``) and ``--<role>.config`` (alias ``--command-config``;
    ``args.<role>_config``, a properties file the properties override)."""
    parser.add_argument(
        f"--{role}-property",
        "--command-property",
        action="append",
        dest=f"{role}_property",
        metavar="KEY=VALUE",
        help=f"{role} config property; repeatable",
    )
    parser.add_argument(
        f"--{role}.config",
        "--command-config",
        dest=f"{role}_config",
        metavar="FILE",
        help=f"{role} config properties file (--{role}-property wins)",
    )


def to_text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def from_text(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _java_bool(value: str) -> bool:
    return value.strip().lower() == "true"


def parse_property_args(items: Iterable[str] | None, flag: str) -> dict[str, str]:
    """``key=value`` flag values (repeatable) as a dict, split at the first ``=``.

    Unlike ``franz.admin.options.parse_key_values`` there is no comma splitting: separators
    such as ``headers.separator=,`` are common values here.
    """
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConsoleConfigError(f"{flag} expects key=value, got {item!r}")
        out[key.strip()] = value
    return out


def librdkafka_config(props: Mapping[str, str]) -> dict[str, str]:
    """Client properties in librdkafka's spelling: Java-only (de)serializer keys dropped,
    ``send.buffer.bytes``/``receive.buffer.bytes`` renamed, ``buffer.memory`` (bytes) as
    ``queue.buffering.max.kbytes``. Other keys pass through (librdkafka takes most Java
    client names: ``acks``, ``linger.ms``, ``batch.size``, ``retries``, ``client.id``, ...).
    """
    out: dict[str, str] = {}
    for key, value in props.items():
        if key in _JAVA_ONLY_KEYS:
            continue
        if key == "buffer.memory":
            try:
                out["queue.buffering.max.kbytes"] = str(max(1, int(value) // 1024))
            except ValueError:
                raise ConsoleConfigError(f"buffer.memory expects bytes, got {value!r}") from None
            continue
        out[_JAVA_RENAMED_KEYS.get(key, key)] = value
    return out


# -- line reader (console-producer) ------------------------------------------------------------


class LineRecord(NamedTuple):
    """A record read from one input line."""

    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True)
class LineReaderConfig:
    """Kafka's ``LineMessageReader`` settings (see the module docstring)."""

    parse_key: bool = False
    key_separator: str = "\t"
    parse_headers: bool = False
    headers_delimiter: str = "\t"
    headers_separator: str = ","
    headers_key_separator: str = ":"
    ignore_error: bool = False
    null_marker: str | None = None

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> LineReaderConfig:
        """Read Kafka's reader properties; unknown keys are ignored (as Kafka does).

        Raises ``ConsoleConfigError`` for Kafka's refused combinations (e.g. ``headers.delimiter
        and headers.separator may not be equal``) and an empty separator.
        """
        config = cls(
            parse_key=_java_bool(props.get("parse.key", "false")),
            key_separator=props.get("key.separator", "\t"),
            parse_headers=_java_bool(props.get("parse.headers", "false")),
            headers_delimiter=props.get("headers.delimiter", "\t"),
            headers_separator=props.get("headers.separator", ","),
            headers_key_separator=props.get("headers.key.separator", ":"),
            ignore_error=_java_bool(props.get("ignore.error", "false")),
            null_marker=props.get("null.marker"),
        )
        config._validate()
        return config

    def _validate(self) -> None:
        names = {
            "key.separator": self.key_separator,
            "headers.delimiter": self.headers_delimiter,
            "headers.separator": self.headers_separator,
            "headers.key.separator": self.headers_key_separator,
        }
        for name, value in names.items():
            if value == "":
                raise ConsoleConfigError(f"{name} may not be empty")
        pairs = [
            ("headers.delimiter", "headers.separator"),
            ("headers.delimiter", "headers.key.separator"),
            ("headers.separator", "headers.key.separator"),
        ]
        for a, b in pairs:
            if names[a] == names[b]:
                raise ConsoleConfigError(f"{a} and {b} may not be equal")
        if self.null_marker is not None:
            for name in (
                "key.separator",
                "headers.separator",
                "headers.delimiter",
                "headers.key.separator",
            ):
                if names[name] == self.null_marker:
                    raise ConsoleConfigError(f"null.marker and {name} may not be equal")
        try:
            re.compile(self.headers_separator)
        except re.error as exc:
            raise ConsoleConfigError(
                f"headers.separator {self.headers_separator!r} is not a regular expression: {exc}"
            ) from None


def _field(
    config: LineReaderConfig,
    enabled: bool,
    line: str,
    start: int,
    separator: str,
    what: str,
    line_number: int,
) -> str | None:
    if not enabled:
        return None
    index = line.find(separator, start)
    if index < 0:
        if config.ignore_error:
            return None
        raise LineParseError(f"No {what} found on line number {line_number}: '{line}'")
    return line[start:index]


def _java_split(pattern: str, text: str) -> list[str]:
    """``String.split(regex)``: no match gives ``[text]``; trailing empty strings go."""
    parts = re.split(pattern, text)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _headers(
    config: LineReaderConfig, section: str, line_number: int
) -> tuple[tuple[str, bytes | None], ...]:
    headers: list[tuple[str, bytes | None]] = []
    for pair in _java_split(config.headers_separator, section):
        index = pair.find(config.headers_key_separator)
        if index < 0:
            if config.ignore_error:
                headers.append((pair, None))
                continue
            raise LineParseError(
                f"No header key separator found in pair '{pair}' on line number {line_number}"
            )
        name = pair[:index]
        if name == config.null_marker:
            raise LineParseError(
                f"Header keys should not be equal to the null marker '{config.null_marker}' "
                "as they can't be null"
            )
        value = pair[index + len(config.headers_key_separator) :]
        headers.append((name, None if value == config.null_marker else from_text(value)))
    return tuple(headers)


def parse_line(line: str, config: LineReaderConfig, line_number: int) -> LineRecord:
    """One input line (without its line terminator) as a record, as Kafka's
    ``LineMessageReader`` reads it. ``line_number`` (from 1) is for error messages."""
    section = _field(
        config,
        config.parse_headers,
        line,
        0,
        config.headers_delimiter,
        "headers delimiter",
        line_number,
    )
    offset = 0 if section is None else len(section) + len(config.headers_delimiter)
    key = _field(
        config, config.parse_key, line, offset, config.key_separator, "key separator", line_number
    )
    if key is not None:
        offset += len(key) + len(config.key_separator)
    value = line[offset:]
    headers: tuple[tuple[str, bytes | None], ...] = ()
    if section is not None and section != config.null_marker:
        headers = _headers(config, section, line_number)
    return LineRecord(
        None if key is None or key == config.null_marker else from_text(key),
        None if value == config.null_marker else from_text(value),
        headers,
    )


# -- formatter (console-consumer) --------------------------------------------------------------


class ConsoleRecord(NamedTuple):
    """A consumed record as the formatter sees it. ``timestamp_type`` is Kafka's name
    (``CreateTime``, ``LogAppendTime``) or None for NO_TIMESTAMP_TYPE."""

    topic: str
    partition: int
    offset: int
    timestamp_type: str | None
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True)
class FormatterConfig:
    """Kafka's ``DefaultMessageFormatter`` settings (see the module docstring)."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> FormatterConfig:
        """Read Kafka's formatter properties; unknown keys are ignored (as Kafka does).
        ``key.deserializer``/``value.deserializer``/``headers.deserializer`` are accepted only
        as String or ByteArray deserializers (the bytes are printed as they are)."""
        for name in ("key.deserializer", "value.deserializer", "headers.deserializer"):
            if name in props and props[name] not in _BYTE_DESERIALIZERS:
                raise ConsoleConfigError(
                    f"{name}={props[name]} is not supported: records are printed as bytes "
                    "(StringDeserializer or ByteArrayDeserializer only)"
                )

        def flag(name: str, default: bool) -> bool:
            return _java_bool(props[name]) if name in props else default

        def text(name: str, default: bytes) -> bytes:
            return from_text(props[name]) if name in props else default

        return cls(
            print_timestamp=flag("print.timestamp", False),
            print_partition=flag("print.partition", False),
            print_offset=flag("print.offset", False),
            print_headers=flag("print.headers", False),
            print_key=flag("print.key", False),
            print_value=flag("print.value", True),
            key_separator=text("key.separator", b"\t"),
            line_separator=text("line.separator", b"\n"),
            headers_separator=text("headers.separator", b","),
            null_literal=text("null.literal", b"null"),
        )


def format_record(record: ConsoleRecord, config: FormatterConfig) -> bytes:
    """The bytes Kafka's ``DefaultMessageFormatter`` writes for ``record``."""
    fields: list[bytes] = []
    if config.print_timestamp:
        if record.timestamp_type is None:
            fields.append(b"NO_TIMESTAMP")
        else:
            fields.append(f"{record.timestamp_type}:{record.timestamp}".encode())
    if config.print_partition:
        fields.append(b"Partition:%d" % record.partition)
    if config.print_offset:
        fields.append(b"Offset:%d" % record.offset)
    if config.print_headers:
        if not record.headers:
            fields.append(b"NO_HEADERS")
        else:
            fields.append(
                config.headers_separator.join(
                    from_text(name) + b":" + (config.null_literal if value is None else value)
                    for name, value in record.headers
                )
            )
    if config.print_key:
        fields.append(config.null_literal if record.key is None else record.key)
    out = config.key_separator.join(fields)
    if config.print_value:
        if fields:
            out += config.key_separator
        out += config.null_literal if record.value is None else record.value
        out += config.line_separator
    elif fields:
        # Kafka writes line.separator after the last printed field when no value follows.
        out += config.line_separator
    return out
