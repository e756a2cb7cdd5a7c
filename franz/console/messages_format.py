"""How the message browser shows bytes and reads its inputs: pure functions, unit-tested.

* ``show_bytes(data, fmt, full)``: a key or value as ``text``, pretty-printed ``json`` or
  ``hex`` (a hex dump: offset, 16 bytes, their ASCII), with ``auto`` choosing JSON when the
  bytes are UTF-8 that ``json.loads`` accepts, text when they are UTF-8 without control
  characters (tab, newline and carriage return allowed), else hex (what AKHQ and kafbat
  kafka-ui guess too). Display stops after ``DISPLAY_LIMIT`` bytes unless ``full``.
* ``parse_browse_query(params)``: the browser's query string (the URL contract in
  ``franz/console/__init__.py``'s callers: ``partition``, ``from``, ``offset``,
  ``timestamp``, ``limit``, ``format``, ``full``) as a ``BrowseQuery``.
* ``parse_timestamp_ms``: epoch milliseconds or an ISO-8601 date-time (UTC unless it names a
  zone), as ``offsets_for_times`` wants it.
* ``parse_produce_form``: the produce form (key, value, ``k=v`` header lines, partition).

A bad input is a ``ValueError`` whose message the page shows as is.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

__all__ = [
    "DEFAULT_LIMIT",
    "DISPLAY_LIMIT",
    "FORMATS",
    "MAX_LIMIT",
    "STARTS",
    "BrowseQuery",
    "ProduceForm",
    "Shown",
    "iso_time",
    "parse_browse_query",
    "parse_produce_form",
    "parse_timestamp_ms",
    "show_bytes",
]

Format = Literal["auto", "text", "json", "hex"]
Start = Literal["earliest", "latest", "offset", "timestamp"]

FORMATS: Final[tuple[Format, ...]] = ("auto", "text", "json", "hex")
STARTS: Final[tuple[Start, ...]] = ("earliest", "latest", "offset", "timestamp")
#: Records per page unless ``limit`` says otherwise, and the most a page may ask for.
DEFAULT_LIMIT: Final = 100
MAX_LIMIT: Final = 1000
#: Bytes of a key or value shown before "show all" (``full=1``) is needed.
DISPLAY_LIMIT: Final = 10 * 1024

_ALLOWED_CONTROLS: Final = frozenset("\t\n\r")


@dataclass(frozen=True)
class Shown:
    """A key or value ready for the page: ``kind`` is the format used (``text``, ``json``,
    ``hex``, or ``null`` for a missing key/value), ``size`` the full size in bytes,
    ``truncated`` whether ``text`` stops at ``DISPLAY_LIMIT``."""

    kind: str
    text: str
    size: int
    truncated: bool


def _printable(text: str) -> bool:
    return not any(
        (ord(c) < 0x20 and c not in _ALLOWED_CONTROLS) or 0x7F <= ord(c) < 0xA0 for c in text
    )


def hex_dump(data: bytes) -> str:
    """``hexdump -C``'s layout: 8-digit offset, 16 bytes in two groups of 8, their ASCII."""
    lines = []
    for at in range(0, len(data), 16):
        chunk = data[at : at + 16]
        left = " ".join(f"{b:02x}" for b in chunk[:8])
        right = " ".join(f"{b:02x}" for b in chunk[8:])
        ascii_ = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in chunk)
        lines.append(f"{at:08x}  {left:<23}  {right:<23}  |{ascii_}|")
    return "\n".join(lines)


def show_bytes(data: bytes | None, fmt: str = "auto", full: bool = False) -> Shown:
    """``data`` shown as ``fmt`` (module docstring). A format that does not fit the bytes
    (``json`` for non-JSON, ``text`` for non-UTF-8) falls back to the next one that does
    (text, then hex), so the page never shows mangled bytes."""
    if data is None:
        return Shown("null", "", 0, False)
    size = len(data)
    shown = data if full else data[:DISPLAY_LIMIT]
    truncated = len(shown) < size
    text: str | None
    try:
        # A cut may split a UTF-8 sequence: judge the whole value, show its head.
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and fmt in ("auto", "json"):
        try:
            parsed = json.loads(text)
        except ValueError:
            pass
        else:
            if fmt == "json" or isinstance(parsed, dict | list):
                pretty = json.dumps(parsed, indent=2, ensure_ascii=False)
                return Shown("json", _head(pretty, full), size, not full and _cut(pretty))
    if text is not None and fmt in ("auto", "json", "text") and (fmt == "text" or _printable(text)):
        return Shown("text", _head(text, full), size, not full and _cut(text))
    return Shown("hex", hex_dump(shown), size, truncated)


def _head(text: str, full: bool) -> str:
    return text if full else text[:DISPLAY_LIMIT]


def _cut(text: str) -> bool:
    return len(text) > DISPLAY_LIMIT


def iso_time(timestamp_ms: int) -> str:
    """``1700000000123`` -> ``2023-11-14T22:13:20.123Z``."""
    moment = datetime.datetime.fromtimestamp(timestamp_ms / 1000, tz=datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{timestamp_ms % 1000:03d}Z"


def parse_timestamp_ms(text: str) -> int:
    """Epoch milliseconds (``1700000000000``) or an ISO-8601 date-time
    (``2023-11-14T22:13:20``, ``...20.5Z``, ``...+02:00``, or a date); UTC without a zone."""
    value = text.strip()
    if not value:
        raise ValueError("a timestamp is needed: epoch milliseconds or an ISO-8601 date-time")
    if value.lstrip("-").isdigit():
        return int(value)
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError:
        raise ValueError(
            f"timestamp {value!r}: expected epoch milliseconds or an ISO-8601 date-time "
            "such as 2024-01-31T13:45:00Z"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return (moment - _EPOCH) // datetime.timedelta(milliseconds=1)


_EPOCH: Final = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)


@dataclass(frozen=True)
class BrowseQuery:
    """What the browser page asks for. ``partition`` None is every partition; ``start``
    is where each partition's read begins (``latest``: the last ``limit`` records)."""

    partition: int | None = None
    start: Start = "earliest"
    offset: int | None = None
    timestamp_ms: int | None = None
    limit: int = DEFAULT_LIMIT
    format: Format = "auto"
    full: bool = False


def _int(params: Mapping[str, str], name: str) -> int | None:
    raw = params.get(name, "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, not {raw!r}") from None


def parse_browse_query(params: Mapping[str, str]) -> BrowseQuery:
    """The browser's query string as a ``BrowseQuery``; ``ValueError`` for bad input."""
    start = params.get("from", "").strip() or "earliest"
    if start not in STARTS:
        raise ValueError(f"from must be one of {', '.join(STARTS)}, not {start!r}")
    fmt = params.get("format", "").strip() or "auto"
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    partition = _int(params, "partition")
    if partition is not None and partition < 0:
        raise ValueError(f"partition must be 0 or more, not {partition}")
    limit = _int(params, "limit")
    if limit is None:
        limit = DEFAULT_LIMIT
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be between 1 and {MAX_LIMIT}, not {limit}")
    offset = _int(params, "offset")
    timestamp_ms = None
    if start == "offset":
        if offset is None or offset < 0:
            raise ValueError("from=offset needs an offset of 0 or more")
    elif start == "timestamp":
        timestamp_ms = parse_timestamp_ms(params.get("timestamp", ""))
    return BrowseQuery(
        partition=partition,
        start=start,
        offset=offset if start == "offset" else None,
        timestamp_ms=timestamp_ms,
        limit=limit,
        format=fmt,
        full=params.get("full", "") in ("1", "true", "on"),
    )


@dataclass(frozen=True)
class ProduceForm:
    """One record to produce: ``key`` None is no key, ``partition`` None lets the
    producer's partitioner choose (librdkafka's default ``consistent_random``)."""

    key: bytes | None
    value: bytes
    headers: list[tuple[str, bytes]]
    partition: int | None


def parse_produce_form(form: Mapping[str, str]) -> ProduceForm:
    """The produce form: ``key`` (empty: no key), ``value``, ``headers`` (one ``k=v`` per
    line, split at the first ``=``; a key may repeat, as Kafka allows), ``partition``
    (empty: the partitioner). Text is sent as UTF-8; browsers send CRLF line ends, which
    are kept inside the value as typed."""
    key = form.get("key", "")
    headers: list[tuple[str, bytes]] = []
    for number, line in enumerate(form.get("headers", "").splitlines(), 1):
        if not line.strip():
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"header line {number} {line!r}: expected key=value")
        headers.append((name.strip(), value.encode()))
    partition = _int(form, "partition")
    if partition is not None and partition < 0:
        raise ValueError(f"partition must be 0 or more, not {partition}")
    return ProduceForm(
        key=key.encode() if key else None,
        value=form.get("value", "").encode(),
        headers=headers,
        partition=partition,
    )
